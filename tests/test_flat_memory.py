"""Flat memory: what a parity run keeps per case does not grow with the number of cases where it need
not. A baseline diff keeps its rows and changes on disk (in memory: counts and the first few changes
of each class); a rule compared through one route, and a merged report, count their coverage instead
of keeping flags and reasons per case. Memory figures: docs/measurements/2026-12-07-flat-memory.md."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from paddle_spmd_port.outcome import Outcome, port_outcome
from paddle_spmd_port.parity import baseline
from paddle_spmd_port.parity.baseline import CASES_FILE, Diff, load
from paddle_spmd_port.parity.output import write_diff
from paddle_spmd_port.parity.report import LACKS, RuleCoverage
from tests.test_baseline import OLD, SELECTION, _cases, _saved


def _largest(diff: Diff) -> int:
    """The size of the largest container the diff holds (its baseline aside: on disk, tested below)."""
    return max(_sized(v) for k, v in vars(diff).items() if k != "stored")


def _sized(value: object) -> int:
    try:
        return len(value)  # type: ignore[arg-type]
    except TypeError:
        return 0


def test_a_diff_holds_a_bounded_number_of_changes_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(baseline, "MARKDOWN_PER_CLASS", 3)
    monkeypatch.setattr(baseline, "RERUN_CHUNK", 7)  # the triage reads the changes back in several chunks
    cases = _cases()
    crash = Outcome(crash="signal 11 (SIGSEGV)")
    answered = [port_outcome(c) for c in cases]
    diff = Diff(load(_saved(tmp_path, cases, answered), SELECTION))
    for i, case in enumerate(cases):
        diff.record("layer_norm", "registry", i, case, crash)  # every case changed
    assert diff.pending == len(cases)
    # nothing of a case is held until the triage: no container of the diff grows with the cases
    assert _largest(diff) < len(cases) // 2, {k: _sized(v) for k, v in vars(diff).items()}
    diff.judge()
    assert diff.total == len(cases) and sum(diff.counts.values()) == len(cases)
    assert all(len(kept) <= 3 for kept in diff.kept.values()) and sum(map(len, diff.kept.values())) < len(cases)
    assert _largest(diff) < len(cases) // 2
    out = tmp_path / "r"
    write_diff(diff, out, OLD, SELECTION)
    with gzip.open(out / CASES_FILE, "rt") as fh:
        lines = [json.loads(line) for line in fh]
    assert sorted(ln["id"] for ln in lines) == sorted(c.case_id for c in cases)  # every change, read back from disk
    assert [c.case.case_id for c in diff.ordered()] == [ln["id"] for ln in lines]
    assert json.loads((out / "baseline.json").read_text())["cases_total"] == len(cases)


def test_a_stored_baseline_is_on_disk_and_each_row_is_taken_once(tmp_path: Path) -> None:
    cases = _cases()
    stored = load(_saved(tmp_path, cases, [port_outcome(c) for c in cases]), SELECTION)
    assert len(stored) == len(cases) and max(_sized(v) for v in vars(stored).values()) < len(cases)
    diff = Diff(stored)
    for i, case in enumerate(cases[:-3]):
        diff.record("layer_norm", "registry", i, case, port_outcome(case))
    assert diff.unchanged == len(cases) - 3
    assert diff.missing() == {"layer_norm@registry: in the baseline, not in this run": 3}
    again = Diff(stored)  # a new diff on the same baseline starts with every row unseen
    assert again.missing() == {"layer_norm@registry: in the baseline, not in this run": len(cases)}


def test_one_routes_coverage_is_counted_not_kept_per_case() -> None:
    n = 10_000
    cov = RuleCoverage("r", n, 4, ["registry"])
    verdicts = ["match", "both-raise-same", "not-run", LACKS, "unreachable"]
    for i in range(n):
        verdict = verdicts[i % 5]
        cov.record(i, "registry", Outcome(not_run="worker timed out"), verdict, "3.0.0 lacks it (x): why")
    cov.record(3, "registry", Outcome(not_run="worker timed out"), "match")  # a case tallied again: not counted
    assert cov.flags is None and not cov.why and len(cov.other_counts) == 2 and len(cov.lacks_counts) == 1
    assert (cov.compared, cov.lacking, cov.uncompared) == (2 * n // 5, n // 5, 2 * n // 5)
    assert cov.reasons() == {"registry: not run: worker timed out": n // 5, "registry: unreachable: None": n // 5}
    assert cov.lacking_reasons() == {"registry: 3.0.0 lacks it (x)": n // 5}
    short = RuleCoverage("r", 10, 4, ["registry"])
    short.record(0, "registry", Outcome(not_run="x"), "match")
    assert short.reasons("not run: interrupted by SIGTERM") == {"not run: interrupted by SIGTERM": 9}
    two = RuleCoverage("r", 3, 4, ["compiled", "pir"])  # two routes: joined per case
    two.record(0, "compiled", Outcome(not_run="x"), "not-run")
    two.record(0, "pir", Outcome(not_run="x"), "match")
    assert two.flags is not None and two.compared == 1 and two.uncompared == 2
