"""The communication check of real runs (paddle_spmd_port.launch.comm): the reshards Paddle logs on
real ranks, parsed from recorded rank logs (tests/data/launch_comm/, cut from `launch --nproc 2` and
`--nproc 4` runs of Paddle 3.3.1), against the port's predicted reshards; mutant predictions and
mutant logs the check must catch. Pure: no Paddle, no launch."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import pytest

from paddle_spmd_port.launch.cases import LaunchCase
from paddle_spmd_port.launch.comm import (
    ND,
    CommCheck,
    Event,
    StageComm,
    compare,
    compare_pir,
    kept_lines,
    parse_log,
    predict_comm,
)
from paddle_spmd_port.launch.output import render_markdown
from paddle_spmd_port.launch.pages import COMM_DIFFERS, klass, launch_verdict
from paddle_spmd_port.launch.predict import predict
from paddle_spmd_port.launch.report import Report, verdict_for_case

DATA = Path(__file__).parent / "data" / "launch_comm"


def _log(name: str) -> str:
    return (DATA / name).read_text()


def _case(**kw) -> LaunchCase:
    base = dict(case_id="t", op="layer_norm", shape=(4, 8), mesh_shape=(2,), placements=("S(1)",),
                normalized_shape=(8,))
    base.update(kw)
    return LaunchCase(**base)


NORMALIZE = dict(op="p_norm", normalized_shape=(), api="F.normalize", weight=False, bias=False, epsilon=1e-12)


def _records(forward: str, backward: str | None, ranks: int = 2) -> dict[int, dict]:
    stages = {"reference": "ok", "forward": "ok"}
    comm = {"forward": [e.to_json() for e in parse_log(forward)]}
    if backward is not None:
        stages["backward"] = "ok"
        comm["backward"] = [e.to_json() for e in parse_log(backward)]
    return {r: {"kind": "case", "case_id": "t", "stages": dict(stages), "error": None, "skipped": None,
                "tensors": {}, "comm": comm} for r in range(ranks)}


def _predicted(case: LaunchCase) -> dict[str, StageComm]:
    pred = predict(case)
    stages = {"forward": pred.forward.result}
    if pred.backward is not None:
        stages["backward"] = pred.backward.result
    return predict_comm(case, stages)


def test_the_one_d_logs_parse_into_reshards_with_their_op_and_functions():
    fwd = parse_log(_log("np2-layer_norm-S1-forward.log"))
    assert [e.describe() for e in fwd] == ["input x [4, 8] [-1,0]->[-1,-1]: SToRReshard[SToRReshard@0]"]
    assert fwd[0].op == "layer_norm" and fwd[0].tensor == "x"
    bwd = parse_log(_log("np2-layer_norm-S1-backward.log"))
    assert [(e.kind, e.op, e.function) for e in bwd] == [
        ("input", "layer_norm_grad", "SToRReshard"), ("output", "layer_norm_grad", "RToSReshard")]
    assert bwd[1].src == (-1, -1) and bwd[1].dst == (-1, 0) and bwd[1].tensor == "x_grad"


def test_the_partial_source_and_the_ops_outside_parse():
    events = parse_log(_log("np2-normalize-S1-backward.log"))
    partial = [e for e in events if e.src_partial]
    assert partial and all(e.src_partial == (0,) and e.function == "PToRReshard" for e in partial)
    assert {e.op for e in events} >= {"p_norm_grad"} and len({e.op for e in events}) > 1


def test_an_n_d_log_names_the_outer_function_and_each_mesh_dim():
    events = parse_log(_log("np4-batch_norm-S0S2-forward.log"))
    x = next(e for e in events if e.tensor == "x")
    assert x.function == ND and x.src == (0, -1, 1, -1) and x.dst == (-1, -1, -1, -1)
    assert x.calls == (("SToRReshard", 1), ("SToRReshard", 0))  # the last axis first


def test_a_reshard_without_a_header_is_kept_as_other():
    text = ("I1207 06:13:25.628072 29214 reshard_function_registry.cc:39] Choose ReshardFunction: RToSReshard\n"
            "I1207 06:13:25.628165 29214 r_to_s_reshard_function.cc:62] Call RToSReshard\n"
            "I1207 06:13:25.628171 29214 other_file.cc:62] Call Something\n")
    (event,) = parse_log(text)
    assert event.kind == "other" and event.calls == (("RToSReshard", 0),) and event.shape is None
    assert Event.from_json(event.to_json()) == event


def test_the_port_predicts_the_recorded_one_d_run():
    case = _case()
    check = compare(case, _predicted(case), _records(_log("np2-layer_norm-S1-forward.log"),
                                                      _log("np2-layer_norm-S1-backward.log")), True)
    assert check.verdict == "agree" and check.expected, check.reasons
    assert check.summary() == "forward 1/1, backward 2/2"
    assert check.predicted_bytes() == 2 * (4 * 4 * 4)  # two all_gathers of a [4,4] float32 piece


def test_the_port_predicts_the_recorded_n_d_run():
    case = LaunchCase("t", "batch_norm", (4, 6, 2, 4), (2, 2), ("S(0)", "S(2)"), data_format="NCHW",
                      backward=False)
    check = compare(case, _predicted(case), _records(_log("np4-batch_norm-S0S2-forward.log"), None, 4), True)
    assert check.verdict == "agree" and check.expected, check.reasons


@pytest.mark.parametrize("mutate", [
    lambda es: es[1:],                                                            # a reshard left out
    lambda es: es + (dataclasses.replace(es[0], dst=(0, -1)),),                   # one more predicted
    lambda es: (dataclasses.replace(es[0], function="SToSReshard"),) + es[1:],     # another function
    lambda es: (dataclasses.replace(es[0], calls=(("SToRReshard", 1),)),) + es[1:],  # another mesh dim
])
def test_a_mutant_prediction_is_caught(mutate):
    case = _case()
    predicted = _predicted(case)
    predicted["backward"] = StageComm(mutate(predicted["backward"].events))
    check = compare(case, predicted, _records(_log("np2-layer_norm-S1-forward.log"),
                                              _log("np2-layer_norm-S1-backward.log")), True)
    assert check.verdict == "differs" and not check.expected and check.reasons


def test_ranks_logging_different_reshards_is_a_difference():
    case = _case()
    records = _records(_log("np2-layer_norm-S1-forward.log"), _log("np2-layer_norm-S1-backward.log"))
    records[1] = dict(records[1], comm={"forward": [], "backward": records[1]["comm"]["backward"]})
    check = compare(case, _predicted(case), records, True)
    assert check.verdict == "differs" and not check.expected


def test_the_composite_apis_partial_grad_operand_is_explained_and_only_it():
    case = _case(**NORMALIZE)
    fwd = "", _log("np2-normalize-S1-backward.log")
    check = compare(case, _predicted(case), _records(*fwd), True)
    assert check.verdict == "differs" and check.expected and not check.reasons
    assert [d.explained.split(":")[0] for d in check.differences] == ["composite-grad-operand"]
    # without its explanation, the same logs are a finding
    assert not compare(case, _predicted(case), _records(*fwd), True, explained=()).expected
    # no other op resharded in that backward: not a composite, not explained
    lone = [e for e in parse_log(fwd[1]) if e.op == "p_norm_grad"]
    records = _records("", "")
    for rec in records.values():
        rec["comm"]["backward"] = [e.to_json() for e in lone]
    assert not compare(case, _predicted(case), records, True).expected
    # the extra reshard a gather (S->R) instead of a settle (P->R): not explained
    mutant = _records(*fwd)
    for rec in mutant.values():
        for e in rec["comm"]["backward"]:
            if e["src_partial"] and e["op"] == "p_norm_grad":
                e["calls"] = [["SToRReshard", 0]]
    assert not compare(case, _predicted(case), mutant, True).expected


def test_no_reshard_log_lines_is_not_compared_and_the_page_says_uncompared():
    case = _case()
    records = _records(_log("np2-layer_norm-S1-forward.log"), _log("np2-layer_norm-S1-backward.log"))
    check = compare(case, _predicted(case), records, False)
    assert check.verdict == "not compared" and check.expected
    verdict = verdict_for_case(case, records, [0, 1], 1e-5, comm_logging=False)
    report = Report((verdict,), {"comm_logging": False, "rtol": 1e-5})
    assert launch_verdict(report) == "uncompared"
    assert "**Not compared**" in render_markdown(report)


def test_an_unexplained_difference_makes_the_case_a_finding_on_every_page():
    case = _case()
    records = _records(_log("np2-layer_norm-S1-forward.log"), "")  # the backward's reshards missing
    verdict = verdict_for_case(case, records, [0, 1], 1e-5)
    assert verdict.comm is not None and verdict.comm.verdict == "differs" and not verdict.accounted
    verdict = dataclasses.replace(verdict, expected=True)  # placements are not judged here (no tensors)
    report = Report((verdict,), {"comm_logging": True, "rtol": 1e-5})
    assert report.unexpected == [verdict] and klass(verdict) == COMM_DIFFERS
    assert launch_verdict(report) == "fail"
    md = render_markdown(report)
    assert "## Communication" in md and "NOT EXPECTED: backward: predicted" in md and "differs (!)" in md
    assert report.to_json()["cases"][0]["comm"]["verdict"] == "differs"


def test_stderr_capture_reads_fd_2_and_gives_it_back(tmp_path, capfd):
    from paddle_spmd_port.launch.runner import StderrCapture

    with StderrCapture(tmp_path / "cap.log", "c1 forward") as cap:
        os.write(2, b"I1207 06:13:25.628072 29214 reshard_function_registry.cc:39] Choose ReshardFunction: X\n")
    sys.stderr.flush()
    err = capfd.readouterr().err
    assert "Choose ReshardFunction: X" in cap.text
    assert "@@comm c1 forward begin" in err and "Choose ReshardFunction: X" in err
    assert [e.function for e in parse_log(cap.text)] == ["X"]


def test_a_check_round_trips_to_json():
    case = _case()
    check = compare(case, _predicted(case), _records(_log("np2-layer_norm-S1-forward.log"),
                                                      _log("np2-layer_norm-S1-backward.log")), True)
    data = check.to_json()
    assert isinstance(check, CommCheck) and data["verdict"] == "agree"
    assert [Event.from_json(e) for e in data["observed"]["backward"]] == list(check.observed["backward"])


def _kept_axis_reshard() -> Event:
    (x,) = [e for e in parse_log(_log("np4-layer_norm-S0S1-forward.log")) if e.tensor == "x"]
    return x


def test_an_n_d_reshard_that_keeps_an_axis_in_place_gathers_only_the_axis_that_changes():
    """x [4,8] [S(0),S(1)] on 2x2 to layer_norm's [S(0),R]: Paddle 3.3.1 runs one all_gather along
    mesh dim 1 and leaves axis 0 alone; a plan that also gathered and cut axis 0 again (reshard.plan
    before it learnt this, measured: docs/measurements/2026-12-07-launch-comm.md) is caught."""
    x = _kept_axis_reshard()
    assert x.src == (0, 1) and x.dst == (0, -1) and x.calls == (("SToRReshard", 1),)
    case = LaunchCase("t", "layer_norm", (4, 8), (2, 2), ("S(0)", "S(1)"), normalized_shape=(8,), backward=False)
    records = _records(_log("np4-layer_norm-S0S1-forward.log"), None, 4)
    check = compare(case, _predicted(case), records, True)
    assert check.verdict == "agree" and check.expected, check.reasons
    predicted = _predicted(case)
    (p,) = predicted["forward"].events
    regathers = dataclasses.replace(p, calls=(("SToRReshard", 1), ("SToRReshard", 0), ("RToSReshard", 0)))
    predicted["forward"] = StageComm((regathers,))
    check = compare(case, predicted, records, True)
    assert check.verdict == "differs" and not check.expected and [d.what for d in check.differences] == ["steps"]


def test_reshard_plan_equals_paddle_3_3_1_on_an_axis_kept_in_place():
    from paddle_spmd_port.reshard import plan
    from paddle_spmd_port.types import DistTensorSpec, ProcessMesh

    x = _kept_axis_reshard()
    mesh = ProcessMesh((2, 2))
    steps = plan(x.shape, DistTensorSpec(x.shape, x.src, mesh), DistTensorSpec(x.shape, x.dst, mesh), mesh)
    assert tuple((s.function.removesuffix("Function"), s.mesh_dim) for s in steps) == x.calls


# --------------------------------------------------------------------------- the PIR route
def _pir() -> tuple[dict[str, LaunchCase], dict[str, dict]]:
    from paddle_spmd_port.launch.cases import read_cases

    cases = {c.case_id: c for c in read_cases(DATA / "np4-pir-cases.jsonl")}
    records = {r["case_id"]: r for r in map(json.loads, (DATA / "np4-pir.jsonl").read_text().splitlines())}
    return cases, records


def _pir_check(case: LaunchCase, record: dict | None):
    pred = predict(case)
    return compare_pir(case, _predicted(case)["forward"], record, pred.forward.runs)


def test_the_pir_route_agrees_on_a_recorded_program_and_catches_mutants():
    cases, records = _pir()
    case, record = cases["c0006"], records["c0006"]  # layer_norm x [R,S(1)] on 2x2: one all_gather
    check = _pir_check(case, record)
    assert check.verdict == "agree" and check.expected and check.summary() == "pir 1/1"
    for mutant in (dict(record, collectives=["pd_op.all_reduce"]),
                   dict(record, collectives=[]),
                   dict(record, reshards=[dict(record["reshards"][0], dst=[-1, 0])]),
                   dict(record, reshards=[])):
        check = _pir_check(case, mutant)
        assert check.verdict == "differs" and not check.expected and check.reasons


def test_the_pir_route_gathers_only_the_axis_that_changes():
    cases, records = _pir()
    check = _pir_check(cases["c0012"], records["c0012"])  # layer_norm x [S(0),S(1)] on 2x2
    assert check.verdict == "agree" and check.expected, check.reasons
    assert records["c0012"]["collectives"] == ["pd_op.all_gather"]


def test_a_program_paddle_refuses_is_a_difference_unless_known():
    cases, records = _pir()
    case, record = cases["c0824"], records["c0824"]  # instance_norm: the known PIR build failure
    check = _pir_check(case, record)
    assert check.verdict == "differs" and check.expected
    assert check.differences[0].explained.startswith("paddle:pir-output-rank")
    other = dict(record, error={"type": "RuntimeError", "message": "(InvalidArgument) something else"})
    assert not _pir_check(case, other).expected
    # the port predicting the forward to fail: a refusal is no difference
    refused = compare_pir(case, _predicted(case)["forward"], other, runs=False)
    assert refused.verdict == "not compared" and refused.expected


def test_reshards_feeding_other_ops_leave_the_collectives_uncompared():
    cases, records = _pir()
    check = _pir_check(cases["c1016"], records["c1016"])  # F.normalize: the P->R feeds maximum
    assert check.verdict == "agree" and check.outside["pir"] and "not compared" in check.notes[0]


def test_a_case_the_pir_route_did_not_reach_is_not_run():
    cases, _ = _pir()
    case = cases["c0006"]
    check = _pir_check(case, None)
    assert check.verdict == "not compared" and not check.expected
    verdict = dataclasses.replace(verdict_for_case(case, {}, [0, 1, 2, 3], 1e-5, pir=None, pir_ran=True),
                                  expected=True)
    assert verdict.unrun and not verdict.finding


def test_the_rank_log_keeps_what_the_parse_reads_and_every_non_info_line():
    for name in ("np4-batch_norm-S0S2-forward.log", "np2-normalize-S1-backward.log"):
        text = _log(name)
        kept = kept_lines(text)
        assert parse_log(kept) == parse_log(text) and len(kept) < len(text)
    warning = "W1207 06:13:25.628072 29214 other.cc:1] something to keep\nTraceback (most recent call last):\n"
    info = "I1207 06:13:25.628072 29214 nd_mesh_reshard_function.cc:160] New Dist Attr {...}\n"
    assert kept_lines(info + warning) == warning


def test_a_co_shard_source_parses_with_its_members_and_is_predicted():
    """x [8,4,8] co-sharded on axis 0 along mesh dims (0, 1) of 2x2 to layer_norm's [S(0),R]: Paddle
    logs the source mapping as ``[[0,1] [] [] ]`` and gathers member 1 then member 0, then cuts
    mesh dim 0 again, as the port's plan says."""
    (x,) = [e for e in parse_log(_log("np4-coshard-S0-forward.log")) if e.tensor == "x"]
    assert x.src == ((0, 1), -1, -1) and x.dst == (0, -1, -1)
    case = LaunchCase("t", "layer_norm", (8, 4, 8), (2, 2), ("S(0)#0", "S(0)#1"), normalized_shape=(8,),
                      backward=False)
    check = compare(case, _predicted(case), _records(_log("np4-coshard-S0-forward.log"), None, 4), True)
    assert check.verdict == "agree" and check.expected, check.reasons


def test_an_input_pir_holds_otherwise_is_not_the_cases_program():
    """PIR's dist.shard_tensor keeps a co-shard's last mesh dim only (Paddle 3.3.1, measured): such
    a program is not compared; any other input PIR holds otherwise than placed is a difference."""
    cases, records = _pir()
    coshard = LaunchCase("t", "layer_norm", (8, 4, 8), (2, 2), ("S(0)#0", "S(0)#1"), normalized_shape=(8,),
                         backward=False)
    record = {"kind": "pir", "case_id": "t", "error": None, "x": [1, -1, -1], "reshards": [], "collectives": []}
    check = _pir_check(coshard, record)
    assert check.verdict == "not compared" and check.expected and "co-shard" in check.notes[0]
    plain = cases["c0006"]  # layer_norm x [R,S(1)] on 2x2
    check = _pir_check(plain, dict(records["c0006"], x=[-1, 0]))
    assert check.verdict == "differs" and not check.expected
    assert _pir_check(plain, dict(records["c0006"], x=[-1, 1])).verdict == "agree"
