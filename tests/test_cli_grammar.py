"""One command-line grammar across every command (``paddle_spmd_port.runctl``).

A table of the shared flags: each is spelled, parsed and refused the same way in every command that
has it; the table also says which commands have it, so a flag added to a command without an entry
here (or spelled differently) fails. Plus: ``--version`` exits 0 everywhere without importing Paddle,
every flag of every command has help text, every ``--help`` ends with the one exit-code table, and
no command module imports another.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from paddle_spmd_port import __version__
from paddle_spmd_port.runctl.exits import (
    EXIT_CODES_HELP,
    EXIT_FINDING,
    EXIT_INCOMPLETE,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
)
from tests.cli_checks import REPO, BadInput, assert_usage_error, run_cli

#: command -> (its module, arguments that make the rest of a command line parse)
COMMANDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "parity": ("paddle_spmd_port.parity.cli", ()),
    "infer": ("paddle_spmd_port.parity.infer_cli", ("layer_norm", "--x-shape", "8,6", "--no-native")),
    "oracle": ("paddle_spmd_port.oracle.cli", ()),
    "launch": ("paddle_spmd_port.launch.cli", ("--nproc", "2")),
    "compat-test": ("paddle_spmd_port.compat.cli", ("{tmp}/test_a.py",)),
}


def build_parser(command: str) -> argparse.ArgumentParser:
    return importlib.import_module(COMMANDS[command][0]).build_parser()


def options(command: str) -> set[str]:
    return {opt for action in build_parser(command)._actions for opt in action.option_strings}


@dataclass(frozen=True)
class Flag:
    """A shared flag: a good value and what it parses to (the same in every command), a bad value
    (exit 2, one line naming the flag), and the commands that have the flag."""

    flag: str
    good: str
    parsed: Any
    bad: str
    commands: tuple[str, ...]

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


FLAGS = [
    Flag("--rules", "layer_norm,batch_norm", ["layer_norm", "batch_norm"], "layer_norm,no_such_rule",
         ("parity", "oracle", "launch")),
    Flag("--mesh", "2x3", (2, 3), "2,3", ("infer", "launch")),
    Flag("--meshes", "2,2x3", [(2,), (2, 3)], "2,0", ("oracle",)),
    Flag("--max-cases", "5", 5, "0", ("parity", "oracle")),
    Flag("--sample", "5", 5, "-3", ("parity", "oracle")),
    Flag("--seed", "7", 7, "x", ("parity", "oracle")),
    Flag("--profile", "proposed", "proposed", "mine", ("infer", "oracle")),
    Flag("--backend", "pir", "pir", "gpu", ("parity", "infer")),
    Flag("--timeout", "5", 5.0, "soon", ("parity", "launch", "compat-test", "oracle", "infer")),
    Flag("--workers", "1", 1, "0", ("parity", "oracle", "compat-test")),
    # lifts the machine's cap: on --workers (runctl.grammar.workers), on launch's --nproc
    Flag("--oversubscribe", "", True, "", ("parity", "oracle", "launch")),
    Flag("--report-dir", "r", Path("r"), "", ("parity", "oracle", "launch")),
]


@pytest.mark.parametrize("flag", FLAGS, ids=[f.flag for f in FLAGS])
def test_a_shared_flag_is_spelled_and_parsed_alike_in_every_command(flag: Flag) -> None:
    have = {command for command in COMMANDS if flag.flag in options(command)}
    assert have == set(flag.commands), f"{flag.flag}: in {sorted(have)}, the table says {sorted(flag.commands)}"
    for command in flag.commands:
        base = [a.replace("{tmp}", "/nonexistent") for a in COMMANDS[command][1]]
        args = build_parser(command).parse_args([*base, flag.flag, *([flag.good] if flag.good else [])])
        assert getattr(args, flag.dest) == flag.parsed, (command, flag.flag)


BAD_ROWS = [(flag, command) for flag in FLAGS for command in flag.commands if flag.bad]  # (a switch has no value)


@pytest.mark.parametrize(("flag", "command"), BAD_ROWS, ids=[f"{c} {f.flag} {f.bad}" for f, c in BAD_ROWS])
def test_a_bad_value_is_exit_2_and_one_line_naming_the_flag(flag: Flag, command: str, tmp_path: Path) -> None:
    setup = {"test_a.py": "import unittest\n"} if command == "compat-test" else {}
    line = assert_usage_error(BadInput((command, *COMMANDS[command][1], flag.flag, flag.bad), flag.flag, setup),
                              tmp_path)
    assert line.startswith(f"paddle_spmd_port {command}: error: ")


@pytest.mark.parametrize("command", [*COMMANDS, None], ids=[*COMMANDS, "dispatcher"])
def test_version_exits_0_everywhere(command: str | None, tmp_path: Path) -> None:
    done = run_cli([command, "--version"] if command else ["--version"], tmp_path)
    assert done.returncode == EXIT_OK and done.stderr == "", done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and f" {__version__} (Paddle " in lines[0], done.stdout
    assert lines[0].startswith("python -m paddle_spmd_port" + (f" {command}" if command else ""))


def test_version_does_not_import_paddle() -> None:
    code = ("import json, sys\n"
            "from paddle_spmd_port.cli import main\n"
            f"codes = [main([c, '--version']) for c in {list(COMMANDS)!r}]\n"
            "print(json.dumps([codes, 'paddle' in sys.modules]))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    codes, imported = json.loads(done.stdout.splitlines()[-1])
    assert codes == [EXIT_OK] * len(COMMANDS) and not imported


def _parsers(command: str) -> list[tuple[str, argparse.ArgumentParser, set[str]]]:
    """(label, parser, flags it may hide): infer's --help shows one rule's tensor and attribute
    flags (``infer RULE --help``; none in ``infer --help``), so each rule's parser is checked."""
    if command != "infer":
        return [(command, build_parser(command), set())]
    from paddle_spmd_port.ops import RULES
    from paddle_spmd_port.parity import infer_cli

    every = {f"--{infer_cli._flag(n)}-{part}" for n in infer_cli.TENSOR_NAMES for part in ("shape", "mapping",
                                                                                           "partial", "none")}
    every |= {f"--{infer_cli._flag(a)}" for a in infer_cli.ATTR_FLAGS}
    out = [("infer", infer_cli.build_parser(), every)]
    for rule, spec in RULES.items():
        own = {f"--{infer_cli._flag(n)}-{part}" for n in spec.inputs for part in ("shape", "mapping", "partial")}
        own |= {f"--{infer_cli._flag(n)}-none" for n in spec.inputs if n in spec.optional}
        own |= {f"--{infer_cli._flag(a)}" for a, _ in spec.attrs}
        out.append((f"infer {rule}", infer_cli.build_parser(rule), every - own))
    return out


