"""Real runs with paddle.distributed.launch, checked against the port (paddle_spmd_port.launch).

Pure tests (no Paddle): case/placement bookkeeping (co-shard placements ``S(d)#k`` included),
the port's predictions for the cases the real runs are about, the verdict logic on hand-made rank
records, the launch command line. Multi-process tests (``multiproc``): 2 ranks on a 1-D mesh and 4
ranks on a 2x2 mesh, each a batch of batch_norm and layer_norm cases in one launch; group_norm and
instance_norm on 2 ranks, then judged again with a planted wrong rule (a placement mismatch); one co-sharded
case on 4 ranks (in the 2x2 batch's launch); a rank raising and a rank hanging make the launcher fail
within its timeout, show that rank's log, and leave no process behind; a launch timing out through
the CLI exits 3 with its report and logs. Bad arguments: ``test_bad_input_launch.py``; SIGINT/SIGTERM
during a launch: ``test_signals_launch.py``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from paddle_spmd_port.launch.cases import (
    LaunchCase,
    coshard_cases,
    default_cases,
    placements_to_dims_mapping,
    read_cases,
    select_by_rules,
    write_cases,
)
from paddle_spmd_port.launch.launcher import (
    TOKEN_ENV,
    LaunchConfig,
    end_processes,
    launch_command,
    new_job_id,
    processes_with_token,
    run_launch,
)
from paddle_spmd_port.launch.output import render_markdown
from paddle_spmd_port.launch.predict import UNEVEN_COSHARD, predict, uneven_coshard
from paddle_spmd_port.launch.report import build_report, crash_key, forward_crash_key, verdict_for_case
from paddle_spmd_port.launch.runner import placement_text
from paddle_spmd_port.launch.session import ChildGuard, Stopped, case_records, read_rank_records
from tests.cli_checks import BadInput, assert_usage_error


def ln(cid, shape, pl, ns, mesh=(2,), **kw):
    return LaunchCase(cid, "layer_norm", tuple(shape), tuple(mesh), tuple(pl), normalized_shape=tuple(ns), **kw)


def bn(cid, shape, pl, fmt, mesh=(2,), **kw):
    return LaunchCase(cid, "batch_norm", tuple(shape), tuple(mesh), tuple(pl), data_format=fmt, **kw)


# --------------------------------------------------------------------------------------------
# pure: cases and predictions


def test_placements_to_dims_mapping():
    assert placements_to_dims_mapping(("S(1)", "R"), 3) == (-1, 0, -1)
    assert placements_to_dims_mapping(("S(2)", "S(0)"), 3) == (1, -1, 0)
    assert placements_to_dims_mapping(("R",), 2) == (-1, -1)
    with pytest.raises(ValueError, match="on 2 mesh dims"):
        placements_to_dims_mapping(("S(0)", "S(0)"), 2)
    with pytest.raises(ValueError, match="axis 3"):
        placements_to_dims_mapping(("S(3)",), 3)


def test_co_shard_placements_give_the_mesh_dims_in_shard_order():
    assert placements_to_dims_mapping(("S(0)#0", "S(0)#1"), 3) == ((0, 1), -1, -1)
    assert placements_to_dims_mapping(("S(0)#1", "S(0)#0"), 3) == ((1, 0), -1, -1)
    assert placements_to_dims_mapping(("S(1)#1", "S(0)", "S(1)#0"), 2) == (1, (2, 0))
    assert placements_to_dims_mapping(("S(0)#2", "S(0)#0", "S(0)#1"), 1) == ((1, 2, 0),)
    bad = {("S(0)#0", "S(0)#0"): "distinct shard order 0..1",   # two members, one order
           ("S(0)#1", "S(0)#2"): "distinct shard order 0..1",   # orders not 0..n-1
           ("S(0)", "S(0)#1"): "distinct shard order 0..1",     # one member without an order
           ("S(0)#0", "R"): "one mesh dim only",                # an order on a lone member
           ("S(0)#x", "R"): "is not 'R', 'S(<axis>)'",
           ("S(0)#-1", "S(0)#0"): "is not 'R', 'S(<axis>)'"}
    for placements, message in bad.items():
        with pytest.raises(ValueError, match=re.escape(message)):
            placements_to_dims_mapping(placements, 2)
    case = ln("cs", (8, 4, 8), ("S(0)#1", "S(0)#0"), (8,), mesh=(2, 2))
    assert case.dims_mapping == ((1, 0), -1, -1)
    assert LaunchCase.from_json(json.loads(json.dumps(case.to_json()))) == case
    with pytest.raises(ValueError, match="distinct shard order"):
        ln("bad", (8, 4, 8), ("S(0)#0", "S(0)#0"), (8,), mesh=(2, 2))


def test_the_runner_reads_co_shard_placements_back_with_their_shard_order():
    class Shard:  # a plain Shard: has get_dim
        def __init__(self, dim):
            self.dim = dim

        def is_shard(self):
            return True

        def get_dim(self):
            return self.dim

    class CoShardMember:  # what tensor.placements holds for a co-shard member in 3.3.1: no get_dim
        def __init__(self, text):
            self.text = text

        def is_shard(self):
            return True

        def __str__(self):
            return self.text

    assert placement_text(Shard(2)) == "S(2)"
    assert placement_text(CoShardMember("Shard(dim=0, shard_order=1)")) == "S(0)#1"
    # a format the runner does not know is kept visibly, so it differs from every prediction
    assert placement_text(CoShardMember("CoShard(dim=0, order=1)")) == "?CoShard(dim=0, order=1)"


def test_co_shard_predictions_follow_the_collapse_and_the_nested_cut():
    # 2x2, equal sizes: the rule reads the member listed first (shard order 0)
    p = predict(ln("a", (8, 4, 8), ("S(0)#0", "S(0)#1"), (8,), mesh=(2, 2)))
    assert p.forward.runs and p.expectation("out").placements == ("S(0)", "R")
    assert p.expectation("weight_grad").placements == ("P", "R")
    x_grad = p.expectation("x_grad")  # the leaf's own placement, co-shard kept, nested cut
    assert x_grad.placements == ("S(0)#0", "S(0)#1") and x_grad.rank_local_shapes == ((2, 4, 8),) * 4
    p = predict(ln("b", (8, 4, 8), ("S(0)#1", "S(0)#0"), (8,), mesh=(2, 2)))
    assert p.expectation("out").placements == ("R", "S(0)")
    # 2x3: the member of the larger mesh size, whatever its order
    for pl in (("S(0)#0", "S(0)#1"), ("S(0)#1", "S(0)#0")):
        assert predict(ln("c", (12, 4, 8), pl, (8,), mesh=(2, 3))).expectation("out").placements == ("R", "S(0)")
    # batch_norm, C co-sharded: C stays split on one mesh dim, scale replicated: the kernel error
    p = predict(bn("d", (8, 8, 2, 8), ("S(1)#1", "S(1)#0"), "NCHW", mesh=(2, 2)))
    assert p.forward.kernel_error and p.forward.result.outputs[0].placements() == ("R", "S(1)")


def test_x_grad_read_back_without_its_shard_order_is_a_placement_difference():
    case = ln("x", (8, 4, 8), ("S(0)#1", "S(0)#0"), (8,), mesh=(2, 2), weight=False, bias=False)
    pred = predict(case)

    def record(rank, x_grad_placements):
        tensors = {t.name: {"present": True, "ref_present": True, "placements": list(t.placements),
                            "local_shape": list(t.local_shape_on(rank)), "max_abs_err": 0.0, "ref_max_abs": 1.0,
                            "shape_ok": True} for t in pred.tensors}
        tensors["x_grad"]["placements"] = x_grad_placements
        return {"kind": "case", "case_id": "x", "rank": rank, "stages": {"reference": "ok", "forward": "ok",
                "backward": "ok"}, "error": None, "skipped": None, "tensors": tensors}

    good = {r: record(r, ["S(0)#1", "S(0)#0"]) for r in range(4)}
    assert verdict_for_case(case, good, [0, 1, 2, 3], 1e-5).verdict == "agree"
    for wrong in (["S(0)", "S(0)"], ["S(0)#0", "S(0)#1"], ["?Shard(dim=0, order=1)", "R"]):
        v = verdict_for_case(case, {r: record(r, wrong) for r in range(4)}, [0, 1, 2, 3], 1e-5)
        assert v.verdict == "placement differs" and not v.expected and "x_grad" in v.reasons[0]


def test_a_case_no_rank_answered_in_a_launch_of_unknown_ranks_is_skipped():
    """A multi-node launch that failed before any rank wrote knows no rank (the report's ranks are
    the ones that wrote): each case is skipped, unexplained; was min() of nothing, an exit 4."""
    case = default_cases((2,))[0]
    v = verdict_for_case(case, {}, [], 1e-5)
    assert v.verdict == "skipped" and not v.expected and "no result from any rank" in v.reasons[0]
    assert "interrupted by SIGINT" in verdict_for_case(case, {}, [], 1e-5, interrupted="SIGINT").reasons[0]


def test_an_uneven_co_shard_is_a_predicted_forward_abort_and_an_expected_skip():
    case = ln("u", (10, 4, 8), ("S(0)#0", "S(0)#1"), (8,), mesh=(2, 2))  # pieces 3,2,3,2
    p = predict(case)
    assert p.forward.crash.startswith(UNEVEN_COSHARD) and "pieces of 3, 2 rows" in p.forward.crash
    assert p.skip_reason("forward") is not None
    assert uneven_coshard(ln("e", (8, 4, 8), ("S(0)#0", "S(0)#1"), (8,), mesh=(2, 2))) is None
    assert uneven_coshard(ln("p", (10, 4, 8), ("S(0)", "R"), (8,), mesh=(4, 1))) is None  # plain: not a co-shard
    record = {"kind": "case", "case_id": "u", "stages": {"reference": "ok"}, "error": None, "tensors": {},
              "skipped": {"stage": "forward", "reason": p.skip_reason("forward")}}
    v = verdict_for_case(case, {r: dict(record, rank=r) for r in range(4)}, [0, 1, 2, 3], 1e-5)
    assert v.verdict == "skipped" and v.expected and UNEVEN_COSHARD in v.reasons[0]
    # a forward skipped without a predicted crash is not accounted for
    other = ln("o", (8, 4, 8), ("S(0)#0", "S(0)#1"), (8,), mesh=(2, 2))
    v = verdict_for_case(other, {r: dict(record, case_id="o", rank=r) for r in range(4)}, [0, 1, 2, 3], 1e-5)
    assert v.verdict == "skipped" and not v.expected


def test_the_co_shard_set():
    for mesh, orders in (((2, 2), 2), ((2, 2, 2), 6)):
        cases = coshard_cases(mesh)
        assert {c.op for c in cases} == {"layer_norm", "batch_norm"} and all(c.backward for c in cases)
        entries = {c.dims_mapping for c in cases}
        assert all(any(type(e) is tuple for e in dm) for dm in entries)  # every case co-shards x
        members = {e for dm in entries for e in dm if type(e) is tuple}
        assert len(members) == orders and all(m[::-1] in members for m in members)  # both orders
        what = {n for c in cases for n in c.notes}
        for needed in ("not normalised", "normalised", "N", "C", "W (normalised)"):
            assert any(n.endswith(f": {needed}") for n in what), needed
        assert {c.data_format for c in cases if "C" in c.notes[0].rsplit(": ", 1)[1]} == {"NCHW", "NHWC"}
        assert len({c.case_id for c in cases}) == len(cases)
        predictions = [predict(c) for c in cases]
        assert sum(p.forward.crash is not None for p in predictions) == 2 * orders  # the uneven config only


def test_case_validation_and_json_roundtrip(tmp_path):
    case = bn("a", (4, 8, 6), ("S(2)",), "NLC", training=False, weight=False)
    assert case.channel_axis == 2 and case.param_shape == (6,)
    assert ln("b", (4, 6, 8), ("R",), (6, 8)).begin_norm_axis == 1
    write_cases([case, ln("b", (4, 6, 8), ("R",), (6, 8))], tmp_path / "c.jsonl")
    assert read_cases(tmp_path / "c.jsonl")[0] == case
    with pytest.raises(ValueError, match="rank-4"):
        bn("c", (4, 6), ("R",), "NCHW")
    with pytest.raises(ValueError, match="trailing"):
        ln("d", (4, 6, 8), ("R",), (6,))
    write_cases([case, case], tmp_path / "dup.jsonl")
    with pytest.raises(ValueError, match="unique"):
        read_cases(tmp_path / "dup.jsonl")


def test_default_grids_have_enough_cases_for_one_launch():
    for mesh, want in (((2,), 100), ((2, 2), 100)):
        cases = default_cases(mesh)
        assert len(cases) >= want
        assert {c.op for c in cases} == {"layer_norm", "batch_norm", "group_norm", "instance_norm", "p_norm"}
        assert {c.data_format for c in cases if c.op == "batch_norm"} == {"NC", "NCL", "NLC", "NCHW", "NHWC",
                                                                          "NCDHW", "NDHWC"}
        assert {c.training for c in cases if c.op == "batch_norm"} == {True, False}
        assert {(c.weight, c.bias) for c in cases} == {(True, True), (False, False), (True, False), (False, True)}
    assert any(c.op == "sync_batch_norm" for c in default_cases((2,), backend="gpu"))
    assert not any(c.op == "sync_batch_norm" for c in default_cases((2,)))


COSHARD_BAD = [
    BadInput(("launch", "--nproc", "4", "--coshard", "--cases", "c.jsonl"), "--coshard",
             {"c.jsonl": json.dumps(ln("a", (8, 8), ("S(0)#0", "S(0)#1"), (8,), mesh=(2, 2)).to_json()) + "\n"}),
    BadInput(("launch", "--nproc", "2", "--coshard"), "--coshard"),        # no default co-shard mesh for 2
    BadInput(("launch", "--nproc", "4", "--coshard", "--mesh", "4"), "--mesh"),  # a 1-D mesh cannot co-shard
]


@pytest.mark.parametrize("row", COSHARD_BAD, ids=[r.id for r in COSHARD_BAD])
def test_coshard_usage_errors(row: BadInput, tmp_path: Path) -> None:
    assert_usage_error(row, tmp_path)


def test_coshard_writes_its_set_for_the_mesh_of_the_ranks(tmp_path: Path) -> None:
    from paddle_spmd_port.launch.cli import main

    for nproc, mesh, args in (("4", (2, 2), ()), ("8", (2, 2, 2), ()), ("6", (2, 3), ("--mesh", "2x3"))):
        out = tmp_path / f"cs{nproc}.jsonl"
        assert main(["--nproc", nproc, "--coshard", *args, "--write-cases", str(out)]) == 0
        assert read_cases(out) == coshard_cases(mesh)


def test_predict_layer_norm_keeps_leading_axes_and_makes_grads_partial():
    p = predict(ln("a", (4, 6, 8), ("S(0)",), (8,)))
    assert p.expectation("out").placements == ("S(0)",) and p.expectation("out").local_shape == (2, 6, 8)
    assert p.expectation("weight_grad").placements == ("P",) and p.expectation("bias_grad").placements == ("P",)
    p = predict(ln("b", (4, 6, 8), ("S(2)",), (8,)))  # a normalised axis: replicated
    assert p.expectation("out").placements == ("R",) and p.expectation("weight_grad").placements == ("R",)
    p = predict(ln("c", (4, 6, 8), ("S(1)", "S(0)"), (6, 8), mesh=(2, 2), weight=False, bias=False))
    assert p.expectation("out").placements == ("R", "S(0)") and p.expectation("out").local_shape == (2, 6, 8)


def test_predict_layer_norm_multi_dim_weight_is_the_rule_error_paddle_raises():
    p = predict(ln("a", (4, 6, 8), ("S(0)",), (6, 8)))
    assert p.forward.rule_error is not None and not p.forward.runs
    assert p.forward.rule_error.family == "ValueError"
    assert p.forward.rule_error.message == "The ndim of scale in layer_norm should be 1, but got [2]."
    assert predict(ln("b", (4, 6, 8), ("S(0)",), (6, 8), weight=False, bias=False)).forward.runs


def test_predict_batch_norm_uses_the_format_f_batch_norm_passes():
    # NLC -> 'NHWC': channel = last axis; NCL -> 'NCHW': channel = axis 1
    assert predict(bn("a", (4, 8, 6), ("S(1)",), "NLC")).expectation("out").placements == ("R",)
    assert predict(bn("b", (4, 6, 8), ("S(2)",), "NCL")).expectation("out").placements == ("R",)
    for case in (bn("c", (4, 8, 6), ("S(2)",), "NLC"), bn("d", (4, 6, 8), ("S(1)",), "NCL")):
        p = predict(case)
        assert p.forward.kernel_error == ("the shape of scale must equal to [3]", "the shape of scale is [6]")


def test_predict_batch_norm_channel_sharded_failure_modes():
    p = predict(bn("nc", (4, 6, 2, 4), ("S(1)",), "NCHW", weight=False, bias=False))
    assert p.forward.runs and p.expectation("out").placements == ("S(1)",)
    assert p.expectation("mean_out").placements == ("S(0)",)
    assert p.skip_reason("backward") and "none-with-sharded-c" in p.backward.crash
    risky = dict(p.numeric_risks)
    assert "running_mean" in risky and "out" not in risky
    p = predict(bn("w", (4, 6, 2, 4), ("S(1)",), "NCHW", bias=False))
    assert p.forward.runs and "out" in dict(p.numeric_risks)
    assert "bias:none-with-sharded-c" in p.backward.crash
    # C on a size-1 mesh dim: kernel shapes agree, grads are Partial on that dim
    p = predict(bn("m", (4, 6, 2, 4), ("S(1)", "S(0)"), "NCHW", mesh=(1, 2)))
    assert p.forward.runs and p.backward.runs
    assert p.expectation("out").placements == ("S(1)", "R") and p.expectation("weight_grad").placements == ("P", "R")


def _ok_record(case, rank, **override):
    """A rank record exactly as the port predicts it (what a perfect run would write)."""
    p = predict(case)
    tensors = {t.name: {"present": True, "ref_present": True, "placements": list(t.placements),
                        "local_shape": list(t.local_shape), "max_abs_err": 0.0, "ref_max_abs": 1.0, "shape_ok": True}
               for t in p.tensors}
    tensors.update(override)
    return {"kind": "case", "case_id": case.case_id, "rank": rank, "stages": {"reference": "ok", "forward": "ok"},
            "error": None, "skipped": None, "tensors": tensors, "seconds": 0.01}


def test_verdict_for_case_classifies_differences():
    case = ln("a", (4, 6, 8), ("S(0)",), (8,))
    assert verdict_for_case(case, {0: _ok_record(case, 0), 1: _ok_record(case, 1)}, [0, 1], 1e-5).verdict == "agree"
    wrong = {"present": True, "ref_present": True, "placements": ["R"], "local_shape": [8], "max_abs_err": 0.0,
             "ref_max_abs": 1.0}
    v = verdict_for_case(case, {0: _ok_record(case, 0, weight_grad=wrong), 1: _ok_record(case, 1, weight_grad=wrong)},
                         [0, 1], 1e-5)
    assert v.verdict == "placement differs" and not v.expected and "weight_grad" in v.reasons[0]
    off = dict(_ok_record(case, 0)["tensors"]["out"], max_abs_err=2e-5)
    v = verdict_for_case(case, {0: _ok_record(case, 0, out=off), 1: _ok_record(case, 1)}, [0, 1], 1e-5)
    assert v.verdict == "numerics differ" and not v.expected
    assert verdict_for_case(case, {0: _ok_record(case, 0)}, [0, 1], 1e-5).verdict == "skipped"
    err = dict(_ok_record(case, 0), error={"stage": "forward", "type": "ValueError", "message": "(InvalidArgument) x"})
    v = verdict_for_case(case, {0: err, 1: dict(err, rank=1)}, [0, 1], 1e-5)
    assert v.verdict == "Paddle error" and not v.expected
    two_d = ln("b", (4, 6, 8), ("R",), (6, 8))
    err = {"kind": "case", "case_id": "b", "stages": {}, "skipped": None, "tensors": {}, "error": {
        "stage": "forward", "type": "ValueError",
        "message": "(InvalidArgument) The ndim of scale in layer_norm should be 1, but got [2].\n  [Hint: x] (at y)"}}
    v = verdict_for_case(two_d, {0: err, 1: err}, [0, 1], 1e-5)
    assert v.verdict == "Paddle error" and v.expected


def test_launch_command_per_backend():
    job = new_job_id()
    assert job != new_job_id()
    cpu = launch_command(LaunchConfig(nproc=2), "s.py", ["--a"], job, Path("/l"), 4000)
    assert cpu[cpu.index("--nproc_per_node") + 1] == "2" and "--devices" not in cpu
    assert cpu[cpu.index("--job_id") + 1] == job and cpu[-2:] == ["s.py", "--a"]
    gpu = launch_command(LaunchConfig(nproc=2, backend="gpu", nnodes="2", master="10.0.0.1:8090"), "s.py", [], job,
                         Path("/l"), 4000)
    assert gpu[gpu.index("--devices") + 1] == "0,1" and "--nproc_per_node" not in gpu
    assert gpu[gpu.index("--nnodes") + 1] == "2" and gpu[gpu.index("--master") + 1] == "10.0.0.1:8090"


def test_interrupted_report_says_so_first_and_marks_unfinished_cases_not_run():
    done, half, none = ln("a", (4, 6, 8), ("S(0)",), (8,)), ln("b", (4, 8), ("R",), (8,)), ln("c", (4, 8), ("R",), (8,))
    records = {"a": {0: _ok_record(done, 0), 1: _ok_record(done, 1)}, "b": {0: _ok_record(half, 0)}}
    report = build_report([done, half, none], records, [0, 1], {"title": "t"}, interrupted="SIGTERM")
    verdicts = {v.case.case_id: v for v in report.verdicts}
    assert verdicts["a"].verdict == "agree"
    for cid in ("b", "c"):
        assert verdicts[cid].verdict == "skipped" and verdicts[cid].reasons[0].startswith(
            "not run: interrupted by SIGTERM")
    assert render_markdown(report).splitlines()[0] == "# Real-run report (INTERRUPTED by SIGTERM, partial): t"
    assert report.to_json()["meta"]["interrupted"] == "SIGTERM"
    plain = build_report([done], records, [0, 1], {"title": "t"})
    assert render_markdown(plain).splitlines()[0] == "# Real-run report: t" and "interrupted" not in plain.meta


def test_rank_records_survive_a_kill_mid_line(tmp_path):
    results = tmp_path / "results"
    assert read_rank_records(results) == {}  # interrupted before the ranks started: nothing, no error
    results.mkdir()
    (results / "rank0.jsonl").write_text('{"kind": "start"}\n{"kind": "case", "case_id": "a"}\n{"kind": "ca')
    assert [r["kind"] for r in read_rank_records(results)[0]] == ["start", "case"]


def _sleeper(token: str | None = None) -> subprocess.Popen:
    env = dict(os.environ, **({TOKEN_ENV: token} if token else {}))
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env, start_new_session=True)


def test_end_processes_finds_a_token_in_another_session_and_ends_it():
    token = new_job_id()
    proc = _sleeper(token)
    try:
        deadline = time.monotonic() + 10
        while proc.pid not in processes_with_token(token) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.pid in processes_with_token(token)
        assert end_processes(token, grace=1.0) == ()
        assert proc.wait(timeout=5) is not None and processes_with_token(token) == {}
        assert end_processes(token) == ()  # nothing left: a no-op
    finally:
        proc.kill()
        proc.wait()


def test_child_guard_stop_kills_running_children_and_refuses_new_ones():
    guard = ChildGuard()
    proc = guard.popen([sys.executable, "-c", "import time; time.sleep(60)"])
    t0 = time.monotonic()
    guard.stop()
    assert proc.wait(timeout=5) == -9 and time.monotonic() - t0 < 5
    with pytest.raises(Stopped):
        guard.popen([sys.executable, "-c", "pass"])


# --------------------------------------------------------------------------------------------
# multi-process


def _leftovers(job_id: str) -> list[str]:
    """Processes of a launch still alive, found without the launcher's own helper: pgrep on the
    job id (in launch's and every rank's command line) and a scan of /proc environments."""
    found = subprocess.run(["pgrep", "-f", job_id], capture_output=True, text=True).stdout.split()
    needle = f"PADDLE_SPMD_LAUNCH_TOKEN={job_id}".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if needle in (entry / "environ").read_bytes() and b"Z" not in (entry / "stat").read_bytes().split(
                        b")")[-1][:3]:
                    found.append(entry.name)
            except OSError:
                pass
    return sorted(set(found))


def _batch(mesh: tuple[int, ...], stride: int, must: list[LaunchCase]) -> list[LaunchCase]:
    grid = default_cases(mesh)
    picked = [c for i, c in enumerate(grid) if i % stride == 0]
    extra = [dataclasses.replace(c, case_id=f"m{i}") for i, c in enumerate(must)]
    return picked + extra


@pytest.mark.multiproc
@pytest.mark.native
def test_two_ranks_one_d_mesh_through_the_cli(tmp_path):
    pytest.importorskip("paddle")
    from paddle_spmd_port.launch.cli import main

    must = [
        ln("", (4, 6, 8), ("S(0)",), (8,)),                        # out S(0), weight/bias grad Partial
        ln("", (4, 6, 8), ("S(1)",), (6, 8)),                      # 2-D weight: the forward rule raises
        bn("", (4, 6, 2, 4), ("S(1)",), "NCHW"),                   # C sharded: kernel scale-shape error
        bn("", (4, 6, 2, 4), ("S(1)",), "NCHW", weight=False, bias=False),  # runs; backward would segfault
        bn("", (4, 2, 4, 6), ("S(3)", "R"), "NHWC", mesh=(1, 2)),  # C on a size-1 mesh dim: S(3) kept
        LaunchCase("", "sync_batch_norm", (4, 6, 2, 4), (2,), ("S(0)",), data_format="NCHW"),
    ]
    cases = _batch((2,), 6, must)
    write_cases(cases, tmp_path / "cases.jsonl")
    t0 = time.monotonic()
    code = main(["--nproc", "2", "--cases", str(tmp_path / "cases.jsonl"), "--timeout", "120",
                 "--report-dir", str(tmp_path / "rep")])
    wall = time.monotonic() - t0
    report = json.loads((tmp_path / "rep" / "launch-np2.json").read_text())
    by_id = {c["case_id"]: c for c in report["cases"]}
    unexpected = [(c["case_id"], c["describe"], c["verdict"], c["reasons"]) for c in report["cases"]
                  if not c["expected"]]
    assert code == 0, unexpected
    assert len(by_id) == len(cases) and report["meta"]["cases"] == len(cases)
    assert (tmp_path / "rep" / "launch-np2.md").read_text().startswith("# Real-run report")
    assert not (tmp_path / "rep" / "launch-np2-logs").exists()  # nothing failed: logs discarded

    def tensor(cid, name):
        return next(t for t in by_id[cid]["tensors"] if t["name"] == name)

    assert by_id["m0"]["verdict"] == "agree"
    assert by_id["m0"]["comm"]["verdict"] == "agree" and by_id["m0"]["pir"]["verdict"] == "agree"
    assert all(c["pir"] is not None and c["comm"] is not None for c in report["cases"])
    assert tensor("m0", "out")["observed"] == ["S(0)"] and tensor("m0", "weight_grad")["observed"] == ["P"]
    assert tensor("m0", "weight_grad")["rel_err"] <= 1e-5
    assert by_id["m1"]["verdict"] == "Paddle error" and "ndim of scale" in by_id["m1"]["reasons"][0]
    assert by_id["m2"]["verdict"] == "Paddle error" and "the shape of scale must equal to [3]" in \
        by_id["m2"]["error"]["message"]
    assert any("native crash" in n and "SIGSEGV" in n for n in by_id["m3"]["notes"])
    assert tensor("m3", "out")["observed"] == ["S(1)"] and tensor("m3", "out")["numerics_ok"]
    assert tensor("m4", "out")["observed"] == ["S(3)", "R"] and tensor("m4", "weight_grad")["observed"] == ["P", "R"]
    assert by_id["m5"]["verdict"] == "skipped" and "no CPU kernel" in by_id["m5"]["reasons"][0]
    agreeing = [t["rel_err"] for c in report["cases"] if c["verdict"] == "agree" for t in c["tensors"]
                if t["rel_err"] is not None]
    assert agreeing and max(agreeing) <= 1e-5
    print(f"\n2 ranks: {len(cases)} cases in {wall:.1f}s, counts {report['counts']}")


#: x [8,4,8] co-sharded on axis 0 along mesh dims (1, 0) of 2x2 (test_four_ranks_one_co_sharded_case)
COSHARD_CASE = ln("cs", (8, 4, 8), ("S(0)#1", "S(0)#0"), (8,), mesh=(2, 2))


@pytest.fixture(scope="module")
def four_ranks(tmp_path_factory):
    """One launch on 4 ranks (a 2x2 mesh) of the 2x2 batch and the co-sharded case: each test below
    judges its own cases from it (build_report reads only the records of the cases it is given), and
    a second launch would pay the launcher's and four ranks' Paddle imports again. Free ports and a
    private job id per launch (launcher); the work dir, rank logs included, is kept under pytest's
    temp dir (the path is in every failure message)."""
    pytest.importorskip("paddle")
    from paddle_spmd_port.launch.session import run_cases

    must = [
        ln("", (4, 6, 8), ("S(0)", "S(1)"), (8,), mesh=(2, 2)),       # both leading axes kept, grads P,P
        ln("", (4, 6, 8), ("S(0)", "S(2)"), (8,), mesh=(2, 2)),       # normalised axis dropped
        bn("", (4, 6, 2, 4), ("S(0)", "S(2)"), "NCHW", mesh=(2, 2)),  # all-gathered: replicated
        bn("", (4, 2, 4, 6), ("R", "S(3)"), "NHWC", mesh=(2, 2)),     # C sharded: kernel error
    ]
    cases = _batch((2, 2), 12, must)
    assert COSHARD_CASE.case_id not in {c.case_id for c in cases}
    session = run_cases([*cases, COSHARD_CASE], LaunchConfig(nproc=4, timeout=150),
                        work_dir=tmp_path_factory.mktemp("launch-np4"))
    return cases, session


@pytest.mark.multiproc
@pytest.mark.native
def test_four_ranks_two_by_two_mesh(four_ranks):
    cases, session = four_ranks
    logs = f"logs kept in {session.launch.work_dir}"
    assert session.launch.ok, session.launch.failure_text() + "\n" + logs
    assert session.finished_ranks() == [0, 1, 2, 3], logs
    assert _leftovers(session.launch.job_id) == []
    report = build_report(cases, session.case_records(), [0, 1, 2, 3], {})
    unexpected = [(v.case.case_id, v.case.describe(), v.verdict, v.reasons) for v in report.verdicts
                  if not v.expected]
    assert not unexpected
    v = {x.case.case_id: x for x in report.verdicts}
    # communication: the N-D all-gather of m2 as predicted, function by function; m1 keeps axis 0
    # on mesh dim 0 and gathers only axis 2; no case's reshards differ unexplained
    m2 = v["m2"].comm
    assert m2 is not None and m2.verdict == "agree", m2.reasons
    assert [e.calls for e in m2.observed["forward"] if e.tensor == "x"] == [(("SToRReshard", 1),
                                                                            ("SToRReshard", 0))]
    assert [e.calls for e in v["m1"].comm.observed["forward"] if e.tensor == "x"] == [(("SToRReshard", 1),)]
    assert [(x.case.case_id, x.comm.reasons) for x in report.verdicts if x.comm and not x.comm.expected] == []
    t = {c.name: c for c in v["m0"].tensors}
    assert t["out"].observed == ("S(0)", "S(1)") and t["weight_grad"].observed == ("P", "P")
    assert t["out"].observed_local == (2, 3, 8) and t["weight_grad"].numerics_ok
    assert {c.name: c for c in v["m1"].tensors}["out"].observed == ("S(0)", "R")
    assert {c.name: c for c in v["m2"].tensors}["out"].observed == ("R", "R")
    assert v["m3"].verdict == "Paddle error" and v["m3"].expected
    print(f"\n4 ranks: {len(cases)} cases (and the co-sharded one), launch {session.launch.seconds:.1f}s, "
          f"{dict(report.counts())}")


@pytest.mark.multiproc
@pytest.mark.native
def test_four_ranks_one_co_sharded_case(four_ranks):
    """x [8,4,8] co-sharded on axis 0 along mesh dims (1, 0) of 2x2: the rule reads mesh dim 1, so
    out comes out [R,S(0)] and weight_grad [R,P]; x.grad comes back co-sharded with its shard order.
    Run in the 2x2 batch's launch (the fixture)."""
    _, session = four_ranks
    case = COSHARD_CASE
    logs = f"logs kept in {session.launch.work_dir}"
    assert session.launch.ok, session.launch.failure_text() + "\n" + logs
    assert _leftovers(session.launch.job_id) == []
    report = build_report([case], session.case_records(), [0, 1, 2, 3], {})
    (v,) = report.verdicts
    assert v.verdict == "agree" and v.expected, (v.verdict, v.reasons, logs)
    t = {c.name: c for c in v.tensors}
    assert t["out"].observed == ("R", "S(0)") and t["out"].observed_local == (4, 4, 8)
    assert t["weight_grad"].observed == ("R", "P") and t["weight_grad"].numerics_ok
    assert t["x_grad"].observed == ("S(0)#1", "S(0)#0") and t["x_grad"].observed_local == (2, 4, 8)
    assert all(c.placement_ok is not False and c.numerics_ok is not False for c in v.tensors)


