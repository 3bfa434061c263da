"""The command-line grammar every command shares, so a flag is spelled and checked one way
everywhere: :class:`ArgumentParser` (one-line errors, ``--version``, the exit-code table at the end of
``--help``), the argparse types (``--rules``: :func:`rule_list`, ``--mesh``: :func:`mesh_shape`,
``--meshes``: :func:`mesh_list`, counts, seconds, paths, ``--shard``: :func:`shard`) and the shared
flags (:func:`add_rules_argument`, :func:`add_profile_argument`, :func:`add_selection_arguments`,
:func:`add_workers_arguments` with :func:`workers`, :func:`add_shard_argument`)."""

from __future__ import annotations

import argparse
import difflib
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, cast

from ..installed import NOT_INSTALLED, paddle_version
from .exits import EXIT_CODES_HELP, EXIT_OK, EXIT_USAGE, PACKAGE, UsageError, prefix

#: The longest timeout any command takes (a week): finite, and well inside what ``threading`` and
#: ``select`` accept (``--timeout 1e300`` overflowed them).
MAX_SECONDS = 7 * 24 * 3600.0
#: The most processes a ``--mesh`` may have (the mesh lists one process id each).
MAX_MESH_SIZE = 1 << 20


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
        if message.endswith(": expected one argument"):  # argparse takes a value like -inf for a flag
            message += " (a value starting with '-', like -inf, is written --FLAG=VALUE)"
        self.exit(EXIT_USAGE, f"{prefix(self.prog)}: error: {message} (see --help)\n")

    # A positional's tuple metavar (``nargs=2, metavar=("A", "B")``, a name per value) is valid
    # argparse, but Python 3.11's argparse formats no help line for it (it unpacks one name) and builds its
    # "required" error by joining the metavars as strings: both raised instead of answering.
    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        for action in self._actions:  # (every group's, too)
            if not action.option_strings and isinstance(action.metavar, tuple):
                action.metavar = _Metavars(action.metavar)
        return super().parse_known_args(args, namespace)

    def _get_formatter(self) -> argparse.HelpFormatter:
        return _naming_each_value(cast(type[argparse.HelpFormatter], self.formatter_class))(prog=self.prog)


class _Metavars(str):
    """A positional's tuple metavar as the one string argparse's messages take (``A B``), the names
    kept for the help's formatter (:func:`_naming_each_value`)."""

    names: tuple[str, ...]

    def __new__(cls, names: Sequence[str]) -> _Metavars:
        self = super().__new__(cls, " ".join(names))
        self.names = tuple(names)
        return self


_NAMING: dict[type[argparse.HelpFormatter], type[argparse.HelpFormatter]] = {}


def _naming_each_value(formatter: type[argparse.HelpFormatter]) -> type[argparse.HelpFormatter]:
    """``formatter`` (a HelpFormatter class) that writes a positional's tuple metavar, or its
    :class:`_Metavars`, as its names in the usage and as the argument's help line (made once per class)."""
    done = _NAMING.get(formatter)
    if done is not None:
        return done

    class Formatter(formatter):  # type: ignore[misc, valid-type]
        def _metavar_formatter(self, action: argparse.Action, default_metavar: str) -> Callable[[int], tuple[str, ...]]:
            if isinstance(action.metavar, _Metavars):
                names = action.metavar.names
                return lambda size: names
            return super()._metavar_formatter(action, default_metavar)  # type: ignore[no-any-return]

        def _format_action_invocation(self, action: argparse.Action) -> str:
            metavar = action.metavar
            if not action.option_strings and isinstance(metavar, (tuple, _Metavars)):
                return " ".join(metavar.names if isinstance(metavar, _Metavars) else metavar)
            return super()._format_action_invocation(action)  # type: ignore[no-any-return]

    _NAMING[formatter] = Formatter
    return Formatter


def package_version() -> str:
    """This package's version (``paddle_spmd_port.__version__``)."""
    from .. import __version__

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


_INTEGER = re.compile(r"\s*[+-]?[0-9]+\s*")


def integer(text: str) -> int:
    """``text`` as an integer written plainly (ASCII digits, an optional sign, spaces around); else
    ValueError. Python's ``int`` also reads ``1_0`` as 10 and other scripts' digits: on a command
    line ``2_3`` is a typo (for ``2x3`` or ``2,3``), not the number 23."""
    if not _INTEGER.fullmatch(text):
        raise ValueError(f"{text!r} is not an integer")
    return int(text)


def real(text: str) -> float:
    """``text`` as a number written plainly (what ``float`` reads, ``inf`` and ``nan`` included, but not
    ``1_0`` or other scripts' digits, which ``float`` reads as numbers too); else ValueError."""
    if "_" in text or not text.isascii():
        raise ValueError(f"{text!r} is not a number")
    return float(text)


