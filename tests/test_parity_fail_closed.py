"""``parity`` fails closed: a run that did not compare what it was asked to never exits 0.

Each scenario is a real run of the command with one thing taken away (Paddle, time, the C++
caller's source); the report must say what went uncompared and why.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from paddle_spmd_port.compare import Comparison
from paddle_spmd_port.grid import GRIDS
from paddle_spmd_port.outcome import Outcome
from paddle_spmd_port.parity.cli import select_cases
from paddle_spmd_port.parity.report import ParityReport
from tests.cli_checks import REPO
from tests.helpers import skip_if_compiled_unreachable

pytestmark = pytest.mark.native


def selected(rules, n_sample: int) -> dict[str, int]:
    """How many cases ``--sample n_sample`` selects per rule (the draw plus the rule's corner sets)."""
    return {r: len(select_cases(r, None, n_sample, 0)) for r in rules}


def parity(args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 300):
    full_env = dict(os.environ, **(env or {}))
    full_env.setdefault("PYTHONPATH", str(REPO))
    return subprocess.run([sys.executable, "-m", "paddle_spmd_port", "parity", "--quiet", *args], cwd=cwd,
                          env=full_env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def hidden_paddle(tmp_path: Path) -> dict[str, str]:
    """An environment in which ``import paddle`` fails (workers inherit it) and no Paddle folder
    with libraries is found: what a machine without Paddle looks like to every backend."""
    fake = tmp_path / "no-paddle" / "paddle"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('paddle is hidden by the test')\n")
    return {"PYTHONPATH": os.pathsep.join([str(fake.parent), str(REPO)])}


def test_without_paddle_every_rule_is_uncompared_and_the_run_exits_3(tmp_path):
    done = parity(["--sample", "20", "--report-dir", str(tmp_path / "r")], tmp_path, hidden_paddle(tmp_path))
    assert done.returncode == 3, done.stdout + done.stderr
    want = selected(GRIDS, 20)
    total = sum(want.values())
    last = done.stdout.strip().splitlines()
    assert any(line.startswith(f"FAILED CLOSED: {total:,} of {total:,} selected cases compared by no route")
               for line in last[-3:]), last[-3:]
    data = json.loads((tmp_path / "r" / "parity.json").read_text())
    assert data["total_uncompared"] == total and data["status"].startswith("FAILED CLOSED")
    for rule, cov in data["coverage"].items():
        assert cov["compared"] == 0 and cov["selected"] == want[rule], rule
        assert sum(cov["uncompared_reasons"].values()) == want[rule]
        assert all("backend unavailable" in why for why in cov["uncompared_reasons"]), cov
    assert "ImportError: paddle is hidden by the test" in done.stdout
    md = (tmp_path / "r" / "parity.md").read_text()
    assert md.startswith("**FAILED CLOSED")


def test_allow_uncompared_exits_0_and_says_so_first(tmp_path):
    done = parity(["--rules", "layer_norm", "--sample", "5", "--allow-uncompared", "--report-dir",
                   str(tmp_path / "r")], tmp_path, hidden_paddle(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    n = selected(["layer_norm"], 5)["layer_norm"]
    assert (tmp_path / "r" / "parity.md").read_text().startswith(
        f"**INCOMPLETE, ACCEPTED (--allow-uncompared): {n:,} of {n:,}")


def test_workers_timing_out_are_not_run_and_the_run_exits_3_fast(tmp_path):
    # the PIR route: its workers import Paddle (seconds) before the first answer, so a 10 ms timeout
    # strikes every time (the compiled caller starts in ~50 ms and may answer a batch in time)
    done = parity(["--rules", "layer_norm,batch_norm_grad", "--backend", "pir", "--sample", "300",
                   "--timeout", "0.01", "--report-dir", str(tmp_path / "r")], tmp_path, timeout=120)
    assert done.returncode == 3, done.stdout + done.stderr
    data = json.loads((tmp_path / "r" / "parity.json").read_text())
    assert data["total_uncompared"] == sum(selected(["layer_norm", "batch_norm_grad"], 300).values())
    reasons = " ".join(why for cov in data["coverage"].values() for why in cov["uncompared_reasons"])
    assert "worker timed out" in reasons and "failed 3 times in a row" in reasons
    assert "native crashed" not in reasons  # a timeout is ours, not a crash of Paddle's


def test_an_install_without_the_callers_source_is_backend_unavailable(tmp_path):
    """What a wheel without package data did: every compiled case a 'native crash' and exit 0."""
    skip_if_compiled_unreachable()  # Paddle < 3.1: every compiled case is unreachable before the source is read
    copy = tmp_path / "site" / "paddle_spmd_port"
    shutil.copytree(REPO / "paddle_spmd_port", copy, ignore=shutil.ignore_patterns("cpp", "__pycache__"))
    done = parity(["--rules", "batch_norm_grad,layer_norm_grad", "--backend", "compiled", "--sample", "10",
                   "--report-dir", str(tmp_path / "r")], tmp_path,
                  {"PYTHONPATH": str(copy.parent), "PADDLE_SPMD_PORT_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 3, done.stdout + done.stderr
    data = json.loads((tmp_path / "r" / "parity.json").read_text())
    for cov in data["coverage"].values():
        assert cov["compared"] == 0
        (why,) = cov["uncompared_reasons"]
        assert why.startswith("compiled: not run: backend unavailable: compiled caller: the caller's source")
        assert str(copy) in why
    assert all(t["verdicts"]["native-crash"] == 0 for t in data["rules"].values())


def test_a_full_report_and_its_per_case_file_name_every_group(tmp_path):
    """Backend in every heading and key, unique JUnit suites, every non-match case in the gz file."""
    junit = tmp_path / "p.xml"
    done = parity(["--rules", "layer_norm,batch_norm", "--sample", "400", "--seed", "3", "--report-dir",
                   str(tmp_path / "r"), "--junit", str(junit)], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads((tmp_path / "r" / "parity.json").read_text())
    assert set(data["rules"]) == {"layer_norm@registry", "layer_norm@pir", "batch_norm@compiled", "batch_norm@pir"}
    assert data["selection"]["slug"] == "rules-layer_norm+batch_norm_sample400-seed3"
    with gzip.open(tmp_path / "r" / "parity-cases.jsonl.gz", "rt") as fh:
        rows = [json.loads(line) for line in fh]
    expected = sum(n for t in data["rules"].values() for v, n in t["verdicts"].items()
                   if v not in ("match", "both-raise-same"))
    assert len(rows) == expected > 0
    assert {f"{r['rule']}@{r['backend']}" for r in rows if r["verdict"] == "unreachable"} == {"layer_norm@pir",
                                                                                               "batch_norm@pir"}
    md = (tmp_path / "r" / "parity.md").read_text()
    assert "## layer_norm@pir: unreachable" in md and "parity-cases.jsonl.gz" in md
    xml = junit.read_text()
    suites = [part.split('"')[0] for part in xml.split('<testsuite name="')[1:]]
    assert len(suites) == len(set(suites)) == 5 and "parity.coverage" in suites


def test_a_sample_goes_to_its_own_default_report_dir(tmp_path):
    (tmp_path / "reports" / "parity").mkdir(parents=True)
    full = tmp_path / "reports" / "parity" / "parity.md"
    full.write_text("the full sweep's report")
    done = parity(["--rules", "layer_norm_reverse", "--sample", "7"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert full.read_text() == "the full sweep's report"
    own = tmp_path / "reports" / "parity-rules-layer_norm_reverse_sample7-seed0" / "parity.md"
    n = selected(["layer_norm_reverse"], 7)["layer_norm_reverse"]
    assert own.read_text().startswith(f"**PASS: all {n:,} selected cases compared")


# --------------------------------------------------------------------------- the status line itself
def _report(selected: int, compared: int, mismatches: int = 0, **kw) -> ParityReport:
    from paddle_spmd_port.grid import grid_for

    case = next(iter(grid_for("layer_norm")))
    report = ParityReport(complete=True, **kw)
    tally = report.plan("layer_norm", "registry", selected, case.spec.n_cells)
    n = case.spec.n_cells
    for i in range(selected):
        if i < mismatches:
            cmp = Comparison("mismatch", n, n - 1)
        elif i < compared:
            cmp = Comparison("match", n, n)
        else:
            cmp = Comparison("not-run", n, 0)
        report.add(tally, i, case, Outcome(), Outcome(not_run="worker timed out") if i >= compared else Outcome(), cmp)
    return report


@pytest.mark.parametrize(("report", "first_words"), [
    pytest.param(_report(4, 4), "PASS", id="all-compared"),
    pytest.param(_report(4, 3), "FAILED CLOSED: 1 of 4", id="one-uncompared"),
    pytest.param(_report(4, 3, allow_uncompared=True), "INCOMPLETE, ACCEPTED", id="uncompared-allowed"),
    pytest.param(_report(4, 3, mismatches=1), "MISMATCH: 1", id="mismatch-outranks-uncompared"),
    pytest.param(_report(0, 0), "NOTHING COMPARED", id="empty-selection"),
    pytest.param(_report(4, 2, interrupted="SIGTERM"), "INTERRUPTED by SIGTERM", id="interrupted"),
])
def test_status_line(report, first_words):
    assert report.status_line().startswith(first_words)


def test_a_not_run_case_counts_as_uncompared_even_when_the_port_rejects_it():
    """Mutant guard: comparing a timed-out case as 'port rejects invalid' would count it compared."""
    from paddle_spmd_port.compare import COMPARED, compare
    from paddle_spmd_port.errors import InvalidSpecError
    from paddle_spmd_port.grid import grid_for
    from paddle_spmd_port.outcome import ErrorInfo

    case = next(iter(grid_for("layer_norm")))
    port = Outcome(error=ErrorInfo.from_exception(InvalidSpecError("x: bad")))
    assert compare(case.spec, port, Outcome(not_run="worker timed out")).verdict not in COMPARED
    assert compare(case.spec, port, Outcome(crash="signal 11 (SIGSEGV)")).verdict in COMPARED
