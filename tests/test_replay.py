"""Every repro line reproduces what was recorded: a real sweep's records, of every verdict class and
every route (co-shard ones included), replayed with ``infer`` print the same route and the same
verdict class, and exit as that class says.

The sweep is a real ``parity`` run over rules that cover the three routes (the co-shard set, and a
grid sample for answers and same errors). Classes a healthy Paddle 3.3.1 never gives are planted,
in this process, for the sweep and its replays alike: a port rule that answers wrong (mismatch), a
release profile that explains half of those (known difference), and the compiled caller's replies
turned into garbage or a crash report for some answers (undecodable, native crash). A *not run*
record is not replayed: it names a condition of the run (a timeout, a missing backend), not of the
case. Records of classes the report does not list (match, same error) are the sweep's cases
without a record, replayed with the line the report prints for a case.
"""

from __future__ import annotations

import gzip
import json
import re
import shlex
import subprocess
import sys
import zlib
from collections import Counter

import pytest

from paddle_spmd_port.case import Case
from paddle_spmd_port.compare import COMPARED
from paddle_spmd_port.native import compiled
from paddle_spmd_port.ops.registry import PADDLE_RULES
from paddle_spmd_port.outcome import port_outcome
from paddle_spmd_port.parity import cli as parity_cli
from paddle_spmd_port.parity import infer_cli
from paddle_spmd_port.parity.report import CASES_FILE
from paddle_spmd_port.parity.repro import one_line_repro, repro_snippet
from paddle_spmd_port.reporting import REPRO_PYTHON
from paddle_spmd_port.types import DistAttr, SpmdResult
from tests.cli_checks import REPO
from tests.helpers import skip_if_compiled_unreachable

pytestmark = pytest.mark.native
pytest.importorskip("paddle")

RULES = "layer_norm,batch_norm,group_norm"  # routes: registry+pir, compiled+pir, all three
RUNS = {"coshard": ["--coshard", "--sample", "12"], "grid": ["--sample", "6"]}
PLANTED_RULE = "layer_norm"
GARBAGE = b"R 1 A,1,94285896066016,1,0,6430,1,0,0 1 A,-,1,-1,0"
#: Every (route, class) the replays must cover (each route's classes as the planted sweep gives them).
MUST_COVER = {
    ("registry", "match"), ("registry", "both-raise-same"), ("registry", "port-rejects-invalid"),
    ("registry", "mismatch"), ("registry", "known-difference"),
    ("compiled", "match"), ("compiled", "both-raise-same"), ("compiled", "port-rejects-invalid"),
    ("compiled", "undecodable"), ("compiled", "native-crash"),
    ("pir", "match"), ("pir", "port-rejects-invalid"), ("pir", "unreachable"), ("pir", "mismatch"),
    ("pir", "known-difference"),
}
EXIT = {"mismatch": 1, **{c: 0 for c in COMPARED - {"mismatch"}}}  # every other class: 3


def _wrong_layer_norm(real):
    def planted(*args):  # the first output's mesh dropped: one cell differs wherever the rule answers
        res = real(*args)
        out0 = res.outputs[0]
        return SpmdResult(res.inputs, (DistAttr.make(out0.dims_mapping, out0.partial_dims, None), *res.outputs[1:]))
    return planted


class _PlantedProfile:
    """The installed release's profile, plus one planted known difference: half the planted mismatches."""

    def __init__(self, real):
        self.real = real
        self.is_newer_than_known = False

    def to_json(self):
        return {**self.real.to_json(), "headline": "planted for tests/test_replay.py"}

    def __getattr__(self, name):  # everything else is the real profile's
        return getattr(self.real, name)

    def classify(self, case, port, native, cmp=None):
        if case.rule == PLANTED_RULE and cmp is not None and cmp.verdict == "mismatch" \
                and zlib.crc32(case.json_text().encode()) % 2:  # (the replay reads the same case, id included)
            return "known-difference", "known difference for the test: the planted rule drops a mesh"
        return self.real.classify(case, port, native, cmp)

    def explain(self, case, port, native, cmp=None):
        found = self.classify(case, port, native, cmp)
        return None if found is None else found[1]


