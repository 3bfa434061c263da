"""instance_norm (rules/instance_norm.py): the module's worked table, each quirk, each input Paddle
3.3.1 crashes on rejected by name, and a sample of the grid against Paddle (registry and compiled)."""

from __future__ import annotations

import pytest

from paddle_spmd_port import DistTensorSpec, InvalidSpecError, PaddleInvalidArgument, ProcessMesh
from paddle_spmd_port.rules import get_spmd_rule, instance_norm_grad_infer_spmd, instance_norm_infer_spmd

from .helpers import MESH_2, rep, show, spec

X4, X5 = (8, 6, 4, 4), (8, 6, 4, 4, 4)
C = (6,)
STAT = (8, 6)


def fwd(x_dm, shape=X4, partial=(), scale=True, bias=True):
    return instance_norm_infer_spmd(spec(shape, x_dm, partial=partial), rep(C) if scale else None,
                                    rep(C) if bias else None)


SCALE = rep(C)


def grad(x_dm, shape=X4, *, og_dm=None, scale: DistTensorSpec | None = SCALE, bias=True, stat_dm=(-1, -1),
         partial=()):
    og = spec(shape, og_dm if og_dm is not None else (-1,) * len(shape))
    return instance_norm_grad_infer_spmd(spec(shape, x_dm, partial=partial), scale, rep(C) if bias else None,
                                         spec(STAT, stat_dm), spec(STAT, stat_dm), og)


@pytest.mark.parametrize("x_dm, shape, inputs, outputs", [
    ((0, 1, -1, -1), X4, "[0,1,-1,-1] [-1] [-1]", "[0,1,-1,-1] [0,1] [0,1]"),
    ((1, -1, 0, -1), X4, "[1,-1,-1,-1] [-1] [-1]", "[1,-1,-1,-1] [1,-1] [1,-1]"),
    ((-1, -1, -1, 1), X4, "[-1,-1,-1,-1] [-1] [-1]", "[-1,-1,-1,-1] [-1,-1] [-1,-1]"),
    ((0, -1, -1, -1, 1), X5, "[0,-1,-1,-1,1] [-1] [-1]", "[0,-1,-1,-1,1] [0,-1] [0,-1]"),  # in-5d-last-axis
    ((-1, -1, 1, 0, -1), X5, "[-1,-1,-1,-1,-1] [-1] [-1]", "[-1,-1,-1,-1,-1] [-1,-1] [-1,-1]"),
])
def test_forward_table(x_dm, shape, inputs, outputs):
    assert show(fwd(x_dm, shape)) == (inputs.split(" "), outputs.split(" "))


def test_forward_clears_partial_and_none_scale_has_no_mesh():
    ins, outs = show(fwd((0, -1, -1, -1), partial=(1,), scale=False, bias=False))
    assert ins == ["[0,-1,-1,-1]", "[-1] @-", "[-1] @-"]
    assert outs == ["[0,-1,-1,-1]", "[0,-1]", "[0,-1]"]


@pytest.mark.parametrize("x_dm, og_dm, inputs, outputs", [
    ((0, 1, -1, -1), None, "[0,1,-1,-1] [-1] [0,1] [0,1] [0,1,-1,-1]", "[0,1,-1,-1] [-1]P{0,1} [-1]P{0,1}"),
    ((1, -1, 0, -1), (0, 1, -1, -1), "[1,-1,-1,-1] [-1] [1,-1] [1,-1] [1,-1,-1,-1]", "[1,-1,-1,-1] [-1]P{1} [-1]P{1}"),
    ((-1, 0, -1, 1), None, "[-1,0,-1,-1] [-1] [-1,0] [-1,0] [-1,0,-1,-1]", "[-1,0,-1,-1] [-1]P{0} [-1]P{0}"),
])
def test_grad_table(x_dm, og_dm, inputs, outputs):
    ins, outs = show(grad(x_dm, og_dm=og_dm))
    assert ins == inputs.split(" ")
    assert [o.replace(" ", "") for o in outs] == outputs.split(" ")


def test_grad_reads_only_x_and_returns_no_bias():
    """in-grad-ignores: y_grad's and the statistics' mappings and partial status are not read; five
    returned inputs."""
    a = grad((0, -1, -1, -1), og_dm=(1, -1, -1, 0), stat_dm=(1, 0))
    b = grad((0, -1, -1, -1))
    assert show(a) == show(b)
    assert len(a.inputs) == 5


def test_grad_bias_grad_takes_scale_mesh():
    """in-grad-partial: bias_grad is a copy of scale's attr (its mesh), even with bias None."""
    other = ProcessMesh((2, 3), tuple(range(6, 12)))
    res = grad((0, -1, -1, -1), scale=rep(C, other), bias=False)
    assert res.outputs[1].mesh == other and res.outputs[2].mesh == other
    assert res.outputs[2].partial_dims == frozenset({0})


def test_grad_5d_keeps_last_axis():
    ins, outs = show(grad((0, -1, -1, -1, 1), X5))
    assert ins[0] == "[0,-1,-1,-1,1]" and outs[0] == "[0,-1,-1,-1,1]"


