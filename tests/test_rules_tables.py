"""Worked tables of every rule. Each row's expected answer was printed by Paddle 3.3.1
(registry, PIR or the compiled caller; see shared notes) — the parity tests re-check them live."""

import pytest

from paddle_spmd_port import InvalidSpecError, PaddleInvalidArgument, ShardingConflictError
from paddle_spmd_port.errors import RuleNotFoundError
from paddle_spmd_port.rules import (
    batch_norm_grad_infer_spmd,
    batch_norm_infer_spmd,
    batch_norm_infer_spmd_static,
    get_spmd_rule,
    layer_norm_grad_infer_spmd,
    layer_norm_infer_spmd,
    layer_norm_infer_spmd_reverse,
    sync_batch_norm_grad_infer_spmd,
    sync_batch_norm_infer_spmd,
)

from .helpers import MESH_2x3, ProcessMesh, rep, show, spec

C = 6


def bn_fwd(x_shape, x_dm, fmt="NCHW", x_partial=(), scale=True, bias=True):
    c = x_shape[1] if fmt[1] == "C" else x_shape[-1]
    s = rep((c,))
    return batch_norm_infer_spmd(spec(x_shape, x_dm, partial=x_partial), s, s, s if scale else None,
                                 s if bias else None, data_format=fmt)


@pytest.mark.parametrize("x_shape, x_dm, fmt, inputs, outputs", [
    ((8, C, 4, 4), (0, 1, -1, -1), "NCHW", "[-1,1,-1,-1] [1] [1] [-1] [-1]", "[-1,1,-1,-1] [1] [1] [1] [1] [-1]"),
    ((8, C, 4, 4), (0, -1, -1, 1), "NCHW", "[-1,-1,-1,-1] [-1] [-1] [-1] [-1]",
     "[-1,-1,-1,-1] [-1] [-1] [-1] [-1] [-1]"),
    ((8, 4, 4, C), (0, -1, -1, 1), "NHWC", "[-1,-1,-1,1] [1] [1] [-1] [-1]", "[-1,-1,-1,1] [1] [1] [1] [1] [-1]"),
    ((8, C), (0, 1), "NC", "[-1,1] [1] [1] [-1] [-1]", "[-1,1] [1] [1] [1] [1] [-1]"),
    ((8, 4, C), (-1, 0, 1), "NLC", "[-1,-1,1] [1] [1] [-1] [-1]", "[-1,-1,1] [1] [1] [1] [1] [-1]"),
    ((8, C, 4, 4, 2), (1, 0, -1, -1, -1), "NCDHW", "[-1,0,-1,-1,-1] [0] [0] [-1] [-1]",
     "[-1,0,-1,-1,-1] [0] [0] [0] [0] [-1]"),
])
def test_batch_norm_forward_table(x_shape, x_dm, fmt, inputs, outputs):
    assert show(bn_fwd(x_shape, x_dm, fmt)) == (inputs.split(" "), outputs.split(" "))


def test_batch_norm_forward_drops_partial_and_none_has_no_mesh():
    ins, outs = show(bn_fwd((8, C, 4, 4), (-1, 1, -1, -1), x_partial=(0,), scale=False))
    assert ins == ["[-1,1,-1,-1]", "[1]", "[1]", "[-1] @-", "[-1]"]
    assert all("P" not in o for o in outs)


def test_static_variant_ignores_layout():
    s = rep((C,))
    x = spec((8, 4, 4, C), (0, -1, -1, 1))
    static = batch_norm_infer_spmd_static(x, s, s, s, s)
    assert show(static) == show(batch_norm_infer_spmd(x, s, s, s, s, data_format="NCHW"))


@pytest.mark.parametrize("shape, message", [
    ((8,), "The ndim of x in batch_norm should be greater than 1, but got [1]."),
    ((8, C, 4, 4, 2, 2), "The ndim of x in batch_norm should be less than 6, but got [6]."),
])
def test_batch_norm_rank_errors_carry_paddles_message(shape, message):
    s = rep((C,))
    with pytest.raises(PaddleInvalidArgument) as err:
        batch_norm_infer_spmd(rep(shape), s, s, s, s)
    assert str(err.value) == message


def test_batch_norm_rejects_unknown_layout():
    s = rep((C,))
    with pytest.raises(InvalidSpecError, match="data_format 'XYZ'"):
        batch_norm_infer_spmd(rep((8, C)), s, s, s, s, data_format="XYZ")


def bn_grad(x_dm, og_dm, fmt="NCHW", scale=True):
    s = rep((C,))
    x_shape = (8, C, 4, 4) if fmt == "NCHW" else (8, 4, 4, C)
    return batch_norm_grad_infer_spmd(spec(x_shape, x_dm), s if scale else None, s, s, s, s, s, None,
                                      spec(x_shape, og_dm), data_format=fmt)


