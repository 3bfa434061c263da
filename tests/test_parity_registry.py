"""Parity against the real Paddle registry on a deterministic sample of each grid (no mocks)."""

import json
import subprocess
import sys

import pytest

from paddle_spmd_port.case import Case
from paddle_spmd_port.compare import compare
from paddle_spmd_port.grid import grid_for, sample
from paddle_spmd_port.native.pool import run_native
from paddle_spmd_port.outcome import port_outcome
from paddle_spmd_port.parity.cli import select_cases

from .helpers import MESH_2x3, known_difference, rep, skip_if_rule_missing, spec

pytestmark = pytest.mark.native

REGISTRY_RULES = ["batch_norm_static", "layer_norm", "layer_norm_reverse", "sync_batch_norm", "sync_batch_norm_grad"]


@pytest.fixture(scope="module")
def registry_sample():
    cases = []
    for rule in REGISTRY_RULES:
        grid = list(grid_for(rule))
        picked = sample(grid, 300, seed=7)
        # and every invalid input, once: a sample keeps the corner sets, which hold them, and an invalid
        # input given twice runs twice, each time in a forked child and again in the re-run
        ids = {c.case_id for c in picked}
        cases += picked + [c for c in grid if "-invalid-" in c.case_id and c.case_id not in ids]
    outcomes, info = run_native(cases, backend="registry", workers=2)
    return cases, outcomes, info


def test_paddle_version_recorded(registry_sample):
    _, _, info = registry_sample
    assert info["version"] and info["commit"]


@pytest.mark.parametrize("rule", REGISTRY_RULES)
def test_sample_has_no_mismatch(registry_sample, rule):
    cases, outcomes, _ = registry_sample
    verdicts = {}
    explained: dict[str, int] = {}
    for case, native in zip(cases, outcomes, strict=True):
        if case.rule != rule:
            continue
        if why := known_difference(case, port_outcome(case), native):
            explained[why] = explained.get(why, 0) + 1
            continue
        cmp = compare(case.spec, port_outcome(case), native)
        assert cmp.verdict != "mismatch", f"{case.describe()}\n" + "\n".join(map(str, cmp.diffs))
        verdicts[cmp.verdict] = verdicts.get(cmp.verdict, 0) + 1
    if verdicts.get("match", 0) <= 100 and explained:
        pytest.skip("; ".join(f"{n} cells: {why}" for why, n in explained.items()))
    assert verdicts.get("match", 0) > 100  # the sample really compared results, not just errors


def test_error_parity_same_message(registry_sample):
    cases, outcomes, _ = registry_sample
    both = [(c, o) for c, o in zip(cases, outcomes, strict=True)
            if compare(c.spec, port_outcome(c), o).verdict == "both-raise-same"]
    families = {o.error.family for _, o in both}
    assert {"ValueError", "NotImplementedError"} <= families
    for case, native in both:
        assert port_outcome(case).error.message == native.error.message


def test_native_crash_is_recorded_and_the_run_goes_on():
    ok = Case("layer_norm", MESH_2x3, (spec((4, 6, 8), (0, -1, -1)), None, None), (("begin_norm_axis", 2),))
    crash = Case("layer_norm", MESH_2x3, (rep((4, 6, 8)), None, None), (("begin_norm_axis", 5),))
    outcomes, _ = run_native([ok, crash, ok, crash, ok], backend="registry", workers=1, timeout=60)
    assert [o.status for o in outcomes] == ["result", "crash", "result", "crash", "result"]
    assert outcomes[1].crash.startswith("signal")
    assert compare(crash.spec, port_outcome(crash), outcomes[1]).verdict == "port-rejects-invalid"


def test_batch_norm_has_no_registered_backward():
    skip_if_rule_missing("batch_norm")
    code = ("import warnings; warnings.filterwarnings('ignore')\n"
            "from paddle.framework import core\n"
            "try:\n core.get_phi_spmd_rule('batch_norm').infer_backward()\n"
            "except RuntimeError as e: print('RuntimeError', 'backward function is not found' in str(e))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    assert "RuntimeError True" in out


def test_parity_cli_writes_reports(tmp_path):
    junit = tmp_path / "parity.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "paddle_spmd_port", "parity", "--rules", "layer_norm,batch_norm_static",
         "--sample", "60", "--report-dir", str(tmp_path / "rep"), "--junit", str(junit), "--quiet"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((tmp_path / "rep" / "parity.json").read_text())
    assert data["complete"] and data["total_mismatches"] == 0
    n_ln, n_bn = (len(select_cases(r, None, 60, 0)) for r in ("layer_norm", "batch_norm_static"))
    assert n_ln > 60  # the draw plus every corner case
    assert data["rules"]["layer_norm@registry"]["cases"] == n_ln
    assert data["coverage"]["layer_norm"] == {**data["coverage"]["layer_norm"], "selected": n_ln,
                                              "compared": n_ln, "uncompared": 0, "uncompared_reasons": {}}
    md = (tmp_path / "rep" / "parity.md").read_text()
    assert md.startswith(f"**PASS: all {n_ln + n_bn:,} selected cases compared, 0 mismatching cases**")
    assert f"| layer_norm | registry | done | {n_ln:,} |" in md
    assert junit.read_text().startswith("<?xml")


def test_crash_prone_cases_run_in_forked_children_and_the_worker_survives():
    """layer_norm with begin_norm_axis > ndim segfaults Paddle: in a worker it runs in a forked
    child (native/_fork.py), so the crash is an outcome and the next case runs in the same worker.
    Without the isolation this test's own process would die on the first case."""
    from paddle_spmd_port.native import registry
    from paddle_spmd_port.native.compiled import may_crash

    crashing = next(c for c in grid_for("layer_norm")
                    if dict(c.attrs).get("begin_norm_axis", 1) > len(c.inputs[0].shape))
    fine = next(c for c in grid_for("layer_norm") if not may_crash(c))
    assert may_crash(crashing)
    outcomes = list(registry.run_many([crashing, fine, crashing]))
    assert [o.status for o in outcomes] == ["crash", "result", "crash"]
    assert outcomes[0].crash.startswith("signal")
