"""The strictness policy (docs/strictness.md): the declarations, the page written from them, the
``mirror`` policy held to Paddle's rules on out-of-range axes, the ``strict`` refusals' accounts."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest

from paddle_spmd_port import DistTensorSpec, ProcessMesh
from paddle_spmd_port.case import Case
from paddle_spmd_port.compare import ANSWERED_CLASSES, REFUSAL_CLASSES, compare, refusal_class
from paddle_spmd_port.errors import InvalidSpecError, UnknownKeyError
from paddle_spmd_port.ops import registry
from paddle_spmd_port.ops.kit.strictness import Strictness
from paddle_spmd_port.ops.registry import get_spmd_rule, rule_function, strictness_of
from paddle_spmd_port.outcome import port_outcome

ROOT = Path(__file__).resolve().parents[1]


def test_page_equals_the_declarations() -> None:
    out = subprocess.run([sys.executable, "tools/strictness_doc.py"], cwd=ROOT, capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert (ROOT / "docs/strictness.md").read_text() == out
    assert "docs/strictness.md" in (ROOT / "README.md").read_text()
    assert "strictness.md" in (ROOT / "docs/parity.md").read_text()


def test_declarations_are_well_formed_and_a_bad_one_is_named() -> None:
    assert all(not d.problems() for d in registry.STRICTNESS)
    bad = Strictness("invalid-spec:axis", "r", "crashes", "refuses", "e", mirror_keys=("p_norm",))
    assert any("cannot be mirrored" in p for p in bad.problems())
    assert Strictness("invalid-spec:axis", "r", "answers", "refuses").problems()  # a verdict without evidence


def _cases(rng: random.Random, n: int) -> list[Case]:
    """p_norm forward / reverse / grad cases, every axis out of range (either side, far and near)."""
    out = []
    for i in range(n):
        mesh = ProcessMesh(rng.choice([(2,), (4,), (2, 3), (2, 2, 2)]))
        ndim = rng.randint(1, 4)
        shape = tuple(rng.choice([2, 4, 6, 8]) for _ in range(ndim))
        free = list(range(mesh.ndim))
        rng.shuffle(free)
        mapping = tuple(free.pop() if free and rng.random() < 0.5 else -1 for _ in range(ndim))
        x = DistTensorSpec(shape, mapping, mesh)
        axis = rng.choice([ndim, ndim + rng.randint(1, 5), -ndim - 1, -ndim - rng.randint(2, 6)])
        keepdims = rng.random() < 0.5
        attrs = (("porder", 2.0), ("axis", axis), ("epsilon", 1e-12), ("keepdims", keepdims), ("asvector", False))
        kind = i % 3
        if kind == 0:
            out.append(Case("p_norm", mesh, (x,), attrs, case_id=f"pn-axis-{i}"))
            continue
        # an out of x's rank: what Paddle's rules read when no axis is reduced
        o = DistTensorSpec(shape, tuple(rng.choice([-1, *range(mesh.ndim)]) if False else m for m in mapping), mesh)
        if kind == 1:
            out.append(Case("p_norm_reverse", mesh, (x, o), attrs, case_id=f"pnr-axis-{i}"))
        else:
            attrs = (*attrs[:3], ("keepdims", True), attrs[4])
            out.append(Case("p_norm_grad", mesh, (x, o, o), attrs, case_id=f"png-axis-{i}"))
    return out


def test_strict_refuses_and_names_the_op_verdict() -> None:
    for case in _cases(random.Random(3), 30):
        port = port_outcome(case)
        assert port.error is not None and port.error.kind == "invalid-spec:axis"
        decl = strictness_of(case.rule, port.error.kind)
        assert decl is not None and decl.op == "refuses"
        assert "Paddle's op refuses it too" in decl.text() and decl.reason in decl.text()
        assert refusal_class(case.rule, port) == "port-refuses-op-refuses"


def test_mirror_answers_what_the_declaration_names_and_refuses_the_rest_with_why() -> None:
    mesh = ProcessMesh((2, 3))
    x = DistTensorSpec((4, 6, 8), (0, 1, -1), mesh)
    answer = rule_function("p_norm", policy="mirror")(x, axis=5)
    assert answer == get_spmd_rule("p_norm", policy="mirror").infer_forward(x, axis=5)
    assert list(answer.outputs[0].dims_mapping) == [0, 1, -1] and not answer.outputs[0].partial_dims
    with pytest.raises(InvalidSpecError, match=r"mirror policy: not mirrored"):  # out of 2 axes more: read past
        rule_function("p_norm_reverse", policy="mirror")(x, DistTensorSpec((4, 6, 8, 2, 2), (0, 1, -1, -1, -1), mesh),
                                                         axis=5)
    one_more = rule_function("p_norm_reverse", policy="mirror")(x, DistTensorSpec((4, 6, 8, 2), (0, 1, -1, -1), mesh),
                                                                axis=5)  # the extra entry is read by no axis
    assert list(one_more.inputs[0].dims_mapping) == [0, 1, -1]
    with pytest.raises(InvalidSpecError, match=r"unknown mesh dim on a reduced axis.*not mirrored"):  # Paddle crashes
        rule_function("p_norm", policy="mirror")(DistTensorSpec((4, 6), (0, 5), mesh))
    with pytest.raises(InvalidSpecError, match=r"not mirrored: Paddle's rule crashes on it"):
        rule_function("p_norm", policy="mirror")(DistTensorSpec((4, 6), (0, -1), mesh, frozenset((7,))))
    doubled = rule_function("p_norm", policy="mirror")(DistTensorSpec((4, 6, 8), (0, -1, 0), mesh), axis=1)
    assert [list(a.dims_mapping) for a in (*doubled.inputs, *doubled.outputs)] == [[0, -1, 0], [0, -1]]
    assert rule_function("p_norm") is rule_function("p_norm", "paddle", "strict")  # strict: the rule itself
    with pytest.raises(UnknownKeyError, match="unknown policy"):
        rule_function("p_norm", policy="lenient")


def test_every_refusal_of_the_corner_sets_is_declared() -> None:
    from paddle_spmd_port.grid import grid_for

    undeclared = set()
    for rule in registry.PADDLE_RULES:
        for case in grid_for(rule):
            if "invalid" not in case.case_id:
                continue
            err = port_outcome(case).error
            if err is not None and err.port_invalid and strictness_of(rule, err.kind) is None:
                undeclared.add((rule, err.kind))
    assert not undeclared, sorted(undeclared)[:20]


@pytest.mark.native
def test_mirror_equals_paddle_on_out_of_range_axes_and_a_misdeclared_mirror_is_caught() -> None:
    pytest.importorskip("paddle")
    from paddle_spmd_port.native import compiled
    from paddle_spmd_port.native import registry as native_registry

    cases = _cases(random.Random(int(os.environ.get("STRICTNESS_SEED", "11"))), 60)
    routes = {"p_norm": native_registry, "p_norm_reverse": native_registry, "p_norm_grad": compiled}
    for case in cases:
        native = routes[case.rule].run(case)
        mirrored = port_outcome(case, "paddle", "mirror")
        assert compare(case.spec, mirrored, native).verdict == "match", (case.describe(), mirrored, native)
        assert compare(case.spec, port_outcome(case), native).verdict != "match"  # strict refuses them
    # mutant: the forward mirror declared as reducing the axis it was given (taken modulo the rank)
    real = registry.MIRRORS["p_norm", "invalid-spec:axis"]

    def wrong(x, porder=2.0, axis=-1, epsilon=1e-12, keepdims=False, asvector=False):  # type: ignore[no-untyped-def]
        return registry.PADDLE_RULES["p_norm"](x, porder, axis % len(x.shape), epsilon, keepdims, asvector)

    registry.MIRRORS["p_norm", "invalid-spec:axis"] = wrong
    try:
        verdicts = {compare(c.spec, port_outcome(c, "paddle", "mirror"), native_registry.run(c)).verdict
                    for c in cases if c.rule == "p_norm"}
    finally:
        registry.MIRRORS["p_norm", "invalid-spec:axis"] = real
    assert "mismatch" in verdicts


def _attr_cases(rng: random.Random, n: int) -> list[Case]:
    """batch_norm(_grad) with formats outside the layouts (but not empty), layer_norm(_reverse) with a
    negative begin_norm_axis: what the mirror policy answers for those families."""
    out = []
    for i in range(n):
        mesh = ProcessMesh(rng.choice([(2,), (2, 3)]))
        ndim = rng.randint(2, 4)
        shape = tuple(rng.choice([2, 4, 6]) for _ in range(ndim))
        free = list(range(mesh.ndim))
        rng.shuffle(free)
        x = DistTensorSpec(shape, tuple(free.pop() if free and rng.random() < 0.5 else -1 for _ in range(ndim)),
                           mesh)
        if i % 2:
            fmt = rng.choice(["N", "CN", "NWC", "nchw", "NCWH", "xCx", "NCHWD"])
            c = shape[1] if fmt[1:2] == "C" else shape[-1]
            v = DistTensorSpec((c,), (-1,), mesh)
            attrs = (("is_test", False), ("momentum", 0.9), ("epsilon", 1e-5), ("data_format", fmt),
                     ("use_global_stats", False), ("trainable_statistics", False))
            out.append(Case("batch_norm", mesh, (x, v, v, v, v), attrs, case_id=f"bn-format-{i}"))
        else:
            m = DistTensorSpec(shape[:1], (-1,), mesh)
            s = DistTensorSpec((6,), (-1,), mesh)
            attrs = (("epsilon", 1e-5), ("begin_norm_axis", rng.choice([-1, -2, -ndim - 2])))
            if i % 4:
                out.append(Case("layer_norm_reverse", mesh, (x, s, s, x, m, m), attrs, case_id=f"lnr-bna-{i}"))
            else:
                out.append(Case("layer_norm", mesh, (x, s, s), attrs, case_id=f"ln-bna-{i}"))
    return out


@pytest.mark.native
def test_mirror_equals_paddle_on_bad_formats_and_negative_begin_norm_axes() -> None:
    pytest.importorskip("paddle")
    from paddle_spmd_port.native import compiled
    from paddle_spmd_port.native import registry as native_registry

    for case in _attr_cases(random.Random(int(os.environ.get("STRICTNESS_SEED", "11"))), 40):
        route = compiled if case.rule == "batch_norm" else native_registry
        native = route.run(case)
        strict, mirrored = port_outcome(case), port_outcome(case, "paddle", "mirror")
        assert strict.error is not None and strict.error.port_invalid
        assert compare(case.spec, mirrored, native).verdict in ("match", "both-raise-same"), (
            case.describe(), mirrored, native)


def test_mirror_refuses_what_cannot_be_mirrored_naming_why() -> None:
    mesh = ProcessMesh((2,))
    x = DistTensorSpec((4, 6), (0, -1), mesh)
    v = DistTensorSpec((6,), (-1,), mesh)
    attrs = dict(is_test=False, momentum=0.9, epsilon=1e-5, data_format="", use_global_stats=False,
                 trainable_statistics=False)
    with pytest.raises(InvalidSpecError, match="reads past the end of it"):
        rule_function("batch_norm", policy="mirror")(x, v, v, v, v, **attrs)
    with pytest.raises(InvalidSpecError, match="beyond x's rank"):
        rule_function("layer_norm", policy="mirror")(x, v, v, 1e-5, 3)


def test_infer_names_the_refusals_reason_and_the_ops_verdict() -> None:
    args = ["infer", "p_norm", "--no-native", "--mesh", "2x3", "--x-shape", "4,6,8", "--x-mapping", "0,1,-1",
            "--axis", "5"]
    out = subprocess.run([sys.executable, "-m", "paddle_spmd_port", *args], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and "strict refusal (invalid-spec:axis)" in out.stdout
    assert "Paddle's op refuses it too" in out.stdout
    out = subprocess.run([sys.executable, "-m", "paddle_spmd_port", *args, "--policy", "mirror"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "out out             [0,1,-1]" in out.stdout and "refusal" not in out.stdout


@pytest.mark.native
def test_the_op_verdict_of_p_norms_axis_is_paddles() -> None:
    """The declaration says Paddle's op refuses an out-of-range axis: run the op (a child process)."""
    pytest.importorskip("paddle")
    code = ("import paddle\nx = paddle.rand([4, 6, 8])\n"
            "for axis in (3, -4, 100):\n"
            "    try:\n        paddle.linalg.norm(x, p=2, axis=axis)\n        print('accepts')\n"
            "    except ValueError:\n        print('refuses')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    verdicts = set(out.stdout.split())
    decl = strictness_of("p_norm", "invalid-spec:axis")
    assert decl is not None and verdicts == {decl.op}
    flipped = dataclasses.replace(decl, op="accepts")  # a wrongly declared verdict would fail here
    assert verdicts != {flipped.op}


def test_refusal_classes_cover_every_op_verdict() -> None:
    from paddle_spmd_port.ops.kit.strictness import OP_VERDICTS

    assert {f"port-refuses-op-{v}" for v in OP_VERDICTS} | {"port-refuses-undeclared"} == set(REFUSAL_CLASSES)


@pytest.mark.native
def test_parity_mirror_policy_on_a_random_sample(tmp_path: Path) -> None:
    """parity --policy mirror on a seeded random sample of the rules with mirrored checks: no mismatch,
    fewer port refusals than strict, every refusal counted in one refusal class, the ones Paddle's
    rule answered split by their declarations (summed in parity.json and on the console's last line)."""
    pytest.importorskip("paddle")
    rules = "p_norm,p_norm_reverse,p_norm_grad,batch_norm,layer_norm_reverse"
    counts = {}
    answered: dict[str, dict[str, dict[str, int]]] = {}
    for policy in ("strict", "mirror"):
        out = tmp_path / policy
        run = subprocess.run([sys.executable, "-m", "paddle_spmd_port", "parity", "--random", "300", "--seed", "9",
                              "--rules", rules, "--report-dir", str(out), "--quiet", "--workers", "1",
                              "--policy", policy], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        tallies = list(json.loads((out / "parity.json").read_text())["rules"].values())
        refused = sum(t["verdicts"]["port-rejects-invalid"] for t in tallies)
        assert refused == sum(sum(t["refusals"].values()) for t in tallies)
        assert all(set(t["refusals"]) <= set(REFUSAL_CLASSES) for t in tallies)
        counts[policy] = refused
        answered[policy] = {t["rule"]: t["answered"] for t in tallies}
        totals = json.loads((out / "parity.json").read_text())["total_answered"]
        assert totals == {k: sum(a.get(k, 0) for a in answered[policy].values()) for k in ANSWERED_CLASSES}
        undefined, gap = totals.values()
        assert f"{undefined + gap:,} port refusals Paddle's rule answered ({undefined:,} from memory it never set, " \
               f"{gap:,} not mirrored)" in run.stdout.splitlines()[-1]
    assert counts["mirror"] < counts["strict"], counts
    # strict: every kind is the check's own, none declared undefined; mirror: p_norm_grad's inserts
    # outside the vector and batch_norm's short x / empty data_format are, and nothing else of theirs
    # is left in the gap
    assert not any(a.get("paddle-answered-undefined") for a in answered["strict"].values())
    assert sum(answered["strict"][r].get("paddle-answered-not-mirrored", 0) for r in ("p_norm_grad", "batch_norm"))
    for rule in ("p_norm", "p_norm_reverse", "p_norm_grad", "batch_norm"):
        assert not answered["mirror"][rule].get("paddle-answered-not-mirrored"), (rule, answered["mirror"][rule])
    assert answered["mirror"]["p_norm_grad"].get("paddle-answered-undefined")
    assert answered["mirror"]["batch_norm"].get("paddle-answered-undefined")


def test_merge_sums_the_refusal_classes() -> None:
    from paddle_spmd_port.parity.merge import _add_tally, _tally
    from paddle_spmd_port.parity.report import GroupTally

    part = GroupTally("p_norm", "registry")
    part.refusals = {"port-refuses-op-refuses": 2, "port-refuses-op-inexpressible": 5}
    into = _tally(part.to_json())
    assert into.refusals == part.refusals
    _add_tally(into, _tally(part.to_json()))
    assert into.refusals == {"port-refuses-op-refuses": 4, "port-refuses-op-inexpressible": 10}


@pytest.mark.native
def test_an_input_wrongly_declared_unread_is_caught() -> None:
    """Mutant: batch_norm's x declared unread like its statistics (it is read: its channel axis keeps
    its split). With x's malformed mapping answered by a replicated stand-in, the port differs from
    Paddle on an x splitting its channel axis; the real mirror (the channel's entry kept) agrees."""
    pytest.importorskip("paddle")
    from paddle_spmd_port.native import compiled

    mesh = ProcessMesh((2, 3))
    v = DistTensorSpec((6,), (-1,), mesh)
    attrs = (("is_test", False), ("momentum", 0.9), ("epsilon", 1e-5), ("data_format", "NCHW"),
             ("use_global_stats", False), ("trainable_statistics", False))
    cases = [Case("batch_norm", mesh, (DistTensorSpec((4, 6, 4, 4), dm, mesh), v, v, v, v), attrs, case_id=str(i))
             for i, dm in enumerate([(0, 0, -1, -1), (1, 0, 0, -1), (-1, 1, 1, -1)])]
    pairs = [(c, compiled.run(c)) for c in cases]
    assert [compare(c.spec, port_outcome(c, "paddle", "mirror"), n).verdict for c, n in pairs] == ["match"] * 3
    key = ("batch_norm", "invalid-spec:x:duplicate")
    real = registry.MIRRORS[key]

    def x_replicated(fn, x, *rest, **kwargs):  # type: ignore[no-untyped-def]
        return fn(DistTensorSpec(x.shape, (-1,) * len(x.shape), x.mesh), *rest, **kwargs)

    registry.MIRRORS[key] = x_replicated
    try:
        verdicts = [compare(c.spec, port_outcome(c, "paddle", "mirror"), n).verdict for c, n in pairs]
    finally:
        registry.MIRRORS[key] = real
    assert verdicts.count("mismatch") == len(cases), verdicts


#: The rules whose mirrors this module holds to Paddle on malformed mappings: p_norm_grad's out /
#: out_grad of another rank, p_norm_reverse's out of another rank or read against x's notation (an
#: out-of-range axis). (layer_norm's, fast_ln's and rms_norm's raw models: test_strictness_mirror_ln.py,
#: test_strictness_mirror_rms.py.)
MERGE_RULES = ("p_norm_grad", "p_norm_reverse")


def _mapping_pool(seed: int, n: int = 800) -> list[Case]:
    """Random mode's draws (seeded) of MERGE_RULES that the strict port refuses for a malformed mapping
    (a repeated mesh dim, the wrong length, a mesh dim the mesh lacks), a tensor's rank or an axis the
    mirror policy declares it answers for that rule, and answers (or raises Paddle's error)."""
    from paddle_spmd_port.parity.random_cases import random_cases

    pool = []
    for rule in MERGE_RULES:
        # p_norm_reverse's repeats in out are rarer (few of its draws have a 2-D out): more draws
        for case in random_cases(rule, 3 * n if rule == "p_norm_reverse" else n, seed):
            err = port_outcome(case).error
            if err is None or err.kind.rsplit(":", 1)[-1] not in ("duplicate", "length", "mesh-dim", "rank", "axis"):
                continue
            decl = strictness_of(rule, err.kind)
            mirrored = port_outcome(case, "paddle", "mirror").error
            # (not the ones the mirror refuses: Paddle crashes in-process on some of them)
            if decl is not None and rule in decl.mirror_keys and not (mirrored and mirrored.port_invalid):
                pool.append(case)
    return pool


def _natives_of(cases: list[Case]):  # type: ignore[no-untyped-def]
    """Each case's native outcome on its rule's primary route, in order: the registry's in this process,
    the compiled caller's in one program for them all (a program's start costs ~60 ms of CPU and a
    quarter of a second on a loaded machine), each case in a forked child of the program's own, so that
    no case answers after another."""
    from paddle_spmd_port.native import compiled
    from paddle_spmd_port.native import registry as native_registry
    from paddle_spmd_port.parity.cli import DEFAULT_BACKEND

    on_compiled = [case for case in cases if DEFAULT_BACKEND[case.rule] == "compiled"]
    answers = iter(list(compiled.run_many(on_compiled, may_crash=lambda _: True)))
    return [next(answers) if DEFAULT_BACKEND[case.rule] == "compiled" else native_registry.run(case)
            for case in cases]


def _natives_by_id(cases: list[Case]):  # type: ignore[no-untyped-def]
    return {case.case_id: native for case, native in zip(cases, _natives_of(cases), strict=True)}


@pytest.mark.native
def test_mirror_equals_paddle_on_malformed_mappings_and_mutants_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every answer the mirror policy gives to these refusals equals Paddle's (on the rule's primary
    native route), on every rule of MERGE_RULES; mutants -- p_norm_grad's x_grad always out_grad's
    attr, p_norm_reverse's short out padded at the front or its repeated mesh dim kept on the last
    axis -- differ from Paddle on some case."""
    pytest.importorskip("paddle")
    from paddle_spmd_port.ops.kit.strictness import argument
    from paddle_spmd_port.ops.p_norm import rules as p_norm_rules
    from paddle_spmd_port.types import DistAttr, SpmdResult

    pool = _mapping_pool(int(os.environ.get("STRICTNESS_SEED", "11")))
    natives = _natives_by_id(pool)

    def verdicts() -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for case in pool:
            mirrored = port_outcome(case, "paddle", "mirror")
            if not (mirrored.error is not None and mirrored.error.port_invalid):
                out.setdefault(case.rule, []).append(compare(case.spec, mirrored, natives[case.case_id]).verdict)
        return out

    real = verdicts()
    assert set(real) == set(MERGE_RULES), sorted(real)  # each rule answers some
    assert all(v in ("match", "both-raise-same") for vs in real.values() for v in vs), \
        {r: vs.count("mismatch") for r, vs in real.items()}
    assert sum(map(len, real.values())) > 150

    def last_kept(spec: DistTensorSpec) -> DistTensorSpec:  # a repeated mesh dim kept on its last axis
        flipped = DistTensorSpec(spec.shape, tuple(reversed(spec.dims_mapping)), spec.mesh, spec.partial_dims)
        return DistTensorSpec(spec.shape, tuple(reversed(p_norm_rules.first_kept(flipped).dims_mapping)),
                              spec.mesh, spec.partial_dims)

    # mutant 5: p_norm_grad's x_grad always out_grad's attr (no -1 inserted where the ranks differ)
    def as_out_grad(fn, *a, **k):  # type: ignore[no-untyped-def]
        grad = argument(fn, a, k, "out_grad")
        same = DistAttr.make(grad.dims_mapping, frozenset(), grad.mesh)
        return SpmdResult.make(inputs=(same, same, same), outputs=(same,))

    for check in ("invalid-spec:out:rank", "invalid-spec:out_grad:rank", "invalid-spec:out_grad:length"):
        monkeypatch.setitem(registry.MIRRORS, ("p_norm_grad", check), as_out_grad)
    assert "mismatch" in verdicts()["p_norm_grad"]
    monkeypatch.undo()

    # mutant 6: a shorter out read with its entries on the last letters of the notation, not the first
    real_pad = p_norm_rules._padded_out

    def front(out, length, kind):  # type: ignore[no-untyped-def]
        padded = real_pad(out, length, kind)
        short = len(out.dims_mapping)
        return DistTensorSpec(padded.shape, padded.dims_mapping[short:] + padded.dims_mapping[:short], padded.mesh,
                              padded.partial_dims)

    monkeypatch.setattr(p_norm_rules, "_padded_out", front)
    assert "mismatch" in verdicts()["p_norm_reverse"]
    monkeypatch.undo()

    # mutant 7: p_norm_reverse's out read with its repeated mesh dim kept on the last axis naming it
    monkeypatch.setattr(p_norm_rules, "first_kept", last_kept)
    assert "mismatch" in verdicts()["p_norm_reverse"]


def _forward_mesh_dim_pool(seed: int, n: int = 3000) -> list[Case]:
    """Random mode's p_norm draws (seeded) the strict port refuses for x's unknown mesh dim and the
    mirror answers (only those reach Paddle here: on the others Paddle crashes in-process)."""
    from paddle_spmd_port.parity.random_cases import random_cases

    return [case for case in random_cases("p_norm", n, seed)
            if (err := port_outcome(case).error) is not None and err.kind == "invalid-spec:x:mesh-dim"
            and port_outcome(case, "paddle", "mirror").result is not None]


@pytest.mark.native
def test_p_norm_mirror_of_x_unknown_mesh_dim_equals_paddle_and_mutants_are_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """p_norm's forward answer to an x naming a mesh dim the mesh lacks equals Paddle's registry rule on
    every seeded draw it answers; mutants -- the partial status dropped, x answered with the unknown
    entries replicated, out keeping a reduced axis' entry under keepdims -- differ on some draw."""
    pytest.importorskip("paddle")
    from paddle_spmd_port.ops.p_norm import rules as p_norm_rules
    from paddle_spmd_port.types import DistAttr, SpmdResult

    pool = _forward_mesh_dim_pool(int(os.environ.get("STRICTNESS_SEED", "11")))
    assert len(pool) >= 10, len(pool)
    assert any(dict(c.attrs)["keepdims"] for c in pool) and any(not dict(c.attrs)["keepdims"] for c in pool)
    natives = _natives_by_id(pool)

    def verdicts() -> list[str]:
        return [compare(case.spec, port_outcome(case, "paddle", "mirror"), natives[case.case_id]).verdict
                for case in pool]

    real = verdicts()
    assert real.count("match") == len(pool), real
    assert any(r.outputs[0].partial_dims for c in pool if (r := port_outcome(c, "paddle", "mirror").result))

    real_fn = p_norm_rules.p_norm_mirror_mesh_dim
    key = ("p_norm", "invalid-spec:x:mesh-dim")

    def no_partial(fn, *a, **k):  # type: ignore[no-untyped-def]
        got = real_fn(fn, *a, **k)
        out = got.outputs[0]
        return SpmdResult.make(inputs=tuple(got.inputs), outputs=(DistAttr.make(out.dims_mapping, frozenset(),
                                                                                  out.mesh),))

    def x_replicated(fn, *a, **k):  # type: ignore[no-untyped-def]
        got = real_fn(fn, *a, **k)
        x = got.inputs[0]
        n = x.mesh.ndim
        return SpmdResult.make(inputs=(DistAttr.make(tuple(m if -1 <= m < n else -1 for m in x.dims_mapping),
                                                     frozenset(), x.mesh),), outputs=tuple(got.outputs))

    def kept_entry(fn, x, porder=2.0, axis=-1, epsilon=1e-12, keepdims=False, asvector=False):  # type: ignore[no-untyped-def]
        got = real_fn(fn, x, porder, axis, epsilon, keepdims, asvector)
        out = got.outputs[0]
        mapping = tuple(x.dims_mapping) if keepdims else out.dims_mapping
        return SpmdResult.make(inputs=tuple(got.inputs), outputs=(DistAttr.make(mapping, out.partial_dims,
                                                                                 out.mesh),))

    for mutant in (no_partial, x_replicated, kept_entry):
        monkeypatch.setitem(registry.MIRRORS, key, mutant)
        assert "mismatch" in verdicts(), mutant.__name__
        monkeypatch.undo()


def _reverse_long_out_pool(seed: int, n: int = 6000) -> list[Case]:
    """Random mode's p_norm_reverse draws (seeded) whose out has one mapping entry more than the
    notation the rule reads it against (strictly refused: out's rank, or an out-of-range axis) and
    which the mirror answers."""
    from paddle_spmd_port.ops.p_norm.checks import out_rank
    from paddle_spmd_port.parity.random_cases import random_cases

    pool = []
    for case in random_cases("p_norm_reverse", n, seed):
        err = port_outcome(case).error
        if err is None or err.kind not in ("invalid-spec:out:rank", "invalid-spec:axis"):
            continue
        x, out = case.inputs
        attrs = dict(case.attrs)
        if x is None or out is None:
            continue
        ndim = len(x.shape)
        inside = not attrs["asvector"] and ndim > 0 and -ndim <= attrs["axis"] < ndim
        want = out_rank(ndim, attrs["keepdims"], attrs["asvector"]) if inside or attrs["asvector"] or ndim == 0 \
            else ndim
        if len(out.dims_mapping) == want + 1 and port_outcome(case, "paddle", "mirror").result is not None:
            pool.append(case)
    return pool


@pytest.mark.native
def test_p_norm_reverse_mirror_drops_one_extra_out_entry_as_paddle_and_a_mutant_is_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An out one entry longer than the notation p_norm_reverse reads it against: the mirror's answer
    (the extra entry unread) equals Paddle's registry rule on every seeded draw it answers; the
    mutant dropping the first entry instead of the last differs on some draw."""
    pytest.importorskip("paddle")
    from paddle_spmd_port.ops.p_norm import rules as p_norm_rules

    pool = _reverse_long_out_pool(int(os.environ.get("STRICTNESS_SEED", "11")))
    assert len(pool) >= 10, len(pool)
    natives = _natives_by_id(pool)

    def verdicts() -> list[str]:
        return [compare(case.spec, port_outcome(case, "paddle", "mirror"), natives[case.case_id]).verdict
                for case in pool]

    assert verdicts().count("match") == len(pool)
    real_pad = p_norm_rules._padded_out

    def first_dropped(out, length, kind):  # type: ignore[no-untyped-def]
        if len(out.dims_mapping) == length + 1:
            out = DistTensorSpec(out.shape[1:], out.dims_mapping[1:], out.mesh, out.partial_dims)
        return real_pad(out, length, kind)

    monkeypatch.setattr(p_norm_rules, "_padded_out", first_dropped)
    assert "mismatch" in verdicts()


#: The p_norm refusals whose mirrors run the rule on stand-ins (the rule never reads what they replace)
#: or chain to a second mirror; each must answer some draw of the pool.
_STAND_IN_KINDS = {("p_norm_reverse", "invalid-spec:out:mixed-mesh"), ("p_norm_reverse", "invalid-spec:out:mesh-dim"),
                   ("p_norm_reverse", "invalid-spec:x:duplicate"), ("p_norm_reverse", "invalid-spec:x:mesh"),
                   ("p_norm_reverse", "invalid-spec:x:missing"), ("p_norm_grad", "invalid-spec:x:mesh"),
                   ("p_norm_grad", "invalid-spec:out:missing"), ("p_norm_grad", "invalid-spec:x:duplicate")}


def _stand_in_pool(seed: int, n: int = 4000) -> list[tuple[str, Case]]:
    """(strict refusal kind, case) for random mode's p_norm_reverse / p_norm_grad draws (seeded) refused
    for one of _STAND_IN_KINDS that the mirror answers."""
    from paddle_spmd_port.parity.random_cases import random_cases

    pool = []
    for rule in ("p_norm_reverse", "p_norm_grad"):
        for case in random_cases(rule, n, seed):
            err = port_outcome(case).error
            kind = None if err is None else err.kind
            if (rule, kind) in _STAND_IN_KINDS and port_outcome(case, "paddle", "mirror").result is not None:
                pool.append((cast(str, kind), case))
    return pool


@pytest.mark.native
def test_p_norm_stand_in_mirrors_equal_paddle_and_mutants_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """p_norm_reverse's out on a mesh of other dims, or with unknown mesh dims on asvector's shared '1'
    key, x without a mesh or None, x repeating a mesh dim beside a second problem (out's rank); p_norm_grad's
    x without a mesh, out None, x repeating a mesh dim beside out's rank: the mirror's answers equal
    Paddle's (each rule's primary route) on every seeded draw; mutants -- x's answer replicated where
    the reverse rule copies out's mesh dims, the reverse's x answered on out's mesh, x_grad without
    the -1 inserted, the chain to the second mirror cut -- are caught."""
    pytest.importorskip("paddle")
    from paddle_spmd_port.ops.kit.strictness import argument
    from paddle_spmd_port.ops.p_norm import rules as p_norm_rules
    from paddle_spmd_port.types import DistAttr, SpmdResult

    pool = _stand_in_pool(int(os.environ.get("STRICTNESS_SEED", "11")))
    kinds = {(case.rule, kind) for kind, case in pool}
    rare = {("p_norm_grad", "invalid-spec:out:missing"), ("p_norm_reverse", "invalid-spec:x:mesh"),
            ("p_norm_reverse", "invalid-spec:x:missing")}
    assert kinds >= _STAND_IN_KINDS - rare, sorted(_STAND_IN_KINDS - kinds)
    natives = _natives_by_id([case for _, case in pool])

    def verdicts() -> list[str]:
        out = []
        for _, case in pool:
            got = port_outcome(case, "paddle", "mirror")
            out.append("refused" if got.result is None else compare(case.spec, got, natives[case.case_id]).verdict)
        return out

    assert verdicts() == ["match"] * len(pool)

    def x_replicated(real):  # type: ignore[no-untyped-def]
        def answer(fn, *a, **k):  # type: ignore[no-untyped-def]
            got = real(fn, *a, **k)
            x = got.inputs[0]
            flat = DistAttr.make((-1,) * len(x.dims_mapping), frozenset(), x.mesh)
            return SpmdResult.make(inputs=(flat,), outputs=tuple(got.outputs))
        return answer

    key = ("p_norm_reverse", "invalid-spec:out:mixed-mesh")
    monkeypatch.setitem(registry.MIRRORS, key, x_replicated(registry.MIRRORS[key]))
    assert "mismatch" in verdicts()
    monkeypatch.undo()

    def as_out_grad(fn, *a, **k):  # type: ignore[no-untyped-def]  # x_grad without the -1 inserted
        grad = argument(fn, a, k, "out_grad")
        same = DistAttr.make(grad.dims_mapping, frozenset(), grad.mesh)
        return SpmdResult.make(inputs=(same, same, same), outputs=(same,))

    monkeypatch.setitem(registry.MIRRORS, ("p_norm_grad", "invalid-spec:x:mesh"), as_out_grad)
    assert "mismatch" in verdicts()
    monkeypatch.undo()

    def on_out_mesh(fn, x, out, *a, **k):  # type: ignore[no-untyped-def]  # x's answer given out's mesh
        got = p_norm_rules.p_norm_reverse_mirror_x_mesh(fn, x, out, *a, **k)
        answered = got.inputs[0]
        return SpmdResult.make(inputs=(DistAttr.make(answered.dims_mapping, frozenset(), out.mesh),),
                               outputs=tuple(got.outputs))

    if ("p_norm_reverse", "invalid-spec:x:mesh") in kinds:
        monkeypatch.setitem(registry.MIRRORS, ("p_norm_reverse", "invalid-spec:x:mesh"), on_out_mesh)
        assert "mismatch" in verdicts()
        monkeypatch.undo()

    monkeypatch.setattr(p_norm_rules, "_THEN", {})
    assert "refused" in verdicts()


@pytest.mark.native
def test_p_norm_reverse_x_stand_in_beside_out_of_another_rank_mirrors_paddle(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """p_norm_reverse with x None or meshless (Paddle reads its stand-in) and out of another rank than
    that stand-in implies (one entry more, or fewer): the second refusal goes to out's rank mirror,
    and the answer equals Paddle's registry; with the chain cut (_THEN empty) the mirror refuses again."""
    from paddle_spmd_port.ops.p_norm import rules as p_norm_rules

    mesh = ProcessMesh((2, 3), dim_names=("x", "y"))
    attrs = (("porder", 3.0), ("axis", 0), ("epsilon", 1e-3), ("keepdims", False), ("asvector", False))
    cases = [Case("p_norm_reverse", mesh, (x, DistTensorSpec(shape, mapping, mesh, frozenset(partial))), attrs,
                  case_id=f"pnr-stand-in-{i}")
             for i, (x, shape, mapping, partial) in enumerate([
                 (None, (6,), (0,), (1,)),
                 (None, (6,), (-1,), ()),
                 (DistTensorSpec((8, 6), (-1, -1), None), (8, 6), (0, 1), ()),
                 (DistTensorSpec((8, 6, 4), (-1, -1, -1), None), (8,), (1,), (0,)),
             ])]
    natives = _natives_of(cases)

    def verdicts() -> list[str]:
        out = []
        for case, native in zip(cases, natives, strict=True):
            got = port_outcome(case, "paddle", "mirror")
            out.append("refused" if got.result is None else compare(case.spec, got, native).verdict)
        return out

    assert verdicts() == ["match"] * len(cases)
    monkeypatch.setattr(p_norm_rules, "_THEN", {})
    assert verdicts().count("refused") == len(cases)


@pytest.mark.native
def test_p_norm_reverse_repeat_on_the_kept_axis_follows_paddle_and_a_letter_order_mutant_is_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """out (keepdims) repeating a mesh dim on the kept '1' axis and another: the mirror keeps it on the
    first of the two by position, as Paddle's merge does, on seeded draws of x's rank, the reduced
    axis and the repeat's positions; the mutant keeping it on the '1' axis (letter order) is caught."""
    pytest.importorskip("paddle")
    from paddle_spmd_port.ops.p_norm import rules as p_norm_rules

    rng = random.Random(int(os.environ.get("STRICTNESS_SEED", "11")))
    mesh = ProcessMesh((2, 2))
    pool = []
    for i in range(40):
        ndim = rng.randint(2, 4)
        axis = rng.randrange(ndim)
        other = rng.choice([j for j in range(ndim) if j != axis])
        mapping = [-1] * ndim
        mapping[axis] = mapping[other] = rng.randrange(2)
        shape = tuple(rng.choice([2, 4, 6]) for _ in range(ndim))
        out_shape = tuple(1 if j == axis else s for j, s in enumerate(shape))
        pool.append(Case("p_norm_reverse", mesh, (DistTensorSpec(shape, (-1,) * ndim, mesh),
                                                  DistTensorSpec(out_shape, tuple(mapping), mesh)),
                         (("porder", 2.0), ("axis", axis - ndim * rng.randrange(2)), ("epsilon", 1e-12),
                          ("keepdims", True), ("asvector", False)), case_id=f"pn-rev-kept-{i}"))
    assert all(port_outcome(c).error.kind == "invalid-spec:out:duplicate" for c in pool)  # type: ignore[union-attr]
    natives = _natives_by_id(pool)

    def verdicts() -> list[str]:
        return [compare(c.spec, port_outcome(c, "paddle", "mirror"), natives[c.case_id]).verdict for c in pool]

    assert verdicts() == ["match"] * len(pool)
    real_kept = p_norm_rules.first_kept

    def kept_axis_first(spec: DistTensorSpec) -> DistTensorSpec:  # the '1' axis (size 1) takes the repeat
        ones = [j for j, s in enumerate(spec.shape) if s == 1]
        if not ones:
            return real_kept(spec)
        dm = list(spec.dims_mapping)
        dm = [m if j in ones or m not in {dm[k] for k in ones} else -1 for j, m in enumerate(dm)]
        return DistTensorSpec(spec.shape, tuple(dm), spec.mesh, spec.partial_dims)

    monkeypatch.setattr(p_norm_rules, "first_kept", kept_axis_first)
    assert "mismatch" in verdicts()


# --------------------------------------------------------------------------- Paddle answered, port refused
def _answered_report(answered_of: object = None) -> object:
    """A report of three batch_norm cases the port refuses and Paddle's rule answers: x's mapping one
    entry short under ``mirror`` (declared rule ``undefined``), the same under ``strict`` (its kind
    x:length, declared ``varies``: the gap), and one Paddle crashed on (no answer: in neither count).
    ``answered_of``: a stand-in for compare.answered_class (a mutant), patched into the report."""
    from paddle_spmd_port.outcome import Outcome
    from paddle_spmd_port.parity import report as report_mod

    mesh = ProcessMesh((2,))
    stat = DistTensorSpec((6,), (-1,), mesh)
    short = Case("batch_norm", mesh, (DistTensorSpec((8, 6, 4), (-1, 0), mesh), stat, stat, stat, stat),
                 (("is_test", False), ("momentum", 0.9), ("epsilon", 1e-5), ("data_format", "NCHW"),
                  ("use_global_stats", False), ("trainable_statistics", False)), case_id="bn-short")
    paddle_answer = port_outcome(Case("batch_norm", mesh, (DistTensorSpec((8, 6, 4), (-1, 0, -1), mesh), stat, stat,
                                                           stat, stat), short.attrs, case_id="bn-valid")).result
    assert paddle_answer is not None
    saved = report_mod.answered_class
    if answered_of is not None:
        report_mod.answered_class = answered_of  # type: ignore[assignment]
    try:
        rep = report_mod.ParityReport()
        tally = rep.plan("batch_norm", "compiled", 3, short.spec.n_cells)
        for i, (policy, native) in enumerate((("mirror", Outcome(result=paddle_answer)),
                                              ("strict", Outcome(result=paddle_answer)),
                                              ("mirror", Outcome(crash="signal 6 (SIGABRT)")))):
            port = port_outcome(short, "paddle", policy)
            cmp = compare(short.spec, port, native)
            assert cmp.verdict == "port-rejects-invalid", cmp
            rep.add(tally, i, short, port, native, cmp)
    finally:
        report_mod.answered_class = saved
    return rep


def _check_answered(rep: object) -> None:
    from paddle_spmd_port.parity.report import ParityReport

    assert isinstance(rep, ParityReport)
    tally = rep.tallies["batch_norm@compiled"]
    assert tally.answered == {"paddle-answered-undefined": 1, "paddle-answered-not-mirrored": 1}, tally.answered
    assert rep.total_answered() == {"paddle-answered-undefined": 1, "paddle-answered-not-mirrored": 1}
    assert rep.answered_text() == ("2 port refusals Paddle's rule answered (1 from memory it never set, "
                                   "1 not mirrored)")
    assert "- batch_norm@compiled: 1 from memory it never set, 1 not mirrored" in rep.markdown()
    assert rep.to_json()["total_answered"] == rep.total_answered()


def test_paddle_answered_refusals_are_split_by_the_declaration() -> None:
    """The refusal declared ``undefined`` (x's mapping written past its end) counts as answered from
    memory Paddle never set, the one declared otherwise as the gap, the crash in neither; each
    mutant of the split (by the op verdict, everything in the gap, a crash counted) is caught."""
    from paddle_spmd_port.compare import answered_class
    from paddle_spmd_port.outcome import Outcome

    rep = _answered_report()
    _check_answered(rep)
    assert strictness_of("batch_norm", "invalid-spec:x:length-short").rule == "undefined"  # type: ignore[union-attr]

    def by_op(rule_key: str, port: Outcome, native: Outcome) -> str | None:
        klass = answered_class(rule_key, port, native)
        decl = strictness_of(rule_key, port.error.kind) if klass and port.error else None
        return None if klass is None else ("paddle-answered-undefined" if decl and decl.op == "refuses"
                                           else "paddle-answered-not-mirrored")

    def all_gap(rule_key: str, port: Outcome, native: Outcome) -> str | None:
        return answered_class(rule_key, port, native) and "paddle-answered-not-mirrored"

    def crash_too(rule_key: str, port: Outcome, native: Outcome) -> str | None:
        return answered_class(rule_key, port, Outcome(result=port.result) if native.crash else native) or \
            "paddle-answered-undefined"

    for mutant in (by_op, all_gap, crash_too):
        with pytest.raises(AssertionError):
            _check_answered(_answered_report(mutant))


def test_merge_sums_the_answered_classes() -> None:
    from paddle_spmd_port.parity.merge import _add_tally, _tally
    from paddle_spmd_port.parity.report import ParityReport

    rep = _answered_report()
    assert isinstance(rep, ParityReport)
    part = rep.tallies["batch_norm@compiled"]
    into = _tally(part.to_json())
    assert into.answered == part.answered
    _add_tally(into, _tally(part.to_json()))
    assert into.answered == {"paddle-answered-undefined": 2, "paddle-answered-not-mirrored": 2}


def _none_cases(rng: random.Random, n: int, missing: str) -> list[Case]:
    """p_norm_grad with x or out_grad (``missing``) None: the other tensors of rank 0..4 on a drawn
    mesh, keepdims and asvector drawn; an axis in range of x (out_grad None), or within -3..3 (x None:
    the rule reads only the stand-in's rank 1)."""
    out = []
    for i in range(n):
        mesh = ProcessMesh(rng.choice([(2,), (4,), (2, 3), (2, 2, 2)]))
        ndim = rng.randint(0, 4)
        free = list(range(mesh.ndim))
        rng.shuffle(free)
        t = DistTensorSpec(tuple(rng.choice([2, 4, 6, 8]) for _ in range(ndim)),
                           tuple(free.pop() if free and rng.random() < 0.5 else -1 for _ in range(ndim)), mesh,
                           frozenset(free[:1]) if missing == "x" and rng.random() < 0.3 else frozenset())
        keepdims, asvector = rng.random() < 0.3, rng.random() < 0.4
        if missing == "out_grad":
            axis = rng.randint(-ndim, ndim - 1) if ndim else rng.choice([0, -1, 1])
            orank = ndim if keepdims else 0 if asvector else max(ndim - 1, 0)
            inputs = (t, DistTensorSpec((2,) * orank, (-1,) * orank, mesh), None)
        else:
            axis = rng.randint(-3, 3)
            inputs = (None, DistTensorSpec(t.shape, (-1,) * ndim, mesh), t)
        attrs = (("porder", 2.0), ("axis", axis), ("epsilon", 1e-12), ("keepdims", keepdims), ("asvector", asvector))
        out.append(Case("p_norm_grad", mesh, inputs, attrs, case_id=f"png-{missing}-none-{i}"))
    return out


@pytest.mark.native
@pytest.mark.parametrize("missing", ["out_grad", "x"])
def test_p_norm_grad_none_mirrors_paddle_and_a_wrong_mesh_is_caught(missing: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """x or out_grad None under mirror: every answer equals Paddle's rule's (on seeded draws), every
    input Paddle answered and the mirror refuses is declared ``undefined``; a mutant answering on the
    wrong mesh (out_grad None: x's, where Paddle's stand-in has none; x None: none, where Paddle copies
    out_grad's) differs from Paddle."""
    pytest.importorskip("paddle")
    from paddle_spmd_port.native.pool import run_native
    from paddle_spmd_port.native.routes import DEFAULT_BACKEND

    cases = _none_cases(random.Random(int(os.environ.get("MIRROR_SEED", "5"))), 60, missing)
    natives, _ = run_native(cases, backend=DEFAULT_BACKEND["p_norm_grad"], workers=1, timeout=300)
    answered = 0
    for case, native in zip(cases, natives, strict=True):
        mirrored = port_outcome(case, "paddle", "mirror")
        if mirrored.result is not None:
            answered += 1
            assert compare(case.spec, mirrored, native).verdict == "match", (case.describe(), mirrored, native)
        elif native.result is not None:
            assert mirrored.error is not None
            decl = strictness_of(case.rule, mirrored.error.kind)
            assert decl is not None and decl.rule == "undefined", (case.describe(), mirrored.error)
    assert answered > 20

    key = ("p_norm_grad", f"invalid-spec:{missing}:missing")
    real = registry.MIRRORS[key]

    def wrong_mesh(fn: object, *args: object, **kwargs: object) -> object:
        from paddle_spmd_port.types import DistAttr, SpmdResult

        got = cast(SpmdResult, real(fn, *args, **kwargs))
        mesh = cast(DistTensorSpec, args[0]).mesh if missing == "out_grad" else None
        return SpmdResult.make(inputs=tuple(DistAttr.make(a.dims_mapping, a.partial_dims, mesh) for a in got.inputs),
                               outputs=tuple(DistAttr.make(a.dims_mapping, a.partial_dims, mesh) for a in got.outputs))

    monkeypatch.setitem(registry.MIRRORS, key, wrong_mesh)
    monkeypatch.setattr(registry, "_MIRRORED", {})
    verdicts = {compare(case.spec, port_outcome(case, "paddle", "mirror"), native).verdict
                for case, native in zip(cases, natives, strict=True)}
    assert "mismatch" in verdicts