def test_batch_norm_grad_table():
    assert show(bn_grad((0, 1, -1, -1), (-1, -1, -1, -1))) == (
        "[-1,1,-1,-1] [-1] [-1] [1] [1] [1] [1] [-1] [-1,1,-1,-1]".split(" "),
        ["[-1,1,-1,-1]", "[-1] P{1}", "[-1] P{1}"])
    # out_grad's sharding is ignored: everything follows x
    ins, outs = show(bn_grad((0, -1, -1, -1), (0, 1, -1, -1)))
    assert set(ins) | set(outs) <= {"[-1,-1,-1,-1]", "[-1]"}
    assert show(bn_grad((0, -1, -1, 1), (0, -1, -1, 1), "NHWC"))[1] == ["[-1,-1,-1,1]", "[-1] P{1}", "[-1] P{1}"]


def test_batch_norm_grad_none_scale_with_split_channel_is_rejected():
    # Paddle 3.3.1 segfaults here; the port names the argument instead
    with pytest.raises(InvalidSpecError, match="scale is None while the channel axis is split"):
        bn_grad((-1, 1, -1, -1), (-1, 1, -1, -1), scale=False)
    # with C replicated the same call is fine
    assert show(bn_grad((0, -1, -1, -1), (0, -1, -1, -1), scale=False))[1][1] == "[-1] @-"


def ln(x_dm, b, shape=(64, 32, 1024), scale=True, bias=True):
    n = 1
    for s in shape[b:]:
        n *= s
    return layer_norm_infer_spmd(spec(shape, x_dm), rep((n,)) if scale else None, rep((n,)) if bias else None, 1e-5, b)


@pytest.mark.parametrize("x_dm, b, inputs, outputs", [
    ((1, -1, -1), 2, "[1,-1,-1] [-1] [-1]", "[1,-1,-1] [1,-1] [1,-1]"),
    ((1, 0, -1), 2, "[1,0,-1] [-1] [-1]", "[1,0,-1] [1,0] [1,0]"),
    ((0, 1, -1), 1, "[0,-1,-1] [-1] [-1]", "[0,-1,-1] [0] [0]"),
    ((-1, -1, 1), 2, "[-1,-1,-1] [-1] [-1]", "[-1,-1,-1] [-1,-1] [-1,-1]"),
    ((0, -1, -1), 0, "[-1,-1,-1] [-1] [-1]", "[-1,-1,-1] [] []"),
    ((0, 1, -1), 3, "[0,1,-1] [-1] [-1]", "[0,1,-1] [0,1,-1] [0,1,-1]"),
])
def test_layer_norm_forward_table(x_dm, b, inputs, outputs):
    assert show(ln(x_dm, b)) == (inputs.split(" "), outputs.split(" "))


def test_layer_norm_forward_bounds_checked():
    for b in (-1, 4):
        with pytest.raises(InvalidSpecError, match="begin_norm_axis"):
            ln((0, -1, -1), b)


def ln_rev(out_dm, mean_dm, var_dm, b=2, shape=(64, 32, 1024), x_partial=()):
    return layer_norm_infer_spmd_reverse(
        spec(shape, (-1,) * len(shape), partial=x_partial), rep((1024,)), rep((1024,)), spec(shape, out_dm),
        spec(shape[:b], mean_dm), spec(shape[:b], var_dm), 1e-5, b)


@pytest.mark.parametrize("out_dm, mean_dm, var_dm, x", [
    ((1, -1, -1), (1, -1), (1, -1), "[1,-1,-1]"),
    ((0, -1, -1), (0, -1), (0, -1), "[0,-1,-1]"),
    ((-1, -1, -1), (0, -1), (-1, 1), "[0,1,-1]"),
    ((-1, 1, -1), (-1, -1), (-1, -1), "[-1,1,-1]"),
    ((-1, 1, -1), (0, -1), (-1, -1), "[0,1,-1]"),
    ((0, 1, -1), (-1, -1), (-1, -1), "[0,1,-1]"),
    ((0, -1, -1), (-1, 1), (-1, -1), "[0,1,-1]"),
    ((-1, -1, 0), (-1, 0), (-1, -1), "[-1,-1,-1]"),  # PADDLE-QUIRK(ln-forced-key): mean loses dim 0
])
def test_layer_norm_reverse_table(out_dm, mean_dm, var_dm, x):
    ins, outs = show(ln_rev(out_dm, mean_dm, var_dm))
    assert ins == [x, "[-1]", "[-1]"]
    assert outs[0] == x


