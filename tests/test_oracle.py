"""The numerical soundness oracle (numpy virtual mesh) and the ``proposed`` rule profile.

Fast tests need numpy only. ``native`` tests compare the numpy kernels and the sharding
convention with Paddle's own (one process); the ``multiproc`` test checks the oracle's verdicts
against real 2-rank runs.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from paddle_spmd_port.case import Case
from paddle_spmd_port.grid import sample
from paddle_spmd_port.ops import RULES
from paddle_spmd_port.ops.batch_norm import kernel as bn_kernel
from paddle_spmd_port.ops.layer_norm import kernel as ln_kernel
from paddle_spmd_port.ops.registry import PROFILES
from paddle_spmd_port.ops.sync_batch_norm import kernel as sync_kernel
from paddle_spmd_port.oracle import kernels
from paddle_spmd_port.oracle.cli import main as oracle_main
from paddle_spmd_port.oracle.grid import ORACLE_X_SHAPES, oracle_grid
from paddle_spmd_port.oracle.report import Judge, reshard_kind
from paddle_spmd_port.oracle.simulator import (
    CAUSE_PARTIAL_IN,
    CAUSE_PARTIAL_SHAPE,
    CAUSE_UNEVEN_SYNC,
    LOCAL_STATS,
    OP_REJECTS,
    RULE_ERROR,
    SOUND,
    UNRUNNABLE,
    UNSOUND,
    VirtualMesh,
    distribute,
    explain,
    shard_range,
    simulate,
)
from paddle_spmd_port.types import DistAttr, DistTensorSpec, ProcessMesh, SpmdResult

PROPOSED_RULES = PROFILES["proposed"]

M2, M3, M23 = ProcessMesh((2,)), ProcessMesh((3,)), ProcessMesh((2, 3))


def spec(shape, dm, mesh, partial=()):
    return DistTensorSpec(tuple(shape), tuple(dm), mesh, frozenset(partial))


def rep(shape, mesh):
    return spec(shape, (-1,) * len(shape), mesh)


def bn_case(x_dm, mesh, shape=(8, 7, 10, 12), fmt="NCHW", **attrs):
    c = 1 if fmt[1] == "C" else len(shape) - 1
    ch = (shape[c],)
    return Case("batch_norm", mesh, (spec(shape, x_dm, mesh), rep(ch, mesh), rep(ch, mesh), rep(ch, mesh),
                                     rep(ch, mesh)), tuple(attrs.items()) + (("data_format", fmt),))


def bn_grad_case(x_dm, mesh, shape=(8, 7, 10), fmt="NCL", og_dm=None, **attrs):
    ch = (shape[1 if fmt[1] == "C" else len(shape) - 1],)
    og = spec(shape, x_dm if og_dm is None else og_dm, mesh)
    return Case("batch_norm_grad", mesh, (spec(shape, x_dm, mesh),) + tuple(rep(ch, mesh) for _ in range(7)) + (og,),
                tuple(attrs.items()) + (("data_format", fmt),))


def ln_grad_case(x_dm, mesh, b, shape=(8, 7, 10), x_partial=()):
    norm = (math.prod(shape[b:]),)
    stat = spec(shape[:b], x_dm[:b], mesh)
    return Case("layer_norm_grad", mesh, (spec(shape, x_dm, mesh, x_partial), rep(norm, mesh), rep(norm, mesh), stat,
                                          stat, spec(shape, x_dm, mesh)), (("begin_norm_axis", b),))


def with_outputs(result: SpmdResult, **changes: DistAttr) -> SpmdResult:
    names = dict(zip(RULES["layer_norm_grad"].result_outputs, result.outputs, strict=True))
    names.update(changes)
    return SpmdResult(result.inputs, tuple(names.values()))


# --------------------------------------------------------------------------- the virtual mesh
def test_sharding_follows_paddles_ceil_chunks_not_array_split():
    # measured with dist.shard_tensor (see test_shard_convention_matches_paddle)
    assert [shard_range(7, 4, i) for i in range(4)] == [(0, 2), (2, 4), (4, 6), (6, 7)]
    assert [shard_range(6, 4, i) for i in range(4)] == [(0, 2), (2, 4), (4, 6), (6, 6)]  # array_split: 2,2,1,1
    assert [shard_range(7, 3, i) for i in range(3)] == [(0, 3), (3, 6), (6, 7)]  # array_split: 3,2,2
    with pytest.raises(Exception, match="start"):
        shard_range(5, 4, 3)


def test_partial_inputs_become_unequal_addends_that_sum_to_the_value():
    rng = np.random.default_rng(1)
    value = rng.standard_normal((4, 6))
    mesh = VirtualMesh((2, 3))
    pieces = distribute(value, DistAttr((-1, 1), frozenset({0})), mesh, rng)
    assert [p.shape for p in pieces] == [(4, 2)] * 6
    # ranks 0 and 3 share mesh dim 1's coordinate 0: their addends sum to the slice
    np.testing.assert_allclose(pieces[0] + pieces[3], value[:, 0:2], atol=1e-12)
    assert np.abs(pieces[0] - pieces[3]).min() > 1e-6  # no equal halves, no zeros
    assert np.abs(pieces[0]).min() > 0


def test_oracle_sizes_split_into_non_empty_shards_on_every_mesh_dim():
    for shape in ORACLE_X_SHAPES.values():
        for n in shape:
            for k in (2, 3, 4):
                assert all(hi > lo for lo, hi in (shard_range(n, k, i) for i in range(k))), (n, k)


# --------------------------------------------------------------------------- known Paddle bugs
def test_batch_norm_channel_sharding_is_unrunnable_and_fine_once_scale_follows_c():
    case = bn_case((-1, 0, -1, -1), M2)
    verdict = simulate(case, case.call_port())
    assert verdict.label == UNRUNNABLE
    assert verdict.tensor == "scale" and "local x has C=4" in verdict.detail  # 7 channels over 2 ranks: 4, 3
    assert verdict.repaired is not None and verdict.repaired.label == SOUND
    # the same in eval mode: the rule ignores the mode
    eval_case = bn_case((-1, 0, -1, -1), M2, is_test=True)
    assert simulate(eval_case, eval_case.call_port()).label == UNRUNNABLE


def test_batch_norm_grad_partial_scale_grad_is_wrong_and_shard_would_be_right():
    case = bn_grad_case((-1, 0, -1), M2)
    answer = case.call_port()
    assert str(answer.outputs[1]) == "[-1] P{0}"
    verdict = simulate(case, answer)
    assert verdict.label == UNRUNNABLE and verdict.symptoms == "unchecked:scale"
    assert verdict.repaired.label == UNSOUND and verdict.repaired.kind == CAUSE_PARTIAL_SHAPE
    assert explain(case, answer) == {"scale_grad": ["[0]"], "bias_grad": ["[0]"]}


def test_layer_norm_partial_scale_and_bias_grads_are_sound():
    for x_dm, b, partial in (((0, -1, -1), 2, "{0}"), ((0, 1, -1), 2, "{0,1}"), ((1, 0, -1), 1, "{1}")):
        case = ln_grad_case(x_dm, M23, b)
        answer = case.call_port()
        assert f"P{partial}" in str(answer.outputs[1])
        assert simulate(case, answer).label == SOUND, (x_dm, b)


def test_layer_norm_grad_keeping_a_partial_x_is_unsound():
    case = ln_grad_case((0, -1, -1), M23, 2, x_partial=(1,))
    answer = case.call_port()
    assert answer.inputs[0].partial_dims == {1}  # Paddle keeps x's Partial
    verdict = simulate(case, answer)
    assert verdict.label == UNSOUND and verdict.kind == CAUSE_PARTIAL_IN and verdict.tensor == "x_grad"
    assert verdict.max_error > 1.0


# --------------------------------------------------------------------------- the checks can fail
def test_wrong_claims_on_a_sound_answer_are_caught():
    case = ln_grad_case((0, -1, -1), M23, 2)
    good = case.call_port()
    assert simulate(case, good).label == SOUND
    mesh = M23
    no_partial = with_outputs(good, scale_grad=DistAttr((-1,), frozenset(), mesh))
    too_partial = with_outputs(good, x_grad=DistAttr((0, -1, -1), frozenset({1}), mesh))
    wrong_axis = with_outputs(good, x_grad=DistAttr((-1, 0, -1), frozenset(), mesh))
    replicated = with_outputs(good, x_grad=DistAttr((-1, -1, -1), frozenset(), mesh))
    for bad, tensor in ((no_partial, "scale_grad"), (too_partial, "x_grad"), (wrong_axis, "x_grad"),
                        (replicated, "x_grad")):
        verdict = simulate(case, bad)
        assert verdict.label == UNSOUND and verdict.tensor == tensor, (str(bad), verdict.summary())


def test_local_batch_statistics_get_their_own_label():
    """Keeping N split in training mode is plain data parallelism: right per shard only."""
    case = bn_case((0, -1), M2, shape=(8, 7), fmt="NC")
    dp = SpmdResult(
        inputs=(DistAttr((0, -1), frozenset(), M2),) + (DistAttr((-1,), frozenset(), M2),) * 4,
        outputs=(DistAttr((0, -1), frozenset(), M2),) + (DistAttr((-1,), frozenset(), M2),) * 5)
    assert simulate(case, dp).label == LOCAL_STATS
    eval_case = bn_case((0, -1), M2, shape=(8, 7), fmt="NC", is_test=True)
    assert simulate(eval_case, dp).label == SOUND  # running statistics: the split is exact


def test_sync_batch_norm_keeps_the_batch_only_when_it_splits_evenly():
    def case(mesh):
        ch = (7,)
        return Case("sync_batch_norm", mesh, (spec((8, 7, 10), (0, -1, -1), mesh),) + (rep(ch, mesh),) * 4,
                    (("data_format", "NCL"),))

    even, uneven = case(M2), case(M3)  # 8 over 2: 4,4; 8 over 3: 3,3,2
    answer = PROPOSED_RULES["sync_batch_norm"](*even.inputs, *even.attr_values())
    assert answer.inputs[0].dims_mapping == (0, -1, -1) and simulate(even, answer).label == SOUND
    assert PROPOSED_RULES["sync_batch_norm"](*uneven.inputs, *uneven.attr_values()).inputs[0].dims_mapping == (-1,) * 3
    keep = SpmdResult(
        inputs=(DistAttr((0, -1, -1), frozenset(), M3),) + (DistAttr((-1,), frozenset(), M3),) * 4,
        outputs=(DistAttr((0, -1, -1), frozenset(), M3),) + (DistAttr((-1,), frozenset(), M3),) * 5)
    verdict = simulate(uneven, keep)
    assert verdict.label == UNSOUND and verdict.kind == CAUSE_UNEVEN_SYNC


def test_ops_that_reject_the_case_on_one_device_are_not_judged():
    case = ln_grad_case((0, -1, -1), M23, 2)
    bad_b = Case("layer_norm", M23, (spec((8, 7, 10), (0, -1, -1), M23), None, None), (("begin_norm_axis", 0),))
    assert simulate(bad_b, bad_b.call_port()).label == OP_REJECTS  # Paddle: begin_norm_axis must be > 0
    assert simulate(case, case.call_port()).label == SOUND


def test_reshard_kind_separates_slicing_from_communication():
    given = spec((8, 7), (0, -1), M23)
    assert reshard_kind(given, DistAttr((0, -1), frozenset(), M23)) == ""
    assert reshard_kind(given, DistAttr((0, 1), frozenset(), M23)) == "local"
    assert reshard_kind(given, DistAttr((-1, -1), frozenset(), M23)) == "comm"
    assert reshard_kind(spec((8, 7), (-1, -1), M23, {1}), DistAttr((-1, -1), frozenset(), M23)) == "comm"


# --------------------------------------------------------------------------- proposed rules
@pytest.mark.parametrize("rule", [r for r in RULES if RULES[r].op in ("batch_norm", "sync_batch_norm", "layer_norm")])
# (instance_norm, rms_norm, fast_ln, group_norm: tests/test_oracle_norms.py)
def test_proposed_rules_are_sound_on_a_sample_of_the_grid(rule):
    judge = Judge()
    cases = sample(list(oracle_grid(rule)), 250, seed=5)
    labels = {}
    for case in cases:
        judged = judge(case, "proposed")
        labels[case.case_id] = judged.verdict.label
        if judged.verdict.label == RULE_ERROR:
            assert "invalid" in case.case_id, (case.describe(), judged.error)
        else:
            assert judged.verdict.label in (SOUND, OP_REJECTS), (case.describe(), str(judged.answer),
                                                                  judged.verdict.summary())
    assert sum(v == SOUND for v in labels.values()) >= 50


@pytest.mark.parametrize("rule", ["sync_batch_norm", "sync_batch_norm_grad"])
def test_proposed_sync_rules_are_sound_when_the_kernel_reduces_over_the_whole_mesh(rule):
    """Paddle's sync kernel all-reduces over its whole communicator, not only the batch mesh dims."""
    judge = Judge(sync_group="mesh")
    for case in sample(list(oracle_grid(rule)), 200, seed=9):
        verdict = judge(case, "proposed").verdict
        if verdict.label == RULE_ERROR:  # the co-shard invalid set is on 2x3, an oracle mesh
            assert "-invalid-" in case.case_id, (case.describe(), verdict.summary())
            continue
        assert verdict.label in (SOUND, OP_REJECTS), (case.describe(), verdict.summary())


