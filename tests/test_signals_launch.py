"""SIGINT / SIGTERM during a real ``python -m paddle_spmd_port launch --nproc 2``.

Each test starts the command in a subprocess with its own ``--report-dir`` and its own ``TMPDIR``
(both under ``tmp_path``), waits until the ranks are alive and have finished a case (or, for the
crash probes, until a probe process runs), sends the signal and checks: exit 130 / 143, exactly
one line on stderr and no traceback, no process of the run left (found by the launch token in
``/proc/*/environ``, by the job id on command lines and by parent pid), ``TMPDIR`` empty, and a
partial report whose first line says INTERRUPTED, with the unfinished cases marked not run and the
rank logs kept in the report dir. On failure the rank logs are printed (and stay in ``tmp_path``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from paddle_spmd_port.launch.cases import default_cases, write_cases
from paddle_spmd_port.launch.launcher import TOKEN_ENV
from paddle_spmd_port.launch.predict import predict
from paddle_spmd_port.launch.report import crash_key

from .cli_checks import REPO

pytestmark = [pytest.mark.multiproc, pytest.mark.native]

START_TIMEOUT = 60.0
"""Seconds for the ranks to come up and finish their first case."""
EXIT_TIMEOUT = 30.0
"""Seconds from the signal to the command's exit (its cleanup needs a few)."""


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _run_processes(prefix: str, cli_pid: int) -> dict[int, str]:
    """Live processes of the run: the launch token (a job id starting with ``prefix``) in their
    environment or on their command line, or the command as parent. pid -> command line."""
    found = {}
    needle = f"{TOKEN_ENV}={prefix}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in (os.getpid(), cli_pid):
            continue
        stat = _read(entry / "stat").rsplit(b")", 1)[-1].split()
        if not stat or stat[0] in (b"Z", b"X"):
            continue
        cmdline = _read(entry / "cmdline").replace(b"\0", b" ")
        if needle in _read(entry / "environ") or prefix.encode() in cmdline or int(stat[1]) == cli_pid:
            found[int(entry.name)] = cmdline.decode(errors="replace")
    return found


