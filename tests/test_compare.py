"""The comparator must see a difference in any single cell, and classify cases honestly."""

import dataclasses

import pytest

from paddle_spmd_port import DistAttr, ProcessMesh, SpmdResult
from paddle_spmd_port.compare import compare, outcome_cells
from paddle_spmd_port.grid import grid_for, sample
from paddle_spmd_port.outcome import ErrorInfo, Outcome, normalize_message, port_outcome


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
    case = next(c for c in sample(list(grid_for(rule)), 50, seed=1) if port_outcome(c).result is not None)
    port = port_outcome(case)
    assert compare(case.spec, port, port).verdict == "match"
    n = 0
    for mutated in _mutations(port.result):
        cmp = compare(case.spec, port, Outcome(result=mutated))
        assert cmp.verdict == "mismatch" and len(cmp.diffs) == 1
        n += 1
    assert n == 3 * (len(case.spec.result_inputs) + len(case.spec.result_outputs))


def test_error_cells():
    case = next(iter(grid_for("layer_norm")))
    port = port_outcome(case)
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
    port = port_outcome(case)
    short = dataclasses.replace(port.result, outputs=port.result.outputs[:-1])
    cmp = compare(case.spec, port, Outcome(result=short))
    assert cmp.verdict == "mismatch" and len(cmp.diffs) == 3
    assert len(outcome_cells(case.spec, port)) == case.spec.n_cells


def test_normalize_message_strips_paddle_decorations():
    raw = ("(InvalidArgument) The ndim of x in batch_norm should be greater than 1, but got [1].\n"
           "  [Hint: Expected x_ndim >= 2, but received x_ndim:1 < 2:2.] (at /paddle/phi/x.cc:78)\n")
    assert normalize_message(raw) == "The ndim of x in batch_norm should be greater than 1, but got [1]."
    assert DistAttr((0,)).mesh is None


# --- each way a comparator could go blind (tools/mutants.py's compare mutants must fail here) ---
def _first_answer(rule="layer_norm_grad"):
    case = next(c for c in grid_for(rule)
                if port_outcome(c).result is not None and port_outcome(c).result.inputs[0].mesh)
    return case, port_outcome(case)


def _with_first_input(outcome, **changes):
    res = outcome.result
    return Outcome(result=dataclasses.replace(res, inputs=(dataclasses.replace(res.inputs[0], **changes),)
                                              + res.inputs[1:]))


def _only_diff(case, port, native):
    cmp = compare(case.spec, port, native)
    assert cmp.verdict == "mismatch", cmp
    assert len(cmp.diffs) == 1, cmp.diffs
    return cmp.diffs[0].cell


def test_same_family_different_message_is_a_mismatch():
    case = next(iter(grid_for("layer_norm")))
    a = Outcome(error=ErrorInfo("ValueError", "The ndim of x in batch_norm should be greater than 1, but got [1]."))
    b = Outcome(error=ErrorInfo("ValueError", "The ndim of x in batch_norm should be less than 6, but got [6]."))
    assert _only_diff(case, a, b) == "error"
    assert compare(case.spec, a, a).verdict == "both-raise-same"


def test_same_message_different_family_is_a_mismatch():
    case = next(iter(grid_for("layer_norm")))
    msg = "Tensor Axis[i] is Sharded by two different mesh dimension [0] and [1]."
    assert _only_diff(case, Outcome(error=ErrorInfo("NotImplementedError", msg)),
                      Outcome(error=ErrorInfo("ValueError", msg))) == "error"


def test_error_against_an_answer_is_a_mismatch_whichever_side_raised():
    case, port = _first_answer()
    err = Outcome(error=ErrorInfo("ValueError", "boom"))
    assert compare(case.spec, err, port).verdict == "mismatch"
    assert compare(case.spec, port, err).verdict == "mismatch"


def test_partial_dims_alone_differ():
    case, port = _first_answer()
    assert _only_diff(case, port, _with_first_input(port, partial_dims=frozenset({0}))) == "in.x.partial"


@pytest.mark.parametrize("change", [
    lambda m: ProcessMesh(m.shape, tuple(reversed(m.process_ids)), m.dim_names),  # other processes
    lambda m: ProcessMesh(m.shape, m.process_ids, tuple(f"n{i}" for i in range(m.ndim))),  # other names
    lambda m: ProcessMesh(m.shape + (1,)),
], ids=["process-ids", "dim-names", "shape"])
def test_mesh_alone_differs(change):
    case, port = _first_answer()
    mesh = port.result.inputs[0].mesh
    other = change(mesh)
    assert other != mesh
    assert _only_diff(case, port, _with_first_input(port, mesh=other)) == "in.x.mesh"


