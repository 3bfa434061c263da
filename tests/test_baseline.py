"""Baselines (parity/baseline.py): saving every native outcome, diffing a build with them, triage.

Without Paddle: the triage of each class on real cases, judged by the oracle (the port's answers
stand in for stored native ones, and doctored answers for a changed build); a self-diff is empty;
bad ``--baseline`` / ``--save-baseline`` input is one line, exit 2, nothing written. With Paddle
(``native``): a real build against its own baseline gives 0 changed cases, and a baseline doctored
in the file (one stored native answer edited) gives exactly the expected class and exit code.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
from pathlib import Path

import pytest

from paddle_spmd_port.case import Case
from paddle_spmd_port.grid import grid_for, sample
from paddle_spmd_port.ops import rule_spec
from paddle_spmd_port.oracle.report import Judge
from paddle_spmd_port.oracle.simulator import SOUND
from paddle_spmd_port.outcome import ErrorInfo, Outcome, port_outcome
from paddle_spmd_port.parity import baseline
from paddle_spmd_port.parity.baseline import (
    CASES_FILE,
    CHANGED,
    CHANGED_INVALID,
    CHANGED_UNSTABLE,
    FIXED,
    FORMAT,
    FORMAT_VERSION,
    NEWLY_RAISES,
    NO_LONGER_RAISES,
    REGRESSED,
    UNSTABLE,
    Diff,
    Saver,
    load,
    reason_key,
    triage,
)
from paddle_spmd_port.parity.output import write_diff
from paddle_spmd_port.reporting import REPRO_PYTHON
from paddle_spmd_port.runctl.exits import UsageError
from paddle_spmd_port.types import DistAttr, SpmdResult
from paddle_spmd_port.validity import input_problem
from tests.cli_checks import BadInput, assert_usage_error, run_cli

SELECTION = {"slug": "test", "describe": "a test selection"}
OLD = {"version": "9.9.9", "commit": "abc"}


def _wrong(answer: SpmdResult) -> SpmdResult:
    """The answer with its first output claimed Partial on mesh dim 0 instead of what it is."""
    out = answer.outputs[0]
    return SpmdResult(answer.inputs, (DistAttr(tuple(-1 for _ in out.dims_mapping), frozenset({0}), out.mesh),
                                      *answer.outputs[1:]))


def _cases() -> list[Case]:
    return sample(list(grid_for("layer_norm")), 40, seed=1)


def _saved(tmp_path: Path, cases: list[Case], outcomes: list[Outcome]) -> Path:
    path = tmp_path / "base.gz"
    saver = Saver(path)
    for i, (case, o) in enumerate(zip(cases, outcomes, strict=True)):
        saver.record("layer_norm", "registry", i, case, o)
    saver.finish(OLD, SELECTION)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # the temp rows file is gone
    return path


def _diff(path: Path, cases: list[Case], outcomes: list[Outcome],
          reruns: dict[str, list[Outcome]] | None = None, policy: str = "strict") -> Diff:
    """The diff of ``outcomes`` with the baseline at ``path``; ``reruns``: case id -> the outcome each re-run of
    that case gives (planted: what parity's re-runs would answer), checked to be asked of exactly those cases;
    ``policy``: the diffing run's port policy."""
    diff = Diff(load(path, SELECTION), policy)
    for i, (case, o) in enumerate(zip(cases, outcomes, strict=True)):
        diff.record("layer_norm", "registry", i, case, o)
    if reruns is not None:
        calls = iter(range(10))

        def rerun(backend: str, asked: list[Case]) -> list[Outcome]:
            assert backend == "registry" and sorted(c.case_id for c in asked) == sorted(reruns)
            n = next(calls)
            return [reruns[c.case_id][n] for c in asked]

        diff.recheck(rerun, times=2)
    diff.judge()
    return diff


def _sound_index(cases: list[Case], outcomes: list[Outcome]) -> int:
    judge = Judge()
    for i, (case, o) in enumerate(zip(cases, outcomes, strict=True)):
        if o.result is not None and input_problem(case) is None and judge.native(case, o, "registry").verdict.label \
                == SOUND and o.result.outputs[0].dims_mapping and o.result.outputs[0].dims_mapping[0] != -1:
            return i
    raise AssertionError("no sound answer with a sharded first output in the sample")


def test_a_self_diff_is_empty(tmp_path: Path) -> None:
    cases = _cases()
    outcomes = [port_outcome(c) for c in cases]
    diff = _diff(_saved(tmp_path, cases, outcomes), cases, outcomes)
    assert diff.changes == [] and diff.unchanged == len(cases) and not diff.incomplete
    assert diff.summary_line({"version": "9.9.9", "commit": "abc"}).startswith(
        "baseline 9.9.9 (commit abc) -> 9.9.9 (commit abc): 0 changed cases (0 regressed, 0 fixed")


@pytest.mark.parametrize("doctor, expected", [
    ("sound->wrong", REGRESSED),
    ("wrong->sound", FIXED),
    ("sound->error", NEWLY_RAISES),
    ("error->sound", NO_LONGER_RAISES),
    ("error->other error", CHANGED),
    ("sound->crash", REGRESSED),
    ("error->crash", REGRESSED),
    ("crash->sound", FIXED),
    ("crash->wrong", CHANGED),
    ("sound->undecodable", REGRESSED),
])
def test_one_doctored_outcome_gives_exactly_its_class(tmp_path: Path, doctor: str, expected: str) -> None:
    cases = _cases()
    outcomes = [port_outcome(c) for c in cases]
    i = _sound_index(cases, outcomes)
    sound = outcomes[i]
    forms = {"sound": sound, "wrong": Outcome(result=_wrong(sound.result)),
             "error": Outcome(error=ErrorInfo("ValueError", "x's rank is wrong")),
             "other error": Outcome(error=ErrorInfo("ValueError", "another message")),
             "crash": Outcome(crash="signal 11 (SIGSEGV)"),
             "undecodable": Outcome(undecodable="a mesh of size 0", raw="garbage")}
    old, new = doctor.split("->")
    stored = list(outcomes)
    stored[i] = forms[old]
    now = list(outcomes)
    now[i] = forms[new]
    diff = _diff(_saved(tmp_path, cases, stored), cases, now)
    assert [(c.klass, c.case.case_id) for c in diff.changes] == [(expected, cases[i].case_id)]
    assert diff.unchanged == len(cases) - 1
    assert diff.changes[0].diffs  # the cells that changed are named
    assert (diff.regressed == 1) == (expected == REGRESSED)


def _many_changes(tmp_path: Path, policy: str = "strict") -> Diff:
    """A diff of the sample where every stored answer is an error now answered (no longer raises), and
    every stored error a crash now (regressed): many changed cases of two classes."""
    cases = _cases()
    outcomes = [port_outcome(c) for c in cases]
    stored = [Outcome(error=ErrorInfo("ValueError", "planted")) if o.result is not None else o for o in outcomes]
    now = [Outcome(crash="signal 11 (SIGSEGV)") if o.result is None else o for o in outcomes]
    return _diff(_saved(tmp_path, cases, stored), cases, now, policy=policy)


def test_the_diff_is_a_summary_and_every_case_a_json_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(baseline, "EXAMPLES_PER_CLASS", 3)
    diff = _many_changes(tmp_path)
    counts = diff.counts
    assert counts[NO_LONGER_RAISES] > 3 and counts[REGRESSED] > 3, counts
    out = tmp_path / "r"
    write_diff(diff, out, OLD, SELECTION)
    data = json.loads((out / "baseline.json").read_text())
    lines = _rows(out / CASES_FILE)
    assert "cases" not in data and data["cases_file"] == CASES_FILE and data["cases_total"] == len(lines)
    assert len(lines) == len(diff.changes) and lines[0]["class"] == REGRESSED  # regressions first
    assert lines == [json.loads(json.dumps(c.to_json())) for c in diff.ordered()]  # each line: to_json()
    assert all(Case.from_json(x["case"]).case_id == x["id"] and "old_outcome" in x and "new_outcome" in x
               for x in lines)
    assert data["examples_per_class"] == 3
    assert {k: len(v) for k, v in data["examples"].items()} == {REGRESSED: 3, NO_LONGER_RAISES: 3}
    assert [e["id"] for e in data["examples"][REGRESSED]] == [x["id"] for x in lines[:3]]
    assert all(e["repro"].startswith(REPRO_PYTHON + " -m paddle_spmd_port infer") for v in data["examples"].values()
               for e in v)
    assert data["groups"] == {"layer_norm@registry": {REGRESSED: counts[REGRESSED],
                                                      NO_LONGER_RAISES: counts[NO_LONGER_RAISES]}}
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]


