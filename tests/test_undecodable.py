"""A native answer the harness cannot read is a recorded outcome of its own (``undecodable``, the
raw reply kept), never a traceback and never a finding: each route's decoder is fed replies it
cannot read, and a real parity run with garbage injected into the compiled caller's replies
completes, fails closed (exit 3, not 1) and keeps the raw reply in its report and per-case file."""

from __future__ import annotations

import gzip
import json
from types import SimpleNamespace

import pytest

from paddle_spmd_port.compare import compare
from paddle_spmd_port.native import compiled
from paddle_spmd_port.outcome import Outcome
from paddle_spmd_port.reporting import REPRO_PYTHON

from .helpers import skip_if_compiled_unreachable

MESH = "1,2,2,0,1,6430"  # a 1-d mesh [2], ids 0 1, dim name "d0" (hex)
GOOD = f"R 1 A,{MESH},1,0,0 1 A,{MESH},1,-1,0"

#: reply line -> words the decoder's complaint must hold (each a way a reply can be unreadable)
UNREADABLE = {
    # the crash of issue 23: a mesh of shape (94285896066016,) read from uninitialised memory
    "R 1 A,1,94285896066016,1,0,6430,1,0,0 1 A,-,1,-1,0": "94285896066016 distinct ids",
    "R 1 A,1,94285896066016,94285896066016,0,6430,1,0,0 0": "a count of 94285896066016",  # huge id count
    "R 1 A,1,99999999999999999999999,1,0,6430,1,0,0 0": "ProcessMesh",  # beyond int64
    "R 1 A,1,-2,2,0,1,6430,1,0,0 0": "positive sizes",  # a negative mesh size
    "R 1 A,-3,2,1,0,6430,1,0,0 0": "a count of -3",  # a negative number of mesh dims
    "R 1 A,1,2,2,0,1,6430,-1,0": "a count of -1",  # a negative mapping length
    f"R 1 A,{MESH},1,0": "IndexError",  # truncated inside an attr
    f"R 1 A,{MESH},1,0,0 1": "a count of 1 where 0",  # truncated: the output count promises one more
    "R 1 A,-,1,-1,0": "IndexError",  # no output list at all
    f"R 2 A,{MESH},1,0,0 1 A,-,1,-1,0": "malformed reply",  # more attrs promised than given
    f"{GOOD} A,-,1,-1,0": "left over",  # more attrs given than promised
    f"R 1 A,{MESH},1,0,0,7 0": "left over",  # an attr with tokens left over
    f"R 1 A,{MESH},one,0,0 0": "invalid literal",  # a non-numeric field
    f"R 1 A,{MESH},1,x,0 0": "invalid literal",
    "R 1 A,1,2,2,0,1,zz,1,0,0 0": "non-hexadecimal",  # a dim name that is no hex
    f"R 1 B,{MESH},1,0,0 0": "malformed reply",  # an unknown attr kind
    "R 1 A 1 2 2 0 1 6430 1 0 0 1 A - 1 -1 0 junk": "left over",  # the spaced form too
    "R 1 A 1 2 2 0 1": "ProcessMesh.dim_names",  # truncated in the mesh's names
    "E ValueError zz": "non-hexadecimal",
    "C eleven": "invalid literal",
    "Q 1": "unknown reply kind",
    "": "unknown reply kind",
    "\x00\xff garbage": "unknown reply kind",
}


@pytest.mark.parametrize("line", list(UNREADABLE), ids=range(len(UNREADABLE)))
def test_the_compiled_decoder_records_a_reply_it_cannot_read(line):
    for given in (line, line.encode("latin-1")):  # as the pool hands them (bytes), and as text
        outcome = compiled.outcome_of(given)
        assert outcome.status == "undecodable", outcome
        assert UNREADABLE[line] in outcome.undecodable, outcome.undecodable
        assert outcome.raw == (given if isinstance(given, str) else given.decode("utf-8", "backslashreplace"))
        assert Outcome.from_json(json.loads(json.dumps(outcome.to_json()))) == outcome  # survives the cases file
    # a batch with unreadable lines among readable ones: every line gets its own outcome, in order
    batch = [GOOD.encode(), line.encode("latin-1"), GOOD.encode()]
    assert [o.status for o in compiled.outcomes_of(batch)] == ["result", "undecodable", "result"]


