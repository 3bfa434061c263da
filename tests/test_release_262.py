"""Paddle 2.6.2: its release profile, the ``release-lacks`` class, the compiled caller's wheel layouts and
``launch --device gpu`` on a machine where no GPU is visible.

The pure tests run anywhere (they build the native outcomes 2.6.2 gives, as measured:
docs/releases/2.6.2.md); the last ones need Paddle 2.6.2 itself (its CPU or GPU wheel) and skip
elsewhere with that reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paddle_spmd_port.case import Case
from paddle_spmd_port.compare import COMPARED
from paddle_spmd_port.grid import coshard_cases, grid_for
from paddle_spmd_port.installed import paddle_version
from paddle_spmd_port.outcome import Outcome, port_outcome
from paddle_spmd_port.parity.report import LACKS, ParityReport, RuleCoverage
from paddle_spmd_port.releases import detect_release, release_for
from paddle_spmd_port.types import DistAttr, SpmdResult
from tests.cli_checks import REPO, BadInput, assert_usage_error

P262 = "2.6.2"
COMMIT_262 = "8ce0de584c570589117e403322f3d1a0de6554e5"
NO_PIR = ("Paddle 2.6.2's PIR has no distributed dialect (no op dist_attr to read a rule's answer from): "
          "paddle.pir.Operation has no dist_attr")
NO_COSHARD = "this Paddle build's TensorDistAttr holds one mesh dim per axis (no co-shard)"


def _first(rule: str, coshard: bool = False) -> Case:
    return next(iter(coshard_cases(rule) if coshard else grid_for(rule)))


def _answered(rule: str) -> tuple[Case, Outcome]:
    """A case of ``rule`` the port answers, and that answer."""
    for case in grid_for(rule):
        port = port_outcome(case)
        if port.result is not None:
            return case, port
    raise AssertionError(rule)


def _other_answer(port: Outcome) -> Outcome:
    """An answer that differs from the port's in one cell (x's output partial status)."""
    assert port.result is not None
    first, *rest = port.result.outputs
    changed = DistAttr.make(first.dims_mapping, frozenset({0}) | first.partial_dims, first.mesh)
    return Outcome(result=SpmdResult(port.result.inputs, (changed, *rest)))


# --------------------------------------------------------------------------- detection
def test_262_has_its_own_profile_and_older_or_pre_releases_are_flagged():
    p = detect_release(P262, COMMIT_262)
    assert (p.version, p.is_exact, p.commit_matches, p.is_older_than_known) == (P262, True, True, False)
    assert "profile 2.6.2" in p.headline()
    assert detect_release("2.5.2").is_older_than_known and detect_release("2.5.2").version == P262
    rc = detect_release("3.0.0rc1")  # nearer to 3.0.0 than to 2.6.2
    assert rc.version == "3.0.0" and rc.is_prerelease and not rc.is_exact and "pre-release of 3.0.0" in rc.headline()
    assert detect_release("2.6.3").version == P262 and "nearest older" in detect_release("2.6.3").headline()


def test_262_profile_declares_what_it_lacks():
    p = release_for(P262)
    assert {"batch_norm", "instance_norm", "group_norm", "fused_rms_norm", "p_norm", "cummax"} <= p.registry_missing
    assert not {"LayerNormInferSpmd", "LayerNormGradInferSpmd", "LayerNormInferSpmdReverse"} & p.cpp_rules_missing
    assert {d.name for d in p.differences} == {"no-rule-2.6.2", "no-pir-dist-dialect", "compiled-caller-no-coshard",
                                               "no-multi-dims-mapping", "layer-norm-grad-first-version"}
    assert all(d.evidence == f"docs/releases/2.6.2.md#{d.name}" for d in p.differences)


# --------------------------------------------------------------------------- classify()
def test_a_rule_262_lacks_is_release_lacks_and_never_compared():
    case = _first("batch_norm_static")
    port, native = port_outcome(case), Outcome(unreachable="this Paddle build registers no 'batch_norm' rule")
    verdict, note = release_for(P262).classify(case, port, native)
    assert verdict == LACKS and verdict not in COMPARED and note.startswith("2.6.2 lacks it (no-rule-2.6.2): ")
    assert release_for("3.3.1").classify(case, port, native) is None  # 3.3.1 has it: uncompared, fails closed
    # another reason for no answer is not declared: the case stays uncompared
    assert release_for(P262).classify(case, port, Outcome(unreachable="the registry cannot express this")) is None


def test_pir_without_a_dist_dialect_lacks_every_pir_rule_but_nothing_else():
    case = _first("layer_norm")
    p = release_for(P262)
    assert p.classify(case, port_outcome(case), Outcome(unreachable=NO_PIR))[0] == LACKS
    sync = _first("sync_batch_norm")  # not a PIR rule: its registry route must answer
    assert p.classify(sync, port_outcome(sync), Outcome(unreachable=NO_PIR)) is None


def test_the_compiled_callers_coshard_refusal_concerns_coshard_cases_only():
    p = release_for(P262)
    coshard = _first("layer_norm_grad", coshard=True)
    assert p.classify(coshard, port_outcome(coshard), Outcome(unreachable=NO_COSHARD))[0] == LACKS
    plain = _first("layer_norm_grad")
    assert p.classify(plain, port_outcome(plain), Outcome(unreachable=NO_COSHARD)) is None


def test_layer_norm_grad_differs_not_compared_but_the_forward_must_still_match():
    p = release_for(P262)
    grad, port = _answered("layer_norm_grad")
    verdict, note = p.classify(grad, port, _other_answer(port))
    assert verdict == LACKS and "layer-norm-grad-first-version" in note
    assert p.classify(grad, port, Outcome(crash="native crashed: signal 11 (SIGSEGV)"))[0] == LACKS
    assert p.classify(grad, port, port) is None  # an equal answer stays a match (compared)
    for rule in ("layer_norm", "layer_norm_reverse", "sync_batch_norm"):  # 2.6.2 answers these as 3.3.1
        case, answer = _answered(rule)
        assert p.classify(case, answer, _other_answer(answer)) is None, rule


# --------------------------------------------------------------------------- coverage and status
def _coverage(verdicts: list[list[str]]) -> RuleCoverage:
    """One rule's coverage: per case, the verdict of each route."""
    cov = RuleCoverage("batch_norm", len(verdicts), 10, ["compiled", "pir"])
    for i, per_route in enumerate(verdicts):
        for backend, verdict in zip(cov.routes, per_route, strict=False):
            note = "2.6.2 lacks it (no-rule-2.6.2): why" if verdict == LACKS else ""
            cov.record(i, backend, Outcome(not_run="worker timed out"), verdict, note)
    return cov


