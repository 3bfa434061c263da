"""Bad input to ``parity``: one line naming the argument, exit 2, nothing run or written."""

from __future__ import annotations

import json

import pytest

from tests.cli_checks import BadInput, assert_usage_error

OTHER_RUN = json.dumps({"selection": {"slug": "full", "describe": "the whole grid: all 8 rules"}, "complete": True})

ROWS = [
    BadInput(("parity", "--rules", ","), "--rules"),
    BadInput(("parity", "--rules", " "), "--rules"),
    BadInput(("parity", "--rules", "layer_norm,no_such_rule"), "--rules"),
    BadInput(("parity", "--rules", "all,layer_norm"), "--rules"),
    BadInput(("parity", "--timeout", "-1"), "--timeout"),
    BadInput(("parity", "--timeout", "0"), "--timeout"),
    BadInput(("parity", "--timeout", "nan"), "--timeout"),
    BadInput(("parity", "--timeout", "soon"), "--timeout"),
    BadInput(("parity", "--max-cases", "0"), "--max-cases"),
    BadInput(("parity", "--sample", "-3"), "--sample"),
    BadInput(("parity", "--workers", "0"), "--workers"),
    BadInput(("parity", "--backend", "gpu"), "--backend"),
    BadInput(("parity", "--seed", "x"), "--seed"),
    BadInput(("parity", "--random", "0"), "--random"),
    BadInput(("parity", "--random", "-5"), "--random"),
    BadInput(("parity", "--random", "many"), "--random"),
    BadInput(("parity", "--random", "10", "--sample", "5"), "--random"),
    BadInput(("parity", "--random", "10", "--max-cases", "5"), "--random"),
    BadInput(("parity", "--random", "10", "--coshard"), "--random"),
    BadInput(("parity", "--no-such-flag"), "--no-such-flag"),
    BadInput(("parity", "--report-dir", "{tmp}/afile"), "--report-dir", {"afile": "x"}),
    BadInput(("parity", "--report-dir", "{tmp}/afile/sub"), "--report-dir", {"afile": "x"}),
    BadInput(("parity", "--report-dir", "/proc/no-such-dir"), "--report-dir"),
    BadInput(("parity", "--junit", "{tmp}/adir"), "--junit", {"adir/": ""}),
    BadInput(("parity", "--junit", "/proc/parity.xml"), "--junit"),
    # a narrower run never silently replaces another run's report
    BadInput(("parity", "--rules", "layer_norm", "--sample", "5", "--report-dir", "{tmp}/full"), "--report-dir",
             {"full/parity.json": OTHER_RUN, "full/parity.md": "# the full sweep"}),
    BadInput(("parity", "--sample", "5", "--report-dir", "{tmp}/old"), "--report-dir",
             {"old/parity.json": "{}"}),
    BadInput(("parity", "--random", "5", "--report-dir", "{tmp}/full"), "--report-dir",
             {"full/parity.json": OTHER_RUN, "full/parity.md": "# the full sweep"}),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_bad_input_is_one_line_and_exit_2(row, tmp_path):
    assert_usage_error(row, tmp_path)


def test_the_check_catches_a_command_that_writes_or_rambles(tmp_path):
    """The table's checker itself fails on a run that is not a clean usage error (here: --list,
    which succeeds and prints), so a green table means something."""
    with pytest.raises(AssertionError):
        assert_usage_error(BadInput(("parity", "--list", "--rules", "layer_norm"), "--rules"), tmp_path)
