"""group_norm (rules/group_norm.py): the module's worked table, each quirk, Paddle's own checks, each
input Paddle 3.3.1 crashes on (or answers garbage for) rejected by name, the registry name, and a
sample of the grid against Paddle (registry and compiled)."""

from __future__ import annotations

import pytest

from paddle_spmd_port import DistTensorSpec, InvalidSpecError, PaddleInvalidArgument, ProcessMesh
from paddle_spmd_port.errors import ArgumentTypeError, RuleNotFoundError
from paddle_spmd_port.rules import (
    get_spmd_rule,
    group_norm_grad_infer_spmd,
    group_norm_grad_infer_spmd_base,
    group_norm_infer_spmd,
    group_norm_infer_spmd_base,
)

from .helpers import MESH_2, rep, show, spec

X4 = (8, 6, 4, 4)
C = (6,)
STAT = (8, 2)
PARAM = rep(C)


def fwd(x_dm, shape=X4, partial=(), scale=True, bias=True, **attrs):
    return group_norm_infer_spmd(spec(shape, x_dm, partial=partial), rep(C) if scale else None,
                                 rep(C) if bias else None, **attrs)


def grad(x_dm, shape=X4, *, y_dm=None, stat_dm=(-1, -1), scale: DistTensorSpec | None = PARAM,
         bias: DistTensorSpec | None = PARAM, partial=(), **attrs):
    other = spec(shape, y_dm if y_dm is not None else (-1,) * len(shape))
    return group_norm_grad_infer_spmd(spec(shape, x_dm, partial=partial), scale, bias, other, spec(STAT, stat_dm),
                                      spec(STAT, stat_dm), other, **attrs)


# --------------------------------------------------------------------------- the worked table
@pytest.mark.parametrize("x_dm, attrs, inputs, outputs", [
    ((0, 1, -1, -1), {}, "[0,-1,-1,-1] [-1] [-1]", "[0,-1,-1,-1] [0,-1] [0,-1]"),
    ((-1, 1, -1, 0), {}, "[-1,-1,-1,-1] [-1] [-1]", "[-1,-1,-1,-1] [-1,-1] [-1,-1]"),
    ((1, -1, -1, 0), {"data_format": "NHWC"}, "[1,-1,-1,-1] [-1] [-1]", "[1,-1,-1,-1] [1,-1] [1,-1]"),
])
def test_forward_table(x_dm, attrs, inputs, outputs):
    assert show(fwd(x_dm, **attrs)) == (inputs.split(" "), outputs.split(" "))


def test_grad_table():
    ins, outs = show(grad((1, 0, -1, -1), y_dm=(0, -1, 1, -1), stat_dm=(0, 1)))
    assert ins == "[1,-1,-1,-1] [-1] [-1] [1,-1,-1,-1] [1,-1] [1,-1] [1,-1,-1,-1]".split(" ")
    assert [o.replace(" ", "") for o in outs] == ["[1,-1,-1,-1]", "[-1]P{1}", "[-1]P{1}"]


# --------------------------------------------------------------------------- quirks
@pytest.mark.parametrize("attrs", [{"groups": 0}, {"groups": -1}, {"groups": 4}, {"data_format": "zz"},
                                   {"data_format": ""}, {"epsilon": 0.5, "data_format": "NCL"}])
def test_attributes_are_ignored(attrs):
    """gn-ignored-attrs: any groups (0, -1, not dividing C=6) and any data_format string answer alike,
    and the *Base functions, which take none, answer the same."""
    assert show(fwd((0, 1, -1, -1), **attrs)) == show(fwd((0, 1, -1, -1)))
    x = spec(X4, (0, 1, -1, -1))
    assert show(group_norm_infer_spmd_base(x, rep(C), rep(C))) == show(fwd((0, 1, -1, -1)))
    assert show(grad((0, 1, -1, -1), **attrs)) == show(grad((0, 1, -1, -1)))