def _report(*covs: RuleCoverage) -> ParityReport:
    report = ParityReport(complete=True)
    report.coverage = {f"r{i}": c for i, c in enumerate(covs)}
    return report


def test_release_lacks_cases_are_counted_apart_and_fail_nothing_unless_nothing_was_compared():
    cov = _coverage([["match", LACKS], [LACKS, LACKS], [LACKS, "not-run"]])
    assert (cov.compared, cov.lacking, cov.uncompared) == (1, 1, 1)  # one route not run: uncompared (fails closed)
    assert cov.lacking_reasons() == {"compiled: 2.6.2 lacks it (no-rule-2.6.2); pir: 2.6.2 lacks it "
                                     "(no-rule-2.6.2)": 1}
    assert _report(cov).status_line().startswith("FAILED CLOSED: 1 of 3 selected cases compared by no route")
    passing = _report(_coverage([["match", LACKS], [LACKS, LACKS]]))
    assert passing.total_uncompared == 0 and passing.total_lacking == 1 and passing.total_compared == 1
    assert passing.status_line().startswith("PASS: 1 of 2 selected cases compared, 0 mismatching cases; the other 1")
    nothing = _report(_coverage([[LACKS, LACKS]]))
    assert nothing.all_lacking and not passing.all_lacking  # the run exits 3: nothing at all was compared
    assert nothing.status_line().startswith("NOTHING COMPARED: this Paddle release lacks all 1")
    data = passing.to_json()
    assert data["total_lacking"] == 1 and data["coverage"]["r0"]["lacking"] == 1
    assert 'name="r0' not in passing.junit() or "the release lacks them" in passing.junit()