def test_the_readable_replies_still_read():
    assert str(compiled.outcome_of(GOOD).result) == "in: [0] | out: [-1]"
    assert compiled.outcome_of("U " + b"no rule".hex()).unreachable == "no rule"
    assert compiled.outcome_of("C 11").crash == "signal 11 (SIGSEGV)"
    assert compiled.outcome_of("R 1 A - 1 -1 1 0 3 0").status == "error"  # a MAX partial: ReduceTypeError


# --------------------------------------------------------------------------- registry and PIR
class _Fake(SimpleNamespace):
    """Stands for one of Paddle's objects: its fields, and a text."""

    def __str__(self):
        return "garbage attr"


def _paddle_like_mesh(shape, ids, names=None):
    return SimpleNamespace(shape=list(shape), process_ids=list(ids), dim_names=list(names or ["d0"][:len(shape)]),
                           empty=lambda: False)


def _garbage_meshes():
    return [_paddle_like_mesh([94285896066016], [0]), _paddle_like_mesh([-2], [0, 1]),
            _paddle_like_mesh([2], [0, 0]), _paddle_like_mesh([2], ["a", "b"])]


@pytest.mark.native
def test_the_registry_decoder_records_an_answer_it_cannot_read(monkeypatch):
    pytest.importorskip("paddle")
    from paddle_spmd_port.native import registry

    from .native_cases import curated

    case = curated("ln-b2-2d")
    assert registry.run(case).status == "result"  # the real rule answers it
    for mesh in _garbage_meshes():
        attr = _Fake(process_mesh=mesh, dims_mapping=[0, -1], _is_partial=lambda: False, multi_dims_mapping=[[0], []])

        class Rule:
            def infer_forward(self, *args, _attr=attr):
                return [[_attr], [_attr]]

        monkeypatch.setitem(registry._rules, "layer_norm", Rule())
        outcome = registry.run(case)
        assert outcome.status == "undecodable", outcome
        assert outcome.raw == "[garbage attr] | [garbage attr]"  # the raw answer's text is kept
        port = Outcome(result=case.call_port())
        assert compare(case.spec, port, outcome).verdict == "undecodable"


@pytest.mark.native
def test_the_pir_decoder_records_an_answer_it_cannot_read():
    pytest.importorskip("paddle")
    from paddle_spmd_port.native import pir

    for n, mesh in enumerate(_garbage_meshes()):
        tensor = SimpleNamespace(partial_status={}, dims_mapping=[0, -1], process_mesh=mesh)
        attr = _Fake(as_tensor_dist_attr=lambda t=tensor: t)
        dist_attr = SimpleNamespace(operands=lambda a=attr: [a], results=lambda a=attr: [a])
        op = SimpleNamespace(dist_attr=dist_attr)
        outcome = pir.outcome_of_op(op, ("test-garbage", n))
        assert outcome.status == "undecodable", outcome
        assert outcome.raw == "operands: [garbage attr] | results: [garbage attr]"


# --------------------------------------------------------------------------- a real run
GARBAGE = b"R 1 A,1,94285896066016,1,0,6430,1,0,0 1 A,-,1,-1,0"