def test_attribute_types_are_checked():
    with pytest.raises(ArgumentTypeError, match="groups must be an int"):
        fwd((0, -1, -1, -1), groups=2.0)
    with pytest.raises(ArgumentTypeError, match="data_format must be a str"):
        grad((0, -1, -1, -1), data_format=3)


def test_every_answer_clears_partial():
    """gn-partial."""
    res = group_norm_infer_spmd(spec(X4, (0, -1, -1, -1), partial=(1,)), spec(C, (-1,), partial=(0,)), rep(C))
    assert all(not a.partial_dims for a in res.inputs + res.outputs)
    res = grad((0, -1, -1, -1), partial=(1,))
    assert all(not a.partial_dims for a in res.inputs + res.outputs[:1])


def test_grad_reads_only_x():
    """gn-grad-ignores: y's, y_grad's and the statistics' mappings are not read; each keeps its mesh."""
    assert show(grad((0, -1, -1, -1), y_dm=(1, 0, -1, -1), stat_dm=(1, 0))) == show(grad((0, -1, -1, -1)))
    other = ProcessMesh((2, 3), tuple(range(6, 12)))
    y = DistTensorSpec(X4, (-1,) * 4, other)
    res = group_norm_grad_infer_spmd_base(spec(X4, (1, -1, -1, -1)), rep(C), rep(C), y, rep(STAT), rep(STAT), y)
    assert res.inputs[3].mesh == other and res.inputs[6].mesh == other
    assert res.inputs[3].dims_mapping == (1, -1, -1, -1)


def test_grad_partial_on_each_params_mesh():
    """gn-grad-partial: scale_grad / bias_grad Partial over x's axis-0 mesh dim, each on its own
    tensor's mesh; nothing partial when axis 0 is replicated (C split is not read)."""
    other = ProcessMesh((2, 3), tuple(range(6, 12)))
    res = grad((1, -1, -1, -1), scale=rep(C, other))
    assert (res.outputs[1].mesh, res.outputs[1].partial_dims) == (other, frozenset({1}))
    assert res.outputs[2].partial_dims == frozenset({1})
    assert all(not o.partial_dims for o in grad((-1, 0, -1, 1)).outputs)


def test_grad_none_params_without_split_answer_without_mesh():
    _, outs = show(grad((-1, 1, -1, -1), scale=None, bias=None))
    assert outs[1:] == ["[-1] @-", "[-1] @-"]


# --------------------------------------------------------------------------- Paddle's own checks
@pytest.mark.parametrize("call, message", [
    (lambda: fwd((0, -1), (8, 6)), "The ndim of x in group_norm should be greater than 2, but got [2]."),
    (lambda: fwd((-1,) * 6, (8, 6, 4, 4, 2, 2)), "The ndim of x in group_norm should be less than 6 , but got [6]."),
    (lambda: group_norm_infer_spmd(rep(X4), rep((6, 2)), None),
     "The ndim of scale in group_norm should be 1, but got [2]."),
    (lambda: group_norm_infer_spmd(rep(X4), None, rep((6, 2))),
     "The ndim of bias in group_norm should be 1, but got [2]."),
    (lambda: grad((0, -1), (8, 6)), "The ndim of x in group_norm should grater than 2, but got [2]."),  # messages
    (lambda: group_norm_grad_infer_spmd(rep(X4), rep(C), rep(C), rep((8, 6, 4)), rep(STAT), rep(STAT), rep(X4)),
     "The ndim of x and y in group_norm should be equal, but got x:[4] and y[3] ."),
    (lambda: group_norm_grad_infer_spmd(rep(X4), rep(C), rep(C), rep(X4), rep(STAT), rep(STAT), rep((8, 6, 4))),
     "The ndim of x and y_grad in group_norm should be equal, but got x:[4] and y_grad[3] ."),
    (lambda: group_norm_grad_infer_spmd(rep(X4), rep(C), rep(C), rep(X4), rep((8,)), rep(STAT), rep(X4)),
     "The ndim of bias in group_norm should be 2, but got [1]."),  # gn-grad-messages: mean, named bias
    (lambda: group_norm_grad_infer_spmd(rep(X4), rep(C), rep(C), rep(X4), rep(STAT), rep((8, 2, 1)), rep(X4)),
     "The ndim of bias in group_norm should be 2, but got [1]."),
])
def test_paddle_checks(call, message):
    with pytest.raises(PaddleInvalidArgument) as err:
        call()
    assert str(err.value) == message


