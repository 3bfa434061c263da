"""One launch of many cases: write the case file, start the ranks, collect their results.

::

    run_cases(cases, LaunchConfig(nproc=2))
      work_dir/cases.jsonl        the cases, one JSON object a line
      work_dir/rank_main.py       bootstrap: imports paddle_spmd_port.launch.runner and runs it
      work_dir/results/rank<k>.jsonl   written by each rank, case by case
      work_dir/logs/workerlog.<k>      paddle.distributed.launch's rank logs
      -> SessionResult(launch, per-rank records)

    probe_crash(case, token=..., guard=ChildGuard())   one case alone, predicted crashes executed

The bootstrap lives in the private working directory so that no module of this package shadows
anything on the ranks' ``sys.path``. A rank killed mid-case (timeout, interrupt) leaves every case
it finished in its results file: :func:`read_rank_records` reads them (the partial report).
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import paddle_spmd_port

from ..runctl.exits import ChildRaised
from ..runctl.signals import signal_text
from .cases import LaunchCase, write_cases
from .launcher import TOKEN_ENV, LaunchConfig, LaunchResult, new_job_id, run_launch

_BOOTSTRAP = """\
import sys
sys.path.insert(0, {root!r})
from paddle_spmd_port.launch.runner import main
sys.exit(main())
"""


@dataclass(frozen=True)
class SessionResult:
    launch: LaunchResult
    records: dict[int, list[dict[str, Any]]]
    """rank -> the records that rank wrote (start, case..., done)."""
    cases: tuple[LaunchCase, ...] = field(default_factory=tuple)

    def finished_ranks(self) -> list[int]:
        return sorted(r for r, recs in self.records.items() if recs and recs[-1].get("kind") == "done")

    def case_records(self) -> dict[str, dict[int, dict[str, Any]]]:
        """case_id -> rank -> record."""
        return case_records(self.records)

    def rank_info(self) -> dict[int, dict[str, Any]]:
        return rank_info(self.records)


def case_records(records: dict[int, list[dict[str, Any]]]) -> dict[str, dict[int, dict[str, Any]]]:
    """rank -> records (as :func:`read_rank_records` returns them) into case_id -> rank -> record."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for rank, recs in records.items():
        for rec in recs:
            if rec.get("kind") == "case":
                out.setdefault(rec["case_id"], {})[rank] = rec
    return out


def rank_info(records: dict[int, list[dict[str, Any]]]) -> dict[int, dict[str, Any]]:
    """rank -> that rank's start record (Paddle version, pid, world size)."""
    return {r: recs[0] for r, recs in records.items() if recs and recs[0].get("kind") == "start"}


def raised_in_ranks(records: dict[int, list[dict[str, Any]]]) -> ChildRaised | None:
    """An error of our own code that ended a rank (its ``internal_error`` record, the lowest rank's), as the
    exception the launch command raises for it: an internal error of the run, never an outcome of a case."""
    for rank in sorted(records):
        for rec in records[rank]:
            if rec.get("kind") == "internal_error":
                where = f"case {rec['case_id']}" if rec.get("case_id") else "before its first case"
                return ChildRaised(f"rank {rank} of the launch ({where})", str(rec.get("traceback")))
    return None


def read_rank_records(results_dir: Path) -> dict[int, list[dict[str, Any]]]:
    records: dict[int, list[dict[str, Any]]] = {}
    if not results_dir.is_dir():
        return records
    for path in sorted(results_dir.glob("rank*.jsonl")):
        rank = int(path.stem[4:])
        recs = []
        for line in path.read_text().splitlines():
            if line.strip():
                try:
                    recs.append(json.loads(line))
                except json.JSONDecodeError:
                    break  # a rank killed mid-write leaves a partial last line
        records[rank] = recs
    return records


