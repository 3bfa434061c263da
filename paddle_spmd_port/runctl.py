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
                            that failed, a GPU launch without a CUDA build or enough GPUs); the
                            report (or the one line) says what and why
    4     EXIT_INTERNAL     an internal error: an exception of ours nobody expected (a bug to
                            report); one line names it and the file its traceback was saved in.
                            A command that writes a partial report on a signal does the same
                            here: children ended, temp files removed, the partial report written
                            (its first line says ``INTERRUPTED by an internal error (...)``) and
                            named on the line -- or the line says why it could not be written
    130   SIGINT            interrupted: child processes ended, temp files removed, partial report
    143   SIGTERM           written (its first line says so)

A finding (1) outranks incompleteness (3): a run that mismatched and also left cases uncompared
exits 1, and its report lists both. A closed stdout (``... | head -1``) changes nothing: the rest
of the output is dropped, the run goes on to its end (report included) and exits with its own code.
Every message a command prints about itself starts ``paddle_spmd_port COMMAND:`` (:func:`prefix`).

How a command uses this module::

    def main(argv):
        return run_command("parity", lambda: _main(argv))

``_main`` raises :class:`UsageError` for bad input (or uses :class:`ArgumentParser`, whose errors
are one line too); :class:`Interrupted` reaches it wherever the main thread was when SIGINT or
SIGTERM arrived, so ``try/finally`` blocks end children, remove temp files and write the partial
report; setting ``exc.detail`` adds where that report is to the one line printed. An internal
error (any other ``Exception``) goes up the same blocks: a command catching it next to
:class:`Interrupted` names it in its partial report with :func:`stopped_by` and writes that report
through :func:`write_partial`, which never raises; :func:`add_detail` puts where it is on the line.

The command-line grammar shared by every command lives here too, so a flag is spelled and
checked one way everywhere: ``--rules a,b`` (:func:`rule_list`), ``--mesh 2x3`` (:func:`mesh_shape`),
``--meshes 2,2x3`` (:func:`mesh_list`), ``--profile`` (:func:`add_profile_argument`), ``--max-cases N``
(the first N cases in grid order), ``--sample N`` with ``--seed`` (a seeded sample)
(:func:`add_selection_arguments`), ``--shard K/M`` (part K of M of a long run: :func:`shard`), and
``--version``, which :class:`ArgumentParser` adds to every parser along with the exit-code table at
the end of ``--help``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

from .installed import NOT_INSTALLED, paddle_version

EXIT_OK = 0
EXIT_FINDING = 1
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3
EXIT_INTERNAL = 4

PACKAGE = "paddle_spmd_port"
#: The longest timeout any command takes (a week): finite, and well inside what ``threading`` and
#: ``select`` accept (``--timeout 1e300`` overflowed them).
MAX_SECONDS = 7 * 24 * 3600.0
#: The most processes a ``--mesh`` may have (the mesh lists one process id each).
MAX_MESH_SIZE = 1 << 20

_FIRED: list[int] = []
"""Signals received in this process; only the first raises (nested ``signals_raise`` included)."""
_SWALLOWED: list[int] = []
_RAISING: list[int] = []
"""One entry per :func:`signals_raise` block the main thread is in."""
"""The signal whose Interrupted was swallowed (see :func:`signals_raise`), until it is raised again."""


class UsageError(Exception):
    """Bad input from the command line: ``ARG: PROBLEM; VALID``, printed as one line, exit 2."""

    def __init__(self, arg: str, problem: str, valid: str = "") -> None:
        super().__init__(arg, problem, valid)
        self.arg, self.problem, self.valid = arg, problem, valid

    def __str__(self) -> str:
        return f"{self.arg}: {self.problem}" + (f"; {self.valid}" if self.valid else "")


def signal_text(signum: int) -> str:
    """How a report names a signal: ``signal 11 (SIGSEGV)``, or ``signal N`` for a number without a name."""
    try:
        return f"signal {signum} ({signal.Signals(signum).name})"
    except ValueError:
        return f"signal {signum}"


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


def error_text(exc: BaseException) -> str:
    """An internal error in one line: ``KeyError: 'x'`` (its message whitespace-folded, at most 300 characters)."""
    text = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}{': ' + text if text else ''}"


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