@pytest.mark.multiproc
@pytest.mark.native
def test_a_launch_that_times_out_exits_3_with_the_report_and_the_logs(tmp_path, capsys):
    pytest.importorskip("paddle")
    from paddle_spmd_port.launch.cli import main

    write_cases([ln("a", (4, 6, 8), ("S(0)",), (8,)), ln("b", (4, 8), ("R",), (8,))], tmp_path / "cases.jsonl")
    t0 = time.monotonic()
    code = main(["--nproc", "2", "--cases", str(tmp_path / "cases.jsonl"), "--timeout", "1", "--crash-probes", "0",
                 "--report-dir", str(tmp_path / "rep")])
    assert code == 3, capsys.readouterr()
    assert time.monotonic() - t0 < 30
    report = json.loads((tmp_path / "rep" / "launch-np2.json").read_text())
    assert "timed out" in report["meta"]["launch"]
    assert {c["verdict"] for c in report["cases"]} == {"skipped"}  # Paddle takes more than 1 s to import
    assert (tmp_path / "rep" / "launch-np2-logs" / "launcher.log").is_file()
    assert "timed out" in capsys.readouterr().err


FAULTY = """\
import os, sys, time
rank = int(os.environ["PADDLE_TRAINER_ID"])
mode = sys.argv[1]
print(f"rank {rank} started ({mode})", flush=True)
if rank == 1 and mode == "raise":
    raise RuntimeError("injected failure on rank 1")
if rank == 1 and mode == "hang":
    print("rank 1 now hangs", flush=True)
    time.sleep(3600)
if rank == 0 and mode == "raise":
    time.sleep(120)  # must be stopped when rank 1 fails
"""