def test_proposed_batch_norm_picks_the_channel_dim_that_moves_the_fewest_tensors():
    mesh = M23
    x = spec((8, 7, 10, 12), (-1, -1, -1, -1), mesh)
    sharded = spec((7,), (0,), mesh)
    answer = PROPOSED_RULES["batch_norm"](x, sharded, sharded, sharded, rep((7,), mesh))
    assert answer.inputs[0].dims_mapping == (-1, 0, -1, -1)  # x is sliced locally, three stats stay put
    case = Case("batch_norm", mesh, (x, sharded, sharded, sharded, rep((7,), mesh)), ())
    assert simulate(case, answer).label == SOUND


def test_proposed_batch_norm_shards_per_channel_tensors_with_c_and_keeps_n_in_eval():
    case = bn_case((0, 1, -1, -1), M23)
    train = PROPOSED_RULES["batch_norm"](*case.inputs, *case.attr_values())
    assert [a.dims_mapping for a in train.inputs] == [(-1, 1, -1, -1), (1,), (1,), (1,), (1,)]
    evaluated = bn_case((0, 1, -1, -1), M23, is_test=True)
    answer = PROPOSED_RULES["batch_norm"](*evaluated.inputs, *evaluated.attr_values())
    assert answer.inputs[0].dims_mapping == (0, 1, -1, -1)
    assert simulate(evaluated, answer).label == SOUND and simulate(case, train).label == SOUND
    grad = bn_grad_case((0, 1, -1), M23, use_global_stats=True)
    ganswer = PROPOSED_RULES["batch_norm_grad"](*grad.inputs, *grad.attr_values())
    assert str(ganswer.outputs[1]) == "[1] P{0}" and simulate(grad, ganswer).label == SOUND


