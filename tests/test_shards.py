"""``--shard K/M`` and ``parity --merge``: a long random run split across machines and joined again.

No Paddle needed: the split (every block of every rule in exactly one part, the same one for the
same M whatever else), the rounds a long run is drawn in, and ``--shard``'s grammar. With Paddle
(``native``): a small random run, unsplit and as 3 parts, merged: the same tallies, coverage and
per-case records; and the planted faults -- a part dropped, a part given twice, a part of another
seed, a part of another selection, a part whose counts were tampered with, an unfinished part --
each refused (exit 2) or failing closed (exit 3), never a pass.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from paddle_spmd_port.ops import RULES
from paddle_spmd_port.parity.random_cases import BLOCK, draw_units, random_cases, rounds, shard_units
from tests.cli_checks import BadInput, assert_usage_error, run_cli


# --------------------------------------------------------------------------- the split
@pytest.mark.parametrize("n", [1, 999, 1000, 2500, 25_000])
@pytest.mark.parametrize("m", [1, 2, 3, 7, 40])
def test_every_block_is_in_exactly_one_part(n, m):
    rules = list(RULES)
    whole = shard_units(rules, n)
    parts = [shard_units(rules, n, (k, m)) for k in range(1, m + 1)]
    joined = [u for part in parts for u in part]
    assert sorted(joined) == sorted(whole) and len(joined) == len(set(joined))
    assert {r: sum(s for rr, _, s in whole if rr == r) for r in rules} == dict.fromkeys(rules, n)
    assert parts == [shard_units(rules, n, (k, m)) for k in range(1, m + 1)]  # the same split again
    counts = [len(part) for part in parts]
    assert max(counts) - min(counts) <= 1  # dealt in turn: as many blocks each, give or take one


def test_a_part_draws_the_cases_the_unsplit_run_draws():
    rules = ["layer_norm", "batch_norm_grad"]
    n = 2 * BLOCK + 300
    whole = {r: random_cases(r, n, 5) for r in rules}
    got: dict[str, dict[str, object]] = {r: {} for r in rules}
    for k in (1, 2):
        for rule, cases in draw_units(shard_units(rules, n, (k, 2)), 5).items():
            for case in cases:
                assert case.case_id not in got[rule]
                got[rule][case.case_id] = case
    for rule in rules:
        assert sorted(got[rule].values(), key=lambda c: int(c.case_id.rsplit("-", 1)[1])) == whole[rule]


@pytest.mark.parametrize("shard", [None, (2, 3)])
def test_rounds_bound_the_cases_held_and_keep_every_unit(shard):
    units = shard_units(list(RULES), 5300, shard)
    batches = rounds(units, 20_000)
    taken = [u for b in batches for u in b]
    assert sorted(taken) == sorted(units) and len(taken) == len(units)
    for rule in RULES:  # each rule's blocks in order: its cases keep their positions
        assert [u for u in taken if u[0] == rule] == [u for u in units if u[0] == rule]
    assert [u[1] for u in taken] == sorted(u[1] for u in units)  # block by block across the rules
    assert all(sum(s for _, _, s in b) <= 20_000 for b in batches)
    assert rounds(units, 1) == [[u] for u in taken]  # at least one unit each


BAD = [
    BadInput(("parity", "--random", "5", "--shard", "0/3"), "--shard"),
    BadInput(("parity", "--random", "5", "--shard", "4/3"), "--shard"),
    BadInput(("parity", "--random", "5", "--shard", "2"), "--shard"),
    BadInput(("parity", "--random", "5", "--shard", "a/b"), "--shard"),
    BadInput(("parity", "--random", "5", "--shard", "1/0"), "--shard"),
    BadInput(("parity", "--sample", "5", "--shard", "1/2"), "--shard"),
    BadInput(("parity", "--merge", "{tmp}/nowhere"), "--merge"),
    BadInput(("parity", "--merge", "{tmp}/part", "--random", "5"), "--merge", {"part/": ""}),
    # a part's parity.json of the wrong shape (were exit 4: AttributeError, KeyError)
    BadInput(("parity", "--merge", "{tmp}/p"), "--merge", {"p/parity.json": '{"selection": 5}'}),
    BadInput(("parity", "--merge", "{tmp}/p1", "{tmp}/p2", "--report-dir", "{tmp}/out"), "--merge",
             {"p1/parity.json": '{"selection": {"slug": "a", "shard": [1, 2]}, "groups": 5}',
              "p2/parity.json": '{"selection": {"slug": "a", "shard": [2, 2]}, "rules": [[[]]]}'}),
]


@pytest.mark.parametrize("row", BAD, ids=lambda r: r.id)
def test_bad_shard_and_merge_arguments_are_one_line_exit_2(row, tmp_path):
    assert_usage_error(row, tmp_path)


def _part(k: int, policy: str | None) -> str:
    selection = {"slug": f"primary_random5-seed0_shard{k}of2", "describe": f"x; part {k} of 2", "shard": [k, 2],
                 **({"policy": policy} if policy else {})}
    return json.dumps({"selection": selection, "paddle": {}, "port_core": "python"})


@pytest.mark.parametrize("first, second, refused", [
    ("mirror", None, True),  # (a part written before the policy was kept is a strict one)
    ("mirror", "strict", True),
    ("strict", None, False),
])
def test_parts_under_different_policies_are_not_merged(tmp_path, first, second, refused):
    """The merged report's repro lines name one policy: parts answered under two are refused (exit 2, one
    line naming the policy); given --policy, a merge is refused too (the parts' policy is the merge's)."""
    from paddle_spmd_port.parity.merge import _read_part, _whole, check_parts

    for k, policy in ((1, first), (2, second)):
        (tmp_path / f"p{k}").mkdir()
        (tmp_path / f"p{k}" / "parity.json").write_text(_part(k, policy))
    parts = [(str(d), _read_part(d)["selection"]["shard"], _whole(_read_part(d)["selection"]))
             for d in (tmp_path / "p1", tmp_path / "p2")]
    if not refused:
        assert check_parts(parts) == (2, [])
        return
    line = assert_usage_error(BadInput(("parity", "--merge", "{tmp}/p1", "{tmp}/p2", "--report-dir", "{tmp}/out"),
                                       "--merge"), tmp_path)
    assert "(policy differ)" in line, line
    line = assert_usage_error(BadInput(("parity", "--merge", "{tmp}/p1", "--policy", first), "--merge"), tmp_path)
    assert "--policy" in line, line


# --------------------------------------------------------------------------- against Paddle
#: A registry rule and a compiled one, two blocks each (the second short): 4 units over 3 parts.
#: One worker per route: a few thousand cases take a worker well under a second, its start (Paddle's import)
#: seconds; the split and the merge do not depend on the worker count (the whole run and the parts alike).
RUN = ["parity", "--rules", "layer_norm,batch_norm", "--random", str(BLOCK + 150), "--seed", "4", "--quiet",
       "--workers", "1"]


def _parity(tmp: Path, *extra: str, timeout: float = 600) -> tuple[int, str]:
    done = run_cli([*RUN, *extra], tmp, timeout=timeout)
    return done.returncode, done.stdout + done.stderr


def _merge(tmp: Path, *dirs: Path, out: str = "merged") -> tuple[int, str]:
    done = run_cli(["parity", "--merge", *map(str, dirs), "--report-dir", str(tmp / out), "--replace-report"], tmp)
    return done.returncode, done.stdout + done.stderr


def _counts(report: Path) -> tuple[dict, dict, dict]:
    data = json.loads((report / "parity.json").read_text())
    fields = ("cases", "cells", "matching_cells", "verdicts", "invalid_native", "refusals", "answered", "state")
    tallies = {k: {f: t[f] for f in fields} for k, t in data["rules"].items()}
    return tallies, data["coverage"], data["selection"]


def _records(report: Path) -> list[str]:
    """The per-case rows whole, sorted. Paddle's answers to invalid input included: such a case runs in a
    child of its own in a fixed memory layout, so what it reads from memory Paddle never set (batch_norm's
    data_format '' read past its end) is the same in the whole run and in its part
    (native/pool.py, docs/measurements/2026-12-07-determinism.md)."""
    with gzip.open(report / "parity-cases.jsonl.gz", "rt") as fh:
        return sorted(json.dumps(json.loads(line), sort_keys=True) for line in fh)


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shards")
    code, out = _parity(tmp, "--report-dir", str(tmp / "whole"))
    assert code == 0, out[-3000:]
    parts = []
    for k in (1, 2, 3):
        code, out = _parity(tmp, "--shard", f"{k}/3", "--report-dir", str(tmp / f"part{k}"))
        assert code == 0, out[-3000:]
        parts.append(tmp / f"part{k}")
    return tmp, parts


@pytest.mark.native
def test_merged_parts_equal_the_unsplit_run(sharded):
    tmp, parts = sharded
    code, out = _merge(tmp, parts[2], parts[0], parts[1])  # in any order
    assert code == 0, out[-3000:]
    assert "PASS: all 2,300 selected cases compared" in out
    whole, merged = _counts(tmp / "whole"), _counts(tmp / "merged")
    assert merged == whole  # tallies, coverage and the selection of the unsplit run
    assert any(t["answered"] for t in whole[0].values())  # the refusals Paddle answered, summed too
    totals = json.loads((tmp / "merged" / "parity.json").read_text())["total_answered"]
    assert totals == json.loads((tmp / "whole" / "parity.json").read_text())["total_answered"] and any(totals.values())
    assert sum(t["cases"] for t in merged[0].values()) == 2 * (BLOCK + 150)
    assert _records(tmp / "merged") == _records(tmp / "whole") and _records(tmp / "whole")
    # each part alone is a part, not the whole: its own selection and fewer cases
    part1 = _counts(parts[0])
    assert part1[2]["shard"] == [1, 3] and part1[2]["slug"].endswith("_shard1of3")
    assert sum(t["cases"] for t in part1[0].values()) < 2 * (BLOCK + 150)


@pytest.mark.native
def test_a_missing_part_fails_closed(sharded):
    tmp, parts = sharded
    code, out = _merge(tmp, parts[0], parts[2], out="dropped")
    assert code == 3, out[-3000:]
    assert "FAILED CLOSED" in out and "parts 2 of 3 missing" in out
    data = json.loads((tmp / "dropped" / "parity.json").read_text())
    assert data["total_uncompared"] > 0 and not data["status"].startswith("PASS")
    # even with --allow-uncompared a missing part is never a pass
    done = run_cli(["parity", "--merge", str(parts[0]), str(parts[2]), "--allow-uncompared",
                    "--report-dir", str(tmp / "dropped2")], tmp)
    assert done.returncode == 3, done.stdout[-2000:]


@pytest.mark.native
def test_a_part_given_twice_or_of_another_run_is_refused(sharded, tmp_path):
    tmp, parts = sharded
    code, out = _merge(tmp_path, parts[0], parts[1], parts[1], parts[2])
    assert code == 2 and "part 2 of 3 is given twice" in out, out
    again = tmp_path / "again"  # the same part under another directory
    shutil.copytree(parts[1], again)
    code, out = _merge(tmp_path, parts[0], parts[1], again, parts[2])
    assert code == 2 and "given twice" in out, out
    for field, value in (("seed", 5), ("rules", ["layer_norm"]), ("random", 999)):
        other = tmp_path / f"other-{field}"
        shutil.copytree(parts[1], other)
        data = json.loads((other / "parity.json").read_text())
        data["selection"][field] = value
        (other / "parity.json").write_text(json.dumps(data))
        code, out = _merge(tmp_path, parts[0], other, parts[2])
        assert code == 2 and "another run" in out and field in out, (field, out)
    assert not (tmp_path / "merged").exists()  # refused before anything was written
    m4 = tmp_path / "of4"
    shutil.copytree(parts[1], m4)
    data = json.loads((m4 / "parity.json").read_text())
    data["selection"]["shard"] = [2, 4]
    (m4 / "parity.json").write_text(json.dumps(data))
    code, out = _merge(tmp_path, parts[0], m4, parts[2])
    assert code == 2 and "part 2 of 4" in out, out


@pytest.mark.native
def test_a_tampered_or_unfinished_part_is_not_a_pass(sharded, tmp_path):
    tmp, parts = sharded
    short = tmp_path / "short"  # a part that claims fewer cases than it should hold
    shutil.copytree(parts[0], short)
    data = json.loads((short / "parity.json").read_text())
    rule = next(r for r, c in data["coverage"].items() if c["selected"])
    data["coverage"][rule]["selected"] -= 10
    data["coverage"][rule]["compared"] -= 10
    (short / "parity.json").write_text(json.dumps(data))
    code, out = _merge(tmp_path, short, parts[1], parts[2])
    assert code == 3 and "FAILED CLOSED" in out, out
    unfinished = tmp_path / "unfinished"
    shutil.copytree(parts[2], unfinished)
    data = json.loads((unfinished / "parity.json").read_text())
    data["complete"] = False
    data["interrupted"] = "SIGTERM"
    (unfinished / "parity.json").write_text(json.dumps(data))
    code, out = _merge(tmp_path, parts[0], parts[1], unfinished, out="merged2")
    assert code == 3 and "did not finish" in out and "PASS" not in out, out


@pytest.mark.native
def test_a_part_without_blocks_compares_nothing_and_the_merge_still_equals_the_unsplit_run(tmp_path):
    # one rule, one short block: parts 2 and 3 of 3 get no block. They used to run the whole selection
    # (exit 0 on a comparison that was not theirs to make, and a merge counting every case twice).
    run = ["parity", "--rules", "layer_norm", "--random", "40", "--seed", "2", "--quiet", "--workers", "1"]  # (as RUN)
    done = run_cli([*run, "--report-dir", str(tmp_path / "whole")], tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    for k in (1, 2, 3):
        done = run_cli([*run, "--shard", f"{k}/3", "--report-dir", str(tmp_path / f"part{k}")], tmp_path, timeout=600)
        out = done.stdout + done.stderr
        if k == 1:
            assert done.returncode == 0 and "PASS: all 40 selected cases compared" in out, out[-3000:]
            continue
        assert done.returncode == 3, out[-3000:]
        assert f"part {k} of 3 holds none of the selection's 1 blocks" in out
        assert f"NOTHING COMPARED: part {k} of 3 holds no case" in out and "PASS" not in out
        data = json.loads((tmp_path / f"part{k}" / "parity.json").read_text())
        assert all(c["selected"] == 0 for c in data["coverage"].values())
        assert sum(t["cases"] for t in data["rules"].values()) == 0 and _records(tmp_path / f"part{k}") == []
    code, out = _merge(tmp_path, *(tmp_path / f"part{k}" for k in (3, 1, 2)))
    assert code == 0 and "PASS: all 40 selected cases compared" in out, out[-3000:]
    assert _counts(tmp_path / "merged") == _counts(tmp_path / "whole")
    assert _records(tmp_path / "merged") == _records(tmp_path / "whole")
    # the empty parts alone are not a pass either: part 1's cases count as uncompared
    code, out = _merge(tmp_path, tmp_path / "part2", tmp_path / "part3", out="empties")
    assert code == 3 and "FAILED CLOSED" in out, out[-3000:]


def test_a_round_drops_the_last_rounds_background_group(tmp_path, monkeypatch):
    """Each round of a long run is drawn, compared and dropped before the next: a round's
    background group holds its cases and outcomes and must not outlive its round (a list of
    every round's groups kept them all to the run's end, so memory grew with the run)."""
    import weakref

    from paddle_spmd_port.outcome import Outcome
    from paddle_spmd_port.parity import cli

    groups: list[weakref.ref] = []
    live: list[int] = []  # background groups alive when each round's foreground group runs

    class Group:  # stands in for BackgroundGroup: answers at once, runs nothing
        def __init__(self, backend, cases, args):
            self.backend, self.cases, self.info, self.seconds = backend, cases, {}, 0.0
            groups.append(weakref.ref(self))

        def start(self):
            pass

        def is_alive(self):
            return False

        def result(self):
            return [Outcome(not_run="planted") for _ in self.cases]

        def stop(self):
            return None

    def foreground(backend, cases, args, report):
        live.append(sum(ref() is not None for ref in groups))
        return [Outcome(not_run="planted") for _ in cases]

    monkeypatch.setattr(cli, "BackgroundGroup", Group)
    monkeypatch.setattr(cli, "run_native_group", foreground)
    monkeypatch.setattr(cli, "CASES_PER_ROUND", 2000)  # 3 rounds of 2 blocks: a block of each rule
    monkeypatch.setattr(cli, "ROUNDS_APART", False)  # (watched from this process: see cli.ROUNDS_APART)
    code = cli._main(["--rules", "layer_norm,batch_norm", "--random", "3000", "--quiet",
                      "--report-dir", str(tmp_path / "r")])
    assert code == 3  # nothing compared: the planted groups answer nothing
    assert len(groups) == 3 and live == [1, 1, 1], live
