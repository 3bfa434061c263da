"""Shared checks for the command line: bad input ends in one line and exit 2, with nothing written.

Each ``tests/test_bad_input_<command>.py`` holds a table of rows; every row goes through
:func:`assert_usage_error`.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMMANDS = ("parity", "infer", "launch", "oracle", "compat-test")


@dataclass(frozen=True)
class BadInput:
    """One row of a bad-input table: the arguments after ``python -m paddle_spmd_port``, the argument
    name the error line must mention, and files to lay out first (relative path -> content; a
    trailing ``/`` makes a directory). ``{tmp}`` in an argument is the test's own directory."""

    argv: tuple[str, ...]
    names: str
    setup: dict[str, str] = field(default_factory=dict)
    code: int = 2  # 3 where the machine, not the input, cannot run it (a GPU launch on a CPU build)

    @property
    def id(self) -> str:
        return " ".join(self.argv)[:80]


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        out[str(path.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def _cli_env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def run_cli(argv: list[str], cwd: Path, timeout: float = 120.0) -> subprocess.CompletedProcess:
    """Run the command in a session of its own; on timeout the whole group is killed (a command
    that wrongly started workers or a launcher must not outlive the test)."""
    env = _cli_env()
    cmd = [sys.executable, "-m", "paddle_spmd_port", *argv]
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


class _ForkServer:
    """One tests/cli_server.py per test process, started on first use with :func:`run_cli`'s environment."""

    def __init__(self) -> None:
        self.env = _cli_env()
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("cli_server.py"))],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=self.env,
                                     cwd=REPO, start_new_session=True)
        ready = self.proc.stdout.readline()
        if not ready.startswith('{"ready"'):
            self.proc.kill()
            raise RuntimeError(f"tests/cli_server.py did not start: {ready!r} (exit {self.proc.wait()})")
        atexit.register(self.close)

    def run(self, argv: list[str], cwd: Path, timeout: float, env: dict[str, str]) -> subprocess.CompletedProcess:
        self.proc.stdin.write(json.dumps({"argv": argv, "cwd": str(cwd), "timeout": timeout, "env": env}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"tests/cli_server.py ended (exit {self.proc.wait()})")
        reply = json.loads(line)
        cmd = [sys.executable, "-m", "paddle_spmd_port", *argv]
        if reply["timed_out"]:
            raise subprocess.TimeoutExpired(cmd, timeout, reply["out"], reply["err"])
        return subprocess.CompletedProcess(cmd, reply["code"], reply["out"], reply["err"])

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


_SERVER: list[_ForkServer] = []


def run_cli_forked(argv: list[str], cwd: Path, timeout: float = 120.0) -> subprocess.CompletedProcess:
    """:func:`run_cli` for a command that ends before any work (a bad-input row): the same process
    as ``python -m paddle_spmd_port`` (its own session, stdin closed), forked from a server that has
    imported the commands once (tests/cli_server.py), instead of an interpreter started and the
    commands imported per row. An environment other than the server's (a test that changed
    ``os.environ``; pytest's own per-test variable aside) runs in a process of its own: :func:`run_cli`."""
    if not _SERVER or _SERVER[0].proc.poll() is not None:
        _SERVER[:] = [_ForkServer()]
    env = _cli_env()
    if _settled(env) != _settled(_SERVER[0].env):
        return run_cli(argv, cwd, timeout)
    return _SERVER[0].run(argv, cwd, timeout, env)


def _settled(env: dict[str, str]) -> dict[str, str]:
    """``env`` without what pytest changes per test (handed to the row's process as it is, not compared)."""
    return {k: v for k, v in env.items() if k != "PYTEST_CURRENT_TEST"}


def assert_usage_error(row: BadInput, tmp_path: Path) -> str:
    """Run ``row`` in ``tmp_path``: exit ``row.code`` (2), exactly one non-empty line on stderr that
    names ``row.names`` and starts with the one prefix (``paddle_spmd_port COMMAND: ``), no
    traceback, nothing on stdout, and no file created, changed or removed."""
    for rel, content in row.setup.items():
        target = tmp_path / rel
        if rel.endswith("/"):
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
    before = _snapshot(tmp_path)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in row.argv]
    done = run_cli_forked(argv, tmp_path)
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    context = f"argv={argv}\nexit={done.returncode}\nstdout={done.stdout[-2000:]}\nstderr={done.stderr[-2000:]}"
    assert done.returncode == row.code, context
    assert "Traceback" not in done.stderr, context
    assert len(lines) == 1, context
    assert row.names in lines[0], context
    command = argv[0] if argv and not argv[0].startswith("-") and argv[0] in COMMANDS else ""
    assert lines[0].startswith(f"paddle_spmd_port{' ' + command if command else ''}: "), context
    assert done.stdout.strip() == "", context
    assert _snapshot(tmp_path) == before, "files changed:\n" + context
    return lines[0]