def test_layer_norm_reverse_conflicts_raise_like_paddle():
    with pytest.raises(ShardingConflictError, match=r"Axis\[i\].*\[0\] and \[1\]"):
        ln_rev((1, -1, -1), (0, -1), (-1, -1))
    with pytest.raises(NotImplementedError, match=r"Axis\[1\]"):
        ln_rev((-1, -1, 0, 1), (-1, -1), (-1, -1), shape=(8, 6, 4, 4))


def test_layer_norm_reverse_keeps_partial():
    ins, _ = show(ln_rev((0, -1, -1), (0, -1), (0, -1), x_partial=(1,)))
    assert ins[0] == "[0,-1,-1] P{1}"


def ln_grad(x_dm, og_dm, stat_dm, b=2, scale=True, mesh=MESH_2x3, shape=(16, 32, 32)):
    s = rep((shape[-1],), mesh) if scale else None
    return layer_norm_grad_infer_spmd(spec(shape, x_dm, mesh), s, s, spec(shape[:b], stat_dm, mesh),
                                      spec(shape[:b], stat_dm, mesh), spec(shape, og_dm, mesh), 1e-5, b)


def test_layer_norm_grad_table():
    assert show(ln_grad((0, 1, -1), (0, 1, -1), (0, 1))) == (
        "[0,1,-1] [-1] [-1] [0,1] [0,1] [0,1,-1]".split(" "), ["[0,1,-1]", "[-1] P{0,1}", "[-1] P{0,1}"])
    assert show(ln_grad((0, -1, -1), (-1, 1, -1), (-1, -1)))[1] == ["[0,1,-1]", "[-1] P{0,1}", "[-1] P{0,1}"]
    assert show(ln_grad((0, -1, 1), (-1, -1, 0), (-1, -1)))[1] == ["[0,-1,-1]", "[-1] P{0}", "[-1] P{0}"]
    assert show(ln_grad((0, -1, -1), (-1, -1, -1), (), b=0))[1] == ["[-1,-1,-1]", "[-1]", "[-1]"]
    ins, outs = show(ln_grad((0, -1, -1), (0, -1, -1), (0, -1), scale=False))
    assert ins[1:3] == ["[] @-", "[] @-"] and outs[1:] == ["[] @-", "[] @-"]


def test_layer_norm_grad_conflict():
    with pytest.raises(ShardingConflictError):
        ln_grad((0, -1, -1), (1, -1, -1), (-1, -1))


def test_sync_batch_norm_is_the_replicated_fallback():
    s = rep((C,))
    r = sync_batch_norm_infer_spmd(spec((8, C, 4, 4), (0, 1, -1, -1), partial=()), s, s, spec((C,), (0,)), None)
    assert show(r) == (["[-1,-1,-1,-1]", "[-1]", "[-1]", "[-1]", "[-1] @-"],
                       "[-1,-1,-1,-1] [-1] [-1] [-1] [-1] [-1]".split(" "))
    g = sync_batch_norm_grad_infer_spmd(spec((8, C, 4, 4), (0, 1, -1, -1)), s, s, s, s, None,
                                        spec((8, C, 4, 4), (0, 1, -1, -1)), 0.9, 1e-5, "NCHW", False, False, False)
    assert show(g)[1] == ["[-1,-1,-1,-1]", "[-1]", "[-1]"]


def test_registry_mirrors_paddle():
    assert get_spmd_rule("batch_norm").forward is batch_norm_infer_spmd_static
    with pytest.raises(RuleNotFoundError, match="backward function is not found"):
        get_spmd_rule("batch_norm").infer_backward()
    with pytest.raises(RuleNotFoundError, match="not registered"):
        get_spmd_rule("rms_norm")
    assert get_spmd_rule("layer_norm").backward is layer_norm_infer_spmd_reverse


def test_x_without_mesh_is_rejected_with_a_fix():
    with pytest.raises(InvalidSpecError, match="x has no process mesh"):
        layer_norm_infer_spmd(spec((4, 8), (), mesh=None), None, None, 1e-5, 1)
    assert ProcessMesh((2,)).ndim == 1


def test_profiles_pick_the_implementation():
    from paddle_spmd_port.rules import PROFILES, pr72918, proposed, rule_function

    assert set(PROFILES) == {"paddle", "pr72918", "proposed"}
    assert rule_function("sync_batch_norm") is sync_batch_norm_infer_spmd
    assert rule_function("sync_batch_norm", "pr72918") is pr72918.sync_batch_norm_infer_spmd
    assert rule_function("layer_norm", "pr72918") is layer_norm_infer_spmd
    assert rule_function("batch_norm_grad", "proposed") is proposed.batch_norm_grad_infer_spmd
    assert get_spmd_rule("batch_norm", "proposed").forward is proposed.batch_norm_infer_spmd_static
    with pytest.raises(ValueError, match="unknown profile"):
        rule_function("layer_norm", "nightly")