def run_cases(cases: Sequence[LaunchCase], config: LaunchConfig, *, work_dir: Path | None = None,
              job_id: str | None = None) -> SessionResult:
    """Run every case in one launch of ``config.nproc`` ranks."""
    job_id = job_id or new_job_id()
    work = Path(work_dir) if work_dir is not None else Path(tempfile.mkdtemp(prefix=f"{job_id}-"))
    work.mkdir(parents=True, exist_ok=True)
    results = work / "results"
    results.mkdir(exist_ok=True)
    write_cases(cases, work / "cases.jsonl")
    root = str(Path(paddle_spmd_port.__file__).resolve().parent.parent)
    (work / "rank_main.py").write_text(_BOOTSTRAP.format(root=root))
    args = ["--cases", str(work / "cases.jsonl"), "--out-dir", str(results), "--backend", config.backend,
            "--job-id", job_id]
    launch = run_launch(str(work / "rank_main.py"), args, config, work_dir=work, job_id=job_id)
    return SessionResult(launch, read_rank_records(results), tuple(cases))


class ChildGuard:
    """Children started from worker threads, so that the main thread can end them all at once.

    :meth:`popen` starts a child unless :meth:`stop` was called (then it raises :class:`Stopped`);
    :meth:`stop` refuses new children and SIGKILLs the process group of every running one. Both
    hold one lock, so no child can be started after ``stop`` returns."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: list[subprocess.Popen] = []
        self.stopped = False

    def popen(self, cmd: Sequence[str], **kwargs: Any) -> subprocess.Popen:
        with self._lock:
            if self.stopped:
                raise Stopped("stopped before this child started")
            proc = subprocess.Popen(list(cmd), start_new_session=True, **kwargs)
            self._procs.append(proc)
            return proc

    def stop(self) -> None:
        with self._lock:
            self.stopped = True
            procs = list(self._procs)
        for proc in procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass


class Stopped(RuntimeError):
    """A :class:`ChildGuard` was stopped (the run is being interrupted)."""


def probe_crash(case: LaunchCase, *, python: str | None = None, timeout: float = 60.0,
                work_dir: Path | None = None, token: str | None = None,
                guard: ChildGuard | None = None, attempts: int = 1) -> dict[str, Any]:
    """Run ``case`` alone, in a fresh single process, on a mesh of size-1 dims, with the stages
    the port predicts to crash *executed*; report how the process ended.

    The crashes predicted here happen inside the SPMD rule, before any communication, so a
    one-process mesh reaches them just like the real mesh would. ``token`` goes into the child's
    environment as the launch token (so :func:`.launcher.end_processes` finds it); ``guard``
    starts the child (so an interrupt can end it from the main thread). ``attempts``: a process
    that does not crash is started again, up to that many runs in all, and the crash counts as
    confirmed when one run dies (a heap corruption does not abort every run: measured in
    docs/measurements/2026-12-01-launch-notes.md); the summary says how many runs it took.
    """
    outcomes: list[str] = []
    for attempt in range(1, attempts + 1):
        where = work_dir if work_dir is None or attempt == 1 else Path(work_dir) / f"run{attempt}"
        result = _probe_once(case, python=python, timeout=timeout, work_dir=where, token=token, guard=guard)
        if result["confirmed"] or attempt == attempts:
            if attempt > 1:
                result["summary"] += f" (run {attempt} of up to {attempts}; before: {'; '.join(outcomes)})"
            result["attempts"] = attempt
            return result
        outcomes.append(result["summary"])
    raise ValueError(f"attempts must be >= 1, got {attempts}")


def _probe_once(case: LaunchCase, *, python: str | None, timeout: float, work_dir: Path | None,
                token: str | None, guard: ChildGuard | None) -> dict[str, Any]:
    """One run of :func:`probe_crash`."""
    probe = dataclasses.replace(case, case_id=f"{case.case_id}-probe", mesh_shape=(1,) * len(case.mesh_shape))
    work = Path(work_dir) if work_dir is not None else Path(tempfile.mkdtemp(prefix="spmd-probe-"))
    work.mkdir(parents=True, exist_ok=True)
    write_cases([probe], work / "probe.jsonl")
    code = _run_runner(work, "probe", "--run-predicted-crashes", python=python, timeout=timeout, token=token,
                       guard=guard)
    if code is None:
        summary, confirmed = f"no crash: still running after {timeout:.0f}s (killed)", False
    elif code < 0:
        summary, confirmed = f"process died with {signal_text(-code)}, as predicted", True
    else:
        log = (work / "probe.log").read_text(errors="replace") if code == 1 else ""
        if _TRACEBACK in log:  # Python's exit on an exception the runner let out (a case's errors are its
            # record): the probe never ran its case, so neither a crash nor its absence; an error, never a verdict
            raise ChildRaised(f"the crash probe of {case.case_id}", log[log.rindex(_TRACEBACK):])
        summary, confirmed = f"no crash: exit code {code}", False
    return {"case_id": case.case_id, "returncode": code, "summary": summary, "confirmed": confirmed,
            "log_dir": str(work)}


_TRACEBACK = "Traceback (most recent call last):"


def _run_runner(work: Path, name: str, mode: str, *, cases_file: str | None = None, python: str | None,
                timeout: float, token: str | None, guard: ChildGuard | None) -> int | None:
    """Run the rank runner alone in ``work`` on ``cases_file`` (default ``<name>.jsonl``) in ``mode``
    (a runner flag), its output in ``<name>.log``, in a session of its own (so the whole group can be
    killed); the exit code, or None when it outlived ``timeout`` and was killed."""
    root = str(Path(paddle_spmd_port.__file__).resolve().parent.parent)
    (work / "rank_main.py").write_text(_BOOTSTRAP.format(root=root))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PADDLE_TRAINER", "PADDLE_MASTER"))}
    if token is not None:
        env[TOKEN_ENV] = token
    cmd = [python or sys.executable, str(work / "rank_main.py"), "--cases", str(work / (cases_file or f"{name}.jsonl")),
           "--out-dir", str(work), mode]
    with open(work / f"{name}.log", "wb") as log:
        kwargs: dict[str, Any] = {"cwd": work, "env": env, "stdout": log, "stderr": subprocess.STDOUT,
                                  "stdin": subprocess.DEVNULL}
        proc = guard.popen(cmd, **kwargs) if guard is not None else subprocess.Popen(cmd, start_new_session=True,
                                                                                       **kwargs)
        try:
            code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            code = None
    return code


@dataclass(frozen=True)
class PirResult:
    """The PIR route's run: case id -> its record, and how the process ended."""

    records: dict[str, dict[str, Any]]
    summary: str
    ok: bool
    log: Path


