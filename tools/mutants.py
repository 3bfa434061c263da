"""Mutation self-test: can the harness fail? Realistic one-line bugs, each judged for real.

Usage::

    python tools/mutants.py                       # every mutant; prints the table and the kill rate
    python tools/mutants.py --only ln-grad-og-partial-kept,compare-ignore-message
    python tools/mutants.py --list                # the mutants, nothing run
    python tools/mutants.py --sample 2000 --seed 0 --report-dir reports/mutants

Each mutant is ``(file, old text, new text, what)`` (:mod:`paddle_spmd_port.ops.kit.mutants`); a
family's mutants live in its folder (``ops/<family>/mutants.py``: the bugs its rules judge), this
tool keeps the shared code's (judged by tests). ``old`` must occur exactly once in
``paddle_spmd_port/<file>``: a selected mutant whose old text is not there once is refused before
any work (one line, exit 2), so a mutant cannot rot silently when the code moves. The tool
copies the package once (a snapshot of the working tree), applies each mutant to its own copy and
judges it with that copy first on ``PYTHONPATH`` (and as the working directory) -- the package in
the repository is never touched:

* rule mutants (``ops/<family>/rules.py`` and ``checks.py``, ``ops/kit/tensor.py``, ``notation.py``):
  ``python -m paddle_spmd_port parity --rules R --sample N --seed S --primary-only --report-dir
  <tmp> --quiet`` against native Paddle.
  exit 1 with a mismatching case in the report = **killed**; exit 0 = **survived**; anything
  else (3 = some case uncompared, a crash, a timeout) = **not judged**, never killed.
* pytest mutants (the comparator: ``compare.py``, ``outcome.py``; the oracle's kernels,
  ``ops/<family>/kernel.py`` and ``ops/kit/kernel.py``; the ``proposed`` rules; co-shard
  reading): ``python -m pytest -q`` on the test files the mutant names, run from a copy of
  ``tests/`` next to the mutated package (the tests import ``paddle_spmd_port``; run from the
  repository they would import the original). exit 1 (a test failed) = killed; 0 = survived;
  other = not judged.

Every judged run must show it used the copy: a ``sitecustomize`` in the copy records, at exit of
every Python process, where each ``paddle_spmd_port`` module came from; a run where any came from
elsewhere, or where the mutated module was never imported, is *not judged*. Before the mutants, the
unmutated snapshot is judged the same way (the baseline): it must pass, or the mutants it would
judge are not judged.

A mutant marked ``equivalent`` carries the reason no input can tell it from the original; it is
run all the same, and if it is killed the claim is wrong (reported, exit 1).

Long runs in parts: ``--shard K/M`` judges every M-th of the mutants selected (the K-th, the
K+M-th, ...; each part judges its own baseline), ``--json FILE`` writes the verdicts, and
``python tools/mutants.py --merge FILE...`` joins the parts' verdicts into the unsplit run's table
and kill rate; parts of different runs or a part given twice are refused (exit 2), a part missing
is incomplete (exit 3), never a pass.

Exit: 0 every non-equivalent mutant killed; 1 a non-equivalent mutant survived or an "equivalent"
one was killed (outranks 3); 2 bad usage or a stale mutant selected (one line); 3 some mutant not
judged (baseline failing, uncompared cases, the copy not imported); 4 an internal error; 130/143
interrupted. On 4, 130 and 143 the judging run in flight (its whole process group) is ended, the temp
copies are removed and the one line says how many mutants were judged (no table, no --json).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import py_compile
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from paddle_spmd_port.ops import FAMILIES, family_part  # pure Python, no Paddle
from paddle_spmd_port.ops.kit.mutants import PKG, Mutant, MutantSet, family_file, mutant
from paddle_spmd_port.runctl.command import run_command
from paddle_spmd_port.runctl.exits import EXIT_FINDING, EXIT_INCOMPLETE, EXIT_OK, UsageError
from paddle_spmd_port.runctl.grammar import ArgumentParser, add_shard_argument, positive
from paddle_spmd_port.runctl.paths import check_output_dir, check_output_file
from paddle_spmd_port.runctl.signals import Interrupted, add_detail

REPO = Path(__file__).resolve().parents[1]
COMPARE_TESTS = ("tests/test_compare.py",)
ORACLE_NORMS = ("tests/test_oracle_norms.py",)

TENSOR = family_file("kit", "tensor")
CMP = "compare.py"
OUT = "outcome.py"
KIT_PROPOSED = family_file("kit", "proposed")
KIT_KERNEL = family_file("kit", "kernel")

#: The mutants of the shared code no family's rules judge (the comparator, the outcome, the kits'
#: co-shard reading, proposed helpers and kernels), judged by their tests; each family's own
#: (ops/<family>/mutants.py) follow, family by family.
SHARED: tuple[Mutant, ...] = (
    mutant("proposed-coshard-uneven", KIT_PROPOSED,
           "            if not others & set(entry) and spec.shape[axis] % "
           "math.prod(spec.mesh.shape[m] for m in entry) == 0:",
           "            if not others & set(entry):",
           "proposed keeps a co-shard that splits its axis unevenly (a rank can get an empty piece)",
           tests=("tests/test_coshard.py",)),
    mutant("proposed-coshard-member-reused", KIT_PROPOSED,
           "            if not others & set(entry) and spec.shape[axis] % "
           "math.prod(spec.mesh.shape[m] for m in entry) == 0:",
           "            if spec.shape[axis] % math.prod(spec.mesh.shape[m] for m in entry) == 0:",
           "proposed gives back a co-shard whose other member already splits another axis (or is partial)",
           tests=("tests/test_coshard.py",)),
    # ------------------------------------------------------------------ the compat layer
    mutant("coshard-first-listed", TENSOR,
           "    return max(members, key=lambda m: mesh_shape[m] if 0 <= m < len(mesh_shape) else 0)",
           "    return members[0]",
           "a co-sharded axis reads its first listed mesh dim, not the largest (port rules and compat)",
           tests=("tests/test_compat.py", "tests/test_coshard.py")),
    mutant("coshard-last-of-ties", TENSOR,
           "    return max(members, key=lambda m: mesh_shape[m] if 0 <= m < len(mesh_shape) else 0)",
           "    return max(reversed(members), key=lambda m: mesh_shape[m] if 0 <= m < len(mesh_shape) else 0)",
           "among co-shard members of equal mesh size the last listed survives, not the first",
           tests=("tests/test_coshard.py",)),
    # ------------------------------------------------------------------ the comparator
    mutant("compare-fast-match-any-answers", CMP,
           "port.result is not None and port.result == native.result:",
           "port.result is not None and native.result is not None:",
           "the equal-answers shortcut takes any two answers as a match", tests=COMPARE_TESTS),
    mutant("compare-fast-raise-family-only", CMP,
           "(port.error.family, port.error.message) == (native.error.family, native.error.message)",
           "port.error.family == native.error.family",
           "the both-raise shortcut ignores the message", tests=COMPARE_TESTS),
    mutant("compare-ignore-dims-mapping", CMP,
           '(f"{prefix}.dims_mapping", str(list(a.dims_mapping)))',
           '(f"{prefix}.dims_mapping", "[]")',
           "dims_mapping cells always equal", tests=COMPARE_TESTS),
    mutant("compare-ignore-partial", CMP,
           '(f"{prefix}.partial", str(sorted(a.partial_dims)))',
           '(f"{prefix}.partial", "[]")',
           "partial-dims cells always equal", tests=COMPARE_TESTS),
    mutant("compare-ignore-mesh", CMP,
           '    mesh = "none" if m is None else f"',
           '    mesh = "any" if True else f"',
           "mesh cells always equal", tests=COMPARE_TESTS),
    mutant("compare-mesh-ignores-ids", CMP,
           "{list(m.shape)}{list(m.process_ids or ())}{list(m.dim_names or ())}",
           "{list(m.shape)}{list(m.dim_names or ())}",
           "meshes of one shape with other process ids compare equal", tests=COMPARE_TESTS),
    mutant("compare-mesh-ignores-names", CMP,
           "{list(m.shape)}{list(m.process_ids or ())}{list(m.dim_names or ())}",
           "{list(m.shape)}{list(m.process_ids or ())}",
           "meshes with other dim names compare equal", tests=COMPARE_TESTS),
    mutant("compare-ignore-message", CMP,
           'f"{outcome.error.family}: {outcome.error.message}"',
           'f"{outcome.error.family}"',
           "two errors of one family with different messages compare equal", tests=COMPARE_TESTS),
    mutant("compare-ignore-family", CMP,
           'f"{outcome.error.family}: {outcome.error.message}"',
           'f"{outcome.error.message}"',
           "two errors with one message and different families compare equal", tests=COMPARE_TESTS),
    mutant("compare-ignore-extra-attrs", CMP,
           "        for extra in range(len(names), len(attrs)):",
           "        for extra in range(len(attrs), len(attrs)):",
           "attrs beyond Paddle's signature are not compared", tests=COMPARE_TESTS),
    mutant("compare-crash-is-match", CMP,
           '        return Comparison("native-crash", n, 0)',
           '        return Comparison("match", n, n)',
           "a native crash counts as a match", tests=COMPARE_TESTS),
    mutant("compare-any-port-error-is-invalid", CMP,
           "    if port.error is not None and port.error.port_invalid:",
           "    if port.error is not None:",
           "every port error is filed as port-rejects-invalid", tests=COMPARE_TESTS),
    mutant("compare-errors-skip-cells", CMP,
           "    if diffs:",
           "    if diffs and port.error is None:",
           "when the port raised, differing cells still give both-raise-same", tests=COMPARE_TESTS),
    mutant("compare-unreachable-counts", CMP,
           'COMPARED = frozenset({"match", ',
           'COMPARED = frozenset({"unreachable", "match", ',
           "an unreachable case counts as compared (green without a comparison)", tests=COMPARE_TESTS),
    mutant("outcome-family-exact-class", OUT,
           "        if any(cls.__name__ == name for cls in type(exc).__mro__):",
           "        if type(exc).__name__ == name:",
           "the error family is the exact class name (ShardingConflictError is no NotImplementedError)",
           tests=COMPARE_TESTS),
    mutant("outcome-hint-kept", OUT,
           '    for marker in ("\\n  [Hint:", "[Hint:", "\\n\\n---", "\\n---"):',
           '    for marker in ("\\n\\n---", "\\n---"):',
           "Paddle's [Hint: ...] stays in the compared message", tests=COMPARE_TESTS),
    mutant("oracle-grad-stats-not-saved", KIT_KERNEL,
           "        for name, out in saved.items():",
           "        for name, out in ():",
           "a grad case's saved statistics are random, not what the forward saved", tests=ORACLE_NORMS),
)
MUTANTS: tuple[Mutant, ...] = SHARED + tuple(m for family in FAMILIES
                                             if (part := family_part(family, MutantSet)) is not None
                                             for m in part.mutants)


# --------------------------------------------------------------------------- checking the table
MUTANTS_BY_NAME = {m.name: m for m in MUTANTS}


def occurrences(mutant: Mutant, root: Path = REPO) -> int:
    """How many times the mutant's old text occurs in its file under ``root``."""
    path = root / PKG / mutant.file
    return path.read_text().count(mutant.old) if path.is_file() else 0


