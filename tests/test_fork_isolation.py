"""Crash isolation gives each crash-prone case the outcome it gets alone (native/_fork.py).

Planted runners stand in for Paddle (no Paddle needed): one that damages the process it runs in
without dying, as some invalid cases damage Paddle's heap, and one that reports the C heap it
starts from. When consecutive crash-prone cases shared a forked child, the case after the damage
answered from it; when the fork server unpickled a batch of cases and relayed the replies, the
heap a child started from moved with what the server had served before. Both are caught here."""

from __future__ import annotations

import ctypes
import ctypes.util
import os

import pytest

from paddle_spmd_port.case import Case
from paddle_spmd_port.errors import InvalidSpecError
from paddle_spmd_port.grid import grid_for
from paddle_spmd_port.native import _fork
from paddle_spmd_port.outcome import Outcome

_damage = {"done": False}


def damaging_run(case: Case) -> Outcome:
    """``poison-*`` cases leave the process damaged (a module flag) and answer; every other case
    answers ``clean`` in an undamaged process and ``damaged`` in a damaged one."""
    if case.case_id.startswith("poison"):
        _damage["done"] = True
        return Outcome(unreachable="poisoned the process")
    return Outcome(unreachable="damaged" if _damage["done"] else "clean")


def _case(case_id: str) -> Case:
    base = next(grid_for("layer_norm"))
    return Case(base.rule, base.mesh, base.inputs, base.attrs, case_id)


def _always(case: Case) -> bool:
    return True


@pytest.fixture
def fork_server(monkeypatch):
    """A fork server of this process, used by run_isolating for the test; ended after it."""
    server = _fork.ForkServer()
    monkeypatch.setattr(_fork, "_server", server)
    yield server
    os.close(server._requests)
    os.waitpid(server.pid, 0)
    os.close(server._replies)


def test_the_planted_damage_changes_the_next_case_in_the_same_process(monkeypatch):
    # what one child running both cases (the batching before) reported for the second
    monkeypatch.setitem(_damage, "done", False)  # (undone after the test)
    assert damaging_run(_case("v")) == Outcome(unreachable="clean")
    damaging_run(_case("poison-1"))
    assert damaging_run(_case("v")) == Outcome(unreachable="damaged")


@pytest.mark.parametrize("server", [False, True], ids=["own-children", "fork-server"])
def test_a_crash_prone_case_after_a_damaging_one_answers_as_alone(server, request):
    if server:
        request.getfixturevalue("fork_server")
    victim = _case("victim")
    alone = list(_fork.run_isolating([victim], damaging_run, _always, isolated=damaging_run))
    cases = [_case("poison-1"), victim, _case("poison-2"), _case("poison-3"), victim]
    outcomes = list(_fork.run_isolating(cases, damaging_run, _always, isolated=damaging_run))
    assert alone == [Outcome(unreachable="clean")]
    poisoned = "poisoned the process"
    assert [o.unreachable for o in outcomes] == [poisoned, "clean", poisoned, poisoned, "clean"]
    assert _damage["done"] is False  # nothing ran in this process


def killing_run(case: Case) -> Outcome:
    """``kill-server`` ends the fork server the child came from (its parent), then answers."""
    if case.case_id == "kill-server":
        import signal

        os.kill(os.getppid(), signal.SIGKILL)
        return Outcome(unreachable="server killed")
    return damaging_run(case)


def test_a_fork_server_gone_in_mid_run_leaves_the_rest_to_children_of_this_process(fork_server):
    cases = [_case("kill-server"), _case("poison-1"), _case("v"), _case("w")]
    outcomes = list(_fork.run_isolating(cases, killing_run, _always, isolated=killing_run))
    assert [o.unreachable for o in outcomes] == ["server killed", "poisoned the process", "clean", "clean"]
    assert _fork._server is None


