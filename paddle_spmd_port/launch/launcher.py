"""Start N ranks with ``python -m paddle.distributed.launch`` and clean up after them.

::

    python -m paddle.distributed.launch --job_id <unique> --log_dir <private dir> --start_port <free>
        --nproc_per_node N            (cpu: gloo; --devices crashes on CPU-only wheels)
        --devices 0,1,...             (gpu: NCCL)
        [--nnodes ... --master ...]   (passed through for multi-node runs)
        <script> <args>

Isolation: every launch gets its own working directory (``tempfile``), log directory, job id
and a free start port, so concurrent launches on one machine do not collide; launch itself picks
its rendezvous ports at random from ``PORT_RANGE``.

Cleanup: launch starts every rank in a session of its own (``os.setsid``), so killing the
launcher's process group is not enough. Each launch exports a unique token in the environment
(``PADDLE_SPMD_LAUNCH_TOKEN``); the ranks inherit it, and at the end of every launch (finished,
failed, timed out, or interrupted: SIGINT/SIGTERM raise ``runctl.signals.Interrupted`` in the wait) every
process whose ``/proc/<pid>/environ`` carries the token is sent SIGTERM and, after a grace period,
SIGKILL; the launcher is reaped. :func:`end_processes` does the same for a token alone (crash
probes carry the launch's token too); :func:`processes_with_token` lets tests check that nothing
is left behind.

Failure report: :class:`LaunchResult` names the failed ranks (from launch's own "Container rank
K status failed" line) or the ranks still alive at the timeout, and ``failure_text()`` shows the
tail of those ranks' logs. The working directory is kept whenever anything failed.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..reporting import mode_for

TOKEN_ENV = "PADDLE_SPMD_LAUNCH_TOKEN"
LOG_TAIL_LINES = 40
_FAILED_RANK = re.compile(r"Container rank (\d+) status failed")


@dataclass(frozen=True)
class LaunchConfig:
    nproc: int
    backend: str = "cpu"
    timeout: float = 120.0
    """Seconds for the whole launch; then every process of the launch is killed."""
    nnodes: str | None = None
    master: str | None = None
    devices: str | None = None
    """GPU ids for ``--devices`` (default ``0..nproc-1``); ignored on CPU."""
    extra_args: tuple[str, ...] = ()
    """More ``paddle.distributed.launch`` options, passed verbatim before the script."""
    python: str = sys.executable
    grace: float = 2.0
    """Seconds between SIGTERM and SIGKILL when cleaning up."""

    def __post_init__(self) -> None:
        if self.nproc < 1:
            raise ValueError(f"nproc must be >= 1, got {self.nproc}")
        if self.backend not in ("cpu", "gpu"):
            raise ValueError(f"backend must be 'cpu' or 'gpu', got {self.backend!r}")
        if self.timeout <= 0:
            raise ValueError(f"timeout must be positive, got {self.timeout}")


@dataclass(frozen=True)
class LaunchResult:
    job_id: str
    command: tuple[str, ...]
    returncode: int | None
    timed_out: bool
    seconds: float
    work_dir: Path
    log_dir: Path
    failed_ranks: tuple[int, ...] = ()
    hung_ranks: tuple[int, ...] = ()
    leftover_pids: tuple[int, ...] = ()
    """Processes of this launch still alive after cleanup (should always be empty)."""
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.leftover_pids

    def rank_log(self, rank: int) -> Path:
        return self.log_dir / f"workerlog.{rank}"

    def rank_logs(self) -> list[Path]:
        return sorted(self.log_dir.glob("workerlog.*"))

    def launcher_log(self) -> Path:
        return self.work_dir / "launcher.log"

    def summary(self) -> str:
        if self.timed_out:
            what = f"timed out after {self.seconds:.1f}s; ranks still running: {list(self.hung_ranks) or 'none seen'}"
        elif self.returncode == 0:
            what = f"finished in {self.seconds:.1f}s"
        else:
            what = f"failed (launch exit code {self.returncode}) after {self.seconds:.1f}s; failed ranks: " \
                   f"{list(self.failed_ranks) or 'unknown'}"
        left = f"; LEFT BEHIND: {list(self.leftover_pids)}" if self.leftover_pids else ""
        return f"launch {self.job_id} {what}{left}"

    def failure_text(self, lines: int = LOG_TAIL_LINES) -> str:
        """Summary plus the tail of every failing (or hung) rank's log, and of the launcher's."""
        parts = [self.summary(), f"logs kept in {self.log_dir}"]
        ranks = list(self.failed_ranks) + [r for r in self.hung_ranks if r not in self.failed_ranks]
        logs = [self.rank_log(r) for r in ranks] or self.rank_logs()
        for path in logs:
            parts.append(f"----- {path} (last {lines} lines) -----\n{tail(path, lines)}")
        parts.append(f"----- {self.launcher_log()} (last {lines // 2} lines) -----\n"
                     f"{tail(self.launcher_log(), lines // 2)}")
        return "\n".join(parts)


def tail(path: Path, lines: int) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"<cannot read: {exc}>"
    return "\n".join(text.splitlines()[-lines:])


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def new_job_id() -> str:
    return f"spmdlaunch-{os.getpid()}-{uuid.uuid4().hex[:10]}"


def launch_command(config: LaunchConfig, script: str, script_args: Sequence[str], job_id: str, log_dir: Path,
                   port: int) -> list[str]:
    cmd = [config.python, "-m", "paddle.distributed.launch", "--job_id", job_id, "--log_dir", str(log_dir),
           "--start_port", str(port)]
    if config.backend == "gpu":
        cmd += ["--devices", config.devices or ",".join(str(i) for i in range(config.nproc))]
    else:
        cmd += ["--nproc_per_node", str(config.nproc)]
    if config.nnodes is not None:
        cmd += ["--nnodes", str(config.nnodes)]
    if config.master is not None:
        cmd += ["--master", config.master]
    cmd += list(config.extra_args)
    return cmd + [script, *script_args]


def _environ(pid: int) -> dict[str, str] | None:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    env = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            env[key.decode(errors="replace")] = value.decode(errors="replace")
    return env


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] in ("Z", "X")


def processes_with_token(token: str) -> dict[int, int | None]:
    """Live (non-zombie) processes whose environment carries ``token``: pid -> rank (or None)."""
    found: dict[int, int | None] = {}
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        pid = int(entry.name)
        env = _environ(pid)
        if env is None or env.get(TOKEN_ENV) != token or _is_zombie(pid):
            continue
        rank = env.get("PADDLE_TRAINER_ID")
        found[pid] = int(rank) if rank is not None and rank.isdigit() else None
    return found


def _signal_all(pids: Sequence[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _cleanup(proc: subprocess.Popen | None, token: str, grace: float) -> tuple[int, ...]:
    """Stop the launcher (when there is one) and every process carrying ``token``: SIGTERM, then
    SIGKILL after ``grace`` seconds; return pids still alive after."""
    launcher = None if proc is None else proc.pid
    ranks_first = [p for p in processes_with_token(token) if p != launcher]
    _signal_all(ranks_first, signal.SIGTERM)
    if proc is not None and proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and ((proc is not None and proc.poll() is None) or processes_with_token(token)):
        time.sleep(0.1)
    left = [p for p in processes_with_token(token) if p != launcher]
    _signal_all(left, signal.SIGKILL)
    if proc is not None:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and processes_with_token(token):
        _signal_all(list(processes_with_token(token)), signal.SIGKILL)
        time.sleep(0.1)
    return tuple(sorted(processes_with_token(token)))


def end_processes(token: str, grace: float = 2.0) -> tuple[int, ...]:
    """End every process whose environment carries ``token`` (ranks, launchers, crash probes),
    SIGTERM then SIGKILL; returns pids still alive after (should be empty). Cheap when none is left."""
    if not processes_with_token(token):
        return ()
    return _cleanup(None, token, grace)


def run_launch(script: str, script_args: Sequence[str], config: LaunchConfig, *, work_dir: Path | None = None,
               job_id: str | None = None) -> LaunchResult:
    """Run ``script`` on ``config.nproc`` ranks; never leaves a process behind.

    ``work_dir`` (default: a fresh temporary directory) is the launch's cwd; logs go to
    ``work_dir/logs`` and launch's own output to ``work_dir/launcher.log``.
    """
    job_id = job_id or new_job_id()
    work = Path(work_dir) if work_dir is not None else Path(tempfile.mkdtemp(prefix=f"{job_id}-"))
    work.mkdir(parents=True, exist_ok=True)
    log_dir = work / "logs"
    cmd = launch_command(config, script, script_args, job_id, log_dir, free_port())
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env[TOKEN_ENV] = job_id
    started = time.monotonic()
    timed_out = False
    hung: tuple[int, ...] = ()
    proc: subprocess.Popen | None = None
    try:
        with open(work / "launcher.log", "wb") as out:
            proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            try:
                proc.wait(timeout=config.timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
            if timed_out:
                hung = tuple(sorted({r for r in processes_with_token(job_id).values() if r is not None}))
            leftovers = _cleanup(proc, job_id, config.grace)
    except BaseException:  # Interrupted (SIGINT/SIGTERM) or KeyboardInterrupt: still leave nothing behind
        _cleanup(proc, job_id, config.grace)  # also when the signal came before Popen returned
        raise
    seconds = time.monotonic() - started
    failed = tuple(sorted({int(m) for m in _FAILED_RANK.findall(tail(work / "launcher.log", 400))}))
    return LaunchResult(job_id=job_id, command=tuple(cmd), returncode=None if timed_out else proc.returncode,
                        timed_out=timed_out, seconds=seconds, work_dir=work, log_dir=log_dir, failed_ranks=failed,
                        hung_ranks=hung, leftover_pids=leftovers)


def keep_dir(source: Path, destination: Path) -> Path:
    """Move ``source`` to ``destination`` (replacing what was there); returns ``destination``."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    if destination.is_dir() and not destination.is_symlink():
        shutil.rmtree(destination)
    elif destination.exists() or destination.is_symlink():
        destination.unlink()
    shutil.move(str(source), str(destination))
    # the work dir was made 0700 (private while the launch ran in the temp dir); kept as a report
    # next to the report files it is as readable as they are (reporting.mode_for)
    destination.chmod(mode_for(0o777))
    return destination


def keep_work_dir(result: LaunchResult, destination: Path) -> LaunchResult:
    """Move the launch's working directory (logs, launcher output, rank results) to
    ``destination``; returns the result with its paths pointing there."""
    keep_dir(result.work_dir, destination)
    return dataclasses.replace(result, work_dir=destination, log_dir=destination / result.log_dir.name)


def discard_work_dir(result: LaunchResult) -> None:
    shutil.rmtree(result.work_dir, ignore_errors=True)
