"""The PIR backend against the port: real Paddle builds each op, its InferSpmd answer is read
back from ``op.dist_attr`` and compared cell by cell (no mocks)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from paddle_spmd_port.compare import compare
from paddle_spmd_port.grid import grid_for, sample
from paddle_spmd_port.native.pool import run_native
from paddle_spmd_port.outcome import port_outcome

from .helpers import known_difference, skip_if_rule_missing
from .native_cases import curated, curated_cases

pytestmark = pytest.mark.native
pytest.importorskip("paddle")

PIR_RULES = ("batch_norm", "batch_norm_grad", "layer_norm", "layer_norm_grad")
PER_RULE = 150

#: Every reason the PIR route may give for not reaching a case, per rule.
#: PIR builds no op whose inputs sit on different process meshes (the grid's mixed-mesh cases)
OTHER_MESH = r"not belong to input mesh"
#: A PIR value holds one mesh dim per axis: the grid's co-shard set is unreachable on this route
COSHARD = r"co-sharded dims_mapping .*; a PIR value holds one mesh dim per axis"
UNREACHABLE = {
    "batch_norm": (r"Unknown data layout type string: (NC|NCL|NLC)\.",
                   r"ShapeError: the shape of scale must equal to",
                   r"ShapeError: the dimension of (input X|scale) must",
                   r"placements cannot express it", OTHER_MESH, COSHARD),
    "batch_norm_grad": (r"placements cannot express it", OTHER_MESH, COSHARD),
    "layer_norm": (r"'begin_norm_axis' in Op\(LayerNorm\) should be ?greater than zero",  # 3.1.1: "begreater"
                   r"'begin_norm_axis' must be less than the dimensions of X",
                   r"The dimensions of Input\((Scale|Bias)\) must be 1",
                   r"placements cannot express it", OTHER_MESH, COSHARD),
    "layer_norm_grad": (r"ProcessMesh dimension \{\d\} cannot be both shard and partial",
                        r"placements cannot express it", OTHER_MESH, COSHARD),
}


@pytest.fixture(scope="module")
def pir_run():
    cases = [case for _, case in curated_cases()]
    for rule in PIR_RULES:
        cases += sample(list(grid_for(rule)), PER_RULE, seed=11, corners=False)  # the regular grid
    outcomes, info = run_native(cases, backend="pir", workers=1)
    return [(case, port_outcome(case), native) for case, native in zip(cases, outcomes, strict=True)], info


def _by_label(pir_run, label):
    case = curated(label)
    for c, port, native in pir_run[0]:
        if c.case_id == case.case_id:
            return c, port, native
    raise KeyError(label)


def test_paddle_version_recorded(pir_run):
    _, info = pir_run
    assert info["version"] and info["commit"]


@pytest.mark.parametrize("rule", PIR_RULES)
def test_no_cell_differs(pir_run, rule):
    verdicts: dict[str, int] = {}
    explained: dict[str, int] = {}
    for case, port, native in pir_run[0]:
        if case.rule != rule:
            continue
        why = known_difference(case, port, native)
        if why:
            explained[why] = explained.get(why, 0) + 1
            continue
        cmp = compare(case.spec, port, native)
        assert cmp.verdict != "mismatch", f"{case.describe()}\nport   {port}\nnative {native}\n" + \
            "\n".join(map(str, cmp.diffs))
        verdicts[cmp.verdict] = verdicts.get(cmp.verdict, 0) + 1
    compared = verdicts.get("match", 0) + verdicts.get("both-raise-same", 0)
    if compared < 40 and explained:
        pytest.skip("; ".join(f"{n} cells: {why}" for why, n in explained.items()))
    assert compared >= 40, verdicts  # most of the sample is really compared, not skipped


@pytest.mark.parametrize("rule", PIR_RULES)
def test_unreachable_only_for_documented_reasons(pir_run, rule):
    for case, port, native in pir_run[0]:
        if case.rule != rule or native.unreachable is None:
            continue
        assert any(re.search(p, native.unreachable) for p in UNREACHABLE[rule]), (case.describe(), native.unreachable)
        fmt = dict(case.attrs).get("data_format")
        if "shape of scale must equal" in native.unreachable:
            assert fmt == "NCDHW"  # InferMeta reads C from the last axis for that layout
        if "begin_norm_axis" in native.unreachable:
            b = dict(case.attrs)["begin_norm_axis"]
            assert not 0 < b < len(case.inputs[0].shape)  # the op's InferMeta wants 0 < b < rank
        if "co-sharded" in native.unreachable:
            assert any(s is not None and s.coshard for s in case.inputs), case.describe()
        if "both shard and partial" in native.unreachable:
            # the rule's own answer holds such an attr, which PIR's placements cannot represent
            attrs = port.result.inputs + port.result.outputs
            assert any(set(a.dims_mapping) & a.partial_dims for a in attrs), str(port)


def _one_mesh(case) -> bool:
    """All inputs on x's mesh and none co-sharded: a case a PIR op can be built for."""
    x = case.inputs[0]
    return all(s is None or (s.mesh == x.mesh and not s.coshard) for s in case.inputs)


def test_layouts_the_op_accepts_are_always_reached(pir_run):
    for case, port, native in pir_run[0]:
        if case.rule == "batch_norm" and dict(case.attrs).get("data_format", "NCHW") in ("NCHW", "NHWC", "NDHWC") \
                and port.result is not None and _one_mesh(case):  # PIR builds no op over several meshes
            assert native.result is not None, (case.describe(), str(native))