def test_cli_reports_the_known_bugs(tmp_path, capsys):
    rc = oracle_main(["--rules", "batch_norm,batch_norm_grad,layer_norm_grad", "--sample", "400",
                      "--report-dir", str(tmp_path), "--quiet"])
    assert rc == 0
    summary = json.loads((tmp_path / "oracle.json").read_text())
    bugs = {(b["profile"], b["rule"], b["label"]) for b in summary["bugs"]}
    assert ("paddle", "batch_norm", UNRUNNABLE) in bugs
    assert ("paddle", "batch_norm_grad", UNRUNNABLE) in bugs
    assert not any(b[0] == "proposed" for b in bugs)
    assert summary["profiles"]["proposed"]["batch_norm"][SOUND] > summary["profiles"]["paddle"]["batch_norm"][SOUND]
    report = (tmp_path / "oracle.md").read_text()
    assert "paddle vs proposed" in report
    # the repro commands name each file by the path it was written to (they run as pasted)
    assert f"--cases {tmp_path / 'repro-'}" in report
    from paddle_spmd_port.launch.cases import LaunchCase

    repros = [LaunchCase.from_json(json.loads(p.read_text())) for p in tmp_path.glob("repro-*.jsonl")]
    assert any(r.op == "batch_norm" and f"S({r.channel_axis})" in r.placements for r in repros)


