"""``oracle``: bad arguments end in one line and exit 2, before any case is judged or any file written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_checks import BadInput, assert_usage_error

OLD_REPORT = {"reports/oracle.md": "an earlier report\n", "reports/oracle.json": "{}\n"}


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
    BadInput(("oracle", "--report-dir", "{tmp}/a-file"), "--report-dir", {"a-file": "not a directory\n"}),
    BadInput(("oracle", "--report-dir", "{tmp}/a-file/reports"), "--report-dir", {"a-file": "not a directory\n"}),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_bad_input(row: BadInput, tmp_path: Path) -> None:
    assert_usage_error(row, tmp_path)
