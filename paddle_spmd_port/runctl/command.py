"""A command's body run with its exit code: :func:`run_command` turns usage errors, interrupts and
internal errors into their one line on stderr and their code, and keeps a closed stdout
(``... | head -1``) from ending the run."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from .exits import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, PACKAGE, UsageError, error_text, prefix
from .signals import Interrupted, signals_raise


class _ClosedPipeTolerant:
    """A stand-in for ``sys.stdout``: once the reader has gone (``| head -1``), writes are dropped
    instead of raising ``BrokenPipeError``, and the file descriptor is pointed at ``/dev/null`` so
    that the interpreter's last flush is quiet too. Everything else goes to the real stream."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.broken = False

    def _gone(self) -> None:
        self.broken = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):  # no file descriptor: dropping the writes is enough
            pass

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                return int(self._stream.write(text))
            except BrokenPipeError:
                self._gone()
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._gone()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _save_traceback(prog: str, exc: BaseException) -> str:
    """The traceback of an internal error, written to a file of its own; its path (or why not)."""
    import traceback

    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        fd, path = tempfile.mkstemp(prefix=f"{PACKAGE}-{prog.split()[-1]}-", suffix=".traceback")
        with os.fdopen(fd, "w") as fh:
            fh.write(f"{prog} {' '.join(sys.argv[1:])}\n{text}")
    except OSError as err:
        return f"the traceback could not be saved ({err.strerror or err})"
    return f"traceback saved in {path}"


def run_command(prog: str, body: Callable[[], int | None]) -> int:
    """Run a command's body with signals raising, and turn usage errors, interrupts and internal
    errors into their one line on stderr (prefixed by :func:`prefix`) and their exit code. A
    reader closing stdout does not end the run (see :class:`_ClosedPipeTolerant`)."""
    name = prefix(prog)
    if not isinstance(sys.stdout, _ClosedPipeTolerant) and sys.stdout is not None:
        # stays in place: the interpreter's last flush must go through it too
        sys.stdout = _ClosedPipeTolerant(sys.stdout)
    try:
        with signals_raise():
            code = int(body() or 0)
        if sys.stdout is not None:  # a reader gone by now is noticed here, while the exit code is still ours
            sys.stdout.flush()
        return code
    except SystemExit as exc:  # argparse: --help (0) or its one-line error, already printed (2)
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or EXIT_OK
        print(exc.code, file=sys.stderr)  # sys.exit("text"): the text is the one line
        return EXIT_USAGE
    except UsageError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Interrupted as exc:
        where = f"; {exc.detail}" if exc.detail else ""
        print(f"{name}: interrupted by {exc.name}{where}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:  # a bug of ours: never exit 1 (a finding) nor a bare traceback
        detail = getattr(exc, "run_detail", "")
        print(f"{name}: internal error: {error_text(exc)} (a bug of {PACKAGE}: "
              f"please report it; {_save_traceback(name, exc)}{'; ' + detail if detail else ''})", file=sys.stderr)
        return EXIT_INTERNAL
