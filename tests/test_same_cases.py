"""tools/same_cases.py: two parity reports' per-case rows and group counts, equal or not. Checked here
against reports it must call equal (rows in another order, timings aside), different (each difference
listed), or not comparable (not a report: exit 2; a partial one: exit 3)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------- tools/same_cases.py
def _tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "tools" / "same_cases.py"), *args], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)


def _report(where: Path, rows: list[dict], groups: dict[str, dict], interrupted: str | None = None) -> Path:
    where.mkdir(parents=True)
    (where / "parity.json").write_text(json.dumps({"interrupted": interrupted, "rules": groups}))
    with gzip.open(where / "parity-cases.jsonl.gz", "wt") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    return where


ROWS = [{"rule": "p_norm", "backend": "registry", "id": f"p_norm-random7-{k}", "verdict": "port-rejects-invalid",
         "native": "native crashed: signal 11 (SIGSEGV)", "port": "raises InvalidSpecError: x"} for k in range(3)]
GROUPS = {"p_norm@registry": {"state": "done", "cases": 9, "verdicts": {"match": 6, "port-rejects-invalid": 3},
                              "native_seconds": 1.5}}


def test_same_cases_equal_in_any_order_and_timings_aside(tmp_path: Path) -> None:
    a = _report(tmp_path / "a", ROWS, GROUPS)
    b = _report(tmp_path / "b", ROWS[::-1], {"p_norm@registry": {**GROUPS["p_norm@registry"], "native_seconds": 9}})
    done = _tool(str(a), str(b))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "EQUAL: 1 groups, 9 cases, 3 per-case rows" in done.stdout


def test_same_cases_lists_each_difference_and_exits_1(tmp_path: Path) -> None:
    """A changed native answer, a row only one side has (a case that matched in the other run) and a
    changed verdict count: each is listed, exit 1."""
    a = _report(tmp_path / "a", ROWS, GROUPS)
    changed = [dict(ROWS[0], native="native crashed: signal 7 (SIGBUS)"), ROWS[1]]
    b = _report(tmp_path / "b", changed, {"p_norm@registry": {**GROUPS["p_norm@registry"],
                                                               "verdicts": {"match": 7, "port-rejects-invalid": 2}}})
    done = _tool(str(a), str(b))
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "case p_norm@registry p_norm-random7-0" in out and "SIGBUS" in out and "SIGSEGV" in out
    assert "p_norm-random7-2" in out and "only in report A" in out and "group p_norm@registry" in out
    assert "DIFFERENT: 3 differences" in out


def test_same_cases_refuses_what_is_not_a_report_and_a_partial_one(tmp_path: Path) -> None:
    a = _report(tmp_path / "a", ROWS, GROUPS)
    bad = _tool(str(a), str(tmp_path / "nowhere"))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "REPORT_B" in bad.stderr and not bad.stdout
    cut = _report(tmp_path / "cut", ROWS, GROUPS, interrupted="SIGINT")
    partial = _tool(str(a), str(cut))
    assert partial.returncode == 3 and "NOT COMPARED" in partial.stdout and "interrupted by SIGINT" in partial.stdout
    undone = _report(tmp_path / "undone", ROWS, {"p_norm@registry": {**GROUPS["p_norm@registry"], "state": "running"}})
    assert _tool(str(undone), str(a)).returncode == 3


def test_same_cases_help_and_usage_error_name_each_report() -> None:
    """The two positionals carry a name each (a tuple metavar, which argparse on Python 3.11 cannot
    format in --help nor in its "required" error: both were exit 4 through the shared parser)."""
    helped = _tool("--help")
    assert helped.returncode == 0 and not helped.stderr, helped.stderr
    assert "same_cases [-h] [--version]" in helped.stdout and "REPORT_A REPORT_B" in helped.stdout.split("\n\n")[0]
    assert "\n  REPORT_A REPORT_B  two parity report directories" in helped.stdout, helped.stdout
    for given in ([], ["only-one"]):
        done = _tool(*given)
        assert done.returncode == 2 and not done.stdout, done.stderr
        assert done.stderr == ("paddle_spmd_port same_cases: error: the following arguments are required: "
                               "REPORT_A REPORT_B (see --help)\n"), done.stderr


def test_same_cases_internal_error_is_exit_4_one_line_and_no_json(tmp_path: Path, monkeypatch, capsys) -> None:
    """A bug of ours reading the rows (planted): exit 4, the one line naming it and its saved traceback,
    no --json (a comparison cut short is no answer)."""
    import tempfile

    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import same_cases
    finally:
        sys.path.remove(str(ROOT / "tools"))

    def keyed(path: Path) -> dict:
        raise KeyError("planted fault")

    monkeypatch.setattr(same_cases, "_keyed", keyed)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    a, b = _report(tmp_path / "a", ROWS, GROUPS), _report(tmp_path / "b", ROWS, GROUPS)
    out = tmp_path / "diff.json"
    assert same_cases.main([str(a), str(b), "--json", str(out)]) == 4
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith("paddle_spmd_port same_cases: internal error: KeyError: 'planted fault' (a bug of"), line
    (saved,) = tmp_path.glob("*.traceback")
    assert f"traceback saved in {saved})" in line and "planted fault" in saved.read_text()
    assert not out.exists() and "EQUAL" not in captured.out
