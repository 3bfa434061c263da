"""Crash isolation inside a worker: cases Paddle may crash on run in a forked copy of the worker.

A fork costs tens of milliseconds (the page tables of a process that imported Paddle); a worker
restart costs a fresh ``import paddle`` (1.5-3 s). So a backend runs the cases it knows to be
crash-prone (its own ``may_crash``) in forked children, consecutive ones sharing a child, and
everything else in the worker itself:

    cases        a b C D e F     (capitals: may crash)
    runs         a, b here; C, D in one child; e here; F in a child
    C crashes    C -> Outcome(crash="signal 11 (SIGSEGV)"), and a new child takes D

A crash that ``may_crash`` misses still becomes a crash outcome: the worker dies and
:mod:`.pool` restarts it, only slower. ``may_crash`` picks where a case runs, never its outcome.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import struct
from collections.abc import Callable, Iterable, Iterator

from ..case import Case
from ..outcome import Outcome
from ..runctl import signal_text

#: At most this many consecutive crash-prone cases share one forked child.
CHILD_BATCH = 512
_LEN = struct.Struct(">I")


def describe_status(status: int) -> str:
    """A child's wait status in :mod:`.pool`'s words (``signal 11 (SIGSEGV)``, ``exit code 3``)."""
    if os.WIFSIGNALED(status):
        return signal_text(os.WTERMSIG(status))
    return f"exit code {os.WEXITSTATUS(status)}"


def quiet_child() -> None:
    """In a forked child: die on a fatal signal at once, without Paddle's handler (which prints a
    symbolised C++ traceback to stdout and takes ~40 ms) and without a core file."""
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for sig in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGILL):
        signal.signal(sig, signal.SIG_DFL)
    gc.disable()  # short-lived: a collection would write to every object's header, copying the worker's pages
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)


def _read_exact(fd: int, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = os.read(fd, n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def run_in_children(run: Callable[[Case], Outcome], cases: list[Case]) -> Iterator[Outcome]:
    """``run`` each case in a forked copy of this process, outcomes back through a pipe (pickled,
    length-prefixed). If the child dies, the case it was on gets the crash and a new child takes
    the rest."""
    done = 0
    while done < len(cases):
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: run, report, leave without running any cleanup
            code = 0
            try:
                os.close(read_fd)
                quiet_child()
                for case in cases[done:]:
                    payload = pickle.dumps(run(case), protocol=pickle.HIGHEST_PROTOCOL)
                    os.write(write_fd, _LEN.pack(len(payload)) + payload)
            except BaseException:  # the parent reports the missing answer
                code = 3
            os._exit(code)
        os.close(write_fd)
        try:
            while done < len(cases):
                head = _read_exact(read_fd, _LEN.size)
                if head is None:
                    break
                body = _read_exact(read_fd, _LEN.unpack(head)[0])
                if body is None:
                    break
                done += 1
                yield pickle.loads(body)
        finally:
            os.close(read_fd)
        _, status = os.waitpid(pid, 0)
        if done < len(cases):
            done += 1
            yield Outcome(crash=describe_status(status))


def run_isolating(cases: Iterable[Case], run: Callable[[Case], Outcome],
                  may_crash: Callable[[Case], bool]) -> Iterator[Outcome]:
    """Outcomes in order: a run of consecutive ``may_crash`` cases (up to :data:`CHILD_BATCH`)
    goes to :func:`run_in_children`; every other case is ``run`` here."""
    it = iter(cases)
    pushed_back: list[Case] = []
    while True:
        case = pushed_back.pop() if pushed_back else next(it, None)
        if case is None:
            return
        if not may_crash(case):
            yield run(case)
            continue
        batch = [case]
        for other in it:
            if len(batch) < CHILD_BATCH and may_crash(other):
                batch.append(other)
            else:
                pushed_back.append(other)
                break
        yield from run_in_children(run, batch)
