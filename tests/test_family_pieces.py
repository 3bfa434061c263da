"""The families' typed parts (``family_part``: the grid plan, the release notes, ...) and what
parity assembles from them: each part is checked where it is read, and each check can fail."""

from __future__ import annotations

import dataclasses
import re
import types
from pathlib import Path

import pytest

from paddle_spmd_port import grid, ops, releases
from paddle_spmd_port.ops import FAMILIES, RULES, family_part
from paddle_spmd_port.ops.kit.grid import GridPlan
from paddle_spmd_port.ops.kit.kernel import KernelModels
from paddle_spmd_port.ops.kit.launch import LaunchPlan
from paddle_spmd_port.ops.kit.native import NativeRoutes
from paddle_spmd_port.ops.kit.releases import KnownDifference, ReleaseNotes

REPO = Path(__file__).resolve().parent.parent


def test_every_rule_has_a_grid_from_its_family_in_rule_order():
    assert list(grid.GRIDS) == list(RULES)
    for family in FAMILIES:
        plan = grid.GRID_PLANS[family]  # the family's own, or the kit's default
        assert set(plan.grids) == set(FAMILIES[family].keys)


def _planted(monkeypatch, family: str, module_name: str, **names: object) -> None:
    """ops/<family>/<module_name>.py reads as a module binding ``names`` (parts read afresh)."""
    fake = types.ModuleType(f"fake_{module_name}")
    for name, value in names.items():
        setattr(fake, name, value)
    real = ops.family_module
    monkeypatch.setattr(ops, "family_module",
                        lambda f, part: fake if (f, part) == (family, module_name) else real(f, part))
    monkeypatch.setattr(ops, "_PARTS", {})


def test_a_grid_plan_missing_a_key_is_refused(monkeypatch):
    real = family_part("layer_norm", GridPlan)
    plan = dataclasses.replace(real, grids={k: v for k, v in real.grids.items() if k != "layer_norm_grad"})
    _planted(monkeypatch, "layer_norm", "grid", GRID=plan)
    with pytest.raises(ImportError, match=r"ops/layer_norm/grid.py: GRID: grids covers .*layer_norm_grad"):
        family_part("layer_norm", GridPlan)


@pytest.mark.parametrize("names, message", [
    ({}, "must bind GRID to a GridPlan; it binds NoneType"),
    ({"GRID": {"layer_norm": None}}, "must bind GRID to a GridPlan; it binds dict"),
])
def test_a_part_not_bound_or_of_another_type_is_refused(monkeypatch, names, message):
    _planted(monkeypatch, "layer_norm", "grid", **names)
    with pytest.raises(ImportError, match=f"ops/layer_norm/grid.py {message}"):
        family_part("layer_norm", GridPlan)


def test_a_part_naming_another_family_s_keys_is_refused(monkeypatch):
    _planted(monkeypatch, "fast_ln", "native", NATIVE=NativeRoutes(pir_ops={"layer_norm": "layer_norm"}))
    with pytest.raises(ImportError, match=r"ops/fast_ln/native.py: NATIVE: pir_ops names \['layer_norm'\]"):
        family_part("fast_ln", NativeRoutes)


def test_a_replicated_route_without_its_outputs_is_refused():
    family = FAMILIES["sync_batch_norm"]
    real = family_part("sync_batch_norm", NativeRoutes)
    assert real is not None and real.problems(family) == []
    assert "needs replicated_outputs" in dataclasses.replace(real, replicated_outputs=None).problems(family)[0]


def test_a_family_without_a_part_module_has_none_and_the_rooms_take_the_defaults(monkeypatch):
    real = ops.family_module
    monkeypatch.setattr(ops, "family_module", lambda f, part: None if f == "fast_ln" else real(f, part))
    monkeypatch.setattr(ops, "_PARTS", {})
    for kind in (GridPlan, NativeRoutes, ReleaseNotes, KernelModels, LaunchPlan):
        assert family_part("fast_ln", kind) is None
    assert releases.family_releases("fast_ln") == ReleaseNotes()


def test_every_family_part_is_read_without_problems():
    for family in FAMILIES:
        for kind in (GridPlan, NativeRoutes, ReleaseNotes, KernelModels, LaunchPlan):
            part = family_part(family, kind)
            assert part is None or part.problems(FAMILIES[family]) == [], (family, kind.__name__)


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
            declared = list(releases.family_releases(family).differences.get(profile.version, ()))
            for rule in FAMILIES[family].keys:
                want = [d.name for d in declared if rule in d.rules]
                assert [d.name for d in profile.differences_for(rule, coshard=True)] == want, (profile.version, rule)


def _with_differences(monkeypatch, family: str, version: str, diffs: tuple[KnownDifference, ...]) -> None:
    """paddle_spmd_port/releases.py reads ``family``'s notes with ``diffs`` as its differences of ``version``
    (planted past ReleaseNotes.problems, to show the assembly's own check)."""
    real = releases.family_releases(family)
    fake = dataclasses.replace(real, differences={**real.differences, version: diffs})
    monkeypatch.setattr(releases, "family_releases", lambda f: fake if f == family else family_part(f, ReleaseNotes))


def test_two_families_declaring_one_name_differently_are_refused(monkeypatch):
    gn = releases.family_releases("group_norm").differences["3.2.0"][0]
    _with_differences(monkeypatch, "group_norm", "3.2.0", (dataclasses.replace(gn, why="other words"),))
    with pytest.raises(ValueError, match="x-rank-message-wording"):
        releases._assemble("3.2.0")


def test_a_family_naming_another_family_s_rule_is_refused(monkeypatch):
    gn = releases.family_releases("group_norm").differences["3.2.0"][0]
    _with_differences(monkeypatch, "group_norm", "3.2.0", (gn.for_rules("group_norm", "layer_norm"),))
    with pytest.raises(ValueError, match="other families"):
        releases._assemble("3.2.0")


def test_release_notes_naming_another_family_s_rule_are_refused_where_read(monkeypatch):
    gn = releases.family_releases("group_norm").differences["3.2.0"][0]
    _planted(monkeypatch, "group_norm", "releases",
             RELEASES=ReleaseNotes(differences={"3.2.0": (gn.for_rules("group_norm", "layer_norm"),)}))
    with pytest.raises(ImportError, match=r"ops/group_norm/releases.py: RELEASES: 3.2.0: .*\['layer_norm'\]"):
        family_part("group_norm", ReleaseNotes)


def test_contradicting_orders_are_refused():
    assert releases._merge_order([["a", "b"], ["b", "c"]]) == ["a", "b", "c"]
    with pytest.raises(ValueError, match="contradicting"):
        releases._merge_order([["a", "b"], ["b", "a"]])