def _faulty_launch(tmp_path: Path, mode: str, timeout: float):
    script = tmp_path / "faulty.py"
    script.write_text(FAULTY)
    job = new_job_id()
    t0 = time.monotonic()
    result = run_launch(str(script), [mode], LaunchConfig(nproc=2, timeout=timeout, grace=1.0), job_id=job,
                        work_dir=tmp_path / job)
    return result, time.monotonic() - t0


@pytest.mark.multiproc
@pytest.mark.native
def test_a_rank_raising_fails_the_launch_with_its_log_and_nothing_left(tmp_path):
    pytest.importorskip("paddle")
    result, wall = _faulty_launch(tmp_path, "raise", timeout=60)
    assert not result.ok and not result.timed_out and result.returncode != 0
    assert wall < 60
    assert result.failed_ranks == (1,)
    text = result.failure_text()
    assert "injected failure on rank 1" in text and "workerlog.1" in text
    assert result.rank_log(1).exists()  # logs kept
    assert result.leftover_pids == () and _leftovers(result.job_id) == []


@pytest.mark.multiproc
@pytest.mark.native
def test_a_hanging_rank_is_killed_at_the_timeout_with_its_log_and_nothing_left(tmp_path):
    pytest.importorskip("paddle")
    timeout = 10.0
    result, wall = _faulty_launch(tmp_path, "hang", timeout=timeout)
    assert result.timed_out and not result.ok
    assert timeout <= wall < timeout + 10
    assert result.hung_ranks == (1,)
    text = result.failure_text()
    assert "rank 1 now hangs" in text and "timed out" in text
    assert result.leftover_pids == () and _leftovers(result.job_id) == []
    assert processes_with_token(result.job_id) == {}


