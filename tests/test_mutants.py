"""tools/mutants.py, the mutation self-test, in short form (the full run: ``python tools/mutants.py``).

Every mutant's old text still occurs exactly once (a mutant cannot rot silently), the table covers
every rule and direction and every family's rules, bad flags are one line and exit 2, a stale
mutant selected (its old text gone, twice, its file gone, in a copy of the tree) is refused the
same way before any work, and three mutants are judged for real: a comparator mutant killed by the
comparator's tests, a rule mutant killed by a small sampled parity run against native Paddle, and
a rotten mutant that is *not judged* rather than killed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from paddle_spmd_port.grid import GRIDS
from paddle_spmd_port.ops import FAMILIES, family_part
from paddle_spmd_port.ops.kit.mutants import MutantSet
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
    # every family's rules are mutated, named where the family keeps them (not the rules/ re-export face)
    assert {m.file for m in rule_mutants} >= {"notation.py", *(M.family_file(f) for f in FAMILIES)}
    # each family's own mutants are judged by its rules (or tests), and the tool names no op
    for family in FAMILIES:
        part = family_part(family, MutantSet)
        assert part is not None and all(set(m.rules) & set(FAMILIES[family].keys) or m.tests for m in part.mutants)
    names = "|".join(sorted(FAMILIES, key=len, reverse=True))
    assert not re.findall(rf"\b({names})\b", TOOL.read_text())
    assert not [m.name for m in M.MUTANTS if m.file.startswith(("rules/", "oracle/kernels"))]
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
    rotten = M.Mutant("rotten", M.family_file("layer_norm"), "text that is not in the file", "x", "rotten",
                      rules=("layer_norm",))
    verdict, _ = _judge(rotten, snap, tmp_path)
    assert verdict.status == "not judged" and "occurs 0 times" in verdict.how


@pytest.fixture()
def moved(tmp_path):
    """A copy of the repository (package + tool) where the code moved under two mutants: one's old
    text is gone, the other's occurs twice; a third mutant's file is not there at all."""
    root = M.snapshot(tmp_path / "repo")
    (root / "tools").mkdir()
    (root / "tools" / "mutants.py").write_text(TOOL.read_text())
    by = M.MUTANTS_BY_NAME
    ln = root / M.PKG / M.family_file("layer_norm")
    text = ln.read_text()
    gone, twice = by["ln-rev-partial-cleared"], by["ln-grad-x-grad-from-x"]
    assert text.count(gone.old) == 1 and text.count(twice.old) == 1
    text = text.replace(gone.old, gone.old.replace("keep = True", "keep = bool(1)"))
    ln.write_text(text + "\n#" + twice.old + "\n")
    (root / M.PKG / M.family_file("fast_ln")).unlink()
    return root


def _moved_tool(root: Path, *args: str) -> subprocess.CompletedProcess:
    tmp = root / "tmp"
    tmp.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(root), "TMPDIR": str(tmp)}
    cmd = [sys.executable, str(root / "tools" / "mutants.py"), *args]
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # not refused: SIGTERM, so the tool ends the runs it started
        proc.terminate()
        out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@pytest.mark.parametrize("args, named, why", [
    pytest.param((), "ln-rev-partial-cleared", "occurs 0 times", id="full-run"),
    pytest.param(("--only", "ln-grad-x-grad-from-x", "--report-dir", "out"), "ln-grad-x-grad-from-x",
                 "occurs 2 times", id="twice"),
    pytest.param(("--only", "fast-ln-norms-two-axes", "--list"), "fast-ln-norms-two-axes", "no file", id="no-file"),
    pytest.param(("--only", "compare-ignore-message,ln-rev-partial-cleared", "--shard", "1/2"),
                 "ln-rev-partial-cleared", "occurs 0 times", id="stale-in-another-part"),
])
def test_a_stale_mutant_is_refused_before_any_work(moved, args, named, why):
    done = _moved_tool(moved, *args)
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 2, done
    assert len(lines) == 1 and f"mutant {named}: " in lines[0] and why in lines[0], done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert not (moved / "out").exists() and not any((moved / "tmp").iterdir())  # nothing written
    if not args:  # the full run names how many more are stale
        assert "(and " in lines[0] and "ln-grad-x-grad-from-x" in lines[0], lines[0]


def test_only_the_stale_mutants_selected_are_refused(moved):
    done = _moved_tool(moved, "--only", "compare-ignore-message,ln-rev-merge-order", "--list")
    assert done.returncode == 0, done.stderr
    assert "2 mutants" in done.stdout


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


def test_a_part_without_mutants_judges_nothing_and_the_merge_still_adds_up(tmp_path, capsys):
    """More parts than mutants: part 2 of 2 of one mutant holds none. It judges nothing and exits 3
    (it used to pass on an empty table), and its --json joins the merge of every part."""
    one = [next(m.name for m in M.MUTANTS if not m.equivalent)]
    empty = str(tmp_path / "parts" / "part2.json")  # (a directory not made yet: made, as the check allowed it)
    assert M.main(["--only", one[0], "--sample", "200", "--shard", "2/2", "--json", empty]) == 3
    assert "part 2 of 2 holds none of the 1 mutants selected: nothing judged" in capsys.readouterr().out
    assert json.loads(Path(empty).read_text())["rows"] == []
    first = _part(tmp_path, 1, 2, {}, one)
    assert M.main(["--merge", empty, first]) == 0
    assert "kill rate 1/1 = 100%" in capsys.readouterr().out
    assert M.main(["--merge", empty]) == 3  # the empty part alone: its mutant was not judged


def test_merge_refuses_parts_of_other_runs(tmp_path, names, capsys):
    parts = [_part(tmp_path, k, 3, {}, names) for k in (1, 2, 3)]
    other = _part(tmp_path, 2, 3, {}, names, sample=100)
    for bad, why in (([parts[0], parts[1], parts[1], parts[2]], "given twice"),
                     ([parts[0], other, parts[2]], "another run"),
                     ([parts[0], str(tmp_path / "nowhere.json")], "not the --json file")):
        assert M.main(["--merge", *bad]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and why in err, err
    # a part of the right header and the wrong body (was exit 4: KeyError 'rows', TypeError)
    for body in ({}, {"rows": 5}, {"rows": [{"name": "x"}]}):
        data = json.loads(Path(parts[0]).read_text())
        data.pop("rows")
        cut = tmp_path / "cut.json"
        cut.write_text(json.dumps({**data, **body}))
        assert M.main(["--merge", str(cut)]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "not the --json file" in err, err
