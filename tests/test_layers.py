"""The import layers hold: ``lint-imports`` keeps every contract in pyproject.toml ([tool.importlinter]).

The second test shows the contracts bite: it copies the package to a temporary directory, plants one
forbidden import per contract, and checks ``lint-imports`` names each broken contract and the import.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: import-linter's own dependency
    tomllib = pytest.importorskip("tomli")

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "paddle_spmd_port"
# ``lint-imports`` without relying on the venv's bin/ being on PATH
LINT_IMPORTS = [sys.executable, "-c",
                "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())"]


def _require_import_linter() -> None:
    pytest.importorskip("importlinter", reason="import-linter is not installed (pip install -e .[test])")


def _lint_imports(cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LINT_IMPORTS, "--no-cache", "--no-logo"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_import_contracts_are_kept() -> None:
    _require_import_linter()
    run = _lint_imports(REPO)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout, run.stdout


# (contract name as lint-imports prints it (a prefix), file under the package, planted line, expected text):
# an arrow up a floor, one between rooms that stand side by side, the package importing its public face, a
# circle inside a folder, a command importing another, Paddle in the pure core
PLANTED = [
    ("layers: every import points down", "types.py", "from .ops import RULES as _planted",
     "paddle_spmd_port.types -> paddle_spmd_port.ops"),
    ("layers: every import points down", "oracle/grid.py", "from ..parity.report import ParityReport as _planted",
     "paddle_spmd_port.oracle.grid -> paddle_spmd_port.parity.report"),
    ("layers: every import points down", "launch/cases.py", "from ..compat import mesh as _planted",
     "paddle_spmd_port.launch.cases -> paddle_spmd_port.compat.mesh"),
    ("layers: every import points down", "compare.py", "from .rules import get_spmd_rule as _planted",
     "paddle_spmd_port.compare -> paddle_spmd_port.rules"),
    ("no circles", "parity/repro.py", "from .report import ParityReport as _planted", "- .repro -> .report"),
    ("no command module imports another", "launch/cli.py", "from ..oracle.cli import main as _planted",
     "paddle_spmd_port.launch.cli -> paddle_spmd_port.oracle.cli"),
    ("the core, ops/, rules.py and the shared floors never import Paddle", "ops/kit/tensor.py",
     "import paddle as _planted", "paddle_spmd_port.ops.kit.tensor -> paddle"),
    ("runctl's jobs", "runctl/exits.py", "from .command import run_command as _planted",
     "paddle_spmd_port.runctl.exits -> paddle_spmd_port.runctl.command"),
]


def test_planted_forbidden_imports_are_reported(tmp_path: Path) -> None:
    _require_import_linter()
    shutil.copytree(PACKAGE, tmp_path / "paddle_spmd_port", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    for _, file, line, _ in PLANTED:
        path = tmp_path / "paddle_spmd_port" / file
        path.write_text(path.read_text() + f"\n{line}\n")
    # the copy comes first on the path, ahead of the editable install's finder
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    run = _lint_imports(tmp_path, env)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    for contract, _, _, expected in PLANTED:
        # the summary line: "<name> KEPT" or "<name> BROKEN", maybe followed by "(N ignored imports)"; a long
        # name wraps, so the status is read from the text after the name
        summary = out[out.index(contract):]
        status = summary[:summary.index("\n\n")] if "\n\n" in summary else summary
        assert " BROKEN" in status.split("KEPT")[0], f"{contract!r} not broken:\n{out}"
        assert expected in out, f"{expected!r} not reported:\n{out}"
    # every contract of pyproject.toml is planted against
    named = {c for c, *_ in PLANTED}
    assert all(any(line.startswith(c) for c in named) for line in _contract_names()), _contract_names()


def _contract_names() -> list[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    return [c["name"] for c in config["tool"]["importlinter"]["contracts"]]


def _layers() -> list[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    (layers,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "layers"]
    assert layers["containers"] == ["paddle_spmd_port"] and layers.get("exhaustive") is True
    assert not layers.get("ignore_imports")  # no upward edge is let through
    return list(layers["layers"])


def _drawn_layers(text: str) -> list[str]:
    """The floors docs/architecture.md draws: the first column of the block under "## The layers"."""
    section = text[text.index("## The layers"):]
    block = section[section.index("```\n") + 4:]
    block = block[:block.index("```")]
    return [re.split(r"\s{2,}", line.strip())[0] for line in block.splitlines() if line.strip()]


def test_the_architecture_page_draws_the_contract() -> None:
    page = (REPO / "docs" / "architecture.md").read_text()
    assert _drawn_layers(page) == _layers(), (_drawn_layers(page), _layers())
    # the comparison can fail: the page with two floors swapped differs
    lines = page.splitlines(keepends=True)
    i, j = (next(k for k, ln in enumerate(lines) if ln.startswith(name + " ")) for name in ("oracle", "native"))
    lines[i], lines[j] = lines[j], lines[i]
    assert _drawn_layers("".join(lines)) != _layers()


ROOMS = ("parity", "launch", "compat", "oracle", "native")


def _drawn_room_imports(text: str) -> set[tuple[str, str]]:
    """The ``a -> b`` lines of docs/architecture.md's block of imports between rooms."""
    found = re.findall(r"^(\w+) -> (\w+)\s{2,}\S", text, flags=re.MULTILINE)
    return {(a, b) for a, b in found if a in ROOMS and b in ROOMS}


def _room_imports() -> set[tuple[str, str]]:
    grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter")
    graph = grimp.build_graph("paddle_spmd_port", cache_dir=None)
    out = set()
    for module in graph.modules:
        parts = module.split(".")
        if len(parts) < 2 or parts[1] not in ROOMS:
            continue
        for imported in graph.find_modules_directly_imported_by(module):
            other = imported.split(".")
            if len(other) > 1 and other[0] == "paddle_spmd_port" and other[1] in ROOMS and other[1] != parts[1]:
                out.add((parts[1], other[1]))
    return out


def test_the_architecture_page_lists_every_import_between_rooms() -> None:
    page = (REPO / "docs" / "architecture.md").read_text()
    drawn, real = _drawn_room_imports(page), _room_imports()
    assert drawn == real, {"on the page only": drawn - real, "in the code only": real - drawn}
    assert _drawn_room_imports(page.replace("oracle -> native", "native -> oracle")) != real  # it can fail