def test_a_case_only_the_lacking_route_could_express_is_lacking_not_uncompared():
    # 3.0.0: no compiled caller (release-lacks), and PIR cannot express the case (a co-shard, an op it cannot
    # build): the lacking route was the only one that could compare it. A crash, a timeout or an unreadable
    # reply on the other route still fails closed, as does unreachable on every route.
    cov = _coverage([[LACKS, "unreachable"], ["unreachable", LACKS], ["unreachable", "unreachable"],
                     [LACKS, "native-crash"], [LACKS, "undecodable"], [LACKS, "not-run"], ["unreachable", "match"]])
    assert (cov.compared, cov.lacking, cov.uncompared) == (1, 2, 4)
    assert sum(cov.lacking_reasons().values()) == 2 and all(
        "lacks it" in why and "unreachable" in why for why in cov.lacking_reasons())
    data = cov.to_json()
    back = RuleCoverage.counted("batch_norm", data["selected"], 10, cov.routes, data["compared"],
                                data["uncompared_reasons"], data["lacking_reasons"])
    assert (back.compared, back.lacking, back.uncompared) == (1, 2, 4)


def test_a_merge_keeps_the_lacking_cases_apart(tmp_path):
    cov = _coverage([["match", LACKS], [LACKS, LACKS], [LACKS, "not-run"], ["not-run", "not-run"]])
    data = cov.to_json()
    back = RuleCoverage.counted("batch_norm", data["selected"], 10, cov.routes, data["compared"],
                                data["uncompared_reasons"], data["lacking_reasons"])
    assert (back.compared, back.lacking, back.uncompared) == (cov.compared, cov.lacking, cov.uncompared) == (1, 1, 2)


# --------------------------------------------------------------------------- the compiled caller's layouts
def _wheel(root: Path, *files: str, dist_attr: str = "", enforce: str = "struct EnforceNotMet {};") -> Path:
    paddle = root / "paddle"
    for rel in files:
        (paddle / rel).parent.mkdir(parents=True, exist_ok=True)
        (paddle / rel).write_text("")
    attr = paddle / "include/paddle/phi/core/distributed/auto_parallel/dist_attr.h"
    attr.parent.mkdir(parents=True, exist_ok=True)
    attr.write_text(dist_attr)
    (paddle / "include/paddle/common").mkdir(parents=True, exist_ok=True)
    (paddle / "include/paddle/common/enforce.h").write_text(enforce)
    return paddle


def test_the_caller_links_each_wheels_phi(tmp_path, monkeypatch):
    from paddle_spmd_port.native import compiled

    three = compiled.layout(_wheel(tmp_path / "a", "libs/libphi_core.so", "libs/libcommon.so"))
    assert three.name == "libphi_core" and three.link == ("-lphi_core", "-lcommon") and not three.defines
    assert not three.shims
    pb = f'#include "{compiled.PROTO_HEADER}"'
    gpu = compiled.layout(_wheel(tmp_path / "b", "libs/libphi.so", "libs/libcommon.so", dist_attr=pb, enforce=""))
    assert gpu.link == ("-lphi", "-lcommon") and gpu.defines == ("SPMD_CALLER_PHI_ENFORCE",)
    assert "class TensorDistAttrProto;" in gpu.shims[compiled.PROTO_HEADER]
    cpu_root = _wheel(tmp_path / "c", "base/libpaddle.so", "libs/libcommon.so", dist_attr=pb, enforce="")
    monkeypatch.setattr(compiled, "_libpython", lambda: tmp_path / "lib" / "libpython3.x.so")
    cpu = compiled.layout(cpu_root)
    assert "-l:libpaddle.so" in cpu.link and "-l:libpython3.x.so" in cpu.link and tmp_path / "lib" in cpu.rpath
    monkeypatch.setattr(compiled, "_libpython", lambda: None)  # a static interpreter cannot resolve libpaddle.so
    with pytest.raises(compiled.BuildError, match="shared libpython") as exc:
        compiled.layout(cpu_root)
    assert not exc.value.paddle_lacks_rules  # this machine lacks it, not the release: not run, fails closed
    with pytest.raises(compiled.BuildError, match="not a usable Paddle install"):
        compiled.layout(_wheel(tmp_path / "d"))


