"""tools/probe_coshard.py: --help works and a bad flag is a one-line usage error (exit 2), without Paddle."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[1] / "tools" / "probe_coshard.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(TOOL.parents[1]))  # this checkout's package, not an installed one
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True, timeout=60, env=env)


def test_help() -> None:
    proc = _run("--help")
    assert proc.returncode == 0
    assert "--families" in proc.stdout


def test_bad_family_is_one_line_usage_error(tmp_path: Path) -> None:
    proc = _run("--families", "bogus", "--out", str(tmp_path / "r"))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "--families" in proc.stderr
    assert not (tmp_path / "r").exists()


def test_bad_values_are_one_line_usage_errors_before_anything_is_written(tmp_path: Path) -> None:
    """The shared grammar (runctl): --timeout nan and inf were taken; --out under a file was
    argparse's error only after trying to make it."""
    (tmp_path / "afile").write_text("x")
    for args, name in [(("--timeout", "nan"), "--timeout"), (("--timeout", "inf"), "--timeout"),
                       (("--out", str(tmp_path / "afile")), "--out"),
                       (("--out", str(tmp_path / "afile" / "r")), "--out"),
                       (("--out", ""), "--out"), (("--families", ""), "--families"),
                       (("--report-dir", str(tmp_path / "afile")), "--report-dir")]:  # as every command spells it
        proc = _run(*(("--out", str(tmp_path / "r")) if "--out" not in args else ()), *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.count("\n") == 1 and name in proc.stderr, (args, proc.stderr)
        assert proc.stderr.startswith("paddle_spmd_port probe_coshard: error: "), proc.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
