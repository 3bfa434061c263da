"""Case.json_text (the cases file's and the repro line's text of a case, put together from kept
texts of its meshes, attribute tuples and spec values) is the text of ``json.dumps(case.to_json())``
itself; Case.describe (kept texts too) is the case's specs and attributes as they print."""

import json

import pytest

from paddle_spmd_port import DistTensorSpec, ProcessMesh
from paddle_spmd_port.case import Case
from paddle_spmd_port.grid import GRIDS, coshard_cases, grid_for, sample
from paddle_spmd_port.parity.random_cases import random_cases
from paddle_spmd_port.parity.repro import one_line_repro


def _plain(case: Case) -> str:
    return json.dumps(case.to_json(), separators=(",", ":"))


def _plain_describe(case: Case) -> str:
    parts = [f"{n}={'None' if s is None else s}" for n, s in zip(case.spec.inputs, case.inputs, strict=True)]
    parts += [f"{k}={v!r}" for k, v in case.attrs]
    return f"{case.rule} mesh={case.mesh} " + " ".join(parts)


@pytest.mark.parametrize("rule", list(GRIDS))
def test_json_text_is_the_json_of_every_kind_of_case(rule):
    cases = sample(list(grid_for(rule)), 150, 0) + list(coshard_cases(rule))[:60] + random_cases(rule, 60, 3)
    for case in cases:
        assert case.describe() == _plain_describe(case), case.case_id
        assert case.json_text() == _plain(case), case.case_id
        assert Case.from_json(json.loads(case.json_text())) == case


def test_json_text_follows_a_mesh_it_has_not_seen_and_odd_values():
    mesh = ProcessMesh((2, 2), (3, 1, 0, 2), ("a\u00e9", 'q"t'))
    other = ProcessMesh((2,))
    case = Case("layer_norm", mesh, (DistTensorSpec((4, 6), (0, -1), mesh, frozenset({1})), None,
                                     DistTensorSpec((6,), (-1,), other)),
                (("epsilon", 1e-7), ("begin_norm_axis", 1)), "id \"with\" quotes \u00e9")
    assert case.json_text() == _plain(case)
    assert case.describe() == _plain_describe(case)
    line = one_line_repro(case, "pir")
    assert line.endswith("'" + _plain(case) + "'") and " --backend pir --case-json " in line
    again = Case("layer_norm", mesh, case.inputs, (("epsilon", 1e-5), ("begin_norm_axis", 1)), "x")
    assert again.json_text() == _plain(again)  # another attrs tuple: its own text, not a kept one


def test_attr_values_follow_each_attrs_tuple():
    mesh = ProcessMesh((2,))
    x = DistTensorSpec((4, 6), (0, -1), mesh)
    attrs = (("begin_norm_axis", 1),)
    a = Case("layer_norm", mesh, (x, None, None), attrs)
    b = Case("layer_norm", mesh, (x, None, None), (("epsilon", 0.5), ("begin_norm_axis", 1)))
    assert a.attr_values() == a.attr_values() == (1e-5, 1)
    assert b.attr_values() == (0.5, 1)
    as_list = Case("layer_norm", mesh, (x, None, None), [("begin_norm_axis", 2)])  # type: ignore[arg-type]
    assert as_list.attr_values() == (1e-5, 2)
    x4 = DistTensorSpec((2, 4, 6, 6), (0, -1, -1, -1), mesh)
    for rule, inputs, values in (("layer_norm", (x, None, None), (1e-5, 1)),
                                 ("instance_norm", (x4, None, None), (1e-5,)),
                                 ("layer_norm", (x, None, None), (1e-5, 1))):
        assert Case(rule, mesh, inputs, ()).attr_values() == values  # one () for every rule: its own defaults


def test_case_checks_its_inputs_and_attribute_names():
    mesh = ProcessMesh((2,))
    x = DistTensorSpec((4, 6), (0, -1), mesh)
    with pytest.raises(ValueError, match="needs 3 inputs"):
        Case("layer_norm", mesh, (x,), ())
    with pytest.raises(ValueError, match="has no attribute 'groups'"):
        Case("layer_norm", mesh, (x, None, None), (("groups", 2),))
    with pytest.raises(ValueError, match="unknown rule"):
        Case("no_such_rule", mesh, (x,), ())


@pytest.mark.parametrize("rule", ["batch_norm_grad", "layer_norm_grad", "group_norm", "rms_norm_reverse"])
def test_an_answers_text_is_its_results_text(rule):
    from paddle_spmd_port.outcome import Outcome, port_outcome
    from paddle_spmd_port.types import DistAttr, SpmdResult

    answered = 0
    for case in sample(list(grid_for(rule)), 200, 1) + random_cases(rule, 40, 5):
        out = port_outcome(case)
        if out.result is None:
            continue
        answered += 1
        assert str(out) == str(out.result), case.case_id
        fresh = SpmdResult(tuple(DistAttr(a.dims_mapping, a.partial_dims, a.mesh) for a in out.result.inputs),
                           tuple(DistAttr(a.dims_mapping, a.partial_dims, None) for a in out.result.outputs))
        assert str(Outcome(result=fresh)) == str(fresh)  # attrs of their own, some without a mesh
    assert answered >= 100
