"""The PIR route of issue 15's normalization rules against the port: the group_norm / group_norm_grad
ops built in static PIR mode (their Build runs GroupNormInferSpmd / GroupNormGradInferSpmd), the
answer read back from ``op.dist_attr`` and compared cell by cell; the rule keys no op reaches are
unreachable with their reason (docs/group_norm-3.3.1.md, docs/instance-rms-fastln-3.3.1.md "PIR")."""

from __future__ import annotations

import re

import pytest

from paddle_spmd_port import DistTensorSpec, ProcessMesh
from paddle_spmd_port.case import Case
from paddle_spmd_port.compare import compare
from paddle_spmd_port.grid import grid_for, sample
from paddle_spmd_port.native.crash_prone import pir_may_crash
from paddle_spmd_port.native.pir import NOT_ROUTED
from paddle_spmd_port.native.pool import run_native
from paddle_spmd_port.outcome import Outcome, port_outcome
from paddle_spmd_port.types import DistAttr, SpmdResult

from .helpers import known_difference, skip_if_rule_missing

pytestmark = pytest.mark.native
pytest.importorskip("paddle")

ROUTED = ("group_norm", "group_norm_grad")
PER_RULE = 150
#: Below this many compared cases of a rule's sample the route would be reaching almost nothing (a
#: groups attribute passed as bool, e.g., makes every group_norm build fail: 0 reached).
MIN_COMPARED = {"group_norm": 40, "group_norm_grad": 60}

MESH = ProcessMesh((2, 3))
X = (8, 6, 4, 4)
ATTRS = (("epsilon", 1e-5), ("groups", 2), ("data_format", "NCHW"))

OTHER_MESH = r"not belong to input mesh"
COSHARD = r"co-sharded dims_mapping .*; a PIR value holds one mesh dim per axis"
PLACEMENTS = r"placements cannot express it|has no process mesh"
#: Every reason the PIR route may give for not reaching a case, per rule.
UNREACHABLE = {
    "group_norm": (r"Unknown data layout type string: (NCL|NLC|ZZ|)\.",  # F.group_norm passes only NCHW / NHWC
                   r"divisible by num_groups", r"Attr\(groups\) of Op\(group_norm\) must be",
                   r"Input\(Scale\)'s first dimension size of Op\(group_norm\) must be equal to the number of "
                   r"channels", r"Input\((Scale|Bias)\) of Op\(group_norm\) should be 1-D",
                   r"Input\(X\)'s dimension of Op\(group_norm\) must be greater than",
                   OTHER_MESH, COSHARD, PLACEMENTS),
    "group_norm_grad": (OTHER_MESH, COSHARD, PLACEMENTS),
}


def _s(dm, shape=X, mesh=MESH) -> DistTensorSpec:
    return DistTensorSpec(shape, tuple(dm), mesh)


def _grad_case(label: str, x_dm, *, scale: bool = True) -> Case:
    stat = _s((x_dm[0], -1), (8, 2))
    inputs = (_s(x_dm), _s((-1,), (6,)) if scale else None, _s((-1,), (6,)), _s(x_dm), stat, stat, _s(x_dm))
    return Case("group_norm_grad", MESH, inputs, ATTRS, label)


#: label -> case: a crash (scale None while x's axis 0 is split: Paddle marks Partial on an attr
#: without a mesh and segfaults), the same case with scale (answered after the crash), a forward
#: and a grad with C split, and one case of each rule key the route does not reach.
CURATED = {
    "gng-no-scale-n-split": _grad_case("gng-no-scale-n-split", (0, -1, -1, -1), scale=False),
    "gng-after-crash": _grad_case("gng-after-crash", (0, -1, -1, -1)),
    "gng-c-split": _grad_case("gng-c-split", (1, 0, -1, -1)),
    "gn-c-split": Case("group_norm", MESH, (_s((1, 0, -1, -1)), _s((-1,), (6,)), None), ATTRS, "gn-c-split"),
    "gn-base": Case("group_norm_base", MESH, (_s((0, 1, -1, -1)), None, None), (), "gn-base"),
    "rms": Case("rms_norm", MESH, (_s((0, -1, 1), (8, 6, 16)), _s((-1,), (16,))), (("epsilon", 1e-5),), "rms"),
    "fast-ln": Case("fast_ln", MESH, (_s((0, -1, 1), (8, 6, 16)), _s((-1,), (16,)), _s((-1,), (16,))),
                    (("epsilon", 1e-5),), "fast-ln"),
    "in": Case("instance_norm", MESH, (_s((0, 1, -1, -1)), _s((-1,), (6,)), _s((-1,), (6,))),
               (("epsilon", 1e-5),), "in"),
}


@pytest.fixture(scope="module")
def pir_run():
    cases = list(CURATED.values())
    for rule in ROUTED:
        cases += sample(list(grid_for(rule)), PER_RULE, seed=5, corners=False)
    outcomes, _ = run_native(cases, backend="pir", workers=1)
    return [(case, port_outcome(case), native) for case, native in zip(cases, outcomes, strict=True)]


def _by_label(pir_run, label):
    for case, port, native in pir_run:
        if case.case_id == label:
            return case, port, native
    raise KeyError(label)


@pytest.mark.parametrize("rule", ROUTED)
def test_no_cell_differs_and_most_are_reached(pir_run, rule):
    skip_if_rule_missing(rule)
    verdicts: dict[str, int] = {}
    for case, port, native in pir_run:
        if case.rule != rule:
            continue
        cmp = compare(case.spec, port, native)
        assert cmp.verdict != "mismatch", f"{case.describe()}\nport   {port}\nnative {native}\n" + \
            "\n".join(map(str, cmp.diffs))
        verdicts[cmp.verdict] = verdicts.get(cmp.verdict, 0) + 1
    assert verdicts.get("match", 0) + verdicts.get("both-raise-same", 0) >= MIN_COMPARED[rule], verdicts