@pytest.mark.parametrize("command", COMMANDS)
def test_every_flag_has_help_and_help_ends_with_the_exit_codes(command: str) -> None:
    for label, parser, hidden in _parsers(command):
        silent = [action.option_strings or [action.dest] for action in parser._actions
                  if (not (action.help or "").strip() or action.help == argparse.SUPPRESS)
                  and not set(action.option_strings) <= hidden]
        assert not silent, f"{label}: no help text for {silent}"
        assert parser.format_help().rstrip().endswith(EXIT_CODES_HELP.rstrip())


@pytest.mark.parametrize("command", COMMANDS)
def test_help_is_plain_text(command: str) -> None:
    """No Sphinx markup in --help (parity's showed ``:mod:`.grid```): descriptions are docstrings."""
    for label, parser, _ in _parsers(command):
        text = parser.format_help()
        for markup in (":mod:`", ":func:`", ":class:`", ":data:`", ":meth:`", "``"):
            assert markup not in text, f"{label} --help shows {markup!r}"


def test_plain_strips_the_markup_the_help_check_looks_for() -> None:
    """The check above can fail: the raw docstrings hold the markup that plain() removes."""
    from paddle_spmd_port.parity import cli as parity_cli
    from paddle_spmd_port.runctl.grammar import plain

    raw = parity_cli.__doc__ + (importlib.import_module("paddle_spmd_port.launch.cli").__doc__ or "")
    assert "``" in raw and "``" not in plain(raw)
    assert plain("see :mod:`.grid` and :func:`~.runctl.mesh_list`") == "see grid and runctl.mesh_list"