def _gpu_count() -> int:
    if shutil.which("nvidia-smi") is None:
        return 0
    out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


@pytest.mark.multiproc
@pytest.mark.gpu
def test_two_gpus_with_sync_batch_norm(tmp_path):
    if _gpu_count() < 2:
        pytest.skip("needs 2 GPUs (nvidia-smi lists fewer) and a CUDA build of Paddle")
    paddle = pytest.importorskip("paddle")
    if not paddle.is_compiled_with_cuda():
        pytest.skip("Paddle is a CPU build")
    from paddle_spmd_port.launch.cli import main

    cases = [c for i, c in enumerate(default_cases((2,), backend="gpu")) if c.op == "sync_batch_norm" or i % 10 == 0]
    write_cases(cases, tmp_path / "cases.jsonl")
    code = main(["--nproc", "2", "--device", "gpu", "--cases", str(tmp_path / "cases.jsonl"), "--report-dir",
                 str(tmp_path / "rep"), "--rtol", "1e-4"])
    report = json.loads((tmp_path / "rep" / "launch-np2-gpu.json").read_text())
    sync = [c for c in report["cases"] if c["case"]["op"] == "sync_batch_norm"]
    assert sync and all(c["verdict"] != "skipped" for c in sync)
    assert code == 0, [(c["case_id"], c["verdict"], c["reasons"]) for c in report["cases"] if not c["expected"]]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))