# --------------------------------------------------------------------------- crash / garbage inputs
def test_x_without_mesh_or_short_mapping_rejected():
    """Paddle: x without a mesh (empty mapping) SIGSEGV, a mapping shorter than the rank SIGABRT."""
    with pytest.raises(InvalidSpecError, match="x has no process mesh"):
        group_norm_infer_spmd(DistTensorSpec(X4, (), None), None, None)
    with pytest.raises(InvalidSpecError) as err:
        group_norm_infer_spmd_base(spec(X4, (0, -1)), rep(C), rep(C))
    assert err.value.kind.startswith("invalid-spec:x:")


def test_partial_dim_outside_the_mesh_rejected_before_paddles_checks():
    """Paddle segfaults building such an input, before its own rank check could raise."""
    with pytest.raises(InvalidSpecError) as err:
        group_norm_infer_spmd(spec((8, 6), (0, -1), partial=(5,)), None, None)
    assert err.value.kind.startswith("invalid-spec:x:")
    with pytest.raises(InvalidSpecError):
        grad((0, -1, -1, -1), bias=spec(C, (-1,), partial=(2,)))


@pytest.mark.parametrize("which", ["scale", "bias"])
@pytest.mark.parametrize("missing", [None, DistTensorSpec(C, (), None)])
def test_grad_params_without_mesh_with_n_split_rejected(which, missing):
    """Paddle marks partial on an attr without a mesh: SIGSEGV."""
    with pytest.raises(InvalidSpecError, match=f"{which} is ") as err:
        grad((0, -1, -1, -1), **{which: missing})
    assert err.value.kind == f"invalid-spec:{which}:none-with-sharded-n"


def test_grad_inputs_on_smaller_mesh_rejected():
    """Paddle answers y [1,-1,-1,-1] on a 1-D mesh (or segfaults for scale / bias there)."""
    y = rep(X4, MESH_2)
    with pytest.raises(InvalidSpecError, match="^y: on mesh"):
        group_norm_grad_infer_spmd(spec(X4, (1, -1, -1, -1)), rep(C), rep(C), y, rep(STAT), rep(STAT), rep(X4))
    with pytest.raises(InvalidSpecError, match="^bias: on mesh"):
        grad((1, -1, -1, -1), bias=rep(C, MESH_2))
    # axis 0 on mesh dim 0: every attr fits its mesh, and the port answers as Paddle does
    res = group_norm_grad_infer_spmd(spec(X4, (0, -1, -1, -1)), rep(C), rep(C), y, rep(STAT), rep(STAT), rep(X4))
    assert res.inputs[3].dims_mapping == (0, -1, -1, -1) and res.inputs[3].mesh == MESH_2


def test_registry_name():
    rule = get_spmd_rule("group_norm")
    assert rule.registered_in_paddle
    x = spec(X4, (0, 1, -1, -1))
    assert show(rule.infer_forward(x, rep(C), rep(C))) == show(fwd((0, 1, -1, -1)))
    assert show(rule.infer_forward(x, rep(C), rep(C), 1e-5, 0, "zz")) == show(fwd((0, 1, -1, -1)))
    with pytest.raises(RuleNotFoundError):
        rule.infer_backward(x, rep(C), rep(C), x, rep(STAT), rep(STAT), x)


# --------------------------------------------------------------------------- against Paddle
@pytest.mark.native
@pytest.mark.parametrize("rule, backend", [("group_norm", "registry"), ("group_norm_base", "compiled"),
                                           ("group_norm_grad", "compiled"), ("group_norm_grad_base", "compiled")])
def test_port_equals_paddle_on_a_grid_sample(rule, backend):
    from .native_sample import assert_sample_matches

    assert_sample_matches(rule, backend)
