"""The release cross-check (parity/crosscheck.py, tools/release_crosscheck.py) can fail, both ways.

Without Paddle, in seconds: a baseline diff 3.2.2 -> 3.3.1 is made in-test the way ``parity
--baseline`` makes one (parity/baseline.py's Saver, Diff and writer), from the port's answers on
real grid cases (3.3.1's side) and those answers in 3.2.2's older words (its one listed
difference, ``x-rank-message-wording``, on each of its three rules). It agrees with 3.2.2's
profile (exit 0); a changed cell no difference explains (a doctored answer) is unexplained, a
rule whose changed case is gone leaves its listed difference unobserved, and a profile with the
difference removed (a mutated list) leaves every case unexplained: exit 1 each. An unstable
invalid input (a planted re-run shows it to vary) is explained by its class, the same pair not shown
to vary (*changed (invalid input)*) is held to the profile (unexplained where the port answers the
input, port-rejects where it refuses it); an incomplete diff exits 3; bad input exits 2. The real
diffs' samples (tests/data/crosscheck/, one changed case per difference, rule and route, cut from
the measured diffs of docs/measurements/2026-12-01-release-diffs.md) agree with their profiles.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import pytest

from paddle_spmd_port.case import Case
from paddle_spmd_port.grid import grid_for
from paddle_spmd_port.outcome import ErrorInfo, Outcome, port_outcome
from paddle_spmd_port.parity import crosscheck
from paddle_spmd_port.parity.baseline import CASES_FILE, Diff, Saver, load
from paddle_spmd_port.parity.output import write_diff
from paddle_spmd_port.releases import release_for
from paddle_spmd_port.types import DistAttr, SpmdResult
from paddle_spmd_port.validity import input_problem

DATA = Path(__file__).parent / "data" / "crosscheck"
RULES = ["group_norm", "group_norm_base", "instance_norm"]
SELECTION = {"slug": "rules-crosscheck", "describe": "rules " + ", ".join(RULES), "rules": RULES}
OLD_WORDS = (("should be greater than", "should greater than"), ("should be less than", "should less than"))


def _case(rule: str, case_id: str) -> Case:
    return next(c for c in grid_for(rule) if c.case_id == case_id)


def _older_words(outcome: Outcome, rule: str) -> Outcome:
    """3.3.1's x-rank error as 3.1.0-3.2.2 word it."""
    assert outcome.error is not None
    message = outcome.error.message
    for new, old in OLD_WORDS:
        message = message.replace(new, "should grater than" if rule.startswith("group") and "greater" in new else old)
    return Outcome(error=ErrorInfo(outcome.error.family, message))


def _wrong(outcome: Outcome) -> Outcome:
    """The answer with its first output claimed Partial on mesh dim 0."""
    assert outcome.result is not None
    out = outcome.result.outputs[0]
    bad = DistAttr(tuple(-1 for _ in out.dims_mapping), frozenset({0}), out.mesh)
    return Outcome(result=SpmdResult(outcome.result.inputs, (bad, *outcome.result.outputs[1:])))


def _valid_answer(rule: str) -> Case:
    return next(c for c in grid_for(rule) if input_problem(c) is None and port_outcome(c).result is not None
                and port_outcome(c).result.outputs[0].dims_mapping[:1] != (-1,))