def test_cli_rejects_unknown_rules(capsys):
    assert oracle_main(["--rules", "no_such_rule"]) == 2


# --------------------------------------------------------------------------- against Paddle
def _paddle():
    return pytest.importorskip("paddle")


@pytest.mark.native
def test_shard_convention_matches_paddle():
    paddle = _paddle()
    import paddle.distributed as dist

    for n, k in ((7, 4), (6, 4), (7, 3), (5, 2), (8, 3)):
        for slot in range(k):
            ids = list(range(1, k))
            ids.insert(slot, 0)  # this process (rank 0) sits at mesh slot `slot`
            t = dist.shard_tensor(paddle.to_tensor(np.arange(n, dtype="float32")),
                                  dist.ProcessMesh(ids, dim_names=["x"]), [dist.Shard(0)])
            lo, hi = shard_range(n, k, slot)
            assert t._local_value().numpy().astype(int).tolist() == list(range(lo, hi)), (n, k, slot)


@pytest.mark.native
def test_kernels_match_paddle_dense():
    paddle = _paddle()
    from paddle import _C_ops

    rng = np.random.default_rng(3)

    def t(a):
        return None if a is None else paddle.to_tensor(a)

    modes = ((False, False, False), (True, False, False), (False, True, False), (True, False, True))
    for shape, fmt in (((6, 5, 3, 4), "NCHW"), ((6, 3, 4, 5), "NHWC"), ((6, 5), "NCHW")):
        c = shape[1] if fmt == "NCHW" else shape[-1]
        x, dy = rng.standard_normal(shape), rng.standard_normal(shape)
        m, v, s, b = rng.standard_normal(c), rng.uniform(0.5, 2, c), rng.standard_normal(c), rng.standard_normal(c)
        sm, sv = rng.standard_normal(c), rng.uniform(0.5, 2, c)
        for is_test, ugs, ts in modes:
            attrs = {"is_test": is_test, "use_global_stats": ugs, "trainable_statistics": ts, "momentum": 0.9,
                     "epsilon": 1e-5, "data_format": fmt}
            ours = bn_kernel.batch_norm({"x": x, "mean": m, "variance": v, "scale": s, "bias": b}, attrs)
            theirs = _C_ops.batch_norm(t(x), t(m), t(v), t(s), t(b), is_test, 0.9, 1e-5, fmt, ugs, ts)
            for name, value in zip(RULES["batch_norm"].result_outputs, theirs, strict=True):
                if ours[name] is not None:
                    np.testing.assert_allclose(ours[name], value.numpy(), rtol=1e-9, atol=1e-10, err_msg=name)
            g_ours = bn_kernel.batch_norm_grad({"x": x, "scale": s, "bias": b, "mean_out": m, "variance_out": v,
                                              "saved_mean": sm, "saved_variance": sv, "reserve_space": None,
                                              "out_grad": dy}, attrs)
            g_theirs = _C_ops.batch_norm_grad(t(x), t(s), t(b), t(m), t(v), t(sm), t(sv), None, t(dy), 0.9, 1e-5, fmt,
                                              is_test, ugs, ts)
            for name, value in zip(RULES["batch_norm_grad"].result_outputs, g_theirs, strict=True):
                np.testing.assert_allclose(g_ours[name], value.numpy(), rtol=1e-9, atol=1e-10, err_msg=name)
        # the sync kernel on one device is batch_norm
        one = sync_kernel.sync_batch_norm([{"x": x, "mean": m, "variance": v, "scale": s, "bias": b}],
                                      {"is_test": False, "momentum": 0.9, "epsilon": 1e-5, "data_format": fmt}, [[0]])
        ref = bn_kernel.batch_norm({"x": x, "mean": m, "variance": v, "scale": s, "bias": b},
                                 {"is_test": False, "momentum": 0.9, "epsilon": 1e-5, "data_format": fmt})
        for name in ("out", "mean_out", "variance_out", "saved_mean", "saved_variance"):
            np.testing.assert_allclose(one[0][name], ref[name], rtol=1e-9, atol=1e-10)
    for shape, b in (((4, 3, 5), 2), ((4, 3, 5), 1), ((6, 7), 1)):
        right = math.prod(shape[b:])
        x, dy = rng.standard_normal(shape), rng.standard_normal(shape)
        s, bias = rng.standard_normal(right), rng.standard_normal(right)
        out = ln_kernel.layer_norm({"x": x, "scale": s, "bias": bias}, {"epsilon": 1e-5, "begin_norm_axis": b})
        np.testing.assert_allclose(out["out"], _C_ops.layer_norm(t(x), t(s), t(bias), 1e-5, b).numpy(), rtol=1e-9)
        grads = ln_kernel.layer_norm_grad({"x": x, "scale": s, "bias": bias, "mean": out["mean"],
                                         "variance": out["variance"], "out_grad": dy},
                                        {"epsilon": 1e-5, "begin_norm_axis": b})
        theirs = _C_ops.layer_norm_grad(t(x), t(s), t(bias), t(out["mean"]), t(out["variance"]), t(dy), 1e-5, b)
        for name, value in zip(RULES["layer_norm_grad"].result_outputs, theirs, strict=True):
            np.testing.assert_allclose(grads[name], value.numpy(), rtol=1e-8, atol=1e-10, err_msg=name)