def _planted_reply(line: bytes) -> bytes:
    if not line.startswith(b"R "):
        return line
    pick = zlib.crc32(line) % 5  # by the reply's content: a case gets the same plant in the sweep and its replay
    return GARBAGE if pick == 0 else b"C 11" if pick == 1 else line


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """The planted sweep's records per run, with the plants still in place for the replays."""
    skip_if_compiled_unreachable()
    out = tmp_path_factory.mktemp("replay")
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(PADDLE_RULES, PLANTED_RULE, _wrong_layer_norm(PADDLE_RULES[PLANTED_RULE]))
        for module in (parity_cli, infer_cli):
            real_detect = module.detect_release
            mp.setattr(module, "detect_release", lambda v, c="", real=real_detect: _PlantedProfile(real(v, c)))
        real_outcomes_of = compiled.outcomes_of
        mp.setattr(compiled, "outcomes_of", lambda lines: real_outcomes_of([_planted_reply(x) for x in lines]))
        runs = {}
        for name, extra in RUNS.items():
            code = parity_cli.main(["--quiet", "--rules", RULES, *extra, "--report-dir", str(out / name)])
            with gzip.open(out / name / CASES_FILE, "rt") as fh:
                records = [json.loads(line) for line in fh]
            runs[name] = (code, records, json.loads((out / name / "parity.json").read_text()))
        yield out, runs


def _unrecorded(run: str, records: list[dict]) -> list[tuple[str, str, str]]:
    """(backend, class, repro line) of the run's cases without a record: matches and same errors."""
    recorded = {(r["backend"], r["id"]) for r in records}
    extra = RUNS[run]
    rows = []
    for rule in RULES.split(","):
        cases = parity_cli.select_cases(rule, None, int(extra[-1]), 0, coshard="--coshard" in extra)
        for backend in parity_cli.DEFAULT_BACKENDS[rule]:
            for case in cases:
                if (backend, case.case_id) not in recorded:
                    verdict = "both-raise-same" if port_outcome(case).error else "match"
                    rows.append((backend, verdict, one_line_repro(case, backend)))
    return rows


def _chosen(runs) -> list[tuple[str, str, str, str]]:
    """(run, backend, class, repro line): one record per route and class, a co-shard one where
    the class has one (each replay of a registry or PIR record starts a Paddle worker: seconds)."""
    chosen: dict[tuple[str, str], tuple[str, str, str, str]] = {}
    for run, (_, records, _) in runs.items():
        rows = [(r["backend"], r["verdict"], r["repro"]) for r in records] + _unrecorded(run, records)
        for backend, verdict, line in rows:
            held = chosen.get((backend, verdict))
            if held is None or ("coshard" in line and "coshard" not in held[3]):
                chosen[(backend, verdict)] = (run, backend, verdict, line)
    return list(chosen.values())


def _replay(line: str, capsys) -> tuple[int, str, str, str]:
    argv = shlex.split(line)
    assert argv[:4] == [*shlex.split(REPRO_PYTHON), "-m", "paddle_spmd_port", "infer"], line
    code = infer_cli.main(argv[4:])
    printed = capsys.readouterr().out
    route = re.search(r"^route: (\S+)", printed, re.M)
    verdict = re.search(r"^verdict: (\S+)", printed, re.M)
    return code, route[1] if route else "?", verdict[1] if verdict else "?", printed


def test_the_sweep_recorded_every_route_and_class(sweep):
    _, runs = sweep
    assert runs["grid"][0] == 1  # the planted mismatches are findings
    got = {(r["backend"], r["verdict"]) for _, records, _ in runs.values() for r in records}
    got |= {(b, v) for run, (_, records, _) in runs.items() for b, v, _ in _unrecorded(run, records)}
    assert MUST_COVER <= got, MUST_COVER - got
    for _, records, _ in runs.values():
        for r in records:
            head = f"{REPRO_PYTHON} -m paddle_spmd_port infer --backend {r['backend']} --case-json '"
            assert r["repro"].startswith(head)
        assert any("coshard" in r["id"] for r in records)