@pytest.mark.parametrize("label", ["bn-nchw-c-split-2d", "bn-nchw-n-split-1d", "bn-nhwc-c-split-2d",
                                   "bn-ndhwc-c-split-3d", "bn-nchw-partial-x-3d", "bn-nchw-no-scale-bias",
                                   "bn-nhwc-3d-x", "bn-nchw-2d-x", "bng-nchw-c-split-2d", "bng-nhwc-c-split-3d",
                                   "bng-ncl-1d", "bng-og-partial", "bng-reserve-space", "bng-no-scale-c-replicated",
                                   "ln-b2-2d", "ln-b1-normed-split-1d", "ln-partial-x-3d", "ln-no-scale", "lng-b2-2d",
                                   "lng-og-fills-x-3d", "lng-no-scale-bias", "lng-og-partial-1d", "lng-b0"])
def test_curated_case_matches(pir_run, label):
    case, port, native = _by_label(pir_run, label)
    if why := known_difference(case, port, native):
        pytest.skip(why)
    assert compare(case.spec, port, native).verdict == "match", f"port {port}\nnative {native}"


def test_partial_reduce_type_read_back(pir_run):
    case, port, native = _by_label(pir_run, "bng-nchw-c-split-2d")
    if why := known_difference(case, port, native):
        pytest.skip(why)
    assert str(native.result) == ("in: [-1,1,-1,-1] [-1] [-1] [1] [1] [1] [1] [-1] [-1,1,-1,-1] | "
                                  "out: [-1,1,-1,-1] [-1] P{1} [-1] P{1}")


@pytest.mark.parametrize("label,family", [("bn-mean-2d", "ValueError"), ("lng-conflict", "NotImplementedError")])
def test_rule_errors_normalise_to_the_ports_message(pir_run, label, family):
    case, port, native = _by_label(pir_run, label)
    if why := known_difference(case, port, native):
        pytest.skip(why)
    assert native.error is not None and native.error.family == family
    assert native.error.message == port.error.message
    assert compare(case.spec, port, native).verdict == "both-raise-same"


def test_unreachable_cells_say_why(pir_run):
    for label, text in (("bn-ncl-layout", "Unknown data layout type string: NCL"),
                        ("ln-b0", "should be ?greater than zero"),  # 3.1.1 misspells "begreater"
                        ("lng-shard-and-partial", "cannot be both shard and partial")):
        _, _, native = _by_label(pir_run, label)
        assert native.unreachable is not None and re.search(text, native.unreachable), (label, str(native))


def test_crash_is_isolated_and_the_next_case_is_answered(pir_run):
    skip_if_rule_missing("batch_norm_grad")  # 3.0.0: no rule; this case aborts (SIGABRT) in the fallback
    case, port, native = _by_label(pir_run, "bng-no-scale-c-split")
    assert native.crash == "signal 11 (SIGSEGV)"
    assert compare(case.spec, port, native).verdict == "port-rejects-invalid"
    after, port_after, native_after = _by_label(pir_run, "bng-after-crash")
    assert compare(after.spec, port_after, native_after).verdict == "match"


_REUSE_SCRIPT = """
import json, sys
from paddle_spmd_port.case import Case
from paddle_spmd_port.native.pir import PirBackend
cases = [Case.from_json(json.loads(line)) for line in sys.stdin]
shared = [o.to_json() for o in PirBackend().run_many(cases)]
fresh = [o.to_json() for o in PirBackend(ops_per_program=1).run_many(cases)]
small = [o.to_json() for o in PirBackend(ops_per_program=3).run_many(cases)]
print(json.dumps({"shared": shared, "fresh": fresh, "small": small}))
"""


def test_program_reuse_and_errors_do_not_change_answers():
    """One long Program (with cached inputs, errors and unreachable builds in between) gives
    exactly the answers of a fresh Program per op."""
    skip_if_rule_missing("batch_norm")
    labels = ["lng-conflict", "lng-b2-2d", "ln-b0", "ln-b2-2d", "lng-shard-and-partial", "lng-og-fills-x-3d",
              "bn-mean-2d", "bn-nchw-c-split-2d", "bn-ncl-layout", "bng-nchw-c-split-2d", "lng-conflict",
              "lng-no-scale-bias", "bng-og-partial"]
    lines = "".join(json.dumps(curated(label).to_json()) + "\n" for label in labels)
    done = subprocess.run([sys.executable, "-c", _REUSE_SCRIPT], input=lines, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["shared"] == got["fresh"] == got["small"]
    assert [o["status"] for o in got["shared"]].count("error") == 3


def test_worker_pickles_an_outcome_object_once_and_never_another_in_its_place():
    """The worker pickles each outcome object once (the PIR backend hands back one object for
    equal outcomes). Outcomes a backend drops right after yielding them must not be answered with
    an earlier one's bytes when a new object takes the freed one's id."""
    import io
    import pickle

    from paddle_spmd_port.native.worker import FRAME, _stream_many
    from paddle_spmd_port.outcome import Outcome

    shared = Outcome(unreachable="shared")

    class Backend:
        def run_many(self, cases, may_crash=None):
            for i, case in enumerate(cases):
                yield shared if case == "same" else Outcome(unreachable=f"fresh {i}")  # dropped after use

    cases = ["same", "new"] * 200
    out = io.BytesIO()
    _stream_many(Backend(), cases, 0, len(cases), out, base=1000, isolate=bytes(len(cases)))
    data, pos, got = out.getvalue(), 0, []
    while pos < len(data):
        index, size = FRAME.unpack_from(data, pos)
        got.append((index, pickle.loads(data[pos + FRAME.size:pos + FRAME.size + size])))
        pos += FRAME.size + size
    assert [i for i, _ in got] == list(range(1000, 1000 + len(cases)))
    assert [o.unreachable for _, o in got] == ["shared" if c == "same" else f"fresh {i}" for i, c in enumerate(cases)]
