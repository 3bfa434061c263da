"""Parent side of the native backends: crash-isolating worker processes.

:func:`run_native` splits the cases over ``workers`` subprocesses. When a worker dies (Paddle
segfaults or aborts), the case it was on is recorded as ``native crashed: signal N`` and a new
worker resumes right after it; a worker silent for ``timeout`` seconds is killed and its case
recorded as a hang. The sweep always completes, but for an error of our own code (below).

Failing closed: a hang is a *not run* outcome (no answer from Paddle), never a crash of Paddle's;
after ``MAX_STRAIGHT_FAILURES`` hangs in a row, or as many workers ending with an exit code in a
row, the slice gives up and its remaining cases are *not run* with the reason. A worker that cannot
start at all raises :class:`BackendUnavailable`. A worker whose own Python code raised once it had
started (its :data:`.worker.RAISED` frame, or its traceback and exit code 1) raises
:class:`WorkerRaised`: an error of ours, which ends the run (exit 4), never a crash of the case.

Order: within each worker's slice the cases its backend runs in forked children (crash-prone:
:func:`isolates`, worked out here once and handed over with the cases: :func:`plan_slices`) come last
(:func:`crash_prone_last`); each runs in a child of its own on every route (the workers' and the
compiled caller's fork servers), so the order changes no outcome. Outcomes are handed back in the
caller's order.

The compiled route has no Python worker: each slice drives the C++ caller itself
(:class:`_CallerSlice`; requests encoded here, replies parsed here), with the same crash, timeout
and give-up rules. The other routes run :mod:`.worker` processes, which read their slice of cases
pickled on stdin (pickled and written here while the worker imports Paddle; no file) and answer in
pickled frames.

Interrupts: workers run in process groups of their own (so that a Ctrl-C in the terminal reaches
only the parent, which decides); when :func:`run_native` is left by an exception (the sweep's
:class:`~paddle_spmd_port.runctl.signals.Interrupted` included) every worker group -- the worker or the
compiled caller, and any child it forked -- is killed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pickle
import select
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from ..case import Case
from ..outcome import Outcome
from ..runctl.exits import ChildRaised
from ..runctl.signals import signal_text, signals_deferred
from ..types import mesh_dims_of
from ..validity import input_problem
from ._paddle import paddle_version
from .crash_prone import MAY_CRASH
from .worker import (
    DONE,
    FIXED_CWD,
    FRAME,
    HELLO,
    ISOLATE,
    RAISED,
    RUN_HERE,
    fixed_environment,
    fixed_layout_prefix,
)

ProgressFn = Callable[[int], None]

#: Hangs (or Python-level worker deaths) in a row after which a slice gives up.
MAX_STRAIGHT_FAILURES = 3


def _outside_mesh(case: Case) -> bool:
    """A partial dim, or a mesh dim of a dims_mapping, outside its input's mesh (below -1 or past
    its last dim). The registry's worker segfaults building such an input (``_set_partial_dims``)
    and the compiled caller on reading it, on most draws; the grid has a few (its invalid sets,
    already isolated there by other clauses), random mode's ``partial-bad`` and ``mesh-dim-range``
    mutations a few hundred per million cases: unisolated, each cost a worker restart (an import
    of Paddle, ~3 s of a core) or a program restart."""
    for s in case.inputs:
        if s is None or s.mesh is None or s.valid_on_mesh:
            continue
        n = len(s.mesh.shape)
        if any(not 0 <= p < n for p in s.partial_dims):
            return True
        if any(m < -1 or m >= n for e in s.dims_mapping for m in mesh_dims_of(e)):
            return True
    return False


def garbage_prone(case: Case) -> bool:
    """An input invalid for its op (:func:`~paddle_spmd_port.validity.input_problem`): Paddle's rules do
    not validate it, and some read memory they never set on it (an answer that moves from run to run) or
    damage the heap without dying (moving the answers of the cases after it in the same process). Every
    route runs such a case in a forked child of its own, from the fork server's unchanged state, so its
    outcome depends on no case before it and no case after it depends on it; and :func:`run_native`
    runs it a second time in a fresh process of another memory layout to tell an answer read from unset
    memory (its ``recheck``)."""
    return input_problem(case) is not None


def isolates(backend: str) -> Callable[[Case], bool] | None:
    """The cases ``backend`` runs crash-isolated: :data:`.crash_prone.MAY_CRASH`'s and the
    :func:`garbage_prone` ones, and on the registry and compiled routes also :func:`_outside_mesh`'s.
    Worked out here once per case and handed to the workers with their slice (:mod:`.worker`) and to
    the compiled caller with each request. A predicate only picks how a case runs, never its outcome."""
    base = MAY_CRASH.get(backend)
    if base is None:
        return None
    outside = backend in ("registry", "compiled")

    def may_crash(case: Case) -> bool:
        return base(case) or (outside and _outside_mesh(case)) or garbage_prone(case)
    return may_crash


class BackendUnavailable(RuntimeError):
    """The backend's workers cannot start here (Paddle missing, import failure, ...)."""


