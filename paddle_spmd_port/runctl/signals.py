"""Signals and interrupts: SIGINT and SIGTERM raise :class:`Interrupted` in the main thread
(:func:`signals_raise`; :func:`signals_deferred` for code that must not be cut anywhere), and what a
run ended early says of itself: :func:`stopped_by` names the signal or the internal error in the
partial report, :func:`write_partial` writes that report without ever raising, :func:`add_detail`
puts where it is on the one line :func:`~paddle_spmd_port.runctl.command.run_command` prints."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from .exits import error_text

_FIRED: list[int] = []
"""Signals received in this process; only the first raises (nested ``signals_raise`` included)."""
_SWALLOWED: list[int] = []
"""The signal whose Interrupted was swallowed (see :func:`signals_raise`), until it is raised again."""
_RAISING: list[int] = []
"""One entry per :func:`signals_raise` block the main thread is in."""


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived. A ``BaseException`` so that ``except Exception`` in a backend
    cannot swallow it; ``try/finally`` blocks still run on the way up."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        self.detail = ""

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def signal_text(signum: int) -> str:
    """How a report names a signal: ``signal 11 (SIGSEGV)``, or ``signal N`` for a number without a name."""
    try:
        return f"signal {signum} ({signal.Signals(signum).name})"
    except ValueError:
        return f"signal {signum}"


def stopped_by(exc: BaseException) -> str:
    """What ended a run early, as its partial report names it after ``INTERRUPTED by``: the
    signal's name (``SIGTERM``), or ``an internal error (KeyError: 'x')``."""
    if isinstance(exc, Interrupted):
        return exc.name
    return f"an internal error ({error_text(exc)})"


def add_detail(exc: BaseException, text: str) -> None:
    """Say on the one line :func:`run_command` prints for ``exc`` (a signal or an internal error)
    where its partial report is, or why there is none."""
    if isinstance(exc, Interrupted):
        exc.detail = text
    else:
        exc.run_detail = text  # type: ignore[attr-defined]  # (read back by run_command)


def write_partial(write: Callable[[], object], where: str) -> str:
    """Write a partial report (``write()``) while a signal or an internal error ends the run, and
    say so: ``partial report in WHERE``, or why it could not be written. Never raises an
    ``Exception``: a second failure must not replace the first on the one line (nor print a
    second traceback)."""
    try:
        write()
    except Exception as err:  # said on the line instead
        return f"the partial report could not be written ({error_text(err)})"
    return f"partial report in {where}"


@contextlib.contextmanager
def signals_raise() -> Iterator[None]:
    """While inside, SIGINT and SIGTERM raise :class:`Interrupted` in the main thread. Only the
    first signal raises: later ones are noted and ignored, so that the cleanup the first one
    started can finish (ending children, writing the partial report)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    def handler(signum: int, _frame: object) -> None:
        _FIRED.append(signum)
        if len(_FIRED) == 1:
            raise Interrupted(signum)

    # A handler runs wherever the main thread is, a gc callback or a __del__ included, and Python
    # swallows an exception raised there (hypothesis's gc callback ate SIGINT: the fuzz ran on, and a
    # second signal is ignored by design). Such a swallowed Interrupted reaches sys.unraisablehook: it
    # is raised again shortly after, from a timer, in whatever ordinary code runs by then.
    def unraisable(info: Any) -> None:
        if isinstance(info.exc_value, Interrupted):
            _SWALLOWED[:] = [info.exc_value.signum]
            signal.setitimer(signal.ITIMER_REAL, 0.01)
        else:
            hook_before(info)

    def again(_signum: int, _frame: object) -> None:
        if _SWALLOWED:
            raise Interrupted(_SWALLOWED.pop())

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    alarm_before, hook_before = signal.signal(signal.SIGALRM, again), sys.unraisablehook
    sys.unraisablehook = unraisable
    _RAISING.append(1)
    try:
        yield
    finally:
        _RAISING.pop()
        signal.setitimer(signal.ITIMER_REAL, 0)
        _SWALLOWED.clear()
        sys.unraisablehook = hook_before
        signal.signal(signal.SIGALRM, alarm_before)
        for sig, old in previous.items():
            # after an interrupt the process is on its way out: a late signal must not kill it
            # half-way through printing its one line (which would turn exit 130 into -2)
            signal.signal(sig, signal.SIG_IGN if _FIRED else old)


@contextlib.contextmanager
def signals_deferred() -> Iterator[Callable[[], None]]:
    """Inside :func:`signals_raise`, for code that must not be cut at an arbitrary point (hypothesis's
    engine turns an exception in its own bookkeeping into an error of its own): a SIGINT or SIGTERM is
    only noted, and the function yielded raises it as :class:`Interrupted` where it is called, as does
    leaving the block. Outside :func:`signals_raise` (another thread, no handler of ours) it changes nothing."""
    pending: list[int] = []

    def check() -> None:
        if pending:
            raise Interrupted(pending.pop())

    if threading.current_thread() is not threading.main_thread() or not _RAISING:
        yield lambda: None
        return

    def note(signum: int, _frame: object) -> None:
        _FIRED.append(signum)
        if len(_FIRED) == 1:
            pending.append(signum)

    previous = {sig: signal.signal(sig, note) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield check
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
        check()  # (on the way out with another exception too: the signal came first)
