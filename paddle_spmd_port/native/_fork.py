"""Crash isolation inside a worker: cases Paddle may crash on run in a forked copy of the worker.

A fork costs milliseconds (the page tables of a process that imported Paddle); a worker restart
costs a fresh ``import paddle`` (1.5-3 s). So a backend runs the cases it knows to be crash-prone
(its own ``may_crash``) in forked children, **one child per case**, and everything else in the
worker itself:

    cases        a b C D e F     (capitals: may crash)
    runs         a, b here; C, D, F each in a child of its own; e here
    C crashes    C -> Outcome(crash="signal 11 (SIGSEGV)"); D runs as it would have anyway

Why a child each: some crash-prone cases corrupt Paddle's heap without dying, and a case run after
one of them in the same process answers from the damage. When consecutive cases shared a child, an
outcome depended on the cases before it in that child (seen on PIR: invalid inputs of a grad rule
``unreachable`` alone and a crash after their neighbours, or an answer in the whole sweep and a
crash alone; docs/measurements/2026-12-02-pir-isolation.md names them, with the cost in forks). Each child
now starts from the same state (the zygote's, below), so a case's outcome is the one it gets alone.

A crash that ``may_crash`` misses still becomes a crash outcome: the worker dies and
:mod:`.pool` restarts it, only slower. ``may_crash`` picks where a case runs, never its outcome.

A child whose own Python code raises (unpickling its case, pickling the outcome, a bug of ours:
Paddle's errors are outcomes inside ``run``) did not crash: it answers with its traceback
(:data:`FAILED`) instead of an outcome, and reading that answer raises :class:`ChildFailed` in the
worker, which ends the run as an internal error (:mod:`.worker`), never a crash outcome of the case.
So does the zygote's own code (its ``prepare``, its serving): it answers every request with its
traceback from then on.

Fork server: a worker calls :func:`start_fork_server` right after importing its backend, before
it loads the cases or builds anything. That forks a *zygote*, a copy of the worker as it is then
(Paddle imported, nothing else), which from then on forks the children for the worker
(:func:`run_isolating` hands it the crash-prone cases with a module-level runner, one request per
case, queued in its pipe). The zygote keeps nothing of what it served: it reads a request into a
buffer allocated once, forks, and the child unpickles the case, runs it and writes the reply
itself. Serving thus leaves the C heap the next child inherits as it was (when the zygote
unpickled a batch and relayed the replies, those allocations moved where a child's Paddle
allocated, and a heap-reading case's outcome moved with the cases served before it: measured in
the note named above). A fork of the grown worker cost 25-40 ms a crash case in a sweep (its page
tables, the copy-on-write faults of both sides afterwards); the zygote is smaller and idle, and
the worker itself never forks, so its own pages stay writable. Without a server (tests,
``run_many`` in a plain process), or if it has gone, the children are forked from the calling
process, still one each; they then start from that process's state, which its own cases have
shaped.

Huge pages: most of a fork's CPU is copying the page-table entries of the zygote's private
anonymous memory (its C heap and Python's arenas, ~120 MB after ``import paddle``), one per 4 KiB
page, and the child's exit dropping them again. The zygote asks the kernel to back that memory
with 2 MiB pages before it serves (``MADV_COLLAPSE``, :func:`collapse_to_huge_pages`), so a fork
copies one entry per 2 MiB instead (the CPU saved: docs/measurements/2026-12-01-native-notes.md). Where the
kernel cannot (older than 6.1, THP off) the madvise fails and nothing changes. The zygote then holds
its own copy of that memory instead of sharing the worker's pages.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import os
import pickle
import signal
import struct
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import cast

from ..case import Case
from ..outcome import Outcome
from ..runctl.exits import ChildRaised
from ..runctl.forked import write_all
from ..runctl.signals import signal_text

_LEN = struct.Struct(">I")
#: Request bytes written ahead to the fork server at most (a pipe holds 64 KiB on Linux).
_QUEUED_BYTES = 48 << 10
#: Consecutive crash-prone cases handed to the fork server together (their requests are queued).
SERVER_RUN = 64
#: How a reply that is no outcome starts: the child's own code raised, the rest is its traceback
#: (UTF-8). An outcome's reply is a pickle of the highest protocol, which starts with 0x80.
FAILED = b"FAILED\n"


class ChildFailed(ChildRaised):
    """A forked child's own code raised (its traceback is the ``__cause__``): an error of ours."""

    def __init__(self, remote: str) -> None:
        super().__init__("a forked child's own code", remote)


def _failed(fd: int) -> int:
    """In a child whose own code raised: that exception's traceback as its reply (:data:`FAILED`).
    The child's exit code: 0 once the reply is written (the zygote adds no crash of its own), 3
    if it could not be (the missing reply becomes a crash)."""
    try:
        _write_frame(fd, FAILED + traceback.format_exc().encode(errors="replace"))
    except BaseException:
        return 3
    return 0