def rule_keys() -> tuple[str, ...]:
    """Every rule key, in the signature table's order (what ``--rules`` accepts, besides ``all``). Imported
    when first asked for, so that the dispatcher and ``--version`` do not load the rules."""
    from ..ops import RULES

    return tuple(RULES)


def rule_profiles() -> tuple[str, ...]:
    """Every rule profile (what ``--profile`` accepts): ``ops.registry.PROFILES``."""
    from ..ops.registry import PROFILES

    return tuple(PROFILES)


def rule_list(text: str) -> list[str]:
    """``--rules``: comma-separated rule keys, or ``all``; unknown keys are an error that lists the
    valid ones. Duplicates are dropped, the order given is kept. An argparse ``type``."""
    keys = rule_keys()
    valid = f"choose from all, {', '.join(keys)}"
    names = [r.strip() for r in text.split(",") if r.strip()]
    if names == ["all"]:
        return list(keys)
    if "all" in names:
        raise argparse.ArgumentTypeError(f"{text!r}: all stands alone (it is every rule); give all, or rule keys")
    unknown = [r for r in names if r not in keys]
    if unknown:
        like = [hit for r in unknown for hit in difflib.get_close_matches(r.lower(), keys, n=1, cutoff=0.75)]
        hint = f" (did you mean {', '.join(dict.fromkeys(like))}?)" if like else ""
        raise argparse.ArgumentTypeError(f"unknown rule(s) {', '.join(unknown)}{hint}; {valid}")
    if not names:
        raise argparse.ArgumentTypeError(f"{text!r} names no rule; {valid}")
    return list(dict.fromkeys(names))


def mesh_shape(text: str) -> tuple[int, ...]:
    """``--mesh``: a mesh shape, sizes >= 1 joined by ``x``: ``4``, ``2x3``, ``2x2x2``. An argparse ``type``."""
    valid = "a mesh is sizes >= 1 joined by x, like 4 or 2x3"
    if "," in text:
        raise argparse.ArgumentTypeError(f"{text!r} is not a mesh; {valid} ({text.replace(',', 'x')!r}?)")
    try:
        shape = tuple(integer(v) for v in text.lower().split("x"))
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


def whole_number(text: str) -> int:
    """Any integer, written plainly (:func:`integer`): ``--seed``, and the counts whose commands
    check the range themselves. An argparse ``type``."""
    try:
        return integer(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer; give a whole number like 7") from None


def count(text: str) -> int:
    """A whole number >= 1 (``--max-cases``, ``--sample``, ``--workers``, ...). An argparse ``type``."""
    try:
        value = integer(text)
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
        value = real(text)
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


def positive(value: float | int | None, arg: str, what: str = "a number > 0") -> None:
    """Raise :class:`UsageError` unless ``value`` is None or > 0."""
    if value is not None and not value > 0:
        raise UsageError(arg, f"{value!r} is not allowed", f"give {what}")


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
        part, parts = integer(k), integer(m)
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


def add_policy_argument(parser: argparse.ArgumentParser) -> None:
    """``--policy strict|mirror``: the port's strictness policy (docs/strictness.md), one grammar and help
    for every command that answers with the port. Its default is None, so that a command tells "not
    given" from ``strict`` (``parity --merge`` refuses it: the parts' policy is the merge's; ``infer``
    takes a per-case record's); :func:`policy_of` reads None as strict."""
    from ..ops.kit.strictness import DEFAULT_POLICY, POLICIES

    parser.add_argument("--policy", choices=POLICIES, default=None,
                        help="the port's strictness on inputs Paddle's rule answers but the port refuses "
                             f"(docs/strictness.md): {DEFAULT_POLICY} (default) refuses them, mirror answers as "
                             "Paddle's rule does where the port models it; a repro line of a mirror run names it")


def policy_of(given: str | None) -> str:
    """The policy a command runs under: ``--policy``'s value, or the default (strict) when not given."""
    from ..ops.kit.strictness import DEFAULT_POLICY

    return given or DEFAULT_POLICY


def add_selection_arguments(parser: argparse.ArgumentParser, seed_help: str = "") -> None:
    """``--max-cases N`` (the first N cases per rule, grid order), ``--sample N`` (a seeded sample of N
    cases per rule, corner cases kept) and ``--seed S``. With both, the sample is drawn first."""
    parser.add_argument("--max-cases", type=count, default=None, metavar="N",
                        help="only the first N cases per rule, in grid order (default: every case)")
    parser.add_argument("--sample", type=count, default=None, metavar="N",
                        help="a seeded random sample of N cases per rule (grid order kept, corner cases always "
                             "included; see --seed); with --max-cases, the first N of the sample")
    parser.add_argument("--seed", type=whole_number, default=0, metavar="S",
                        help=seed_help or "seed for --sample (default 0)")
