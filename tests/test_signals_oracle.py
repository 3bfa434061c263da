"""SIGINT/SIGTERM on the real commands: one line on stderr, no traceback, exit 130/143, no process
left behind; ``oracle`` writes the report of what it judged so far, marked as partial."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli_checks import REPO

SIGNALS = [signal.SIGINT, signal.SIGTERM]
IDS = [s.name for s in SIGNALS]


def start(argv: list[str], tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """The command in a session of its own, stderr into a file (read while it runs)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    err = tmp_path / "stderr.txt"
    with open(err, "w") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "paddle_spmd_port", *argv], cwd=tmp_path, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=fh, text=True,
                                start_new_session=True)
    return proc, err


def wait_for(ready, proc: subprocess.Popen, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            pytest.fail(f"the command ended (exit {proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"no {what} within {timeout:g} s")
        time.sleep(0.05)


def finish(proc: subprocess.Popen, timeout: float = 60.0) -> tuple[int, str]:
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"still running {timeout:g} s after the signal")
    return proc.returncode, out


def leftovers(session: int, mention: Path) -> list[str]:
    """Live processes of the command's session, or whose command line mentions ``mention``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # state ppid pgrp session ...
        if fields[0] == "Z":
            continue
        if int(fields[3]) == session or str(mention) in cmdline:
            found.append(f"{entry.name}: {cmdline}")
    return found


def one_line(stderr: str, sig: signal.Signals, progress_prefix: str | tuple[str, ...] = "") -> str:
    assert "Traceback" not in stderr, stderr
    lines = [ln for ln in stderr.splitlines()
             if ln.strip() and not (progress_prefix and ln.startswith(progress_prefix))]
    assert len(lines) == 1, stderr
    assert f"interrupted by {sig.name}" in lines[0], stderr
    return lines[0]


@pytest.mark.parametrize("sig", SIGNALS, ids=IDS)
def test_oracle_interrupted_writes_a_partial_report(sig: signal.Signals, tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    proc, err = start(["oracle", "--rules", "batch_norm_static,batch_norm,layer_norm",
                       "--report-dir", str(reports)], tmp_path)
    wait_for(lambda: "[oracle] batch_norm_static:" in err.read_text(), proc, "first rule judged")
    proc.send_signal(sig)
    code, out = finish(proc)
    stderr = err.read_text()
    assert code == 128 + sig, stderr
    line = one_line(stderr, sig, progress_prefix=("[oracle] ", "paddle_spmd_port oracle: judging "))  # + opening line
    assert str(reports / "oracle.md") in line
    assert out == ""
    assert leftovers(proc.pid, tmp_path) == []

    md = (reports / "oracle.md").read_text()
    first = md.splitlines()[0]
    assert first.startswith(f"INTERRUPTED by {sig.name}") and "partial" in first, first
    assert "batch_norm (" in first and "layer_norm (not judged)" in first, first
    assert "| batch_norm_static |" in md  # what was judged is in the tables
    summary = json.loads((reports / "oracle.json").read_text())
    assert summary["status"] == f"INTERRUPTED by {sig.name}: partial"
    states = {rule: s["status"] for rule, s in summary["rules"].items()}
    assert states["batch_norm_static"] == "done" and states["layer_norm"] == "not started"
    assert states["batch_norm"] in ("partial", "not started")
    judged = summary["rules"]["batch_norm_static"]["judged"]
    assert judged > 0 and summary["profiles"]["paddle"]["batch_norm_static"]["cases"] == judged
    with gzip.open(reports / "oracle-cases.jsonl.gz", "rt") as fh:
        header = json.loads(fh.readline())
    assert header["status"] == summary["status"] and header["rules"] == summary["rules"]
    assert sorted(p.name for p in reports.iterdir() if p.name.startswith(".")) == []  # no temp file left


SLOW_TEST = """
import os, tempfile, time, unittest
from pathlib import Path


class Slow(unittest.TestCase):
    def test_slow(self):
        Path(__file__).with_suffix(".started").write_text(f"{os.getpid()} {tempfile.gettempdir()}")
        time.sleep(120)
"""


FAST_TEST = """
import unittest


class Fast(unittest.TestCase):
    def test_fast(self):
        pass
"""


@pytest.mark.parametrize("sig", SIGNALS, ids=IDS)
def test_compat_test_interrupted_ends_its_runners(sig: signal.Signals, tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    for name in ("a", "b", "c"):  # two run at a time: one waits in the queue
        (tests / f"test_{name}.py").write_text(SLOW_TEST)
    (tests / "test_0.py").write_text(FAST_TEST)  # runs first, and is done by the signal: the partial report's
    report = tmp_path / "report.json"
    proc, err = start(["compat-test", str(tests), "--against", "port", "--shim", "--jobs", "2", "--quiet",
                       "--json", str(report)], tmp_path)
    wait_for(lambda: len(list(tests.glob("*.started"))) == 2, proc, "two runners at work")
    runners = [marker.read_text().split(" ", 1) for marker in tests.glob("*.started")]
    try:
        proc.send_signal(sig)
        code, out = finish(proc)
        stderr = err.read_text()
        assert code == 128 + sig, stderr
        one_line(stderr, sig)
        assert leftovers(proc.pid, tmp_path) == []
        for pid, tmp in runners:
            assert not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z"
            assert not Path(tmp).exists()  # the runner's temp dir (its cwd, the shim's package) is removed
        assert len(list(tests.glob("*.started"))) == 2  # the queued file never started
        # the partial report: the file finished, under INTERRUPTED, on stdout and in --json
        assert out.startswith(f"INTERRUPTED by {sig.name}: 1 of 4 file(s) run on every backend"), out
        assert "| INTERRUPTED" in out and "test_slow" not in out
        partial = json.loads(report.read_text())
        assert partial["interrupted"] == sig.name and partial["ok"] is False
        assert [Path(f["path"]).name for f in partial["files"]] == ["test_0.py"]
    finally:  # a failing check leaves no sleeping runner behind
        for pid, _ in runners:
            try:
                if str(tmp_path).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():  # still our runner
                    os.kill(int(pid), signal.SIGKILL)
            except (OSError, ProcessLookupError):
                pass
