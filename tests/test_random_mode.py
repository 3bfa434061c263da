"""``parity --random N --seed S``: the random case generator and the random sweep.

No Paddle needed: determinism, what the generator covers (counted over a few thousand draws), the
selection's name, and that every answer the port gives to a random case is well formed. With Paddle
(``native``): a short random sweep over every rule exits 0, and a broken copy of the port is caught
by one (exit 1, the failing case's ``infer --case-json`` line on the console).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from collections import Counter

import pytest

from paddle_spmd_port.errors import InvalidSpecError
from paddle_spmd_port.grid import MESH_SHAPES, X_SHAPES
from paddle_spmd_port.ops import RULES
from paddle_spmd_port.ops.kit.layout import DATA_FORMATS as BN_DATA_FORMATS
from paddle_spmd_port.outcome import port_outcome
from paddle_spmd_port.parity.cli import DEFAULT_BACKEND, _plan_groups, parse_args
from paddle_spmd_port.parity.random_cases import INVALID_MUTATIONS, RANDOM_MESH_SHAPES, random_cases, random_draws
from paddle_spmd_port.reporting import REPRO_PYTHON
from paddle_spmd_port.types import mesh_dims_of
from tests.cli_checks import REPO, run_cli

BN = ("batch_norm_static", "batch_norm", "batch_norm_grad", "sync_batch_norm", "sync_batch_norm_grad")
LN = ("layer_norm", "layer_norm_reverse", "layer_norm_grad")
N = 2000


def _draws(rule, n=N, seed=0):
    return random_draws(rule, n, seed)


# --------------------------------------------------------------------------- determinism
@pytest.mark.parametrize("rule", list(RULES))
def test_same_seed_same_cases_other_seed_other_cases(rule):
    a, b = random_cases(rule, 300, 5), random_cases(rule, 300, 5)
    assert a == b
    assert [c.to_json() for c in a] == [c.to_json() for c in b]
    assert random_cases(rule, 300, 6) != a
    assert random_cases(rule, 120, 5) == a[:120]  # a case does not depend on how many follow it
    assert [c.case_id for c in a[:3]] == [f"{rule}-random5-1", f"{rule}-random5-2", f"{rule}-random5-3"]


def test_rules_draw_independently():
    """A rule's cases depend on (rule, seed) only: the same whether drawn alone or after others."""
    alone = random_cases("layer_norm", 50, 9)
    for rule in RULES:
        random_cases(rule, 50, 9)
    assert random_cases("layer_norm", 50, 9) == alone
    first = [c.mesh for c in random_cases("layer_norm", 50, 9)]
    assert first != [c.mesh for c in random_cases("layer_norm_grad", 50, 9)]


