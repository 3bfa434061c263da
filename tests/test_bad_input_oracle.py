"""``oracle``: bad arguments end in one line and exit 2, before any case is judged or any file written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_checks import BadInput, assert_usage_error

OLD_REPORT = {"reports/oracle.md": "an earlier report\n", "reports/oracle.json": "{}\n"}
FULL = json.dumps({"status": "complete", "selection": {"slug": "full", "describe": "every rule, profile all"}})
FULL_REPORT = {"reports/oracle.md": "the full report\n", "reports/oracle.json": FULL}


def oracle(*args: str) -> tuple[str, ...]:
    return ("oracle", "--report-dir", "{tmp}/reports", *args)


ROWS = [
    BadInput(oracle("--max-cases", "0"), "--max-cases", OLD_REPORT),  # the earlier report stays as it was
    BadInput(oracle("--max-cases", "-3"), "--max-cases"),
    BadInput(oracle("--max-cases", "many"), "--max-cases"),
    BadInput(oracle("--sample", "0"), "--sample"),
    BadInput(oracle("--seed", "x"), "--seed"),
    BadInput(oracle("--meshes", "0"), "--meshes"),
    BadInput(oracle("--meshes", "2x0"), "--meshes"),
    BadInput(oracle("--meshes", "2,2xa"), "--meshes"),
    BadInput(oracle("--meshes", ","), "--meshes"),
    BadInput(oracle("--meshes", "3"), "--meshes"),  # not a mesh of the case grid: would select nothing
    BadInput(oracle("--meshes"), "--meshes"),
    BadInput(oracle("--rules", "no_such_rule"), "--rules", OLD_REPORT),
    BadInput(oracle("--rules", "layer_norm,nope"), "--rules"),
    BadInput(oracle("--rules", ","), "--rules"),
    BadInput(oracle("--max-bugs", "-1"), "--max-bugs"),
    BadInput(oracle("--profile", "mine"), "--profile"),
    BadInput(oracle("--sync-group", "world"), "--sync-group"),
    BadInput(oracle("--bogus"), "--bogus"),
    # the native profile's pool: the shared timeout grammar, and no more workers than cores
    BadInput(oracle("--profile", "native", "--timeout", "0"), "--timeout"),
    BadInput(oracle("--profile", "native", "--timeout", "inf"), "--timeout"),
    BadInput(oracle("--profile", "native", "--workers", "0"), "--workers"),
    BadInput(oracle("--profile", "native", "--workers", "100000"), "--workers"),
    BadInput(oracle("--profile", "native"), "--report-dir", FULL_REPORT),
    BadInput(("oracle", "--report-dir", "{tmp}/a-file"), "--report-dir", {"a-file": "not a directory\n"}),
    BadInput(("oracle", "--report-dir", "{tmp}/a-file/reports"), "--report-dir", {"a-file": "not a directory\n"}),
    BadInput(("oracle", "--report-dir", ""), "--report-dir"),  # was: the report written into the current directory
    BadInput(("oracle", "--report-dir", "", "--rules", "layer_norm"), "--report-dir", FULL_REPORT),
    # a narrower run never silently replaces a broader report (was: oracle.md always rewritten)
    BadInput(oracle("--rules", "layer_norm"), "--report-dir", FULL_REPORT),
    BadInput(oracle("--max-cases", "3"), "--report-dir", FULL_REPORT),
    BadInput(oracle("--profile", "paddle"), "--report-dir", FULL_REPORT),
    BadInput(oracle("--sync-group", "mesh"), "--report-dir", FULL_REPORT),
    BadInput(oracle(), "--report-dir", OLD_REPORT),  # a report that does not say its selection
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_bad_input(row: BadInput, tmp_path: Path) -> None:
    assert_usage_error(row, tmp_path)
