"""Bad input to ``parity``: one line naming the argument, exit 2, nothing run or written."""

from __future__ import annotations

import json

import pytest

from paddle_spmd_port.runctl.grammar import available_cores
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
    # timeouts must be finite and fit what threading/select accept (inf and 1e300 were OverflowError tracebacks)
    BadInput(("parity", "--timeout", "inf"), "--timeout"),
    BadInput(("parity", "--timeout", "-inf"), "--timeout"),
    BadInput(("parity", "--timeout", "1e300"), "--timeout"),
    BadInput(("parity", "--timeout", "1e7"), "--timeout"),  # beyond a week
    BadInput(("parity", "--timeout", ""), "--timeout"),
    # empty paths (were: no JUnit file and no word; the default report dir)
    BadInput(("parity", "--junit", ""), "--junit"),
    BadInput(("parity", "--report-dir", ""), "--report-dir"),
    BadInput(("parity", "--report-dir", "  "), "--report-dir"),
    # a rule the route cannot reach, refused before any work with the routes that can
    BadInput(("parity", "--backend", "compiled", "--rules", "sync_batch_norm"), "--backend"),
    BadInput(("parity", "--backend", "compiled", "--rules", "layer_norm,sync_batch_norm_grad"), "--backend"),
    BadInput(("parity", "--backend", "pir", "--rules", "layer_norm_reverse"), "--backend"),
    BadInput(("parity", "--backend", "pir", "--rules", "rms_norm"), "--backend"),
    BadInput(("parity", "--backend", "pir", "--random", "5", "--rules", "instance_norm"), "--backend"),
    BadInput(("parity", "--backend", "registry", "--rules", "batch_norm_grad"), "--backend"),
    BadInput(("parity", "--backend", "registry", "--rules", "fast_ln"), "--backend"),
    BadInput(("parity", "--backend", "registry"), "--backend"),  # every rule: batch_norm is not in the registry
    BadInput(("parity", "--backend", "pir", "--primary-only", "--rules", "layer_norm"), "--primary-only"),
    # more workers than cores (1000 started 16 Paddle workers: 22 s instead of 9); --oversubscribe insists
    BadInput(("parity", "--workers", "1000"), "--workers"),
    BadInput(("parity", "--workers", str(available_cores() + 1), "--rules", "layer_norm"), "--workers"),
    BadInput(("parity", "--max-cases", "0"), "--max-cases"),
    BadInput(("parity", "--sample", "-3"), "--sample"),
    BadInput(("parity", "--workers", "0"), "--workers"),
    BadInput(("parity", "--backend", "gpu"), "--backend"),
    BadInput(("parity", "--seed", "x"), "--seed"),
    BadInput(("parity", "--random", "0"), "--random"),
    BadInput(("parity", "--random", "-5"), "--random"),
    BadInput(("parity", "--random", "many"), "--random"),
    # a count beyond any run (was: minutes listing 10^17 blocks, memory growing, before any output)
    BadInput(("parity", "--random", "99999999999999999999", "--rules", "layer_norm"), "--random"),
    BadInput(("parity", "--random", "100000001"), "--random"),
    BadInput(("parity", "--random", "10", "--sample", "5"), "--random"),
    BadInput(("parity", "--random", "10", "--max-cases", "5"), "--random"),
    BadInput(("parity", "--random", "10", "--coshard"), "--random"),
    BadInput(("parity", "--no-such-flag"), "--no-such-flag"),
    BadInput(("parity", "--report-dir", "{tmp}/afile"), "--report-dir", {"afile": "x"}),
    BadInput(("parity", "--report-dir", "{tmp}/afile/sub"), "--report-dir", {"afile": "x"}),
    BadInput(("parity", "--report-dir", "/proc/no-such-dir"), "--report-dir"),
    BadInput(("parity", "--junit", "{tmp}/adir"), "--junit", {"adir/": ""}),
    BadInput(("parity", "--junit", "/proc/parity.xml"), "--junit"),
    # --list writes nothing: an output option with it is refused, not ignored
    BadInput(("parity", "--list", "--junit", "{tmp}/parity.xml"), "--junit"),
    BadInput(("parity", "--list", "--report-dir", "{tmp}/r"), "--report-dir"),
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


def test_a_route_line_names_the_routes_that_can(tmp_path):
    line = assert_usage_error(BadInput(("parity", "--backend", "compiled", "--rules", "sync_batch_norm"), "--backend"),
                              tmp_path)
    assert "sync_batch_norm is reached by registry" in line, line
    line = assert_usage_error(BadInput(("parity", "--backend", "pir", "--rules", "layer_norm_reverse"), "--backend"),
                              tmp_path)
    assert "reached by registry, compiled" in line, line
    line = assert_usage_error(BadInput(("parity", "--workers", "1000"), "--workers"), tmp_path)
    assert "--oversubscribe" in line and f"{available_cores()} core" in line, line