def test_run_in_children_gives_each_case_a_child_of_its_own():
    outcomes = list(_fork.run_in_children(damaging_run, [_case("poison-1"), _case("v"), _case("w")]))
    assert [o.unreachable for o in outcomes] == ["poisoned the process", "clean", "clean"]


_LIBC = ctypes.util.find_library("c")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def heap_run(case: Case) -> Outcome:
    """``big-N`` cases answer with N characters (a large reply); any other case answers with the
    C heap's figures as it finds them (glibc's mallinfo2: what a child starts from)."""
    if case.case_id.startswith("big-"):
        return Outcome(unreachable="x" * int(case.case_id.split("-")[1]))
    libc = ctypes.CDLL(_LIBC)
    libc.mallinfo2.restype = _MallInfo2
    m = libc.mallinfo2()
    return Outcome(unreachable=f"arena {m.arena} in use {m.uordblks} free {m.fordblks} chunks {m.ordblks}")


@pytest.mark.skipif(not hasattr(os, "fork") or _LIBC is None, reason="needs fork and glibc")
def test_a_fork_server_child_starts_from_the_same_heap_whatever_was_served_before(fork_server):
    try:
        ctypes.CDLL(_LIBC).mallinfo2  # noqa: B018 (glibc 2.33+)
    except AttributeError:
        pytest.skip("no mallinfo2 in this libc")
    probe = _case("probe")

    def heap_after(served: list[Case]) -> str:
        *_, last = _fork.run_isolating([*served, probe], heap_run, _always, isolated=heap_run)
        return str(last)

    first = heap_after([])
    # requests and replies of other sizes (ids padded: requests up to ~40 KB, replies up to 200 KB)
    assert heap_after([_case(f"big-{n}") for n in (1000, 5000, 70000, 3000, 200000)]) == first
    assert heap_after([_case("pad-" + "y" * n) for n in (600, 9000, 40000, 70000)]) == first  # (70000: past the queue)
    assert heap_after([]) == first


def crashing_run(case: Case) -> Outcome:
    """``crash-*`` cases die of SIGSEGV; the others answer as :func:`damaging_run`."""
    if case.case_id.startswith("crash"):
        import signal

        os.kill(os.getpid(), signal.SIGSEGV)
    return damaging_run(case)


@pytest.mark.parametrize("server", [False, True], ids=["own-children", "fork-server"])
def test_crashes_among_crash_prone_cases_give_each_its_crash_and_the_rest_answer_alone_in_order(server, request):
    """Crashes first, in the middle and last of a run of crash-prone cases, cases run here between
    them: every case answered once, in the order given, each crash-prone one as alone."""
    if server:
        request.getfixturevalue("fork_server")
    ids = ["victim", "crash-1", "poison-1", "victim", "crash-2", "crash-3", "victim", "crash-4"]
    here = {"here-a", "here-b"}
    cases = [_case(i) for i in ids[:3]] + [_case("here-a")] + [_case(i) for i in ids[3:]] + [_case("here-b")]
    outcomes = list(_fork.run_isolating(cases, crashing_run, lambda c: c.case_id not in here,
                                        isolated=crashing_run))
    seg, poisoned = "signal 11 (SIGSEGV)", "poisoned the process"
    assert [o.crash or o.unreachable for o in outcomes] == [
        "clean", seg, poisoned, "clean", "clean", seg, seg, "clean", seg, "clean"]
    assert _damage["done"] is False  # nothing crash-prone ran in this process


def _refused_by_every_rule(case: Case) -> bool:
    """Some input spec fails its own check: every rule's preamble refuses the case before it reads anything."""
    for s in case.inputs:
        if s is not None:
            try:
                s.check("input")
            except InvalidSpecError:
                return True
    return False