# --------------------------------------------------------------------------------------------
# group_norm and instance_norm (issue 15): predictions, the --rules selection, a real launch


def gn(cid, shape, pl, fmt, groups, mesh=(2,), **kw):
    return LaunchCase(cid, "group_norm", tuple(shape), tuple(mesh), tuple(pl), data_format=fmt, groups=groups, **kw)


def inorm(cid, shape, pl, fmt, mesh=(2,), **kw):
    return LaunchCase(cid, "instance_norm", tuple(shape), tuple(mesh), tuple(pl), data_format=fmt, **kw)


def test_predict_group_norm_keeps_only_axis_0_and_its_grads_partial():
    p = predict(gn("a", (4, 6, 2, 4), ("S(1)", "S(0)"), "NCHW", 3, mesh=(2, 2)))
    assert p.forward.runs and p.backward.runs
    assert p.expectation("out").placements == ("R", "S(0)") and p.expectation("out").local_shape == (2, 6, 2, 4)
    assert p.expectation("weight_grad").placements == ("R", "P") == p.expectation("bias_grad").placements
    assert p.expectation("x_grad").placements == ("S(1)", "S(0)")  # the leaf's own placement
    p = predict(gn("b", (4, 2, 4, 6), ("S(3)",), "NHWC", 3))  # C (channel-last) is not kept either
    assert p.expectation("out").placements == ("R",) and p.expectation("weight_grad").placements == ("R",)
    p = predict(gn("c", (4, 6, 8), ("S(0)",), "NCL", 2, weight=False))  # grad: scale None, N split
    assert p.forward.runs and "scale:none-with-sharded-n" in p.backward.crash
    assert crash_key(p) == "invalid-spec:scale:none-with-sharded-n"
    with pytest.raises(ValueError, match="divide C"):
        gn("d", (4, 6, 8), ("R",), "NCL", 4)