def test_the_markdown_lists_at_most_its_cap_of_a_class_and_points_to_the_cases_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(baseline, "MARKDOWN_PER_CLASS", 2)
    diff = _many_changes(tmp_path)
    n = diff.counts[REGRESSED]
    assert n > 2
    text = diff.markdown(OLD, SELECTION)
    part = text.split(f"## {REGRESSED} ({n})")[1].split("\n## ")[0]
    assert part.count("repro under") == 2 * 2  # two cases, a line per build
    assert f"The first 2 of {n}; every one is in `{CASES_FILE}`." in part


@pytest.mark.parametrize("policy", ["strict", "mirror"])
def test_every_repro_line_of_a_diff_names_the_runs_policy_unless_strict(tmp_path: Path, policy: str) -> None:
    """A diff run under --policy mirror writes lines that replay under it (infer's port answers as the
    run's did), in every file; a strict run's lines name no policy, as they always read."""
    (tmp_path / "b").mkdir()
    diff = _many_changes(tmp_path / "b", policy)
    out = tmp_path / "r"
    write_diff(diff, out, OLD, SELECTION)
    texts = {name: (out / name).read_text() for name in ("baseline.json", "baseline.md", "baseline.html")}
    texts[CASES_FILE] = gzip.decompress((out / CASES_FILE).read_bytes()).decode()
    for name, text in texts.items():
        lines = re.findall(r"-m paddle_spmd_port infer [^'&{]*--case-json", text)
        assert lines, name
        named = [line for line in lines if "--policy mirror " in line]
        assert named == (lines if policy == "mirror" else []), (name, lines[:2])
        assert "--policy strict" not in text, name
    changes = _rows(out / CASES_FILE)
    assert all(c.get("policy") == ("mirror" if policy == "mirror" else None) for c in changes)
    assert {ch.policy for ch in diff.ordered()} == {policy}  # (read back from the changes' lines)