def test_infer_help_lists_one_rules_flags() -> None:
    """``infer RULE --help``: that rule's tensors and attributes only; ``infer --help``: the rules."""
    ln = run_cli(["infer", "layer_norm", "--help"], REPO)
    assert ln.returncode == 0, ln.stderr
    assert "--x-shape" in ln.stdout and "--begin-norm-axis" in ln.stdout and "--scale-none" in ln.stdout
    for other in ("--momentum", "--mean-out-shape", "--groups", "--y-grad-mapping", "--data-format"):
        assert other not in ln.stdout, other
    bn = run_cli(["infer", "batch_norm_grad", "--help"], REPO)
    assert "--reserve-space-none" in bn.stdout and "--momentum" in bn.stdout and "--begin-norm-axis" not in bn.stdout
    everything = run_cli(["infer", "--help"], REPO)
    assert everything.returncode == 0 and "--x-shape N" not in everything.stdout
    assert all(f"\n  {rule} " in everything.stdout for rule in ("layer_norm", "batch_norm_grad", "fast_ln_grad"))
    assert len(everything.stdout.splitlines()) < 120  # was ~250 lines of every rule's tensor flags


def test_the_exit_codes_are_the_shared_ones() -> None:
    assert (EXIT_OK, EXIT_FINDING, EXIT_USAGE, EXIT_INCOMPLETE, EXIT_INTERNAL) == (0, 1, 2, 3, 4)
    for code in ("0 ", "1 ", "2 ", "3 ", "4 ", "130/143"):
        assert f"\n  {code}" in EXIT_CODES_HELP


