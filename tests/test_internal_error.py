"""An internal error (exit 4) in the middle of a run leaves what a signal leaves.

Each test runs a command in a subprocess through a small driver that first replaces one function of
ours with one that raises after a few calls (a planted bug: in a native slice thread decoding
answers, in the background group, in the main thread's comparison, in the oracle's judging and its
search, while a launch's ranks run, while a mutant's judging run goes, while compat-test's runners
run, in the fuzz's judging, in the baseline diff's re-runs, the saver, the report writer); a bug in a
child process of the run (a native worker's own loop, a forked child, a compat runner, a launch's
rank) is planted by a ``sitecustomize`` on the run's PYTHONPATH, which picks the child by its command
line (and, beside them, Paddle's own op raising in a rank: still the case's Paddle error). Checked:
exit 4; exactly one line on stderr, naming the exception, the file its traceback was saved in and
the partial report where a signal writes one (and no traceback); that report there, its first
line ``INTERRUPTED by an internal error (...)``; no process of the run left (every process that
inherited the run's token, found in ``/proc/*/environ``); ``TMPDIR`` holding only the traceback
file.

On the code before this (main at 38f19b2) these fail: parity wrote a report saying only ``RUNNING
or ABORTED`` (with the answers received before the error dropped) and did not name it, oracle and
launch wrote none, mutants' line said nothing of how far it got, compat-test waited for its other
runners to end by themselves, and a RuntimeError of ours in a slice was taken for "backend
unavailable" (exit 3).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from tests.cli_checks import REPO
from tests.helpers import processes_with, skip_if_compiled_unreachable

PLANTED = "planted fault"

#: Run first by the driver: ``fault(after, error)`` raises ``error(PLANTED ...)`` on every call past ``after``.
_DRIVER_HEAD = '''
import os, sys, threading, types
_calls, _lock = [0], threading.Lock()
def fault(after, error=KeyError):
    with _lock:
        _calls[0] += 1
        if _calls[0] > after:
            raise error(f"planted fault after {after} calls")
'''

#: A slice thread (registry / PIR worker) decoding its worker's answers fails after 5 distinct outcomes.
SLICE_DECODE = '''
import pickle
from paddle_spmd_port.native import pool
def loads(data, _loads=pickle.loads):
    obj = _loads(data)
    if not isinstance(obj, dict):  # (the worker's hello: Paddle's version)
        fault(5, ERROR)
    return obj
pool.pickle = types.SimpleNamespace(loads=loads, dumps=pickle.dumps, HIGHEST_PROTOCOL=pickle.HIGHEST_PROTOCOL)
'''

#: The compiled route's slice thread fails on its third batch of replies.
CALLER_DECODE = '''
from paddle_spmd_port.native import compiled
_outcomes_of = compiled.outcomes_of
def outcomes_of(lines):
    fault(2)
    return _outcomes_of(lines)
compiled.outcomes_of = outcomes_of
'''

#: The main thread's comparison fails on its 101st case.
COMPARE = '''
from paddle_spmd_port.parity import cli
_compare = cli.compare
def compare(*args, **kwargs):
    fault(100)
    return _compare(*args, **kwargs)
cli.compare = compare
'''

#: ... and every report write fails too (parity.md is the first file parity/output.py writes).
REPORT_WRITE = COMPARE + '''
from paddle_spmd_port.parity.report import ParityReport
def markdown(self, *args, **kwargs):
    raise OSError("planted: the disk is gone")
assert hasattr(ParityReport, "markdown")  # a fault planted on a name nobody calls would test nothing
ParityReport.markdown = markdown
'''

#: The oracle's judging fails on its 21st call.
JUDGE = '''
from paddle_spmd_port.oracle import cli
_call = cli.Judge.__call__
def call(self, *args, **kwargs):
    fault(20)
    return _call(self, *args, **kwargs)
cli.Judge.__call__ = call
'''

#: The launch's parent fails while it waits for the launcher, once a rank has finished a case.
LAUNCH_WAIT = '''
import glob, subprocess, time
from pathlib import Path
from paddle_spmd_port.launch import launcher
class Popen(subprocess.Popen):
    fired = False
    def wait(self, timeout=None):
        if Popen.fired or timeout is None or timeout < 10:  # (the cleanup's own waits run as they are)
            return super().wait(timeout)
        Popen.fired = True
        deadline = time.monotonic() + 120
        pattern = os.environ["TMPDIR"] + "/*-work/results/rank*.jsonl"
        while time.monotonic() < deadline and not any(Path(f).stat().st_size for f in glob.glob(pattern)):
            time.sleep(0.1)
        fault(0)
launcher.subprocess = types.SimpleNamespace(Popen=Popen, DEVNULL=subprocess.DEVNULL, STDOUT=subprocess.STDOUT,
                                            TimeoutExpired=subprocess.TimeoutExpired)
'''

#: tools/mutants.py fails half a second into its first judging run (the baseline's pytest).
MUTANTS_RUN = '''
import subprocess, time
sys.path.insert(0, REPO + "/tools")
import mutants
class Popen(subprocess.Popen):
    def communicate(self, *args, **kwargs):
        time.sleep(0.5)  # the run is up
        fault(0)
        return super().communicate(*args, **kwargs)
mutants.subprocess = types.SimpleNamespace(Popen=Popen, PIPE=subprocess.PIPE, STDOUT=subprocess.STDOUT,
                                           DEVNULL=subprocess.DEVNULL, TimeoutExpired=subprocess.TimeoutExpired)
sys.exit(mutants.main(sys.argv[1:]))
'''

#: compat-test: the port job's thread fails a second in, while the native job's runner (a stand-in
#: that would take two minutes: a slow test file) is alive.
COMPAT_RUNNER = '''
import time
from paddle_spmd_port.compat import cli
_start = cli.Runners.start
def start(self, cmd, **kwargs):
    if "native" in cmd:
        cmd = [sys.executable, "-c", "import time; time.sleep(120)"]
    return _start(self, cmd, **kwargs)
cli.Runners.start = start
_run_backend = cli.run_backend
def run_backend(path, backend, **kwargs):
    if backend == "port":
        time.sleep(1.0)
        fault(0)
    return _run_backend(path, backend, **kwargs)
cli.run_backend = run_backend
'''


def run_with_fault(tmp_path: Path, fault: str, argv: list[str], error: str = "KeyError",
                   timeout: float = 240, children: str = "") -> tuple[subprocess.CompletedProcess, Path]:
    """Run ``python -m paddle_spmd_port ARGV`` (``fault`` may run the command itself) with ``fault``
    planted; wait until no process of the run is left. Returns the result and the run's TMPDIR.
    ``children``: a ``sitecustomize`` every Python process of the run imports first (it plants a
    fault in the run's child processes, picking them by ``sys.orig_argv``)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    driver = tmp_path / "driver.py"
    driver.write_text(_DRIVER_HEAD + f"REPO = {str(REPO)!r}\nERROR = {error}\n" + textwrap.dedent(fault)
                      + "\nfrom paddle_spmd_port.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    path = [str(REPO)]
    if children:
        shim = tmp_path / "shim"
        shim.mkdir()
        (shim / "sitecustomize.py").write_text(textwrap.dedent(children))
        path.insert(0, str(shim))
    token = f"PSP_INTERNAL_ERROR_TEST_{uuid.uuid4().hex}"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), TMPDIR=str(tmp), **{token: "1"})
    proc = subprocess.run([sys.executable, str(driver), *argv], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while processes_with(token) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = processes_with(token)
    assert not left, f"processes of the run left: {left}\nstderr={proc.stderr[-2000:]}"
    return proc, tmp


def assert_one_line(proc: subprocess.CompletedProcess, tmp: Path, command: str, error: str = "KeyError",
                    theirs: str = "") -> str:
    """Exit 4 and one stderr line naming the planted error and its saved traceback; TMPDIR holds
    nothing else (but what a child names ``theirs*``: not ours to remove). Returns the line."""
    context = f"exit={proc.returncode}\nstderr={proc.stderr[-3000:]}\nstdout={proc.stdout[-1500:]}"
    assert proc.returncode == 4, context
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, context
    line = lines[0]
    assert line.startswith(f"paddle_spmd_port {command}: internal error: {error}: "), context
    assert PLANTED in line and "Traceback" not in proc.stderr, context
    saved = [p for p in tmp.iterdir() if not (theirs and p.name.startswith(theirs))]
    assert len(saved) == 1 and saved[0].suffix == ".traceback", f"temp files left: {saved}"
    assert f"traceback saved in {saved[0]}" in line, context
    assert PLANTED in saved[0].read_text()
    return line


def assert_partial_parity(line: str, report_dir: Path, error: str = "KeyError", swept: bool = False) -> dict:
    """The partial report the line names, ended by the planted error; a group interrupted unless
    the error came after the sweep (``swept``)."""
    assert f"partial report in {report_dir / 'parity.md'}" in line, line
    head = f"INTERRUPTED by an internal error ({error}: "
    md = (report_dir / "parity.md").read_text()
    assert md.startswith(f"**{head}") and PLANTED in md.splitlines()[0], md[:300]
    data = json.loads((report_dir / "parity.json").read_text())
    assert data["status"].startswith(head) and (swept or not data["complete"]), data["status"]
    states = {t["state"] for t in data["rules"].values()}
    assert states == {"done"} if swept else "interrupted" in states, states
    assert not [p.name for p in report_dir.iterdir() if p.name.startswith(".")], "temp files in the report dir"
    return data


def _compared(data: dict) -> int:
    return sum(cov["compared"] for cov in data["coverage"].values())


@pytest.mark.native
def test_parity_a_compiled_slice_failing_writes_the_partial_report(tmp_path):
    skip_if_compiled_unreachable()
    report = tmp_path / "r"
    proc, tmp = run_with_fault(tmp_path, CALLER_DECODE, [
        "parity", "--quiet", "--rules", "layer_norm", "--backend", "compiled", "--max-cases", "2000",
        "--workers", "1", "--report-dir", str(report)])
    data = assert_partial_parity(assert_one_line(proc, tmp, "parity"), report)
    assert 0 < _compared(data) < 2000, "the answers received before the error are compared, the rest are not"


@pytest.mark.native
def test_parity_the_background_groups_slice_failing_writes_the_partial_report(tmp_path):
    # layer_norm_grad's default routes: the compiled group here, the PIR group in the background
    # (parity/cli.py BackgroundGroup), whose slice thread fails and hands its error to the main thread
    skip_if_compiled_unreachable()
    report = tmp_path / "r"
    proc, tmp = run_with_fault(tmp_path, SLICE_DECODE, [
        "parity", "--quiet", "--rules", "layer_norm_grad", "--max-cases", "300", "--workers", "1",
        "--report-dir", str(report)])
    data = assert_partial_parity(assert_one_line(proc, tmp, "parity"), report)
    assert data["rules"]["layer_norm_grad@pir"]["state"] == "interrupted"
    assert data["rules"]["layer_norm_grad@compiled"]["state"] == "done"


@pytest.mark.native
def test_parity_random_a_slice_raising_a_runtime_error_is_exit_4_not_backend_unavailable(tmp_path):
    # --random: the registry group in the background; a RuntimeError of ours was once read as the
    # backend being unavailable (exit 3, "backend unavailable: planted ..." in the report)
    skip_if_compiled_unreachable()
    report = tmp_path / "r"
    proc, tmp = run_with_fault(tmp_path, SLICE_DECODE, [
        "parity", "--quiet", "--rules", "layer_norm,rms_norm_grad", "--random", "300", "--workers", "1",
        "--report-dir", str(report)], error="RuntimeError")
    data = assert_partial_parity(assert_one_line(proc, tmp, "parity", "RuntimeError"), report, "RuntimeError")
    assert not [n for n in data["notes"] if "unavailable" in n], data["notes"]


@pytest.mark.native
def test_parity_the_comparison_failing_in_the_main_thread_writes_the_partial_report(tmp_path):
    skip_if_compiled_unreachable()
    report = tmp_path / "r"
    proc, tmp = run_with_fault(tmp_path, COMPARE, [
        "parity", "--quiet", "--rules", "layer_norm_grad", "--backend", "compiled", "--max-cases", "300",
        "--report-dir", str(report)])
    data = assert_partial_parity(assert_one_line(proc, tmp, "parity"), report)
    assert _compared(data) == 100


@pytest.mark.native
def test_parity_a_partial_report_that_cannot_be_written_still_ends_in_the_one_line(tmp_path):
    skip_if_compiled_unreachable()
    report = tmp_path / "r"
    baseline = tmp_path / "base" / "saved.jsonl.gz"
    baseline.parent.mkdir()
    proc, tmp = run_with_fault(tmp_path, REPORT_WRITE, [
        "parity", "--quiet", "--rules", "layer_norm_grad", "--backend", "compiled", "--max-cases", "300",
        "--save-baseline", str(baseline), "--report-dir", str(report)])
    line = assert_one_line(proc, tmp, "parity")  # the first error, not the failed write's
    assert "the partial report could not be written (OSError: planted: the disk is gone)" in line, line
    assert not (report / "parity.md").exists()
    assert list(baseline.parent.iterdir()) == [], "the baseline's temp file (or a baseline of an unfinished run)"


def test_oracle_judging_failing_writes_the_partial_report(tmp_path):
    report = tmp_path / "r"
    proc, tmp = run_with_fault(tmp_path, JUDGE, [
        "oracle", "--quiet", "--rules", "layer_norm,rms_norm", "--profile", "paddle", "--max-cases", "30",
        "--report-dir", str(report)])
    line = assert_one_line(proc, tmp, "oracle")
    assert f"partial report in {report / 'oracle.md'}" in line, line
    md = (report / "oracle.md").read_text()
    assert md.startswith("INTERRUPTED by an internal error (KeyError: ") and PLANTED in md.splitlines()[0], md[:300]
    assert "layer_norm (partial: 20 of 30 cases), rms_norm (not judged)" in md.splitlines()[0]
    status = json.loads((report / "oracle.json").read_text())["status"]
    assert status.startswith("INTERRUPTED by an internal error (KeyError: "), status


@pytest.mark.native
def test_oracle_native_a_slice_raising_a_runtime_error_is_exit_4_not_unanswered(tmp_path):
    report = tmp_path / "r"
    proc, tmp = run_with_fault(tmp_path, SLICE_DECODE, [
        "oracle", "--quiet", "--rules", "layer_norm", "--profile", "native", "--max-cases", "100", "--workers", "1",
        "--report-dir", str(report)], error="RuntimeError")
    line = assert_one_line(proc, tmp, "oracle", "RuntimeError")
    assert f"partial report in {report / 'oracle.md'}" in line, line
    assert (report / "oracle.md").read_text().startswith("INTERRUPTED by an internal error (RuntimeError: ")


@pytest.mark.multiproc
@pytest.mark.native
def test_launch_failing_while_the_ranks_run_ends_them_and_writes_the_partial_report(tmp_path):
    report = tmp_path / "r"
    proc, tmp = run_with_fault(tmp_path, LAUNCH_WAIT, [
        "launch", "--quiet", "--nproc", "2", "--rules", "p_norm", "--timeout", "120", "--report-dir", str(report)])
    line = assert_one_line(proc, tmp, "launch")
    md = report / "launch-np2.md"
    assert f"partial report in {md}" in line and f"rank logs in {report / 'launch-np2-logs'}" in line, line
    assert md.read_text().startswith("# Real-run report (INTERRUPTED by an internal error (KeyError: ")
    data = json.loads((report / "launch-np2.json").read_text())
    reasons = json.dumps(data)
    assert "not run: interrupted by an internal error (KeyError: " in reasons


#: In each rank of a launch (not the PIR route's process nor a crash probe): the runner's own bookkeeping
#: (recording an observed tensor) fails on its 5th call, in the second case (a case observes 4 tensors).
RANK_OBSERVE = """
import sys
if any(a.endswith("rank_main.py") for a in sys.orig_argv) and "--pir" not in sys.orig_argv \\
        and "--run-predicted-crashes" not in sys.orig_argv:
    from paddle_spmd_port.launch import runner
    _observe, _calls = runner.CaseRun._observe, [0]
    def observe(self, *args, **kwargs):
        _calls[0] += 1
        if _calls[0] > 4:
            raise KeyError("planted fault after 4 calls")
        return _observe(self, *args, **kwargs)
    runner.CaseRun._observe = observe
"""

#: In each rank: Paddle's distributed layer_norm raises (a stand-in put in Paddle's own module, so the
#: runner reaches it as it reaches Paddle's op; the reference on one device runs as it is).
RANK_PADDLE_OP = """
import sys
if any(a.endswith("rank_main.py") for a in sys.orig_argv) and "--pir" not in sys.orig_argv:
    from paddle_spmd_port.launch import runner
    _modules = runner._modules
    def modules(backend):
        found = _modules(backend)
        import paddle.nn.functional as F
        real = F.layer_norm
        def layer_norm(x, *args, **kwargs):
            if x.is_dist():
                raise RuntimeError("planted fault in Paddle's op")
            return real(x, *args, **kwargs)
        F.layer_norm = layer_norm
        return found
    runner._modules = modules
"""


def _layer_norm_cases(path: Path) -> list[str]:
    from paddle_spmd_port.launch.cases import LaunchCase, write_cases

    cases = [LaunchCase(f"c{i}", "layer_norm", (4, 6, 8), (2,), (p,), normalized_shape=(8,))
             for i, p in enumerate(("S(0)", "R", "S(1)"))]
    write_cases(cases, path)
    return [c.case_id for c in cases]


@pytest.mark.multiproc
@pytest.mark.native
def test_launch_our_code_raising_inside_a_rank_is_exit_4_not_a_paddle_error(tmp_path):
    """A real 2-rank launch (free ports, a timeout; the rank logs kept on failure): our runner's own code
    raising in a rank's second case ends the run as an internal error, with the partial report of the case
    before it and the rank's traceback saved. (Before: the case's "Paddle error", an unexpected verdict,
    exit 1, the launch going on with the next case.)"""
    report = tmp_path / "r"
    ids = _layer_norm_cases(tmp_path / "cases.jsonl")
    proc, tmp = run_with_fault(tmp_path, "", [
        "launch", "--quiet", "--nproc", "2", "--cases", str(tmp_path / "cases.jsonl"), "--crash-probes", "0",
        "--timeout", "120", "--report-dir", str(report)], children=RANK_OBSERVE, timeout=300)
    line = assert_one_line(proc, tmp, "launch", "ChildRaised")
    assert "ChildRaised: rank 0 of the launch (case c1) raised KeyError: 'planted fault after 4 calls'" in line, line
    md = report / "launch-np2.md"
    assert f"partial report in {md}" in line and f"rank logs in {report / 'launch-np2-logs'}" in line, line
    assert md.read_text().startswith("# Real-run report (INTERRUPTED by an internal error (ChildRaised: ")
    saved = next(tmp.iterdir()).read_text()
    assert 'raise KeyError("planted fault after 4 calls")' in saved and "in run_distributed" in saved, saved[-2000:]
    data = json.loads((report / "launch-np2.json").read_text())
    by_id = {c["case_id"]: c for c in data["cases"]}
    assert by_id[ids[0]]["verdict"] == "agree", by_id[ids[0]]
    assert "Paddle error" not in {c["verdict"] for c in data["cases"]}
    for cid in ids[1:]:
        assert by_id[cid]["verdict"] == "skipped" and \
            "not run: interrupted by an internal error (ChildRaised: " in by_id[cid]["reasons"][0], by_id[cid]
    logs = report / "launch-np2-logs" / "logs"
    assert any('raise KeyError("planted fault after 4 calls")' in f.read_text(errors="replace")
               for f in logs.glob("workerlog.*")), "the rank's log keeps its traceback"


@pytest.mark.multiproc
@pytest.mark.native
def test_launch_paddles_op_raising_inside_a_rank_is_still_a_paddle_error(tmp_path):
    """The same launch with Paddle's own op raising in the ranks: each case's "Paddle error" (its call
    named), not expected (exit 1), the launch going on to every case; no internal error."""
    report = tmp_path / "r"
    ids = _layer_norm_cases(tmp_path / "cases.jsonl")
    proc, _ = run_with_fault(tmp_path, "", [
        "launch", "--quiet", "--nproc", "2", "--cases", str(tmp_path / "cases.jsonl"), "--crash-probes", "0",
        "--timeout", "120", "--report-dir", str(report)], children=RANK_PADDLE_OP, timeout=300)
    context = f"exit={proc.returncode}\nstderr={proc.stderr[-3000:]}\nstdout={proc.stdout[-1500:]}"
    assert proc.returncode == 1 and "internal error" not in proc.stderr, context
    data = json.loads((report / "launch-np2.json").read_text())
    assert [c["case_id"] for c in data["cases"]] == ids
    for case in data["cases"]:
        assert case["verdict"] == "Paddle error" and not case["expected"], case
        assert case["error"]["stage"] == "forward" and case["error"]["call"] == "F.layer_norm", case["error"]
        assert case["error"]["message"] == "planted fault in Paddle's op", case["error"]
    assert (report / "launch-np2-logs").is_dir(), "findings keep the rank logs"


def test_mutants_failing_during_a_judging_run_ends_it_and_says_how_far_it_got(tmp_path):
    proc, tmp = run_with_fault(tmp_path, MUTANTS_RUN, ["--only", "compare-ignore-message"])
    # (pytest, the judging run, keeps its own basetemp pytest-of-USER in TMPDIR, as on every run)
    line = assert_one_line(proc, tmp, "mutants", theirs="pytest-of-")
    assert line.endswith("; 0 of 1 mutants judged)"), line


def test_compat_test_failing_ends_the_runners_at_once(tmp_path):
    # (before: the error waited for every other runner to end by itself, here its --timeout of 100 s)
    started = time.monotonic()
    proc, tmp = run_with_fault(tmp_path, COMPAT_RUNNER, [
        "compat-test", "--quiet", "--against", "both", "--jobs", "2", "--timeout", "100",
        str(REPO / "tests" / "paddle_style" / "test_p_norm_rule.py")], timeout=60)
    assert_one_line(proc, tmp, "compat-test")
    assert time.monotonic() - started < 30, "the runners were left to finish"


@pytest.mark.native
def test_infer_a_slice_raising_a_runtime_error_is_exit_4_not_backend_unavailable(tmp_path):
    # (infer writes no report: exit 4 and its one line, as for any internal error)
    proc, tmp = run_with_fault(tmp_path, SLICE_DECODE.replace("fault(5, ERROR)", "fault(0, ERROR)"), [
        "infer", "layer_norm", "--backend", "registry", "--mesh", "2", "--x-shape", "4,8", "--x-mapping", "0,-1"],
        error="RuntimeError")
    assert_one_line(proc, tmp, "infer", "RuntimeError")


#: The baseline diff's cases file cannot be written (a writer of ours failing after every case was compared).
DIFF_WRITE = '''
from paddle_spmd_port.parity import baseline
assert hasattr(baseline.Diff, "write_cases")
def write_cases(self, path):
    fault(0)
baseline.Diff.write_cases = write_cases
'''


@pytest.mark.native
def test_parity_a_writer_failing_after_the_last_case_rewrites_the_report_as_ended_by_it(tmp_path):
    # every case compared, then the diff's writer fails: the report must not say PASS beside an exit 4
    skip_if_compiled_unreachable()
    saved, report = tmp_path / "saved.jsonl.gz", tmp_path / "r"
    argv = ["parity", "--quiet", "--rules", "layer_norm_grad", "--backend", "compiled", "--max-cases", "60",
            "--report-dir", str(report)]
    first = subprocess.run([sys.executable, "-m", "paddle_spmd_port", *argv, "--save-baseline", str(saved)],
                           cwd=REPO, capture_output=True, text=True, timeout=240)
    assert first.returncode == 0, first.stderr[-2000:]
    proc, tmp = run_with_fault(tmp_path, DIFF_WRITE, [*argv, "--replace-report", "--baseline", str(saved)])
    line = assert_one_line(proc, tmp, "parity")  # (TMPDIR: the diff's spill files are gone with it)
    assert f"partial report in {report / 'parity.md'}" in line, line
    assert "the baseline diff could not be written (KeyError: " in line and line.count(PLANTED) == 2, line
    md = (report / "parity.md").read_text()
    assert md.startswith("**INTERRUPTED by an internal error (KeyError: ") and PLANTED in md.splitlines()[0], md[:300]
    data = json.loads((report / "parity.json").read_text())
    assert data["status"].startswith("INTERRUPTED by an internal error (KeyError: ")
    assert _compared(data) == 60  # every case was compared before the error
    assert not [p.name for p in report.iterdir() if p.name.startswith(".")], "temp files in the report dir"
    assert saved.is_file() and not [p for p in tmp_path.iterdir() if p.name.startswith(".saved")]


#: In a native worker (registry / PIR route), pickling its third distinct outcome raises: a bug in
#: the worker's own loop, not a crash of Paddle's.
WORKER_PICKLE = '''
import os, sys
if "paddle_spmd_port.native.worker" in sys.orig_argv:
    from paddle_spmd_port.outcome import Outcome
    WORKER, calls = os.getpid(), [0]
    def reduce(self, protocol):
        if os.getpid() == WORKER:  # (the worker itself, not a forked child)
            calls[0] += 1
            if calls[0] > 2:
                raise KeyError("planted fault after 2 calls")
        return object.__reduce_ex__(self, protocol)
    Outcome.__reduce_ex__ = reduce
'''

#: Every case runs in a forked child (the pool marks them all crash-prone) ...
ISOLATE_ALL = '''
from paddle_spmd_port.native import pool
pool.isolates = lambda backend: (lambda case: True)
'''
#: ... and a forked child pickling its outcome raises (the worker's own pickling runs as it is).
CHILD_PICKLE = '''
import os, sys
if "paddle_spmd_port.native.worker" in sys.orig_argv:
    from paddle_spmd_port.outcome import Outcome
    WORKER = os.getpid()
    def reduce(self, protocol):
        if os.getpid() != WORKER:
            raise KeyError("planted fault in a forked child")
        return object.__reduce_ex__(self, protocol)
    Outcome.__reduce_ex__ = reduce
'''


@pytest.mark.native
@pytest.mark.parametrize("route", ["registry", "pir"])
def test_parity_a_native_worker_raising_is_exit_4_not_a_native_crash(tmp_path, route):
    # (before: each such death was the case's "native crash: exit code 1", a finding about Paddle,
    # the worker restarted, and after 3 in a row the rest "not run": exit 3)
    report = tmp_path / "r"
    proc, tmp = run_with_fault(tmp_path, "", [
        "parity", "--quiet", "--rules", "layer_norm", "--backend", route, "--max-cases", "200", "--workers", "1",
        "--allow-uncompared", "--report-dir", str(report)], children=WORKER_PICKLE)
    line = assert_one_line(proc, tmp, "parity", "WorkerRaised")
    assert f"the {route} worker raised KeyError: " in line, line
    data = assert_partial_parity(line, report, "WorkerRaised")
    assert all(t["verdicts"]["native-crash"] == 0 for t in data["rules"].values()), data["rules"]
    saved = next(tmp.iterdir()).read_text()  # (the worker's own traceback, with the line that raised)
    assert 'raise KeyError("planted fault after 2 calls")' in saved, saved[-2000:]


@pytest.mark.native
def test_parity_a_forked_childs_own_code_raising_is_exit_4_not_a_native_crash(tmp_path):
    # (before: the child's exit code 3 was the case's "native crash", a finding about Paddle)
    report = tmp_path / "r"
    proc, tmp = run_with_fault(tmp_path, ISOLATE_ALL, [
        "parity", "--quiet", "--rules", "layer_norm", "--backend", "registry", "--max-cases", "50",
        "--workers", "1", "--report-dir", str(report)], children=CHILD_PICKLE)
    line = assert_one_line(proc, tmp, "parity", "WorkerRaised")
    assert "the registry worker raised " in line, line
    assert "ChildFailed: a forked child's own code raised KeyError: " in line, line
    data = assert_partial_parity(line, report, "WorkerRaised")
    assert all(t["verdicts"]["native-crash"] == 0 for t in data["rules"].values()), data["rules"]
    assert 'raise KeyError("planted fault in a forked child")' in next(tmp.iterdir()).read_text()


#: tools/fuzz.py: its judging fails on the 21st example (a bug of the fuzz's own, not a rule's exception).
FUZZ_JUDGE = '''
sys.path.insert(0, REPO + "/tools")
import fuzz
_judge = fuzz.judge
def judge(call):
    fault(20)
    return _judge(call)
fuzz.judge = judge
sys.exit(fuzz.main(sys.argv[1:]))
'''


@pytest.mark.parametrize("engine", ["random", "hypothesis"])
def test_fuzz_failing_prints_the_counts_judged_so_far(tmp_path, engine):
    # (before: exit 4 and its line, but nothing of the 20 examples judged: a signal printed them)
    out = tmp_path / "counts.json"
    proc, tmp = run_with_fault(tmp_path, FUZZ_JUDGE, ["--examples", "1000", "--engine", engine, "--json", str(out)])
    line = assert_one_line(proc, tmp, "fuzz")
    assert line.endswith("; partial report on stdout)"), line
    head = f"INTERRUPTED by an internal error (KeyError: '{PLANTED} after 20 calls'): fuzz: 20 of 1,000 examples"
    assert proc.stdout.startswith(head), proc.stdout[:500]
    assert "property violations: 0" in proc.stdout
    assert not out.exists()  # (a part cut short is no part to merge)


#: The pool's second run (the baseline diff's re-run of a changed invalid input) raises a RuntimeError of ours.
RERUN = '''
from paddle_spmd_port.native import pool
_run_native = pool.run_native
def run_native(*args, **kwargs):
    fault(1, ERROR)
    return _run_native(*args, **kwargs)
pool.run_native = run_native
'''


@pytest.mark.native
def test_parity_the_diffs_re_run_raising_a_runtime_error_is_exit_4_not_backend_unavailable(tmp_path):
    # (before: the re-runs were "not run: backend unavailable: planted ...", no evidence either way, and
    # the run passed: exit 0)
    skip_if_compiled_unreachable()
    from paddle_spmd_port.case import Case
    from paddle_spmd_port.outcome import ErrorInfo, Outcome
    from paddle_spmd_port.validity import input_problem

    saved, report = tmp_path / "saved.jsonl.gz", tmp_path / "r"
    argv = ["parity", "--quiet", "--rules", "rms_norm", "--backend", "compiled", "--sample", "5",
            "--report-dir", str(report)]
    first = subprocess.run([sys.executable, "-m", "paddle_spmd_port", *argv, "--save-baseline", str(saved)],
                           cwd=REPO, capture_output=True, text=True, timeout=240)
    assert first.returncode == 0, first.stderr[-2000:]
    rows = [json.loads(line) for line in gzip.open(saved, "rt")]
    row = next(r for r in rows[1:] if input_problem(Case.from_json(r["case"])) is not None)  # re-run if changed
    row["native"] = Outcome(error=ErrorInfo("ValueError", "stored otherwise")).to_json()
    doctored = tmp_path / "doctored.jsonl.gz"
    with gzip.open(doctored, "wt") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)
    proc, tmp = run_with_fault(tmp_path, RERUN, [*argv, "--replace-report", "--baseline", str(doctored)],
                               error="RuntimeError")
    line = assert_one_line(proc, tmp, "parity", "RuntimeError")
    data = assert_partial_parity(line, report, "RuntimeError", swept=True)
    assert not [n for n in data["notes"] if "unavailable" in n], data["notes"]
    assert _compared(data) == len(rows) - 1  # (every case compared before the re-run)


