"""Same input, same outcome: a case's native outcome does not depend on the cases run before it, on
their order or on the worker count, on every route (native/pool.py: invalid inputs run in a child each,
and once more in a fresh pool; two different answers are one outcome carrying both).

The short form: a small seeded random sample per route (invalid inputs included: random mode mutates a
fifth of its cases), run forward on 2 workers and reversed on 1, every outcome compared whole. The long
form (whole parity runs, shards merged, compared row by row with tools/same_cases.py):
docs/measurements/2026-12-07-determinism.md. tools/same_cases.py itself: tests/test_same_cases.py."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from paddle_spmd_port.case import Case
from paddle_spmd_port.grid import grid_for
from paddle_spmd_port.native.routes import routes_reaching
from paddle_spmd_port.ops import RULES
from paddle_spmd_port.parity.random_cases import random_cases
from paddle_spmd_port.validity import input_problem

ROOT = Path(__file__).resolve().parent.parent
#: per route, the rules sampled: those where Paddle was seen answering invalid input from memory it never
#: set, or crashing on it (the notes named in the module doc), on the routes that reach them
ROUTE_RULES = {"registry": ("instance_norm", "batch_norm_static"), "compiled": ("p_norm_grad", "instance_norm"),
               "pir": ("p_norm_grad", "group_norm")}
PER_RULE = 40
SEED = 7


def _sample(route: str) -> list[Case]:
    """Per rule: its grid's invalid inputs (where the order-dependent outcomes were seen) and a seeded
    random sample."""
    cases: list[Case] = []
    for rule in ROUTE_RULES[route]:
        assert rule in RULES and route in routes_reaching(rule), (rule, route)
        cases += [c for c in grid_for(rule) if "-invalid-" in c.case_id]
        cases += random_cases(rule, PER_RULE, seed=SEED)
    return cases


@pytest.mark.native
@pytest.mark.parametrize("route", sorted(ROUTE_RULES))
def test_outcomes_do_not_depend_on_order_or_workers(route: str) -> None:
    from paddle_spmd_port.native.pool import run_native

    cases = _sample(route)
    assert any(input_problem(c) is not None for c in cases)  # the sample holds the inputs that move
    forward, _ = run_native(cases, backend=route, workers=2, timeout=120)
    backward, _ = run_native(cases[::-1], backend=route, workers=1, timeout=120)
    backward.reverse()
    assert all(o.not_run is None for o in forward), [str(o) for o in forward if o.not_run is not None][:3]
    moved = [(c.case_id, str(a), str(b)) for c, a, b in zip(cases, forward, backward, strict=True)
             if a.to_json() != b.to_json()]
    assert not moved, moved[:5]


@pytest.mark.native
def test_the_comparison_catches_randomised_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact comparison above can fail: with the compiled caller started with randomised addresses
    (no fixed layout), two runs of its sample differ (an answer read from memory Paddle never set holds
    an address: p_norm_grad-invalid-10's out_grad mapping)."""
    from paddle_spmd_port.native import compiled
    from paddle_spmd_port.native.pool import run_native

    cases = _sample("compiled")
    monkeypatch.setattr(compiled, "fixed_layout_prefix", lambda: ())
    first, _ = run_native(cases, backend="compiled", workers=1, timeout=120)
    second, _ = run_native(cases, backend="compiled", workers=1, timeout=120)
    moved = [c.case_id for c, a, b in zip(cases, first, second, strict=True) if a.to_json() != b.to_json()]
    assert moved


# ------------------------------------------------- the whole command, twice (tools/same_cases.py: test_same_cases.py)
def _tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "tools" / "same_cases.py"), *args], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)


@pytest.mark.native
def test_one_seed_run_twice_gives_equal_reports(tmp_path: Path) -> None:
    """The whole command, twice (2 workers, then 1), on the compiled route (no Python worker to start: the
    cheapest): equal rows, timings aside; a row doctored in one of the two reports is then caught."""
    run = [sys.executable, "-m", "paddle_spmd_port", "parity", "--rules", "instance_norm", "--random", "40",
           "--seed", str(SEED), "--backend", "compiled", "--quiet"]
    for name, workers in (("a", "2"), ("b", "1")):
        done = subprocess.run([*run, "--workers", workers, "--report-dir", str(tmp_path / name)], capture_output=True,
                              text=True, timeout=300, cwd=ROOT)
        assert done.returncode in (0, 1), done.stdout[-1000:] + done.stderr[-1000:]
    same = _tool(str(tmp_path / "a"), str(tmp_path / "b"))
    assert same.returncode == 0, same.stdout + same.stderr
    shutil.copytree(tmp_path / "b", tmp_path / "c")
    path = tmp_path / "c" / "parity-cases.jsonl.gz"
    rows = [json.loads(line) for line in gzip.open(path, "rt")]
    assert rows, "the sample gave no per-case row to doctor"
    rows[0]["native"] += " (doctored)"
    with gzip.open(path, "wt") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)
    assert _tool(str(tmp_path / "a"), str(tmp_path / "c")).returncode == 1