@pytest.mark.native
def test_kernel_shape_checks_match_paddle():
    """What the oracle calls "rejected" Paddle's kernel rejects; what it calls "unchecked" runs."""
    paddle = _paddle()
    from paddle import _C_ops

    rng = np.random.default_rng(4)
    x, dy = rng.standard_normal((4, 3, 5)), rng.standard_normal((4, 3, 5))
    attrs = {"is_test": False, "momentum": 0.9, "epsilon": 1e-5, "data_format": "NCHW", "use_global_stats": False,
             "trainable_statistics": False}

    def t(a):
        return paddle.to_tensor(a)

    c3, c6 = rng.standard_normal(3), rng.standard_normal(6)
    with pytest.raises(kernels.KernelRejects) as ours:
        bn_kernel.batch_norm({"x": x, "mean": c3, "variance": c3 ** 2, "scale": c6, "bias": c3}, attrs)
    assert ours.value.checked
    with pytest.raises(ValueError, match="scale"):
        _C_ops.batch_norm(t(x), t(c3), t(c3 ** 2), t(c6), t(c3), False, 0.9, 1e-5, "NCHW", False, False)
    grad_in = {"x": x, "scale": c6, "bias": c3, "mean_out": c3, "variance_out": c3 ** 2, "saved_mean": c3,
               "saved_variance": c3 ** 2, "reserve_space": None, "out_grad": dy}
    with pytest.raises(kernels.KernelRejects) as ours:
        bn_kernel.batch_norm_grad(grad_in, attrs)
    assert not ours.value.checked
    _C_ops.batch_norm_grad(t(x), t(c6), t(c3), t(c3), t(c3 ** 2), t(c3), t(c3 ** 2), None, t(dy), 0.9, 1e-5, "NCHW",
                           False, False, False)  # Paddle runs it (reading the wrong channels)
    with pytest.raises(kernels.KernelRejects) as ours:
        ln_kernel.layer_norm({"x": x, "scale": c3, "bias": None}, {"epsilon": 1e-5, "begin_norm_axis": 2})
    assert ours.value.checked
    with pytest.raises(ValueError, match="scale"):
        _C_ops.layer_norm(t(x), t(c3), None, 1e-5, 2)


