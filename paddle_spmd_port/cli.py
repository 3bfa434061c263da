"""``python -m paddle_spmd_port COMMAND ...``: one entry point, one module per command.

    parity        the main job: the exhaustive grid, port vs native, cell by cell, with a report
    infer         one rule call, port and native side by side
    launch        real multi-process runs with paddle.distributed.launch, checked against the port
    oracle        numerical soundness of every rule's answer on a virtual mesh (numpy)
    compat-test   run Paddle-style SPMD rule test files against the port and native Paddle

Each command lives in its own module exposing ``main(argv) -> int``; this file only dispatches,
so adding a command is one line in ``COMMANDS``. A missing or unknown command is a usage error:
one line on stderr, exit 2 (:mod:`paddle_spmd_port.runctl`). Every message starts
``paddle_spmd_port COMMAND:`` (``paddle_spmd_port:`` here); an internal error exits 4.
"""

from __future__ import annotations

import importlib
import sys

from .runctl.command import run_command
from .runctl.exits import EXIT_OK, EXIT_USAGE, UsageError, prefix
from .runctl.grammar import version_text

COMMANDS: dict[str, tuple[str, str]] = {
    "parity": ("paddle_spmd_port.parity.cli", "the exhaustive parity sweep against native Paddle (main job)"),
    "infer": ("paddle_spmd_port.parity.infer_cli", "one rule call, port and native side by side"),
    "launch": ("paddle_spmd_port.launch.cli", "real multi-process runs checked against the port"),
    "oracle": ("paddle_spmd_port.oracle.cli", "numerical soundness oracle on a virtual mesh"),
    "compat-test": ("paddle_spmd_port.compat.cli", "run Paddle-style rule tests against port and native"),
}


def usage() -> str:
    lines = ["usage: python -m paddle_spmd_port COMMAND [options]", "", "commands:"]
    lines += [f"  {name:<12} {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "Run a command with --help for its options; --version prints the package's and Paddle's version."]
    return "\n".join(lines)


PROG = "python -m paddle_spmd_port"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] in ("-h", "--help", "help"):
        print(usage())
        return EXIT_OK
    if args and args[0] == "--version":
        print(version_text(PROG))
        return EXIT_OK
    if not args or args[0] not in COMMANDS:
        problem = "no COMMAND given" if not args else f"unknown command {args[0]!r}"
        print(f"{prefix(PROG)}: error: {UsageError('COMMAND', problem, 'choose one of ' + ', '.join(COMMANDS))} "
              "(see --help)", file=sys.stderr)
        return EXIT_USAGE
    name, rest = args[0], args[1:]
    # the command's own main handles signals while it runs; this covers importing it
    return run_command(name, lambda: int(importlib.import_module(COMMANDS[name][0]).main(rest) or 0))


if __name__ == "__main__":
    sys.exit(main())