def test_predict_instance_norm_outcomes():
    p = predict(inorm("a", (4, 6, 2, 4), ("S(0)",), "NCHW"))
    assert p.forward.runs and p.expectation("out").placements == ("S(0)",) and not p.numeric_risks
    assert p.backward.rule_error.message == "The ndim of saved_mean in instance_norm should be 2, but got [1]."
    p = predict(inorm("b", (4, 6, 2, 4), ("S(1)",), "NCHW", weight=False))  # C split, bias given
    assert p.forward.kernel_error == ("the shape of bias must equal to [3]", "the shape of bias is [6]")
    assert predict(inorm("c", (4, 6, 2, 4), ("S(1)",), "NCHW", weight=False, bias=False)).forward.runs
    p = predict(inorm("d", (2, 6, 2, 2, 4), ("R", "S(4)"), "NCDHW", mesh=(2, 2), backward=False))
    assert p.expectation("out").placements == ("R", "S(4)") and "out" in dict(p.numeric_risks)
    p = predict(inorm("e", (4, 6, 8), ("S(0)",), "NCL"))  # 3-D x: Paddle's rule aborts
    assert p.skip_reason("forward") and crash_key(p) == forward_crash_key(p) == "invalid-spec:x:rank"
    with pytest.raises(ValueError, match="no layout"):
        inorm("f", (4, 2, 4, 6), ("R",), "NHWC")