def test_the_pool_works_out_once_which_cases_run_alone_and_the_worker_only_reads_it(monkeypatch):
    """Whether a case runs in a forked child of its own is asked once per case, by the pool; its
    worker byte (ISOLATE or RUN_HERE) carries the answer to the worker, which hands the backend a
    ``may_crash`` read from those bytes and asks nothing again. Every input invalid for its op runs
    alone, those every rule refuses (no verdict reads their outcome) included: nothing it leaves in a
    child reaches another case."""
    import io
    import pickle

    from paddle_spmd_port.native import pool, worker
    from paddle_spmd_port.parity.random_cases import random_cases

    cases = random_cases("layer_norm", 3000, 1)  # random mode's invalid draws: crash-prone cases of every kind
    asked: list[int] = []
    right = pool.isolates("registry")
    assert right is not None

    def counted(case: Case) -> bool:
        asked.append(id(case))
        return right(case)

    monkeypatch.setattr(pool, "isolates", lambda backend: counted)
    slices, order, isolate = pool.plan_slices(cases, "registry", 2)
    assert len(asked) == len(set(asked)) > 0, "a case asked twice"
    expected = [worker.ISOLATE if pool.garbage_prone(cases[i]) or right(cases[i]) else worker.RUN_HERE for i in order]
    assert isolate == expected and set(isolate) == {worker.ISOLATE, worker.RUN_HERE}
    refused = [i for i in order if _refused_by_every_rule(cases[i])]
    assert refused, "the sample holds inputs every rule refuses"
    assert all(isolate[order.index(i)] == worker.ISOLATE for i in refused)

    seen: dict[str, bool] = {}

    class Backend:
        def run_many(self, cases, may_crash=None):
            for case in cases:
                seen[case.case_id] = may_crash(case)
                yield Outcome(unreachable="x")

    monkeypatch.setattr(pool, "isolates", None)  # the worker side must not ask
    monkeypatch.setattr(pool, "garbage_prone", None)
    start, stop = slices[0]
    mine, bytes_ = pickle.loads(pool.slice_payload([cases[i] for i in order][start:stop], isolate[start:stop]))
    worker._stream_many(Backend(), mine, 0, len(mine), io.BytesIO(), 0, bytes_)
    assert [seen[c.case_id] for c in mine] == [b == worker.ISOLATE for b in isolate[start:stop]]


def raising_run(case: Case) -> Outcome:
    """``bug-*`` cases raise (an exception of our own code in the child, not a crash of Paddle's)."""
    if case.case_id.startswith("bug"):
        raise KeyError("planted fault in the child")
    return Outcome(unreachable="fine")


@pytest.mark.parametrize("server", [False, True], ids=["own-children", "fork-server"])
def test_a_childs_own_exception_is_raised_here_not_a_crash_outcome(server, request):
    # (before: the child's exit code 3 came back as Outcome(crash="exit code 3"), a crash of Paddle's)
    if server:
        request.getfixturevalue("fork_server")
    cases = [_case("ok-1"), _case("bug-1"), _case("ok-2")]
    got = []
    with pytest.raises(_fork.ChildFailed, match="a forked child's own code raised KeyError: 'planted fault in the "
                                                 "child'") as raised:
        for outcome in _fork.run_isolating(cases, raising_run, _always, isolated=raising_run):
            got.append(outcome)
    assert got == [Outcome(unreachable="fine")]  # the case before it answered; nothing after it
    assert 'raise KeyError("planted fault in the child")' in str(raised.value.__cause__)


def test_a_fork_servers_own_exception_is_raised_here_not_left_unseen():
    # (before: the zygote ended, and the worker forked its children itself from then on, the error unseen)
    def prepare() -> None:
        raise KeyError("planted fault in the fork server")

    server = _fork.ForkServer(prepare=prepare)
    try:
        with pytest.raises(_fork.ChildFailed, match="KeyError: 'planted fault in the fork server'"):
            list(server.run_many(damaging_run, [[_case("v")], [_case("w")]]))
    finally:
        os.close(server._requests)
        os.waitpid(server.pid, 0)
        os.close(server._replies)
