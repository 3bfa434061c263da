"""tools/probe_coshard.py: --help works and a bad flag is a one-line usage error (exit 2), without Paddle."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[1] / "tools" / "probe_coshard.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True, timeout=60)


def test_help() -> None:
    proc = _run("--help")
    assert proc.returncode == 0
    assert "--families" in proc.stdout


def test_bad_family_is_one_line_usage_error(tmp_path: Path) -> None:
    proc = _run("--families", "bogus", "--out", str(tmp_path / "r"))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "--families" in proc.stderr
    assert not (tmp_path / "r").exists()
