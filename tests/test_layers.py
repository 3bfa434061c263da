"""The import layers hold: ``lint-imports`` keeps every contract in pyproject.toml ([tool.importlinter]).

The second test shows the contracts bite: it copies the package to a temporary directory, plants one
forbidden import per contract, and checks ``lint-imports`` names each broken contract and the import.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


# contract name (as lint-imports prints it, a prefix) -> (file under the package, planted line, expected text)
PLANTED = {
    "layers: core <- ops <- rules": ("types.py", "from .rules import registry as _planted",
                                     "paddle_spmd_port.types ->"),
    "rooms are independent": ("oracle/report.py", "from ..launch.cases import OPS as _planted",
                              "paddle_spmd_port.oracle.report -> paddle_spmd_port.launch.cases"),
    "no command module imports another": ("launch/cli.py", "from ..oracle.cli import main as _planted",
                                          "paddle_spmd_port.launch.cli -> paddle_spmd_port.oracle.cli"),
    "the core, ops/ and rules/ never import Paddle": ("ops/kit/tensor.py", "import paddle as _planted",
                                               "paddle_spmd_port.ops.kit.tensor -> paddle"),
    "runctl's jobs": ("runctl/exits.py", "from .command import run_command as _planted",
                      "paddle_spmd_port.runctl.exits -> paddle_spmd_port.runctl.command"),
}


def test_planted_forbidden_imports_are_reported(tmp_path: Path) -> None:
    _require_import_linter()
    shutil.copytree(PACKAGE, tmp_path / "paddle_spmd_port", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    for file, line, _ in PLANTED.values():
        path = tmp_path / "paddle_spmd_port" / file
        path.write_text(path.read_text() + f"\n{line}\n")
    # the copy comes first on the path, ahead of the editable install's finder
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    run = _lint_imports(tmp_path, env)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    for contract, (_, _, expected) in PLANTED.items():
        # the summary line: "<name> KEPT" or "<name> BROKEN", maybe followed by "(N ignored imports)"
        status = [ln for ln in out.splitlines() if ln.startswith(contract) and (" KEPT" in ln or " BROKEN" in ln)]
        assert status and " BROKEN" in status[0], f"{contract!r} not broken:\n{out}"
        assert expected in out, f"{expected!r} not reported:\n{out}"