def test_every_replayed_record_prints_the_recorded_route_and_class(sweep, capsys):
    _, runs = sweep
    chosen = _chosen(runs)
    wrong, counts = [], Counter()
    for run, backend, verdict, line in chosen:
        code, route, again, printed = _replay(line, capsys)
        counts[(backend, verdict)] += 1
        if (route, again, code) != (backend, verdict, EXIT.get(verdict, 3)):
            wrong.append(f"{run} {backend} {verdict} -> route {route}, verdict {again}, exit {code}\n{line}\n{printed}")
    assert not wrong, "\n\n".join(wrong[:3])
    covered = set(counts)
    assert MUST_COVER <= covered, MUST_COVER - covered
    coshard = sum(1 for _, _, _, line in chosen if "coshard" in line)
    assert coshard >= 5
    print(f"\nreplayed {len(chosen)} records ({coshard} co-shard) over {len(covered)} (route, class) pairs: "
          + ", ".join(f"{b}/{v} {n}" for (b, v), n in sorted(counts.items())))


def test_a_per_case_record_and_at_file_replay_as_the_line_does(sweep, capsys, tmp_path):
    out, runs = sweep
    records = runs["coshard"][1]
    record = next(r for r in records if r["backend"] == "pir" and r["verdict"] == "unreachable")
    one = tmp_path / "one.json"
    one.write_text(json.dumps(record) + "\n")
    for argv in (["--case-json", json.dumps(record)], ["--case-json", f"@{one}"]):
        code = infer_cli.main(argv)
        printed = capsys.readouterr().out
        assert code == 3 and "route: pir (the record's)" in printed and "verdict: unreachable" in printed, printed
        assert "recorded: unreachable" in printed
    # --backend beats the record's route (replaying on another route is allowed, and says so)
    code = infer_cli.main(["--backend", "compiled", "--case-json", f"@{one}"])
    assert "route: compiled\n" in capsys.readouterr().out


def test_the_printed_command_replays_in_a_fresh_process(sweep, tmp_path):
    """As pasted into a shell: the records whose class does not depend on a plant."""
    _, runs = sweep
    records = runs["coshard"][1]
    picks = [next(r for r in records if (r["backend"], r["verdict"]) == key)
             for key in (("pir", "unreachable"), ("registry", "port-rejects-invalid"),
                         ("compiled", "port-rejects-invalid"))]
    for r in picks:
        argv = shlex.split(r["repro"])
        done = subprocess.run([sys.executable, *argv[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
        assert f"route: {r['backend']}\n" in done.stdout and f"verdict: {r['verdict']} " in done.stdout, done
        assert done.returncode == EXIT.get(r["verdict"], 3) and "Traceback" not in done.stderr


def test_at_file_holding_many_records_is_refused_in_one_line(sweep, tmp_path):
    out, _ = sweep
    many = out / "coshard" / CASES_FILE
    for arg, words in ((f"@{many}", "lines, not one record"), (f"@{tmp_path / 'none.json'}", "cannot read"),
                       ("@", "names no file")):
        done = subprocess.run([sys.executable, "-m", "paddle_spmd_port", "infer", "--case-json", arg],
                              cwd=tmp_path, capture_output=True, text=True, timeout=60,
                              env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and "--case-json" in lines[0] and words in lines[0], done


def test_the_show_repro_snippet_runs_on_the_recorded_route(sweep, tmp_path):
    _, runs = sweep
    record = next(r for r in runs["coshard"][1] if (r["backend"], r["verdict"]) == ("compiled", "port-rejects-invalid"))
    snippet = repro_snippet(Case.from_json(record["case"]), "compiled")
    script = tmp_path / "snippet.py"
    script.write_text(snippet)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert "route : compiled" in done.stdout and "verdict: port-rejects-invalid" in done.stdout, done.stdout


@pytest.mark.parametrize("mapping, want", [("(0,1),-1,-1", ((0, 1), -1, -1)), ("[0,1],-1,-1", ((0, 1), -1, -1)),
                                           ("[(0,1),-1,-1]", ((0, 1), -1, -1)), ("[[0,1],-1,-1]", ((0, 1), -1, -1)),
                                           ("-1,(1,0),-1", (-1, (1, 0), -1)), ("0,-1,-1", (0, -1, -1)),
                                           ("[0,-1,-1]", (0, -1, -1))])
def test_a_coshard_mapping_as_a_report_prints_it_is_read_as_the_json_form(mapping, want):
    args = infer_cli.build_parser().parse_args(["layer_norm", "--mesh", "2x2", "--x-shape", "8,6,4",
                                                f"--x-mapping={mapping}"])
    case = infer_cli.case_from_args(args)
    assert case.inputs[0].dims_mapping == want
    assert infer_cli.case_from_json(case.json_text()) == case  # the JSON form, co-shard lists included
