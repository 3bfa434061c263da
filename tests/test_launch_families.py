"""The launch and compat rooms read the op families (ops/<family>/launch.py, compat.py) and name no op.

Pure tests (no Paddle): every rule key is accounted for by the launch room exactly once; the rooms'
files name no rule key, family or registry name; the in-rank runner imports neither Paddle nor
numpy; a family module that breaks the convention is refused; the compat declarations are checked.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from paddle_spmd_port import ops
from paddle_spmd_port.launch.cases import NOT_LAUNCHED, OP_RULES, LaunchCase, default_cases
from paddle_spmd_port.ops.kit import launch as kit_launch
from paddle_spmd_port.ops.kit.compat import CompatRule, Method

PACKAGE = Path(ops.__file__).resolve().parent.parent
ROOMS = ("launch", "compat")


def op_names() -> set[str]:
    """Every rule key, family name and registry name the families declare."""
    return set(ops.RULES) | set(ops.FAMILIES) | set(ops.REGISTRY_NAMES)


def room_hits(root: Path) -> list[str]:
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, op_names()), key=len, reverse=True)) + r")\b")
    hits = []
    for room in ROOMS:
        for path in sorted((root / room).rglob("*.py")):
            for lineno, line in enumerate(path.read_text().splitlines(), 1):
                if pattern.search(line):
                    hits.append(f"{path.relative_to(root)}:{lineno}: {line.strip()}")
    return hits


def test_the_rooms_name_no_op() -> None:
    assert room_hits(PACKAGE) == []


def test_a_planted_op_name_in_a_room_is_found(tmp_path: Path) -> None:
    """The check above can fail: a copy of the rooms with one op key written into a docstring."""
    for room in ROOMS:
        for path in (PACKAGE / room).rglob("*.py"):
            target = tmp_path / path.relative_to(PACKAGE)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(path.read_text())
    key = next(iter(ops.RULES))
    planted = tmp_path / "launch" / "report.py"
    planted.write_text(planted.read_text() + f'\n"""the {key} rule"""\n')
    assert [h for h in room_hits(tmp_path) if h.startswith("launch/report.py")]


def test_every_rule_key_is_launched_or_says_why_not() -> None:
    assert kit_launch.coverage_problems(OP_RULES, NOT_LAUNCHED, list(ops.RULES)) == []
    assert set(OP_RULES) <= set(ops.FAMILIES)


def test_a_key_with_no_reason_or_two_accounts_is_noticed() -> None:
    """Mutants of the families' declarations: a reason dropped, a reached key also declared not
    launched, a misspelt key, an empty reason."""
    keys = list(ops.RULES)
    dropped = dict(NOT_LAUNCHED)
    gone = dropped.pop(next(iter(dropped)))
    assert gone and kit_launch.coverage_problems(OP_RULES, dropped, keys)
    reached = next(k for ks in OP_RULES.values() for k in ks)
    assert kit_launch.coverage_problems(OP_RULES, {**NOT_LAUNCHED, reached: "why"}, keys)
    assert kit_launch.coverage_problems({**OP_RULES, "x": ("no_such_key",)}, NOT_LAUNCHED, keys)
    assert kit_launch.coverage_problems(OP_RULES, {**NOT_LAUNCHED, next(iter(NOT_LAUNCHED)): " "}, keys)


def test_each_family_module_declares_its_own_op(monkeypatch: pytest.MonkeyPatch) -> None:
    """A launch part whose op names another family is refused when the ops are collected."""
    module = ops.family_module("batch_norm", "launch")
    assert module is not None

    class Wrong(kit_launch.LaunchOp):
        name = "not-this-family"

    monkeypatch.setattr(module, "LAUNCH", kit_launch.LaunchPlan(Wrong()))
    monkeypatch.setattr(ops, "_PARTS", {})
    with pytest.raises(ImportError, match="ops/batch_norm/launch.py: LAUNCH: the op is 'not-this-family'"):
        kit_launch._collect()


def test_a_family_without_a_launch_part_is_not_launched_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    real = ops.family_module
    monkeypatch.setattr(ops, "family_module", lambda f, part: None if (f, part) == ("layer_norm", "launch")
                        else real(f, part))
    monkeypatch.setattr(ops, "_PARTS", {})
    found, reasons = kit_launch._collect()
    assert "layer_norm" not in found
    assert {k: reasons[k] for k in ops.FAMILIES["layer_norm"].keys} == dict.fromkeys(
        ops.FAMILIES["layer_norm"].keys, kit_launch.NO_LAUNCH_PART.replace("<family>", "layer_norm"))


def test_grid_ids_follow_the_families_order() -> None:
    """Case ids are numbered in the ops' declared order, one block per op."""
    cases = default_cases((2,), "gpu")
    blocks = [op for i, op in enumerate(c.op for c in cases) if i == 0 or cases[i - 1].op != op]
    assert blocks == list(OP_RULES)
    assert [c.case_id for c in cases] == [f"c{i:04d}" for i in range(len(cases))]


def test_an_unknown_op_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"op must be one of \(") as info:
        LaunchCase("a", "no_such_op", (4, 8), (2,), ("R",))
    assert all(op in str(info.value) for op in OP_RULES)


def test_the_runner_imports_neither_paddle_nor_numpy() -> None:
    """The runner starts in every rank: importing it (and the family modules the cases load) pulls
    in no Paddle and no numpy until a case runs."""
    code = ("import sys; import paddle_spmd_port.launch.runner as r; from paddle_spmd_port.launch.cases import "
            "default_cases; [c.launch_op for c in default_cases((2,))]; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('paddle', 'numpy')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=PACKAGE.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_compat_declarations_are_checked() -> None:
    with pytest.raises(ValueError, match="attribute kinds"):
        Method(("x",), (("epsilon", "float"),))
    with pytest.raises(ValueError, match="not tensor slots"):
        Method(("x",), optional=frozenset({"scale"}))
    from paddle_spmd_port.compat import rule_names
    from paddle_spmd_port.ops.kit.compat import compat_parts

    declared = [r.name for _, part in compat_parts() for r in part.rules]
    assert all(isinstance(r, CompatRule) for _, part in compat_parts() for r in part.rules)
    assert list(rule_names()) == [*declared, "replicated"]
    assert set(declared) <= set(ops.REGISTRY_NAMES)