def test_no_command_module_imports_another() -> None:
    modules = {mod for mod, _ in COMMANDS.values()}
    for mod in modules:
        path = REPO / (mod.replace(".", "/") + ".py")
        package = mod.rsplit(".", 1)[0]
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
                imported.add(base)
                imported.update(f"{base}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
        assert not imported & (modules - {mod}), f"{mod} imports {imported & (modules - {mod})}"


def test_more_workers_than_cores_is_refused_alike_and_oversubscribe_insists(tmp_path: Path) -> None:
    from paddle_spmd_port.runctl.exits import UsageError
    from paddle_spmd_port.runctl.grammar import available_cores, workers

    many = available_cores() + 1
    for command in ("parity", "oracle"):
        line = assert_usage_error(BadInput((command, "--workers", str(many)), "--workers"), tmp_path)
        assert "--oversubscribe" in line, line
    assert workers(many, oversubscribe=True) == many
    with pytest.raises(UsageError, match="--oversubscribe"):
        workers(many, oversubscribe=False)


def test_parity_sizes_its_default_workers_by_a_group_s_cases_and_keeps_a_given_count() -> None:
    """No --workers: one worker per CASES_PER_DEFAULT_WORKER cases of a group, at least one, at most the
    default count, on the routes whose workers import Paddle (the compiled one keeps the count);
    --workers N: N, whatever the group's size."""
    from paddle_spmd_port.parity.cli import CASES_PER_DEFAULT_WORKER as PER
    from paddle_spmd_port.parity.cli import group_workers, parse_args
    from paddle_spmd_port.runctl.grammar import available_cores, workers

    default = parse_args(["--rules", "layer_norm"])
    assert not default.workers_given and default.workers == workers(None, False)
    for route in ("registry", "pir"):
        assert [group_workers(default, route, n) for n in (0, 1, PER)] == [1, 1, 1]
        assert group_workers(default, route, PER + 1) == min(2, default.workers)
        assert group_workers(default, route, 100 * PER) == default.workers
    assert group_workers(default, "compiled", 1) == default.workers
    given = parse_args(["--rules", "layer_norm", "--workers", "1"])
    assert given.workers_given and [group_workers(given, "registry", n) for n in (1, 100 * PER)] == [1, 1]
    if available_cores() >= 2:
        two = parse_args(["--rules", "layer_norm", "--workers", "2"])
        assert [group_workers(two, "pir", n) for n in (1, PER, 100 * PER)] == [2, 2, 2]


@pytest.mark.parametrize("prog", ["python tools/fuzz.py", "tools/fuzz.py", "fuzz.py", "fuzz", "python3 tools/fuzz.py"])
def test_a_tool_has_one_prefix_however_its_parser_names_it(prog: str) -> None:
    """argparse's errors (the parser's prog) and the tool's own (run_command's name) start alike;
    were ``paddle_spmd_port python tools/fuzz.py:`` against ``paddle_spmd_port fuzz:``."""
    from paddle_spmd_port.runctl.exits import prefix

    assert prefix(prog) == "paddle_spmd_port fuzz"
    assert prefix("python -m paddle_spmd_port parity") == prefix("parity") == "paddle_spmd_port parity"


@pytest.mark.parametrize("in_a_group", [False, True])
def test_a_positional_with_a_name_per_value_is_helped_and_refused_in_one_line(
        in_a_group: bool, capsys: pytest.CaptureFixture[str]) -> None:
    """``nargs=2, metavar=("OLD", "NEW")``: argparse (Python 3.11) raised formatting its help line
    and joining its "required" error; the shared parser answers both (exit 0 / exit 2, one line)."""
    from paddle_spmd_port.runctl.command import run_command
    from paddle_spmd_port.runctl.grammar import ArgumentParser

    def body(argv: list[str]) -> int:
        ap = ArgumentParser(prog="tool")
        where = ap.add_argument_group("reports") if in_a_group else ap
        where.add_argument("pair", nargs=2, metavar=("OLD", "NEW"), help="the two")
        ap.parse_args(argv)
        return EXIT_OK

    assert run_command("tool", lambda: body(["--help"])) == EXIT_OK
    out, err = capsys.readouterr()
    assert not err and "usage: tool [-h] [--version] OLD NEW\n" in out and "\n  OLD NEW     the two\n" in out, out
    for argv in ([], ["a"]):
        assert run_command("tool", lambda: body(argv)) == EXIT_USAGE  # noqa: B023 (called at once)
        out, err = capsys.readouterr()
        assert not out and err == "paddle_spmd_port tool: error: the following arguments are required: OLD NEW " \
                                  "(see --help)\n", err
    assert run_command("tool", lambda: body(["a", "b", "c"])) == EXIT_USAGE
    assert "unrecognized arguments: c" in capsys.readouterr().err


@pytest.mark.parametrize(("parse", "text", "fragment"), [
    ("mesh_shape", "2_3", "is not a mesh"),          # int() reads 2_3 as 23
    ("mesh_shape", "٢x3", "is not a mesh"),          # and other scripts' digits
    ("mesh_list", "2,2_3", "is not a mesh"),
    ("count", "1_0", "is not a whole number"),
    ("whole_number", "1_0", "is not an integer"),
    ("shard", "1/1_0", "is not K/M"),
    ("seconds", "1_0", "is not a number"),          # float() reads 1_0 as 10 too
    ("rule_list", "layer_norn", "did you mean layer_norm?"),
    ("rule_list", "Layer_Norm", "did you mean layer_norm?"),
    ("rule_list", "all,layer_norm", "all stands alone"),
])
def test_a_typo_in_a_shared_flag_is_refused_not_read_as_another_value(parse: str, text: str, fragment: str) -> None:
    from paddle_spmd_port.runctl import grammar

    with pytest.raises(argparse.ArgumentTypeError, match=fragment):
        getattr(grammar, parse)(text)


def test_plainly_written_values_still_parse() -> None:
    from paddle_spmd_port.runctl import grammar

    assert grammar.mesh_shape(" 2X3 ") == (2, 3) and grammar.mesh_list("2, 2x3,2") == [(2,), (2, 3)]
    assert grammar.count("+5") == 5 and grammar.whole_number("-7") == -7 and grammar.shard("2/4") == (2, 4)
    assert grammar.rule_list(" layer_norm , batch_norm,layer_norm") == ["layer_norm", "batch_norm"]


def test_a_value_argparse_takes_for_a_flag_says_how_to_write_it(tmp_path: Path) -> None:
    """``--porder -inf`` (p_norm's infinity norm): argparse reads -inf as a flag and the value as
    missing; the line says to write ``--porder=-inf``, which is read as the value."""
    argv = ("infer", "p_norm", "--x-shape", "8,6", "--no-native", "--porder", "-inf")
    line = assert_usage_error(BadInput(argv, "--porder"), tmp_path)
    assert "--FLAG=VALUE" in line
    args = build_parser("infer").parse_args(["p_norm", "--x-shape", "8,6", "--porder=-inf"])
    assert args.porder == float("-inf")


@pytest.mark.parametrize(("command", "flag"), [("oracle", "--max-bugs"), ("launch", "--crash-probes"),
                                               ("parity", "--seed")])
def test_an_integer_flag_of_one_command_reads_integers_as_written(command: str, flag: str) -> None:
    base = [a.replace("{tmp}", "/nonexistent") for a in COMMANDS[command][1]]
    assert getattr(build_parser(command).parse_args([*base, flag, "3"]), flag[2:].replace("-", "_")) == 3
    with pytest.raises(SystemExit):
        build_parser(command).parse_args([*base, flag, "1_0"])
