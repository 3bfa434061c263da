"""tools/mutants.py, the mutation self-test, in short form (the full run: ``python tools/mutants.py``).

Every mutant's old text still occurs exactly once (a mutant cannot rot silently), the table covers
every rule and direction, bad flags are one line and exit 2, and three mutants are judged for real:
a comparator mutant killed by the comparator's tests, a rule mutant killed by a small sampled
parity run against native Paddle, and a rotten mutant that is *not judged* rather than killed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from paddle_spmd_port.parity.grid import GRIDS
from tests.helpers import load_tool, skip_if_compiled_unreachable

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "mutants.py"


def _load():
    return load_tool("mutants")


M = _load()


def test_table_is_sound():
    assert M.check_table() == []
    rule_mutants = [m for m in M.MUTANTS if m.rules]
    assert len(rule_mutants) >= 25
    assert {r for m in rule_mutants for r in m.rules} == set(GRIDS)  # every rule and direction
    assert {m.file for m in rule_mutants} >= {"notation.py", "rules/layer_norm.py", "rules/batch_norm.py",
                                             "rules/sync_batch_norm.py"}
    assert all(m.equivalent.strip() == m.equivalent and len(m.equivalent) > 40 for m in M.MUTANTS if m.equivalent)
    assert len([m for m in M.MUTANTS if m.tests]) >= 8


@pytest.mark.parametrize("mutant", M.MUTANTS, ids=[m.name for m in M.MUTANTS])
def test_old_text_occurs_exactly_once(mutant):
    assert M.occurrences(mutant) == 1, f"{mutant.name}: update its old text to the code in {mutant.file}"


def _tool(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("args, names", [
    pytest.param(("--sample", "0"), "--sample", id="sample-zero"),
    pytest.param(("--sample", "many"), "--sample", id="sample-not-a-number"),
    pytest.param(("--timeout", "-1"), "--timeout", id="timeout-negative"),
    pytest.param(("--only", "no-such-mutant"), "--only", id="only-unknown-mutant"),
    pytest.param(("--only", ","), "--only", id="only-empty-list"),
    pytest.param(("--bogus",), "--bogus", id="unknown-flag"),
    pytest.param(("--report-dir", "a-file"), "--report-dir", id="report-dir-is-a-file"),
])
def test_bad_flags_are_one_line_exit_2(args, names, tmp_path):
    (tmp_path / "a-file").write_text("not a directory\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    done = _tool(*args, cwd=tmp_path)
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 2, done
    assert len(lines) == 1 and names in lines[0] and "Traceback" not in done.stderr, done.stderr
    assert done.stdout == "" and sorted(p.name for p in tmp_path.iterdir()) == before


def test_list_names_every_mutant(tmp_path):
    done = _tool("--list", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert all(m.name in done.stdout for m in M.MUTANTS)
    assert f"{len(M.MUTANTS)} mutants" in done.stdout


@pytest.fixture(scope="module")
def snap(tmp_path_factory):
    return M.snapshot(tmp_path_factory.mktemp("mutants") / "snapshot")


def _judge(mutant, snap, tmp_path):
    if isinstance(mutant, str):
        mutant = {m.name: m for m in M.MUTANTS}[mutant]
    work = tmp_path / mutant.name
    work.mkdir()
    return M.judge(mutant, snap, work, sample=200, seed=0, timeout=300), work


def test_compare_mutant_is_killed_by_the_comparator_tests(snap, tmp_path):
    verdict, work = _judge("compare-ignore-message", snap, tmp_path)
    assert verdict.status == "killed", verdict
    assert "test_same_family_different_message_is_a_mismatch" in verdict.how
    # the test run imported the mutated copy, not the repository's package
    files = {f for line in (work / "imports.jsonl").read_text().splitlines() for f in json.loads(line).values() if f}
    assert files and all(str(work / "copy") in f for f in files)


@pytest.mark.native
def test_rule_mutant_is_killed_by_a_sampled_native_run(snap, tmp_path):
    skip_if_compiled_unreachable()  # layer_norm_grad is compared through the compiled caller only
    verdict, _ = _judge("ln-grad-og-partial-kept", snap, tmp_path)
    assert verdict.status == "killed", verdict
    assert "mismatching case" in verdict.how


def test_a_rotten_mutant_is_not_judged_never_killed(snap, tmp_path):
    rotten = M.Mutant("rotten", "rules/layer_norm.py", "text that is not in the file", "x", "rotten",
                      rules=("layer_norm",))
    verdict, _ = _judge(rotten, snap, tmp_path)
    assert verdict.status == "not judged" and "occurs 0 times" in verdict.how


def test_a_run_that_imported_the_original_is_not_judged(tmp_path):
    probe = tmp_path / "imports.jsonl"
    probe.write_text(json.dumps({"paddle_spmd_port": str(ROOT / "paddle_spmd_port" / "__init__.py")}) + "\n")
    assert "outside the copy" in M._import_problem(probe, tmp_path, None)
    assert "no process" in M._import_problem(tmp_path / "missing.jsonl", tmp_path, None)


# --------------------------------------------------------------------------- --shard K/M and --merge
def test_the_parts_split_the_mutants_once():
    for m in (1, 2, 3, 7):
        parts = [M.shard_of(M.MUTANTS, (k, m)) for k in range(1, m + 1)]
        names = [mu.name for part in parts for mu in part]
        assert sorted(names) == sorted(mu.name for mu in M.MUTANTS) and len(names) == len(set(names))
    assert M.shard_of(M.MUTANTS, None) == list(M.MUTANTS)


def _part(tmp_path, k, m, statuses, names, sample=200, tag=""):
    """A part's --json file as the tool writes it, its mutants' verdicts given."""
    mine = [mu.name for mu in M.shard_of([M.MUTANTS_BY_NAME[n] for n in names], (k, m))]
    rows = [{"name": n, "status": statuses.get(n, "killed"), "how": "test", "seconds": 1.0} for n in mine]
    path = tmp_path / f"part{k}-{sample}{tag}.json"
    path.write_text(json.dumps({"tool": "mutants", "shard": [k, m], "config": {"sample": sample, "seed": 0,
                                "mutants": names}, "seconds": 1.0, "rows": rows}))
    return str(path)


@pytest.fixture()
def names():
    return [m.name for m in M.MUTANTS if not m.equivalent][:7]


def test_merge_joins_the_parts_and_fails_closed(tmp_path, names, capsys):
    parts = [_part(tmp_path, k, 3, {}, names) for k in (1, 2, 3)]
    assert M.main(["--merge", parts[2], parts[0], parts[1]]) == 0
    out = capsys.readouterr().out
    assert f"kill rate {len(names)}/{len(names)} = 100%" in out and "merged 3 of 3 parts" in out
    assert M.main(["--merge", parts[0], parts[2]]) == 3  # a part missing: never a pass
    assert "parts 2 of 3 missing" in capsys.readouterr().out
    survivor = _part(tmp_path, 2, 3, {names[1]: "survived"}, names, tag="-survivor")
    assert M.main(["--merge", parts[0], survivor, parts[2]]) == 1  # a finding of one part is the run's
    short = json.loads(Path(parts[1]).read_text())
    short["rows"] = short["rows"][:-1]  # a part that lost a verdict
    Path(parts[1]).write_text(json.dumps(short))
    assert M.main(["--merge", *parts]) == 3


def test_merge_refuses_parts_of_other_runs(tmp_path, names, capsys):
    parts = [_part(tmp_path, k, 3, {}, names) for k in (1, 2, 3)]
    other = _part(tmp_path, 2, 3, {}, names, sample=100)
    for bad, why in (([parts[0], parts[1], parts[1], parts[2]], "given twice"),
                     ([parts[0], other, parts[2]], "another run"),
                     ([parts[0], str(tmp_path / "nowhere.json")], "not the --json file")):
        assert M.main(["--merge", *bad]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and why in err, err
