"""paddle_spmd_port.rules, the face kept for imports written before the op families had folders:
every old import path still resolves, to the families' own objects, and the face names no op."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import paddle_spmd_port.rules as face
from paddle_spmd_port import ops
from paddle_spmd_port.ops.registry import PADDLE_RULES, PROFILES

FACE_DIR = Path(face.__file__).parent


def test_every_paddle_rule_function_is_exported_by_its_name() -> None:
    for key, fn in PADDLE_RULES.items():
        assert getattr(face, fn.__name__) is fn, key
        assert fn.__name__ in face.__all__


@pytest.mark.parametrize("family", list(ops.FAMILIES))
def test_rules_family_is_the_family_rules_module(family: str) -> None:
    module = importlib.import_module(f"paddle_spmd_port.rules.{family}")
    assert module is ops.family_module(family, "rules")
    assert getattr(face, family) is module


def test_profile_namespaces_hold_every_family_and_the_table() -> None:
    from paddle_spmd_port.rules import pr72918, proposed
    from paddle_spmd_port.rules.proposed import PROPOSED_RULES

    assert PROPOSED_RULES is PROFILES["proposed"]
    assert set(proposed.RULES) == set(ops.RULES)  # the proposed profile has every key
    for key, fn in proposed.RULES.items():
        assert getattr(proposed, fn.__name__) is fn, key
    assert set(pr72918.RULES) and set(pr72918.RULES) <= set(ops.RULES)
    for key, fn in pr72918.RULES.items():
        assert PROFILES["pr72918"][key] is fn


def test_old_helper_paths_resolve() -> None:
    from paddle_spmd_port.ops.kit import tensor
    from paddle_spmd_port.rules import _tensor, preconditions

    assert _tensor is tensor and importlib.import_module("paddle_spmd_port.rules._tensor") is tensor
    checks = [m for f in ops.FAMILIES if (m := ops.family_module(f, "checks")) is not None]
    shared = {n for m in checks for n, v in vars(m).items() if callable(v) and not n.startswith("_")
              and getattr(v, "__module__", None) == m.__name__}
    assert shared and all(hasattr(preconditions, n) for n in shared)


def test_a_name_two_modules_bind_differently_is_left_out() -> None:
    from types import ModuleType

    from paddle_spmd_port.rules import _merged

    a, b = ModuleType("a"), ModuleType("b")
    a.same = b.same = len
    a.clash, b.clash = 1, 2
    a.only_a = 3
    merged = _merged("_test_merged", "test", [a, b], {"EXTRA": 4})
    try:
        assert merged.same is len and merged.only_a == 3 and merged.EXTRA == 4
        assert not hasattr(merged, "clash")
    finally:
        import sys
        del sys.modules[merged.__name__]


def test_the_face_names_no_op() -> None:
    names = {*ops.FAMILIES, *ops.RULES, *ops.REGISTRY_NAMES}
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")\b")
    found = [f"{p.name}: {m.group(0)}" for p in FACE_DIR.glob("*.py") for m in pattern.finditer(p.read_text())]
    assert not found
    assert pattern.search("from ..ops.layer_norm import x")  # the check can fail