@pytest.mark.parametrize("rule", ROUTED)
def test_unreachable_only_for_documented_reasons(pir_run, rule):
    skip_if_rule_missing(rule)  # 3.1.0: the group_norm op cannot hold its rule's 1-D statistics at all
    for case, _, native in pir_run:
        if case.rule != rule or native.unreachable is None:
            continue
        assert any(re.search(p, native.unreachable) for p in UNREACHABLE[rule]), (case.describe(), native.unreachable)
        if "Input(Scale)'s first dimension" in native.unreachable:
            # the op's InferMeta takes C from axis 1 for NCHW only: NCDHW is read as channel-last
            assert dict(case.attrs)["data_format"] == "NCDHW", case.describe()
        if "co-sharded" in native.unreachable:
            assert any(s is not None and s.coshard for s in case.inputs), case.describe()


def _op_accepts(case: Case) -> bool:
    """A group_norm case the op's InferMeta accepts and PIR can hold: one mesh, no co-shard, a layout
    the op parses, groups dividing C where C is axis 1 for NCHW and the last axis otherwise."""
    x = case.inputs[0]
    if x is None or x.mesh is None or any(s is not None and (s.mesh != x.mesh or s.coshard) for s in case.inputs):
        return False
    attrs = dict(case.attrs)
    fmt, groups = attrs["data_format"], attrs["groups"]
    channels = x.shape[1] if fmt == "NCHW" else x.shape[-1]
    scale_ok = all(s is None or s.shape == (channels,) for s in case.inputs[1:3])
    return fmt in ("NCHW", "NHWC", "NDHWC") and 0 < groups <= channels and channels % groups == 0 and scale_ok


def test_inputs_the_op_accepts_are_always_reached(pir_run):
    skip_if_rule_missing("group_norm")
    seen = 0
    for case, port, native in pir_run:
        if case.rule == "group_norm" and port.result is not None and _op_accepts(case):
            seen += 1
            assert native.result is not None, (case.describe(), str(native))
    assert seen >= 20


@pytest.mark.parametrize("label", ["gn-c-split", "gng-c-split", "gng-after-crash"])
def test_curated_case_matches(pir_run, label):
    case, port, native = _by_label(pir_run, label)
    skip_if_rule_missing(case.rule)
    if why := known_difference(case, port, native):
        pytest.skip(why)
    assert compare(case.spec, port, native).verdict == "match", f"port {port}\nnative {native}"


def test_grad_partial_read_back(pir_run):
    case, port, native = _by_label(pir_run, "gng-after-crash")
    if why := known_difference(case, port, native):
        pytest.skip(why)
    # scale_grad / bias_grad Partial over x's axis-0 mesh dim: the partial status comes back through PIR
    assert str(native.result).endswith("| out: [0,-1,-1,-1] [-1] P{0} [-1] P{0}"), str(native.result)


def test_crash_is_recorded_and_was_predicted(pir_run):
    skip_if_rule_missing("group_norm_grad")
    case, port, native = _by_label(pir_run, "gng-no-scale-n-split")
    assert native.crash == "signal 11 (SIGSEGV)", str(native)
    assert compare(case.spec, port, native).verdict == "port-rejects-invalid"
    # every crash of the run was predicted, i.e. built in a forked child instead of killing the worker
    crashed = [case for case, _, native in pir_run if native.crash is not None]
    assert crashed and all(pir_may_crash(case) for case in crashed), [c.describe() for c in crashed]


@pytest.mark.parametrize("label,rule", [("gn-base", "group_norm_base"), ("rms", "rms_norm"), ("fast-ln", "fast_ln"),
                                        ("in", "instance_norm")])
def test_not_routed_rule_is_unreachable_with_its_reason(pir_run, label, rule):
    case, port, native = _by_label(pir_run, label)
    assert native.unreachable == NOT_ROUTED[rule]
    assert compare(case.spec, port, native).verdict == "unreachable"


def _keeps_c_split(case: Case) -> Outcome:
    """A planted wrong group_norm rule: the port's answer, but x (and y) keep x's own mapping."""
    right = port_outcome(case).result
    assert right is not None
    x = case.inputs[0]
    assert x is not None
    kept = DistAttr(tuple(x.dims_mapping), frozenset(), x.mesh)
    outputs = (kept, *right.outputs[1:]) if case.rule == "group_norm" else right.outputs
    return Outcome(result=SpmdResult((kept, *right.inputs[1:]), outputs))


@pytest.mark.parametrize("rule", ROUTED)
def test_a_planted_wrong_answer_is_a_mismatch_on_this_route(pir_run, rule):
    """The check can fail: against a rule that keeps x's non-batch splits, every reached case whose
    x is split beyond axis 0 is a mismatch on x's dims_mapping cell."""
    skip_if_rule_missing(rule)
    caught = 0
    for case, port, native in pir_run:
        x = case.inputs[0]
        if case.rule != rule or native.result is None or port.result is None or x is None \
                or all(m == -1 for m in x.dims_mapping[1:]):
            continue
        cmp = compare(case.spec, _keeps_c_split(case), native)
        assert cmp.verdict == "mismatch", case.describe()
        assert "in.x.dims_mapping" in {d.cell for d in cmp.diffs}
        caught += 1
    assert caught >= 10
