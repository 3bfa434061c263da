"""``compat-test``: bad arguments end in one line and exit 2, before any runner starts or any file is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_checks import BadInput, assert_usage_error

TEST_FILE = {"t/test_a.py": "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_ok(self):\n        pass\n"}
FILE = "{tmp}/t/test_a.py"


def compat(*args: str) -> tuple[str, ...]:
    return ("compat-test", *args)


ROWS = [
    BadInput(compat("{tmp}/nope.py", "--against", "port"), "PATH"),
    BadInput(compat(FILE, "{tmp}/nope", "--against", "port"), "PATH", TEST_FILE),
    BadInput(compat("{tmp}/empty", "--against", "port"), "PATH", {"empty/": ""}),
    BadInput(compat("--against", "port"), "PATH"),
    BadInput(compat(FILE, "--against", "paddle"), "--against", TEST_FILE),
    BadInput(compat(FILE, "--against", "port", "--json", "{tmp}/out"), "--json", {**TEST_FILE, "out/": ""}),
    BadInput(compat(FILE, "--against", "port", "--json", "{tmp}/t/test_a.py/r.json"), "--json", TEST_FILE),
    BadInput(compat(FILE, "--against", "port", "--timeout", "0"), "--timeout", TEST_FILE),
    BadInput(compat(FILE, "--against", "port", "--timeout", "soon"), "--timeout", TEST_FILE),
    BadInput(compat(FILE, "--against", "port", "--jobs", "0"), "--jobs", TEST_FILE),
    BadInput(compat(FILE, "--against", "port", "--timeout", "inf"), "--timeout", TEST_FILE),  # was OverflowError
    BadInput(compat(FILE, "--against", "port", "--timeout", "1e300"), "--timeout", TEST_FILE),
    BadInput(compat(FILE, "--against", "port", "--timeout", "nan"), "--timeout", TEST_FILE),
    BadInput(compat(FILE, "--against", "port", "--timeout", "-1"), "--timeout", TEST_FILE),
    BadInput(compat(FILE, "--against", "port", "--json", ""), "--json", TEST_FILE),
    BadInput(compat("", "--against", "port"), "PATH", TEST_FILE),  # '' would be the current directory
    BadInput(compat(FILE, " ", "--against", "port"), "PATH", TEST_FILE),
    BadInput(compat(FILE, "--against", "native", "--shim"), "--shim", TEST_FILE),  # the shim is the port's
    # a file that is no Python file (was run as a test: "import-error", exit 1)
    BadInput(compat("{tmp}/README.md", "--against", "port"), "PATH", {"README.md": "# notes\n"}),
    BadInput(compat(FILE, "{tmp}/t/cases.jsonl", "--against", "port"), "PATH", {**TEST_FILE, "t/cases.jsonl": "{}\n"}),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_bad_input(row: BadInput, tmp_path: Path) -> None:
    assert_usage_error(row, tmp_path)