class WorkerRaised(ChildRaised):
    """A worker's own Python code raised (its traceback, as the worker wrote it, is the ``__cause__``):
    an error of ours, not a crash of Paddle's (which kills the worker by a signal)."""

    def __init__(self, backend: str, remote: str) -> None:
        super().__init__(f"the {backend} worker", remote)


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "no exit code"
    return signal_text(-code) if code < 0 else f"exit code {code}"


def worker_command(backend: str, base: int, start: int) -> list[str]:
    """A worker's command line; its numbers of one width (zeros in front), so that every worker's
    arguments take the same room on its stack: with addresses not randomised
    (:func:`.worker.fixed_layout_prefix`), where a slice starts then moves no byte a case reads."""
    return [*fixed_layout_prefix(), sys.executable, "-m", "paddle_spmd_port.native.worker", "--backend", backend,
            "--base", f"{base:012d}", "--start", f"{start:012d}"]


def start_worker(backend: str, base: int, start: int, layout: int) -> tuple[subprocess.Popen[bytes], IO[bytes]]:
    """A worker process (:func:`worker_command`) in a process group of its own, and the file its stderr
    goes to (a file, not a pipe: a chatty worker can't block on it). It imports Paddle, then waits for
    its slice on stdin. Started with a fixed hash seed, directory and environment in memory layout
    ``layout``: the worker's memory the same every run (.worker.fixed_layout_prefix)."""
    env = fixed_environment(dict(os.environ, PYTHONUNBUFFERED="1", GLOG_minloglevel="3",
                                 FLAGS_call_stack_level="0", PYTHONHASHSEED="0"), layout)
    err_log = tempfile.TemporaryFile()
    proc = subprocess.Popen(worker_command(backend, base, start), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=err_log, env=env, cwd=FIXED_CWD, start_new_session=True)
    return proc, err_log


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:  # the group outlives its leader while any member lives, so no poll() check here
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def slice_payload(cases: Sequence[Case], isolate: Sequence[int]) -> bytes:
    """What a worker reads on stdin (:mod:`.worker`): the cases and one byte per case, how to run
    it (:data:`.worker.RUN_HERE` or :data:`.worker.ISOLATE`)."""
    return pickle.dumps((list(cases), bytes(isolate)), protocol=pickle.HIGHEST_PROTOCOL)


def _read_and_close(err_log: IO[bytes]) -> str:
    """What a worker or program wrote to its stderr file; the file closed."""
    err_log.seek(0)
    stderr = err_log.read().decode(errors="replace")
    err_log.close()
    return stderr