#: The baseline saver fails copying its rows into place (after every case was compared).
SAVER_FINISH = '''
import shutil
from paddle_spmd_port.parity import baseline
def copyfileobj(*args, **kwargs):
    fault(0)
baseline.shutil = types.SimpleNamespace(copyfileobj=copyfileobj)
'''


@pytest.mark.native
def test_parity_the_baseline_saver_failing_rewrites_the_report_and_leaves_no_baseline(tmp_path):
    skip_if_compiled_unreachable()
    saved, report = tmp_path / "base" / "saved.jsonl.gz", tmp_path / "r"
    proc, tmp = run_with_fault(tmp_path, SAVER_FINISH, [
        "parity", "--quiet", "--rules", "rms_norm", "--backend", "compiled", "--sample", "5",
        "--save-baseline", str(saved), "--report-dir", str(report)])
    data = assert_partial_parity(assert_one_line(proc, tmp, "parity"), report, swept=True)
    assert _compared(data) > 0
    assert list(saved.parent.iterdir()) == [], "a baseline (or its temp files) of a save that failed"


#: oracle --search: the search of its 4th case fails.
SEARCH_CASE = '''
from paddle_spmd_port.oracle import search_report
_search_case = search_report.search_case
def search_case(*args, **kwargs):
    fault(3)
    return _search_case(*args, **kwargs)
search_report.search_case = search_case
'''