def test_extra_attr_beyond_the_signature_is_a_mismatch():
    case, port = _first_answer()
    res = port.result
    extra = Outcome(result=dataclasses.replace(res, outputs=res.outputs + (res.outputs[0],)))
    cells = {f"out.#{len(res.outputs)}.{cell}" for cell in ("dims_mapping", "partial", "mesh")}
    for a, b in ((port, extra), (extra, port)):
        cmp = compare(case.spec, a, b)
        assert cmp.verdict == "mismatch" and {d.cell for d in cmp.diffs} == cells


def test_only_answers_errors_and_predicted_crashes_count_as_compared():
    from paddle_spmd_port.compare import CLASSES, COMPARED

    assert COMPARED == {"match", "both-raise-same", "port-rejects-invalid", "known-difference", "native-varies",
                        "mismatch"}
    assert set(CLASSES) - COMPARED == {"native-crash", "undecodable", "unreachable", "not-run", "release-lacks"}


def test_a_native_answer_that_varies_is_its_own_class_with_both_answers_never_a_mismatch():
    """Two runs of one case that answered differently (Paddle read memory it never set) are
    *native-varies* whatever either answer is: as the port's own answer or as another, never a mismatch;
    both answers stay in the outcome's text and JSON. A mutant compare that ignores ``varies`` calls the
    second pair a mismatch."""
    case, port = _first_answer()
    res = port.result
    other = Outcome(result=dataclasses.replace(res, outputs=res.outputs[:-1]))
    for first, second in ((port, other), (other, port)):
        both = dataclasses.replace(first, varies=second)
        cmp = compare(case.spec, port, both)
        assert cmp.verdict == "native-varies" and not cmp.diffs
        assert str(second) in str(both) and str(first) in str(both)
        assert Outcome.from_json(both.to_json()) == both
    assert compare(case.spec, port, other).verdict == "mismatch"  # the same answer alone: a mismatch


def test_two_runs_outcome_is_the_same_whichever_ran_first():
    """The pool's merge of a case's two runs (native/pool.py: varied): equal runs give the outcome
    itself; different ones the same pair in either order; a second run that gave no answer keeps the
    first answer, marked not re-checked (the run fails closed on it: test_determinism)."""
    from paddle_spmd_port.native.pool import varied

    case, port = _first_answer()
    other = Outcome(crash="signal 11 (SIGSEGV)")
    assert varied(port, port) is port
    assert varied(port, other) == varied(other, port) and varied(port, other).varies is not None
    unchecked = varied(port, Outcome(not_run="interrupted"))
    assert unchecked.not_rechecked and unchecked.varies is None
    assert dataclasses.replace(unchecked, not_rechecked=None) == port


def test_an_undecodable_native_answer_is_uncompared_and_never_a_match_or_a_mismatch():
    case, port = _first_answer()
    garbage = Outcome.unreadable(ValueError("a count of 9 where 2 tokens are left"), "R 9 A,1")
    for native in (garbage, Outcome.from_json(garbage.to_json())):  # (read back from a per-case file too)
        assert native.status == "undecodable" and native.raw == "R 9 A,1"
        assert compare(case.spec, port, native).verdict == "undecodable"
        assert "R 9 A,1" in str(native) and "a count of 9" in str(native)
    # a port error that is no invalid-input verdict: still nothing of Paddle's to hold it against
    raises = Outcome(error=ErrorInfo("ValueError", "x"))
    assert compare(case.spec, raises, garbage).verdict == "undecodable"


def test_an_undecodable_answer_to_input_the_port_rejects_as_invalid_is_what_the_port_predicted():
    invalid = Outcome(error=ErrorInfo("ValueError", "bad mapping", port_invalid=True))
    garbage = Outcome.unreadable("a mesh of shape (94285896066016,)", b"R 1 A,1,94285896066016,1,0")
    case, _ = _first_answer()
    assert compare(case.spec, invalid, garbage).verdict == "port-rejects-invalid"
    assert compare(case.spec, invalid, garbage, input_invalid=True).verdict == "port-rejects-invalid"
    # the input is known to be valid: the port's refusal cannot be checked against garbage
    assert compare(case.spec, invalid, garbage, input_invalid=False).verdict == "undecodable"


def test_raw_text_never_raises_and_is_bounded():
    from paddle_spmd_port.outcome import RAW_KEPT, raw_text

    class Broken:
        def __str__(self):
            raise RuntimeError("no text")

        def __repr__(self):
            raise RuntimeError("no repr either")

    assert "Broken whose text raised RuntimeError" in raw_text(Broken())
    assert raw_text(b"R \xff\xfe 1") == "R \\xff\\xfe 1"
    long = raw_text("R " + "7," * 10_000)
    assert len(long) < RAW_KEPT + 40 and long.endswith("(20,002 characters)")


