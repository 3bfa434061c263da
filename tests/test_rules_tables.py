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
    from paddle_spmd_port.ops.batch_norm import proposed
    from paddle_spmd_port.ops.sync_batch_norm import pr72918
    from paddle_spmd_port.rules import PROFILES, rule_function

    assert set(PROFILES) == {"paddle", "pr72918", "proposed"}
    assert rule_function("sync_batch_norm") is sync_batch_norm_infer_spmd
    assert rule_function("sync_batch_norm", "pr72918") is pr72918.sync_batch_norm_infer_spmd
    assert rule_function("layer_norm", "pr72918") is layer_norm_infer_spmd
    assert rule_function("batch_norm_grad", "proposed") is proposed.batch_norm_grad_infer_spmd
    assert get_spmd_rule("batch_norm", "proposed").forward is proposed.batch_norm_infer_spmd_static
    with pytest.raises(ValueError, match="unknown profile"):
        rule_function("layer_norm", "nightly")


# --------------------------------------------------------------------------- golden rows
# Quirks that only the native parity tests pinned before: partial status kept or cleared per
# tensor, the rank a replicated attr keeps, and which mesh each answer takes when inputs sit on
# different meshes (MR: mesh R = the 2x3 mesh with its process ids reversed). Every expected
# answer below is what Paddle 3.3.1 printed for the case (registry for the registry rules, the
# compiled caller for the hidden ones; `python -m paddle_spmd_port infer --case-json ...`), and
# test_golden_rows_are_paddles_answers re-checks them against the installed Paddle.
# Each attr reads "<mapping>|<mesh>": M = MESH_2x3, R = MESH_R, - = no mesh.
MESH_R = ProcessMesh((2, 3), tuple(reversed(range(6))))
X3, X4, CH = (16, 32, 32), (8, 6, 4, 4), (6,)


def _golden(gid, rule, inputs, attrs, ins, outs):
    from paddle_spmd_port.case import Case

    return pytest.param(Case(rule, MESH_2x3, tuple(inputs), tuple(attrs), f"golden-{gid}"),
                        ins.split(" ; "), outs.split(" ; "), id=gid)


