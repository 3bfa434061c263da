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

Fork server: a worker calls :func:`start_fork_server` right after importing its backend, before
it loads the cases or builds anything. That forks a *zygote*, a copy of the worker as it is then
(Paddle imported, nothing else), which from then on forks the children for the worker
(:func:`run_isolating` hands it each run of crash-prone cases with a module-level runner). A fork
of the grown worker cost 25-40 ms a crash case in a sweep (its page tables, the copy-on-write
faults of both sides afterwards); the zygote is smaller and idle, and the worker itself never
forks, so its own pages stay writable. Without a server (tests, ``run_many`` in a plain process),
or if it has gone, the children are forked from the calling process as before.

Huge pages: most of a fork's CPU is copying the page-table entries of the zygote's private
anonymous memory (its C heap and Python's arenas, ~120 MB after ``import paddle``), one per 4 KiB
page, and the child's exit dropping them again. The zygote asks the kernel to back that memory
with 2 MiB pages before it serves (``MADV_COLLAPSE``, :func:`collapse_to_huge_pages`), so a fork
copies one entry per 2 MiB instead (the CPU saved: docs/measurements/2026-12-01-native-notes.md). Where the
kernel cannot (older than 6.1, THP off) the madvise fails and nothing changes. The zygote then holds
its own copy of that memory instead of sharing the worker's pages.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import struct
from collections.abc import Callable, Iterable, Iterator, Sequence

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


def _write_frame(fd: int, payload: bytes) -> None:
    data = memoryview(_LEN.pack(len(payload)) + payload)
    while data:
        data = data[os.write(fd, data):]


def _read_frame(fd: int) -> bytes | None:
    head = _read_exact(fd, _LEN.size)
    return None if head is None else _read_exact(fd, _LEN.unpack(head)[0])


class ForkServerGone(RuntimeError):
    """The fork server stopped answering (it died); the cases it had not answered are run here."""


class ForkServer:
    """The zygote (see the module docstring): asked with ``(runner, cases)``, it answers with the
    outcomes of :func:`run_in_children` on them, one frame each. ``runner`` must be picklable
    by reference (a module-level function) and must not isolate again."""

    def __init__(self, close_fds: Sequence[int] = ()) -> None:
        req_read, req_write = os.pipe()
        rep_read, rep_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the zygote: serve until the worker closes its end (it ended, or died)
            code = 0
            try:
                for fd in (req_write, rep_read, *close_fds):
                    os.close(fd)
                _serve(req_read, rep_write)
            except BaseException:  # the worker sees the pipe end and runs the rest itself
                code = 3
            os._exit(code)
        os.close(req_read)
        os.close(rep_write)
        self.pid, self._requests, self._replies = pid, req_write, rep_read

    def run(self, runner: Callable[[Case], Outcome], cases: list[Case]) -> Iterator[Outcome]:
        try:
            _write_frame(self._requests, pickle.dumps((runner, cases), protocol=pickle.HIGHEST_PROTOCOL))
        except OSError as exc:
            raise ForkServerGone(f"fork server {self.pid}: {exc}") from exc
        for _ in cases:
            body = _read_frame(self._replies)
            if body is None:
                raise ForkServerGone(f"fork server {self.pid} ended")
            yield pickle.loads(body)


def _serve(requests: int, replies: int) -> None:
    gc.collect()
    gc.freeze()  # the zygote's objects stay put: a collection in a child would copy their pages
    collapse_to_huge_pages()  # fewer page-table entries for each fork to copy
    while True:
        body = _read_frame(requests)
        if body is None:
            return
        runner, cases = pickle.loads(body)
        for outcome in run_in_children(runner, cases):
            _write_frame(replies, pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL))


_server: ForkServer | None = None

_MADV_COLLAPSE = 25
_HUGE = 2 << 20


def collapse_to_huge_pages() -> int:
    """Back this process's private anonymous memory (the C heap, Python's arenas) with 2 MiB pages
    where the kernel can (``madvise(MADV_COLLAPSE)``, Linux 6.1+); the number of 2 MiB ranges collapsed."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        with open("/proc/self/maps") as fh:
            maps = fh.read().splitlines()
    except (OSError, AttributeError):
        return 0
    done = 0
    for line in maps:
        fields = line.split()
        if fields[1] != "rw-p" or (len(fields) > 5 and fields[5] != "[heap]"):
            continue
        lo, hi = (int(x, 16) for x in fields[0].split("-"))
        lo, hi = (lo + _HUGE - 1) & ~(_HUGE - 1), hi & ~(_HUGE - 1)
        if hi > lo and madvise(lo, hi - lo, _MADV_COLLAPSE) == 0:
            done += (hi - lo) // _HUGE
    return done


def start_fork_server(close_fds: Sequence[int] = ()) -> None:
    """Fork this process's zygote now (a worker, after importing its backend and before loading
    its cases); ``close_fds`` are closed in it (the worker's protocol pipe, whose end the pool
    must see when the worker ends)."""
    global _server
    _server = ForkServer(close_fds)


def _in_children(run: Callable[[Case], Outcome], isolated: Callable[[Case], Outcome] | None,
                 cases: list[Case]) -> Iterator[Outcome]:
    """``cases`` in forked children: the fork server's (running ``isolated``) if there is one,
    else this process's own (running ``run``)."""
    global _server
    server = _server
    if server is not None and isolated is not None:
        done = 0
        try:
            for outcome in server.run(isolated, cases):
                done += 1
                yield outcome
            return
        except ForkServerGone:
            _server = None  # from now on this process forks its children itself
            cases = cases[done:]
    yield from run_in_children(run, cases)


def run_isolating(cases: Iterable[Case], run: Callable[[Case], Outcome],
                  may_crash: Callable[[Case], bool],
                  isolated: Callable[[Case], Outcome] | None = None) -> Iterator[Outcome]:
    """Outcomes in order: a run of consecutive ``may_crash`` cases (up to :data:`CHILD_BATCH`)
    goes to forked children (the fork server's, running ``isolated``, a module-level function
    doing what ``run`` does; else this process's own, running ``run``); every other case is
    ``run`` here."""
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
        yield from _in_children(run, isolated, batch)
