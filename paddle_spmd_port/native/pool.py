"""Parent side of the native backends: crash-isolating worker processes.

:func:`run_native` splits the cases over ``workers`` subprocesses. When a worker dies (Paddle
segfaults or aborts), the case it was on is recorded as ``native crashed: signal N`` and a new
worker resumes right after it; a worker silent for ``timeout`` seconds is killed and its case
recorded as a hang. The sweep always completes.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from ..cases.case import Case, write_jsonl
from ..outcome import Outcome

ProgressFn = Callable[[int], None]


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "no exit code"
    if code < 0:
        try:
            return f"signal {-code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


def worker_command(backend: str, case_file: str, start: int, stop: int) -> list[str]:
    return [sys.executable, "-m", "paddle_spmd_port.native.worker", "--backend", backend, "--cases", case_file,
            "--start", str(start), "--stop", str(stop)]


class _Slice(threading.Thread):
    def __init__(self, backend: str, case_file: str, start: int, stop: int, outcomes: list[Outcome | None],
                 timeout: float, on_progress: ProgressFn, info: dict) -> None:
        super().__init__(daemon=True)
        self.backend, self.case_file, self.start_at, self.stop_at = backend, case_file, start, stop
        self.outcomes, self.timeout, self.on_progress, self.info = outcomes, timeout, on_progress, info
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # noqa: BLE001 - reported by the parent
            self.error = exc

    def _run(self) -> None:
        next_index = self.start_at
        env = dict(os.environ, PYTHONUNBUFFERED="1", GLOG_minloglevel="3", FLAGS_call_stack_level="0")
        while next_index < self.stop_at:
            err_log = tempfile.TemporaryFile()  # a file, not a pipe: a chatty worker can't block on it
            proc = subprocess.Popen(worker_command(self.backend, self.case_file, next_index, self.stop_at),
                                    stdout=subprocess.PIPE, stderr=err_log, env=env)
            assert proc.stdout is not None
            fd = proc.stdout.fileno()
            buf = b""
            finished = hung = False
            while True:
                ready, _, _ = select.select([fd], [], [], self.timeout)
                if not ready:
                    hung = True
                    proc.kill()
                    break
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                buf += chunk
                *lines, buf = buf.split(b"\n")
                done_here = 0
                for line in lines:
                    try:
                        msg = json.loads(line)
                    except ValueError:
                        continue
                    if "i" in msg:
                        self.outcomes[msg["i"]] = Outcome.from_json(msg["outcome"])
                        next_index = msg["i"] + 1
                        done_here += 1
                    elif "hello" in msg:
                        self.info.update(msg["hello"])
                    elif msg.get("done"):
                        finished = True
                if done_here:
                    self.on_progress(done_here)
            proc.wait()
            err_log.seek(0)
            stderr = err_log.read().decode(errors="replace")
            err_log.close()
            if finished:
                return
            if next_index >= self.stop_at:
                return
            if hung:
                self.outcomes[next_index] = Outcome(crash=f"hang: no answer within {self.timeout:.0f} s")
            elif proc.returncode == 1 and "Traceback" in stderr and next_index == self.start_at and not self.info:
                raise RuntimeError(f"native worker failed to start:\n{stderr[-3000:]}")
            else:
                how = _describe_exit(proc.returncode)
                if proc.returncode is not None and proc.returncode > 0:  # a Python-level death: say why
                    tail = [ln for ln in stderr.strip().splitlines() if ln.strip()][-1:]
                    how += f" ({tail[0].strip()[:200]})" if tail else ""
                self.outcomes[next_index] = Outcome(crash=how)
            self.on_progress(1)
            next_index += 1


def run_native(cases: Sequence[Case], backend: str = "registry", workers: int = 2, timeout: float = 120.0,
               on_progress: ProgressFn | None = None, work_dir: str | Path | None = None) -> tuple[list[Outcome], dict]:
    """Outcomes of ``cases`` on a native backend, in order, plus the Paddle version info."""
    outcomes: list[Outcome | None] = [None] * len(cases)
    info: dict = {}
    lock = threading.Lock()

    def progress(n: int) -> None:
        if on_progress is not None:
            with lock:
                on_progress(n)

    with tempfile.TemporaryDirectory(dir=work_dir) as tmp:
        case_file = os.path.join(tmp, "cases.jsonl")
        write_jsonl(cases, case_file)
        n = len(cases)
        workers = max(1, min(workers, n))
        bounds = [n * k // workers for k in range(workers + 1)]
        threads = [_Slice(backend, case_file, bounds[k], bounds[k + 1], outcomes, timeout, progress, info)
                   for k in range(workers) if bounds[k] < bounds[k + 1]]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for t in threads:
            if t.error is not None:
                raise t.error
    missing = [i for i, o in enumerate(outcomes) if o is None]
    if missing:
        raise RuntimeError(f"native backend left {len(missing)} cases without an outcome (first: {missing[0]})")
    return outcomes, info  # type: ignore[return-value]