# ------------------------------------------------- a re-run that gives no answer
#: The driver: the re-run's caller (memory layout 1) never answers, a stand-in for a re-run timing out on a
#: loaded machine; the sweep's own caller (layout 0) runs as it is.
RERUN_HANGS = '''
import subprocess, sys
from paddle_spmd_port.native import compiled
_start = compiled.start_program
def start_program(binary, stderr=subprocess.DEVNULL, new_session=False, isolating=False, layout=0):
    if layout == 1:
        return subprocess.Popen(["sleep", "600"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                bufsize=0, start_new_session=new_session)
    return _start(binary, stderr, new_session, isolating, layout)
compiled.start_program = start_program
from paddle_spmd_port.cli import main
sys.exit(main(sys.argv[1:]))
'''


@pytest.mark.native
def test_a_re_run_that_gives_no_answer_is_not_re_checked_and_fails_closed(tmp_path: Path) -> None:
    """Every invalid input Paddle answered is owed a second run; when that run gives no answer (here its
    caller hangs until the timeout, three times, then the slice gives up), the case keeps its first
    answer and verdict, marked not re-checked: in its per-case row, counted in parity.json and on the
    status line, and the run exits 3. (Before: the first answer was kept without a word, exit 0.)
    The timeouts are short because each of the six hangs waits them out: the whole sweep answers in
    under a second (0.5 s at a load of 5 on 2 cores), and the run with --allow-uncompared passes
    whether its sweep or only its re-run gave no answer."""
    from tests.helpers import skip_if_compiled_unreachable

    skip_if_compiled_unreachable()
    driver = tmp_path / "driver.py"
    driver.write_text(RERUN_HANGS)
    out = tmp_path / "r"
    done = subprocess.run([sys.executable, str(driver), "parity", "--rules", "instance_norm", "--random", "40",
                           "--seed", str(SEED), "--backend", "compiled", "--workers", "1", "--timeout", "2",
                           "--quiet", "--junit", str(tmp_path / "j.xml"), "--report-dir", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    context = done.stdout[-2000:] + done.stderr[-2000:]
    assert done.returncode == 3, context
    data = json.loads((out / "parity.json").read_text())
    assert data["total_mismatches"] == 0 and data["total_uncompared"] == 0, context
    rechk = data["total_not_rechecked"]
    assert rechk > 0 and data["status"].startswith("FAILED CLOSED: ") and \
        f"{rechk:,} cases not re-checked (their re-run gave no answer)" in data["status"], data["status"]
    assert f", {rechk:,} not re-checked" in done.stdout.splitlines()[-1], context
    rows = [json.loads(line) for line in gzip.open(out / "parity-cases.jsonl.gz", "rt")]
    marked = [r for r in rows if " || not re-checked: " in r["native"]]
    assert len(marked) == rechk, [r["native"] for r in rows][:5]
    assert all("worker timed out: no answer within 2 s" in r["native"]
               or "failed 3 times in a row" in r["native"] for r in marked), marked[0]["native"]
    assert not [r for r in rows if r["verdict"] == "native-varies"]
    junit = (tmp_path / "j.xml").read_text()
    assert f'<failure message="{rechk} cases not re-checked (their re-run gave no answer)"/>' in junit, junit[:1000]
    assert '<testsuite name="parity.instance_norm@compiled" tests="1" failures="1">' in junit, junit[:1000]
    accepted = subprocess.run([sys.executable, str(driver), "parity", "--rules", "instance_norm", "--random", "40",
                               "--seed", str(SEED), "--backend", "compiled", "--workers", "1", "--timeout", "1",
                               "--quiet", "--allow-uncompared", "--report-dir", str(tmp_path / "a")],
                              capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert accepted.returncode == 0, accepted.stdout[-1000:] + accepted.stderr[-1000:]
    assert json.loads((tmp_path / "a" / "parity.json").read_text())["status"].startswith("INCOMPLETE, ACCEPTED")


def test_not_re_checked_survives_the_outcome_text_and_a_merge_of_parts() -> None:
    """The mark is shown by the outcome's text but is no part of its answer (to_json), and a report merged
    from parts (parity --merge) still counts it."""
    from paddle_spmd_port.native.pool import varied
    from paddle_spmd_port.outcome import Outcome
    from paddle_spmd_port.parity.merge import _add_tally, _tally
    from paddle_spmd_port.parity.report import GroupTally

    first = Outcome(unreachable="an answer")
    marked = varied(first, Outcome(not_run="worker timed out: no answer within 5 s"))
    assert marked.not_rechecked == "worker timed out: no answer within 5 s" and marked.varies is None
    assert str(marked) == "unreachable: an answer || not re-checked: worker timed out: no answer within 5 s"
    assert marked.to_json() == first.to_json() and varied(first, first) is first
    part = GroupTally("instance_norm", "compiled", not_rechecked=2)
    into = _tally(part.to_json())
    _add_tally(into, _tally(part.to_json()))
    assert into.not_rechecked == 4


#: An input invalid for batch_norm (a data_format that is no layout) that Paddle's rule answers on the
#: compiled route: an answer owed a second run.
INVALID_ANSWERED = ["batch_norm", "--backend", "compiled", "--mesh", "2", "--x-shape", "8,6,4,4", "--x-mapping",
                    "0,-1,-1,-1", "--data-format", "NCWH"]


@pytest.mark.native
def test_infer_fails_closed_on_an_answer_not_re_checked(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """infer's verdict of a case answered once whose re-run gave no answer stands, marked, and exits 3
    (as parity does) with one line saying why; the same case re-checked exits 0 (the mutant: an infer
    that reads only the verdict, as before, exits 0 on both)."""
    import subprocess as sp

    from paddle_spmd_port.native import compiled
    from paddle_spmd_port.parity import infer_cli
    from tests.helpers import skip_if_compiled_unreachable

    skip_if_compiled_unreachable()
    assert infer_cli.main(INVALID_ANSWERED) == 0
    out = capsys.readouterr()
    assert "verdict: port-rejects-invalid" in out.out and "not re-checked" not in out.out + out.err, out
    real = compiled.start_program

    def start_program(binary, stderr=sp.DEVNULL, new_session=False, isolating=False, layout=0):
        if layout == 1:  # the re-run's caller never answers: a re-run timing out (RERUN_HANGS above)
            return sp.Popen(["sleep", "600"], stdin=sp.PIPE, stdout=sp.PIPE, stderr=stderr, bufsize=0,
                            start_new_session=new_session)
        return real(binary, stderr, new_session, isolating, layout)

    monkeypatch.setattr(compiled, "start_program", start_program)
    assert infer_cli.main([*INVALID_ANSWERED, "--timeout", "2"]) == 3  # (the default gives a worker minutes)
    out = capsys.readouterr()
    assert "verdict: port-rejects-invalid" in out.out, out.out
    assert "\n  not re-checked: worker timed out: no answer within 2 s\n" in out.out, out.out
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("paddle_spmd_port infer: not re-checked (port-rejects-invalid "
                                                   "on one run): the invalid input's re-run gave no answer"), out.err


def test_infer_shows_both_answers_of_a_case_paddle_answers_from_unset_memory(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A native answer that differed in a fresh process (Paddle read memory it never set) is shown
    with the other run's answer, cell by cell, under it: both answers, as the parity record keeps them
    (the mutant: a _show that prints only the first run's cells shows no second answer)."""
    import dataclasses

    from paddle_spmd_port.native import pool
    from paddle_spmd_port.outcome import port_outcome
    from paddle_spmd_port.parity import infer_cli

    argv = ["layer_norm", "--backend", "registry", "--mesh", "2", "--x-shape", "8,6", "--x-mapping", "0,-1"]
    case = infer_cli.case_from_args(infer_cli.build_parser().parse_args(argv))
    first = port_outcome(case)
    assert first.result is not None
    other_x = dataclasses.replace(first.result.inputs[0], dims_mapping=(-1, -1))
    second = dataclasses.replace(first, result=dataclasses.replace(
        first.result, inputs=(other_x, *first.result.inputs[1:])))
    varied = dataclasses.replace(first, varies=second)
    monkeypatch.setattr(pool, "run_native", lambda cases, **_: ([varied], {"version": "3.3.1"}))
    code = infer_cli.main(argv)
    out = capsys.readouterr().out
    assert "verdict: native-varies" in out and code == 0, out
    native = out.split("native (registry, Paddle 3.3.1):\n", 1)[1]
    shown, _, rest = native.partition("  another run of the case, in a fresh process:\n")
    assert rest, native
    assert "in  x               [0,-1]" in shown and "in  x               [-1,-1]" in rest, native