def test_a_baseline_serves_a_run_under_either_policy(tmp_path: Path) -> None:
    """A baseline holds native outcomes only, which the port's policy does not change: a mirror run takes
    a baseline its strict twin saved (and saves one the strict twin takes), while its own report goes
    apart from the strict one's; a baseline of another selection is still refused."""
    from paddle_spmd_port.parity.cli import parse_args

    (tmp_path / "b.gz").write_bytes(_gz([_header(THIS)]))
    argv = [a.replace("{tmp}", str(tmp_path)) for a in PARITY[1:]]
    strict = parse_args([*argv, "--baseline", str(tmp_path / "b.gz")])
    mirror = parse_args([*argv, "--policy", "mirror", "--baseline", str(tmp_path / "b.gz")])
    assert strict.stored is not None and mirror.stored is not None
    assert strict.selection["slug"] == THIS == mirror.native_selection["slug"] == strict.native_selection["slug"]
    assert mirror.selection["slug"] != THIS and mirror.selection["policy"] == "mirror"
    assert mirror.native_selection["policy"] == "strict"  # what a --save-baseline of the mirror run writes
    (tmp_path / "o.gz").write_bytes(_gz([_header("full")]))
    with pytest.raises(UsageError, match="another selection"):
        parse_args([*argv, "--policy", "mirror", "--baseline", str(tmp_path / "o.gz")])


def test_an_interrupted_write_leaves_no_temp_file_and_the_partial_report_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    diff = _many_changes(tmp_path)
    out = tmp_path / "r"
    # (the changes are written line by line from the diff's spill: a signal arrives at the sixth line)
    real, written = gzip.GzipFile.write, []

    def stop(self: gzip.GzipFile, data: bytes) -> int:
        if len(written) == 5:
            raise KeyboardInterrupt
        written.append(data)
        return real(self, data)

    monkeypatch.setattr(gzip.GzipFile, "write", stop)
    with pytest.raises(KeyboardInterrupt):
        write_diff(diff, out, OLD, SELECTION, "SIGTERM")
    assert list(out.iterdir()) == []  # no temp file, no half cases file
    monkeypatch.setattr(gzip.GzipFile, "write", real)
    write_diff(diff, out, OLD, SELECTION, "SIGTERM")
    data = json.loads((out / "baseline.json").read_text())
    assert data["status"].startswith("INTERRUPTED by SIGTERM")
    assert (out / "baseline.md").read_text().startswith("**INTERRUPTED by SIGTERM")
    assert len(_rows(out / CASES_FILE)) == data["cases_total"] == len(diff.changes)
    assert sorted(p.name for p in out.iterdir()) == [CASES_FILE, "baseline.html", "baseline.json", "baseline.md"]


def _invalid_pair(tmp_path: Path) -> tuple[list[Case], list[Outcome], list[Outcome], int]:
    """An invalid input answered in the baseline and crashed on now (the planted pair of outcomes), and a
    valid case that changed too (no candidate for a re-run)."""
    cases = _cases()
    outcomes = [port_outcome(c) for c in cases]
    j = next(k for k, c in enumerate(cases) if input_problem(c) is not None)
    i = _sound_index(cases, outcomes)
    stored = list(outcomes)
    stored[j] = Outcome(result=outcomes[i].result)  # what Paddle read past the mapping in the old build ...
    stored[i] = Outcome(result=_wrong(outcomes[i].result))  # (a valid case fixed: not re-run)
    now = list(outcomes)
    now[j] = Outcome(crash="signal 6 (SIGABRT)")  # ... and in this one
    return cases, stored, now, j


def test_a_deterministic_change_on_invalid_input_is_a_change_not_unstable(tmp_path: Path) -> None:
    cases, stored, now, j = _invalid_pair(tmp_path)
    same = [now[j], now[j]]  # both re-runs answer as the sweep did: nothing shows the case to vary
    diff = _diff(_saved(tmp_path, cases, stored), cases, now, {cases[j].case_id: same})
    assert sorted(c.klass for c in diff.changes) == [CHANGED_INVALID, FIXED]
    assert diff.regressed == 0 and diff.changed() == 2 and diff.counts[UNSTABLE] == 0
    assert "1 fixed, 0 changed, 0 newly raises, 0 no longer raises, 1 changed on invalid input, 0 changed though " \
           "unstable); 0 unstable" \
        in diff.summary_line(OLD)
    text = diff.markdown(OLD, SELECTION)
    assert f"## {CHANGED_INVALID} (1)" in text and "2 of 2 re-runs answered, 0 otherwise than the sweep" in text
    assert diff.status() == "CHANGED, NONE REGRESSED: 2 changed cases (1 on invalid input)"
    # with no re-run at all (an interrupted run, a diff built by hand) it is the same change, saying so
    bare = _diff(_saved(tmp_path, cases, stored), cases, now)
    assert sorted(c.klass for c in bare.changes) == [CHANGED_INVALID, FIXED]
    assert "not re-run" in bare.markdown(OLD, SELECTION)