def _write_diff(tmp_path: Path, rows: list[tuple[Case, Outcome, Outcome]], missing: int = 0,
                reruns: dict[str, Outcome] | None = None) -> Path:
    """A baseline of 3.2.2 (``old`` outcomes), diffed with 3.3.1's (``new``), written as parity --baseline does;
    ``missing``: that many stored rows the diff run does not reach (uncompared); ``reruns``: case id -> what
    re-running it answers (planted; any other case re-run answers as the sweep did)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "base.jsonl.gz"
    saver = Saver(path)
    for i, (case, old, _new) in enumerate(rows):
        saver.record(case.rule, "registry", i, case, old)
    for j in range(missing):
        case = rows[0][0]
        saver.record(case.rule, "compiled", len(rows) + j, case, rows[0][1])
    saver.finish({"version": "3.2.2", "commit": "d90d3ad913"}, SELECTION)
    diff = Diff(load(path, SELECTION))
    for i, (case, _old, new) in enumerate(rows):
        diff.record(case.rule, "registry", i, case, new)
    now = {c.case_id: new for c, _old, new in rows}
    diff.recheck(lambda _backend, cases: [(reruns or {}).get(c.case_id, now[c.case_id]) for c in cases])
    diff.judge()
    out = tmp_path / "report"
    write_diff(diff, out, {"version": "3.3.1", "commit": "7688495538"}, SELECTION)
    return out / "baseline.json"


def _inline(path: Path) -> dict:
    """The diff at ``path`` as one JSON value, its changed cases inline (the form load_diff also reads)."""
    data = crosscheck.load_diff(path)
    del data["cases_file"], data["cases_total"]
    return data


def _wording_rows() -> list[tuple[Case, Outcome, Outcome]]:
    rows = []
    for rule, case_id in (("instance_norm", "instance_norm-invalid-1"), ("instance_norm", "instance_norm-invalid-4"),
                          ("group_norm", "group_norm-invalid-1"), ("group_norm_base", "group_norm_base-invalid-1")):
        case = _case(rule, case_id)
        new = port_outcome(case)
        rows.append((case, _older_words(new, rule), new))
    return rows


def test_agrees_with_the_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write_diff(tmp_path, _wording_rows())
    assert crosscheck.main([str(path), "--json", str(tmp_path / "x.json")]) == 0
    out = capsys.readouterr().out
    assert "crosscheck 3.2.2: AGREE: 4 explained, 0 unstable, 0 outside, 0 unexplained, 0 unobserved" in out
    data = json.loads((tmp_path / "x.json").read_text())
    assert {(e["rule"], e["cases"]) for e in data["explained"]} == {("instance_norm", 2), ("group_norm", 1),
                                                                     ("group_norm_base", 1)}


def test_a_sample_of_the_diff_keeps_its_result(tmp_path: Path) -> None:
    rows = _wording_rows()
    rows.insert(1, (rows[0][0], *rows[0][1:]))  # (two cases of one difference, rule and route: one is kept)
    path = _write_diff(tmp_path, rows)
    assert crosscheck.main([str(path), "--sample-out", str(tmp_path / "s" / "sample.json")]) == 0
    cut = crosscheck.load_diff(tmp_path / "s" / "sample.json")
    assert (len(cut["cases"]), cut["sample_of"]) == (3, {"cases": 5, "kept": 3})
    assert crosscheck.check(cut, release_for("3.2.2"), "old").code == 0


def test_diffs_of_one_pair_are_checked_as_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _wording_rows()
    a = _write_diff(tmp_path / "a", [r for r in rows if r[0].rule != "group_norm_base"])
    b = _write_diff(tmp_path / "b", [r for r in rows if r[0].rule == "group_norm_base"])
    assert crosscheck.main([str(a)]) == 1  # alone, group_norm_base's case is missing
    assert crosscheck.main([str(a), str(b)]) == 0
    assert "AGREE: 4 explained" in capsys.readouterr().out
    other = _inline(b)
    other["old"]["paddle"]["version"] = "3.1.0"
    (tmp_path / "c.json").write_text(json.dumps(other))
    assert crosscheck.main([str(a), str(tmp_path / "c.json")]) == 2
    assert "different release pairs" in capsys.readouterr().err


def test_a_changed_cell_no_difference_explains(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = _valid_answer("instance_norm")
    new = port_outcome(case)
    path = _write_diff(tmp_path, [*_wording_rows(), (case, _wrong(new), new)])
    assert crosscheck.main([str(path)]) == 1
    out = capsys.readouterr().out
    assert "1 unexplained, 0 unobserved" in out and case.case_id in out and "DISAGREE" in out


def test_a_listed_difference_the_diff_does_not_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [r for r in _wording_rows() if r[0].rule != "group_norm_base"]
    assert crosscheck.main([str(_write_diff(tmp_path, rows))]) == 1
    out = capsys.readouterr().out
    assert "0 unexplained, 1 unobserved" in out and "x-rank-message-wording on group_norm_base" in out


def test_a_mutated_difference_list(tmp_path: Path) -> None:
    data = crosscheck.load_diff(_write_diff(tmp_path, _wording_rows()))
    profile = release_for("3.2.2")
    assert crosscheck.check(data, profile, "old").code == 0
    stripped = crosscheck.check(data, dataclasses.replace(profile, differences=()), "old")
    assert (len(stripped.unexplained), stripped.code) == (4, 1)
    # a difference the release does not have (3.1.0's 1-D statistics, joined to 3.2.2's list): unobserved
    extra = next(d for d in release_for("3.1.0").differences if d.name == "group-norm-statistics-1d")
    grown = crosscheck.check(data, dataclasses.replace(profile, differences=(*profile.differences, extra)), "old")
    assert grown.unobserved == [("group-norm-statistics-1d", "group_norm"),
                                ("group-norm-statistics-1d", "group_norm_base")]
    assert grown.code == 1


def _answered_invalid() -> Case:
    """An invalid input the port answers (it does not refuse every invalid input)."""
    return next(c for c in grid_for("instance_norm") if input_problem(c) is not None
                and port_outcome(c).result is not None and port_outcome(c).result.outputs[0].dims_mapping)


def test_unstable_is_explained_by_its_class(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    invalid = _answered_invalid()
    new = port_outcome(invalid)
    # a re-run answered as the old build did: shown to vary
    path = _write_diff(tmp_path, [*_wording_rows(), (invalid, _wrong(new), new)], reruns={invalid.case_id: _wrong(new)})
    assert crosscheck.main([str(path)]) == 0
    assert "AGREE: 4 explained, 1 unstable" in capsys.readouterr().out


def test_a_deterministic_change_on_invalid_input_is_held_to_the_profile(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Not shown to vary, the same pair is *changed (invalid input)* and held to the profile like any change: where
    the port answers the input, the release's other answer is a difference no profile lists (unexplained, exit 1;
    as *unstable* it passed); where the port refuses it, it is port-rejects (outside any profile, exit 0)."""
    invalid = _answered_invalid()
    new = port_outcome(invalid)
    assert crosscheck.main([str(_write_diff(tmp_path / "a", [*_wording_rows(), (invalid, _wrong(new), new)]))]) == 1
    out = capsys.readouterr().out
    assert "0 unstable" in out and "1 unexplained" in out and "instance_norm@registry changed (invalid input)" in out
    refused = next(c for c in grid_for("group_norm") if input_problem(c) is not None
                   and port_outcome(c).error is not None and port_outcome(c).error.port_invalid)
    answer = port_outcome(_valid_answer("group_norm"))
    rows = [*_wording_rows(), (refused, answer, Outcome(crash="signal 11 (SIGSEGV)"))]
    assert crosscheck.main([str(_write_diff(tmp_path / "b", rows))]) == 0
    out = capsys.readouterr().out
    assert "port-rejects (outside any profile): 1 (group_norm@registry 1)" in out and "0 unstable" in out