def run_pir_route(cases: Sequence[LaunchCase], *, work_dir: Path, timeout: float, token: str | None = None,
                  guard: ChildGuard | None = None, python: str | None = None) -> PirResult:
    """Build every case's forward as a PIR program in one fresh process (the runner's ``--pir``:
    no launch, no data; the passes need no other rank) and read its records. A process that dies
    or outlives ``timeout`` leaves the cases it did not reach without a record."""
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    write_cases(cases, work / "pir-cases.jsonl")
    started = time.monotonic()
    code = _run_runner(work, "pir", "--pir", cases_file="pir-cases.jsonl", python=python, timeout=timeout,
                       token=token, guard=guard)
    records: dict[str, dict[str, Any]] = {}
    done = False
    path = work / "pir.jsonl"
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:  # the last line of a process killed mid-write
                continue
            if rec.get("kind") == "pir":
                records[rec["case_id"]] = rec
            elif rec.get("kind") == "internal_error":  # our code raised in that process: an error of the run
                where = f"case {rec['case_id']}" if rec.get("case_id") else "before its first case"
                raise ChildRaised(f"the PIR route's process ({where})", str(rec.get("traceback")))
            done = done or rec.get("kind") == "done"
    seconds = time.monotonic() - started
    if code is None:
        summary = f"PIR route killed after {timeout:.0f}s; {len(records)} of {len(cases)} cases built"
    elif code != 0 or not done:
        how = signal_text(-code) if code < 0 else f"exit code {code}"
        summary = f"PIR route ended with {how} after {len(records)} of {len(cases)} cases (log: {work / 'pir.log'})"
    else:
        summary = f"PIR route: {len(records)} cases in {seconds:.1f}s"
    return PirResult(records, summary, code == 0 and done, work / "pir.log")