def test_an_invalid_input_shown_to_vary_is_unstable_not_a_change(tmp_path: Path) -> None:
    cases, stored, now, j = _invalid_pair(tmp_path)
    varying = [now[j], stored[j]]  # the second re-run answers as the old build did: the outcome moves
    diff = _diff(_saved(tmp_path, cases, stored), cases, now, {cases[j].case_id: varying})
    assert sorted(c.klass for c in diff.changes) == [FIXED, UNSTABLE] and diff.changed() == 1
    assert "1 otherwise than the sweep" in diff.markdown(OLD, SELECTION)
    # a re-run that gave no answer (the backend gone) is no evidence: still a change
    lost = [Outcome(not_run="backend unavailable"), now[j]]
    assert sorted(c.klass for c in _diff(_saved(tmp_path, cases, stored), cases, now,
                                         {cases[j].case_id: lost}).changes) == [CHANGED_INVALID, FIXED]
    # an invalid input Paddle now rejects, the same on each re-run, is a real change: it newly raises
    now[j] = Outcome(error=ErrorInfo("ValueError", "now validated"))
    assert sorted(c.klass for c in _diff(_saved(tmp_path, cases, stored), cases, now,
                                         {cases[j].case_id: [now[j], now[j]]}).changes) == [FIXED, NEWLY_RAISES]


def test_a_varying_outcome_that_never_gives_the_baseline_answer_is_a_change_not_hidden_as_unstable(
        tmp_path: Path) -> None:
    """The unstable class holds only cases where the baseline's answer is still among this build's: an
    outcome that moves between two new answers, neither the old one, is *changed (unstable)*, counted
    as changed (a mutant triage that calls every varying case unstable hides it). The variation may be
    shown by a re-run, by the sweep's own two runs (``varies``), or by the baseline's two runs."""
    cases, stored, now, j = _invalid_pair(tmp_path)
    other = Outcome(error=ErrorInfo("ValueError", "another answer"))
    moved = _diff(_saved(tmp_path, cases, stored), cases, now, {cases[j].case_id: [now[j], other]})
    assert sorted(c.klass for c in moved.changes) == [CHANGED_UNSTABLE, FIXED] and moved.changed() == 2
    assert moved.counts[UNSTABLE] == 0 and "1 changed though unstable" in moved.summary_line(OLD)
    # the sweep's outcome carrying its second run's answer: the same evidence, no re-run needed
    both = list(now)
    both[j] = dataclasses.replace(now[j], varies=other)
    assert sorted(c.klass for c in _diff(_saved(tmp_path, cases, stored), cases, both).changes) \
        == [CHANGED_UNSTABLE, FIXED]
    both[j] = dataclasses.replace(now[j], varies=stored[j])  # one of its two answers is the baseline's
    assert sorted(c.klass for c in _diff(_saved(tmp_path, cases, stored), cases, both).changes) == [FIXED, UNSTABLE]
    # the baseline's outcome carrying two answers, one of them this build's: unstable, nothing changed
    old_both = list(stored)
    old_both[j] = dataclasses.replace(stored[j], varies=now[j])
    assert sorted(c.klass for c in _diff(_saved(tmp_path, cases, old_both), cases, now).changes) == [FIXED, UNSTABLE]


def test_an_invalid_input_that_raised_and_crashes_now_is_regressed_unless_a_re_run_shows_it_varies(
        tmp_path: Path) -> None:
    """An invalid co-shard read past its mapping raises in one run and crashes in the next (3.3.1's registry,
    p_norm-coshard-invalid-4): regressed by the table, unless a re-run shows this build's outcome to move."""
    cases, stored, now, j = _invalid_pair(tmp_path)
    stored[j] = Outcome(error=ErrorInfo("ValueError", "2 mesh dims shard tensor dim 0"))
    crashes = _diff(_saved(tmp_path, cases, stored), cases, now, {cases[j].case_id: [now[j], now[j]]})
    assert sorted(c.klass for c in crashes.changes) == [FIXED, REGRESSED] and crashes.regressed == 1
    moves = _diff(_saved(tmp_path, cases, stored), cases, now, {cases[j].case_id: [now[j], stored[j]]})
    assert sorted(c.klass for c in moves.changes) == [FIXED, UNSTABLE] and moves.regressed == 0


BUILT_IN = "batch_norm cannot be built here (OSError in paddle/common/layout.h): Unknown data layout type string: NC."


AT_101 = f"{BUILT_IN}\n  [/paddle/paddle/common/layout.h:101]"