def command_prog(command: str) -> str:
    """How ``--help``'s usage line names a command: ``python -m paddle_spmd_port COMMAND``."""
    return f"python -m {PACKAGE} {command}"


_ROLE = re.compile(r":(?:mod|func|class|data|meth|attr|exc|obj):`~?\.?([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")


def plain(text: str) -> str:
    """Docstring text as plain text for ``--help``: Sphinx roles (``:mod:`.grid```) become their
    target's name, double-backquoted literals lose their backquotes, a ``::`` block marker is ``:``."""
    text = _ROLE.sub(lambda m: m.group(1), text)
    text = _LITERAL.sub(lambda m: m.group(1), text)
    return re.sub(r"(?<=\S)::$", ":", re.sub(r"^::$", "", text, flags=re.M), flags=re.M)


class ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors (``paddle_spmd_port COMMAND: error: MESSAGE (see --help)``,
    exit 2), a ``--version`` flag, the exit-code table at the end of ``--help`` (after any epilog
    given), and description and epilog as plain text (:func:`plain`: docstrings serve as both)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("description"):
            kwargs["description"] = plain(kwargs["description"])
        epilog = plain(kwargs["epilog"]) if kwargs.get("epilog") else None
        kwargs["epilog"] = f"{epilog}\n\n{EXIT_CODES_HELP}" if epilog else EXIT_CODES_HELP
        if "formatter_class" not in kwargs:  # keep the exit-code table's lines as written
            kwargs["formatter_class"] = argparse.RawDescriptionHelpFormatter
        super().__init__(*args, **kwargs)
        self.add_argument("--version", action=_VersionAction,
                          help="print this package's version and the installed Paddle's, then exit")

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{prefix(self.prog)}: error: {message} (see --help)\n")


# --------------------------------------------------------------------------- the shared grammar
def package_version() -> str:
    """This package's version (``paddle_spmd_port.__version__``)."""
    from . import __version__

    return __version__


def version_text(prog: str) -> str:
    """One line: ``PROG VERSION (Paddle X.Y.Z)`` or ``(Paddle not installed)``."""
    paddle = paddle_version()["version"]
    return f"{prog} {package_version()} ({'Paddle not installed' if paddle == NOT_INSTALLED else 'Paddle ' + paddle})"


