"""A printed repro line, pasted into a fresh shell as printed, runs where Paddle is.

The shell here has not activated any venv (PATH is the system's: its ``python``, if any, lacks
Paddle), as a reader's new terminal has not; the line names the interpreter that printed it
(reporting.REPRO_PYTHON), so it still reaches Paddle and repeats the case's verdict.
"""

from __future__ import annotations

import json
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



def _line_json(line: str) -> str:
    """The ``--case-json`` argument of a repro line, as the shell hands it over."""
    import shlex

    words = shlex.split(line)
    return words[words.index("--case-json") + 1]


def test_every_rules_repro_line_carries_every_attribute_and_reads_back() -> None:
    """A grid case is built with only the attributes its grid varies (batch_norm's leave most at
    their defaults); its repro line still names every attribute, so ``infer --case-json`` (which
    refuses a case JSON that leaves one out) reads the pasted line back as the very case."""
    from paddle_spmd_port.grid import coshard_cases, grid_for
    from paddle_spmd_port.ops import RULES
    from paddle_spmd_port.parity.infer_cli import case_from_json

    for rule, spec in RULES.items():
        for case in (next(grid_for(rule)), next(coshard_cases(rule), None)):
            if case is None:
                continue
            text = _line_json(one_line_repro(case, "registry"))
            assert [name for name, _ in json.loads(text)["attrs"]] == [name for name, _ in spec.attrs], rule
            assert case_from_json(text) == case, rule


def test_a_case_json_leaving_an_attribute_out_is_refused_by_name() -> None:
    """What the line would be if the case kept only the attributes given: refused, naming the
    one left out, rather than run at a default the writer may not have meant."""
    from paddle_spmd_port.parity.infer_cli import case_from_json
    from paddle_spmd_port.runctl.exits import UsageError

    data = json.loads(_line_json(one_line_repro(CASE, "registry")))
    assert data["attrs"] == [["epsilon", 1e-5], ["begin_norm_axis", 1]]  # CASE was given begin_norm_axis only
    data["attrs"] = data["attrs"][1:]
    with pytest.raises(UsageError, match="attrs has no epsilon"):
        case_from_json(json.dumps(data))


def test_case_attrs_in_any_order_or_partial_are_held_in_full() -> None:
    full = (("epsilon", 1e-5), ("begin_norm_axis", 1))
    for attrs in ((("begin_norm_axis", 1),), (("begin_norm_axis", 1), ("epsilon", 1e-5)), full, [["epsilon", 1e-5]]):
        assert Case("layer_norm", MESH, CASE.inputs, attrs).attrs == full  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'epsilon' is given twice"):
        Case("layer_norm", MESH, CASE.inputs, (("epsilon", 1e-5), ("epsilon", 1e-6)))