LN2 = (("epsilon", 1e-5), ("begin_norm_axis", 2))
NCHW = (("data_format", "NCHW"),)
GOLDEN = [
    # PADDLE-QUIRK(ln-partial): forward clears every partial status (x's, scale's, bias's)
    _golden("ln-fwd-clears-partial", "layer_norm",
            [spec(X3, (0, -1, -1), partial={1}), spec((32,), (-1,), partial={0}), spec((32,), (-1,), partial={1})],
            LN2, "[0,-1,-1]|M ; [-1]|M ; [-1]|M", "[0,-1,-1]|M ; [0,-1]|M ; [0,-1]|M"),
    # PADDLE-QUIRK(ln-partial): reverse keeps the incoming partial status of all six tensors
    _golden("ln-rev-keeps-partial", "layer_norm_reverse",
            [spec(X3, (-1, -1, -1), partial={1}), spec((32,), (-1,), partial={0}), spec((32,), (-1,), partial={1}),
             spec(X3, (0, -1, -1), partial={1}), spec((16, 32), (0, -1), partial={1}),
             spec((16, 32), (0, -1), partial={1})],
            LN2, "[0,-1,-1] P{1}|M ; [-1] P{0}|M ; [-1] P{1}|M", "[0,-1,-1] P{1}|M ; [0,-1] P{1}|M ; [0,-1] P{1}|M"),
    # PADDLE-QUIRK(ln-partial): grad keeps x's, mean's and variance's partial, clears out_grad's,
    # and x_grad copies out_grad's final attr
    _golden("ln-grad-og-partial-cleared", "layer_norm_grad",
            [spec(X3, (0, -1, -1), partial={1}), rep((32,)), rep((32,)), spec((16, 32), (0, -1), partial={1}),
             spec((16, 32), (0, -1), partial={1}), spec(X3, (0, -1, -1), partial={1})],
            LN2, "[0,-1,-1] P{1}|M ; [-1]|M ; [-1]|M ; [0,-1] P{1}|M ; [0,-1] P{1}|M ; [0,-1,-1]|M",
            "[0,-1,-1]|M ; [-1] P{0}|M ; [-1] P{0}|M"),
    # begin_norm_axis 0: everything replicated, every partial status cleared
    _golden("ln-grad-b0-replicates", "layer_norm_grad",
            [spec(X3, (0, -1, -1), partial={1}), rep((16 * 32 * 32,)), rep((16 * 32 * 32,)), spec((), ()),
             spec((), ()), spec(X3, (0, -1, -1), partial={1})],
            (("epsilon", 1e-5), ("begin_norm_axis", 0)),
            "[-1,-1,-1]|M ; [-1]|M ; [-1]|M ; []|M ; []|M ; [-1,-1,-1]|M", "[-1,-1,-1]|M ; [-1]|M ; [-1]|M"),
    # PADDLE-QUIRK(ln-scale-rank): the grad rule keeps scale's and bias's rank
    _golden("ln-grad-scale-rank-2", "layer_norm_grad",
            [spec(X3, (0, -1, -1)), spec((32, 32), (0, -1)), spec((32, 32), (-1, 1)), spec((16,), (0,)),
             spec((16,), (0,)), spec(X3, (0, -1, -1))],
            (("epsilon", 1e-5), ("begin_norm_axis", 1)),
            "[0,-1,-1]|M ; [-1,-1]|M ; [-1,-1]|M ; [0]|M ; [0]|M ; [0,-1,-1]|M",
            "[0,-1,-1]|M ; [-1,-1] P{0}|M ; [-1,-1] P{0}|M"),
    # mixed meshes: each attr keeps its own tensor's mesh; x_grad takes out_grad's, scale_grad scale's
    _golden("ln-grad-other-meshes", "layer_norm_grad",
            [spec(X3, (0, -1, -1)), rep((32,), MESH_R), rep((32,)), spec((16, 32), (0, -1)),
             spec((16, 32), (0, -1), MESH_R), spec(X3, (-1, 1, -1), MESH_R, partial={0})],
            LN2, "[0,1,-1]|M ; [-1]|R ; [-1]|M ; [0,1]|M ; [0,1]|R ; [0,1,-1]|R",
            "[0,1,-1]|R ; [-1] P{0,1}|R ; [-1] P{0,1}|M"),
    # PADDLE-QUIRK(bn-ignored-stats): the incoming mappings and partial status of mean, variance,
    # scale and bias are ignored
    _golden("bn-fwd-ignores-stats", "batch_norm",
            [spec(X4, (-1, 1, -1, -1)), spec(CH, (0,), partial={1}), spec(CH, (-1,), partial={0}), spec(CH, (1,)),
             spec(CH, (-1,), partial={1})],
            NCHW, "[-1,1,-1,-1]|M ; [1]|M ; [1]|M ; [-1]|M ; [-1]|M",
            "[-1,1,-1,-1]|M ; [1]|M ; [1]|M ; [1]|M ; [1]|M ; [-1]|M"),
    # mixed meshes: each input and mean_out/saved_mean keep mean's mesh, reserve_space takes x's
    _golden("bn-fwd-other-meshes", "batch_norm",
            [spec(X4, (-1, 1, -1, -1)), rep(CH, MESH_R), rep(CH), rep(CH, MESH_R), rep(CH)],
            NCHW, "[-1,1,-1,-1]|M ; [1]|R ; [1]|M ; [-1]|R ; [-1]|M",
            "[-1,1,-1,-1]|M ; [1]|R ; [1]|M ; [1]|R ; [1]|M ; [-1]|M"),
    # PADDLE-QUIRK(bn-grad-og-ignored): out_grad's mapping and mesh are ignored, every grad input
    # takes x's mesh; scale_grad keeps scale's mesh
    _golden("bn-grad-other-meshes", "batch_norm_grad",
            [spec(X4, (0, 1, -1, -1)), rep(CH, MESH_R), rep(CH), rep(CH), rep(CH), rep(CH, MESH_R), rep(CH), None,
             spec(X4, (1, -1, 0, -1), MESH_R)],
            NCHW, "[-1,1,-1,-1]|M ; [-1]|M ; [-1]|M ; [1]|M ; [1]|M ; [1]|M ; [1]|M ; [-1]|M ; [-1,1,-1,-1]|M",
            "[-1,1,-1,-1]|M ; [-1] P{1}|R ; [-1] P{1}|M"),
    # PADDLE-QUIRK(bn-grad-og-ignored): x's and out_grad's partial status are dropped
    _golden("bn-grad-drops-partial", "batch_norm_grad",
            [spec(X4, (-1, 1, -1, -1), partial={0}), rep(CH), rep(CH), rep(CH), rep(CH), rep(CH), rep(CH), rep((1,)),
             spec(X4, (-1, -1, -1, -1), partial={0, 1})],
            NCHW, "[-1,1,-1,-1]|M ; [-1]|M ; [-1]|M ; [1]|M ; [1]|M ; [1]|M ; [1]|M ; [-1]|M ; [-1,1,-1,-1]|M",
            "[-1,1,-1,-1]|M ; [-1] P{1}|M ; [-1] P{1}|M"),
    # PADDLE-QUIRK(sync-replicated): partial cleared, each input keeps its own mesh, None has none,
    # every output takes x's mesh
    _golden("sync-fwd-meshes", "sync_batch_norm",
            [spec(X4, (0, 1, -1, -1)), spec(CH, (1,), MESH_R, partial={0}), rep(CH), None,
             spec(CH, (-1,), partial={0})],
            NCHW, "[-1,-1,-1,-1]|M ; [-1]|R ; [-1]|M ; [-1] @-|- ; [-1]|M",
            "[-1,-1,-1,-1]|M ; [-1]|M ; [-1]|M ; [-1]|M ; [-1]|M ; [-1]|M"),
    _golden("sync-grad-meshes", "sync_batch_norm_grad",
            [spec(X4, (-1, 1, -1, -1), partial={0}), rep(CH, MESH_R), None, rep(CH), rep(CH), None,
             spec(X4, (0, 1, -1, -1), MESH_R)],
            NCHW, "[-1,-1,-1,-1]|M ; [-1]|R ; [-1] @-|- ; [-1]|M ; [-1]|M ; [-1] @-|- ; [-1,-1,-1,-1]|R",
            "[-1,-1,-1,-1]|M ; [-1]|M ; [-1]|M"),
]


