"""The GitHub workflows: valid against GitHub's workflow schema (offline) and clean under zizmor's
offline audit (pinned actions, no persisted credentials); the CI matrix, tools/matrix.py and the
release profiles name the same Paddle releases; the package commands the workflow runs parse.
Also tools/matrix.py's own table and pytest-summary reading.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from paddle_spmd_port.releases import known_versions, matrix_versions
from tests.cli_checks import REPO
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


# --------------------------------------------------------------------------- the matrix = the release profiles
def test_ci_matrix_is_the_newest_release_of_each_minor_line(ci):
    assert ci["jobs"]["paddle"]["strategy"]["matrix"]["paddle-version"] == list(matrix_versions())


def test_local_matrix_runner_defaults_to_the_same_releases():
    tool = _matrix_tool()
    assert list(tool.DEFAULT_VERSIONS) == list(matrix_versions())


def test_gpu_job_runs_only_profiled_releases(ci):
    assert set(ci["jobs"]["gpu"]["strategy"]["matrix"]["paddle-version"]) <= set(known_versions())


# --------------------------------------------------------------------------- one install
def test_every_job_and_ci_run_install_through_ci_install(ci):
    """CI jobs and .ci/run install the same way: .ci/install (the test extra's pinned tools, Paddle
    by PADDLE_VERSION/PADDLE_PACKAGE/PADDLE_INDEX); no other pip install of packages anywhere."""
    for name, job in ci["jobs"].items():
        runs = _runs(job)
        assert ".ci/install" in runs, name
        assert not re.search(r"pip install (?!--quiet --upgrade pip)", runs), name
    run = (ROOT / ".ci" / "run").read_text()
    assert ".ci/install .venv/bin/python" in run
    assert [ln for ln in run.splitlines() if "pip install" in ln] == [
        ".venv/bin/python -m pip install --quiet --upgrade pip"]
    install = ROOT / ".ci" / "install"
    assert install.stat().st_mode & 0o111 and '-e ".[test]"' in install.read_text()


# --------------------------------------------------------------------------- the commands parse
def test_sweep_command_parses(ci, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # its --report-dir is relative: a report of an earlier local run must not count
    step = next(s for s in _steps(ci["jobs"]["paddle"]) if s.get("name") == "Parity sweep")
    line = next(ln for ln in step["run"].replace("\\\n", " ").splitlines() if "paddle_spmd_port parity" in ln)
    words = shlex.split(line.replace("$args", ""))
    argv = words[words.index("parity") + 1:]
    from paddle_spmd_port.parity.cli import parse_args

    args = parse_args(argv)
    assert args.sample is None and str(args.junit) == "reports/junit/parity.xml"  # the full grid by default
    assert parse_args([*argv, "--sample", "50"]).sample == 50  # what a manual run's input adds


def test_gpu_launch_commands_parse(ci):
    runs = _runs(ci["jobs"]["gpu"])
    launches = [shlex.split(ln.strip())[1:] for ln in runs.splitlines() if "paddle_spmd_port launch" in ln]
    assert launches
    from paddle_spmd_port.launch.cli import build_parser

    for words in launches:
        args = build_parser().parse_args(words[words.index("launch") + 1:])
        assert args.device == "gpu" and args.nproc >= 2  # the gpu device adds the SyncBatchNorm cases


def _long_runs(ci: dict[str, Any], job: str, shard: str) -> list[list[str]]:
    """The job's command lines, split into words, the part's $SHARD and run number filled in."""
    text = _runs(ci["jobs"][job]).replace("\\\n", " ")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("python ")]
    return [shlex.split(ln.replace('"${SHARD}"', shard).replace('"${GITHUB_RUN_NUMBER}"', "7").split(">")[0])
            for ln in lines]


def test_long_checks_run_as_parts_of_one_split(ci, tmp_path, monkeypatch):
    """The scheduled long checks -- the long fuzz, 475,000 random cases, the mutation tool -- run as
    a matrix of parts: every part runs each command with its own --shard K/M (M the matrix's size,
    K its entry) and uploads its reports under a name the summary job downloads."""
    job = ci["jobs"]["long-checks"]
    parts = job["strategy"]["matrix"]["part"]
    assert parts == list(range(1, len(parts) + 1)) and len(parts) >= 2
    assert job["env"]["SHARD"] == "${{ matrix.part }}/" + str(len(parts))
    monkeypatch.chdir(tmp_path)
    from paddle_spmd_port.parity.cli import parse_args
    from paddle_spmd_port.runctl.grammar import shard

    mutants = load_tool("mutants")
    for k in parts:
        runs = _long_runs(ci, "long-checks", f"{k}/{len(parts)}")
        by_tool = {w[1] if w[1] != "-m" else w[3]: w for w in runs}
        assert set(by_tool) == {"tools/fuzz.py", "parity", "tools/mutants.py"}, runs
        for tool in ("tools/fuzz.py", "tools/mutants.py"):
            assert (ROOT / tool).is_file()
        words = by_tool["parity"]
        args = parse_args(words[words.index("parity") + 1:])
        assert args.shard == (k, len(parts)) and args.random * len(args.rule_names) >= 200_000
        f = by_tool["tools/fuzz.py"]
        assert f[f.index("--shard") + 1] == f"{k}/{len(parts)}" and int(f[f.index("--examples") + 1]) >= 100_000
        m = by_tool["tools/mutants.py"]
        assert m[m.index("--shard") + 1] == f"{k}/{len(parts)}" and "--json" in m
        # every part's flags are accepted by the tools themselves
        assert shard(f[f.index("--shard") + 1]) == (k, len(parts))
        assert mutants.build_parser().parse_args(m[2:]).shard == (k, len(parts))
    upload = _uses(job, "actions/upload-artifact")
    assert len(upload) == 1 and upload[0]["with"]["name"] == "long-checks-part-${{ matrix.part }}"
    assert upload[0]["if"] == "always()" and upload[0]["with"]["path"] == "reports/long/"


def test_long_checks_summary_merges_every_part(ci, tmp_path, monkeypatch):
    """One merged verdict: the summary job needs the parts (and runs even when one failed), downloads
    every part's artifact, merges each check's reports (a part that uploaded nothing is then missing
    from the merge: exit 3), writes the job summary and fails unless all three merges exit 0."""
    job = ci["jobs"]["long-checks-summary"]
    assert job["needs"] == "long-checks" and job["if"].startswith("always() &&")
    down = _uses(job, "actions/download-artifact")
    assert len(down) == 1 and down[0]["with"]["pattern"] == "long-checks-part-*"
    path = down[0]["with"]["path"]
    runs = _long_runs(ci, "long-checks-summary", "")
    merges = {w[1] if w[1] != "-m" else w[3]: w for w in runs}
    assert set(merges) == {"parity", "tools/fuzz.py", "tools/mutants.py"}
    for tool, words in merges.items():
        sources = words[words.index("--merge") + 1:]
        assert sources[0].startswith(f"{path}/long-checks-part-*/"), (tool, words)
    monkeypatch.chdir(tmp_path)
    from paddle_spmd_port.parity.cli import parse_args

    parity = merges["parity"]
    assert parse_args(parity[parity.index("parity") + 1:]).merge  # a merge, not a run
    script = _runs(job)
    assert "GITHUB_STEP_SUMMARY" in script and 'test "${parity}" = 0 && test "${fuzz}" = 0' in script


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


@pytest.mark.parametrize("argv, names", [
    (("--rules", "no_such_rule"), "--rules"),  # was: venvs made and installed, then each sweep refused it
    (("--test-timeout", "0"), "--test-timeout"),
    (("--python", "{tmp}/no-python"), "--python"),
    (("--report-root", "/proc/matrix"), "--report-root"),  # was: a FileNotFoundError traceback at the end
    (("--venv-root", "{tmp}/afile/v"), "--venv-root"),
    (("--sample", "-1"), "--sample"),  # was: argparse's usage text and the error, many lines
    (("--jobs", "0"), "--jobs"),
    (("--versions", ","), "--versions"),
])
def test_matrix_tool_bad_input_is_one_line_and_exit_2_before_anything(argv, names, tmp_path):
    (tmp_path / "afile").write_text("x")
    roots = ["--venv-root", str(tmp_path / "v"), "--report-root", str(tmp_path / "r")]
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "matrix.py"), *roots, *argv], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(lines) == 1 and names in lines[0] and lines[0].startswith("paddle_spmd_port matrix: "), lines
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]  # no venv, no report
