"""rms_norm (rules/rms_norm.py): the module's worked table, each quirk (the grad's cost-based
alignment included), each input Paddle 3.3.1 crashes on or answers garbage for rejected by name, and
a sample of the grid against Paddle (registry ``fused_rms_norm`` and the compiled caller)."""

from __future__ import annotations

import pytest

from paddle_spmd_port import DistTensorSpec, InvalidSpecError, PaddleInvalidArgument, ProcessMesh
from paddle_spmd_port.errors import ShardingConflictError
from paddle_spmd_port.ops.rms_norm.rules import align_leading_axes
from paddle_spmd_port.rules import (
    get_spmd_rule,
    rms_norm_grad_infer_spmd,
    rms_norm_infer_spmd,
    rms_norm_infer_spmd_reverse,
)

from .helpers import MESH_2, rep, show, spec

X3 = (8, 6, 4)
INV = (8, 6)
SCALE = (4,)


def rev(out_dm, inv_dm, x_dm=(-1, -1, -1)):
    return rms_norm_infer_spmd_reverse(spec(X3, x_dm), rep(SCALE), spec(X3, out_dm), spec(INV, inv_dm))


def grad(x_dm, inv_dm=(-1, -1), og_dm=(-1, -1, -1), **partials):
    return rms_norm_grad_infer_spmd(spec(X3, x_dm, partial=partials.get("x", ())), rep(SCALE),
                                    spec(INV, inv_dm, partial=partials.get("inv", ())),
                                    spec(X3, og_dm, partial=partials.get("og", ())))


@pytest.mark.parametrize("shape, x_dm, inputs, outputs", [
    (X3, (0, 1, -1), "[0,1,-1] [-1]", "[0,1,-1] [0,1]"),
    (X3, (1, -1, 0), "[1,-1,-1] [-1]", "[1,-1,-1] [1,-1]"),
    ((8,), (0,), "[-1] [-1]", "[-1] []"),
    ((8, 6, 4, 4), (-1, 0, -1, 1), "[-1,0,-1,-1] [-1]", "[-1,0,-1,-1] [-1,0,-1]"),
])
def test_forward_table(shape, x_dm, inputs, outputs):
    res = rms_norm_infer_spmd(spec(shape, x_dm, partial=()), rep((shape[-1],)))
    assert show(res) == (inputs.split(" "), outputs.split(" "))


def test_forward_clears_partial():
    res = rms_norm_infer_spmd(spec(X3, (0, -1, -1), partial=(1,)), spec(SCALE, (1,)))
    assert show(res) == (["[0,-1,-1]", "[-1]"], ["[0,-1,-1]", "[0,-1]"])


@pytest.mark.parametrize("out_dm, inv_dm, x, invvar", [
    ((0, -1, -1), (-1, 1), "[0,1,-1]", "[0,1]"),
    ((-1, -1, 1), (0, -1), "[0,-1,-1]", "[0,-1]"),
    ((-1, -1, 0), (0, -1), "[-1,-1,-1]", "[-1,-1]"),  # out's '1' axis takes mesh dim 0 from invvar
    ((0, -1, 1), (-1, 1), "[0,-1,-1]", "[0,-1]"),
])
def test_reverse_table(out_dm, inv_dm, x, invvar):
    ins, outs = show(rev(out_dm, inv_dm))
    assert ins == [x, "[-1]"] and outs == [x, invvar]


def test_reverse_ignores_x_and_clears_partial():
    a = rms_norm_infer_spmd_reverse(spec(X3, (0, 1, -1), partial=()), spec(SCALE, (0,)),
                                    spec(X3, (0, -1, -1), partial=(1,)), spec(INV, (-1, -1), partial=(1,)))
    assert show(a) == (["[0,-1,-1]", "[-1]"], ["[0,-1,-1]", "[0,-1]"])


def test_reverse_conflict_raises_like_paddle():
    with pytest.raises(ShardingConflictError, match="Sharded by two different mesh dimension"):
        rev((0, 1, -1), (1, 0))