def labelled(result):
    """Each attr as ``<mapping>|<mesh>`` (M = MESH_2x3, R = MESH_R, - = none)."""
    def one(a):
        mesh = "-" if a.mesh is None else {MESH_2x3: "M", MESH_R: "R"}.get(a.mesh, str(a.mesh))
        return f"{a}|{mesh}"
    return [one(a) for a in result.inputs], [one(a) for a in result.outputs]


@pytest.mark.parametrize("case, ins, outs", GOLDEN)
def test_golden_row(case, ins, outs):
    assert labelled(case.call_port()) == (ins, outs)


@pytest.mark.native
def test_golden_rows_are_paddles_answers():
    from paddle_spmd_port.native.pool import run_native
    from paddle_spmd_port.parity.cli import DEFAULT_BACKEND

    from .helpers import paddle_profile

    profile = paddle_profile()  # older releases: leave out rules their profile says differ or are missing
    rows = [p.values for p in GOLDEN if profile is None or not (
        p.values[0].rule in profile.registry_missing or profile.differences_for(p.values[0].rule))]
    for backend in sorted({DEFAULT_BACKEND[case.rule] for case, _, _ in rows}):
        mine = [r for r in rows if DEFAULT_BACKEND[r[0].rule] == backend]
        natives, _ = run_native([case for case, _, _ in mine], backend=backend, workers=1)
        for (case, ins, outs), native in zip(mine, natives, strict=True):
            assert native.result is not None, (case.id, str(native))
            assert labelled(native.result) == (ins, outs), case.id
