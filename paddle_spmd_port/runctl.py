"""Run control shared by every command: exit codes, usage errors, signals, output paths.

Exit codes, the same for every command (``python -m paddle_spmd_port COMMAND``)::

    code  name              meaning
    0     EXIT_OK           everything asked for was compared (or run) and agreed
    1     EXIT_FINDING      a finding: a mismatching cell (parity), a verdict the port does not
                            account for (launch), an unsound answer of the proposed rules (oracle)
    2     EXIT_USAGE        bad input: one line on stderr names the argument and what is valid;
                            nothing was run and nothing was written
    3     EXIT_INCOMPLETE   something asked for was not compared or not run (Paddle missing, a
                            backend unavailable, workers timing out, an empty selection, a launch
                            that failed); the report says what and why
    130   SIGINT            interrupted: child processes ended, temp files removed, partial report
    143   SIGTERM           written (its first line says so)

A finding (1) outranks incompleteness (3): a run that mismatched and also left cases uncompared
exits 1, and its report lists both.

How a command uses this module::

    def main(argv):
        return run_command("parity", lambda: _main(argv))

``_main`` raises :class:`UsageError` for bad input (or uses :class:`ArgumentParser`, whose errors
are one line too); :class:`Interrupted` reaches it wherever the main thread was when SIGINT or
SIGTERM arrived, so ``try/finally`` blocks end children, remove temp files and write the partial
report; setting ``exc.detail`` adds where that report is to the one line printed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

EXIT_OK = 0
EXIT_FINDING = 1
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3

_FIRED: list[int] = []
"""Signals received in this process; only the first raises (nested ``signals_raise`` included)."""


class UsageError(Exception):
    """Bad input from the command line: ``ARG: PROBLEM; VALID``, printed as one line, exit 2."""

    def __init__(self, arg: str, problem: str, valid: str = "") -> None:
        super().__init__(arg, problem, valid)
        self.arg, self.problem, self.valid = arg, problem, valid

    def __str__(self) -> str:
        return f"{self.arg}: {self.problem}" + (f"; {self.valid}" if self.valid else "")


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


class ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors: ``prog: error: MESSAGE (see --help)``, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


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

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            # after an interrupt the process is on its way out: a late signal must not kill it
            # half-way through printing its one line (which would turn exit 130 into -2)
            signal.signal(sig, signal.SIG_IGN if _FIRED else old)


def run_command(prog: str, body: Callable[[], int | None]) -> int:
    """Run a command's body with signals raising, and turn usage errors and interrupts into
    their one line on stderr and their exit code."""
    try:
        with signals_raise():
            return int(body() or 0)
    except SystemExit as exc:  # argparse: --help (0) or its one-line error, already printed (2)
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or EXIT_OK
        print(exc.code, file=sys.stderr)  # sys.exit("text"): the text is the one line
        return EXIT_USAGE
    except UsageError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Interrupted as exc:
        where = f"; {exc.detail}" if exc.detail else ""
        print(f"{prog}: interrupted by {exc.name}{where}", file=sys.stderr)
        return exc.exit_code


# --------------------------------------------------------------------------- output paths
def _nearest_existing(path: Path) -> Path:
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    return probe


def _check_creatable_below(existing: Path, arg: str, target: Path) -> None:
    if not existing.is_dir():
        raise UsageError(arg, f"{target}: {existing} is a file, not a directory", "give a path under a directory")
    try:  # os.access says yes to root everywhere; a real (immediately removed) file is the honest test
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        raise UsageError(arg, f"{target}: cannot write in {existing} ({exc.strerror or exc})",
                         "give a writable directory") from None


def check_output_dir(path: str | Path, arg: str) -> Path:
    """``path`` as a directory the run can write its report into; checked before any work starts
    and without creating anything. Raises :class:`UsageError` naming ``arg``."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise UsageError(arg, f"{target} is a file", "give a directory (it is created if missing)")
    _check_creatable_below(_nearest_existing(target), arg, target)
    return target


def check_output_file(path: str | Path, arg: str) -> Path:
    """``path`` as a file the run can (over)write; checked before any work starts."""
    target = Path(path)
    if target.is_dir():
        raise UsageError(arg, f"{target} is a directory", "give a file path")
    if target.exists() and not os.access(target, os.W_OK):
        raise UsageError(arg, f"{target} is not writable", "give a writable file path")
    _check_creatable_below(_nearest_existing(target.parent), arg, target)
    return target


def positive(value: float | int | None, arg: str, what: str = "a number > 0") -> None:
    """Raise :class:`UsageError` unless ``value`` is None or > 0."""
    if value is not None and not value > 0:
        raise UsageError(arg, f"{value!r} is not allowed", f"give {what}")