# --------------------------------------------------------------------------- coverage of the draws
@pytest.mark.parametrize("rule", list(RULES))
def test_the_draws_cover_meshes_ranks_none_partial_and_kinds(rule):
    draws = _draws(rule)
    spec = RULES[rule]
    kinds = Counter(d.kind for d in draws)
    valid = [d.case for d in draws if d.kind == "valid"]
    # kinds: about 60 / 10 / 15 / 15; a co-shard draw on a 1-D mesh (4 of 12 meshes) stays valid, and so does a
    # mixed-mesh draw of an op of x alone (no other tensor to move)
    alone = len(spec.inputs) == 1
    assert 0.57 * N < kinds["valid"] < (0.85 if alone else 0.70) * N, kinds
    assert 0.04 * N < kinds["coshard"] < 0.10 * N, kinds
    for d in draws:
        if d.kind == "coshard":  # x always co-sharded, every named tensor co-sharded, all still valid specs
            assert d.case.inputs[0].coshard and d.mutation.startswith("x"), d
            named = d.case.named_inputs()
            assert all(named[n].coshard for n in d.mutation.split("+")), d
            assert all(s is None or s._problem is None for s in d.case.inputs), d
    assert kinds["mixed-mesh"] == 0 if alone else 0.11 * N < kinds["mixed-mesh"] < 0.19 * N, kinds
    assert 0.11 * N < kinds["invalid"] < 0.19 * N, kinds
    # every mesh, each about 1/12 of the draws
    meshes = Counter(c.mesh.shape for c in valid)
    assert set(meshes) == set(RANDOM_MESH_SHAPES)
    assert min(meshes.values()) > len(valid) / len(RANDOM_MESH_SHAPES) / 2, meshes
    assert sum(1 for c in valid if c.mesh.process_ids != tuple(range(len(c.mesh.process_ids)))) > len(valid) / 8
    # every rank the op takes, and nothing else among the valid draws
    ranks = Counter(len(c.inputs[0].shape) for c in valid)
    want = set(range(2, 6)) if rule in BN else {4, 5} if spec.op == "instance_norm" else \
        {3, 4, 5} if spec.op == "group_norm" else set(range(1, 7))
    assert set(ranks) == want, ranks
    assert min(ranks.values()) > len(valid) / len(ranks) / 2
    # odd and uneven sizes, shapes outside the grid
    sizes = Counter(s for c in valid for s in c.inputs[0].shape)
    assert {1, 3, 5, 7, 9, 11} <= set(sizes)
    off_grid = sum(1 for c in valid if c.mesh.shape not in MESH_SHAPES or c.inputs[0].shape not in X_SHAPES.values())
    assert off_grid > 0.95 * len(valid)
    # None where optional, never where required (valid draws)
    for i, name in enumerate(spec.inputs):
        nones = sum(1 for c in valid if c.inputs[i] is None)
        if name in spec.optional:
            assert 0.10 * len(valid) < nones < 0.20 * len(valid), (name, nones)
        else:
            assert nones == 0, name
    # random partial sets, on x and on the others
    # (instance_norm: 12% expected, its rank-4/5 x leaves few mesh dims free; 0.09 is 3 sigma below)
    assert 0.09 * len(valid) < sum(1 for c in valid if c.inputs[0].partial_dims) < 0.6 * len(valid)
    others_partial = sum(1 for c in valid if any(s is not None and s.partial_dims for s in c.inputs[1:]))
    assert others_partial > (0.15 if len(spec.inputs) > 2 else 0.08 if not alone else -1) * len(valid)  # rms_norm:
    # scale alone; p_norm: x alone
    assert max(len(c.inputs[0].partial_dims) for c in valid) >= 2
    # attributes
    attrs = [dict(c.attrs) for c in valid]
    if "data_format" in dict(spec.attrs):
        assert Counter(a["data_format"] for a in attrs).keys() == set(BN_DATA_FORMATS)
    if "begin_norm_axis" in dict(spec.attrs):
        assert {(a["begin_norm_axis"], len(c.inputs[0].shape)) for a, c in zip(attrs, valid, strict=True)} >= {
            (b, r) for r in range(1, 7) for b in (0, r)}


@pytest.mark.parametrize("rule", list(RULES))
def test_mixed_meshes_other_shape_and_other_ids(rule):
    if len(RULES[rule].inputs) == 1:
        pytest.skip(f"{rule} takes x alone: no other tensor to move to another mesh")
    mixed = [d.case for d in _draws(rule) if d.kind == "mixed-mesh"]
    other_shape = same_shape_other_ids = 0
    for case in mixed:
        x_mesh = case.inputs[0].mesh
        meshes = [s.mesh for s in case.inputs[1:] if s is not None and s.mesh != x_mesh]
        assert meshes, case.describe()
        other_shape += any(m.shape != x_mesh.shape for m in meshes)
        same_shape_other_ids += any(m.shape == x_mesh.shape and m.process_ids != x_mesh.process_ids for m in meshes)
    assert other_shape > len(mixed) / 3
    assert same_shape_other_ids > len(mixed) / 3
    assert sum(1 for c in mixed
               if any(s is not None and s.mesh.ndim > c.inputs[0].mesh.ndim for s in c.inputs[1:])) > len(mixed) / 8