def test_oracle_search_failing_writes_the_partial_report(tmp_path):
    report = tmp_path / "r"
    proc, tmp = run_with_fault(tmp_path, SEARCH_CASE, [
        "oracle", "--search", "--quiet", "--rules", "rms_norm,layer_norm", "--profile", "paddle", "--sample", "6",
        "--report-dir", str(report)])
    line = assert_one_line(proc, tmp, "oracle")
    assert f"partial report in {report / 'search.md'}" in line, line
    first = (report / "search.md").read_text().splitlines()[0]
    assert first.startswith("INTERRUPTED by an internal error (KeyError: ") and PLANTED in first, first
    assert first.endswith("unfinished rules: rms_norm (partial), layer_norm (not started)"), first
    status = json.loads((report / "search.json").read_text())["status"]
    assert status.startswith("INTERRUPTED by an internal error (KeyError: "), status


#: compat-test's runner (a child) fails writing its report: its own code, not the test file's.
COMPAT_RUNNER_WRITE = '''
import sys
if "paddle_spmd_port.compat.runner" in sys.orig_argv:
    from paddle_spmd_port import reporting
    def write_json(*args, **kwargs):
        raise KeyError("planted fault in the runner")
    reporting.write_json = write_json
'''


def test_compat_test_a_runner_raising_is_exit_4_not_the_files_crash(tmp_path):
    # (before: the file's status was "crash: runner exit code 1", a finding: exit 1)
    out = tmp_path / "compat.json"
    proc, tmp = run_with_fault(tmp_path, "", [
        "compat-test", "--quiet", "--against", "port", "--json", str(out),
        str(REPO / "tests" / "paddle_style" / "test_p_norm_rule.py")], children=COMPAT_RUNNER_WRITE)
    line = assert_one_line(proc, tmp, "compat-test", "RunnerRaised")
    assert "the port runner of test_p_norm_rule.py raised KeyError: 'planted fault in the runner'" in line, line
    assert 'raise KeyError("planted fault in the runner")' in next(tmp.iterdir()).read_text()
    assert f"partial report in stdout and {out}" in line, line
    assert json.loads(out.read_text())["interrupted"].startswith("an internal error (RunnerRaised: ")
    assert proc.stdout.startswith("INTERRUPTED by an internal error (RunnerRaised: "), proc.stdout[:300]