def stale(mutants: Sequence[Mutant], root: Path = REPO) -> list[str]:
    """Each mutant whose old text is not in its file exactly once, as ``name: why``: applied, it
    would plant nothing (or not the bug it names), so its verdict would mean nothing."""
    found = []
    for m in mutants:
        path = root / PKG / m.file
        if not path.is_file():
            found.append(f"{m.name}: no file {PKG}/{m.file}")
        elif (n := occurrences(m, root)) != 1:
            found.append(f"{m.name}: old text occurs {n} times in {PKG}/{m.file}")
    return found


def refuse_stale(mutants: Sequence[Mutant], root: Path = REPO) -> None:
    """Raise :class:`UsageError` (one line, exit 2) when a mutant selected is stale (see :func:`stale`)."""
    found = stale(mutants, root)
    if found:
        more = f" (and {len(found) - 1} more: {', '.join(f.split(':')[0] for f in found[1:])})" if found[1:] else ""
        raise UsageError("mutant " + found[0].split(":")[0], found[0].split(": ", 1)[1] + more,
                         "each mutant's old text must occur exactly once in its file: re-point it in its "
                         "table (ops/<family>/mutants.py, or tools/mutants.py for the shared code) at the "
                         "current code")


def check_table(mutants: Sequence[Mutant] = MUTANTS) -> list[str]:
    """Problems of the table itself (empty when sound): duplicate names, no-op mutants, an
    equivalent claim without a reason, a mutant judged by nothing."""
    problems = []
    seen = set()
    for m in mutants:
        if m.name in seen:
            problems.append(f"{m.name}: duplicate name")
        seen.add(m.name)
        if m.old == m.new:
            problems.append(f"{m.name}: new text equals old text")
        if bool(m.rules) == bool(m.tests):
            problems.append(f"{m.name}: needs either rules (parity) or tests (pytest), not both or neither")
        if not m.what.strip():
            problems.append(f"{m.name}: no description")
    return problems