def _feed(pipe: IO[bytes], payload: bytes) -> None:
    """Write the worker's cases to its stdin and close it (a thread of its own: the worker reads
    them once Paddle is imported; a worker that died or was killed ends the write)."""
    with contextlib.suppress(OSError):
        with pipe:
            pipe.write(payload)


class _Slice(threading.Thread):
    def __init__(self, backend: str, cases: Sequence[Case], start: int, stop: int, outcomes: list[Outcome | None],
                 timeout: float, on_progress: ProgressFn, info: dict, stop_event: threading.Event,
                 isolate: Sequence[int]) -> None:
        super().__init__(daemon=True)
        self.backend, self.cases, self.start_at, self.stop_at = backend, cases, start, stop
        self.outcomes, self.timeout, self.on_progress, self.info = outcomes, timeout, on_progress, info
        self.stop_event = stop_event
        self.isolate = isolate  # per case (the pool's order): its worker byte (plan_slices), worked out once
        self.proc: subprocess.Popen | None = None
        self.error: BaseException | None = None
        self.layout = 0  # the memory layout its workers start in (.worker.LAYOUT_ENV)
        self.early: tuple[subprocess.Popen[bytes], IO[bytes]] | None = None  # a first worker started before

    def kill(self) -> None:
        """End the current worker and everything it started (its own process group), and a first
        worker started early and not yet used."""
        for proc in (self.proc, self.early[0] if self.early is not None else None):
            if proc is not None:
                _kill_group(proc)

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # reported by the parent
            self.error = exc

    def _run(self) -> None:
        next_index = self.start_at
        straight_failures: list[str] = []
        memo: dict[bytes, Outcome] = {}
        pickled_cases = b""  # this slice's cases, pickled once the first worker is starting
        while next_index < self.stop_at:
            if self.stop_event.is_set():
                return
            first_index = next_index
            if self.early is not None and next_index == self.start_at:
                (proc, err_log), self.early = self.early, None
                self.proc = proc
            else:
                proc, err_log = start_worker(self.backend, self.start_at, next_index, self.layout)
                self.proc = proc
            if self.stop_event.is_set():  # stopped while this worker was starting: the parent may not see it
                self.kill()
            if not pickled_cases:
                pickled_cases = slice_payload(self.cases[self.start_at:self.stop_at],
                                              self.isolate[self.start_at:self.stop_at])
            assert proc.stdin is not None and proc.stdout is not None
            threading.Thread(target=_feed, args=(proc.stdin, pickled_cases), daemon=True).start()
            try:
                next_index, finished, hung = self._read_frames(proc.stdout.fileno(), next_index, memo)
            except WorkerRaised:
                self.kill()
                proc.wait()
                err_log.close()
                raise
            proc.stdout.close()
            proc.wait()
            self.kill()  # anything the worker left behind in its group (a forked child, the C++ caller)
            stderr = _read_and_close(err_log)
            if finished or next_index >= self.stop_at or self.stop_event.is_set():
                return
            failure = self._worker_failed(proc.returncode, stderr, next_index, hung)
            self.on_progress(1)
            next_index += 1
            if self._gave_up(straight_failures, failure, next_index - 1 > first_index, range(next_index, self.stop_at)):
                return

    def _read_frames(self, fd: int, next_index: int, memo: dict[bytes, Outcome]) -> tuple[int, bool, bool]:
        """A worker's frames until its stdout ends or it is silent for ``timeout`` (then killed): the
        outcomes into the slice's, the version info into ``info``. Returns the next case's index,
        whether the worker finished its cases and whether it hung."""
        buf = b""
        finished = hung = False
        while True:
            ready, _, _ = select.select([fd], [], [], self.timeout)
            if not ready:
                hung = True
                self.kill()
                break
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            buf += chunk
            done_here, pos = 0, 0
            while len(buf) - pos >= FRAME.size:  # whole frames only (see .worker)
                index, size = FRAME.unpack_from(buf, pos)
                if len(buf) - pos - FRAME.size < size:
                    break
                payload = buf[pos + FRAME.size:pos + FRAME.size + size]
                pos += FRAME.size + size
                if index >= 0:
                    outcome = memo.get(payload)
                    if outcome is None:  # equal outcomes pickle alike: one object for all of them
                        if len(memo) > 50_000:
                            memo.clear()
                        outcome = memo[payload] = pickle.loads(payload)
                    self.outcomes[index] = outcome
                    next_index = index + 1
                    done_here += 1
                elif index == HELLO:
                    self.info.update(pickle.loads(payload))
                elif index == DONE:
                    finished = True
                elif index == RAISED:
                    raise WorkerRaised(self.backend, payload.decode(errors="replace"))
            buf = buf[pos:]
            if done_here:
                self.on_progress(done_here)
        return next_index, finished, hung

    def _worker_failed(self, returncode: int | None, stderr: str, next_index: int, hung: bool) -> str:
        """The outcome of the case in flight when a worker ended before its last case: *not run* if it
        hung, else a crash (a Python-level death says why); a worker that never started raises
        :class:`BackendUnavailable`. Returns the failure of the harness it was ("" for a crash of Paddle's)."""
        if hung:
            failure = f"worker timed out: no answer within {self.timeout:g} s"
            self.outcomes[next_index] = Outcome(not_run=failure)
            return failure
        if returncode == 1 and "Traceback" in stderr and next_index == self.start_at and not self.info:
            last = [ln.strip() for ln in stderr.splitlines() if ln.strip()][-1:] or ["(no message)"]
            raise BackendUnavailable(f"the {self.backend} worker could not start: {last[0][:300]}")
        if returncode == 1 and "Traceback (most recent call last)" in stderr:  # (raised where no RAISED frame went)
            raise WorkerRaised(self.backend, stderr[stderr.rindex("Traceback (most recent call last)"):])
        how = _describe_exit(returncode)
        failure = ""
        if returncode is not None and returncode > 0:  # an exit code, no signal: say why
            tail = [ln for ln in stderr.strip().splitlines() if ln.strip()][-1:]
            how += f" ({tail[0].strip()[:200]})" if tail else ""
            failure = f"worker died: {how}"
        self.outcomes[next_index] = Outcome(crash=how)
        return failure

    def _gave_up(self, straight_failures: list[str], failure: str, answered: bool, rest: Sequence[int]) -> bool:
        """A run of failures of the harness (not of Paddle's rules) ends the slice: fail closed, fast.
        ``failure``: the last worker's ("" if none), ``answered``: whether it answered a case (then
        the run starts again: "in a row" = with no case answered in between). On giving up, the
        ``rest`` of the cases are *not run* with the reason; returns whether it gave up."""
        if answered or not failure:
            straight_failures.clear()
        if failure:
            straight_failures.append(failure)
        if len(straight_failures) >= MAX_STRAIGHT_FAILURES and rest:
            why = (f"the {self.backend} worker failed {len(straight_failures)} times in a row "
                   f"(last: {straight_failures[-1]})")
            for i in rest:
                self.outcomes[i] = Outcome(not_run=why)
            self.on_progress(len(rest))
            return True
        return False