#: The report writer fails once, on the HTML page, after parity.json and parity.md were written as PASS.
PAGE_WRITE_ONCE = '''
from paddle_spmd_port.parity import output
_parity_page = output.parity_page
def parity_page(*args, **kwargs):
    if not _calls[0]:
        _calls[0] += 1
        raise KeyError("planted fault in the page")
    return _parity_page(*args, **kwargs)
output.parity_page = parity_page
'''


@pytest.mark.native
def test_parity_the_report_writer_failing_after_a_pass_rewrites_every_file_as_ended_by_it(tmp_path):
    skip_if_compiled_unreachable()
    report, junit = tmp_path / "r", tmp_path / "j" / "parity.xml"
    proc, tmp = run_with_fault(tmp_path, PAGE_WRITE_ONCE, [
        "parity", "--quiet", "--rules", "rms_norm", "--backend", "compiled", "--sample", "5",
        "--junit", str(junit), "--report-dir", str(report)])
    data = assert_partial_parity(assert_one_line(proc, tmp, "parity"), report, swept=True)
    assert _compared(data) > 0
    assert "INTERRUPTED by an internal error (KeyError: " in (report / "parity.html").read_text()
    assert "INTERRUPTED by an internal error (KeyError: " in junit.read_text()


def test_a_worker_ending_on_a_traceback_without_its_frame_is_ours_and_an_exit_code_alone_a_crash():
    # a worker whose RAISED frame never came (an exception outside its guarded part, or the frame's own
    # write failing): Python's exit code 1 and traceback say the same; an exit code alone stays the case's crash
    import threading

    from paddle_spmd_port.native.pool import WorkerRaised, _Slice

    outcomes: list = [None] * 3
    part = _Slice("registry", [None] * 3, 0, 3, outcomes, 5.0, lambda n: None, {"version": "x"},
                  threading.Event(), [0] * 3)
    stderr = "W1207 a log line\nTraceback (most recent call last):\n  File \"w.py\", line 1\nKeyError: 'planted'\n"
    with pytest.raises(WorkerRaised, match="the registry worker raised KeyError: 'planted'") as raised:
        part._worker_failed(1, stderr, 1, hung=False)
    assert str(raised.value.__cause__).startswith("Traceback (most recent call last):")
    assert outcomes == [None] * 3
    assert part._worker_failed(1, "I1207 no traceback here\n", 1, hung=False).startswith("worker died: exit code 1")
    assert outcomes[1].crash.startswith("exit code 1")