@pytest.mark.parametrize(("rule", "n"), [("batch_norm", 8000), ("layer_norm_grad", 8000)])
def test_every_invalid_mutation_is_drawn(rule, n):
    mutations = Counter(d.mutation.split(":")[0] for d in _draws(rule, n) if d.kind == "invalid")
    applicable = set(INVALID_MUTATIONS)
    assert set(mutations) == applicable
    assert all(mutations[m] >= 3 for m in applicable), mutations


#: The attributes Paddle's rules read (their op refuses a value out of range): every rule taking one
#: draws it out of range; epsilon (no rule reads it) out of range too, wherever a rule takes it.
READ_ATTRS = ("axis", "begin_norm_axis", "data_format", "groups")


def _attr_gaps(rule, draws):
    """What the draws miss of the out-of-range attributes a rule must get: none drawn at 3-7% of the
    draws, an attribute of READ_ATTRS (or epsilon) never drawn out of range, a value a valid draw of
    the same x rank also gives, an attribute the rules read that validity does not call invalid."""
    from paddle_spmd_port.validity import input_problem

    spec = RULES[rule]
    mutated = [d for d in draws if d.kind == "invalid" and d.mutation.startswith("attr:")]
    if not spec.attrs:
        return [f"{len(mutated)} attr mutations of a rule taking no attribute"] if mutated else []
    gaps = []
    if not 0.03 * len(draws) < len(mutated) < 0.07 * len(draws):
        gaps.append(f"{len(mutated)} attr mutations in {len(draws)} draws")
    want = {a for a in (*READ_ATTRS, "epsilon") if a in dict(spec.attrs)}
    if missing := want - {d.mutation.removeprefix("attr:") for d in mutated}:
        gaps.append(f"never out of range: {sorted(missing)}")
    valid = {(name, len(d.case.inputs[0].shape), value) for d in draws if d.kind == "valid"
             for name, value in d.case.attrs}
    for d in mutated:
        name = d.mutation.removeprefix("attr:")
        value = dict(d.case.attrs)[name]
        if (name, len(d.case.inputs[0].shape), value) in valid:
            gaps.append(f"{name} {value!r} is also a valid draw's ({d.case.case_id})")
        elif name in READ_ATTRS and input_problem(d.case) is None:
            gaps.append(f"{name} {value!r} is valid for the op ({d.case.case_id})")
    return gaps


@pytest.mark.parametrize("rule", list(RULES))
def test_the_draws_include_out_of_range_attributes(rule):
    """Every rule taking an attribute draws some out of range (its family's ``RANDOM.bad_attrs``):
    the one its rules read (axis, begin_norm_axis, data_format, groups) and epsilon, each a value no
    valid draw of that x rank gives."""
    assert _attr_gaps(rule, _draws(rule, N, 3)) == []


@pytest.mark.parametrize("rule", ["p_norm", "layer_norm_grad", "rms_norm", "batch_norm", "group_norm"])
def test_a_family_without_its_bad_attrs_declaration_is_caught(rule, monkeypatch):
    """The mutant: the family's declaration removed, the draws hold no attribute out of range and
    :func:`_attr_gaps` says so."""
    import dataclasses

    from paddle_spmd_port.parity import random_cases as rc

    plain = dataclasses.replace(rc._plan(rule), bad_attrs=())
    monkeypatch.setattr(rc, "_plan", lambda r: plain if r == rule else rc.grid_plan(r).random)
    gaps = _attr_gaps(rule, rc.random_draws(rule, N, 3))
    assert any("attr mutations in" in g for g in gaps) and any("never out of range" in g for g in gaps), gaps