class _CallerSlice(_Slice):
    """A slice for the compiled route: the parent drives the C++ caller itself, with no Python
    worker in between. Requests are encoded here straight from the cases and written a batch
    ahead; replies become outcomes here (:func:`.compiled.exchange`). The caller isolates the
    known-crashy cases itself (a forked child each); if it dies anyway, the first unanswered case
    is the one in flight and gets the crash, and a new program resumes after it. Timeouts and
    failures in a row are handled as for a worker: a silent program is killed and its case is
    *not run*; a program that ends with an exit code (not a signal) is a failure of the harness."""

    def __init__(self, binary: Path, cases: Sequence[Case], start: int, stop: int, outcomes: list[Outcome | None],
                 timeout: float, on_progress: ProgressFn, info: dict, stop_event: threading.Event,
                 isolate: Sequence[int]) -> None:
        super().__init__("compiled", cases, start, stop, outcomes, timeout, on_progress, info, stop_event, isolate)
        self.binary = binary
        self.routed: list[int] = []  # the slice's cases the caller has a rule for
        self.early: tuple[subprocess.Popen[bytes], IO[bytes]] | None = None  # see prestart

    def prestart(self) -> None:
        """Route the slice's cases and start its first program (:func:`run_native` calls this for
        every slice before starting any thread: the programs start up side by side, and the
        threads encode requests meanwhile)."""
        from . import compiled

        self.routed = [i for i in range(self.start_at, self.stop_at) if self.cases[i].rule in compiled.RULES]
        if self.routed:
            err_log = tempfile.TemporaryFile()
            self.proc = compiled.start_program(self.binary, stderr=err_log, new_session=True,
                                               isolating=any(self.isolate[i] for i in self.routed),
                                               layout=self.layout)
            self.early = (self.proc, err_log)

    def _run(self) -> None:
        from . import compiled

        if self.early is None:
            self.prestart()
        routed = self.routed
        if len(routed) < self.stop_at - self.start_at:
            taken = set(routed)
            for i in range(self.start_at, self.stop_at):
                if i not in taken:
                    self.outcomes[i] = Outcome(unreachable=compiled.NO_RULE.format(rule=self.cases[i].rule))
            self.on_progress(self.stop_at - self.start_at - len(routed))
        pos = 0  # routed[pos] is the first case without an outcome
        straight_failures: list[str] = []
        started = False
        while pos < len(routed):
            if self.stop_event.is_set():
                return
            first = pos
            if self.early is not None:  # the first program, started by prestart
                proc, err_log = self.early
                self.early = None
            else:
                err_log = tempfile.TemporaryFile()
                proc = self.proc = compiled.start_program(self.binary, stderr=err_log, new_session=True,
                                                          isolating=any(self.isolate[i] for i in routed[pos:]),
                                                          layout=self.layout)
            if self.stop_event.is_set():  # stopped while this program was starting: the parent may not see it
                self.kill()
            pos, hung = self._exchange(proc, pos)
            code = self._end_program(proc, hung)
            stderr = _read_and_close(err_log)
            if pos >= len(routed) or self.stop_event.is_set():
                return
            failure = self._program_failed(code, stderr, pos, hung, pos == first and not started)
            started = started or pos > first
            self.on_progress(1)
            pos += 1
            if self._gave_up(straight_failures, failure, pos - 1 > first, routed[pos:]):
                return

    def _exchange(self, proc: subprocess.Popen[bytes], pos: int) -> tuple[int, bool]:
        """The requests of ``routed[pos:]`` to a program, a batch ahead, and its replies as outcomes
        until its stdout ends or it is silent for ``timeout`` (then killed). Returns the position
        of the first case without an outcome and whether it hung."""
        from . import compiled

        cases, isolate, routed = self.cases, self.isolate, self.routed
        requests = (compiled.request_line(cases[i], bool(isolate[i])) for i in routed[pos:])
        hung = False
        try:
            for replies in compiled.exchange(proc, requests, self.timeout):
                for outcome in compiled.outcomes_of(replies):
                    self.outcomes[routed[pos]] = outcome
                    pos += 1
                self.on_progress(len(replies))
        except compiled.Silent:
            hung = True
        if hung:
            self.kill()
        return pos, hung

    def _end_program(self, proc: subprocess.Popen[bytes], hung: bool) -> int:
        """Wait for a program whose stdout ended (it answered everything, or died) and end its group;
        its exit code."""
        try:
            code = proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            code = proc.wait()
        self.kill()  # anything left in its group (a forked child)
        assert proc.stdout is not None
        proc.stdout.close()
        return code

    def _program_failed(self, code: int, stderr: str, pos: int, hung: bool, never_answered: bool) -> str:
        """The outcome of ``routed[pos]``, the case in flight when the program ended: *not run* if it
        hung, else a crash (an exit code, not a signal, is the harness's failure and says why); a
        program that ended with an exit code before its first answer ever (``never_answered``) raises
        :class:`BackendUnavailable`. Returns the harness's failure ("" for a crash of Paddle's)."""
        from . import compiled

        failure = ""
        if hung:
            failure = f"worker timed out: no answer within {self.timeout:g} s"
            self.outcomes[self.routed[pos]] = Outcome(not_run=failure)
            return failure
        tail = [ln.strip() for ln in stderr.splitlines() if ln.strip()][-1:]
        if code > 0 and never_answered and tail:
            raise BackendUnavailable(f"the compiled caller could not start: {tail[0][:300]}")
        how = compiled.death_text(code)
        if code >= 0:  # ended by an exit code, not by a signal: the harness failed, not Paddle
            how += f" ({tail[0][:200]})" if tail else ""
            failure = f"worker died: {how}"
        self.outcomes[self.routed[pos]] = Outcome(crash=how)
        return failure