def apply(mutant: Mutant, root: Path) -> None:
    """Apply ``mutant`` to the package copy under ``root`` (its old text must occur exactly once)."""
    path = root / PKG / mutant.file
    text = path.read_text()
    n = text.count(mutant.old)
    if n != 1:
        raise ValueError(f"old text occurs {n} times in {mutant.file}")
    path.write_text(text.replace(mutant.old, mutant.new, 1))
    py_compile.compile(str(path), doraise=True)  # a mutant that does not compile judges nothing


# --------------------------------------------------------------------------- copies and runs
_PROBE = '''"""Written by tools/mutants.py into a package copy: records where paddle_spmd_port came from."""
import atexit, json, os, sys


def _record():
    path = os.environ.get("MUTANTS_IMPORT_PROBE")
    if not path:
        return
    mods = {n: getattr(m, "__file__", None) for n, m in list(sys.modules.items())
            if n == "paddle_spmd_port" or n.startswith("paddle_spmd_port.")}
    if mods:
        with open(path, "a") as f:
            f.write(json.dumps(mods) + "\\n")


atexit.register(_record)
'''

#: the copy leaves out the built C module (_speedups.*.so), and every judged run sets
#: PADDLE_SPMD_PORT_PURE=1: a mutant of the Python reference must be what runs, not the C stand-in
#: built from the unmutated source (the C module is held to that reference by tests/test_speedups.py)
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "*.so", "*.pyd")