def test_rules_select_cases_and_refuse_rules_no_launch_reaches(tmp_path: Path) -> None:
    grid = default_cases((2,))
    assert {c.op for c in select_by_rules(grid, ["group_norm_grad"])} == {"group_norm"}
    assert {c.op for c in select_by_rules(grid, ["instance_norm", "layer_norm"])} == {"instance_norm", "layer_norm"}
    for rule in ("rms_norm", "fast_ln_grad"):
        line = assert_usage_error(BadInput(("launch", "--nproc", "2", "--rules", rule), "--rules"), tmp_path)
        assert f"no launch case reaches {rule}" in line
    line = assert_usage_error(BadInput(("launch", "--nproc", "4", "--coshard", "--rules", "group_norm"), "--rules"),
                              tmp_path)
    assert "no case of this selection" in line
    from paddle_spmd_port.launch.cli import main

    assert main(["--nproc", "2", "--rules", "group_norm,instance_norm", "--write-cases",
                 str(tmp_path / "sel.jsonl")]) == 0
    assert {c.op for c in read_cases(tmp_path / "sel.jsonl")} == {"group_norm", "instance_norm"}
    # directories on the way that do not exist yet are made, as the check before any work allowed them
    assert main(["--nproc", "2", "--rules", "group_norm", "--write-cases", str(tmp_path / "new" / "sel.jsonl")]) == 0
    assert {c.op for c in read_cases(tmp_path / "new" / "sel.jsonl")} == {"group_norm"}


def _keep_channels_too(x, scale, bias, *args):
    """A planted wrong group_norm rule: keeps x's C (axis 1) sharding as well as N's."""
    from paddle_spmd_port.rules import group_norm_infer_spmd

    right = group_norm_infer_spmd(x, scale, bias, *args)
    out = right.outputs[0]
    wrong = out.dims_mapping[:1] + x.dims_mapping[1:2] + out.dims_mapping[2:]
    return dataclasses.replace(right, outputs=(dataclasses.replace(out, dims_mapping=wrong), *right.outputs[1:]))


@pytest.mark.multiproc
@pytest.mark.native
def test_two_ranks_group_norm_and_instance_norm(tmp_path, monkeypatch):
    """F.group_norm and F.instance_norm on 2 ranks through the CLI (free port, private log dir, a
    timeout; the rank logs kept in tmp_path/rep on failure): every outcome as the port predicts.
    Then the same rank records judged with a planted wrong group_norm rule: a placement mismatch."""
    pytest.importorskip("paddle")
    from paddle_spmd_port.launch import predict as predict_module
    from paddle_spmd_port.launch.cli import main

    cases = [
        gn("g0", (4, 6, 2, 4), ("S(0)",), "NCHW", 3),                      # out S(0), weight/bias grad Partial
        gn("g1", (4, 6, 2, 4), ("S(1)",), "NCHW", 3),                      # C resharded to R: out R
        gn("g2", (4, 6, 8), ("S(0)",), "NCL", 2, weight=False),            # backward: SIGSEGV, not run
        inorm("i0", (4, 6, 2, 4), ("S(1)",), "NCHW", weight=False, bias=False),  # backward: the rule raises
        inorm("i1", (4, 6, 2, 4), ("S(1)",), "NCHW"),                      # kernel: scale of 6 for 3 channels
        inorm("i2", (2, 6, 2, 2, 4), ("S(4)",), "NCDHW", backward=False),  # axis 4 kept split: wrong values
        inorm("i3", (4, 6, 8), ("R",), "NCL"),                             # 3-D x: SIGABRT, not run
    ]
    write_cases(cases, tmp_path / "cases.jsonl")
    rep = tmp_path / "rep"
    code = main(["--nproc", "2", "--cases", str(tmp_path / "cases.jsonl"), "--timeout", "120", "--crash-probes", "0",
                 "--keep-logs", "--report-dir", str(rep)])
    report = json.loads((rep / "launch-np2.json").read_text())
    by_id = {c["case_id"]: c for c in report["cases"]}
    unexpected = [(c["case_id"], c["describe"], c["verdict"], c["reasons"]) for c in report["cases"]
                  if not c["expected"]]
    assert code == 0, (unexpected, f"logs in {rep / 'launch-np2-logs'}")

    def tensor(cid, name):
        return next(t for t in by_id[cid]["tensors"] if t["name"] == name)

    assert by_id["g0"]["verdict"] == "agree" and tensor("g0", "weight_grad")["observed"] == ["P"]
    assert tensor("g0", "x_grad")["rel_err"] <= 1e-5 and tensor("g1", "out")["observed"] == ["R"]
    assert tensor("g2", "out")["numerics_ok"] and any("native crash" in n for n in by_id["g2"]["notes"])
    assert by_id["i0"]["verdict"] == "Paddle error" and "ndim of saved_mean" in by_id["i0"]["error"]["message"]
    assert tensor("i0", "out")["observed"] == ["S(1)"] and tensor("i0", "out")["numerics_ok"]
    assert "the shape of scale must equal to [3]" in by_id["i1"]["error"]["message"]
    assert by_id["i2"]["verdict"] == "numerics differ" and tensor("i2", "out")["observed"] == ["S(4)"]
    assert tensor("i2", "out")["rel_err"] > 1e-2
    assert by_id["i3"]["verdict"] == "skipped"

    records = case_records(read_rank_records(rep / "launch-np2-logs" / "results"))
    right_rule = predict_module.rule_function
    monkeypatch.setattr(predict_module, "rule_function",
                        lambda key: _keep_channels_too if key == "group_norm" else right_rule(key))
    planted = build_report(cases, records, [0, 1], {})
    wrong = {v.case.case_id: v for v in planted.verdicts if not v.expected}
    assert set(wrong) == {"g1"} and wrong["g1"].verdict == "placement differs"
    assert "out: predicted ['S(1)']" in wrong["g1"].reasons[0]


def test_a_crash_probe_runs_again_until_a_run_dies(tmp_path: Path) -> None:
    """A heap corruption does not abort every run: the probe starts the case again (a stand-in
    for Python that exits 0 on its first run and aborts on its second), up to ``attempts`` runs."""
    from paddle_spmd_port.launch.session import probe_crash

    runs = tmp_path / "runs"
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\necho run >> {runs}\n[ $(wc -l < {runs}) -ge 2 ] && kill -ABRT $$\nexit 0\n")
    fake.chmod(0o755)
    case = inorm("a", (4, 6, 8), ("S(0)",), "NCL")
    probe = probe_crash(case, python=str(fake), attempts=3, work_dir=tmp_path / "w")
    assert probe["confirmed"] and probe["attempts"] == 2 and "SIGABRT" in probe["summary"]
    assert "run 2 of up to 3; before: no crash: exit code 0" in probe["summary"]
    runs.unlink()
    probe = probe_crash(case, python=str(fake), attempts=1, work_dir=tmp_path / "w1")
    assert not probe["confirmed"] and probe["attempts"] == 1 and probe["summary"] == "no crash: exit code 0"