def outcome_of_reply(body: bytes) -> Outcome:
    """A child's reply: its outcome, or :class:`ChildFailed` raised if its own code raised."""
    if body.startswith(FAILED):
        raise ChildFailed(body[len(FAILED):].decode(errors="replace"))
    return cast(Outcome, pickle.loads(body))


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


def in_a_child(job: Callable[[], Outcome]) -> Outcome:
    """``job()`` in a forked copy of this process that runs nothing else, its outcome back through
    a pipe (pickled, length-prefixed); if the child dies first, the crash. The child leaves
    without running any cleanup."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: run, report, leave
        code = 0
        try:
            os.close(read_fd)
            quiet_child()
            _write_frame(write_fd, pickle.dumps(job(), protocol=pickle.HIGHEST_PROTOCOL))
        except Exception:  # ours, not Paddle's: the parent raises it
            code = _failed(write_fd)
        except BaseException:  # the parent reports the missing answer
            code = 3
        os._exit(code)
    os.close(write_fd)
    try:
        body = _read_frame(read_fd)
    finally:
        os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    return outcome_of_reply(body) if body is not None else Outcome(crash=describe_status(status))


def run_in_children(run: Callable[[Case], Outcome], cases: Iterable[Case]) -> Iterator[Outcome]:
    """``run`` each case in a forked copy of this process of its own (so no case sees what another
    did to the process); a child that dies gives its case the crash."""
    for case in cases:
        yield in_a_child(functools.partial(run, case))


def _frame(payload: bytes) -> bytes:
    return _LEN.pack(len(payload)) + payload


def _write_frame(fd: int, payload: bytes) -> None:
    write_all(fd, _frame(payload))


def _read_frame(fd: int) -> bytes | None:
    head = _read_exact(fd, _LEN.size)
    return None if head is None else _read_exact(fd, _LEN.unpack(head)[0])


class ForkServerGone(RuntimeError):
    """The fork server stopped answering (it died); the cases it had not answered are run here."""


class ForkServer:
    """The zygote (see the module docstring): asked with one pickled ``(runner, case)`` at a time,
    it forks a child that unpickles and runs it and answers with the outcome's frame (the zygote
    writes the crash if the child dies). ``runner`` must be picklable by reference (a module-level
    function) and must not isolate again. The zygote serves one request at a time (a child, then
    the next); :meth:`run_many` queues the next requests in the pipe meanwhile, so the zygote
    finds one there as its child ends instead of waiting for this process to wake up and send it."""

    def __init__(self, close_fds: Sequence[int] = (), prepare: Callable[[], object] | None = None) -> None:
        req_read, req_write = os.pipe()
        rep_read, rep_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the zygote: serve until the worker closes its end (it ended, or died)
            code = 0
            try:
                for fd in (req_write, rep_read, *close_fds):
                    os.close(fd)
                if prepare is not None:
                    prepare()
                _serve(req_read, rep_write)
            except Exception:  # ours: every request is answered with it, so the worker raises it
                code = _serve_failed(req_read, rep_write, traceback.format_exc())
            except BaseException:  # the worker sees the pipe end and runs the rest itself
                code = 3
            os._exit(code)
        os.close(req_read)
        os.close(rep_write)
        self.pid, self._requests, self._replies = pid, req_write, rep_read

    def close(self, grace: float = 10.0) -> None:
        """End the zygote and reap it: its pipe closed, it returns from serving and exits. Reaped, its
        CPU and its children's (each waited for by it) count in this process's children's usage, and
        so in the pool's and in ``time``'s figures of the whole run; an orphan's would count nowhere.
        One still there after ``grace`` seconds (a child of its not ending) is killed."""
        for fd in (self._requests, self._replies):
            with contextlib.suppress(OSError):
                os.close(fd)
        deadline = time.monotonic() + grace
        try:
            while os.waitpid(self.pid, os.WNOHANG) == (0, 0):
                if time.monotonic() > deadline:
                    os.kill(self.pid, signal.SIGKILL)
                    os.waitpid(self.pid, 0)
                    return
                time.sleep(0.005)
        except ChildProcessError:  # reaped already
            pass

    def run_many(self, runner: Callable[[Case], Outcome], cases: Sequence[Case]) -> Iterator[Outcome]:
        """``runner(case)`` for each case in a child of the zygote of its own, outcomes in order. A
        child that dies gives its case the crash (the zygote's frame). Requests are written ahead
        while the unanswered ones fit in :data:`_QUEUED_BYTES` (less than a pipe holds: a write never
        waits for the zygote, which may itself wait for this process to read a reply)."""
        queued: deque[int] = deque()  # the sizes of the requests written, not answered
        queued_bytes = sent = 0
        frame = b""  # the next request, once pickled

        def write(frame: bytes) -> None:
            try:
                write_all(self._requests, frame)
            except OSError as exc:
                raise ForkServerGone(f"fork server {self.pid}: {exc}") from exc

        def read() -> Outcome:
            body = _read_frame(self._replies)
            if body is None:
                raise ForkServerGone(f"fork server {self.pid} ended")
            return outcome_of_reply(body)

        for _ in range(len(cases)):
            while sent < len(cases):
                frame = frame or _frame(pickle.dumps((runner, cases[sent]), protocol=pickle.HIGHEST_PROTOCOL))
                if queued and queued_bytes + len(frame) > _QUEUED_BYTES:
                    break
                write(frame)
                queued.append(len(frame))
                queued_bytes += len(frame)
                frame = b""
                sent += 1
            queued_bytes -= queued.popleft()
            yield read()


#: The zygote's request buffer: a request (one pickled case, a few KiB) is read into it, so that
#: serving allocates nothing on the C heap the children inherit (a request bigger than it grows it).
_REQUEST_BUFFER = 1 << 20


def _serve(requests: int, replies: int) -> None:
    head, buf = bytearray(_LEN.size), bytearray(_REQUEST_BUFFER)
    gc.collect()
    gc.freeze()  # the zygote's objects stay put: a collection in a child would copy their pages
    collapse_to_huge_pages()  # fewer page-table entries for each fork to copy
    while True:
        if not _read_into(requests, memoryview(head)):
            return
        (size,) = _LEN.unpack(head)
        if size > len(buf):
            buf = bytearray(size)
        request = memoryview(buf)[:size]
        if not _read_into(requests, request):
            return
        _answer_in_a_child(request, replies)


def _serve_failed(requests: int, replies: int, text: str) -> int:
    """The zygote once its own code raised (``text``: the traceback): each request it is sent from then
    on is answered with that failure (:data:`FAILED`), which the worker raises on reading (a zygote
    that ended instead would leave the worker to fork its children itself, the error unseen). Its exit code."""
    head = bytearray(_LEN.size)
    try:
        while _read_into(requests, memoryview(head)):
            if not _read_into(requests, memoryview(bytearray(_LEN.unpack(head)[0]))):
                break
            _write_frame(replies, FAILED + text.encode(errors="replace"))
    except BaseException:
        return 3
    return 0


def _read_into(fd: int, view: memoryview) -> bool:
    """Fill ``view`` from ``fd``; False at end of file."""
    got = 0
    while got < len(view):
        n = os.readv(fd, [view[got:]])
        if not n:
            return False
        got += n
    return True


def _answer_in_a_child(request: memoryview, replies: int) -> None:
    """The zygote's part of a request: a child unpickles and runs it and writes its own reply
    frame (the zygote reads or relays nothing of it: what the zygote allocates would be in the
    next child's heap); if the child does not end normally, the zygote writes the crash."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            quiet_child()
            runner, case = pickle.loads(request)
            _write_frame(replies, pickle.dumps(runner(case), protocol=pickle.HIGHEST_PROTOCOL))
        except Exception:  # ours, not Paddle's: the worker raises it
            code = _failed(replies)
        except BaseException:  # the zygote reports the missing answer
            code = 3
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
        _write_frame(replies, pickle.dumps(Outcome(crash=describe_status(status)), protocol=pickle.HIGHEST_PROTOCOL))


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


def start_fork_server(close_fds: Sequence[int] = (), prepare: Callable[[], object] | None = None) -> None:
    """Fork this process's zygote now (a worker, after importing its backend and before loading
    its cases); ``close_fds`` are closed in it (the worker's protocol pipe, whose end the pool
    must see when the worker ends). ``prepare`` (the backend's ``prepare_fork_server``, if it has
    one) runs in the zygote before it serves: the set-up every child would otherwise repeat,
    done once (it must not depend on the cases, or the children's state would)."""
    global _server
    _server = server = ForkServer(close_fds, prepare)
    atexit.register(server.close)  # (the zygote, forked already, never runs it: it leaves by os._exit)


def _isolated(run: Callable[[Case], Outcome], isolated: Callable[[Case], Outcome] | None,
              cases: list[Case]) -> Iterator[Outcome]:
    """Each case in a forked child of its own (see :func:`run_isolating`): the fork server's
    (running ``isolated``) if there is one, else this process's (running ``run``)."""
    global _server
    server = _server
    done = 0  # outcomes handed back (after a ForkServerGone the rest run here)
    if server is not None and isolated is not None:
        try:
            for outcome in server.run_many(isolated, cases):
                done += 1
                yield outcome
            return
        except ForkServerGone:
            _server = None  # from now on this process forks its children itself
    for case in cases[done:]:
        yield in_a_child(functools.partial(run, case))


def run_isolating(cases: Iterable[Case], run: Callable[[Case], Outcome],
                  may_crash: Callable[[Case], bool],
                  isolated: Callable[[Case], Outcome] | None = None) -> Iterator[Outcome]:
    """Outcomes in order: each ``may_crash`` case in a forked child of its own (the fork server's,
    running ``isolated``, a module-level function doing what ``run`` does; else this process's
    own, running ``run``); every other case is ``run`` here. Consecutive ``may_crash`` cases (up to
    :data:`SERVER_RUN`) go to the server together, which only queues their requests."""
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
            if len(batch) < SERVER_RUN and may_crash(other):
                batch.append(other)
            else:
                pushed_back.append(other)
                break
        yield from _isolated(run, isolated, batch)
