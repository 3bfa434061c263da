"""SIGINT / SIGTERM during a real ``parity`` run with native workers alive.

Checked: exit 130 / 143, one line on stderr and no traceback, no process of the run left (every
process that inherited the run's token), no temp file left, and a partial report whose first line
says it was interrupted, with the unfinished groups marked.
"""

from __future__ import annotations

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

pytestmark = [pytest.mark.native]


def processes_with(token: str) -> list[int]:
    """Live, non-zombie processes whose environment carries ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if token.encode() not in (entry / "environ").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.parametrize(("sig", "backend", "code"), [
    pytest.param(signal.SIGINT, "compiled", 130, id="SIGINT-compiled"),
    pytest.param(signal.SIGTERM, "compiled", 143, id="SIGTERM-compiled"),
    pytest.param(signal.SIGTERM, "pir", 143, id="SIGTERM-pir"),
    # each rule's default routes: the PIR group runs alongside the compiled one (parity/cli.py's BackgroundGroup)
    pytest.param(signal.SIGTERM, None, 143, id="SIGTERM-default-routes"),
])
def test_signal_ends_workers_and_writes_the_partial_report(tmp_path, sig, backend, code):
    token = f"PSP_SIGNAL_TEST_{uuid.uuid4().hex}"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    report_dir = tmp_path / "r"
    env = dict(os.environ, PYTHONPATH=str(REPO), TMPDIR=str(tmp), **{token: "1"})
    proc = subprocess.Popen(
        [sys.executable, "-m", "paddle_spmd_port", "parity", "--quiet", "--rules", "batch_norm_grad,layer_norm_grad",
         *(["--backend", backend] if backend else []), "--report-dir", str(report_dir)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        # workers alive = more processes with the token than the parity process itself
        wait_for(lambda: len(processes_with(token)) >= 3, 90, "native workers to start")
        time.sleep(1.5)  # let them answer some cases
        alive_before = processes_with(token)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    context = f"exit={proc.returncode}\nstderr={err[-3000:]}\nstdout={out[-2000:]}"
    assert proc.returncode == code, context
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines == [f"parity: interrupted by {sig.name}; partial report in {report_dir / 'parity.md'}"], context
    assert "Traceback" not in err
    wait_for(lambda: not processes_with(token), 10, f"every process of the run to end (had {alive_before})")
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