@pytest.mark.parametrize("old_reason, new_reason, klass", [
    (AT_101, f"{BUILT_IN}\n  [/paddle/paddle/common/layout.h:103]", None),
    (AT_101, f"{BUILT_IN}\n  [/home/me/Paddle/paddle/common/layout.h:101]", None),
    ("compiled caller unavailable: /work/venvs/paddle-3.0.0/lib/python3.11/site-packages/paddle/include has no x.h",
     "compiled caller unavailable: /opt/py/lib/python3.12/dist-packages/paddle/include has no x.h", None),
    (AT_101, f"{BUILT_IN}\n  [/paddle/paddle/common/place.h:101]", CHANGED),
    ("'begin_norm_axis' should begreater than zero", "'begin_norm_axis' should be greater than zero", CHANGED),
    ("in paddle/phi/infermeta/spmd_rules/x.cc:12: ranks 2 vs 3", "in paddle/phi/infermeta/spmd_rules/x.cc:40: ranks "
     "2 vs 4", CHANGED),
])
def test_reasons_are_compared_without_line_numbers_and_build_paths(tmp_path: Path, old_reason: str,
                                                                   new_reason: str, klass: str | None) -> None:
    cases = _cases()
    outcomes = [port_outcome(c) for c in cases]
    stored, now = list(outcomes), list(outcomes)
    stored[0], now[0] = Outcome(unreachable=old_reason), Outcome(unreachable=new_reason)
    stored[1], now[1] = (Outcome(error=ErrorInfo("ValueError", r)) for r in (old_reason, new_reason))
    diff = _diff(_saved(tmp_path, cases, stored), cases, now)
    if klass is None:
        assert diff.changes == [] and diff.unchanged == len(cases) and diff.normalised == 2
        shown = diff.normalised_shown[0]  # the raw texts are kept and shown
        assert (shown["id"], shown["old"], shown["new"]) == (cases[0].case_id, f"unreachable: {old_reason}",
                                                             f"unreachable: {new_reason}")
        text = diff.markdown(OLD, SELECTION)
        assert "## Unchanged once normalised (2)" in text and old_reason.splitlines()[-1].strip() in text
        assert old_reason.replace("\n", "\\n") in text  # (raw, on one line of the list)
        assert diff.to_json(OLD, SELECTION)["unchanged_normalised"] == 2
    else:
        assert [c.klass for c in diff.changes] == [klass, klass] and diff.normalised == 0
        assert any(old_reason.splitlines()[-1] in d for d in diff.changes[0].diffs)  # raw, in the cells


def test_reason_key() -> None:
    assert reason_key("x [/paddle/paddle/common/layout.h:101]") == "x [paddle/common/layout.h:<line>]"
    assert reason_key("(at /home/u/Paddle/paddle/phi/core/enforce.cc:7)") == "(at paddle/phi/core/enforce.cc:<line>)"
    assert reason_key("/v/lib/python3.11/site-packages/paddle/include") == "<site-packages>/paddle/include"
    assert reason_key("ranks 2 vs 3: 101") == "ranks 2 vs 3: 101"  # a number that is no source line stays


def test_triage_table() -> None:
    ans, err, crash = Outcome(result=SpmdResult((), ())), Outcome(error=ErrorInfo("ValueError", "m")), \
        Outcome(crash="signal 11")
    unreachable = Outcome(unreachable="no rule")
    assert triage(ans, ans, "sound", "unrunnable", False) == REGRESSED
    assert triage(ans, ans, "local-stats-only", "sound", False) == FIXED
    assert triage(ans, ans, "sound", "sound", False) == CHANGED
    assert triage(ans, ans, "unsound", "unrunnable", False) == CHANGED
    assert triage(ans, ans, "op-rejects", "op-rejects", False) == CHANGED
    assert triage(unreachable, ans, "rule-error", "sound", False) == NO_LONGER_RAISES
    assert triage(ans, unreachable, "sound", "rule-error", False) == NEWLY_RAISES
    assert triage(crash, err, "rule-error", "rule-error", False) == CHANGED
    assert triage(ans, crash, "sound", "rule-error", True, varies=True) == UNSTABLE
    assert triage(ans, crash, "sound", "rule-error", True) == CHANGED_INVALID
    assert triage(ans, ans, "sound", "unsound", True) == CHANGED_INVALID
    assert triage(err, crash, "rule-error", "rule-error", True, varies=True) == UNSTABLE  # shown to vary: not regressed
    assert triage(err, crash, "rule-error", "rule-error", True) == REGRESSED
    assert triage(ans, crash, "sound", "rule-error", False, varies=True) == REGRESSED  # (a valid input: the table)


def test_stored_not_run_or_a_missing_row_is_uncompared(tmp_path: Path) -> None:
    cases = _cases()
    outcomes = [port_outcome(c) for c in cases]
    stored = list(outcomes)
    stored[0] = Outcome(not_run="worker timed out")
    diff = Diff(load(_saved(tmp_path, cases, stored), SELECTION))
    for i, (case, o) in enumerate(zip(cases[:-1], outcomes[:-1], strict=True)):  # the last case not run now
        diff.record("layer_norm", "registry", i, case, o)
    diff.judge()
    assert diff.incomplete and diff.changes == []
    assert sum(diff.uncompared.values()) == 1 and sum(diff.missing().values()) == 1


# --------------------------------------------------------------------------- format 1
FORMAT_1 = Path(__file__).parent / "data" / "baseline" / "format1.gz"
"""A baseline written in format 1 by the code that wrote it (tests/data/baseline/README.md): its case
texts name only the attributes each case was built with."""


def _diff_outcome(path: Path, cases: list[tuple[str, int, Case]], outcomes: list[Outcome], out: Path) -> dict:
    """What a diff of ``outcomes`` with the baseline at ``path`` reports: baseline.json (without the
    baseline's file name), every line of the cases file, and what parity's exit status is decided on."""
    diff = Diff(load(path, SELECTION))
    for (rule, i, case), o in zip(cases, outcomes, strict=True):
        diff.record(rule, "registry", i, case, o)
    now = {case.case_id: o for (_, _, case), o in zip(cases, outcomes, strict=True)}
    diff.recheck(lambda backend, asked: [now[c.case_id] for c in asked])  # (re-runs answer as the sweep did)
    diff.judge()
    write_diff(diff, out, {"version": "0.0.0", "commit": "new"}, SELECTION)
    summary = json.loads((out / "baseline.json").read_text())
    del summary["old"]["file"]
    with gzip.open(out / CASES_FILE, "rt") as fh:
        lines = fh.read().splitlines()
    return {"summary": summary, "cases": lines, "regressed": diff.regressed, "incomplete": diff.incomplete}