@pytest.mark.native
@pytest.mark.parametrize("allow", [False, True])
def test_a_run_with_garbage_replies_completes_fails_closed_and_keeps_the_raw_reply(monkeypatch, tmp_path, allow,
                                                                                   capsys):
    skip_if_compiled_unreachable()
    from paddle_spmd_port.parity import cli

    real = compiled.outcomes_of
    hit = []

    def garbled(lines):  # every third answer of the caller becomes the garbage of issue 23
        out = []
        for line in lines:
            if line.startswith(b"R ") and len(hit) % 3 == 0:
                line = GARBAGE
            hit.append(line)
            out.append(line)
        return real(out)

    monkeypatch.setattr(compiled, "outcomes_of", garbled)
    out = tmp_path / "r"
    code = cli.main(["--quiet", "--rules", "batch_norm", "--backend", "compiled", "--sample", "8", "--report-dir",
                     str(out), *(["--allow-uncompared"] if allow else [])])
    printed = capsys.readouterr()
    assert "Traceback" not in printed.out + printed.err
    data = json.loads((out / "parity.json").read_text())
    undecodable = data["rules"]["batch_norm@compiled"]["verdicts"]["undecodable"]
    assert undecodable > 0, data["rules"]
    assert data["complete"] and data["total_mismatches"] == 0
    assert data["coverage"]["batch_norm"]["uncompared"] == undecodable
    assert all("native answer undecodable" in why for why in data["coverage"]["batch_norm"]["uncompared_reasons"])
    assert code == (0 if allow else 3), printed.out[-2000:]
    assert data["status"].startswith("INCOMPLETE, ACCEPTED" if allow else "FAILED CLOSED")
    with gzip.open(out / "parity-cases.jsonl.gz", "rt") as fh:
        records = [json.loads(line) for line in fh]
    garbled_records = [r for r in records if r["verdict"] == "undecodable"]
    assert len(garbled_records) == undecodable
    assert all(r["raw"] == GARBAGE.decode() and r["repro"].startswith(
        REPRO_PYTHON + " -m paddle_spmd_port infer --backend compiled --case-json '") for r in garbled_records)
    md = (out / "parity.md").read_text()
    assert "batch_norm@compiled: undecodable" in md and "94285896066016" in md


# --------------------------------------------------------------------------- ints Paddle cannot hold
BEYOND_INT64 = 99999999999999999999999


def _beyond(where: str, big: int = BEYOND_INT64):
    from paddle_spmd_port import DistTensorSpec, ProcessMesh
    from paddle_spmd_port.case import Case

    mesh = ProcessMesh((2,), (0, big)) if where == "ids" else ProcessMesh((2,))
    x = DistTensorSpec((big, 6) if where == "shape" else (4, 6), (0, -1), mesh)
    return Case("layer_norm", mesh, (x, None, None), (("begin_norm_axis", big if where == "attr" else 1),))


@pytest.mark.parametrize("where, big", [("shape", BEYOND_INT64), ("ids", BEYOND_INT64), ("attr", BEYOND_INT64),
                                        ("attr", 1 << 32)])
def test_ints_paddle_cannot_hold_are_named(where, big):
    from paddle_spmd_port.case import int_range_problem

    why = int_range_problem(_beyond(where, big))
    assert why is not None and str(big) in why and ("int32" if where == "attr" else "int64") in why
    assert int_range_problem(_beyond("none", 1)) is None
    assert int_range_problem(_beyond("shape", (1 << 63) - 1)) is None  # int64's largest still fits


@pytest.mark.native
@pytest.mark.parametrize("backend", ["registry", "compiled", "pir"])
@pytest.mark.parametrize("where, big", [("shape", BEYOND_INT64), ("ids", BEYOND_INT64), ("attr", BEYOND_INT64),
                                        ("attr", 1 << 32)])
def test_a_route_given_ints_paddle_cannot_hold_says_unreachable_never_an_error(backend, where, big):
    """Paddle's TypeError (or its C++ side misreading the int) is no answer to hold against the port."""
    pytest.importorskip("paddle")
    import importlib

    route = importlib.import_module(f"paddle_spmd_port.native.{backend}")
    case = _beyond(where, big)
    outcome = route.run(case)
    assert outcome.status == "unreachable" and "beyond the int" in outcome.unreachable, outcome
    from paddle_spmd_port.outcome import port_outcome

    assert compare(case.spec, port_outcome(case), outcome).verdict == "unreachable"


@pytest.mark.native
@pytest.mark.parametrize("backend", ["registry", "compiled", "pir"])
def test_infer_given_a_size_beyond_int64_in_case_json_is_uncompared_not_a_mismatch(backend, tmp_path):
    import subprocess
    import sys

    from .cli_checks import REPO

    case = _beyond("shape")
    done = subprocess.run([sys.executable, "-m", "paddle_spmd_port", "infer", "--backend", backend, "--case-json",
                           case.json_text()], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    # refused as an argument (exit 2, where infer checks sizes itself) or, if it reaches the native
    # side, unreachable (exit 3): never Paddle's TypeError held against the port (exit 1)
    assert done.returncode in (2, 3), done.stdout + done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    if done.returncode == 3:
        assert "verdict: unreachable" in done.stdout and "beyond the int64" in done.stderr
    else:
        assert "--case-json" in done.stderr and not done.stdout
