"""The oracle room is generic: every op's kernel and facts live in its folder (ops/<family>/kernel.py),
the room reads them through ``ops.family_part`` (``KERNEL``) and names no op; only the kernel modules under ops/
import numpy."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from paddle_spmd_port import ops
from paddle_spmd_port.ops.kit.kernel import Facts, KernelModels, OpModel, per_rank
from paddle_spmd_port.oracle import kernels

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "paddle_spmd_port"
ORACLE = PACKAGE / "oracle"


def _op_names_in(text: str) -> list[str]:
    # every rule key begins with or contains its family's name, so the family names catch the keys too; a name
    # starts at a word start or after "_" (sync_batch_norm names batch_norm; group_norm does not name p_norm)
    return sorted({m.group(0) for name in ops.FAMILIES for m in re.finditer(r"(?<![A-Za-z0-9])" + re.escape(name),
                                                                             text)})


def test_the_oracle_room_names_no_op() -> None:
    found = {path.name: _op_names_in(path.read_text()) for path in sorted(ORACLE.glob("*.py"))}
    assert found and not any(found.values()), {k: v for k, v in found.items() if v}


def test_the_op_name_check_can_fail() -> None:
    # the check above reads code, comments and docstrings alike
    assert _op_names_in('"""judged with groups=2 for group_norm"""') == ["group_norm"]
    assert _op_names_in("x = 1  # as sync_batch_norm does") == ["batch_norm", "sync_batch_norm"]
    assert _op_names_in("the p_norm rule") == ["p_norm"]


def test_every_family_with_a_kernel_module_has_a_model_per_rule() -> None:
    for family in ops.FAMILIES:
        part = ops.family_part(family, KernelModels)
        assert part is not None, f"ops/{family}/kernel.py is missing"
        assert tuple(part.models) == ops.FAMILIES[family].keys, family
        for key, op_model in part.models.items():
            assert op_model.family == family and isinstance(op_model.facts, Facts), key
    assert tuple(kernels.MODELS) == tuple(ops.RULES)  # gathered in the declared order


def _fake_kernel(models: dict[str, OpModel]) -> types.ModuleType:
    module = types.ModuleType("fake_kernel")
    module.KERNEL = KernelModels(models)  # type: ignore[attr-defined]
    return module


def test_a_model_under_another_familys_key_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = list(ops.FAMILIES)[:2]
    stray_key = ops.FAMILIES[second].keys[0]
    real = ops.family_module
    stray = OpModel((), (), per_rank(lambda ins, attrs: {}), second)

    def family_module(family: str, part: str) -> types.ModuleType | None:
        return _fake_kernel({stray_key: stray}) if family == first and part == "kernel" else real(family, part)

    monkeypatch.setattr(ops, "family_module", family_module)
    monkeypatch.setattr(ops, "_PARTS", {})
    with pytest.raises(ImportError, match=f"ops/{first}/kernel.py: KERNEL: models \\['{stray_key}'\\]"):
        kernels._gather()


def test_a_family_without_a_kernel_module_has_no_models(monkeypatch: pytest.MonkeyPatch) -> None:
    gone = "fast_ln"
    real = kernels.family_models
    monkeypatch.setattr(kernels, "family_models", lambda f: None if f == gone else real(f))
    models = kernels._gather()
    assert set(models) == set(ops.RULES) - set(ops.FAMILIES[gone].keys)


def _lint_imports(cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command as c; "
                           "sys.exit(c())"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_numpy_outside_the_kernel_modules_breaks_the_pure_contract(tmp_path: Path) -> None:
    """The contract's ignore is narrow: ops/<family>/kernel.py and ops/kit/kernel.py may import
    numpy, a family's spec or the kit's other modules may not."""
    pytest.importorskip("importlinter", reason="import-linter is not installed (pip install -e .[test])")
    shutil.copytree(PACKAGE, tmp_path / "paddle_spmd_port", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    planted = ("ops/layer_norm/__init__.py", "ops/kit/__init__.py", "ops/spec.py")
    for file in planted:
        path = tmp_path / "paddle_spmd_port" / file
        path.write_text(path.read_text() + "\nimport numpy as _planted\n")
    run = _lint_imports(tmp_path, {**os.environ, "PYTHONPATH": str(tmp_path)})
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    for module in ("paddle_spmd_port.ops.layer_norm -> numpy", "paddle_spmd_port.ops.kit -> numpy",
                   "paddle_spmd_port.ops.spec -> numpy"):
        assert module in out, f"{module!r} not reported:\n{out}"
    assert "paddle_spmd_port.ops.layer_norm.kernel -> numpy" not in out, out