@pytest.mark.parametrize("x_dm, inv_dm, og_dm, aligned, partial", [
    ((0, 1, -1), (-1, -1), (-1, -1, -1), "[0,1,-1]", "{0,1}"),
    ((0, -1, 1), (-1, -1), (-1, -1, -1), "[0,1,-1]", "{0,1}"),  # the last axis' split moves to axis 1
    ((-1, -1, -1), (0, 1), (-1, -1, -1), "[0,1,-1]", "{0,1}"),
    ((-1, -1, -1), (-1, -1), (1, 0, -1), "[0,1,-1]", "{0,1}"),  # mesh dim 0 goes to the cheaper axis i
    ((0, -1, -1), (1, -1), (-1, 0, -1), "[0,1,-1]", "{0,1}"),
    ((0, -1, -1), (0, -1), (0, -1, -1), "[0,-1,-1]", "{0}"),  # every tensor agrees: kept
])
def test_grad_alignment_table(x_dm, inv_dm, og_dm, aligned, partial):
    res = grad(x_dm, inv_dm, og_dm)
    x, _scale, inv, og = (str(a) for a in res.inputs)
    assert x == og == aligned and inv == aligned.rsplit(",", 1)[0] + "]"
    assert str(res.outputs[0]) == aligned and str(res.outputs[1]) == f"[-1] P{partial}"


def test_grad_clears_partial_before_aligning():
    res = grad((0, -1, -1), og_dm=(-1, -1, -1), x=(1,), inv=(1,), og=(0,))
    assert show(res) == (["[0,-1,-1]", "[-1]", "[0,-1]", "[0,-1,-1]"], ["[0,-1,-1]", "[-1] P{0}"])


def test_grad_keeps_scale_rank():
    """rms-grad-scale: scale and scale_grad keep the incoming rank (all -1)."""
    res = rms_norm_grad_infer_spmd(spec(X3, (0, -1, -1)), rep((4, 3)), rep(INV), rep(X3))
    assert str(res.inputs[1]) == "[-1,-1]" and str(res.outputs[1]) == "[-1,-1] P{0}"


def test_alignment_costs_skip_axes_shorter_than_the_mesh_dim():
    """An axis shorter than the mesh dim costs infinity; with no finite cost the mesh dim stays replicated."""
    out = align_leading_axes([(-1, -1, 0), (-1, -1), (-1, -1, -1)], [(2, 3, 8), (2, 3), (2, 3, 8)],
                             ["ijk", "ij", "ijk"], "ij", (4,))
    assert out == [(-1, -1, -1), (-1, -1), (-1, -1, -1)]


def test_alignment_reads_every_coshard_member():
    """rms-grad-coshard: both members of x's co-shard split axis 0, so mesh dim 0 takes it."""
    mesh = ProcessMesh((2, 2))
    res = rms_norm_grad_infer_spmd(DistTensorSpec((8, 6), ((1, 0), -1), mesh), rep((6,), mesh), rep((8,), mesh),
                                   rep((8, 6), mesh))
    assert str(res.inputs[0]) == "[0,-1]"


# --------------------------------------------------------------------------- Paddle's own checks
SRC = "[/paddle/paddle/phi/infermeta/spmd_rules/rms_norm.cc]"


@pytest.mark.parametrize("call, message", [
    (lambda: rms_norm_infer_spmd(rep(X3), None), f"{SRC} [33] The Tensor [scale]'s rank [1] and dims_mapping "
     "size [0] are not matched."),
    (lambda: rms_norm_infer_spmd(DistTensorSpec(X3, (), None), rep(SCALE)),
     f"{SRC} [32] The Tensor [x]'s rank [3] and dims_mapping size [0] are not matched."),
    (lambda: rms_norm_infer_spmd_reverse(rep(X3), None, rep(X3), rep(INV)),
     f"{SRC} [85] The Tensor [scale]'s rank [1] and dims_mapping size [0] are not matched."),
    (lambda: rms_norm_grad_infer_spmd(rep(X3), None, rep(INV), rep(X3)),
     f"{SRC} [147] The Tensor [scale]'s rank [1] and dims_mapping size [0] are not matched."),
    (lambda: rms_norm_grad_infer_spmd(rep(X3), rep(SCALE), rep(INV), rep(INV)),
     "The Tensor x's rank [3] and Tensor out_grad's rank [2] are not matched."),
    (lambda: rms_norm_grad_infer_spmd(rep((8,)), rep((8,)), rep(()), rep((8,))), "align_axis is empty"),
])
def test_paddle_checks(call, message):
    with pytest.raises(PaddleInvalidArgument) as err:
        call()
    assert str(err.value) == message


