"""ruff (the version pinned in the test extra) finds nothing in the package, the tools and the tests,
including unused ``noqa`` comments (RUF100)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_ruff_is_clean() -> None:
    pytest.importorskip("ruff", reason="ruff is not installed (pip install -e .[test])")
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "paddle_spmd_port", "tools", "tests"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