def test_grad_scale_none_without_split_answers_without_mesh():
    _, outs = show(grad((-1, -1, -1, -1), scale=None, bias=False))
    assert outs[1:] == ["[-1] @-", "[-1] @-"]


# --------------------------------------------------------------------------- Paddle's own checks
@pytest.mark.parametrize("call, message", [
    (lambda: fwd((0,), (8,)), "The ndim of x in instance_norm should be greater than 1, but got [1]."),
    (lambda: fwd((-1,) * 6, (8, 6, 4, 4, 2, 2)), "The ndim of x in instance_norm should be less than 6, but got [6]."),
    (lambda: instance_norm_infer_spmd(rep(X4), rep((6, 4)), None),
     "The ndim of scale in instance_norm should be 1, but got [2]."),
    (lambda: grad((0,), (8,)), "The ndim of x in instance_norm should greater than 1, but got [1]."),
    (lambda: instance_norm_grad_infer_spmd(rep(X4), rep(C), rep(C), rep(STAT), rep(STAT), rep((8, 6, 4))),
     "The ndim of y_grad in instance_norm should be equal with x, but got [0]."),  # in-grad-message
    (lambda: instance_norm_grad_infer_spmd(rep(X4), rep(C), rep(C), rep((8,)), rep(STAT), rep(X4)),
     "The ndim of saved_mean in instance_norm should be 2, but got [1]."),
])
def test_paddle_checks(call, message):
    with pytest.raises(PaddleInvalidArgument) as err:
        call()
    assert str(err.value) == message


# --------------------------------------------------------------------------- crash inputs, rejected by name
@pytest.mark.parametrize("shape", [(8, 6), (8, 6, 4)])
def test_2d_and_3d_x_rejected(shape):
    """Paddle clears axes 2 and 3 by index: SIGABRT (heap corruption) on a 2-D / 3-D x."""
    with pytest.raises(InvalidSpecError, match="x has rank") as err:
        fwd((0,) + (-1,) * (len(shape) - 1), shape)
    assert err.value.kind == "invalid-spec:x:rank"
    with pytest.raises(InvalidSpecError, match="x has rank"):
        instance_norm_grad_infer_spmd(spec(shape, (0,) + (-1,) * (len(shape) - 1)), rep(C), rep(C), rep(STAT),
                                      rep(STAT), rep(shape))


@pytest.mark.parametrize("x_dm", [(0, -1, -1, -1), (-1, 1, -1, -1)])
def test_grad_scale_none_with_n_or_c_split_rejected(x_dm):
    """Paddle marks partial on an attr without a mesh: SIGSEGV."""
    with pytest.raises(InvalidSpecError, match="scale is None") as err:
        grad(x_dm, scale=None)
    assert err.value.kind == "invalid-spec:scale:none-with-sharded-nc"


def test_x_without_mesh_and_stat_on_smaller_mesh_rejected():
    with pytest.raises(InvalidSpecError, match="x has no process mesh"):
        instance_norm_infer_spmd(DistTensorSpec(X4, (), None), None, None)
    with pytest.raises(InvalidSpecError, match="saved_mean"):  # Paddle answers [-1,1] on a 1-D mesh
        instance_norm_grad_infer_spmd(spec(X4, (-1, 1, -1, -1)), rep(C), rep(C), rep(STAT, MESH_2), rep(STAT),
                                      rep(X4))


def test_registry_names():
    rule = get_spmd_rule("instance_norm")
    assert rule.registered_in_paddle
    assert show(rule.infer_forward(spec(X4, (0, 1, -1, -1)), rep(C), rep(C), 1e-5)) == show(fwd((0, 1, -1, -1)))
    assert show(rule.infer_backward(spec(X4, (0, 1, -1, -1)), rep(C), rep(C), rep(STAT), rep(STAT), rep(X4), 1e-5)) \
        == show(grad((0, 1, -1, -1)))


# --------------------------------------------------------------------------- against Paddle
@pytest.mark.native
@pytest.mark.parametrize("rule, backend", [("instance_norm", "registry"), ("instance_norm_grad", "registry"),
                                           ("instance_norm", "compiled"), ("instance_norm_grad", "compiled")])
def test_port_equals_paddle_on_a_grid_sample(rule, backend):
    from .native_sample import assert_sample_matches

    assert_sample_matches(rule, backend)


@pytest.mark.native
def test_paddle_style_file_for_instance_norm_and_fused_rms_norm_passes_on_both_backends(tmp_path):
    """tests/paddle_style/test_instance_rms_paddle_style.py: the compat objects answer as Paddle's."""
    from .helpers import skip_if_rule_missing
    from .test_compat import TESTS, compat_test, statuses

    skip_if_rule_missing("instance_norm_grad")  # 3.0.0 has no instance_norm; 3.1.0's grad takes no bias

    path = TESTS / "paddle_style" / "test_instance_rms_paddle_style.py"
    rc, out, data = compat_test(str(path), "--against", "both", tmp_path=tmp_path)
    assert rc == 0, out
    results = statuses(data, path)
    assert len(results) >= 7 and all(s == {"port": "pass", "native": "pass"} for s in results.values()), out