class _VersionAction(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        print(version_text(parser.prog))
        parser.exit(EXIT_OK)


def rule_keys() -> tuple[str, ...]:
    """Every rule key, in the signature table's order (what ``--rules`` accepts, besides ``all``). Imported
    when first asked for, so that the dispatcher and ``--version`` do not load the rules."""
    from .ops import RULES

    return tuple(RULES)


def rule_profiles() -> tuple[str, ...]:
    """Every rule profile (what ``--profile`` accepts): ``ops.registry.PROFILES``."""
    from .ops.registry import PROFILES

    return tuple(PROFILES)


def rule_list(text: str) -> list[str]:
    """``--rules``: comma-separated rule keys, or ``all``; unknown keys are an error that lists the
    valid ones. Duplicates are dropped, the order given is kept. An argparse ``type``."""
    keys = rule_keys()
    valid = f"choose from all, {', '.join(keys)}"
    names = [r.strip() for r in text.split(",") if r.strip()]
    if names == ["all"]:
        return list(keys)
    unknown = [r for r in names if r not in keys]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown rule(s) {', '.join(unknown)}; {valid}")
    if not names:
        raise argparse.ArgumentTypeError(f"{text!r} names no rule; {valid}")
    return list(dict.fromkeys(names))


def mesh_shape(text: str) -> tuple[int, ...]:
    """``--mesh``: a mesh shape, sizes >= 1 joined by ``x``: ``4``, ``2x3``, ``2x2x2``. An argparse ``type``."""
    valid = "a mesh is sizes >= 1 joined by x, like 4 or 2x3"
    if "," in text:
        raise argparse.ArgumentTypeError(f"{text!r} is not a mesh; {valid} ({text.replace(',', 'x')!r}?)")
    try:
        shape = tuple(int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a mesh; {valid}") from None
    if min(shape) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} has a size < 1; {valid}")
    total = 1
    for size in shape:
        total *= size
    if total > MAX_MESH_SIZE:  # every process of a mesh gets an id: 100000x100000 ran out of memory
        raise argparse.ArgumentTypeError(f"{text!r} has {total:,} processes; give a mesh of at most "
                                         f"{MAX_MESH_SIZE:,} processes")
    return shape


def mesh_list(text: str) -> list[tuple[int, ...]]:
    """``--meshes``: comma-separated mesh shapes, like ``2,4,2x3``. An argparse ``type``."""
    items = [m.strip() for m in text.split(",") if m.strip()]
    if not items:
        raise argparse.ArgumentTypeError(f"{text!r} names no mesh; give meshes like 2,4,2x3")
    meshes = []
    for item in items:
        try:
            meshes.append(mesh_shape(item))
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentTypeError(f"{exc} (meshes are separated by commas: 2,4,2x3)") from None
    return list(dict.fromkeys(meshes))


def count(text: str) -> int:
    """A whole number >= 1 (``--max-cases``, ``--sample``, ``--workers``, ...). An argparse ``type``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; give an integer >= 1") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not allowed; give an integer >= 1")
    return value


def count_at_most(limit: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number >= 1 and at most ``limit`` (:func:`count` with a ceiling),
    for a count the run enumerates before its first case (``--random 10**20`` drew its block list
    for minutes, in ever more memory, before the first word of output)."""
    def parse(text: str) -> int:
        value = count(text)
        if value > limit:
            raise argparse.ArgumentTypeError(f"{value} is more than {limit:,}; give an integer >= 1 and at most "
                                             f"{limit:,}")
        return value

    return parse


def seconds(text: str) -> float:
    """A timeout in seconds: finite, > 0 and at most :data:`MAX_SECONDS` (``inf``, ``nan``, ``1e300``,
    ``0`` and negatives refused). An argparse ``type`` (every command's ``--timeout``)."""
    valid = f"give a number of seconds > 0 and at most {MAX_SECONDS:.0f} (a week)"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; {valid}") from None
    if not (0 < value <= MAX_SECONDS):  # also false for nan
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; {valid}")
    return value


def path_text(text: str) -> Path:
    """A path given on the command line, refused when empty (``''`` would silently mean the current
    directory, or the default). An argparse ``type`` for every path flag."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path is not allowed; give a file or directory path")
    return Path(text)


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, else ``os.cpu_count()``), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def add_workers_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    """``--workers N`` (``what`` they are; default 2, at most this machine's cores) and
    ``--oversubscribe`` (allow more); :func:`workers` checks them."""
    parser.add_argument("--workers", type=count, default=None,
                        help=f"{what} (default 2, or 1 on a 1-core machine; at most this machine's cores unless "
                             "--oversubscribe)")
    parser.add_argument("--oversubscribe", action="store_true", help="allow --workers beyond this machine's cores")


def workers(given: int | None, oversubscribe: bool) -> int:
    """``--workers``: at most this machine's cores unless ``--oversubscribe`` (more workers than cores
    only add start-ups of Paddle and switching); the default is 2, or 1 on a 1-core machine."""
    cores = available_cores()
    if given is None:
        return min(2, cores)
    if given > cores and not oversubscribe:
        raise UsageError("--workers", f"{given} is more than this machine's {cores} core(s)",
                         f"give at most {cores}, or add --oversubscribe to insist")
    return given


def shard(text: str) -> tuple[int, int]:
    """``--shard K/M``: this run's part K of M (``1 <= K <= M``), as ``(K, M)``. An argparse ``type``."""
    valid = "give K/M with whole numbers 1 <= K <= M, like 2/4"
    k, sep, m = text.partition("/")
    try:
        part, parts = int(k), int(m)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not K/M; {valid}") from None
    if not sep or not 1 <= part <= parts:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; {valid}")
    return part, parts


def add_shard_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """``--shard K/M``: run only part K of M of the work (``what``); ``args.shard`` is ``(K, M)`` or None."""
    parser.add_argument("--shard", type=shard, default=None, metavar="K/M",
                        help=f"run only part K of M of {what}: the same split for the same selection "
                             "and M, every unit of work in exactly one part (1 <= K <= M)")


def add_rules_argument(parser: argparse.ArgumentParser, what: str = "rule keys", all_means: str = "") -> None:
    """``--rules a,b`` (default: all); ``args.rules`` is the list of rule keys. ``all_means``: what
    ``all`` stands for in this command, when not every rule key."""
    parser.add_argument("--rules", type=rule_list, default="all", metavar="RULE[,RULE...]",
                        help=f"comma-separated {what}, or all (the default): {all_means or ', '.join(rule_keys())}")


def add_profile_argument(parser: argparse.ArgumentParser, default: str = "paddle", also: Sequence[str] = (),
                         help: str = "") -> None:
    """``--profile NAME``: one of the rule profiles (``paddle``, ``pr72918``, ``proposed``), plus ``also``."""
    parser.add_argument("--profile", choices=(*rule_profiles(), *also), default=default,
                        help=help or f"the rule profile the port answers with (default {default}): "
                                     "paddle = Paddle 3.3.1, pr72918 = the rules of an upstream pull request, "
                                     "proposed = our corrected rules")


def add_selection_arguments(parser: argparse.ArgumentParser, seed_help: str = "") -> None:
    """``--max-cases N`` (the first N cases per rule, grid order), ``--sample N`` (a seeded sample of N
    cases per rule, corner cases kept) and ``--seed S``. With both, the sample is drawn first."""
    parser.add_argument("--max-cases", type=count, default=None, metavar="N",
                        help="only the first N cases per rule, in grid order (default: every case)")
    parser.add_argument("--sample", type=count, default=None, metavar="N",
                        help="a seeded random sample of N cases per rule (grid order kept, corner cases always "
                             "included; see --seed); with --max-cases, the first N of the sample")
    parser.add_argument("--seed", type=int, default=0, metavar="S",
                        help=seed_help or "seed for --sample (default 0)")


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


def _non_empty(path: str | Path, arg: str) -> Path:
    if not str(path).strip():
        raise UsageError(arg, "an empty path is not allowed", "give a path")
    return Path(path)


def check_output_dir(path: str | Path, arg: str) -> Path:
    """``path`` as a directory the run can write its report into; checked before any work starts
    and without creating anything. Raises :class:`UsageError` naming ``arg``."""
    target = _non_empty(path, arg)
    if target.exists() and not target.is_dir():
        raise UsageError(arg, f"{target} is a file", "give a directory (it is created if missing)")
    _check_creatable_below(_nearest_existing(target), arg, target)
    return target


def check_output_file(path: str | Path, arg: str) -> Path:
    """``path`` as a file the run can (over)write; checked before any work starts."""
    target = _non_empty(path, arg)
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


# --------------------------------------------------------------------------- one report per selection
def add_replace_report_argument(parser: argparse.ArgumentParser) -> None:
    """``--replace-report``: let a run replace a report of another selection (see :func:`refuse_other_selection`)."""
    parser.add_argument("--replace-report", action="store_true",
                        help="let this run replace a report of another selection in --report-dir")


def refuse_other_selection(report_json: Path, selection: dict[str, Any], replace: bool = False,
                           arg: str = "--report-dir") -> None:
    """Refuse (exit 2, before any work) to overwrite ``report_json`` when it holds the report of
    another selection -- a narrower run must never silently replace a broader one (parity, launch
    and oracle alike). ``selection`` has ``slug`` (the key compared) and ``describe`` (a sentence);
    the report keeps it under ``selection`` (or ``meta.selection``). A report without one, or one
    that cannot be read, counts as another selection. ``replace`` (``--replace-report``) allows it."""
    if replace or not report_json.is_file():
        return
    try:
        data = json.loads(report_json.read_text())
        old = data.get("selection") or (data.get("meta") or {}).get("selection") or {}
        if not isinstance(old, dict):
            old = {}
    except (OSError, ValueError, AttributeError):
        old = {}
    if old.get("slug") != selection["slug"]:
        what = old.get("describe") or "a run of unknown selection"
        raise UsageError(arg, f"{report_json} holds the report of another run ({what}); this run: "
                         f"{selection['describe']}",
                         f"choose another {arg}, or pass --replace-report to replace it")
