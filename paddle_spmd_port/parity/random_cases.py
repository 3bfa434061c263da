"""Random cases *outside* the grid, for ``parity --random N --seed S``.

Every case is drawn independently; the stream depends only on (rule, seed), so a rule's cases do
not change when other rules are selected, and one seed always gives the same cases::

    axis               distribution (per case)
    kind               60% valid, 10% co-shard, 15% mixed meshes, 15% invalid (one mutation of a
                       valid draw)
    mesh               uniform over RANDOM_MESH_SHAPES: 3, 8, 1x2, 2x4, 4x2, 3x2, 2x2x2, 1x1 and the
                       grid's 2, 4, 2x2, 2x3; 1 in 4 with other process ids (shifted or reversed)
    x rank             uniform over the family's range (``RANDOM.ranks`` of ops/<family>/grid.py)
    axis sizes         uniform over SIZES (1, 3, 5, 7, 9, 11 odd; 2, 4, 6, 8, 12, 16 even)
    dims_mapping       per tensor, one of: each axis split with probability 1/5, 1/2 or 4/5 along
                       a mesh dim no other axis uses, or uniform over every valid mapping;
                       mean/variance/out/out_grad copy x's mapping 30%
    partial dims       each mesh dim the mapping leaves free, with probability 1/3 (x, and every
                       other tensor whose mapping is drawn)
    other tensors      15% None where the rule allows None, 40% a drawn placement (55% if
                       required), else replicated
    attrs              an attribute the family draws itself (``RANDOM.attr_draws``: data_format,
                       begin_norm_axis, groups, p_norm's porder and axis) its way; epsilon and
                       momentum from small lists; booleans fair coins
    co-shard           on a mesh of 2 or more dims (a 1-D mesh: the draw stays valid), x and each
                       other tensor with probability 1/2 redrawn uniformly over
                       ``grid.coshard_mappings`` of its rank (some axis split along 2+ mesh dims),
                       partial drawn as above over the dims left free
    mixed meshes       1 (2/3) or 2 (1/3) inputs other than x moved to another mesh: half of them
                       another shape (any other of RANDOM_MESH_SHAPES, so also more or fewer mesh
                       dims), half x's shape with other process ids; placement drawn for that mesh
                       (70%) or replicated
    invalid            one of INVALID_MUTATIONS, weighted 12 each: x rank out of range (one of
                       the family's ``RANDOM.bad_x_ranks``; the family's ``RANDOM.rank_attrs``
                       drawn again for it), another tensor's rank wrong, dims_mapping length !=
                       rank, a mesh dim out of range, a mesh dim used twice; weighted 24: one
                       attribute outside what the op takes (the family's ``RANDOM.bad_attrs``, by
                       their weights, among those the rule takes: 4-5% of a rule's draws);
                       weighted 1 each (they crash Paddle on most draws): a partial dim outside
                       the mesh, x without a mesh, None for a required input

Left out on purpose: a partial dim that also shards an axis. Paddle refuses it while building the
input (``Trying to Set dim N as Partial which is a Sharding dim``), before any rule runs; the
registry backend builds its inputs outside its ``try``, so its worker dies on such a case (exit
code 1) and the pool gives the slice up after three such deaths (they need not be consecutive
cases), leaving the rest of the slice uncompared.

Case ids are ``<rule>-random<seed>-<n>`` (n from 1). :func:`random_draws` also says which kind
each case was drawn as (and which mutation), for tests and reports.

Blocks: a rule's stream is cut into blocks of :data:`BLOCK` cases, each drawn by a generator
seeded with (rule, seed, block) alone, so any block can be drawn without the ones before it: a
long run draws, compares and drops a few blocks of each rule at a time (:func:`rounds`), and
``--shard K/M`` takes every M-th (rule, block) unit (:func:`shard_units`). Block 0's generator is seeded as the
whole stream was before blocks existed, so a rule's first BLOCK cases are what they were; from
case BLOCK + 1 on, the cases differ from those older releases drew.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ..case import Case
from ..grid import MESH_SHAPES, coshard_mappings, grid_plan, input_shapes, mesh_of, valid_mappings
from ..ops import rule_spec
from ..ops.kit.grid import LIKE_X, RandomPlan
from ..types import DimsMapping, DistTensorSpec, ProcessMesh, memo_table, mesh_dims_of

#: Meshes beyond the grid's, then the grid's own.
RANDOM_MESH_SHAPES: tuple[tuple[int, ...], ...] = tuple(dict.fromkeys(
    ((3,), (8,), (1, 2), (2, 4), (4, 2), (3, 2), (2, 2, 2), (1, 1)) + MESH_SHAPES))
SIZES = (1, 3, 5, 7, 9, 11, 2, 4, 6, 8, 12, 16)
KINDS = (("valid", 60), ("coshard", 10), ("mixed-mesh", 15), ("invalid", 15))
EPSILONS = (1e-5, 1e-6, 1e-3, 0.5)
MOMENTUMS = (0.9, 0.99, 0.5, 0.0)
#: Mutation -> weight. ``attr`` (one attribute outside what the op takes, from the family's
#: ``RANDOM.bad_attrs``) weighs twice the others: it is the one mutation that reaches a rule's
#: attributes, so a rule taking one draws it on 24 / 87 of its invalid draws (24 / 75 for p_norm,
#: which has no other tensor), 4-5% of all its draws. The last three crash Paddle on most draws (it
#: builds no input from them, or segfaults): they run in a forked child each (~20 ms of CPU a
#: crash, against a worker restart's seconds) and are drawn 12 times more rarely than the others.
#: The grid has each of them too.
INVALID_MUTATIONS = {"x-rank": 12, "other-rank": 12, "mapping-length": 12, "mesh-dim-range": 12, "mesh-dim-twice": 12,
                     "attr": 24, "partial-bad": 1, "x-no-mesh": 1, "required-none": 1}



def _plan(rule: str) -> RandomPlan:
    """The rule's family's draws (its grid module's ``RANDOM``)."""
    plan: RandomPlan = grid_plan(rule).random
    return plan


class Draw(NamedTuple):
    case: Case
    kind: str
    """valid | mixed-mesh | invalid"""
    mutation: str = ""
    """For invalid draws: which of INVALID_MUTATIONS, ``attr:<name>`` for an attribute mutation (for
    mixed ones: the moved inputs)."""


def _other_ids(mesh: ProcessMesh, rng: random.Random) -> ProcessMesh:
    """The same shape and names with other process ids (shifted past the mesh, or reversed)."""
    own = tuple(mesh.process_ids or ())
    size = len(own)
    shifted = tuple(range(size, 2 * size)) if own != tuple(range(size, 2 * size)) else tuple(range(2 * size, 3 * size))
    backwards = tuple(reversed(own))
    ids = shifted if size == 1 or rng.random() < 0.5 else backwards
    key = (mesh.shape, ids, mesh.dim_names)
    other = _MESHES.get(key)
    if other is None:
        other = _MESHES[key] = ProcessMesh(*key)
    return other


#: The meshes, specs and attribute tuples drawn so far, by value: the draws repeat a few hundred
#: meshes and attribute tuples and (1-D per-channel and statistics tensors above all) many specs,
#: each built and checked once, and shared by the cases that draw it (less memory, a worker's slice
#: pickles each once, and what is worked out per attrs tuple -- ``case.PerAttrs`` -- is found again).
#: A long run empties them between its rounds (``types.drop_memos``), as it does the other memos.
_MESHES: dict[tuple[Any, ...], ProcessMesh] = memo_table({})
_SPECS: dict[tuple[Any, ...], DistTensorSpec] = memo_table({})
_ATTRS: dict[tuple[Any, ...], tuple[tuple[str, Any], ...]] = memo_table({})
#: Entries each table keeps at most (then it starts again: a long run's memory stays bounded).
_TABLE_LIMIT = 50_000


def _attrs_tuple(attrs: tuple[tuple[str, Any], ...]) -> tuple[tuple[str, Any], ...]:
    key = tuple((name, type(value), value) for name, value in attrs)  # (True and 1 stay apart)
    found = _ATTRS.get(key)
    if found is None:
        if len(_ATTRS) > _TABLE_LIMIT:
            _ATTRS.clear()
        found = _ATTRS[key] = attrs
    return found


def _spec(shape: tuple[int, ...], dims_mapping: DimsMapping, mesh: ProcessMesh | None,
          partial: frozenset[int] = frozenset()) -> DistTensorSpec:
    key = (shape, dims_mapping, partial, id(mesh))
    spec = _SPECS.get(key)
    if spec is None or spec.mesh is not mesh:  # (the spec holds its mesh: the id stays the mesh's)
        if len(_SPECS) > _TABLE_LIMIT:
            _SPECS.clear()
        spec = _SPECS[key] = DistTensorSpec(shape, dims_mapping, mesh, partial)
    return spec


def _draw_mesh(rng: random.Random) -> ProcessMesh:
    mesh = mesh_of(rng.choice(RANDOM_MESH_SHAPES))
    return _other_ids(mesh, rng) if rng.random() < 0.25 else mesh


def _draw_mapping(rng: random.Random, rank: int, mesh_ndim: int) -> tuple[int, ...]:
    p = rng.choice((0.2, 0.5, 0.8, 1.0))
    if p == 1.0:  # uniform over every valid mapping (most axes split)
        return rng.choice(valid_mappings(rank, mesh_ndim))
    free = list(range(mesh_ndim))
    dm = []
    for _ in range(rank):
        if free and rng.random() < p:
            m = rng.choice(free)
            free.remove(m)
            dm.append(m)
        else:
            dm.append(-1)
    return tuple(dm)


def _draw_partial(rng: random.Random, dm: DimsMapping, mesh_ndim: int) -> frozenset[int]:
    used = {m for e in dm for m in mesh_dims_of(e)}
    return frozenset(m for m in range(mesh_ndim) if m not in used and rng.random() < 1 / 3)


def _placed(rng: random.Random, shape: tuple[int, ...], mesh: ProcessMesh,
            like: DimsMapping | None = None) -> DistTensorSpec:
    dm = like[:len(shape)] if like is not None and len(like) >= len(shape) else \
        _draw_mapping(rng, len(shape), mesh.ndim)
    return _spec(shape, dm, mesh, _draw_partial(rng, dm, mesh.ndim))


def _rep(shape: tuple[int, ...], mesh: ProcessMesh | None) -> DistTensorSpec:
    return _spec(shape, (-1,) * len(shape) if mesh is not None else (), mesh)


@functools.cache
def _own_draws(rule: str) -> dict[str, Any]:
    """The family's own attribute draws (its ``RANDOM.attr_draws``), looked up once a rule."""
    return dict(_plan(rule).attr_draws)


def _attrs(rule: str, rng: random.Random, rank: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    own = _own_draws(rule)
    for name, default in rule_spec(rule).attrs:
        if name in own:
            out[name] = own[name](rng, rank)
        elif name == "epsilon":
            out[name] = rng.choice(EPSILONS)
        elif name == "momentum":
            out[name] = rng.choice(MOMENTUMS)
        elif isinstance(default, bool):
            out[name] = rng.random() < 0.5
        else:
            out[name] = default
    return out


def _valid(rule: str, rng: random.Random) -> tuple[ProcessMesh, dict[str, DistTensorSpec | None], dict[str, Any]]:
    spec = rule_spec(rule)
    plan = _plan(rule)
    mesh = _draw_mesh(rng)
    rank = rng.randint(*plan.ranks)
    x_shape = tuple(rng.choice(SIZES) for _ in range(rank))
    attrs = _attrs(rule, rng, rank)
    shapes = input_shapes(rule, x_shape, attrs)
    x = _placed(rng, x_shape, mesh)
    inputs: dict[str, DistTensorSpec | None] = {"x": x}
    for name in spec.inputs[1:]:
        r = rng.random()
        if name in spec.optional and r < 0.15:
            inputs[name] = None
        elif r < 0.55:
            like_x = name in LIKE_X or name in plan.stats_like_x
            like = x.dims_mapping if like_x and rng.random() < 0.3 else None
            inputs[name] = _placed(rng, shapes[name], mesh, like)
        else:
            inputs[name] = _rep(shapes[name], mesh)
    return mesh, inputs, attrs


def _coshard(rule: str, rng: random.Random, mesh: ProcessMesh, inputs: dict[str, DistTensorSpec | None]) -> str:
    """Co-shard x and, each with probability 1/2, the other present tensors of rank >= 1; returns
    their names ("" on a 1-D mesh, where no axis can take two mesh dims)."""
    if mesh.ndim < 2:
        return ""
    names = ["x"] + [n for n in rule_spec(rule).inputs[1:] if (t := inputs[n]) is not None and t.ndim >= 1
                     and t.mesh is not None and rng.random() < 0.5]
    for name in names:
        t = inputs[name]
        assert t is not None and t.mesh is not None
        dm = rng.choice(coshard_mappings(t.ndim, mesh.ndim))
        inputs[name] = _spec(t.shape, dm, mesh, _draw_partial(rng, dm, mesh.ndim))
    return "+".join(names)


def _move_to_other_meshes(rule: str, rng: random.Random, mesh: ProcessMesh,
                          inputs: dict[str, DistTensorSpec | None]) -> str:
    present = [n for n in rule_spec(rule).inputs[1:] if inputs[n] is not None]
    moved = rng.sample(present, min(len(present), rng.choice((1, 1, 2))))
    for name in moved:
        spec = inputs[name]
        assert spec is not None
        if rng.random() < 0.5:
            other = mesh_of(rng.choice([s for s in RANDOM_MESH_SHAPES if s != mesh.shape]))
        else:
            other = _other_ids(mesh, rng)
        inputs[name] = _placed(rng, spec.shape, other) if rng.random() < 0.7 else _rep(spec.shape, other)
    return "+".join(moved)


def _mutate(rule: str, rng: random.Random, mesh: ProcessMesh, inputs: dict[str, DistTensorSpec | None],
            attrs: dict[str, Any]) -> str:
    """Make one thing invalid; returns which (one of INVALID_MUTATIONS; ``attr:<name>`` for an
    attribute)."""
    spec = rule_spec(rule)
    plan = _plan(rule)
    bad_attrs = [b for b in plan.bad_attrs if b.name in attrs]
    choices = [m for m in INVALID_MUTATIONS
               if (m != "attr" or bad_attrs)
               and (m != "other-rank" or len(spec.inputs) > 1)]  # an op of x alone has no other tensor
    what = rng.choices(choices, [INVALID_MUTATIONS[m] for m in choices])[0]
    present = [n for n in spec.inputs if inputs[n] is not None]
    x = inputs["x"]
    assert x is not None
    if what == "x-rank":
        bad = rng.choice(plan.bad_x_ranks)
        shape = tuple(rng.choice(SIZES) for _ in range(bad))
        inputs["x"] = _placed(rng, shape, mesh)
        for name in plan.rank_attrs:
            if name in attrs:
                attrs[name] = _own_draws(rule)[name](rng, bad)
    elif what == "other-rank":
        name = rng.choice([n for n in spec.inputs[1:] if n not in ("out", "out_grad")] or spec.inputs[1:])
        target = inputs[name]
        rank = target.ndim if target is not None else 1
        bad = rng.choice([r for r in (0, 1, 2, 3) if r != rank])
        inputs[name] = _placed(rng, tuple(rng.choice(SIZES) for _ in range(bad)), mesh)
    elif what == "mapping-length":
        name = rng.choice(present)
        t = inputs[name]
        assert t is not None and t.mesh is not None
        dm = t.dims_mapping
        dm = dm[:-1] if dm and rng.random() < 0.5 else dm + (-1,)
        inputs[name] = _spec(t.shape, dm, t.mesh)
    elif what == "mesh-dim-range":
        name = rng.choice([n for n in present if (tn := inputs[n]) is not None and tn.ndim > 0] or ["x"])
        t = inputs[name]
        assert t is not None and t.mesh is not None
        t_mesh = t.mesh
        if not t.shape:
            t = inputs[name] = _rep((rng.choice(SIZES),), t_mesh)
        mapping = list(t.dims_mapping)
        mapping[rng.randrange(len(mapping))] = rng.choice((t_mesh.ndim, t_mesh.ndim + 1, -2))
        inputs[name] = _spec(t.shape, tuple(mapping), t_mesh)
    elif what == "mesh-dim-twice":
        names = [n for n in present if (tn := inputs[n]) is not None and tn.ndim >= 2]
        if not names:  # only rank-1 tensors (a norm of a vector): make x a matrix, out/out_grad too
            names = ["x"]
            for name in ("x", "out", "out_grad"):
                t = inputs.get(name)
                if t is not None:
                    inputs[name] = _placed(rng, t.shape + (rng.choice(SIZES),), mesh)
        name = rng.choice(names)
        t = inputs[name]
        assert t is not None and t.mesh is not None
        a, b = rng.sample(range(t.ndim), 2)
        mapping = list(t.dims_mapping)
        mapping[a] = mapping[b] = rng.randrange(t.mesh.ndim)
        inputs[name] = _spec(t.shape, tuple(mapping), t.mesh)
    elif what == "partial-bad":
        name = rng.choice(present)
        t = inputs[name]
        assert t is not None and t.mesh is not None
        # a partial dim outside the mesh; not one that also shards an axis (module docstring)
        p = t.mesh.ndim + rng.randrange(2)
        inputs[name] = _spec(t.shape, t.dims_mapping, t.mesh, t.partial_dims | {p})
    elif what == "attr":
        bad_attr = rng.choices(bad_attrs, [b.weight for b in bad_attrs])[0]
        attrs[bad_attr.name] = bad_attr.draw(rng, x.ndim)
        attrs.update((name, value) for name, value in bad_attr.with_attrs if name in attrs)
        return f"attr:{bad_attr.name}"
    elif what == "x-no-mesh":
        inputs["x"] = _rep(x.shape, None)
    elif what == "required-none":
        inputs[rng.choice([n for n in spec.inputs if n not in spec.optional])] = None
    return what


#: Cases per block of a rule's stream (see the module docstring).
BLOCK = 1000
#: Cases a random run draws, compares and drops at a time (:func:`rounds`): its memory grows with
#: this, and each round starts its routes' workers again (the registry's: an import of Paddle each).
CASES_PER_ROUND = 100_000
#: The most cases a rule's stream may have (``--random N``): a run lists every (rule, block) unit
#: before its first case (:func:`shard_units`), so N is bounded to keep that list small; this many
#: cases per rule is already more than a week of comparing.
MAX_CASES_PER_RULE = 100_000_000


def block_sizes(n: int) -> list[int]:
    """The sizes of the blocks of a stream of ``n`` cases: BLOCK each, the last one the rest."""
    return [min(BLOCK, n - start) for start in range(0, n, BLOCK)]


def draw_block(rule: str, seed: int, block: int, size: int = BLOCK) -> list[Draw]:
    """The first ``size`` cases of block ``block`` of ``rule``'s stream (cases
    ``block * BLOCK + 1`` on), with the kind each was drawn as."""
    spec = rule_spec(rule)
    # str seeds are hashed stably; block 0 keeps the name the whole stream had (module docstring)
    rng = random.Random(f"paddle_spmd_port.random:{rule}:{seed}" + (f":{block}" if block else ""))
    kinds = [k for k, _ in KINDS]
    weights = [w for _, w in KINDS]
    draws = []
    for i in range(block * BLOCK + 1, block * BLOCK + size + 1):
        kind = rng.choices(kinds, weights)[0]
        mesh, inputs, attrs = _valid(rule, rng)
        note = ""
        if kind == "mixed-mesh":
            note = _move_to_other_meshes(rule, rng, mesh, inputs)
            if not note:
                kind = "valid"
        elif kind == "coshard":
            note = _coshard(rule, rng, mesh, inputs)
            if not note:
                kind = "valid"
        elif kind == "invalid":
            note = _mutate(rule, rng, mesh, inputs, attrs)
        case = Case(rule, mesh, tuple(inputs[name] for name in spec.inputs),
                    _attrs_tuple(tuple((name, attrs[name]) for name, _ in spec.attrs)), f"{rule}-random{seed}-{i}")
        draws.append(Draw(case, kind, note))
    return draws


def random_draws(rule: str, n: int, seed: int = 0) -> list[Draw]:
    """``n`` random cases of ``rule`` with the kind each was drawn as; see the module docstring."""
    return [d for block, size in enumerate(block_sizes(n)) for d in draw_block(rule, seed, block, size)]


def random_cases(rule: str, n: int, seed: int = 0) -> list[Case]:
    """``n`` random cases of ``rule`` outside the grid, the same for the same (rule, n, seed)."""
    return [d.case for d in random_draws(rule, n, seed)]


Unit = tuple[str, int, int]
"""(rule, block, size): one block of a rule's stream."""


def shard_units(rules: Sequence[str], n: int, shard: tuple[int, int] | None = None) -> list[Unit]:
    """The blocks a run of ``n`` cases per rule draws: every block of every rule, rules in the
    order given; with ``shard`` ``(K, M)``, the K-th of every M units of that list (units
    ``K-1``, ``K-1+M``, ...). Each block is in exactly one of the M shards, the same one for the
    same rules and n whatever the seed; dealt round-robin, so each shard gets every rule's
    blocks in turn (and about the same number of cases)."""
    units = [(rule, block, size) for rule in rules for block, size in enumerate(block_sizes(n))]
    if shard is None:
        return units
    k, m = shard
    return units[k - 1::m]


def rounds(units: Sequence[Unit], cases_per_round: int) -> list[list[Unit]]:
    """``units`` in groups of at most ``cases_per_round`` cases (at least one unit each): what a long
    run draws, compares and drops at a time, so that its memory stays bounded.

    Taken block by block across the rules (every rule's first block, in the order given, then every
    rule's second, ...), never rule after rule: each round then holds about the same share of every
    rule, so which rules share a round, and so how heavy it is (a batch_norm_grad case holds 9
    inputs, a p_norm case 1), does not depend on N: every round of a run but its last is also a
    round of any longer run of the same rules (N a multiple of BLOCK: the blocks whole). Each rule's
    blocks stay in order: a case's position among its rule's selected cases (the report's and a
    baseline's key) is the same either way. Bounded in cases, not cells: what a round holds grows
    with its cases far more than with their cells (docs/measurements/2026-12-07-flat-memory-all-rules.md)."""
    # (a stable sort: the rules' order within a block)
    return pack(sorted(units, key=lambda u: u[1]), cases_per_round)


def pack(units: Sequence[Unit], most: int, weight: Callable[[Unit], int] = lambda u: u[2]) -> list[list[Unit]]:
    """``units`` in their order, cut into groups whose ``weight`` (default: cases) sums to at most
    ``most``, a unit heavier than that alone in its group."""
    out: list[list[Unit]] = []
    held = 0
    for unit in units:
        if not out or held + weight(unit) > most:
            out.append([])
            held = 0
        out[-1].append(unit)
        held += weight(unit)
    return out


def draw_units(units: Sequence[Unit], seed: int) -> dict[str, list[Case]]:
    """The cases of ``units``, per rule in the order the units give them."""
    out: dict[str, list[Case]] = {}
    for rule, block, size in units:
        out.setdefault(rule, []).extend(d.case for d in draw_block(rule, seed, block, size))
    return out