def snapshot(dest: Path) -> Path:
    """Copy the package (and tests/ + pyproject.toml, for the comparator's test runs) to ``dest``."""
    dest.mkdir(parents=True)
    shutil.copytree(REPO / PKG, dest / PKG, ignore=_IGNORE)
    shutil.copytree(REPO / "tests", dest / "tests", ignore=_IGNORE)
    shutil.copy2(REPO / "pyproject.toml", dest / "pyproject.toml")
    (dest / "sitecustomize.py").write_text(_PROBE)
    return dest


@dataclasses.dataclass
class Verdict:
    status: str
    """killed | survived | equivalent | not judged | wrongly equivalent"""
    how: str
    seconds: float = 0.0


def _run(cmd: list[str], cwd: Path, probe: Path, timeout: float, log: Path) -> tuple[int | None, str]:
    """Run ``cmd`` with the copy at ``cwd`` first on the path; (exit code or None on timeout, output)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env.update(PYTHONPATH=str(cwd), MUTANTS_IMPORT_PROBE=str(probe), PYTHONDONTWRITEBYTECODE="1",
               PADDLE_SPMD_PORT_PURE="1")
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        _end(proc)
        out, code = proc.communicate()[0] or "", None
    except BaseException:  # Interrupted: end the run's whole group (parity ends its workers on SIGTERM)
        _end(proc)
        raise
    log.write_text(out)
    return code, out


def _end(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _import_problem(probe: Path, copy: Path, module: str | None) -> str:
    """Why the run did not demonstrably use the copy ("" when it did)."""
    if not probe.is_file():
        return "no process recorded importing paddle_spmd_port"
    seen: dict[str, str] = {}
    for line in probe.read_text().splitlines():
        for name, file in json.loads(line).items():
            if file:
                seen[name] = file
    outside = sorted({f for f in seen.values() if not Path(f).resolve().is_relative_to(copy.resolve())})
    if outside:
        return f"imported paddle_spmd_port from outside the copy: {outside[0]}"
    if module and module not in seen:
        return f"{module} was never imported"
    return ""


def parity_cmd(rules: Sequence[str], sample: int, seed: int, report_dir: Path) -> list[str]:
    return [sys.executable, "-m", PKG, "parity", "--rules", ",".join(rules), "--sample", str(sample),
            "--seed", str(seed), "--primary-only", "--report-dir", str(report_dir), "--quiet"]


def pytest_cmd(tests: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", *tests]


def _mismatches(report_dir: Path) -> tuple[int, str]:
    """(mismatching cases, one example) from a parity report."""
    try:
        data = json.loads((report_dir / "parity.json").read_text())
    except (OSError, ValueError):
        return 0, ""
    total = int(data.get("total_mismatches") or 0)
    for key, tally in data.get("rules", {}).items():
        for example in (tally.get("examples") or {}).get("mismatch", [])[:1]:
            text = example if isinstance(example, str) else json.dumps(example)[:160]
            return total, f"{key}: {text}"
        if tally.get("verdicts", {}).get("mismatch"):
            return total, key
    return total, ""


def _port_invalid(report_dir: Path) -> int:
    try:
        data = json.loads((report_dir / "parity.json").read_text())
    except (OSError, ValueError):
        return 0
    return sum(t.get("verdicts", {}).get("port-rejects-invalid", 0) for t in data.get("rules", {}).values())


def judge_parity(copy: Path, rules: Sequence[str], sample: int, seed: int, work: Path, timeout: float,
                 module: str | None) -> tuple[str, str, int]:
    """(status, how, port-rejects-invalid count) of one sampled parity run on ``copy``."""
    report, probe = work / "report", work / "imports.jsonl"
    code, out = _run(parity_cmd(rules, sample, seed, report), copy, probe, timeout, work / "parity.log")
    sel = f"parity {','.join(rules)} sample {sample} seed {seed}"
    if code is None:
        return "not judged", f"{sel}: timed out after {timeout:.0f} s", 0
    problem = _import_problem(probe, copy, module)
    if problem:
        return "not judged", f"{sel}: {problem}", 0
    if code == EXIT_FINDING:
        n, example = _mismatches(report)
        if n:
            return "killed", f"{sel}: {n} mismatching case{'s' * (n != 1)}", 0
        last = out.strip().splitlines()[-1:] or ["no output"]
        return "not judged", f"{sel}: exit 1 without a mismatch in the report ({last[0][:120]})", 0
    if code == EXIT_OK:
        return "survived", f"{sel}: 0 mismatches", _port_invalid(report)
    if code == EXIT_INCOMPLETE:
        return "not judged", f"{sel}: exit 3, some case compared by no route", 0
    last = out.strip().splitlines()[-1:] or ["no output"]
    return "not judged", f"{sel}: exit {code} ({last[0][:120]})", 0


_FAILED = re.compile(r"^FAILED (\S+)", re.M)


def judge_pytest(copy: Path, tests: Sequence[str], work: Path, timeout: float,
                 module: str | None) -> tuple[str, str]:
    probe = work / "imports.jsonl"
    code, out = _run(pytest_cmd(tests), copy, probe, timeout, work / "pytest.log")
    sel = "pytest " + " ".join(Path(t).name for t in tests)
    if code is None:
        return "not judged", f"{sel}: timed out after {timeout:.0f} s"
    problem = _import_problem(probe, copy, module)
    if problem:
        return "not judged", f"{sel}: {problem}"
    if code == 1:
        failed = _FAILED.findall(out)
        first = failed[0].split("::")[-1] if failed else "?"
        return "killed", f"{sel}: {len(failed)} failed ({first})"
    if code == 0:
        return "survived", f"{sel}: all passed"
    last = out.strip().splitlines()[-1:] or ["no output"]
    return "not judged", f"{sel}: exit {code} ({last[0][:120]})"


def judge(mutant: Mutant, snap: Path, work: Path, *, sample: int, seed: int, timeout: float,
          baseline_invalid: dict[tuple[str, ...], int] | None = None) -> Verdict:
    """Apply ``mutant`` to a fresh copy of the snapshot ``snap`` and judge it (see module doc)."""
    start = time.monotonic()
    copy = work / "copy"
    shutil.copytree(snap, copy)
    try:
        try:
            apply(mutant, copy)
        except (ValueError, py_compile.PyCompileError) as exc:
            return Verdict("not judged", f"cannot apply: {str(exc).splitlines()[0][:120]}", time.monotonic() - start)
        if mutant.rules:
            status, how, invalid = judge_parity(copy, mutant.rules, sample, seed, work, timeout, mutant.module)
            base = (baseline_invalid or {}).get(mutant.rules)
            if status == "survived" and base is not None and invalid > base:
                how += f"; but the port rejects {invalid - base} more cases as invalid than unmutated (a hole)"
        else:
            status, how = judge_pytest(copy, mutant.tests, work, timeout, mutant.module)
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    if mutant.equivalent:
        status = {"survived": "equivalent", "killed": "wrongly equivalent"}.get(status, status)
    return Verdict(status, how, time.monotonic() - start)


def baseline(snap: Path, work: Path, mutants: Sequence[Mutant], *, sample: int, seed: int,
             timeout: float) -> tuple[dict[object, str], dict[tuple[str, ...], int]]:
    """Judge the unmutated snapshot the way each mutant will be judged. Returns (problem per
    rule-set / test-set that did not pass, port-rejects-invalid count per rule-set)."""
    problems: dict[object, str] = {}
    invalid: dict[tuple[str, ...], int] = {}
    copy = work / "copy"
    shutil.copytree(snap, copy)
    try:
        for i, rules in enumerate(sorted({m.rules for m in mutants if m.rules})):
            w = work / f"parity-{i}"
            w.mkdir()
            status, how, n = judge_parity(copy, rules, sample, seed, w, timeout, None)
            if status != "survived":
                problems[rules] = f"baseline {status}: {how}"
            invalid[rules] = n
        for i, tests in enumerate(sorted({m.tests for m in mutants if m.tests})):
            w = work / f"pytest-{i}"
            w.mkdir()
            status, how = judge_pytest(copy, tests, w, timeout, None)
            if status != "survived":
                problems[tests] = f"baseline {status}: {how}"
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    return problems, invalid


# --------------------------------------------------------------------------- the command
def build_parser() -> ArgumentParser:
    ap = ArgumentParser(prog="python tools/mutants.py", description=__doc__,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sample", type=int, default=2000, help="cases per rule in each parity run (default 2000)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the parity sample (default 0)")
    ap.add_argument("--only", action="append", default=[], metavar="NAME[,NAME]",
                    help="judge only these mutants (repeatable; see --list)")
    ap.add_argument("--list", action="store_true", help="print the mutants and exit")
    ap.add_argument("--report-dir", default=None,
                    help="keep every run's report and log here (DIR/<mutant>/); default: a temp dir, removed")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds one judging run may take (default 900)")
    add_shard_argument(ap, "the mutants selected (every M-th, from the K-th on)")
    ap.add_argument("--json", default=None, metavar="FILE", help="also write the verdicts to FILE (for --merge)")
    ap.add_argument("--merge", nargs="+", default=None, metavar="FILE",
                    help="join the --json files of a run's --shard parts into one table; nothing is run")
    return ap


def select(only: Sequence[str]) -> list[Mutant]:
    names = [n.strip() for chunk in only for n in chunk.split(",") if n.strip()]
    if not only:
        return list(MUTANTS)
    if not names:
        raise UsageError("--only", f"{', '.join(map(repr, only))} names no mutant", "see --list for the names")
    by_name = {m.name: m for m in MUTANTS}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise UsageError("--only", f"unknown mutant(s) {', '.join(unknown)}", "see --list for the names")
    return [by_name[n] for n in dict.fromkeys(names)]


def shard_of(mutants: Sequence[Mutant], shard: tuple[int, int] | None) -> list[Mutant]:
    """Part K of M of ``mutants``: the K-th, the K+M-th, ... (all of them without ``shard``)."""
    return list(mutants[shard[0] - 1::shard[1]] if shard else mutants)


def table(rows: Sequence[tuple[Mutant, Verdict]]) -> str:
    head = ("mutant", "file", "judged by", "verdict", "s", "how")
    body = [(m.name, m.file, m.target, v.status, f"{v.seconds:.1f}", v.how) for m, v in rows]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)


def summary(rows: Sequence[tuple[Mutant, Verdict]], seconds: float, sample: int, seed: int) -> int:
    """Print the table, the kill rate and each survivor; the exit status of the verdicts."""
    print()
    print(table(rows))
    count = {s: sum(v.status == s for _, v in rows)
             for s in ("killed", "survived", "equivalent", "not judged", "wrongly equivalent")}
    must_die = count["killed"] + count["survived"]
    rate = f"{count['killed']}/{must_die} = {100 * count['killed'] / must_die:.0f}%" if must_die else "n/a"
    print(f"\nkill rate {rate} of the non-equivalent mutants judged; {count['equivalent']} equivalent, "
          f"{count['not judged']} not judged, {count['wrongly equivalent']} claimed equivalent but killed; "
          f"{seconds:.0f} s (--sample {sample} --seed {seed})")
    for m, v in rows:
        if v.status == "survived":
            print(f"SURVIVED {m.name}: {m.what} ({v.how})")
        elif v.status == "wrongly equivalent":
            print(f"WRONGLY EQUIVALENT {m.name}: killed although marked equivalent ({m.equivalent})")
        elif v.status == "equivalent":
            print(f"equivalent {m.name}: {m.equivalent}")
    if count["survived"] or count["wrongly equivalent"]:
        return EXIT_FINDING
    return EXIT_INCOMPLETE if count["not judged"] else EXIT_OK


def merge(files: Sequence[str]) -> int:
    """``--merge``: the parts' verdicts in one table; 3 (at best) when a part is missing."""
    from paddle_spmd_port.parity.merge import read_tool_parts

    def check(data: dict) -> None:  # what is read below, each part on its own
        [(row["name"], row["status"], row["how"], float(row["seconds"])) for row in data["rows"]]
        float(data["seconds"]), list(data["config"]["mutants"]), data["config"]["sample"], data["config"]["seed"]

    parts, m, missing = read_tool_parts(files, "mutants", check)
    by_name = MUTANTS_BY_NAME
    config = parts[0]["config"]
    rows: list[tuple[Mutant, Verdict]] = []
    for data in parts:
        for row in data["rows"]:
            mutant = by_name.get(row["name"])
            if mutant is None:
                raise UsageError("--merge", f"{row['name']} is not a mutant of this table", "merge with the "
                                 "tools/mutants.py that judged the parts")
            rows.append((mutant, Verdict(row["status"], row["how"], row["seconds"])))
    order = {name: i for i, name in enumerate(config["mutants"])}
    rows.sort(key=lambda r: order.get(r[0].name, len(order)))
    print(f"mutants: merged {len(parts)} of {m} parts")
    code = summary(rows, sum(data["seconds"] for data in parts), config["sample"], config["seed"])
    present = {data["shard"][0] for data in parts}
    by_index = [by_name[name] for name in config["mutants"] if name in by_name]
    expected = {mu.name for k in present for mu in shard_of(by_index, (k, m))}
    judged = [mu.name for mu, _ in rows]
    if missing or sorted(judged) != sorted(expected):
        why = f"parts {', '.join(map(str, missing))} of {m} missing" if missing else \
            "the parts' verdicts are not those of their mutants"
        print(f"INCOMPLETE: {why}; their mutants were not judged")
        return code if code == EXIT_FINDING else EXIT_INCOMPLETE
    return code


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.merge:
        return merge(args.merge)
    positive(args.sample, "--sample", "a number of cases > 0")
    positive(args.timeout, "--timeout", "seconds > 0")
    selected = select(args.only)
    mutants = shard_of(selected, args.shard)
    keep = check_output_dir(args.report_dir, "--report-dir") if args.report_dir else None
    out = check_output_file(args.json, "--json") if args.json else None
    refuse_stale(selected)
    problems = check_table()
    if args.list:
        for m in mutants:
            eq = f"  [equivalent: {m.equivalent}]" if m.equivalent else ""
            print(f"{m.name:<34} {m.kind:<6} {m.target:<50} {m.file}: {m.what}{eq}")
        print(f"{len(mutants)} mutants ({sum(bool(m.rules) for m in mutants)} judged by parity, "
              f"{sum(bool(m.tests) for m in mutants)} by pytest)")
        return EXIT_OK
    for p in problems:
        print(f"mutants: table: {p}", file=sys.stderr)
    if problems:
        return EXIT_INCOMPLETE
    if not mutants:  # a --shard part of more parts than mutants: nothing to judge here, said so, never a pass
        if out is not None:  # still a part for --merge, whose join of every part is the unsplit run's table
            _write_part(out, args, selected, 0.0, [])
        k, m_parts = args.shard or (1, 1)
        print(f"mutants: part {k} of {m_parts} holds none of the {len(selected)} mutants selected: nothing judged "
              "(the other parts hold them all)")
        return EXIT_INCOMPLETE

    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="mutants-"))
    rows: list[tuple[Mutant, Verdict]] = []
    try:
        snap = snapshot(tmp / "snapshot")
        judged = []
        for m in mutants:
            n = occurrences(m, snap)
            if n != 1:
                rows.append((m, Verdict("not judged", f"old text occurs {n} times in {m.file} (rotten mutant)")))
            else:
                judged.append(m)
        root = keep or tmp / "runs"
        root.mkdir(parents=True, exist_ok=True)
        print(f"mutants: baseline (unmutated copy) for {len({m.rules or m.tests for m in judged})} selections ...",
              flush=True)
        bwork = root / "_baseline"
        shutil.rmtree(bwork, ignore_errors=True)
        bwork.mkdir()
        base_problems, base_invalid = baseline(snap, bwork, judged, sample=args.sample, seed=args.seed,
                                               timeout=args.timeout)
        for m in judged:
            problem = base_problems.get(m.rules or m.tests)
            if problem:
                rows.append((m, Verdict("not judged", problem)))
                continue
            work = root / m.name
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir()
            v = judge(m, snap, work, sample=args.sample, seed=args.seed, timeout=args.timeout,
                      baseline_invalid=base_invalid)
            print(f"  {m.name:<34} {v.status:<12} {v.seconds:6.1f} s  {v.how}", flush=True)
            rows.append((m, v))
    except (Interrupted, Exception) as exc:  # a signal or an internal error (exit 4): the judging run's
        # process group was ended by _run, the temp dir goes below; the line says how far it got
        add_detail(exc, f"{len(rows)} of {len(mutants)} mutants judged")
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    order = {m.name: i for i, m in enumerate(mutants)}
    rows.sort(key=lambda r: order[r[0].name])
    seconds = time.monotonic() - started
    if out is not None:
        _write_part(out, args, selected, seconds, rows)
    return summary(rows, seconds, args.sample, args.seed)


def _write_part(out: Path, args: argparse.Namespace, selected: Sequence[Mutant], seconds: float,
                rows: Sequence[tuple[Mutant, Verdict]]) -> None:
    """The --json file of this run (a part for --merge), its directories made: check_output_file
    allowed missing ones on the way."""
    out.parent.mkdir(parents=True, exist_ok=True)
    config = {"sample": args.sample, "seed": args.seed, "mutants": [m.name for m in selected]}
    out.write_text(json.dumps({"tool": "mutants", "shard": list(args.shard or (1, 1)), "config": config,
                               "seconds": seconds, "rows": [{"name": m.name, "status": v.status, "how": v.how,
                                                             "seconds": v.seconds} for m, v in rows]}))


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("mutants", lambda: _main(argv))


if __name__ == "__main__":
    sys.exit(main())