def test_what_no_sweep_compares_is_outside_the_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An invalid input the port refuses, answered by an error in one build and a crash in the other (the
    diff calls it regressed), and a case unreachable in both builds whose reason's words changed: no profile lists
    them. (A reason whose source line alone moved is no changed case at all: the diff compares it without.)"""
    refused = next(c for c in grid_for("instance_norm_grad") if input_problem(c) is not None
                   and port_outcome(c).error is not None and port_outcome(c).error.port_invalid)
    case = _valid_answer("instance_norm")
    rows = [*_wording_rows(),
            (refused, Outcome(error=ErrorInfo("ValueError", "ndim")), Outcome(crash="signal 6 (SIGABRT)")),
            (case, Outcome(unreachable="cannot be built here: should begreater [layout.h:101]"),
             Outcome(unreachable="cannot be built here: should be greater [layout.h:103]")),
            (_valid_answer("group_norm"), Outcome(unreachable="cannot be built here: [layout.h:101]"),
             Outcome(unreachable="cannot be built here: [layout.h:103]"))]
    assert crosscheck.main([str(_write_diff(tmp_path, rows))]) == 0
    out = capsys.readouterr().out
    assert "port-rejects (outside any profile): 1 (instance_norm_grad@registry 1)" in out
    assert "unreachable both (outside any profile): 1 (instance_norm@registry 1)" in out
    assert "AGREE: 4 explained, 0 unstable, 2 outside, 0 unexplained" in out


def test_an_incomplete_diff_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert crosscheck.main([str(_write_diff(tmp_path, _wording_rows(), missing=2))]) == 3
    assert "left 2 cases uncompared" in capsys.readouterr().out


def test_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write_diff(tmp_path, _wording_rows())
    good = _inline(path)
    bad = tmp_path / "bad.json"
    for text, words in (("{", "not readable JSON"), ("[]", "not a baseline diff"),
                        (json.dumps({**good, "cases": [{k: v for k, v in c.items() if k != "old_outcome"}
                                                       for c in good["cases"]]}), "both outcomes whole"),
                        (json.dumps({**good, "new": {**good["new"], "paddle": {"version": "3.1.0"}}}),
                         "3.2.2 -> 3.1.0")):
        bad.write_text(text)
        assert crosscheck.main([str(bad)]) == 2
        err = capsys.readouterr().err.strip()
        assert words in err and len(err.splitlines()) == 1, err
    assert crosscheck.main([str(tmp_path / "absent.json")]) == 2
    assert crosscheck.main([str(bad), "--profile", "9.9.9"]) == 2
    capsys.readouterr()
    # --release, as the release profile is named (--profile is a rule profile elsewhere); --profile still accepted
    assert crosscheck.main([str(bad), "--release", "9.9.9"]) == 2
    assert "--release" in capsys.readouterr().err
    fixture = str(Path(__file__).parent / "data" / "crosscheck" / "diff-3.1.0-sample.json")
    assert crosscheck.main([fixture, "--release", "3.1.0"]) == crosscheck.main([fixture, "--profile", "3.1.0"]) != 2
    capsys.readouterr()
    # the summary without its cases file, or with one cut short, truncated or not gzip: refused, one line
    cases = path.parent / CASES_FILE
    whole = cases.read_bytes()
    lines = gzip.decompress(whole).splitlines(keepends=True)
    for content, words in ((None, f"{CASES_FILE} (the changed cases of {path}) does not exist"),
                           (gzip.compress(b"".join(lines[:-1])), "holds 3 cases where baseline.json says 4"),
                           (whole[:len(whole) // 2], "is not a readable cases file (EOFError)"),
                           (b"not gzip", "is not a readable cases file (BadGzipFile)"),
                           (gzip.compress(b"{\n"), "is not a readable cases file (JSONDecodeError)")):
        cases.unlink(missing_ok=True)
        if content is not None:
            cases.write_bytes(content)
        assert crosscheck.main([str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert words in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("sample", sorted(DATA.glob("diff-*-sample.json")), ids=lambda p: p.name)
def test_the_measured_diffs_samples_agree(sample: Path) -> None:
    data = crosscheck.load_diff(sample)
    side = crosscheck.release_side(data)
    result = crosscheck.check(data, release_for(data[side]["paddle"]["version"]), side)
    assert (result.unexplained, result.unobserved) == ([], [])


def test_the_real_sample_catches_the_profile_as_it_was() -> None:
    """3.1.0's profile before this cross-check (p_norm_grad missing from the co-shard difference, no PIR
    group_norm entry) leaves the measured sample's cases of each unexplained."""
    data = crosscheck.load_diff(DATA / "diff-3.1.0-sample.json")
    profile = release_for("3.1.0")
    old = tuple(d.for_rules(*(d.rules - {"p_norm_grad"})) if d.name == "coshard-dims-mapping-read-raises" else d
                for d in profile.differences if d.name != "group-norm-pir-unbuildable")
    result = crosscheck.check(data, dataclasses.replace(profile, differences=old), "old")
    missed = {(c["rule"], c["backend"]) for c in result.unexplained}
    assert missed == {("p_norm_grad", "compiled"), ("group_norm", "pir")}
    assert result.code == 1
