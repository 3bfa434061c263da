"""A stage of a long run in a forked copy of the process, its result sent back (parity's rounds).

Why a copy: Python's allocator gives an arena back to the system only once every object in it is
gone, so a stage that peaks at a few hundred MiB of short-lived objects leaves the process holding
much of that peak, pinned by the few objects that outlive the stage; the next stage's peak lands
partly beside it, and a run of many stages grows stage after stage. A stage run in a copy takes
its whole peak with it when the copy exits; the parent holds only the result it is sent.

:func:`call_in_child` is the one way in. The copy leaves with ``os._exit``: nothing of the
parent's (``atexit`` hooks, ``finally`` blocks up the stack, the buffers of files it holds open)
runs twice.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

from .exits import ChildRaised
from .signals import Interrupted, signal_text

T = TypeVar("T")

#: How long a copy is given, once a signal ended the run, to send what it had (it ends its own
#: children first: a native group's workers are given 30 s to stop), before it is killed.
GRACE_SECONDS = 60.0


class ChildLost(Exception):
    """The copy ended without sending its result (killed, or it crashed): an internal error of the run."""


def _describe_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"was killed by {signal_text(os.WTERMSIG(status))}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (a pipe takes it a buffer at a time)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _flush_std() -> None:
    """What stdout and stderr buffer, written now: a fork copies the buffers, and an ``os._exit`` drops them."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def _child(stage: Callable[[], Any], write_fd: int) -> None:
    """The copy's side: run, send ``("ok", result)`` or what stopped it, leave without any cleanup."""
    code = 0
    try:
        try:  # (the result pickled here too: one that cannot be is an error of the stage's, with its traceback)
            payload = pickle.dumps(("ok", stage()), protocol=pickle.HIGHEST_PROTOCOL)
        except Interrupted as exc:  # (a stage that does not answer a signal itself)
            payload, code = pickle.dumps(("interrupted", exc.signum)), 1
        except BaseException:  # any of ours: the parent raises it, with this traceback
            payload, code = pickle.dumps(("raised", traceback.format_exc())), 1
        write_all(write_fd, payload)
    except BaseException:  # the result could not be sent: the parent says the copy was lost
        code = 3
    finally:
        _flush_std()
        os._exit(code)


def call_in_child(stage: Callable[[], T], name: str, grace: float = GRACE_SECONDS) -> T:
    """``stage()`` run in a forked copy of this process; its result (pickled through a pipe).

    * ``stage`` raises: :class:`~.exits.ChildRaised` here, naming ``name`` and the exception (its
      traceback as the copy wrote it is the ``__cause__``).
    * The copy ends without a result (killed, crashed): :class:`ChildLost`, saying how it ended.
    * A signal here (:class:`~.signals.Interrupted`) is passed on to the copy (the same signal: a
      terminal's SIGINT reaches both anyway, a SIGTERM only this process), whose result is awaited
      up to ``grace`` seconds (then it is killed); the Interrupted is raised again with
      ``child_result`` set to that result, or None when none came.
    * Either way the copy has ended (and been reaped) when this returns or raises.

    Call it from the main thread of a process running no other thread of its own: a copy holds only
    the thread that forked, so a lock another thread held stays held in it."""
    _flush_std()  # (else the copy writes what they buffer a second time)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _child(stage, write_fd)
    os.close(write_fd)
    chunks: list[bytes] = []
    signalled: Interrupted | None = None
    deadline: float | None = None
    status: int | None = None
    try:
        while True:
            try:
                wait = None if deadline is None else max(0.0, deadline - time.monotonic())
                if wait is not None and not select.select([read_fd], [], [], wait)[0]:
                    os.kill(pid, signal.SIGKILL)  # (its grace is over: what it had is lost)
                    chunks.clear()
                    break
                chunk = os.read(read_fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
            except Interrupted as exc:  # (only the first signal raises: runctl.signals)
                signalled, deadline = exc, time.monotonic() + grace
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, exc.signum)
        while status is None:
            try:
                status = os.waitpid(pid, 0)[1]
            except Interrupted as exc:
                signalled = signalled or exc
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, exc.signum)
    finally:
        os.close(read_fd)
        if status is None:  # an error of ours here: the copy must not outlive it
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    reply: tuple[str, Any] | None = None
    if chunks:
        with contextlib.suppress(Exception):  # (cut short: the copy died while it wrote)
            reply = pickle.loads(b"".join(chunks))
    if signalled is not None:
        signalled.child_result = reply[1] if reply is not None and reply[0] == "ok" else None  # type: ignore[attr-defined]
        raise signalled
    if reply is None:
        assert status is not None
        raise ChildLost(f"{name} {_describe_status(status)} before it sent its result")
    kind, value = reply
    if kind == "raised":
        raise ChildRaised(name, value)
    if kind == "interrupted":
        raise Interrupted(value)
    return value  # type: ignore[no-any-return]