# --------------------------------------------------------------------------- launch --device gpu
def _cuda_paddle(root: Path) -> Path:
    """A CUDA wheel's files as launch reads them (never imported: the refusal comes first)."""
    (root / "paddle" / "version").mkdir(parents=True)
    (root / "paddle" / "__init__.py").write_text("raise ImportError('the test paddle is not to be imported')\n")
    (root / "paddle" / "version" / "__init__.py").write_text(
        f"full_version = '2.6.2'\ncommit = '{COMMIT_262}'\ncuda_version = '11.8'\n")
    return root


@pytest.mark.parametrize("visible", ["", "-1", " -1,0"])
def test_launch_gpu_with_no_visible_gpu_is_refused_in_one_line(visible, tmp_path, monkeypatch):
    fake = _cuda_paddle(tmp_path / "site")
    monkeypatch.setenv("PYTHONPATH", str(fake))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    work = tmp_path / "work"
    work.mkdir()
    line = assert_usage_error(BadInput(("launch", "--nproc", "2", "--device", "gpu"), names="--device gpu", code=3),
                              work)
    assert "no GPU is visible" in line and "CUDA_VISIBLE_DEVICES" in line


# --------------------------------------------------------------------------- Paddle 2.6.2 itself
needs_262 = pytest.mark.skipif(paddle_version()["version"] != P262,
                               reason=f"needs Paddle 2.6.2 (installed: {paddle_version()['version']})")


@pytest.mark.native
@needs_262
def test_262_layer_norm_parity_passes_under_its_profile(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "paddle_spmd_port", "parity", "--rules",
                           "layer_norm,layer_norm_reverse", "--sample", "40", "--workers", "1", "--quiet",
                           "--report-dir", str(tmp_path / "r")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    data = json.loads((tmp_path / "r" / "parity.json").read_text())
    assert data["profile"]["profile"] == P262 and data["total_uncompared"] == 0
    assert data["coverage"]["layer_norm"]["compared"] > 0 and data["coverage"]["layer_norm_reverse"]["compared"] > 0


@pytest.mark.native
@needs_262
def test_262_pir_says_why_it_answers_nothing():
    from paddle_spmd_port.native import pir

    assert pir.NO_DIST_PIR is not None and "no distributed dialect" in pir.NO_DIST_PIR
    assert pir.run(_first("layer_norm")).unreachable == pir.NO_DIST_PIR


# --------------------------------------------------------------------------- CI
def test_ci_has_a_262_leg_and_runs_the_gpu_wheel_on_a_cpu_runner():
    import shlex

    from tests.test_workflows import CI, _load_yaml, _runs

    ci = _load_yaml(CI)
    matrix = ci["jobs"]["paddle"]["strategy"]["matrix"]
    assert P262 in matrix["paddle-version"] and {"paddle-version": P262, "leg": "multiproc"} in matrix["exclude"]
    job = ci["jobs"]["gpu-wheel"]
    assert job["runs-on"] == "ubuntu-latest" and "if" not in job  # every run, no GPU needed
    assert job["env"] == {"PADDLE_VERSION": P262, "PADDLE_PACKAGE": "paddlepaddle-gpu"}  # PyPI: no PADDLE_INDEX
    runs = _runs(job).replace("\\\n", " ")
    assert ".ci/install python" in runs and "tests/test_release_262.py" in runs
    from paddle_spmd_port.launch.cli import build_parser
    from paddle_spmd_port.parity.cli import parse_args

    launch = next(shlex.split(ln.split(">")[0]) for ln in runs.splitlines() if "paddle_spmd_port launch" in ln)
    assert build_parser().parse_args(launch[launch.index("launch") + 1:]).device == "gpu"
    sweeps = [shlex.split(ln) for ln in runs.splitlines() if "paddle_spmd_port parity" in ln]
    rules = [parse_args([*w[w.index("parity") + 1:], "--report-dir", "unused-dir"]).rule_names for w in sweeps]
    assert rules == [["layer_norm", "layer_norm_reverse"], ["layer_norm_grad"]]  # registry rules; the caller
    assert "gpu" in ci["jobs"]  # the self-hosted job for real GPUs stays
