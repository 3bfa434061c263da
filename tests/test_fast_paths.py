"""The rules' fast path answers exactly what the full checks answer.

Each preamble (ops/<family>/checks.py) first takes ready input at once (ops/kit/tensor.valid_inputs:
every spec of the class itself, on a mesh and valid; attributes of their usual exact types; ranks as
the op needs) and leaves anything else to the full checks. Here every rule in every profile
runs twice on the same input, once as shipped and once with the fast path switched off, and the two
outcomes (answer, or error class, message and kind) must be equal: on a sample of every grid
(corner sets included) and on the fuzz's calls. A fast path that takes too much is caught (the
last test plants one).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from paddle_spmd_port import DistTensorSpec, ProcessMesh
from paddle_spmd_port.errors import ArgumentTypeError
from paddle_spmd_port.grid import GRIDS, grid_for, sample
from paddle_spmd_port.ops import FAMILIES, RULES, family_module
from paddle_spmd_port.ops.kit import tensor as _tensor
from paddle_spmd_port.ops.kit.tensor import as_input, valid_inputs
from paddle_spmd_port.rules import PROFILES
from tests.helpers import load_tool

fuzz = load_tool("fuzz")


#: Every family's preambles (the modules that call valid_inputs).
CHECKS = [m for m in (family_module(f, "checks") for f in FAMILIES) if m is not None and hasattr(m, "valid_inputs")]


def patch_valid_inputs(mp: pytest.MonkeyPatch, fn: Any) -> None:
    for module in CHECKS:
        mp.setattr(module, "valid_inputs", fn)


@contextlib.contextmanager
def full_checks_only() -> Iterator[None]:
    """Every preamble takes its full checks (the fast path never applies)."""
    with pytest.MonkeyPatch.context() as mp:
        patch_valid_inputs(mp, lambda specs, names: None)
        yield


def outcome(fn: Any) -> Any:
    try:
        return "answer", fn()
    except Exception as exc:
        return type(exc), str(exc), getattr(exc, "kind", None)


def both(fn: Any) -> tuple[Any, Any]:
    fast = outcome(fn)
    with full_checks_only():
        full = outcome(fn)
    return fast, full


@pytest.mark.parametrize("profile", tuple(PROFILES))
@pytest.mark.parametrize("rule", sorted(GRIDS))
def test_grid_sample_same_outcome(rule, profile):
    cases = sample(list(grid_for(rule)), 150, seed=11)
    for case in cases:
        fast, full = both(lambda case=case: case.call_port(profile))
        assert fast == full, case.describe()


@settings(max_examples=300, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(fuzz.calls())
def test_fuzz_same_outcome(call):
    fast, full = both(call.invoke)
    assert fast == full, call.describe()


@pytest.mark.parametrize("rule", sorted(GRIDS))
def test_valid_inputs_are_as_inputs(rule):
    names = tuple((n, n in RULES[rule].optional) for n in RULES[rule].inputs)
    taken = 0
    for case in sample(list(grid_for(rule)), 200, seed=5):
        got = valid_inputs(case.inputs, names)
        if got is not None:
            taken += 1
            assert got == [as_input(s, n, optional=o) for s, (n, o) in zip(case.inputs, names, strict=True)]
    assert taken > 50  # the fast path does apply to the grid's ordinary cases


def test_valid_on_mesh_flag():
    mesh = ProcessMesh((2, 3))
    assert DistTensorSpec((4, 6), (0, -1), mesh, frozenset({1})).valid_on_mesh
    assert DistTensorSpec((4, 6), ((0, 1), -1), mesh).valid_on_mesh                 # co-shard
    assert not DistTensorSpec((4, 6), (0, -1), mesh, frozenset({0})).valid_on_mesh  # partial on a splitting dim
    assert not DistTensorSpec((4, 6), (0, 0), mesh).valid_on_mesh                   # mesh dim twice
    assert not DistTensorSpec((4, 6), ((0, 1), 1), mesh).valid_on_mesh              # ... in a co-shard too
    assert not DistTensorSpec((4,), (), None).valid_on_mesh                          # valid, but no mesh
    assert not DistTensorSpec((4, 6), (0,), mesh).valid_on_mesh                     # wrong length
    for _ in range(2):  # the second build reads the cache of valid specs: still no float for an int
        assert DistTensorSpec((4, 6), (1, -1), mesh).valid_on_mesh
        assert DistTensorSpec((4, 6), ((1, 0), -1), mesh).valid_on_mesh
        for bad in [((4, 6), (1.0, -1)), ((4, 1.0), (1, -1)), ((4, 6), ((1, 0.0), -1)), ((4, 6), ("1", -1))]:
            with pytest.raises(ArgumentTypeError):
                DistTensorSpec(*bad, mesh)
        assert DistTensorSpec((4, 6), ((1,), ()), mesh).dims_mapping == (1, -1)  # short forms still normalised
        # bools are integers, as Paddle's TensorDistAttr.dims_mapping and DistTensorSpec take them
        # (True is 1): stored as exact ints, so the spec equals the one built from ints
        built = DistTensorSpec((4, True), (True, -1), mesh, [False])
        assert built == DistTensorSpec((4, 1), (1, -1), mesh, frozenset({0}))
        assert {type(v) for v in built.shape + built.dims_mapping + tuple(built.partial_dims)} == {int}


def test_a_fast_path_that_takes_too_much_is_caught(monkeypatch):
    """Planted defect: valid_inputs takes every spec of the class (invalid ones too)."""
    def too_lenient(specs, names):
        out = []
        for spec, (name, optional) in zip(specs, names, strict=True):
            if isinstance(spec, DistTensorSpec):
                out.append(_tensor.RuleInput(name, spec.ndim, spec.dims_mapping, spec.partial_dims, spec.mesh, False))
            elif spec is None and optional:
                out.append(as_input(None, name, optional=True))
            else:
                return None
        return out

    patch_valid_inputs(monkeypatch, too_lenient)
    differ = 0
    for case in sample(list(grid_for("layer_norm")), 150, seed=11):
        fast = outcome(lambda case=case: case.call_port())
        with full_checks_only():
            full = outcome(lambda case=case: case.call_port())
        differ += fast != full
    assert differ > 0