# --------------------------------------------------------------------------- real 2-rank runs
def _oracle_cases_for(launch_case):
    """The forward and grad cases the dist API builds for a launch case (as launch.predict does)."""
    from paddle_spmd_port.ops.kit.layout import kernel_layout

    mesh = ProcessMesh(tuple(launch_case.mesh_shape))
    x = spec(launch_case.shape, launch_case.dims_mapping, mesh)
    p = launch_case.param_shape
    scale = rep(p, mesh) if launch_case.weight else None
    bias = rep(p, mesh) if launch_case.bias else None
    if launch_case.op == "layer_norm":
        b = launch_case.begin_norm_axis
        fwd = Case("layer_norm", mesh, (x, scale, bias), (("begin_norm_axis", b),))
        out, mean, var = fwd.call_port().outputs
        stat = launch_case.shape[:b]
        grad = Case("layer_norm_grad", mesh, (x, scale, bias, spec(stat, mean.dims_mapping, mesh),
                                              spec(stat, var.dims_mapping, mesh),
                                              spec(launch_case.shape, out.dims_mapping, mesh)),
                    (("begin_norm_axis", b),))
        return fwd, grad
    fmt, test = kernel_layout(launch_case.data_format), not launch_case.training
    attrs = (("is_test", test), ("data_format", fmt), ("use_global_stats", test))
    fwd = Case("batch_norm", mesh, (x, rep(p, mesh), rep(p, mesh), scale, bias), attrs)
    outs = fwd.call_port().outputs
    saved = tuple(spec(p, a.dims_mapping, mesh) for a in outs[1:5])
    grad = Case("batch_norm_grad", mesh, (x, scale, bias, *saved, None, spec(launch_case.shape, outs[0].dims_mapping,
                                                                              mesh)), attrs)
    return fwd, grad


