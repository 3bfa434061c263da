"""``oracle --profile native``: the installed Paddle's own answers, judged like a rule profile's.

Without Paddle: what each native outcome becomes (oracle/native.py's table) and the one line when
the profile is asked for and Paddle is missing. With Paddle (``native``): on a small sample, the
native totals equal the ``paddle`` profile's over the cases whose input the port does not refuse
as invalid, case by case; a planted wrong native answer breaks that equality.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from paddle_spmd_port.grid import sample
from paddle_spmd_port.oracle.grid import oracle_grid
from paddle_spmd_port.oracle.native import NATIVE, NO_ANSWER, collect
from paddle_spmd_port.oracle.report import PORT_REFUSES, Judge, RuleTally, totals, without_refused
from paddle_spmd_port.oracle.simulator import OP_REJECTS, RULE_ERROR, SOUND, UNRUNNABLE, UNSOUND
from paddle_spmd_port.outcome import ErrorInfo, Outcome
from paddle_spmd_port.types import DistAttr, SpmdResult
from tests.cli_checks import REPO


def _valid_sound_case(rule: str = "layer_norm"):
    judge = Judge()
    for case in oracle_grid(rule):
        j = judge(case, "paddle")
        if j.verdict.label == SOUND and any(a.dims_mapping and a.dims_mapping[0] != -1 for a in j.answer.outputs):
            return case, j.answer
    raise AssertionError("no sound case with a sharded output")


def _wrong(answer: SpmdResult) -> SpmdResult:
    """The same answer with its first output claimed Partial on mesh dim 0 instead of sharded."""
    out = answer.outputs[0]
    bad = DistAttr(tuple(-1 for _ in out.dims_mapping), frozenset({0}), out.mesh)
    return SpmdResult(answer.inputs, (bad, *answer.outputs[1:]))


def test_each_native_outcome_is_classed_as_documented() -> None:
    case, answer = _valid_sound_case()
    judge = Judge()
    assert judge.native(case, Outcome(result=answer), "registry").verdict.label == SOUND
    assert judge.native(case, Outcome(result=_wrong(answer)), "registry").verdict.label == UNSOUND
    rows = {
        "Paddle raises ValueError": Outcome(error=ErrorInfo("ValueError", "bad")),
        "Paddle crashes": Outcome(crash="signal 11 (SIGSEGV)"),
        "Paddle's answer is undecodable": Outcome(undecodable="mesh of size 0", raw="garbage"),
        "Paddle has no answer on this route": Outcome(unreachable="no such rule"),
    }
    for kind, outcome in rows.items():
        j = judge.native(case, outcome, "registry")
        assert (j.verdict.label, j.verdict.kind, j.profile, j.route) == (RULE_ERROR, kind, NATIVE, "registry")
    j = judge.native(case, Outcome(not_run="worker timed out"), "registry")
    assert j.verdict.label == NO_ANSWER and j.answer is None


def test_a_garbage_native_answer_is_a_verdict_not_a_crash_of_ours() -> None:
    case, answer = _valid_sound_case()
    x = answer.inputs[0]
    garbage = SpmdResult((DistAttr(tuple(7 for _ in x.dims_mapping), frozenset({9}), x.mesh), *answer.inputs[1:]),
                         answer.outputs)
    assert Judge().native(case, Outcome(result=garbage), "registry").verdict.label == UNRUNNABLE


def test_the_op_rejecting_a_case_wins_over_any_native_outcome() -> None:
    judge = Judge()
    case = next(c for c in oracle_grid("layer_norm") if judge(c, "paddle").verdict.label == OP_REJECTS)
    for outcome in (Outcome(crash="signal 6 (SIGABRT)"), Outcome(error=ErrorInfo("ValueError", "x"))):
        assert judge.native(case, outcome, "registry").verdict.label == OP_REJECTS


def test_native_without_paddle_is_one_line_exit_3_and_all_leaves_it_out(tmp_path) -> None:
    code = ("import sys; sys.modules['paddle'] = None\nfrom paddle_spmd_port.cli import main\n"
            "sys.exit(main(sys.argv[1:]))")
    env_path = {"PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, "-c", code, "oracle", "--profile", "native", "--report-dir",
                          str(tmp_path / "r")], capture_output=True, text=True, timeout=120, env=env_path, cwd=tmp_path)
    lines = [ln for ln in run.stderr.splitlines() if ln.strip()]
    assert run.returncode == 3 and len(lines) == 1 and "--profile native" in lines[0], run.stderr
    assert not (tmp_path / "r").exists()
    run = subprocess.run([sys.executable, "-c", code, "oracle", "--rules", "layer_norm", "--max-cases", "5",
                          "--report-dir", str(tmp_path / "r")], capture_output=True, text=True, timeout=120,
                         env=env_path, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "native profile is left out: Paddle is not installed" in run.stderr
    assert "## Profile `native`" not in (tmp_path / "r" / "oracle.md").read_text()


def _judged(cases, outcomes, routes):
    judge = Judge()
    paddle = {r: [judge(c, "paddle") for c in cases[r]] for r in cases}
    native = {r: [judge.native(c, o, routes[r]) for c, o in zip(cases[r], outcomes[r], strict=True)] for r in cases}
    return paddle, native


def _totals(rows):
    tally = RuleTally()
    for judged in rows.values():
        for j in judged:
            tally.add(j)
    return totals({"all": tally})


@pytest.mark.native
def test_native_totals_equal_the_paddle_profiles_on_331_and_a_planted_wrong_answer_breaks_it() -> None:
    # a registry rule and a compiled-route rule, with the invalid corner cases the sample always keeps
    cases = {r: sample(list(oracle_grid(r)), 25, seed=3) for r in ("layer_norm", "rms_norm_grad")}
    outcomes, routes, info = collect(cases, workers=2, timeout=60, quiet=True)
    assert info.get("version", "").startswith("3.3.1")
    assert routes == {"layer_norm": "registry", "rms_norm_grad": "compiled"}
    paddle, native = _judged(cases, outcomes, routes)
    valid_paddle, valid_native = without_refused(paddle, native)
    assert _totals(valid_paddle) == _totals(valid_native)
    for r in valid_paddle:  # and case by case, not only in sum
        assert [j.verdict.label for j in valid_paddle[r]] == [j.verdict.label for j in valid_native[r]]
    # every difference left is a case the port refuses as invalid (Paddle answers or crashes there)
    for r in paddle:
        for a, b in zip(paddle[r], native[r], strict=True):
            if a.verdict.label != b.verdict.label:
                assert a.error.startswith(PORT_REFUSES), a.case.case_id

    # the check can fail: one native answer planted wrong changes the totals
    i = next(i for i, j in enumerate(native["layer_norm"]) if j.verdict.label == SOUND
             and not paddle["layer_norm"][i].error and any(a.dims_mapping and a.dims_mapping[0] != -1
                                                           for a in j.answer.outputs))
    planted = dict(outcomes)
    planted["layer_norm"] = list(outcomes["layer_norm"])
    planted["layer_norm"][i] = Outcome(result=_wrong(outcomes["layer_norm"][i].result))
    paddle2, native2 = _judged(cases, planted, routes)
    valid_paddle2, valid_native2 = without_refused(paddle2, native2)
    before, after = _totals(valid_paddle2), _totals(valid_native2)
    assert after != before and after[SOUND] == before[SOUND] - 1 and after[UNSOUND] == before[UNSOUND] + 1


@pytest.mark.native
def test_cli_profile_native_section_and_json(tmp_path) -> None:
    from tests.cli_checks import run_cli

    done = run_cli(["oracle", "--profile", "all", "--rules", "layer_norm", "--sample", "15", "--quiet",
                    "--report-dir", str(tmp_path / "r")], tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    text = (tmp_path / "r" / "oracle.md").read_text()
    assert "## Profile `native`" in text and "## native vs paddle" in text
    data = json.loads((tmp_path / "r" / "oracle.json").read_text())
    assert data["paddle"]["version"].startswith("3.3.1") and data["native_routes"] == {"layer_norm": "registry"}
    check = data["native_vs_paddle"]
    assert check["differing_without_refused"] == 0
    assert check["totals_without_refused"]["paddle"] == check["totals_without_refused"][NATIVE]
    assert set(data["totals"]) == {"paddle", "pr72918", "proposed", NATIVE}


def _children(pid: int) -> list[int]:
    from pathlib import Path

    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    from pathlib import Path

    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


@pytest.mark.native
def test_a_signal_while_paddle_answers_ends_every_worker_and_writes_a_partial_report(tmp_path) -> None:
    import signal
    import time

    from tests.test_signals_oracle import finish, start

    reports = tmp_path / "reports"
    # the registry route's workers (their own sessions: found as the command's children)
    proc, err = start(["oracle", "--profile", "native", "--rules", "sync_batch_norm,sync_batch_norm_grad",
                       "--report-dir", str(reports)], tmp_path)
    deadline = time.monotonic() + 120
    while not (workers := _children(proc.pid)):
        assert proc.poll() is None and time.monotonic() < deadline, err.read_text()
        time.sleep(0.02)
    time.sleep(0.5)
    workers = _children(proc.pid)
    proc.send_signal(signal.SIGTERM)
    code, out = finish(proc)
    stderr = err.read_text()
    lines = [ln for ln in stderr.splitlines() if ln.startswith("paddle_spmd_port oracle: interrupted")]
    assert code == 143 and "Traceback" not in stderr and len(lines) == 1, stderr
    assert workers and not any(_alive(w) for w in workers)
    first = (reports / "oracle.md").read_text().splitlines()[0]
    assert first.startswith("INTERRUPTED by SIGTERM") and "sync_batch_norm (not judged)" in first, first


def test_an_answer_that_varied_or_was_not_re_checked_is_not_judged_as_paddles() -> None:
    """Two runs answering differently are Paddle reading memory it never set (rule-error, both shown),
    even where the first answer alone would simulate sound; an answer whose promised re-run gave none
    is no-answer (exit 3): whether Paddle answers so every time is unknown. The op's refusal still
    wins. (Mutants: a judge reading only ``result`` calls both sound.)"""
    case, answer = _valid_sound_case()
    judge = Judge()
    varied = Outcome(result=answer, varies=Outcome(result=_wrong(answer)))
    j = judge.native(case, varied, "registry")
    assert (j.verdict.label, j.verdict.kind, j.answer) == (RULE_ERROR, "Paddle answers from memory it never set",
                                                            None), j
    first, _, second = j.error.partition("; another ")
    assert "out: [-1,-1] P{0}" not in first and "out: [-1,-1] P{0}" in second, j.error  # both answers, in order
    j = judge.native(case, Outcome(result=answer, not_rechecked="worker timed out"), "registry")
    assert (j.verdict.label, j.answer) == (NO_ANSWER, None) and "not re-checked: worker timed out" in j.error, j
    rejected = next(c for c in oracle_grid("layer_norm") if judge(c, "paddle").verdict.label == OP_REJECTS)
    for outcome in (varied, Outcome(result=answer, not_rechecked="worker timed out")):
        assert judge.native(rejected, outcome, "registry").verdict.label == OP_REJECTS
