"""ops/kit/checks.rule and ops/registry: a rule is declared once where it is defined, the registry
builds every profile from the family folders, and the answer's mesh check runs in the registered
function. Each declaration check is shown to catch a broken declaration."""

from __future__ import annotations

import inspect
import types

import pytest

from paddle_spmd_port import DistTensorSpec, InvalidSpecError, ProcessMesh, SpmdResult
from paddle_spmd_port.ops import FAMILIES, REGISTRY_NAMES, RULES, family_module
from paddle_spmd_port.ops.kit.checks import Attrs, Specs, rule
from paddle_spmd_port.ops.registry import PROFILES, rule_function, rules_in

MESH = ProcessMesh((2, 3))
LINE = ProcessMesh((6,))


def test_every_profile_has_every_key_and_overlays_only_its_modules() -> None:
    for profile in PROFILES.values():
        assert list(profile) == list(RULES)
    for name in PROFILES:
        if name == "paddle":
            continue
        declared = {key for family in FAMILIES if (module := family_module(family, name)) is not None
                    for key in rules_in(module)}
        changed = {key for key in RULES if PROFILES[name][key] is not PROFILES["paddle"][key]}
        assert declared and changed == declared, name


def test_each_registered_function_carries_its_key_and_the_declared_signature() -> None:
    for name, profile in PROFILES.items():
        for key, fn in profile.items():
            assert fn.rule_key == key, (name, key)  # type: ignore[attr-defined]
            spec = RULES[key]
            params = inspect.signature(fn).parameters
            assert tuple(params) == spec.inputs + tuple(n for n, _ in spec.attrs), (name, key)
            assert [params[n].default for n, _ in spec.attrs] == [d for _, d in spec.attrs], (name, key)


def test_a_function_whose_parameters_differ_from_the_declaration_is_refused() -> None:
    with pytest.raises(TypeError, match="layer_norm"):
        @rule("layer_norm")
        def swapped(x: object, bias: object, scale: object, epsilon: float = 1e-5,
                    begin_norm_axis: int = 1) -> SpmdResult:
            raise AssertionError

    with pytest.raises(TypeError, match="wants"):
        @rule("layer_norm", packed=True)
        def not_packed(x: object, scale: object, bias: object, epsilon: float = 1e-5,
                       begin_norm_axis: int = 1) -> SpmdResult:
            raise AssertionError


def test_a_mesh_check_declared_wrongly_is_refused() -> None:
    with pytest.raises(TypeError, match="one input per returned attr"):
        rule("layer_norm_reverse", others=("out",), mesh_of=("x", "scale"))
    with pytest.raises(TypeError, match="one input per returned attr"):
        rule("layer_norm_reverse", others=("x",), mesh_of=("x",) * 6)
    with pytest.raises(TypeError, match="checks nothing"):
        rule("layer_norm", mesh_of=("x",) * 6)


def test_a_packed_rule_gets_the_declared_signature_keywords_and_defaults() -> None:
    seen: list[tuple[Specs, Attrs]] = []

    @rule("fast_ln", packed=True)
    def fast_ln_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
        seen.append((specs, attrs))
        return SpmdResult((), ())

    assert str(inspect.signature(fast_ln_infer_spmd)).startswith("(x: 'DistTensorSpec', scale: 'DistTensorSpec | None'")
    fast_ln_infer_spmd(1, bias=3, scale=2)
    fast_ln_infer_spmd(1, 2, 3, 0.5)
    assert seen == [((1, 2, 3), (("epsilon", 1e-5),)), ((1, 2, 3), (("epsilon", 0.5),))]
    with pytest.raises(TypeError, match="fast_ln_infer_spmd"):
        fast_ln_infer_spmd(1, 2)  # bias missing: Python's own message, naming the rule


def _spec(shape: tuple[int, ...], mapping: tuple[int, ...], mesh: ProcessMesh) -> DistTensorSpec:
    return DistTensorSpec(shape, mapping, mesh)


def test_the_answer_check_runs_in_the_registered_function_not_in_the_body() -> None:
    """layer_norm_reverse with out on a 2x3 mesh splitting along mesh dim 1 and mean/variance on a
    1-D mesh: the merged answer would put mesh dim 1 on the 1-D mesh's attrs."""
    x = _spec((8, 6, 4), (-1, -1, -1), MESH)
    out = _spec((8, 6, 4), (-1, 1, -1), MESH)
    mean, var = _spec((8, 6), (-1, -1), LINE), _spec((8, 6), (-1, -1), LINE)
    scale = bias = _spec((4,), (-1,), MESH)
    fn = rule_function("layer_norm_reverse")
    with pytest.raises(InvalidSpecError, match="mixed-mesh|mesh dim 1") as err:
        fn(x, scale, bias, out, mean, var, 1e-5, 2)
    assert err.value.kind.endswith(":mixed-mesh")
    # the body alone answers the unfit attr: the check is the registered function's
    raw = fn.__wrapped__(x, scale, bias, out, mean, var, 1e-5, 2)  # type: ignore[attr-defined]
    assert 1 in raw.outputs[1].dims_mapping and raw.outputs[1].mesh is LINE


def _module(name: str, **functions: object) -> types.ModuleType:
    module = types.ModuleType(name)
    for key, fn in functions.items():
        fn.__module__ = name  # type: ignore[attr-defined]
        setattr(module, key, fn)
    return module


def test_rules_in_refuses_a_key_of_another_family_and_a_key_twice() -> None:
    def one(specs: Specs, attrs: Attrs) -> SpmdResult:
        raise AssertionError

    other = rule("batch_norm", packed=True)(one)
    with pytest.raises(ImportError, match="does not declare"):
        rules_in(_module("paddle_spmd_port.ops.layer_norm.bogus", f=other))
    with pytest.raises(ImportError, match="twice"):
        rules_in(_module("paddle_spmd_port.ops.batch_norm.bogus", f=other, g=rule("batch_norm", packed=True)(one)))
    assert rules_in(_module("paddle_spmd_port.ops.batch_norm.bogus", f=other)) == {"batch_norm": other}


def test_epsilon_unchecked_is_declared_by_the_families() -> None:
    assert {n for n, reg in REGISTRY_NAMES.items() if reg.epsilon_unchecked} == {"instance_norm", "fused_rms_norm"}
