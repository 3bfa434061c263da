"""fast_ln (rules/fast_ln.py): layer_norm's rules with the last axis normalised; the grad passes
scale as bias and drops it from the returned inputs. Worked table, quirks, crash input, and a sample
of the grid against Paddle's exported functions (compiled caller: fast_ln is unregistered)."""

from __future__ import annotations

import pytest

from paddle_spmd_port import InvalidSpecError, PaddleInvalidArgument
from paddle_spmd_port.rules import (
    fast_ln_grad_infer_spmd,
    fast_ln_infer_spmd,
    layer_norm_grad_infer_spmd,
    layer_norm_infer_spmd,
)

from .helpers import rep, show, spec

X3 = (8, 6, 4)


@pytest.mark.parametrize("shape, x_dm, inputs, outputs", [
    (X3, (0, 1, -1), "[0,1,-1] [-1] [-1]", "[0,1,-1] [0,1] [0,1]"),
    (X3, (1, -1, 0), "[1,-1,-1] [-1] [-1]", "[1,-1,-1] [1,-1] [1,-1]"),
    ((8,), (0,), "[-1] [-1] [-1]", "[-1] [] []"),
])
def test_forward_table(shape, x_dm, inputs, outputs):
    s = rep((shape[-1],))
    assert show(fast_ln_infer_spmd(spec(shape, x_dm), s, s)) == (inputs.split(" "), outputs.split(" "))


@pytest.mark.parametrize("x_dm", [(0, 1, -1), (1, -1, 0), (-1, -1, -1)])
def test_forward_is_layer_norm_on_the_last_axis(x_dm):
    s = rep((4,))
    assert show(fast_ln_infer_spmd(spec(X3, x_dm), s, None)) == \
        show(layer_norm_infer_spmd(spec(X3, x_dm), s, None, 1e-5, 2))


def test_grad_table_and_bias_twin():
    """fast-ln-grad-bias: five returned inputs; bias_grad equals scale_grad."""
    res = fast_ln_grad_infer_spmd(spec(X3, (0, 1, -1)), rep((4,)), rep((8, 6)), rep((8, 6)), rep(X3))
    assert show(res) == (["[0,1,-1]", "[-1]", "[0,1]", "[0,1]", "[0,1,-1]"],
                         ["[0,1,-1]", "[-1] P{0,1}", "[-1] P{0,1}"])
    full = layer_norm_grad_infer_spmd(spec(X3, (0, 1, -1)), rep((4,)), rep((4,)), rep((8, 6)), rep((8, 6)), rep(X3),
                                      1e-5, 2)
    assert res.outputs == full.outputs


def test_grad_keeps_scale_rank_and_none_scale_has_no_mesh():
    res = fast_ln_grad_infer_spmd(spec(X3, (0, 1, -1)), rep((4, 2)), rep((8, 6)), rep((8, 6)), rep(X3))
    assert str(res.inputs[1]) == "[-1,-1]" and str(res.outputs[2]) == "[-1,-1] P{0,1}"
    res = fast_ln_grad_infer_spmd(spec(X3, (0, -1, -1), partial=(1,)), None, spec((8, 6), (-1, 1)), rep((8, 6)),
                                  spec(X3, (-1, -1, -1), partial=(1,)))
    assert show(res) == (["[0,1,-1] P{1}", "[] @-", "[0,1]", "[0,1]", "[0,1,-1]"], ["[0,1,-1]", "[] @-", "[] @-"])


def test_paddle_checks_name_layer_norm():
    with pytest.raises(PaddleInvalidArgument, match="The ndim of scale in layer_norm should be 1"):
        fast_ln_infer_spmd(rep(X3), rep((4, 2)), None)
    with pytest.raises(PaddleInvalidArgument, match=r"The Tensor x's rank \[0\] and begin_norm_axis \[-1\]"):
        fast_ln_grad_infer_spmd(rep(()), rep((8,)), rep(()), rep(()), rep(()))


def test_rank0_x_and_garbage_statistics_rejected():
    with pytest.raises(InvalidSpecError, match="x must have rank >= 1"):  # Paddle: basic_string::_M_create
        fast_ln_infer_spmd(rep(()), None, None)
    with pytest.raises(InvalidSpecError) as err:  # Paddle answers mean [0,1] for a 1-D mean
        fast_ln_grad_infer_spmd(spec(X3, (0, 1, -1)), rep((4,)), rep((8,)), rep((8,)), rep(X3))
    assert err.value.kind == "invalid-spec:mean:rank"


@pytest.mark.native
@pytest.mark.parametrize("rule", ["fast_ln", "fast_ln_grad"])
def test_port_equals_paddle_on_a_grid_sample(rule):
    from .native_sample import assert_sample_matches

    assert_sample_matches(rule, "compiled")
