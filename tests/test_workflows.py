"""The GitHub workflows: valid against GitHub's workflow schema (offline), and carrying the pieces
the version matrix needs (matrix, fail-fast, pip cache, version sanity, sweep + JUnit + summary,
multi-process leg, GPU job), clean under zizmor's offline audit (pinned actions, no persisted
credentials). Also keeps the CI matrix, tools/matrix.py and the release profiles
naming the same Paddle releases, and checks the commands the workflow runs against their parsers.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from paddle_spmd_port.parity.releases import known_versions, matrix_versions
from tests.helpers import load_tool

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))
CI = ROOT / ".github" / "workflows" / "ci.yml"


def _check_jsonschema() -> list[str]:
    if importlib.util.find_spec("check_jsonschema") is None:
        pytest.skip("check-jsonschema is not installed (pip install -e .[test]); workflow schema not checked")
    return [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows"]


def _load_yaml(path: Path) -> dict[str, Any]:
    try:
        from ruamel.yaml import YAML  # installed with check-jsonschema
    except ImportError:
        yaml = pytest.importorskip("yaml", reason="neither ruamel.yaml nor PyYAML is installed")
        data = yaml.safe_load(path.read_text())
    else:
        data = YAML(typ="safe", pure=True).load(path.read_text())
    if True in data and "on" not in data:  # YAML 1.1 readers turn the key `on` into True
        data["on"] = data.pop(True)
    return data


def _steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return job.get("steps", [])


def _runs(job: dict[str, Any]) -> str:
    return "\n".join(s.get("run", "") for s in _steps(job))


def _uses(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in _steps(job) if s.get("uses", "").split("@")[0] == action]


def _matrix_tool():
    """tools/matrix.py, imported from its path (tools/ is not a package)."""
    return load_tool("matrix")


@pytest.fixture(scope="module")
def ci() -> dict[str, Any]:
    return _load_yaml(CI)


# --------------------------------------------------------------------------- schema
def test_there_are_workflows():
    assert CI in WORKFLOWS


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_matches_githubs_schema(path):
    out = subprocess.run([*_check_jsonschema(), str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_schema_check_rejects_a_broken_workflow(tmp_path):
    """The check can fail: a job without runs-on and with steps that are not a list."""
    bad = tmp_path / "bad.yml"
    bad.write_text("name: bad\non: push\njobs:\n  j:\n    steps: run this\n")
    out = subprocess.run([*_check_jsonschema(), str(bad)], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "bad.yml" in out.stdout + out.stderr


# --------------------------------------------------------------------------- workflow security (zizmor)
_PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


def _zizmor() -> str:
    found = shutil.which("zizmor") or shutil.which("zizmor", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("zizmor is not installed (pip install -e .[test]); workflows not audited")
    return found


def _zizmor_findings(path: Path) -> list[dict[str, Any]]:
    """zizmor's findings at medium severity and above, offline, regular persona."""
    out = subprocess.run([_zizmor(), "--offline", "--min-severity", "medium", "--format", "json", str(path)],
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    # 0: no findings; 10-14: findings (by highest severity); anything else: zizmor itself failed
    assert out.returncode == 0 or 10 <= out.returncode <= 14, out.stderr[-3000:]
    findings = json.loads(out.stdout or "[]")
    assert bool(findings) == (out.returncode != 0), (out.returncode, findings)
    return findings


def _describe(findings: list[dict[str, Any]]) -> list[str]:
    return [f"{f['ident']} ({f['determinations']['severity']}): {f['desc']}" for f in findings]


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_zizmor_finds_nothing_at_medium_or_above(path):
    findings = _zizmor_findings(path)
    assert not findings, _describe(findings)


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_actions_are_sha_pinned_and_checkouts_drop_credentials(path):
    """The same policy without zizmor: every `uses:` is a full commit SHA with the release in a comment,
    and every checkout sets persist-credentials: false."""
    for line in path.read_text().splitlines():
        if line.strip().startswith(("uses:", "- uses:")):
            ref, _, comment = line.split("uses:", 1)[1].partition("#")
            assert _PINNED.match(ref.strip()) and re.match(r"\s*v\d", comment), line
    for job in _load_yaml(path)["jobs"].values():
        for step in _uses(job, "actions/checkout"):
            assert step.get("with", {}).get("persist-credentials") is False, step


@pytest.mark.parametrize("breakage, audit", [
    (lambda text: text.replace("persist-credentials: false", "fetch-depth: 1"), "artipacked"),
    (lambda text: re.sub(r"(actions/checkout)@[0-9a-f]{40}", r"\1@v4", text), "unpinned-uses"),
], ids=["credentials-persisted", "unpinned-checkout"])
def test_zizmor_flags_a_weakened_workflow(tmp_path, breakage, audit):
    """The audit can fail: ci.yml with checkout's credentials kept, or checkout pinned to a tag."""
    text = CI.read_text()
    broken = breakage(text)
    assert broken != text
    copy = tmp_path / "ci.yml"
    copy.write_text(broken)
    findings = _zizmor_findings(copy)
    checkouts = sum(len(_uses(job, "actions/checkout")) for job in _load_yaml(CI)["jobs"].values())
    assert sum(f["ident"] == audit for f in findings) == checkouts, _describe(findings)


# --------------------------------------------------------------------------- the matrix
def test_matrix_is_every_profiled_release_times_python_3_10_to_3_12(ci):
    job = ci["jobs"]["paddle"]
    strategy = job["strategy"]
    assert strategy["fail-fast"] is False
    matrix = strategy["matrix"]
    assert matrix["paddle-version"] == list(matrix_versions()) == ["3.0.0", "3.1.1", "3.2.2", "3.3.1"]
    assert matrix["python-version"] == ["3.10", "3.11", "3.12"]
    assert set(matrix["leg"]) == {"sweep", "multiproc"}
    # PyPI has a wheel for every release x Python here: nothing may be excluded silently
    assert "exclude" not in matrix


def test_local_matrix_runner_defaults_to_the_same_releases():
    tool = _matrix_tool()
    assert list(tool.DEFAULT_VERSIONS) == list(matrix_versions())


def test_every_setup_python_caches_pip(ci):
    setups = [s for job in ci["jobs"].values() for s in _uses(job, "actions/setup-python")]
    assert len(setups) >= 3
    for step in setups:
        assert step["with"]["cache"] == "pip"


def test_paddle_job_installs_and_asserts_the_matrix_version(ci):
    job = ci["jobs"]["paddle"]
    assert job["env"]["PADDLE_VERSION"] == "${{ matrix.paddle-version }}"
    runs = _runs(job)
    assert 'pip install "paddlepaddle==${PADDLE_VERSION}" -e ".[test]"' in runs
    sanity = next(s for s in _steps(job) if "sanity" in s.get("name", "").lower())
    assert "paddle.__version__ != want" in sanity["run"] and 'os.environ["PADDLE_VERSION"]' in sanity["run"]


def _sweep_command(job: dict[str, Any]) -> list[str]:
    step = next(s for s in _steps(job) if s.get("name") == "Parity sweep")
    assert step["if"] == "matrix.leg == 'sweep'"
    text = step["run"].replace("\\\n", " ")
    line = next(ln for ln in text.splitlines() if "paddle_spmd_port parity" in ln)
    assert 'args="--sample ${SAMPLE}"' in text and step["env"]["SAMPLE"] == "${{ inputs.sample }}"
    words = shlex.split(line.replace("$args", ""))
    return words[words.index("parity") + 1:]


def test_sweep_leg_writes_junit_and_the_summary(ci):
    job = ci["jobs"]["paddle"]
    argv = _sweep_command(job)
    assert "--junit" in argv and argv[argv.index("--report-dir") + 1] == "reports/parity"
    from paddle_spmd_port.parity.cli import parse_args  # the workflow's arguments must parse

    args = parse_args(argv)
    assert args.sample is None and str(args.junit) == "reports/junit/parity.xml"  # the full grid by default
    assert parse_args([*argv, "--sample", "50"]).sample == 50
    summary = next(s for s in _steps(job) if "summary" in s.get("name", "").lower())
    assert summary["if"].startswith("always()")
    assert "reports/parity/parity.md" in summary["run"] and '>> "$GITHUB_STEP_SUMMARY"' in summary["run"]


def test_multiproc_leg_runs_the_multiproc_tests(ci):
    job = ci["jobs"]["paddle"]
    step = next(s for s in _steps(job) if s.get("if") == "matrix.leg == 'multiproc'")
    assert "pytest" in step["run"] and "-m multiproc" in step["run"] and "--junitxml" in step["run"]
    single = next(s for s in _steps(job) if s.get("name") == "Tests (single process)")
    assert '-m "not multiproc and not gpu"' in single["run"]


def test_junit_is_uploaded_even_when_a_step_failed(ci):
    for name in ("paddle", "no-paddle", "gpu"):
        uploads = _uses(ci["jobs"][name], "actions/upload-artifact")
        assert uploads, name
        assert uploads[0]["if"] == "always()"
        assert "reports/junit/" in uploads[0]["with"]["path"]
    assert "matrix.paddle-version" in _uses(ci["jobs"]["paddle"], "actions/upload-artifact")[0]["with"]["name"]


def test_gpu_job_is_self_hosted_gated_and_runs_nccl_launch(ci):
    job = ci["jobs"]["gpu"]
    assert job["runs-on"] == ["self-hosted", "gpu"]
    assert "vars.HAS_GPU_RUNNER == 'true'" in job["if"] and "inputs.gpu" in job["if"]
    assert ci["on"]["workflow_dispatch"]["inputs"]["gpu"]["type"] == "boolean"
    assert job["env"]["PADDLE_INDEX"].startswith("https://www.paddlepaddle.org.cn/packages/stable/")
    runs = _runs(job)
    assert '"paddlepaddle-gpu==${PADDLE_VERSION}" -i "${PADDLE_INDEX}"' in runs
    assert "is_compiled_with_nccl()" in runs and "is_compiled_with_cuda()" in runs
    launches = [shlex.split(ln.strip())[1:] for ln in runs.splitlines() if "paddle_spmd_port launch" in ln]
    assert launches
    from paddle_spmd_port.launch.cli import build_parser  # the workflow's arguments must parse

    for words in launches:
        args = build_parser().parse_args(words[words.index("launch") + 1:])
        assert args.device == "gpu" and args.nproc >= 2  # the gpu device adds the SyncBatchNorm cases
    assert "-m gpu" in runs
    assert set(job["strategy"]["matrix"]["paddle-version"]) <= set(known_versions())


# --------------------------------------------------------------------------- tools/matrix.py
@pytest.mark.parametrize("line, summary", [
    ("28 passed in 8.50s", "28 passed"),
    ("1 failed, 27 passed, 3 skipped in 10.20s", "1 failed, 27 passed, 3 skipped"),
    ("===== 5 passed, 2 deselected in 3.1s =====", "5 passed, 2 deselected"),
])
def test_matrix_tool_reads_pytest_summaries(line, summary):
    m = _matrix_tool()._PYTEST_SUMMARY.match(line)
    assert m and m.group(1) == summary


def test_matrix_tool_table_separates_known_differences(tmp_path):
    tool = _matrix_tool()
    args = tool.parse_args(["--versions", "3.0.0,3.3.1", "--report-root", str(tmp_path)])
    old = tool.VersionRun("3.0.0", tmp_path / "v0", tmp_path / "r0", commit="6ed5dd3833c3")
    old.parity = {"rules": {"batch_norm": {"backend": "pir", "cases": 10, "cells": 340, "matching_cells": 200,
                                           "verdicts": {"match": 4, "known-difference": 6, "mismatch": 0}}}}
    old.tests_summary = "pass: 3 passed"
    new = tool.VersionRun("3.3.1", tmp_path / "v1", tmp_path / "r1", commit="7688495538f4")
    new.parity = {"rules": {"batch_norm": {"backend": "pir", "cases": 10, "cells": 340, "matching_cells": 330,
                                           "verdicts": {"match": 9, "known-difference": 0, "mismatch": 1}}}}
    old.parity["profile"] = {"headline": "Paddle 3.0.0 (6ed5dd3833): profile 3.0.0, 5 known differences"}
    table = tool.render([old, new], args)
    assert "- Paddle 3.0.0 (6ed5dd3833): profile 3.0.0, 5 known differences" in table
    assert "| 3.0.0 (6ed5dd3833) | batch_norm | pir | 10 | 340 | 200 | 4 | 6 | 0 |  | |" in table
    assert "| 3.3.1 (7688495538) | batch_norm | pir | 10 | 340 | 330 | 9 | 0 | **1** |  | |" in table
    assert "| **3.0.0** | **all rules** | | 10 | 340 | 200 | 4 | 6 | 0 | | pass: 3 passed |" in table
    assert tool.unexplained(old) == 0 and tool.unexplained(new) == 1
    brief = tool.render([old, new], tool.parse_args(["--brief"]))
    assert "| **3.0.0** | **all rules** |" in brief and "| 3.0.0 (6ed5dd3833) | batch_norm |" not in brief
    # a sweep without the known-difference class: said so, never shown as 0 known differences
    old.parity["rules"]["batch_norm"]["verdicts"].pop("known-difference")
    new.parity["rules"]["batch_norm"]["verdicts"].pop("known-difference")
    assert "| n/a |" in tool.render([old, new], args) and "no known-difference class" in tool.render([old], args)


def test_long_checks_run_weekly_with_commands_that_exist(ci, tmp_path, monkeypatch):
    """The scheduled job runs the long fuzz, 200,000 random cases and the mutation tool; each
    command must be one the repository has and its arguments must parse."""
    on = ci.get("on", ci.get(True))  # YAML 1.1 reads a bare `on` key as True
    assert on["schedule"][0]["cron"]
    job = ci["jobs"]["long-checks"]
    assert "schedule" in job["if"]
    runs = [s["run"] for s in _steps(job) if "run" in s]
    assert any(r.startswith("python tools/fuzz.py --examples 100000") for r in runs)
    assert any(r.startswith("python tools/mutants.py") for r in runs)
    parity = next(r for r in runs if "paddle_spmd_port parity --random" in r)
    argv = shlex.split(parity.replace('"${GITHUB_RUN_NUMBER}"', "7"))
    monkeypatch.chdir(tmp_path)
    from paddle_spmd_port.parity.cli import parse_args

    args = parse_args(argv[argv.index("parity") + 1:])
    assert args.random * len(args.rule_names) >= 200_000
    for tool in ("tools/fuzz.py", "tools/mutants.py"):
        assert (ROOT / tool).is_file()
