"""A printed repro line, pasted into a fresh shell as printed, runs where Paddle is.

The shell here has not activated any venv (PATH is the system's: its ``python``, if any, lacks
Paddle), as a reader's new terminal has not; the line names the interpreter that printed it
(reporting.REPRO_PYTHON), so it still reaches Paddle and repeats the case's verdict.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from paddle_spmd_port import DistTensorSpec, ProcessMesh
from paddle_spmd_port.case import Case
from paddle_spmd_port.parity.repro import one_line_repro

REPO = Path(__file__).resolve().parents[1]
MESH = ProcessMesh((2,))
CASE = Case("layer_norm", MESH, (DistTensorSpec((8, 6), (0, -1), MESH), None, None), (("begin_norm_axis", 1),),
            "repro-line")


def _paste(line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/bash", "-c", line], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)})


@pytest.mark.native
def test_parity_repro_line_runs_in_a_fresh_shell(tmp_path: Path) -> None:
    done = _paste(one_line_repro(CASE, "registry"), tmp_path)
    assert done.returncode == 0 and "route: registry\n" in done.stdout and "verdict: match " in done.stdout, done

