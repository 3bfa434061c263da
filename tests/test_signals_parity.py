"""SIGINT / SIGTERM during a real ``parity`` run with native workers alive.

Checked: exit 130 / 143, one line on stderr and no traceback, no process of the run left (every
process that inherited the run's token), every worker the run started ended (and reaped) by the
run itself before it exited, no temp file left, and a partial report whose first line says it was
interrupted, with the unfinished groups marked (with ``--baseline``: the diff's baseline.md,
baseline.json and baseline-cases.jsonl.gz too, the first two saying it was interrupted).

Why the second check: a worker the run forgets to stop dies anyway soon after the run exits (its
next write hits a closed pipe), so "nothing left afterwards" cannot tell the two apart. The test
process becomes a child subreaper (Linux ``prctl``) while the run goes: a worker still alive when
the run exits is then handed to the test process, which sees it as its own child.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.cli_checks import REPO
from tests.helpers import processes_with, skip_if_compiled_unreachable

pytestmark = [pytest.mark.native]


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def parent_of(pid: int) -> int | None:
    try:
        return int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


@contextlib.contextmanager
def adopting_orphans():
    """While the block runs, orphaned descendants of this process become its children (instead of
    init's), so the test can see which of the run's workers outlived it."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        pytest.skip(f"prctl(PR_SET_CHILD_SUBREAPER) failed: errno {ctypes.get_errno()}")
    try:
        yield
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


#: what the workers of each route run (in their command line), and the routes each test run has
WORKER_MARK = {"compiled": b"spmd_caller", "pir": b"--backend\x00pir"}
ROUTES_RUN = {"compiled": ("compiled",), "pir": ("pir",), None: ("compiled", "pir")}  # None: the default routes


def workers_of(pid: int, token: str) -> dict[int, bytes]:
    """The live children of ``pid`` that carry ``token``, with their command lines."""
    found = {}
    for child in processes_with(token):
        if parent_of(child) == pid:
            with contextlib.suppress(OSError):
                found[child] = (Path("/proc") / str(child) / "cmdline").read_bytes()
    return found


def adopted(pids: list[int]) -> list[int]:
    """Those of ``pids`` that are now children of this process (reaped here on the way)."""
    found = []
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not ours: its parent reaped it
            continue
        found.append(pid)
    return found


def _empty_baseline(path: Path, argv: list[str]) -> Path:
    """A baseline of ``argv``'s selection holding no row (every case of the diff: not in the baseline)."""
    from paddle_spmd_port.parity.baseline import Saver
    from paddle_spmd_port.parity.cli import parse_args

    saver = Saver(path)
    saver.finish({"version": "3.3.1", "commit": "0"}, parse_args(argv).selection)
    return path


@pytest.mark.parametrize(("sig", "backend", "code"), [
    pytest.param(signal.SIGINT, "compiled", 130, id="SIGINT-compiled"),
    pytest.param(signal.SIGTERM, "compiled", 143, id="SIGTERM-compiled"),
    # (with --baseline: the diff's partial report is written too, its cases file through a temp file)
    pytest.param(signal.SIGTERM, "pir", 143, id="SIGTERM-pir-baseline"),
    # each rule's default routes: the PIR group runs alongside the compiled one (parity/cli.py's BackgroundGroup)
    pytest.param(signal.SIGTERM, None, 143, id="SIGTERM-default-routes"),
])
def test_signal_ends_workers_and_writes_the_partial_report(tmp_path, sig, backend, code):
    if "compiled" in ROUTES_RUN[backend]:
        skip_if_compiled_unreachable()  # no compiled caller starts: nothing of that route to interrupt
    token = f"PSP_SIGNAL_TEST_{uuid.uuid4().hex}"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    report_dir = tmp_path / "r"
    env = dict(os.environ, PYTHONPATH=str(REPO), TMPDIR=str(tmp), **{token: "1"})
    # compiled alone: ~118k grid cases, ~9 s of a quiet machine, so the signal (a few seconds after the
    # callers start) finds cases not yet run however fast or loaded the machine (two rules, 6 s in all, once
    # finished before it on a loaded CI machine); a run with the PIR route takes minutes on two rules
    rules = "batch_norm_grad,layer_norm_grad" + (",batch_norm,layer_norm" if backend == "compiled" else "")
    argv = ["--quiet", "--rules", rules, *(["--backend", backend] if backend else []),
            "--report-dir", str(report_dir)]
    baseline = backend == "pir"
    if baseline:
        argv += ["--baseline", str(_empty_baseline(tmp_path / "base.jsonl.gz", argv))]
    with adopting_orphans():
        proc = subprocess.Popen(
            [sys.executable, "-m", "paddle_spmd_port", "parity", *argv],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        try:
            # every route of the run has its workers up (the PIR group's start later than the compiled callers)
            marks = [WORKER_MARK[route] for route in ROUTES_RUN[backend]]
            wait_for(lambda: all(any(m in cmd for cmd in workers_of(proc.pid, token).values()) for m in marks), 90,
                     f"the workers of {ROUTES_RUN[backend]} to start")
            time.sleep(1.5)  # let them answer some cases
            alive_before = processes_with(token)
            workers = list(workers_of(proc.pid, token))
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        outlived = adopted(workers)  # the run's own workers that were still alive when it exited
        wait_for(lambda: not processes_with(token), 10, f"every process of the run to end (had {alive_before})")
        adopted(alive_before)  # reap what else came to this process (a worker's fork server, ...)
    context = f"exit={proc.returncode}\nstderr={err[-3000:]}\nstdout={out[-2000:]}"
    assert proc.returncode == code, context
    lines = [ln for ln in err.splitlines() if ln.strip()]
    want = f"paddle_spmd_port parity: interrupted by {sig.name}; partial report in {report_dir / 'parity.md'}"
    assert lines == [want], context
    assert "Traceback" not in err
    assert workers, f"no worker of the run seen among {alive_before}"
    assert outlived == [], f"workers {outlived} of {workers} were still alive when the run exited"
    assert list(tmp.iterdir()) == [], "temp files left behind"
    md = (report_dir / "parity.md").read_text()
    assert md.startswith(f"**INTERRUPTED by {sig.name}: partial report;"), md[:300]
    data = json.loads((report_dir / "parity.json").read_text())
    assert data["interrupted"] == sig.name and not data["complete"]
    states = {key: t["state"] for key, t in data["rules"].items()}
    assert "done" not in states.values() or len(set(states.values())) > 1, states
    assert any(s == "interrupted" for s in states.values()), states
    reasons = [why for cov in data["coverage"].values() for why in cov["uncompared_reasons"]]
    assert f"not run: interrupted by {sig.name}" in reasons
    assert not [p.name for p in report_dir.iterdir() if p.name.startswith(".")], "temp files left in the report dir"
    if baseline:
        summary = json.loads((report_dir / "baseline.json").read_text())
        assert summary["status"].startswith(f"INTERRUPTED by {sig.name}"), summary["status"]
        assert (report_dir / "baseline.md").read_text().startswith(f"**INTERRUPTED by {sig.name}")
        assert (report_dir / summary["cases_file"]).is_file()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_the_cases_are_drawn_still_writes_the_partial_report(tmp_path, sig):
    # (it used to end with no report at all: the handler that writes it starts after the setup)
    report_dir = tmp_path / "r"
    report_dir.mkdir()
    (report_dir / "parity-cases.jsonl.gz").write_bytes(b"an earlier run's rows")
    proc = subprocess.Popen(
        [sys.executable, "-m", "paddle_spmd_port", "parity", "--random", "3000", "--workers", "1", "--report-dir",
         str(report_dir), "--replace-report"], cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(REPO)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        assert proc.stderr is not None
        opening = proc.stderr.readline()  # printed as the drawing starts: a signal now lands in the setup
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert opening.startswith("paddle_spmd_port parity: "), opening
    assert proc.returncode == 128 + sig, err
    assert err.splitlines()[-1] == (f"paddle_spmd_port parity: interrupted by {sig.name}; partial report in "
                                    f"{report_dir / 'parity.md'}"), err
    assert "Traceback" not in err
    data = json.loads((report_dir / "parity.json").read_text())
    assert data["interrupted"] == sig.name and not data["complete"] and data["status"].startswith("INTERRUPTED")
    assert any("nothing was compared" in note for note in data["notes"]), data["notes"]
    assert (report_dir / "parity.md").read_text().startswith(f"**INTERRUPTED by {sig.name}: partial report;")
    assert (report_dir / "parity-cases.jsonl.gz").read_bytes() != b"an earlier run's rows"


def test_a_signal_while_the_callers_start_ends_and_reaps_every_program(monkeypatch):
    """A signal that lands while the pool is still starting its programs (on a loaded machine the
    test above can send it then): the run still ends by the signal, not by an error of ours (joining
    a slice thread never started), and every program started is ended and reaped, none left to outlive
    the run. Here the signal is sent from inside the first program's start."""
    skip_if_compiled_unreachable()
    from paddle_spmd_port.native import compiled, pool
    from paddle_spmd_port.parity.random_cases import random_cases
    from paddle_spmd_port.runctl import signals

    started = []
    real = compiled.start_program

    def start_and_signal(*args, **kw):
        proc = real(*args, **kw)
        started.append(proc)
        if len(started) == 1:
            os.kill(os.getpid(), signal.SIGTERM)
        return proc

    monkeypatch.setattr(compiled, "start_program", start_and_signal)
    monkeypatch.setattr(signals, "_FIRED", [])  # (the process-wide "first signal" record, this test's own)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with pytest.raises(signals.Interrupted), signals.signals_raise():
            pool.run_native(random_cases("layer_norm_grad", 400, seed=1), backend="compiled", workers=2)
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    assert len(started) == 2, started  # both slices' programs started before the signal was raised
    assert all(p.returncode is not None for p in started), [p.pid for p in started if p.returncode is None]