@pytest.mark.native
def test_oracle_native_a_worker_raising_is_exit_4_not_paddles_crash(tmp_path):
    report = tmp_path / "r"
    proc, tmp = run_with_fault(tmp_path, "", [
        "oracle", "--quiet", "--rules", "layer_norm", "--profile", "native", "--max-cases", "100", "--workers", "1",
        "--report-dir", str(report)], children=WORKER_PICKLE)
    line = assert_one_line(proc, tmp, "oracle", "WorkerRaised")
    assert f"partial report in {report / 'oracle.md'}" in line and "worker raised KeyError: " in line, line
    assert (report / "oracle.md").read_text().startswith("INTERRUPTED by an internal error (WorkerRaised: ")


def test_compat_test_a_paddle_that_does_not_import_is_the_native_backend_unavailable_not_ours(tmp_path):
    # the other side of the runner's exit 4: Paddle failing to import in the native runner is no error of
    # ours but a backend that cannot run the file (exit 3, said why); before: the file's "crash" (exit 1)
    fake = tmp_path / "broken" / "paddle"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('this paddle is broken')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(fake.parent), str(REPO)]))
    proc = subprocess.run([sys.executable, "-m", "paddle_spmd_port", "compat-test", "--against", "native",
                           str(REPO / "tests" / "paddle_style" / "test_p_norm_rule.py")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "native backend unavailable: import paddle failed: ImportError: this paddle is broken" in proc.stdout