class Cancelled(Exception):
    """:func:`run_native` was cancelled through its ``cancel`` event (workers ended, as for an interrupt)."""


#: The re-run of invalid inputs (:func:`run_native`) starts a worker per this many cases, at least one.
RERUN_PER_WORKER = 500


def run_native(cases: Sequence[Case], backend: str = "registry", workers: int = 2, timeout: float = 120.0,
               on_progress: ProgressFn | None = None, cancel: threading.Event | None = None,
               recheck: bool = True) -> tuple[list[Outcome], dict]:
    """Outcomes of ``cases`` on a native backend, in order, plus the Paddle version info.

    With ``recheck``, every :func:`garbage_prone` case that Paddle answered (a result, an error, a
    crash, an undecodable reply) runs once more, after the sweep, in a fresh set of workers started in
    another memory layout (.worker.LAYOUT_ENV; both layouts fixed where the addresses need not be
    randomised, .worker.fixed_layout_prefix, so that both runs read the same bytes every time). Where
    the two outcomes differ, Paddle read memory it never set, and the case's outcome carries both
    (:func:`varied`; compare.py: *native-varies*). Where the second run gave no answer (*not run*: it
    timed out, its workers kept failing), the first answer stands, marked ``not_rechecked`` with why.

    If an exception (an interrupt, :class:`Cancelled` once ``cancel`` is set: how a caller running
    this in a thread of its own stops it, or an error raised in a slice's thread, re-raised here once
    every worker has ended) ends the wait, it carries ``partial_outcomes``: the outcomes received so
    far, None for the rest (those of the sweep, unchecked, when it ends the re-run)."""
    recheck = recheck and isolates(backend) is not None
    invalid = [garbage_prone(case) for case in cases] if recheck else None  # (worked out once here: ~14 us a case)
    early = None
    if invalid is not None and backend != "compiled" and any(invalid):
        # the re-run's first worker starts now, its Paddle import beside the sweep instead of after it
        # (the C++ caller starts in milliseconds: not needed there)
        early = start_worker(backend, 0, 0, layout=1)
    try:
        outcomes, info = _run_once(cases, backend, workers, timeout, on_progress, cancel, layout=0,
                                   invalid=invalid)
        if invalid is None:
            return outcomes, info
        again = [i for i, bad in enumerate(invalid) if bad and outcomes[i].not_run is None
                 and outcomes[i].unreachable is None]
        if not again:
            return outcomes, info
        try:
            # one worker per RERUN_PER_WORKER cases: a worker's start (Paddle's import) costs seconds, and a
            # group's invalid inputs Paddle answered are mostly a few dozen
            few = max(1, min(workers, len(again) // RERUN_PER_WORKER))
            # the early worker is the first slice's however many slices there are (each split's first
            # starts at case 0, the command it was started with): one not handed over would sit idle,
            # Paddle imported, until the parent exits, one more each round of a long random run
            second, _ = _run_once([cases[i] for i in again], backend, few, timeout, None, cancel, layout=1,
                                  early=early, invalid=[True] * len(again))
            early = None  # (handed over: the re-run's first slice ends it)
        except BaseException as exc:
            exc.partial_outcomes = list(outcomes)  # type: ignore[attr-defined]
            raise
    finally:
        if early is not None:  # not used: no case to re-run, or an interrupt
            _kill_group(early[0])
            early[0].wait()
            early[1].close()
    for i, other in zip(again, second, strict=True):
        outcomes[i] = varied(outcomes[i], other)
    return outcomes, info


def _canonical(outcome: Outcome) -> str:
    return json.dumps(outcome.to_json(), sort_keys=True, separators=(",", ":"))


def varied(first: Outcome, second: Outcome) -> Outcome:
    """One case's outcome from two runs: ``first`` when they are equal, else the two in a fixed order
    (by their JSON text), the other one as ``varies``: which run came first does not change the outcome.
    A second run that gave no answer (*not run*) leaves ``first`` marked ``not_rechecked`` with its
    reason: no answer is no evidence either way (a timeout says how loaded the machine was, not what
    Paddle answers), so the case is neither taken as stable nor as varying, and the parity run fails
    closed on it (exit 3)."""
    if second.not_run is not None:
        return dataclasses.replace(first, not_rechecked=second.not_run)
    a, b = _canonical(first), _canonical(second)
    if a == b:
        return first
    low, high = (first, second) if a < b else (second, first)
    return dataclasses.replace(low, varies=high)


def _run_once(cases: Sequence[Case], backend: str, workers: int, timeout: float,
              on_progress: ProgressFn | None, cancel: threading.Event | None, layout: int = 0,
              early: tuple[subprocess.Popen[bytes], IO[bytes]] | None = None,
              invalid: Sequence[bool] | None = None) -> tuple[list[Outcome], dict]:
    """One run of ``cases`` over the worker pool (:func:`run_native`, without its re-run), its workers
    started in memory layout ``layout`` (:data:`.worker.LAYOUT_ENV`); ``early``: the first slice's
    worker, started already (:func:`start_worker` with base 0, start 0, this layout);
    ``invalid``: each case's :func:`garbage_prone`, if worked out already."""
    outcomes: list[Outcome | None] = [None] * len(cases)
    info: dict = {}
    lock = threading.Lock()

    def progress(n: int) -> None:
        if on_progress is not None:
            with lock:
                on_progress(n)

    if timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    if not cases:
        return [], info
    stop_event = threading.Event()
    n = len(cases)
    slices, order, isolate = plan_slices(cases, backend, workers, invalid)
    cases = [cases[i] for i in order]  # the workers see the cases in this order
    binary = None
    if backend == "compiled":  # the pool drives the C++ caller itself (see _CallerSlice)
        from . import compiled

        info.update(paddle_version())
        try:
            binary = compiled.compile_caller()
        except compiled.BuildError as why:
            progress(n)
            return [compiled.unavailable(why)] * n, info
    threads: list[_Slice] = [
        _CallerSlice(binary, cases, a, b, outcomes, timeout, progress, info, stop_event, isolate) if binary is not None
        else _Slice(backend, cases, a, b, outcomes, timeout, progress, info, stop_event, isolate) for a, b in slices]
    for t in threads:
        t.layout = layout
    if early is not None:
        assert slices[0][0] == 0 and not isinstance(threads[0], _CallerSlice), "an early worker is the first slice's"
        threads[0].early = early
    try:
        # a signal waits until every program is started and every thread runs: one landing inside a
        # Popen would leave a child no slice knows of (never ended), and one between the starts
        # would leave threads that never ran for the cleanup below
        with signals_deferred():
            for t in threads:
                if isinstance(t, _CallerSlice):
                    t.prestart()
            for t in threads:
                t.start()
        pending = list(threads)
        while pending:
            pending[0].join(0.2)
            if cancel is not None and cancel.is_set():
                raise Cancelled(f"the {backend} group was cancelled")
            if any(t.error is not None for t in threads):  # a slice failed: the others stop now, not at their end
                break
            pending = [t for t in pending if t.is_alive()]
    except BaseException as exc:  # an interrupt: hand what was answered so far to the caller
        exc.partial_outcomes = in_given_order(outcomes, order)  # type: ignore[attr-defined]
        raise
    finally:  # normal end: nothing left to kill; interrupt or error: every worker group ends here
        stop_event.set()
        for t in threads:
            t.kill()
        for t in threads:
            if t.ident is not None:
                t.join(timeout=10)
            elif t.early is not None:  # never ran (a prestart failed): its first worker is reaped here
                t.early[0].wait()
                t.early[1].close()
    for t in threads:
        if t.error is not None:  # (its workers ended above) what the other slices answered still counts
            t.error.partial_outcomes = in_given_order(outcomes, order)  # type: ignore[attr-defined]
            raise t.error
    answered = in_given_order(outcomes, order)
    missing = [i for i, o in enumerate(answered) if o is None]
    if missing:
        raise RuntimeError(f"native backend left {len(missing)} cases without an outcome (first: {missing[0]})")
    return answered, info  # type: ignore[return-value]


def plan_slices(cases: Sequence[Case], backend: str, workers: int, invalid: Sequence[bool] | None = None
                ) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """How the pool runs ``cases`` on ``backend``: the slices (``(start, stop)`` in the workers'
    order, one per worker, at most one per case), the order the workers see the cases in (positions
    in ``cases``: :func:`crash_prone_last`), and in that order each case's worker byte
    (:data:`.worker.RUN_HERE` or :data:`.worker.ISOLATE`: whether it is crash-prone, :func:`isolates`),
    worked out once per case (``invalid``: each case's :func:`garbage_prone`, if worked out already).
    An input invalid for its op is always isolated: what Paddle answers it from unset memory must not
    depend on the cases before it in the same process."""
    n = len(cases)
    workers = max(1, min(workers, n))
    bounds = [n * k // workers for k in range(workers + 1)]
    slices = [(bounds[k], bounds[k + 1]) for k in range(workers) if bounds[k] < bounds[k + 1]]
    may_crash = isolates(backend)
    if may_crash is None:
        return slices, list(range(n)), [RUN_HERE] * n
    if invalid is None:
        invalid = [garbage_prone(case) for case in cases]
    prone = [bad or may_crash(case) for bad, case in zip(invalid, cases, strict=True)]
    order = crash_prone_last(slices, prone)
    return slices, order, [ISOLATE if prone[i] else RUN_HERE for i in order]


def crash_prone_last(slices: Sequence[tuple[int, int]], prone: Sequence[bool]) -> list[int]:
    """The order the workers run the cases in: within each slice, the cases its backend runs in a
    forked child (``prone[i]``: its ``may_crash``) after the others, so that they reach the fork
    server in runs (:func:`._fork.run_isolating` queues a run's requests together). Each slice keeps
    its cases, so the work stays split as evenly as before."""
    order: list[int] = []
    for start, stop in slices:
        order += [i for i in range(start, stop) if not prone[i]]
        order += [i for i in range(start, stop) if prone[i]]
    return order


def in_given_order(outcomes: Sequence[Outcome | None], order: Sequence[int]) -> list[Outcome | None]:
    """``outcomes`` (in the workers' order, :func:`crash_prone_last`) back in the caller's order."""
    back: list[Outcome | None] = [None] * len(order)
    for position, index in enumerate(order):
        back[index] = outcomes[position]
    return back
