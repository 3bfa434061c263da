"""Flat memory: what a parity run keeps per case does not grow with the number of cases where it need
not. A baseline diff keeps its rows and changes on disk (in memory: counts and the first few changes
of each class); a rule compared through one route, and a merged report, count their coverage instead
of keeping flags and reasons per case; a random run's rounds each start with the package's memos
empty, so none fills up round after round, and each holds the same share of every rule whatever N;
no round leaves a Paddle worker behind, and a report is written as it is encoded, never joined whole.
Memory figures: docs/measurements/2026-12-07-flat-memory.md, docs/measurements/2026-12-07-flat-memory-run.md,
docs/measurements/2026-12-07-flat-memory-all-rules.md and docs/measurements/2026-12-07-rounds-apart.md
(each round in a forked copy: tests/test_rounds_apart.py)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
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


# --------------------------------------------------------------------------- a long run's memos
def _tables() -> dict[str, int]:
    """The size of every container the package holds at module level (its modules' dicts, sets and
    lists, and their functools caches), by name: wherever a run could keep something from round to round."""
    import sys

    sizes: dict[str, int] = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("paddle_spmd_port") or module is None:
            continue
        for attr, value in list(vars(module).items()):
            if isinstance(value, (dict, set, list)) and not attr.startswith("__"):
                sizes[f"{name}.{attr}"] = len(value)
            elif callable(getattr(value, "cache_info", None)) and getattr(value, "__module__", None) == name:
                sizes[f"{name}.{attr}()"] = value.cache_info().currsize
    return sizes


def _rounds_of_a_random_run(tmp_path: Path,
                            monkeypatch: pytest.MonkeyPatch) -> tuple[int, list[dict[str, int]], list[int]]:
    """A random run of 3 rounds (one rule, 2 blocks a round) whose native side is the port
    itself, so the port, the comparison and the report fill the package's tables as a real run does.
    Returns its exit code, the size of every table when each round after the first starts drawing
    (the last round's cases dropped), and how many entries the registered memos held then."""
    from paddle_spmd_port import types
    from paddle_spmd_port.parity import cli

    at_start: list[dict[str, int]] = []
    memos_held: list[int] = []
    draw_round = cli._Sweep._draw_round

    def drawing(sweep: cli._Sweep, batch: list | None) -> None:
        if sweep.by_rule == {} and hasattr(sweep, "report"):  # a round after the first (open() drew the first)
            at_start.append(_tables())
            memos_held.append(sum(len(t) for t in types.MEMOS))
        draw_round(sweep, batch)

    def native(backend: str, cases: list, args: object, report: object) -> list[Outcome]:
        return [port_outcome(c) for c in cases]

    monkeypatch.setattr(cli._Sweep, "_draw_round", drawing)
    monkeypatch.setattr(cli, "run_native_group", native)
    monkeypatch.setattr(cli, "BACKGROUND_BACKEND", "none")  # every group in this thread
    monkeypatch.setattr(cli, "BACKGROUND_FALLBACK", "none")
    monkeypatch.setattr(cli, "CASES_PER_ROUND", 2000)  # 3 rounds of 2 blocks
    monkeypatch.setattr(cli, "ROUNDS_APART", False)  # (watched from this process: see cli.ROUNDS_APART)
    types.drop_memos()  # (what an earlier run in this process left)
    code = cli._main(["--rules", "batch_norm", "--random", "6000", "--seed", "3", "--quiet",
                      "--report-dir", str(tmp_path / "r")])
    return code, at_start, memos_held


def _grown(at_start: list[dict[str, int]]) -> dict[str, tuple[int, int]]:
    """The tables holding more when the third round starts than when the second did."""
    second, third = at_start
    return {k: (second.get(k, 0), n) for k, n in third.items() if n > second.get(k, 0)}


def test_each_round_of_a_random_run_starts_with_the_memos_empty(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Between rounds the run drops its memos: every registered table is empty when a round after
    the first starts, and nothing the package holds at module level is larger when the third round
    starts than when the second did (a table filling round after round up to its limit would make
    the run's peak memory grow with its length)."""
    code, at_start, memos_held = _rounds_of_a_random_run(tmp_path, monkeypatch)
    assert code == 0 and len(at_start) == 2
    assert memos_held == [0, 0]
    # what outlives a round is keyed by what a run has few of (the rule, the mesh shapes, the ranks:
    # grid._GRID_MESHES, types._DEFAULT_LAYOUTS, grid.valid_mappings): nearly all drawn in round 1, and
    # valid_mappings, keyed by (rank, mesh ndim), may still meet a pair later (this seed does in round 3)
    # but never holds more than those pairs (ranks 0-8, meshes of 1-3 dims here)
    grown = _grown(at_start)
    few = "paddle_spmd_port.ops.kit.grid.valid_mappings()"
    assert grown.get(few, (0, 0))[1] <= 9 * 3, grown
    assert {k: v for k, v in grown.items() if k != few} == {}


def test_a_run_that_keeps_its_memos_between_rounds_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from paddle_spmd_port.parity import cli

    monkeypatch.setattr(cli, "drop_memos", lambda: None)  # the rounds never drop them
    code, at_start, memos_held = _rounds_of_a_random_run(tmp_path, monkeypatch)
    assert code == 0 and all(memos_held)
    grown = _grown(at_start)
    assert {"paddle_spmd_port.types._INTERNED", "paddle_spmd_port.case._SPEC_STRS",
            "paddle_spmd_port.parity.random_cases._SPECS"} <= set(grown), grown


def test_a_memo_left_unregistered_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from paddle_spmd_port import case, types

    types.drop_memos()  # (what an earlier run in this process left)
    monkeypatch.setattr(types, "MEMOS", [t for t in types.MEMOS if t is not case._SPEC_STRS])
    code, at_start, memos_held = _rounds_of_a_random_run(tmp_path, monkeypatch)
    assert code == 0 and memos_held == [0, 0]
    assert set(_grown(at_start)) == {"paddle_spmd_port.case._SPEC_STRS"}


def _map_of_a_random_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, per_round: int) -> tuple[list[int], dict]:
    """A random run (the port standing in for Paddle) in rounds of ``per_round`` cases: the raw
    verdict-map keys its groups hold when each round after the first starts, and its parity.json's maps."""
    import json

    from paddle_spmd_port.parity import cli

    held: list[int] = []
    draw_round = cli._Sweep._draw_round

    def drawing(sweep: cli._Sweep, batch: list | None) -> None:
        if sweep.by_rule == {} and hasattr(sweep, "report"):
            held.append(sum(len(t.cells_map) for t in sweep.report.tallies.values()))
        draw_round(sweep, batch)

    monkeypatch.setattr(cli._Sweep, "_draw_round", drawing)
    monkeypatch.setattr(cli, "run_native_group", lambda backend, cases, args, report: [port_outcome(c) for c in cases])
    monkeypatch.setattr(cli, "BACKGROUND_BACKEND", "none")
    monkeypatch.setattr(cli, "BACKGROUND_FALLBACK", "none")
    monkeypatch.setattr(cli, "CASES_PER_ROUND", per_round)
    monkeypatch.setattr(cli, "ROUNDS_APART", False)  # (watched from this process: see cli.ROUNDS_APART)
    out = tmp_path / f"r{per_round}"
    assert cli._main(["--rules", "p_norm,layer_norm", "--random", "3000", "--seed", "5", "--quiet",
                      "--report-dir", str(out)]) == 0
    data = json.loads((out / "parity.json").read_text())
    return held, {k: sorted((mesh, placement, sorted(counts.items())) for mesh, placement, counts in g["map"])
                  for k, g in data["rules"].items()}


@pytest.mark.parametrize("fold", ["real", "mutant"])
def test_the_verdict_map_is_folded_at_each_round_and_stays_the_same_map(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       fold: str) -> None:
    """The verdict map's raw keys (each case's mesh and first input's mapping: as many as the draws
    make, so they grow with N) are folded into their labels (bounded by the meshes and placements
    there are) when each round after the first starts, and the report's map is the one-round run's.
    Mutant: a fold that keeps the raw keys leaves them held into the next rounds."""
    from paddle_spmd_port.parity.report import GroupTally

    if fold == "mutant":
        monkeypatch.setattr(GroupTally, "fold_map", lambda self: None)
    held, rounds_map = _map_of_a_random_run(tmp_path, monkeypatch, 1000)
    _, one_map = _map_of_a_random_run(tmp_path, monkeypatch, 100_000)
    assert len(held) >= 2 and rounds_map == one_map
    assert (held == [0] * len(held)) == (fold == "real"), held


def test_drop_memos_empties_every_registered_table_and_answers_stay_equal() -> None:
    from paddle_spmd_port import types
    from paddle_spmd_port.parity.random_cases import random_cases

    cases = random_cases("layer_norm", 300, seed=5)
    before = [port_outcome(c) for c in cases]
    assert sum(len(t) for t in types.MEMOS) > 0
    types.drop_memos()
    assert all(len(t) == 0 for t in types.MEMOS)
    assert [port_outcome(c) for c in cases] == before  # values, computed again alike


# --------------------------------------------------------------------------- a random run's rounds
#: A heavy rule, a light one and one between (9, 1 and 3 inputs; 37, 7 and 19 cells a case).
MIX = ["batch_norm_grad", "p_norm", "layer_norm"]
PER_ROUND = 3000  # 3 blocks a round


def _held_per_round(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rules: list[str], n: int,
                    draw_round: Callable[..., None]) -> list[dict[str, int]]:
    """The cases of each rule a random run holds in each of its rounds, read from the run itself (what
    it drew for the round: ``draw_round``, the sweep's own). Its native side answers nothing (every case
    uncompared, exit 3): only the rounds are looked at, so neither Paddle nor the port's answers are needed."""
    from paddle_spmd_port.parity import cli

    held: list[dict[str, int]] = []

    def drawing(sweep: cli._Sweep, batch: list | None) -> None:
        draw_round(sweep, batch)
        held.append({rule: len(cases) for rule, cases in sweep.by_rule.items() if cases})

    monkeypatch.setattr(cli._Sweep, "_draw_round", drawing)
    monkeypatch.setattr(cli, "run_native_group", lambda backend, cases, args, report: [None] * len(cases))
    monkeypatch.setattr(cli, "BACKGROUND_BACKEND", "none")  # every group in this thread
    monkeypatch.setattr(cli, "BACKGROUND_FALLBACK", "none")
    monkeypatch.setattr(cli, "CASES_PER_ROUND", PER_ROUND)
    monkeypatch.setattr(cli, "ROUNDS_APART", False)  # (watched from this process: see cli.ROUNDS_APART)
    code = cli._main(["--rules", ",".join(rules), "--random", str(n), "--seed", "3", "--quiet", "--replace-report",
                      "--report-dir", str(tmp_path / f"r-{'-'.join(rules)}-{n}")])
    assert code == 3
    return held


def _round_problems(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What makes a random run's rounds depend on N or on the rules selected: a round over PER_ROUND
    cases, or one but the last under PER_ROUND - BLOCK (so how much a round holds follows the rules'
    weight in cells, or N); a round but the last without a block of every rule, or with two blocks of
    one rule more than of another (so which rules share it follows N); the rounds of a run of N cases
    per rule, but its last, not the first rounds of a longer run of the same rules."""
    from paddle_spmd_port.parity import cli
    from paddle_spmd_port.parity.random_cases import BLOCK

    problems: list[str] = []
    draw_round = cli._Sweep._draw_round
    runs = {(tuple(rules), n): _held_per_round(tmp_path, monkeypatch, list(rules), n, draw_round)
            for rules, n in ((MIX, 2000), (MIX, 5000), (["p_norm"], 5000), (["batch_norm_grad"], 5000))}
    for (rules, n), held in runs.items():
        where = f"--rules {','.join(rules)} --random {n}"
        for k, counts in enumerate(held):
            total = sum(counts.values())
            if total > PER_ROUND or (k < len(held) - 1 and total < PER_ROUND - BLOCK):
                problems.append(f"{where}: round {k + 1} holds {total} cases ({counts})")
            if k < len(held) - 1 and (set(counts) != set(rules) or max(counts.values()) - min(counts.values()) > BLOCK):
                problems.append(f"{where}: round {k + 1} holds {counts}, not a like share of every rule")
    shorter, longer = runs[(tuple(MIX), 2000)], runs[(tuple(MIX), 5000)]
    if shorter[:-1] != longer[:len(shorter) - 1]:
        problems.append(f"the first rounds of N=2000 and N=5000 differ: {shorter} against {longer}")
    return problems


def test_a_random_runs_rounds_are_the_same_whatever_n_and_whatever_the_rules(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Each round holds PER_ROUND cases (the last one the rest), a block of every rule selected: the
    heaviest round is the same whatever N, and no heavier for a heavy rule's cases than for a light
    one's but by what their cases weigh (docs/measurements/2026-12-07-flat-memory-all-rules.md)."""
    assert _round_problems(tmp_path, monkeypatch) == []


def _rule_after_rule(units: list, cases_per_round: int) -> list[list]:
    """Rounds that take every block of one rule before the next rule's."""
    from paddle_spmd_port.parity.random_cases import pack

    return pack(units, cases_per_round)


def _by_cells(units: list, cases_per_round: int) -> list[list]:
    """Rounds bounded by cells, as many as PER_ROUND cases of layer_norm's 19 cells hold."""
    from paddle_spmd_port.ops import rule_spec
    from paddle_spmd_port.parity.random_cases import pack

    return pack(sorted(units, key=lambda u: u[1]), cases_per_round * 19,
                weight=lambda u: u[2] * rule_spec(u[0]).n_cells)


def _three_rounds(units: list, cases_per_round: int) -> list[list]:
    """A run cut into 3 rounds whatever its size."""
    ordered = sorted(units, key=lambda u: u[1])
    step = -(-len(ordered) // 3)
    return [ordered[i:i + step] for i in range(0, len(ordered), step)]


@pytest.mark.parametrize("mutant", [_rule_after_rule, _by_cells, _three_rounds])
def test_rounds_that_follow_n_or_the_rules_are_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      mutant: object) -> None:
    from paddle_spmd_port.parity import cli

    monkeypatch.setattr(cli, "rounds", mutant)
    assert _round_problems(tmp_path, monkeypatch) != []


def _native_mirror(backend: str, cases: list, args: object, report: object) -> list[Outcome]:
    """Stands in for Paddle: the port's answers under the mirror policy, which answer some inputs the
    strict port refuses, so the report has rows (port-rejects-invalid) besides its matches."""
    return [port_outcome(c, "paddle", "mirror") for c in cases]


def _report_of(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, rounds: object,
               native: Callable[..., list[Outcome]] = _native_mirror) -> Path:
    from paddle_spmd_port.parity import cli

    monkeypatch.setattr(cli, "rounds", rounds)
    monkeypatch.setattr(cli, "run_native_group", native)
    monkeypatch.setattr(cli, "BACKGROUND_BACKEND", "none")
    monkeypatch.setattr(cli, "BACKGROUND_FALLBACK", "none")
    monkeypatch.setattr(cli, "CASES_PER_ROUND", 2000)
    monkeypatch.setattr(cli, "ROUNDS_APART", False)  # (watched from this process: see cli.ROUNDS_APART)
    code = cli._main(["--rules", ",".join(MIX), "--random", "2300", "--seed", "6", "--quiet",
                      "--report-dir", str(tmp_path / name)])
    assert code == 0
    return tmp_path / name


def _same_cases(a: Path, b: Path) -> int:
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    return subprocess.run([sys.executable, str(root / "tools" / "same_cases.py"), str(a), str(b), "--quiet"],
                          capture_output=True, text=True, timeout=120, cwd=root).returncode


def _coverage(report: Path) -> object:
    return json.loads((report / "parity.json").read_text())["coverage"]


def test_the_rounds_change_no_per_case_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same seed's run in rounds taken rule after rule and in rounds taken block by block across
    the rules: the same per-case rows and group counts (tools/same_cases.py) and the same coverage.
    A native side whose answers depend on the round a case runs in is told apart."""
    from paddle_spmd_port.parity.random_cases import rounds

    before = _report_of(tmp_path, monkeypatch, "before", _rule_after_rule)
    after = _report_of(tmp_path, monkeypatch, "after", rounds)
    with gzip.open(after / "parity-cases.jsonl.gz", "rt") as fh:
        assert sum(1 for _ in fh) > 100  # rows to compare (the mirror's answers the strict port refuses)
    assert _same_cases(before, after) == 0
    assert _coverage(before) == _coverage(after)

    calls: list[int] = []

    def first_round_only(backend: str, cases: list, args: object, report: object) -> list[Outcome]:
        calls.append(len(cases))  # a native side whose answer depends on the round a case runs in
        return _native_mirror(backend, cases, args, report) if len(calls) <= 2 else [port_outcome(c) for c in cases]

    assert _same_cases(before, _report_of(tmp_path, monkeypatch, "round-dependent", rounds, first_round_only)) == 1


def test_the_rerun_worker_started_early_is_used_however_many_slices_the_rerun_has(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """run_native starts the re-run's first worker beside the sweep; a re-run of enough cases for two
    slices must still hand it to its first slice (every split's first slice starts at case 0, the
    command it was started with). Left unused, it sits with Paddle imported until the run ends: one
    more idle worker each round of a long random run. The pool's own _run_once and plan_slices run;
    the workers are stood in for (no process is started, none killed)."""
    from paddle_spmd_port.native import pool

    started: list[tuple[object, int]] = []
    killed: list[object] = []
    taken: list[tuple[int, int, object]] = []  # (layout, first case, the early worker a slice was given)

    class _Proc:
        pid = -1

        def wait(self) -> int:
            return 0

    def start_worker(backend: str, base: int, start: int, layout: int) -> tuple[object, object]:
        proc = _Proc()
        started.append((proc, layout))
        return proc, type("Log", (), {"close": lambda self: None})()

    def run(self: pool._Slice) -> None:  # a slice answers its cases, taking the early worker as _Slice._run does
        taken.append((self.layout, self.start_at, self.early[0] if self.early is not None else None))
        self.early = None
        for i in range(self.start_at, self.stop_at):
            self.outcomes[i] = Outcome(crash="signal 11 (SIGSEGV)")

    monkeypatch.setattr(pool, "start_worker", start_worker)
    monkeypatch.setattr(pool, "_kill_group", killed.append)
    monkeypatch.setattr(pool, "garbage_prone", lambda case: True)
    monkeypatch.setattr(pool._Slice, "_run", run)
    cases = [object()] * (2 * pool.RERUN_PER_WORKER)  # (every one garbage-prone: the predicates see no field)
    outcomes, _ = pool.run_native(cases, backend="registry", workers=2)  # type: ignore[arg-type]
    assert len(outcomes) == len(cases) and all(o.crash for o in outcomes)
    [(early, layout)] = started  # the only worker the pool started itself (the slices' own are stood in for)
    assert layout == 1
    rerun = sorted((start, given) for lay, start, given in taken if lay == 1)
    assert len(rerun) == 2, taken  # the re-run in two slices
    assert rerun[0] == (0, early) and rerun[1][1] is None  # the early worker is the first slice's, used
    assert early not in killed


def test_a_json_report_is_written_as_it_is_encoded(tmp_path: Path) -> None:
    """write_json's file is json.dumps(data, indent=1), and writing it holds a small part of its text
    at once: a long random run writes its partial report (megabytes of verdict map) after every group,
    while the round's cases are held, so a whole text joined at once (and its millions of pieces before
    the join) would sit on top of the round's peak, growing with the map."""
    import tracemalloc

    from paddle_spmd_port.reporting import write_json

    data = {"map": [[f"{i % 7}x{i % 5}", f"[S({i % 3}),R,P]", {"match": i, "mismatch": i % 11}] for i in range(10_000)]}
    text = json.dumps(data, indent=1)
    tracemalloc.start()
    try:
        write_json(tmp_path / "r.json", data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (tmp_path / "r.json").read_text() == text
    assert peak < len(text) // 3, (peak, len(text))  # (joined at once: ten times the text)


# A fresh interpreter that frees 32 MiB of 512 KiB blocks under small chunks that stay (as a round's
# lists and pipe buffers sit under what outlives it), after one larger block was freed first (as the
# round before did: glibc then raises its mmap threshold past 512 KiB). It prints its RSS in MiB
# before the free, after it, and after runctl.memory.give_back().
_FREE_BLOCKS = """
import sys
from paddle_spmd_port.runctl import memory
def rss():
    return int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) // 1024
held = memory.hold_thresholds() if sys.argv[1] == "hold" else None
big = bytearray(4 << 20)
del big
blocks = [bytearray(512 << 10) for _ in range(64)]
pins = [bytearray(600) for _ in range(1000)]
before = rss()
del blocks
after = rss()
print(held, before, after, memory.give_back(), rss())
"""


def _freed_blocks(how: str) -> tuple[int, int, int]:
    import subprocess
    import sys

    from paddle_spmd_port.runctl import memory

    if memory._LIBC is None:
        pytest.skip("not glibc: runctl.memory does nothing here")
    out = subprocess.run([sys.executable, "-c", _FREE_BLOCKS, how], capture_output=True, text=True, timeout=60,
                         check=True).stdout.split()
    return int(out[1]), int(out[2]), int(out[4])


def test_freed_blocks_go_back_to_the_system_with_the_thresholds_held_or_once_given_back() -> None:
    """runctl.memory: with glibc's thresholds held, the 512 KiB blocks were mmapped and their 32 MiB leave
    the process as they are freed; without, they sit in the heap under the small chunks and stay
    resident until give_back() returns them. Both halves fail if the function they test does nothing."""
    before, after, given = _freed_blocks("plain")
    assert before - after < 8 and before - given >= 24, (before, after, given)
    before, after, given = _freed_blocks("hold")
    assert before - after >= 24, (before, after, given)


def test_a_random_run_gives_memory_back_after_each_group_and_before_each_round(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep holds the thresholds before its first round, gives memory back once each group's
    outcomes are tallied and its partial report written, and again before each later round draws
    (its last round's cases dropped). A sweep that skips either (or never holds the thresholds) is caught."""
    from paddle_spmd_port.parity import cli

    events: list[str] = []
    draw_round, run_group = cli._Sweep._draw_round, cli._Sweep._run_group

    def drawing(sweep: cli._Sweep, batch: list | None) -> None:
        events.append("draw")
        draw_round(sweep, batch)

    def grouping(sweep: cli._Sweep, backend: str, rules: list[str], last_round: bool) -> None:
        events.append(f"group {backend}")
        run_group(sweep, backend, rules, last_round)
        events.append(f"group {backend} done")

    monkeypatch.setattr(cli, "hold_thresholds", lambda: events.append("hold") or True)
    monkeypatch.setattr(cli, "give_back", lambda: events.append("give back") or True)
    monkeypatch.setattr(cli._Sweep, "_draw_round", drawing)
    monkeypatch.setattr(cli._Sweep, "_run_group", grouping)
    monkeypatch.setattr(cli, "run_native_group", lambda backend, cases, args, report: [port_outcome(c) for c in cases])
    monkeypatch.setattr(cli, "BACKGROUND_BACKEND", "none")
    monkeypatch.setattr(cli, "BACKGROUND_FALLBACK", "none")
    monkeypatch.setattr(cli, "CASES_PER_ROUND", 2000)
    monkeypatch.setattr(cli, "ROUNDS_APART", False)  # (watched from this process: see cli.ROUNDS_APART)
    # batch_norm's primary route is the compiled caller, layer_norm's the registry: two groups a round
    code = cli._main(["--rules", "batch_norm,layer_norm", "--random", "2000", "--seed", "3", "--quiet",
                      "--report-dir", str(tmp_path / "r")])
    assert code == 0
    group = ["group registry", "give back", "group registry done", "group compiled", "give back",
             "group compiled done"]
    assert events == ["hold", "draw", *group, "give back", "draw", *group], events