def test_a_format_1_baseline_gives_the_diff_a_format_2_baseline_of_the_same_build_gives(tmp_path: Path) -> None:
    rows = _rows(FORMAT_1)
    header, rows = rows[0], rows[1:]
    assert header["format_version"] == 1 and header["rows"] == len(rows)
    cases = [(r["rule"], int(r["i"]), Case.from_json(r["case"])) for r in rows]
    # genuine format 1: many of its texts name fewer attributes than their cases hold (batch_norm's all of them)
    short = [k for k, (r, (_, _, c)) in enumerate(zip(rows, cases, strict=True))
             if len(r["case"]["attrs"]) < len(c.attrs)]
    assert len(short) > 100 and {"batch_norm", "instance_norm", "group_norm"} <= {rows[k]["rule"] for k in short}
    stored = [Outcome.from_json(r["native"]) for r in rows]
    # the same build's outcomes saved in format 2
    saver = Saver(tmp_path / "format2.gz")
    for (rule, i, case), o in zip(cases, stored, strict=True):
        saver.record(rule, "registry", i, case, o)
    saver.finish(header["paddle"], header["selection"])
    assert _rows(tmp_path / "format2.gz")[0]["format_version"] == FORMAT_VERSION == 2
    # a later build: one answer of each rule whose texts were short turned into an error, one into a crash
    now = list(stored)
    for rule in ("batch_norm", "instance_norm", "group_norm"):
        shorts = [k for k in short if rows[k]["rule"] == rule]
        answered = next(k for k in shorts if stored[k].result is not None)
        now[answered] = Outcome(error=ErrorInfo("ValueError", "planted"))
        now[next(k for k in shorts if k != answered)] = Outcome(crash="signal 11 (SIGSEGV)")
    old = _diff_outcome(FORMAT_1, cases, now, tmp_path / "d1")
    new = _diff_outcome(tmp_path / "format2.gz", cases, now, tmp_path / "d2")
    assert old == new
    summary = new["summary"]
    assert summary["uncompared"] == {} and not new["incomplete"] and new["regressed"] >= 1
    assert summary["cases_total"] == 6 and summary["unchanged"] == len(rows) - 6
def _gz(lines: list[object]) -> bytes:
    return gzip.compress("".join(json.dumps(x) + "\n" for x in lines).encode())


def _header(slug: str, rows: int = 0) -> dict:
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "paddle": OLD,
            "selection": {"slug": slug, "describe": f"selection {slug}"}, "rows": rows}


THIS = "rules-layer_norm_sample5-seed0"
PARITY = ("parity", "--rules", "layer_norm", "--sample", "5", "--report-dir", "{tmp}/r")
BAD_FILES: list[tuple[str, bytes | None, tuple[str, ...], str]] = [
    ("missing file", None, ("--baseline", "{tmp}/nope.gz"), "--baseline"),
    ("not gzip", b"just some text\n", ("--baseline", "{tmp}/b.gz"), "--baseline"),
    ("corrupt gzip", _gz([_header(THIS)])[:-12], ("--baseline", "{tmp}/b.gz"), "--baseline"),
    ("empty gzip", gzip.compress(b""), ("--baseline", "{tmp}/b.gz"), "--baseline"),
    ("not a baseline", _gz([{"status": "complete"}]), ("--baseline", "{tmp}/b.gz"), "--baseline"),
    ("a parity cases file", _gz([{"rule": "layer_norm", "verdict": "match"}]), ("--baseline", "{tmp}/b.gz"),
     "--baseline"),
    ("a row that is not one", _gz([_header(THIS, 1), {"rule": "layer_norm"}]), ("--baseline", "{tmp}/b.gz"),
     "--baseline"),
    ("rows missing (truncated at a line)", _gz([_header(THIS, 3)]), ("--baseline", "{tmp}/b.gz"), "--baseline"),
    ("another selection", _gz([_header("full")]), ("--baseline", "{tmp}/b.gz"), "--baseline"),
    # a format this version does not know (a later one's rows may be keyed otherwise): refused, not guessed at
    ("a format-3 baseline", _gz([{**_header(THIS), "format_version": 3}]), ("--baseline", "{tmp}/b.gz"),
     "--baseline"),
    ("a format_version not a number", _gz([{**_header(THIS), "format_version": "1"}]), ("--baseline", "{tmp}/b.gz"),
     "--baseline"),
    ("a directory", None, ("--baseline", "{tmp}/r"), "--baseline"),
    ("save to a directory", None, ("--save-baseline", "{tmp}/adir"), "--save-baseline"),
    ("save over the baseline compared", _gz([_header(THIS)]), ("--baseline", "{tmp}/b.gz", "--save-baseline",
                                                               "{tmp}/b.gz"), "--save-baseline"),
    ("save with --list", None, ("--save-baseline", "{tmp}/new.gz", "--list"), "--save-baseline"),
    ("save with --merge", None, ("--save-baseline", "{tmp}/new.gz", "--merge", "{tmp}/r"), "--save-baseline"),
    ("empty path", None, ("--baseline", ""), "--baseline"),
]