@pytest.mark.native
@pytest.mark.multiproc
def test_simulator_agrees_with_real_paddle_on_two_ranks(tmp_path):
    _paddle()
    pytest.importorskip("paddle_spmd_port.launch.session", reason="needs the launch package (real multi-rank runs)")
    from paddle_spmd_port.launch.cases import LaunchCase
    from paddle_spmd_port.launch.launcher import LaunchConfig, run_launch
    from paddle_spmd_port.launch.session import run_cases
    from paddle_spmd_port.ops.layer_norm.kernel import PARTIAL_X_SCRIPT

    def bn(i, shape, fmt, pl, training=True):
        return LaunchCase(f"o{i}", "batch_norm", shape, (2,), pl, data_format=fmt, training=training)

    def ln(i, shape, norm, pl, affine=True):
        return LaunchCase(f"o{i}", "layer_norm", shape, (2,), pl, normalized_shape=norm, weight=affine, bias=affine)

    cases = [bn(0, (8, 7, 10), "NCL", ("S(1)",)), bn(1, (8, 7, 10), "NCL", ("S(0)",)),
             bn(2, (8, 7, 10), "NCL", ("S(2)",), training=False), bn(3, (7, 6), "NC", ("S(1)",), training=False),
             ln(4, (7, 6, 8), (8,), ("S(0)",)), ln(5, (8, 7, 10), (7, 10), ("S(1)",), affine=False),
             ln(6, (8, 7, 10), (10,), ("S(1)",))]
    session = run_cases(cases, LaunchConfig(nproc=2, timeout=240), work_dir=tmp_path / "cases")
    records = session.case_records()
    compared = 0
    for case in cases:
        fwd, grad = _oracle_cases_for(case)
        v_fwd = simulate(fwd, fwd.call_port())
        for rank in (0, 1):
            rec = records[case.case_id][rank]
            if v_fwd.label == UNRUNNABLE:
                assert rec["error"] and rec["error"]["stage"] == "forward", (case.describe(), rec)
                continue
            assert v_fwd.label == SOUND and not rec["error"], (case.describe(), v_fwd.summary(), rec)
            out = rec["tensors"]["out"]
            assert out["max_abs_err"] <= 1e-4 * (1 + out["ref_max_abs"]), (case.describe(), out)
            v_grad = simulate(grad, grad.call_port())
            assert v_grad.label == SOUND, (case.describe(), v_grad.summary())
            for name in ("x_grad", "weight_grad", "bias_grad"):
                entry = rec["tensors"].get(name)
                if entry and "max_abs_err" in entry:
                    assert entry["max_abs_err"] <= 1e-4 * (1 + entry["ref_max_abs"]), (case.describe(), name, entry)
                    compared += 1
    assert compared >= 20  # gradients were really compared, not skipped

    # a Partial x: the oracle says layer_norm_grad is unsound, and so is the real backward
    shape = (8, 7, 10)
    partial = ln_grad_case((-1, -1, -1), M2, 2, shape=shape, x_partial=(0,))
    assert simulate(partial, partial.call_port()).label == UNSOUND
    script = tmp_path / "partial_x.py"
    script.write_text(PARTIAL_X_SCRIPT.format(shape=list(shape), norm=[10], weight=True, bias=True))
    launched = run_launch(str(script), [], LaunchConfig(nproc=2, timeout=180), work_dir=tmp_path / "partial")
    assert launched.ok, launched.failure_text()
    for rank in (0, 1):
        log = launched.rank_log(rank).read_text().splitlines()
        line = [text for text in log if text.startswith(f"rank {rank}:")][0]
        parts = (part.rsplit(" err ", 1) for part in line.split(": ", 1)[1].split(","))
        errors = {k.strip(): float(v) for k, v in parts}
        assert errors["y"] < 1e-4 and errors["x.grad"] > 1e-1, line


def test_rules_all_judges_every_rule(tmp_path):
    """`--rules all` is every rule with a numpy kernel, which today is every rule (a rule without one
    is listed as not judged: tests/test_oracle_norms.py)."""
    code = oracle_main(["--max-cases", "1", "--profile", "paddle", "--report-dir", str(tmp_path), "--quiet"])
    assert code == 0
    md = (tmp_path / "oracle.md").read_text()
    assert "Not judged" not in md and all(f"| {r} " in md for r in RULES)
