"""The worker's fork server (native/_fork.py): crash-prone cases run in children of a zygote forked
before the cases are loaded, the worker itself never forks, and if the zygote dies the worker forks
its children itself. Run in a subprocess: the server is per process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.native

SCRIPT = textwrap.dedent("""
    import os, signal
    from paddle_spmd_port.native import _fork, registry
    from paddle_spmd_port.native.compiled import may_crash
    from paddle_spmd_port.parity.grid import grid_for

    crashing = next(c for c in grid_for("layer_norm")
                    if dict(c.attrs).get("begin_norm_axis", 1) > len(c.inputs[0].shape))
    fine = next(c for c in grid_for("layer_norm") if not may_crash(c))
    _fork.start_fork_server()
    server = _fork._server
    real_fork = os.fork

    def no_fork():
        raise AssertionError("the worker forked although its fork server runs")

    os.fork = no_fork
    print([o.status for o in registry.run_many([crashing, fine, crashing])])
    os.fork = real_fork
    os.kill(server.pid, signal.SIGKILL)
    os.waitpid(server.pid, 0)
    print([o.status for o in registry.run_many([crashing, fine, crashing])], _fork._server is None)
""")


def test_fork_server_runs_the_crash_prone_cases_and_the_worker_falls_back_without_it():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()[-2:]
    assert lines == ["['crash', 'result', 'crash']", "['crash', 'result', 'crash'] True"]
