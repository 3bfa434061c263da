"""The worker's fork server (native/_fork.py): crash-prone cases run in children of a zygote forked
before the cases are loaded, the worker itself never forks, and if the zygote dies the worker forks
its children itself. Run in a subprocess: the server is per process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest

pytestmark = pytest.mark.native

SCRIPT = textwrap.dedent("""
    import os, signal
    from paddle_spmd_port.native import _fork, registry
    from paddle_spmd_port.native.compiled import may_crash
    from paddle_spmd_port.grid import grid_for

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


def test_pir_crash_prone_cases_answer_the_same_in_any_order_and_alone():
    """p_norm_grad's invalid grid cases the PIR route isolates (several corrupt the heap without
    dying), in a worker forward and reversed, and p_norm_grad-invalid-11 alone: each case's outcome
    is the same every time. With consecutive cases sharing a child, invalid-10 was a crash forward
    and an answer reversed, and invalid-11 unreachable alone and a crash in the full sweep
    (docs/measurements/2026-12-02-pir-isolation.md)."""
    from paddle_spmd_port.grid import grid_for
    from paddle_spmd_port.native.crash_prone import pir_may_crash
    from paddle_spmd_port.native.pool import run_native

    cases = [c for c in grid_for("p_norm_grad") if pir_may_crash(c) and "mixed" not in c.case_id]
    forward, _ = run_native(cases, backend="pir", workers=1)
    backward, _ = run_native(cases[::-1], backend="pir", workers=1)
    (i,) = [k for k, c in enumerate(cases) if c.case_id == "p_norm_grad-invalid-11"]
    (alone,), _ = run_native([cases[i]], backend="pir", workers=1)

    def lone(case: Any) -> set[str]:
        """The case's outcomes run alone in three fresh workers (three address-space layouts)."""
        return {str(run_native([case], backend="pir", workers=1)[0][0]) for _ in range(3)}

    # A case whose lone runs vary reads memory nothing set (its noise is its own): only a difference no
    # lone run shows is its neighbours' doing, and that is what this test is about.
    differ = [(c, a, b) for c, a, b in zip(cases, forward, backward[::-1], strict=True) if a != b]
    by_order = [(c.case_id, str(a)[:60], str(b)[:60]) for c, a, b in differ if not {str(a), str(b)} <= lone(c)]
    assert by_order == []
    assert alone == forward[i] or {str(alone), str(forward[i])} <= lone(cases[i])
    assert sum(o.crash is not None for o in forward) >= 10  # (the set still holds the crashing cases)


BURNING = textwrap.dedent("""
    import time
    from paddle_spmd_port.native import _fork
    from paddle_spmd_port.outcome import Outcome

    def burn(seconds):  # a child's work: CPU, as a case Paddle takes long over
        end = time.process_time() + seconds
        while time.process_time() < end:
            pass
        return Outcome(not_run="burnt")

    _fork.start_fork_server()
    print([o.not_run for o in _fork._server.run_many(burn, [0.25] * 4)])
""")


def test_the_fork_servers_cpu_counts_in_the_workers():
    """A worker ending reaps its zygote (native/_fork.py, ForkServer.close), so the CPU its cases took
    in the zygote's children counts in the worker's children's usage and so in its parent's: the
    figures ``time`` and the pool read of a run. Orphaned, the zygote's second of CPU counted nowhere."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-c", BURNING], capture_output=True, text=True, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[0] == "['burnt', 'burnt', 'burnt', 'burnt']"
    counted = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert counted >= 0.9, f"the children's 1 s of CPU counted {counted:.2f} s"