@pytest.mark.parametrize("name, content, extra, flag", BAD_FILES, ids=[r[0] for r in BAD_FILES])
def test_bad_baseline_input_is_one_line_exit_2_nothing_written(tmp_path: Path, name: str, content: bytes | None,
                                                               extra: tuple[str, ...], flag: str) -> None:
    if content is not None:
        (tmp_path / "b.gz").write_bytes(content)
    (tmp_path / "adir").mkdir()
    if name == "a directory":
        (tmp_path / "r").mkdir()
    line = assert_usage_error(BadInput((*PARITY, *extra), flag), tmp_path)
    if name == "another selection":
        assert "another selection (selection full)" in line and "this run:" in line
    if name == "a format-3 baseline":
        assert "of format 3" in line and "reads formats 1, 2" in line


# --------------------------------------------------------------------------- real builds
NATIVE_RUN = ["parity", "--rules", "layer_norm,instance_norm", "--sample", "12", "--primary-only", "--workers", "1",
              "--quiet"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("baseline")
    done = run_cli([*NATIVE_RUN, "--report-dir", str(where / "r0"), "--save-baseline", str(where / "b.gz")], where,
                   timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return where / "b.gz"


def _rows(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as fh:
        return [json.loads(line) for line in fh]


def _replicated(result: SpmdResult) -> SpmdResult:
    """Every input and output replicated: sound for any case the op can run."""
    def rep(a: DistAttr) -> DistAttr:
        return DistAttr(tuple(-1 for _ in a.dims_mapping), frozenset(), a.mesh)
    return SpmdResult(tuple(map(rep, result.inputs)), tuple(map(rep, result.outputs)))


def _doctored(saved: Path, tmp_path: Path, *forms: str) -> tuple[Path, list[str]]:
    """A copy of the baseline with one stored answer (valid input) edited per form: ``wrong`` /
    ``error`` edit a sound stored layer_norm answer; ``replicated`` stores a sound answer where the
    build's (layer_norm's or instance_norm's) is not sound."""
    rows = _rows(saved)
    judge = Judge()
    ids = []
    for form in forms:
        for row in rows[1:]:
            case = Case.from_json(row["case"])
            native = Outcome.from_json(row["native"])
            wanted = ("layer_norm", "instance_norm") if form == "replicated" else ("layer_norm",)
            if row["rule"] not in wanted or native.result is None or input_problem(case) is not None \
                    or row["id"] in ids:
                continue
            label = judge.native(case, native, row["backend"]).verdict.label
            if form == "replicated" and label in ("unsound", "unrunnable"):
                row["native"] = Outcome(result=_replicated(native.result)).to_json()
            elif form != "replicated" and label == SOUND and native.result.outputs[0].dims_mapping[0] != -1:
                row["native"] = {"wrong": Outcome(result=_wrong(native.result)),
                                 "error": Outcome(error=ErrorInfo("ValueError", "planted"))}[form].to_json()
            else:
                continue
            ids.append(row["id"])
            break
        else:
            raise AssertionError(f"no stored answer to doctor for {form}")
    path = tmp_path / f"doctored-{'-'.join(forms)}.gz"
    path.write_bytes(_gz(rows))
    return path, ids


@pytest.mark.native
def test_a_build_against_its_own_baseline_has_0_changed_cases(saved: Path, tmp_path: Path) -> None:
    header = _rows(saved)[0]
    assert header["paddle"]["version"].startswith("3.3.1") and header["selection"]["slug"]
    done = run_cli([*NATIVE_RUN, "--report-dir", str(tmp_path / "r"), "--baseline", str(saved)], tmp_path,
                   timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    last = done.stdout.strip().splitlines()[-1]
    # nothing changed, invalid inputs included: each runs in a child of its own in a fixed memory layout, so
    # what Paddle reads from memory it never set is the same bytes in both runs (native/pool.py)
    assert last.startswith("baseline 3.3.1") and ": 0 changed cases (0 regressed, 0 fixed, 0 changed, 0 newly " \
        "raises, 0 no longer raises, 0 changed on invalid input, 0 changed though unstable); 0 unstable" in last, last
    data = json.loads((tmp_path / "r" / "baseline.json").read_text())
    assert data["status"].startswith("UNCHANGED") and data["unchanged"] == header["rows"]
    assert _rows(tmp_path / "r" / CASES_FILE) == [] and data["cases_total"] == 0


@pytest.mark.native
@pytest.mark.parametrize("form, klass", [("wrong", FIXED), ("error", NO_LONGER_RAISES)])
def test_a_doctored_baseline_triages_the_edited_cell(saved: Path, tmp_path: Path, form: str, klass: str) -> None:
    path, ids = _doctored(saved, tmp_path, form)
    done = run_cli([*NATIVE_RUN, "--report-dir", str(tmp_path / "r"), "--baseline", str(path)], tmp_path,
                   timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    data = json.loads((tmp_path / "r" / "baseline.json").read_text())
    cases = _rows(tmp_path / "r" / CASES_FILE)
    assert [(c["class"], c["id"]) for c in cases if c["class"] not in (UNSTABLE, CHANGED_INVALID)] == [(klass, ids[0])]
    assert cases[0]["repro"].startswith(REPRO_PYTHON + " -m paddle_spmd_port infer --backend registry --case-json '")
    assert data["examples"][klass][0]["repro"] == cases[0]["repro"]
    noise = sum(c["class"] == CHANGED_INVALID for c in cases)  # (see the self-diff above)
    assert f": {1 + noise} changed cases (" in done.stdout.strip().splitlines()[-1]


@pytest.mark.native
def test_a_regression_exits_1_and_is_listed_first(saved: Path, tmp_path: Path) -> None:
    # stored: a sound (replicated) answer where this build's is not sound -> regressed; and a fixed one
    path, ids = _doctored(saved, tmp_path, "wrong", "replicated")
    done = run_cli([*NATIVE_RUN, "--report-dir", str(tmp_path / "r"), "--baseline", str(path)], tmp_path,
                   timeout=600)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    last = done.stdout.strip().splitlines()[-1]
    # the two doctored cases, plus at most the invalid inputs' noise the self-diff above allows (CI saw one)
    summary = re.search(r": (\d+) changed cases \(1 regressed, 1 fixed, 0 changed, 0 newly raises, 0 no longer "
                        r"raises, (\d+) changed on invalid input, (\d+) changed though unstable\)", last)
    assert summary and int(summary[1]) == 2 + int(summary[2]) + int(summary[3]), last
    text = (tmp_path / "r" / "baseline.md").read_text()
    assert text.startswith(f"**REGRESSED: 1 of {summary[1]} changed cases regressed**")
    assert text.index("## regressed") < text.index("## fixed")
    assert text.index(f"`{ids[1]}`") < text.index(f"`{ids[0]}`")
    # one repro per build per changed case; "unstable" invalid inputs (listed after them) carry theirs too
    changed_part = text.split(f"## {CHANGED_INVALID}")[0].split(f"## {UNSTABLE}")[0]
    assert changed_part.count("repro under") == 4


@pytest.mark.native
def test_an_invalid_input_changed_in_the_baseline_is_re_run_and_not_unstable(saved: Path, tmp_path: Path) -> None:
    """End to end: a stored answer of an invalid input edited (another answer than this build's, which answers it
    the same every run) is re-run by parity and comes out *changed (invalid input)*, the re-runs named."""
    rows = _rows(saved)
    row = next((r for r in rows[1:] if Outcome.from_json(r["native"]).result is not None
                and input_problem(Case.from_json(r["case"])) is not None), None)
    if row is None:
        pytest.skip("no invalid input answered in the sample")
    row["native"] = Outcome(result=_replicated(Outcome.from_json(row["native"]).result)).to_json()
    path = tmp_path / "doctored-invalid.gz"
    path.write_bytes(_gz(rows))
    done = run_cli([*NATIVE_RUN, "--report-dir", str(tmp_path / "r"), "--baseline", str(path)], tmp_path,
                   timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    case = next(c for c in _rows(tmp_path / "r" / CASES_FILE) if c["id"] == row["id"])
    assert case["class"] in (CHANGED_INVALID, UNSTABLE) and case["reruns"].startswith("2 of 2 re-runs answered")
    assert len(case["rerun_outcomes"]) == 2
    if case["class"] == UNSTABLE:  # (only if this build's answer moved between the sweep and a re-run)
        assert "0 otherwise" not in case["reruns"]
    else:
        assert "0 otherwise than the sweep" in case["reruns"]


@pytest.mark.native
def test_a_format_1_copy_of_a_baseline_gives_the_same_diff_and_exit_code(saved: Path, tmp_path: Path) -> None:
    # the doctored baseline (a regression and a fix) as format 1 wrote it: a case text names no attribute at
    # its default (format 1 named those a case was built with; a case built without them reads the same)
    path, _ = _doctored(saved, tmp_path, "wrong", "replicated")
    rows = _rows(path)
    defaults = {rule: dict(rule_spec(rule).attrs) for rule in {r["rule"] for r in rows[1:]}}
    for row in rows[1:]:
        row["case"]["attrs"] = [[k, v] for k, v in row["case"]["attrs"] if v != defaults[row["rule"]][k]]
    old = tmp_path / "format1.gz"
    old.write_bytes(_gz([{**rows[0], "format_version": 1}, *rows[1:]]))
    assert sum(len(r["case"]["attrs"]) < len(defaults[r["rule"]]) for r in rows[1:]) > len(rows) // 4
    # one run: the format-2 file's own diff is test_a_regression_exits_1_and_is_listed_first's (exit 1, one
    # regressed, one fixed, every row compared); the Paddle-free test above compares the two files' diffs whole
    done = run_cli([*NATIVE_RUN, "--report-dir", str(tmp_path / "r"), "--baseline", str(old)], tmp_path, timeout=600)
    data = json.loads((tmp_path / "r" / "baseline.json").read_text())
    # (changes on invalid input are Paddle's noise, run to run: see the self-diff above)
    classes = {k: n for k, n in data["counts"].items() if k not in (CHANGED_INVALID, CHANGED_UNSTABLE, UNSTABLE) and n}
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert classes == {REGRESSED: 1, FIXED: 1}, data["counts"]
    assert data["unchanged"] + sum(data["counts"].values()) == rows[0]["rows"] and data["uncompared"] == {}