def test_error_families_follow_pythons_classes():
    from paddle_spmd_port.errors import InvalidSpecError, PaddleInvalidArgument, ShardingConflictError
    from paddle_spmd_port.outcome import family_of

    assert family_of(ShardingConflictError("x")) == "NotImplementedError"
    assert family_of(PaddleInvalidArgument("x")) == "ValueError"
    info = ErrorInfo.from_exception(InvalidSpecError("x: bad", kind="invalid-spec:x"))
    assert (info.family, info.port_invalid, info.kind) == ("ValueError", True, "invalid-spec:x")
    assert not ErrorInfo.from_exception(PaddleInvalidArgument("y")).port_invalid


def test_normalize_message_cuts_the_hint_without_a_known_prefix():
    # an error type the prefix list does not know: the hint is cut where it starts, not by line choice
    raw = "(Fatal) Something broke.\n  [Hint: Expected a == b, but received a:1 != b:2.] (at /paddle/y.cc:9)\n"
    assert normalize_message(raw) == "(Fatal) Something broke."
    assert normalize_message("boom [Hint: Expected x.] (at a.cc:3)") == "boom"


# --------------------------------------------------------------------------- port rejects a valid input
def _bn_case(x_mapping, b_format="NCHW"):
    from paddle_spmd_port.case import Case
    from paddle_spmd_port.types import DistTensorSpec, ProcessMesh

    mesh = ProcessMesh((2, 3))
    x = DistTensorSpec((8, 6, 4, 4), tuple(x_mapping), mesh)
    ch = DistTensorSpec((6,), (-1,), mesh)
    return Case("batch_norm", mesh, (x, ch, ch, ch, ch), (("data_format", b_format),))


def test_port_rejecting_a_valid_input_that_paddle_answers_is_a_mismatch():
    """Mutant guard (tools/mutants.py ln-begin-norm-axis-strict): a port that wrongly calls valid
    input invalid must not hide in 'port rejects invalid' when Paddle answers it well formed."""
    from paddle_spmd_port.errors import InvalidSpecError
    from paddle_spmd_port.outcome import ErrorInfo
    from paddle_spmd_port.validity import input_problem

    case = _bn_case([0, 1, -1, -1])
    assert input_problem(case) is None
    paddle = port_outcome(case)  # a well-formed answer, standing in for Paddle's
    rejected = Outcome(error=ErrorInfo.from_exception(InvalidSpecError("x: wrongly refused")))
    assert compare(case.spec, rejected, paddle, input_invalid=False).verdict == "mismatch"
    assert compare(case.spec, rejected, paddle, input_invalid=True).verdict == "port-rejects-invalid"
    crashed = Outcome(crash="signal 11 (SIGSEGV)")
    assert compare(case.spec, rejected, crashed, input_invalid=False).verdict == "port-rejects-invalid"


def test_a_malformed_paddle_answer_never_makes_a_rejection_a_mismatch():
    import dataclasses

    from paddle_spmd_port.errors import InvalidSpecError
    from paddle_spmd_port.outcome import ErrorInfo
    from paddle_spmd_port.types import DistAttr

    case = _bn_case([0, 1, -1, -1])
    good = port_outcome(case).result
    bad_attr = DistAttr((-1, 5, -1, -1), frozenset(), good.inputs[0].mesh)  # mesh dim 5 on a 2-D mesh
    malformed = Outcome(result=dataclasses.replace(good, inputs=(bad_attr, *good.inputs[1:])))
    rejected = Outcome(error=ErrorInfo.from_exception(InvalidSpecError("x: refused")))
    assert compare(case.spec, rejected, malformed, input_invalid=False).verdict == "port-rejects-invalid"


@pytest.mark.parametrize(("mapping", "fmt", "invalid"), [
    pytest.param([0, 1, -1, -1], "NCHW", False, id="valid"),
    pytest.param([0, 0, -1, -1], "NCHW", True, id="mesh-dim-twice"),
    pytest.param([0, 2, -1, -1], "NCHW", True, id="mesh-dim-out-of-range"),
    pytest.param([0, 1, -1], "NCHW", True, id="mapping-shorter-than-rank"),
    pytest.param([0, 1, -1, -1], "CHWN", True, id="unknown-layout"),
])
def test_input_validity_is_judged_from_the_signature(mapping, fmt, invalid):
    from paddle_spmd_port.validity import input_problem

    assert (input_problem(_bn_case(mapping, fmt)) is not None) == invalid
