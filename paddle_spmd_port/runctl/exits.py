"""Exit codes and usage errors, the same for every command: the codes (the table in
:mod:`paddle_spmd_port.runctl` and :data:`EXIT_CODES_HELP`, the end of every ``--help``),
:class:`UsageError` (bad input: one line, exit 2), the one prefix of every message a command prints
about itself (:func:`prefix`), an internal error in one line (:func:`error_text`), and one raised in a
child process of ours (:class:`ChildRaised`)."""

from __future__ import annotations

import re

EXIT_OK = 0
EXIT_FINDING = 1
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3
EXIT_INTERNAL = 4
PACKAGE = "paddle_spmd_port"


EXIT_CODES_HELP = """\
exit codes (the same for every command):
  0        ok: everything asked for was compared (or run) and agreed
  1        findings (a mismatch, an unexpected outcome, an unsound proposed answer); outranks 3
  2        bad usage: one line on stderr names the argument; nothing run, nothing written
  3        could not compare or run something asked for (the report says what and why)
  4        internal error (a bug of paddle_spmd_port): one line, the traceback saved to a file
           (children ended and a partial report written where a signal writes one)
  130/143  interrupted by SIGINT/SIGTERM (children ended, partial report written)
A closed stdout (| head) does not change the code: the rest of the output is dropped."""


class UsageError(Exception):
    """Bad input from the command line: ``ARG: PROBLEM; VALID``, printed as one line, exit 2."""

    def __init__(self, arg: str, problem: str, valid: str = "") -> None:
        super().__init__(arg, problem, valid)
        self.arg, self.problem, self.valid = arg, problem, valid

    def __str__(self) -> str:
        return f"{self.arg}: {self.problem}" + (f"; {self.valid}" if self.valid else "")


def error_text(exc: BaseException) -> str:
    """An internal error in one line: ``KeyError: 'x'`` (its message whitespace-folded, at most 300 characters)."""
    text = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}{': ' + text if text else ''}"


def prefix(prog: str) -> str:
    """The one prefix of every message a command prints about itself: ``paddle_spmd_port parity``
    (from ``parity``, ``python -m paddle_spmd_port parity`` or ``paddle_spmd_port parity``;
    ``paddle_spmd_port fuzz`` from ``python tools/fuzz.py``)."""
    name = prog.strip()
    if name.startswith("python -m "):
        name = name[len("python -m "):]
    # a tool, however its parser names it (python tools/fuzz.py, tools/fuzz.py, fuzz.py): by its name, as
    # its run_command does, so that its argparse errors and its own errors share the one prefix
    tool = re.fullmatch(r"(?:python3? )?(?:\S*/)?(\w+)\.py", name)
    if tool:
        name = tool.group(1)
    if name == PACKAGE or name.startswith(PACKAGE + " "):
        return name
    return f"{PACKAGE} {name}"


class RemoteTraceback(Exception):
    """The traceback of an exception raised in another process, as text: the ``__cause__`` of the
    exception that reports it here, so that a saved traceback shows both."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ChildRaised(Exception):
    """A child process of ours (a native worker, a forked child, a compat runner) ended on an exception
    of its own code: an internal error of the run, never an outcome of what the child ran. The
    message names the child and the exception (its traceback's last line); the traceback, as the
    child wrote it, is the ``__cause__``."""

    def __init__(self, child: str, remote: str) -> None:
        lines = [ln.strip() for ln in remote.splitlines() if ln.strip()]
        super().__init__(f"{child} raised {lines[-1][:300] if lines else '(no message)'}")
        self.__cause__ = RemoteTraceback(remote)