class Run:
    """One ``launch`` command in a subprocess, with everything it leaves under ``tmp_path``."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.tmp_path = tmp_path
        self.signalled_at = 0.0  # set by _signal_and_check
        self.tmpdir = tmp_path / "tmp"
        self.rep = tmp_path / "rep"
        self.tmpdir.mkdir()
        env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
        env.update(TMPDIR=str(self.tmpdir), PYTHONUNBUFFERED="1",
                   PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.stdout_path, self.stderr_path = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "paddle_spmd_port", "launch", "--quiet", "--nproc", "2", "--report-dir",
                 str(self.rep), "--timeout", "120", *args], cwd=tmp_path, env=env, stdout=out, stderr=err,
                stdin=subprocess.DEVNULL, start_new_session=True)
        self.prefix = f"spmdlaunch-{self.proc.pid}-"

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def wait_for(self, what: str, ready, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if self.proc.poll() is not None:
                raise AssertionError(f"the command ended (exit {self.proc.returncode}) before {what}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} after {timeout:.0f}s")
            time.sleep(0.02)

    def ranks_done_a_case(self) -> bool:
        """Both ranks alive, and each has written at least one case record."""
        ranks = [p for p, cmd in _run_processes(self.prefix, self.proc.pid).items() if "rank_main.py" in cmd]
        if len(ranks) < 2:
            return False
        done = 0
        for rank in (0, 1):
            for path in self.tmpdir.glob(f"{self.prefix}*/results/rank{rank}.jsonl"):
                done += b'"kind": "case"' in _read(path)
        return done == 2

    def probe_running(self) -> bool:
        return any("--run-predicted-crashes" in cmd for cmd in _run_processes(self.prefix, self.proc.pid).values())

    def leftovers(self, wait: float = 3.0) -> dict[int, str]:
        deadline = time.monotonic() + wait
        while (left := _run_processes(self.prefix, self.proc.pid)) and time.monotonic() < deadline:
            time.sleep(0.1)
        return left

    def diagnostics(self) -> str:
        parts = [f"exit: {self.proc.poll()}", f"stdout:\n{_read(self.stdout_path).decode(errors='replace')[-3000:]}",
                 f"stderr:\n{self.stderr()[-3000:]}", f"kept in {self.tmp_path}"]
        for root in (self.tmpdir, self.rep):
            for path in sorted(root.rglob("*")):
                if path.is_file() and (path.name.startswith("workerlog.") or path.name in ("launcher.log",
                                                                                          "probe.log")):
                    parts.append(f"----- {path} (tail) -----\n{_read(path).decode(errors='replace')[-2000:]}")
        return "\n".join(parts)

    def end(self) -> None:
        """Test teardown: whatever the outcome, nothing of this run survives the test."""
        for pid in [self.proc.pid, *_run_processes(self.prefix, self.proc.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.proc.wait(timeout=10)


def _signal_and_check(run: Run, sig: signal.Signals, *, hammer: bool = False) -> dict:
    """Send ``sig`` once, or (``hammer``) again every 20 ms until the command exits, as an impatient
    user would: the later ones land in the cleanup and must change nothing. Then check everything
    the interrupt must leave behind; returns the JSON report."""
    t0 = time.monotonic()
    run.signalled_at = time.time()  # wall clock, to compare with the mtimes of files the run writes
    os.kill(run.proc.pid, sig)
    sent = 1
    while hammer and run.proc.poll() is None and time.monotonic() - t0 < EXIT_TIMEOUT:
        time.sleep(0.02)
        os.kill(run.proc.pid, sig)  # the command is not reaped before poll() says so: never another pid
        sent += 1
    code = run.proc.wait(timeout=EXIT_TIMEOUT)
    cleanup = time.monotonic() - t0
    err = run.stderr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    # signals that keep coming after the first are ignored, during the cleanup and while Python exits
    assert code == 128 + sig, f"exit {code}, want {128 + sig}"
    assert "Traceback" not in err
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"paddle_spmd_port launch: interrupted by {sig.name}"), lines[0]
    assert "; partial report in " in lines[0] and "rank logs in" in lines[0], lines[0]
    left = run.leftovers()
    assert not left, f"processes of the run still alive: { {p: c[:200] for p, c in left.items()} }"
    assert sorted(p.name for p in run.tmpdir.iterdir()) == [], "temp files left in TMPDIR"

    md = run.rep / "launch-np2.md"
    first = md.read_text().splitlines()[0]
    assert "INTERRUPTED" in first and sig.name in first, first
    report = json.loads((run.rep / "launch-np2.json").read_text())
    assert report["meta"]["interrupted"] == sig.name
    logs = run.rep / "launch-np2-logs" / "logs"
    assert str(logs) in lines[0] and (logs / "workerlog.0").is_file() and (logs / "workerlog.1").is_file()
    print(f"\n{sig.name} x{sent}: exit {code} {cleanup:.1f}s after the signal; {lines[0]}")
    return report


def _not_run(report: dict) -> list[dict]:
    return [c for c in report["cases"] if c["verdict"] == "skipped" and any("not run: interrupted" in r
                                                                            for r in c["reasons"])]


def _long_case_file(tmp_path: Path, copies: int = 4) -> tuple[Path, int]:
    """The built-in grid ``copies`` times over (~4 s of rank work per copy on 2 cores): ranks left
    running by a broken cleanup are still alive when the test looks for them, seconds later."""
    grid = default_cases((2,))
    cases = [dataclasses.replace(c, case_id=f"{c.case_id}-{k}") for k in range(copies) for c in grid]
    path = tmp_path / "cases.jsonl"
    write_cases(cases, path)
    return path, len(cases)


@pytest.mark.parametrize("sig, hammer", [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGINT, True)],
                         ids=["SIGINT", "SIGTERM", "SIGINT-repeated"])
def test_signal_while_ranks_run_ends_everything_and_writes_a_partial_report(tmp_path, sig, hammer):
    pytest.importorskip("paddle")
    cases, n = _long_case_file(tmp_path)
    run = Run(tmp_path, "--cases", str(cases), "--crash-probes", "0")
    try:
        run.wait_for("rank with a finished case", run.ranks_done_a_case)
        report = _signal_and_check(run, sig, hammer=hammer)
        judged = [c for c in report["cases"] if c["verdict"] != "skipped"]
        not_run = _not_run(report)
        assert judged, "cases both ranks finished before the signal are judged"
        assert not_run, "cases not finished are marked not run because interrupted"
        assert len(judged) + len(not_run) == len(report["cases"]) == n
        assert all(c["expected"] for c in judged), [c for c in judged if not c["expected"]][:2]
        print(f"{len(judged)} cases judged, {len(not_run)} not run")
    except BaseException:
        print(run.diagnostics())
        raise
    finally:
        run.end()


def test_sigterm_during_the_crash_probes_ends_the_probes(tmp_path):
    pytest.importorskip("paddle")
    grid = default_cases((2,))
    crash = [c for c in grid if crash_key(predict(c))]
    kinds = {crash_key(predict(c)) for c in crash}
    cases = grid[:4] + [next(c for c in crash if crash_key(predict(c)) == k) for k in sorted(kinds)]
    write_cases(cases, tmp_path / "cases.jsonl")
    run = Run(tmp_path, "--cases", str(tmp_path / "cases.jsonl"))
    try:
        run.wait_for("crash probe process", run.probe_running)
        report = _signal_and_check(run, signal.SIGTERM)
        assert "finished" in report["meta"]["launch"] and "interrupted by SIGTERM" in report["meta"]["launch"]
        assert not _not_run(report), "the launch had finished: every case is judged"
        assert len(report["cases"]) == len(cases)
        probes = run.rep / "launch-np2-logs" / "probes"
        assert list(probes.glob("*/probe.log")), "the probes' own logs are kept too"
        # killed at once: no probe wrote a record after the signal (probes run side by side, and one
        # may have finished, crash and record, before the signal landed)
        late = [p for p in probes.glob("*/rank*.jsonl") if p.stat().st_size and p.stat().st_mtime > run.signalled_at]
        assert not late, f"a probe ran on after the signal: {late}"
        assert not report["meta"]["probes"]
    except BaseException:
        print(run.diagnostics())
        raise
    finally:
        run.end()