# --------------------------------------------------------------------------- crash / garbage inputs, rejected by name
@pytest.mark.parametrize("call, name", [
    (lambda: rms_norm_infer_spmd(rep(()), rep(SCALE)), "x"),  # Paddle: basic_string::_M_create
    (lambda: rms_norm_infer_spmd(rep(X3), rep((4, 3))), "scale"),  # Paddle answers [-1]
    (lambda: rms_norm_infer_spmd_reverse(rep(X3), rep(SCALE), rep((8, 6, 4, 2)), rep((8, 6, 4))), "out"),
    (lambda: rms_norm_infer_spmd_reverse(rep(X3), rep(SCALE), rep(X3), rep((8,))), "invvar"),
    (lambda: rms_norm_grad_infer_spmd(rep(X3), rep(SCALE), rep((8,)), rep(X3)), "invvar"),  # garbage answer
    (lambda: rms_norm_grad_infer_spmd(spec(X3, (1, -1, -1)), rep(SCALE), rep(INV, MESH_2), rep(X3)), "invvar"),
    (lambda: rms_norm_grad_infer_spmd(spec(X3, (1, -1, -1)), rep(SCALE, MESH_2), rep(INV), rep(X3)), "scale"),
])
def test_crash_or_garbage_inputs_rejected(call, name):
    with pytest.raises(InvalidSpecError) as err:
        call()
    assert err.value.kind.startswith(f"invalid-spec:{name}:")


def test_partial_dim_outside_the_mesh_rejected_before_paddles_checks():
    """Paddle crashes building such an input, before its rank-vs-dims_mapping check would raise."""
    with pytest.raises(InvalidSpecError) as err:
        rms_norm_infer_spmd(spec(X3, (-1, -1, -1), partial=(2,)), None)
    assert err.value.kind == "invalid-spec:x:partial-range"


def test_registry_name_runs_forward_and_reverse():
    rule = get_spmd_rule("fused_rms_norm")
    assert rule.registered_in_paddle
    assert show(rule.infer_forward(spec(X3, (0, 1, -1)), rep(SCALE), 1e-5))[1] == ["[0,1,-1]", "[0,1]"]
    assert show(rule.infer_backward(rep(X3), rep(SCALE), spec(X3, (0, -1, -1)), spec(INV, (-1, 1)), 1e-5)) \
        == show(rev((0, -1, -1), (-1, 1)))


def test_registry_object_needs_a_float_epsilon():
    """Paddle's fused_rms_norm / instance_norm objects segfault without epsilon and raise a cast
    error for an int one."""
    rule = get_spmd_rule("fused_rms_norm")
    with pytest.raises(InvalidSpecError) as err:
        rule.infer_forward(rep(X3), rep(SCALE))
    assert err.value.kind == "invalid-spec:epsilon:missing"
    with pytest.raises(PaddleInvalidArgument, match="Attribute cast error"):
        rule.infer_backward(rep(X3), rep(SCALE), rep(X3), rep(INV), 1)
    with pytest.raises(PaddleInvalidArgument, match="Attribute cast error"):
        get_spmd_rule("instance_norm").infer_forward(rep((8, 6, 4, 4)), None, None, epsilon=0)
    assert rms_norm_infer_spmd(rep(X3), rep(SCALE), 1) == rule.infer_forward(rep(X3), rep(SCALE), 1.0)


# --------------------------------------------------------------------------- against Paddle
@pytest.mark.native
@pytest.mark.parametrize("rule, backend", [("rms_norm", "registry"), ("rms_norm_reverse", "registry"),
                                           ("rms_norm", "compiled"), ("rms_norm_reverse", "compiled"),
                                           ("rms_norm_grad", "compiled")])
def test_port_equals_paddle_on_a_grid_sample(rule, backend):
    from .native_sample import assert_sample_matches

    assert_sample_matches(rule, backend)
