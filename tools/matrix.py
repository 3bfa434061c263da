"""Local version matrix: the parity sweep and the test suite against several Paddle releases.

    .venv/bin/python tools/matrix.py                         # 2.6.2 3.0.0 3.1.1 3.2.2 3.3.1, sample 300, tests
    .venv/bin/python tools/matrix.py --versions 3.3.1 --skip-tests --sample 0   # full grid, no tests
    .venv/bin/python tools/matrix.py --versions 3.0.0,3.3.1 --jobs 2   # two releases at once (needs the cores)

For each release X it keeps a virtualenv ``.venvs/paddle-X`` (made on first use, reused after:
created with this interpreter's ``venv``, then ``.ci/install`` with ``PADDLE_VERSION=X``: CI's install),
asserts that ``paddle.__version__`` is X, runs

    python -m paddle_spmd_port parity --sample N --report-dir reports/matrix/X --junit reports/matrix/X/parity.xml
    python -m pytest -q -m "not multiproc" --junitxml reports/matrix/X/pytest.xml   (unless --skip-tests;
                                                   2.6.2: tests/test_release_262.py only, OWN_TESTS)

and prints one table: release x rule -> cases, cells, matching cells, agreeing cases, known
differences (the sweep's ``known-difference`` class, from the release's profile in
``paddle_spmd_port/releases.py``), mismatches, and the other classes; plus the test suite's
result per release. The same table goes to ``reports/matrix/matrix.md`` and ``matrix.json``.
Logs of every step: ``reports/matrix/X/*.log``. Nothing it downloads is inside the git tree
(``.venvs/`` and ``reports/`` are ignored).

Exit status: 0 when every release has 0 unexplained mismatches and (unless skipped) a passing
test suite, 1 otherwise, 2 on bad usage (one line naming the argument, nothing made or written),
130/143 on SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paddle_spmd_port.releases import matrix_versions  # pure Python, no Paddle
from paddle_spmd_port.runctl.command import run_command
from paddle_spmd_port.runctl.exits import UsageError
from paddle_spmd_port.runctl.grammar import ArgumentParser, add_rules_argument, count, path_text, rule_keys, seconds
from paddle_spmd_port.runctl.paths import check_output_dir

REPO = Path(__file__).resolve().parent.parent

#: The newest profiled release of each minor line (paddle_spmd_port/releases.py).
DEFAULT_VERSIONS = matrix_versions()
AGREE = ("match", "both-raise-same")
OTHER = ("port-rejects-invalid", "native-crash", "unreachable", "not-run", "release-lacks")
KNOWN = "known-difference"

_CHECK = """
import json, importlib.metadata as md, importlib.util as iu
def ver(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None
spec = iu.find_spec("paddle_spmd_port")
print(json.dumps({"paddle": ver("paddlepaddle"), "port": ver("paddle_spmd_port"), "pytest": ver("pytest"),
                  "port_origin": spec.origin if spec else None}))
"""
_SANITY = ("import sys, warnings; warnings.filterwarnings('ignore'); import paddle; "
           "print(paddle.__version__, paddle.version.commit); sys.exit(paddle.__version__ != sys.argv[1])")
_PYTEST_SUMMARY = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+)(?: in [\d.]+s.*)?\s*=*$")


@dataclass
class VersionRun:
    version: str
    venv: Path
    report_dir: Path
    commit: str = ""
    setup: str = ""
    """Empty when the venv is ready, else what went wrong."""
    sweep_rc: int | None = None
    parity: dict[str, Any] = field(default_factory=dict)
    tests_rc: int | None = None
    tests_summary: str = "skipped"
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"


def log(msg: str) -> None:
    print(f"[matrix {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run_logged(cmd: list[str], log_path: Path, timeout: float | None = None, env: dict | None = None) -> int:
    """Run ``cmd`` in the repo root, output to ``log_path``; the return code (124 on timeout)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        fh.flush()
        try:
            return subprocess.run(cmd, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout,
                                  env=env).returncode
        except subprocess.TimeoutExpired:
            fh.write(f"\n[matrix] timed out after {timeout:.0f} s\n")
            return 124


def venv_state(python: Path) -> dict[str, Any]:
    if not python.exists():
        return {}
    out = subprocess.run([str(python), "-c", _CHECK], capture_output=True, text=True, cwd="/")
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {}


def ensure_venv(run: VersionRun, base_python: str, need_tests: bool) -> None:
    """Make or reuse ``.venvs/paddle-X`` with paddlepaddle==X and this package (editable)."""
    logs = run.report_dir / "setup.log"
    t0 = time.time()
    if not run.python.exists():
        log(f"{run.version}: creating {run.venv.relative_to(REPO) if run.venv.is_relative_to(REPO) else run.venv}")
        if run_logged([base_python, "-m", "venv", str(run.venv)], logs) != 0:
            run.setup = f"venv creation failed (see {logs})"
            return
    state = venv_state(run.python)
    ours = state.get("port_origin") or ""
    ready = (state.get("paddle") == run.version and ours.startswith(str(REPO / "paddle_spmd_port"))
             and (state.get("pytest") or not need_tests))
    if not ready:
        log(f"{run.version}: .ci/install: paddlepaddle=={run.version} -e .[test] (about 850 MB the first time)")
        env = {k: v for k, v in os.environ.items() if k not in ("PADDLE_PACKAGE", "PADDLE_INDEX")}
        env.update(PADDLE_VERSION=run.version, PIP_QUIET="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
        rc = run_logged([str(REPO / ".ci" / "install"), str(run.python)], logs, env=env)
        if rc != 0:
            run.setup = f"pip install failed with exit code {rc} (see {logs})"
            return
    else:
        log(f"{run.version}: reusing {run.venv}")
    out = subprocess.run([str(run.python), "-c", _SANITY, run.version], capture_output=True, text=True, cwd="/")
    words = out.stdout.split()
    if out.returncode != 0 or len(words) < 2:
        run.setup = f"installed Paddle is not {run.version}: {out.stdout.strip() or out.stderr.strip()[-300:]}"
        return
    run.commit = words[1]
    run.seconds["setup"] = time.time() - t0


def run_sweep(run: VersionRun, sample: int, workers: int, seed: int, rules: str | None) -> None:
    t0 = time.time()
    cmd = [str(run.python), "-m", "paddle_spmd_port", "parity", "--workers", str(workers), "--quiet",
           "--report-dir", str(run.report_dir), "--junit", str(run.report_dir / "parity.xml")]
    if sample:  # 0: the full grid
        cmd += ["--sample", str(sample), "--seed", str(seed)]
    if rules:
        cmd += ["--rules", rules]
    parity_json = run.report_dir / "parity.json"
    parity_json.unlink(missing_ok=True)
    run.sweep_rc = run_logged(cmd, run.report_dir / "parity.log")
    run.seconds["sweep"] = time.time() - t0
    if parity_json.exists():
        run.parity = json.loads(parity_json.read_text())


#: Releases whose tests are these files instead of the suite (the suite is written against Paddle 3.x;
#: CI's matrix leg for the release runs the same: .github/workflows/ci.yml).
OWN_TESTS = {"2.6.2": ["tests/test_release_262.py"]}


def run_tests(run: VersionRun, timeout: float, marker: str, extra: list[str]) -> None:
    t0 = time.time()
    log_path = run.report_dir / "pytest.log"
    log_path.unlink(missing_ok=True)
    cmd = [str(run.python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", marker,
           "--junitxml", str(run.report_dir / "pytest.xml"), *extra, *OWN_TESTS.get(run.version, [])]
    run.tests_rc = run_logged(cmd, log_path, timeout=timeout)
    run.seconds["tests"] = time.time() - t0
    summary = ""
    for line in reversed(log_path.read_text(errors="replace").splitlines()):
        m = _PYTEST_SUMMARY.match(line.strip())
        if m and re.search(r"\d+ (passed|failed|error|errors|skipped|deselected)", line):
            summary = m.group(1)
            break
    if run.tests_rc == 124:
        summary = f"timed out after {timeout:.0f} s" + (f" ({summary})" if summary else "")
    verdict = "pass" if run.tests_rc == 0 else "FAIL"
    run.tests_summary = f"{verdict}: {summary or f'exit code {run.tests_rc}'}"


def one_version(version: str, args: argparse.Namespace) -> VersionRun:
    run = VersionRun(version, (args.venv_root / f"paddle-{version}").absolute(),
                     (args.report_root / version).absolute())
    run.report_dir.mkdir(parents=True, exist_ok=True)
    (run.report_dir / "setup.log").unlink(missing_ok=True)
    ensure_venv(run, args.python, need_tests=not args.skip_tests)
    if run.setup:
        log(f"{version}: {run.setup}")
        return run
    what = f"sample {args.sample} per rule" if args.sample else "full grid"
    log(f"{version}: Paddle {version} ({run.commit[:10]}) ready; parity sweep, {what}")
    run_sweep(run, args.sample, args.workers, args.seed, args.rules)
    p = run.parity
    log(f"{version}: sweep exit {run.sweep_rc}, {p.get('total_cells', 0):,} cells, "
        f"{p.get('total_mismatches', '?')} mismatching cases ({run.seconds['sweep']:.0f} s)")
    if not args.skip_tests:
        log(f"{version}: test suite (-m '{args.test_marker}', timeout {args.test_timeout:.0f} s)")
        run_tests(run, args.test_timeout, args.test_marker, args.pytest_args)
        log(f"{version}: tests {run.tests_summary} ({run.seconds['tests']:.0f} s)")
    return run


# --------------------------------------------------------------------------- table
def rule_rows(run: VersionRun) -> list[dict[str, Any]]:
    rows = []
    for key, t in run.parity.get("rules", {}).items():
        v = t.get("verdicts", {})
        rows.append({
            "rule": t.get("rule", key), "backend": t.get("backend", ""), "cases": t.get("cases", 0),
            "cells": t.get("cells", 0),
            "matching_cells": t.get("matching_cells", 0), "agree": sum(v.get(k, 0) for k in AGREE),
            "known": v.get(KNOWN), "mismatch": v.get("mismatch", 0),
            "other": {k: v.get(k, 0) for k in OTHER if v.get(k, 0)},
        })
    return rows


def unexplained(run: VersionRun) -> int | None:
    """Mismatching cases the release's profile does not explain (None when the sweep did not run)."""
    if not run.parity:
        return None
    return sum(r["mismatch"] for r in rule_rows(run))


def _num(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"


def render(runs: list[VersionRun], args: argparse.Namespace) -> str:
    """One table: a row per release x rule (x backend), then a row per release with its totals
    and its test suite result."""
    has_known = any(r["known"] is not None for run in runs for r in rule_rows(run))
    head = ["paddle", "rule", "backend", "cases", "cells", "matching cells", "agree", "known diff", "mismatch",
            "other", "test suite"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    short = {"port-rejects-invalid": "invalid", "native-crash": "crash", "unreachable": "unreach", "not-run": "not run",
             "release-lacks": "lacks"}
    for run in runs:
        label = f"{run.version} ({run.commit[:10]})" if run.commit else run.version
        if run.setup:
            lines.append(f"| {label} | **setup failed** | | | | | | | | {run.setup} | |")
            continue
        rows = rule_rows(run)
        for r in [] if args.brief else rows:
            other = ", ".join(f"{short[k]} {n:,}" for k, n in r["other"].items())
            mism = f"**{r['mismatch']:,}**" if r["mismatch"] else "0"
            lines.append(f"| {label} | {r['rule']} | {r['backend']} | {r['cases']:,} | {r['cells']:,} | "
                         f"{r['matching_cells']:,} | {r['agree']:,} | {_num(r['known'])} | {mism} | {other} | |")
        if not rows:
            lines.append(f"| {label} | **no report** (sweep exit {run.sweep_rc}) | | | | | | | | | |")
        known = sum(r["known"] or 0 for r in rows) if has_known else None
        mism = unexplained(run)
        total_mism = "?" if mism is None else (f"**{mism:,}**" if mism else "0")
        lines.append(f"| **{run.version}** | **all rules** | | {sum(r['cases'] for r in rows):,} | "
                     f"{sum(r['cells'] for r in rows):,} | {sum(r['matching_cells'] for r in rows):,} | "
                     f"{sum(r['agree'] for r in rows):,} | {_num(known)} | {total_mism} | | "
                     f"{run.tests_summary} |")
    lines.append("")
    what = f"{args.sample} cases per rule (seed {args.seed})" if args.sample else "the full grid"
    lines.append(f"Sweep: {what}. agree = match + both raise the same; "
                 "other = port rejects invalid input / native crash / unreachable. Reports: "
                 f"{args.report_root}/<version>/parity.md, pytest.log.")
    if not has_known:
        lines.append("The sweep reports no known-difference class: every difference a release is known to have "
                     "is counted as a mismatch above.")
    for run in runs:
        headline = (run.parity.get("profile") or {}).get("headline")
        if headline:
            lines.append(f"- {headline}")
    for run in runs:
        if run.seconds:
            spent = ", ".join(f"{k} {v:.0f} s" for k, v in run.seconds.items())
            lines.append(f"- {run.version}: {spent}")
    return "\n".join(lines)


def _non_negative(text: str) -> int:
    """``--sample``: 0 (the full grid) or a whole number of cases. An argparse ``type``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; give 0 (the full grid) or more") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is not allowed; give 0 (the full grid) or more")
    return value


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Every argument checked here, before a venv is made or a report written (the shared grammar of
    paddle_spmd_port.runctl: one line naming the argument, exit 2)."""
    ap = ArgumentParser(prog="python tools/matrix.py", description=__doc__)
    ap.add_argument("--versions", default=",".join(DEFAULT_VERSIONS),
                    help="comma-separated paddlepaddle releases (default: %(default)s)")
    ap.add_argument("--sample", type=_non_negative, default=300,
                    help="cases per rule, a fixed random sample (default 300; 0: the full grid)")
    ap.add_argument("--seed", type=int, default=0, help="sample seed (default 0)")
    add_rules_argument(ap)
    ap.add_argument("--skip-tests", action="store_true", help="sweep only, no test suite")
    ap.add_argument("--brief", action="store_true", help="print one row per release (totals), not per rule")
    ap.add_argument("--jobs", type=count, default=1, help="releases run at the same time (default 1)")
    ap.add_argument("--workers", type=count, default=2, help="native worker processes per sweep (default 2)")
    ap.add_argument("--test-timeout", type=seconds, default=1500.0, help="seconds for one test suite run")
    ap.add_argument("--test-marker", default="not multiproc and not gpu",
                    help="pytest -m expression (default: %(default)r)")
    ap.add_argument("--pytest-args", default="", help="extra pytest arguments, space-separated")
    ap.add_argument("--python", type=path_text, default=Path(sys.executable),
                    help="interpreter that creates the venvs")
    ap.add_argument("--venv-root", type=path_text, default=REPO / ".venvs", help="where the venvs are kept")
    ap.add_argument("--report-root", type=path_text, default=REPO / "reports" / "matrix",
                    help="where the reports go")
    args = ap.parse_args(argv)
    args.version_list = [v.strip() for v in args.versions.split(",") if v.strip()]
    bad = [v for v in args.version_list if not re.fullmatch(r"\d+\.\d+\.\d+(\w+)?", v)]
    if bad or not args.version_list:
        raise UsageError("--versions", f"not a release number: {', '.join(bad) or '(none)'}",
                         "give releases like 3.0.0,3.3.1")
    # (all rules: no --rules on the sweeps' command lines, as before)
    args.rules = None if args.rules == list(rule_keys()) else ",".join(args.rules)
    if not (args.python.is_file() and os.access(args.python, os.X_OK)):
        raise UsageError("--python", f"{args.python} is not an executable file", "give a Python interpreter")
    check_output_dir(args.venv_root, "--venv-root")
    check_output_dir(args.report_root, "--report-root")
    args.pytest_args = args.pytest_args.split()
    return args


def _main(argv: list[str] | None) -> int:
    args = parse_args(argv)
    t0 = time.time()
    log(f"releases {', '.join(args.version_list)}; venvs in {args.venv_root}; reports in {args.report_root}")
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        runs = list(pool.map(lambda v: one_version(v, args), args.version_list))
    table = render(runs, args)
    args.report_root.mkdir(parents=True, exist_ok=True)
    (args.report_root / "matrix.md").write_text(f"# Version matrix\n\n{table}\n")
    (args.report_root / "matrix.json").write_text(json.dumps(
        [{"version": r.version, "commit": r.commit, "setup": r.setup, "sweep_rc": r.sweep_rc,
          "rules": rule_rows(r), "unexplained_mismatches": unexplained(r), "tests_rc": r.tests_rc,
          "tests": r.tests_summary, "seconds": r.seconds} for r in runs], indent=1))
    print()
    print(table)
    print(f"\n{time.time() - t0:.0f} s in all; table in {args.report_root / 'matrix.md'}")
    ok = all(not r.setup and unexplained(r) == 0 and (args.skip_tests or r.tests_rc == 0) for r in runs)
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    """Usage errors, signals and internal errors as every command has them (runctl.command.run_command)."""
    return run_command("matrix", lambda: _main(argv))


if __name__ == "__main__":
    sys.exit(main())
