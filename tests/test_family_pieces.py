"""parity's grid and release profiles are assembled from the families (ops/<family>/grid.py,
ops/<family>/releases.py): the assembly checks what it is given, and each check can fail."""

from __future__ import annotations

import dataclasses
import re
import types
from pathlib import Path

import pytest

from paddle_spmd_port import grid, releases
from paddle_spmd_port.ops import FAMILIES, RULES, family_module
from paddle_spmd_port.ops.kit.releases import KnownDifference

REPO = Path(__file__).resolve().parent.parent


def test_every_rule_has_a_grid_from_its_family_in_rule_order():
    assert list(grid.GRIDS) == list(RULES)
    for family in FAMILIES:
        module = family_module(family, "grid")
        assert module is not None and set(module.GRIDS) == set(FAMILIES[family].keys)


def test_a_grid_module_missing_a_key_is_refused(monkeypatch):
    fake = types.SimpleNamespace(GRIDS={k: v for k, v in grid.GRID_MODULES["layer_norm"].GRIDS.items()
                                        if k != "layer_norm_grad"})
    monkeypatch.setitem(grid.GRID_MODULES, "layer_norm", fake)
    with pytest.raises(ImportError, match="layer_norm_grad"):
        grid._assemble()


def test_each_difference_names_its_evidence_section():
    for profile in releases.RELEASES:
        for d in profile.differences:
            page, _, anchor = d.evidence.partition("#")
            assert page == f"docs/releases/{profile.version}.md" and anchor == d.name
            text = (REPO / page).read_text()
            assert re.search(rf"^### {re.escape(d.name)}$", text, re.M), (page, d.name)


def test_each_family_s_order_is_the_order_its_rules_try():
    for profile in releases.RELEASES:
        for family in FAMILIES:
            module = family_module(family, "releases")
            declared = [d for d in (module.DIFFERENCES.get(profile.version, ()) if module else ())]
            for rule in FAMILIES[family].keys:
                want = [d.name for d in declared if rule in d.rules]
                assert [d.name for d in profile.differences_for(rule, coshard=True)] == want, (profile.version, rule)


def _with_differences(monkeypatch, family: str, version: str, diffs: tuple[KnownDifference, ...]) -> None:
    real = family_module(family, "releases")
    fake = types.SimpleNamespace(DIFFERENCES={**real.DIFFERENCES, version: diffs})
    monkeypatch.setattr(releases, "family_module",
                        lambda f, part: fake if (f, part) == (family, "releases") else family_module(f, part))


def test_two_families_declaring_one_name_differently_are_refused(monkeypatch):
    gn = family_module("group_norm", "releases").DIFFERENCES["3.2.0"][0]
    _with_differences(monkeypatch, "group_norm", "3.2.0", (dataclasses.replace(gn, why="other words"),))
    with pytest.raises(ValueError, match="x-rank-message-wording"):
        releases._assemble("3.2.0")


def test_a_family_naming_another_family_s_rule_is_refused(monkeypatch):
    gn = family_module("group_norm", "releases").DIFFERENCES["3.2.0"][0]
    _with_differences(monkeypatch, "group_norm", "3.2.0", (gn.for_rules("group_norm", "layer_norm"),))
    with pytest.raises(ValueError, match="other families"):
        releases._assemble("3.2.0")


def test_contradicting_orders_are_refused():
    assert releases._merge_order([["a", "b"], ["b", "c"]]) == ["a", "b", "c"]
    with pytest.raises(ValueError, match="contradicting"):
        releases._merge_order([["a", "b"], ["b", "a"]])