def test_a_backward_error_hides_no_forward_difference_and_an_unconfirmed_forward_crash_is_a_finding():
    case = inorm("a", (4, 6, 2, 4), ("S(0)",), "NCHW")  # the backward rule raises: "ndim of saved_mean"
    error = {"stage": "backward", "type": "ValueError",
             "message": "(InvalidArgument) The ndim of saved_mean in instance_norm should be 2, but got [1].\n"
                        "  [Hint: x] (at y)"}
    right = {r: dict(_ok_record(case, r), error=error) for r in (0, 1)}
    v = verdict_for_case(case, right, [0, 1], 1e-5)
    assert v.verdict == "Paddle error" and v.expected, v.reasons
    out = dict(right[0]["tensors"]["out"], placements=["R"], local_shape=[4, 6, 2, 4])
    v = verdict_for_case(case, {r: dict(right[r], tensors={"out": out}) for r in (0, 1)}, [0, 1], 1e-5)
    assert v.verdict == "Paddle error" and not v.expected and "out: predicted ['S(0)']" in v.reasons[0]
    off = dict(right[0]["tensors"]["out"], max_abs_err=0.3)
    v = verdict_for_case(case, {r: dict(right[r], tensors={"out": off}) for r in (0, 1)}, [0, 1], 1e-5)
    assert not v.expected and "out: rel error 0.3" in v.reasons[0]

    crash = inorm("b", (4, 6, 8), ("R",), "NCL")
    skipped = {r: {"kind": "case", "case_id": "b", "stages": {}, "error": None, "tensors": {},
                   "skipped": {"stage": "forward", "reason": "port predicts a native crash"}} for r in (0, 1)}
    key = forward_crash_key(predict(crash))
    died = {key: {"case_id": "b", "summary": "process died with signal 6 (SIGABRT), as predicted", "confirmed": True}}
    assert verdict_for_case(crash, skipped, [0, 1], 1e-5, died).expected
    lived = {key: {"case_id": "b", "summary": "no crash: exit code 0", "confirmed": False}}
    v = verdict_for_case(crash, skipped, [0, 1], 1e-5, lived)
    assert v.verdict == "skipped" and not v.expected and "probe did not crash" in v.reasons[1]


def test_a_crash_probe_whose_python_raised_is_an_error_not_a_probe_that_did_not_crash(tmp_path: Path) -> None:
    """A stand-in for Python that prints a traceback and exits 1 (the runner's own code raised): the
    probe never ran its case, so it raises (the launch's internal error, exit 4) instead of reporting
    "no crash: exit code 1", which made the port's predicted crash a finding."""
    from paddle_spmd_port.launch.session import probe_crash
    from paddle_spmd_port.runctl.exits import ChildRaised

    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'W1207 a log line'\necho 'Traceback (most recent call last):'\n"
                    "echo '  File \"runner.py\", line 1'\necho \"KeyError: 'planted'\"\nexit 1\n")
    fake.chmod(0o755)
    case = inorm("a", (4, 6, 8), ("S(0)",), "NCL")
    with pytest.raises(ChildRaised, match="the crash probe of a raised KeyError: 'planted'"):
        probe_crash(case, python=str(fake), attempts=3, work_dir=tmp_path / "w")
    fake.write_text("#!/bin/sh\necho 'I1207 no traceback'\nexit 1\n")
    probe = probe_crash(case, python=str(fake), attempts=1, work_dir=tmp_path / "w1")
    assert not probe["confirmed"] and probe["summary"] == "no crash: exit code 1"


def test_paddle_side_marks_exactly_the_exceptions_raised_inside_a_call_it_forwards():
    """launch/paddle_side.py on a stand-in for Paddle's modules (no Paddle needed): an exception raised
    inside a forwarded call, attribute read or write, item, iteration or ``with`` is marked with the
    call's name and stays what it was; the caller's own exceptions, and an attribute that is absent,
    are not marked; arguments reach the callee unwrapped, plain results come back as they are."""
    import types

    from paddle_spmd_port.launch.paddle_side import PaddleProxy, raised_by_paddle, unwrap

    class Tensor:
        def __init__(self, values):
            self.values = list(values)

        def backward(self):
            raise RuntimeError("backward failed")

        @property
        def placements(self):
            return self.missing_helper  # an AttributeError of its own, for another name

        def __iter__(self):
            yield from self.values

    class Guard:
        def __enter__(self):
            return Tensor([7])

        def __exit__(self, *exc):
            return False

    def to_tensor(values):
        assert type(values) is list and not any(isinstance(v, PaddleProxy) for v in values), "unwrapped"
        return Tensor(values)

    def op(t, p=2):
        if not isinstance(t, Tensor):
            raise TypeError("a proxy reached Paddle")
        if p == 0:
            raise ValueError("p must not be 0")
        return sum(t.values) * p

    paddle = PaddleProxy(types.SimpleNamespace(to_tensor=to_tensor, op=op, guard=Guard, version="3.3.1"), "paddle")
    t = paddle.to_tensor([1, 2])
    assert isinstance(t, PaddleProxy) and paddle.op(t) == 6 and paddle.version == "3.3.1"
    assert list(t) == [1, 2] and isinstance(unwrap([t])[0], Tensor)
    with paddle.guard() as inner:
        assert list(inner) == [7]
    t.values = [5]  # written through
    assert paddle.op(t, p=1) == 5
    for call, name, kind in ((lambda: paddle.op(t, p=0), "paddle.op", ValueError),
                             (lambda: t.backward(), "paddle.to_tensor().backward", RuntimeError),
                             (lambda: t.placements, "paddle.to_tensor().placements", AttributeError)):
        with pytest.raises(kind) as raised:
            call()
        assert raised_by_paddle(raised.value) == name
    assert not hasattr(t, "get_dim")  # absent: not Paddle's error
    with pytest.raises(AttributeError) as absent:
        t.get_dim  # noqa: B018
    assert raised_by_paddle(absent.value) is None
    with pytest.raises(KeyError) as ours:
        with paddle.guard():
            raise KeyError("ours")
    assert raised_by_paddle(ours.value) is None


def test_an_internal_error_record_of_a_rank_or_of_the_pir_process_is_raised_as_ours(tmp_path: Path) -> None:
    """A rank's ``internal_error`` record (the lowest rank's) becomes the launch's ChildRaised, naming
    the rank and the case; the PIR route's process writing one (a stand-in for Python here) raises it
    too, instead of a PIR route that merely ended early (exit 3)."""
    from paddle_spmd_port.launch.session import raised_in_ranks, run_pir_route
    from paddle_spmd_port.runctl.exits import ChildRaised

    tb = "Traceback (most recent call last):\n  File \"runner.py\", line 1\nKeyError: 'planted'"
    records = {1: [{"kind": "start"}, {"kind": "internal_error", "case_id": "c3", "traceback": tb}],
               0: [{"kind": "start"}, {"kind": "case", "case_id": "c0"},
                   {"kind": "internal_error", "case_id": "c1", "traceback": tb}]}
    raised = raised_in_ranks(records)
    assert isinstance(raised, ChildRaised)
    assert str(raised) == "rank 0 of the launch (case c1) raised KeyError: 'planted'"
    assert "KeyError: 'planted'" in str(raised.__cause__)
    assert raised_in_ranks({0: [{"kind": "start"}, {"kind": "done"}]}) is None
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho '{\"kind\": \"start\"}' > pir.jsonl\n"
                    "echo '{\"kind\": \"internal_error\", \"case_id\": null, \"traceback\": \"KeyError: 1\"}' "
                    ">> pir.jsonl\n"
                    "exit 1\n")
    fake.chmod(0o755)
    with pytest.raises(ChildRaised, match=r"the PIR route's process \(before its first case\) raised KeyError: 1"):
        run_pir_route([ln("a", (4, 6, 8), ("S(0)",), (8,))], work_dir=tmp_path / "w", timeout=30, python=str(fake))
