"""mypy keeps the package clean under pyproject.toml's [tool.mypy]: strict on the core, ops/, rules.py and
the shared floors, the defaults elsewhere. The second test shows the strict part bites where it should and only
there."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _mypy(cwd: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mypy", reason="mypy is not installed (pip install -e .[test])")
    # the files and options come from cwd's pyproject.toml; a private cache keeps parallel runs apart
    return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache)], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def test_mypy_is_clean(tmp_path: Path) -> None:
    run = _mypy(REPO, tmp_path / "cache")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("Success: no issues found"), run.stdout


def test_strict_flags_hold_in_the_core_only(tmp_path: Path) -> None:
    shutil.copytree(REPO / "paddle_spmd_port", tmp_path / "paddle_spmd_port",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    planted = "\n\ndef _planted(value):\n    return value\n"
    for file in ("types.py", "ops/kit/tensor.py", "oracle/grid.py"):
        path = tmp_path / "paddle_spmd_port" / file
        path.write_text(path.read_text() + planted)
    run = _mypy(tmp_path, tmp_path / "cache")
    untyped = [ln for ln in run.stdout.splitlines() if "[no-untyped-def]" in ln]
    assert run.returncode == 1, run.stdout + run.stderr
    assert any(ln.startswith("paddle_spmd_port/types.py:") for ln in untyped), run.stdout
    assert any(ln.startswith("paddle_spmd_port/ops/kit/tensor.py:") for ln in untyped), run.stdout
    assert not any(ln.startswith("paddle_spmd_port/oracle/") for ln in untyped), run.stdout
