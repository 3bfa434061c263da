"""The comparator must see a difference in any single cell, and classify cases honestly."""

import dataclasses

import pytest

from paddle_spmd_port import DistAttr, ProcessMesh, SpmdResult
from paddle_spmd_port.cases.grid import grid_for, sample
from paddle_spmd_port.compare import compare, outcome_cells
from paddle_spmd_port.outcome import ErrorInfo, Outcome, normalize_message, run_port


def _mutations(result: SpmdResult):
    """Every way of changing exactly one cell of a result."""
    other_mesh = ProcessMesh((7,))
    for side in ("inputs", "outputs"):
        attrs = list(getattr(result, side))
        for i, a in enumerate(attrs):
            for changed in (
                dataclasses.replace(a, dims_mapping=a.dims_mapping + (-1,)),
                dataclasses.replace(a, partial_dims=a.partial_dims ^ {5}),
                dataclasses.replace(a, mesh=None if a.mesh is not None else other_mesh),
            ):
                new = list(attrs)
                new[i] = changed
                yield dataclasses.replace(result, **{side: tuple(new)})


@pytest.mark.parametrize("rule", ["batch_norm", "layer_norm_reverse", "layer_norm_grad", "batch_norm_grad"])
def test_every_single_cell_change_is_a_mismatch(rule):
    case = next(c for c in sample(list(grid_for(rule)), 50, seed=1) if run_port(c).result is not None)
    port = run_port(case)
    assert compare(case.spec, port, port).verdict == "match"
    n = 0
    for mutated in _mutations(port.result):
        cmp = compare(case.spec, port, Outcome(result=mutated))
        assert cmp.verdict == "mismatch" and len(cmp.diffs) == 1
        n += 1
    assert n == 3 * (len(case.spec.result_inputs) + len(case.spec.result_outputs))


def test_error_cells():
    case = next(iter(grid_for("layer_norm")))
    port = run_port(case)
    err = Outcome(error=ErrorInfo("ValueError", "boom"))
    assert compare(case.spec, port, err).verdict == "mismatch"
    assert compare(case.spec, err, err).verdict == "both-raise-same"
    assert compare(case.spec, err, Outcome(error=ErrorInfo("NotImplementedError", "boom"))).verdict == "mismatch"
    assert compare(case.spec, port, Outcome(crash="signal 11 (SIGSEGV)")).verdict == "native-crash"
    invalid = Outcome(error=ErrorInfo("ValueError", "x: ...", port_invalid=True))
    assert compare(case.spec, invalid, port).verdict == "port-rejects-invalid"
    assert compare(case.spec, port, Outcome(unreachable="no route")).verdict == "unreachable"


def test_missing_output_is_a_difference():
    case = next(iter(grid_for("layer_norm")))
    port = run_port(case)
    short = dataclasses.replace(port.result, outputs=port.result.outputs[:-1])
    cmp = compare(case.spec, port, Outcome(result=short))
    assert cmp.verdict == "mismatch" and len(cmp.diffs) == 3
    assert len(outcome_cells(case.spec, port)) == case.spec.n_cells


def test_normalize_message_strips_paddle_decorations():
    raw = ("(InvalidArgument) The ndim of x in batch_norm should be greater than 1, but got [1].\n"
           "  [Hint: Expected x_ndim >= 2, but received x_ndim:1 < 2:2.] (at /paddle/phi/x.cc:78)\n")
    assert normalize_message(raw) == "The ndim of x in batch_norm should be greater than 1, but got [1]."
    assert DistAttr((0,)).mesh is None