#: Mutations every rule rejects: with InvalidSpecError, or with the check Paddle makes itself (e.g.
#: layer_norm_reverse checks dims_mapping lengths); the other mutations matter to some rules only.
ALWAYS_REJECTED = ("mapping-length", "mesh-dim-range", "mesh-dim-twice", "partial-bad", "x-no-mesh",
                   "required-none")


@pytest.mark.parametrize("rule", list(RULES))
def test_the_port_rejects_malformed_specs_and_answers_others_well_formed(rule):
    """Invalid specs are rejected by name; every answer the port gives to a random case -- mixed
    meshes included -- names only mesh dims that its attr's own mesh has."""
    for d in _draws(rule, 3000, 1):
        out = port_outcome(d.case)
        if d.kind == "invalid" and d.mutation in ALWAYS_REJECTED:
            assert out.error is not None, (d.mutation, d.case.describe(), str(out))
            assert out.error.port_invalid or out.error.family == "ValueError", (d.mutation, str(out))
        if out.result is None:
            continue
        for attr in out.result.inputs + out.result.outputs:
            if attr.mesh is not None:
                k = attr.mesh.ndim
                used = [m for e in attr.dims_mapping for m in mesh_dims_of(e)]  # co-shards: every member
                assert all(m < k for m in used) and all(p < k for p in attr.partial_dims), \
                    (d.case.describe(), str(out))


def test_mixed_mesh_rejection_names_the_input_on_the_other_mesh():
    """The issue's case: layer_norm_grad, x on (2,), mean on (2,2,2) sharded along mesh dim 2 (Paddle
    segfaults; the port used to answer mesh dims a 1-D mesh lacks)."""
    from paddle_spmd_port import DistTensorSpec, ProcessMesh
    from paddle_spmd_port.rules import layer_norm_grad_infer_spmd

    m1, m3 = ProcessMesh((2,)), ProcessMesh((2, 2, 2))
    x = DistTensorSpec((8, 6, 4), (-1, -1, -1), m1)
    mean = DistTensorSpec((8, 6), (2, -1), m3)
    var = DistTensorSpec((8, 6), (-1, -1), m1)
    with pytest.raises(InvalidSpecError, match=r"^mean: on mesh 2x2x2") as info:
        layer_norm_grad_infer_spmd(x, None, None, mean, var, x, begin_norm_axis=2)
    assert info.value.kind == "invalid-spec:mean:mixed-mesh"


# --------------------------------------------------------------------------- the command's selection
def test_random_selection_is_named_and_uses_primary_backends(tmp_path):
    args = parse_args(["--random", "7", "--seed", "3", "--report-dir", str(tmp_path / "r")])
    sel = args.selection
    assert not sel["full"] and sel["random"] == 7 and sel["seed"] == 3
    assert sel["slug"] == "primary_random7-seed3"
    assert "random 7" in sel["describe"] and "seed 3" in sel["describe"]
    groups = _plan_groups(args)
    assert sorted(r for rules in groups.values() for r in rules) == sorted(RULES)
    assert all(DEFAULT_BACKEND[r] == backend for backend, rules in groups.items() for r in rules)
    one = parse_args(["--random", "7", "--backend", "pir", "--rules", "layer_norm", "--report-dir", str(tmp_path)])
    assert one.selection["slug"] == "rules-layer_norm_backend-pir_random7-seed0"
    assert _plan_groups(one) == {"pir": ["layer_norm"]}


