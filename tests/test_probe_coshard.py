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


def test_the_tool_names_no_op_and_probes_what_the_families_declare() -> None:
    """The probes come from each family's NativeRoutes.coshard_probe: the tool's text names no op, and a
    family that declares a probe has its registry keys and PIR builders in the tool's tables."""
    import importlib.util
    import re

    from paddle_spmd_port.ops import FAMILIES, REGISTRY_NAMES, RULES, family_part
    from paddle_spmd_port.ops.kit.native import NativeRoutes

    names = {*FAMILIES, *RULES, *REGISTRY_NAMES}
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")\b")
    assert not pattern.findall(TOOL.read_text())
    spec = importlib.util.spec_from_file_location("probe_coshard", TOOL)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    sys.modules["probe_coshard"] = tool
    try:
        spec.loader.exec_module(tool)
    finally:
        del sys.modules["probe_coshard"]
    registry, pir = set(), set()
    for family in FAMILIES:
        native = family_part(family, NativeRoutes)
        if native is not None and native.coshard_probe is not None:
            registry |= set(native.coshard_probe.registry)
            pir |= {native.pir_ops[k] for k in native.coshard_probe.pir}
    assert registry and set(tool.REGISTRY_RULES) == registry
    assert pir and set(tool.PIR_OPS) == pir
    assert all(tool.REGISTRY_RULES[k].names == RULES[k].inputs for k in registry)