# --------------------------------------------------------------------------- against Paddle
@pytest.mark.native
def test_a_short_random_sweep_over_every_rule_exits_0(tmp_path):
    done = run_cli(["parity", "--random", "120", "--seed", "4", "--quiet"], tmp_path, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = tmp_path / "reports" / "parity-primary_random120-seed4"  # its own default report dir
    data = json.loads((report / "parity.json").read_text())
    assert data["selection"]["random"] == 120
    assert "random 120 cases per rule" in data["selection"]["describe"]
    assert sorted(data["rules"]) == sorted(f"{r}@{DEFAULT_BACKEND[r]}" for r in RULES)
    assert all(t["cases"] == 120 and t["verdicts"]["mismatch"] == 0 for t in data["rules"].values())
    assert f"PASS: all {120 * len(RULES):,} selected cases compared" in done.stdout
    # the compiled group is tallied first: it runs while the registry's background workers do (waiting for
    # the background group first once ran the two one after the other)
    with gzip.open(report / "parity-cases.jsonl.gz", "rt") as fh:
        backends = [json.loads(line)["backend"] for line in fh]
    assert backends and backends == sorted(backends, key=lambda b: b == "registry") and backends[-1] == "registry"


#: A realistic one-line bug: the layer_norm forward rule keeps x's partial status on out.
MUTANT = ("return SpmdResult.make(inputs=(x_attr, ts.attr((-1,)), tb.attr((-1,))), outputs=(x_attr, stat, stat))",
          "return SpmdResult.make(inputs=(x_attr, ts.attr((-1,)), tb.attr((-1,))), "
          "outputs=(tx.attr(out, keep_partial=True), stat, stat))")


@pytest.mark.native
def test_a_broken_port_is_caught_and_its_case_printed(tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(REPO / "paddle_spmd_port", broken / "paddle_spmd_port",
                    ignore=shutil.ignore_patterns("__pycache__"))
    rule_file = broken / "paddle_spmd_port" / "ops" / "layer_norm" / "rules.py"
    text = rule_file.read_text()
    assert text.count(MUTANT[0]) == 1, "the mutant's line moved: update MUTANT"
    rule_file.write_text(text.replace(*MUTANT))
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, PYTHONPATH=str(broken))
    done = subprocess.run([sys.executable, "-m", "paddle_spmd_port", "parity", "--random", "300", "--rules",
                           "layer_norm", "--quiet"], cwd=work, capture_output=True, text=True, timeout=600, env=env,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    repro = [ln for ln in done.stdout.splitlines()
             if REPRO_PYTHON + " -m paddle_spmd_port infer --backend registry --case-json '" in ln]
    assert repro, done.stdout[-3000:]
    assert repro[0].startswith("layer_norm@registry layer_norm-random0-")
    # the printed line repeats the case: the case is a random one with x partial
    case = json.loads(repro[0].split("--case-json '", 1)[1].rstrip("'"))
    assert case["rule"] == "layer_norm" and case["inputs"][0]["partial_dims"]
    # and the real port agrees with Paddle on it (what the line would show after the fix)
    fixed = run_cli(["infer", "--case-json", json.dumps(case)], work, timeout=300)
    assert fixed.returncode == 0, fixed.stdout[-2000:] + fixed.stderr[-2000:]


def test_the_pool_isolates_the_draws_that_restarted_workers():
    """A partial dim or a mesh dim outside its input's mesh crashes the registry's and the compiled
    caller's processes on most draws (`partial-bad`, `mesh-dim-range`): the pool runs them in forked
    children; crash_prone's predicate alone misses the partial ones (each then cost a worker restart)."""
    from paddle_spmd_port.native.crash_prone import MAY_CRASH
    from paddle_spmd_port.native.pool import isolates

    bad = [d.case for rule in ("layer_norm", "batch_norm", "rms_norm_grad") for d in _draws(rule, 8000, 2)
           if d.mutation == "partial-bad"]
    assert bad
    for backend in ("registry", "compiled"):
        assert all(isolates(backend)(c) for c in bad), backend
    assert not all(MAY_CRASH["registry"](c) for c in bad)
    # on PIR too: an input invalid for its op runs alone on every route (its answer must not depend on the
    # cases before it: native/pool.py garbage_prone), though PIR refuses these before building
    assert all(isolates("pir")(c) for c in bad)
    valid = [d.case for d in _draws("layer_norm", 500, 2) if d.kind == "valid"]
    assert not any(isolates("registry")(c) for c in valid if not MAY_CRASH["registry"](c))
