"""The grid kit: what every family's parity grid is built from (op-free), and :class:`GridPlan`,
the part a family's ``ops/<family>/grid.py`` declares as ``GRID`` (its fields say what each piece
is for: the grid, the co-shard set, validity, random mode, the fuzz's answer form).

The grid's axes (meshes, mappings, partial subsets), the corner sets' shared shape (mixed meshes,
the co-shard set) and the case numbering live here, so every family's grid reads the same way.
"Valid dims_mapping": one entry per axis, each -1 or a mesh dim, no mesh dim twice.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import random

from ...types import DimsMapping, DistTensorSpec, ProcessMesh, entry_of, memo_table, mesh_dims_of
from .. import RULES
from ..spec import FamilyPart, OpFamily, foreign_keys

MESH_SHAPES: tuple[tuple[int, ...], ...] = ((2,), (4,), (2, 2), (2, 3), (2, 2, 2))
X_SHAPES = {1: (8,), 2: (8, 6), 3: (8, 6, 4), 4: (8, 6, 4, 4), 5: (8, 6, 4, 4, 2)}
Placement = tuple[tuple[int, ...], frozenset[int]]
#: Inputs shaped like x in every family (the rest are statistics or parameters).
LIKE_X = frozenset({"x", "out", "out_grad", "y_grad"})


class ShapeNotDerivable(ValueError):
    """An input's shape cannot be derived from x and the attributes given (the message says why)."""


class GridCase(NamedTuple):
    """One case of a grid before it becomes a ``Case`` (ops/ sits below the case module)."""

    rule: str
    mesh: ProcessMesh
    inputs: tuple[DistTensorSpec | None, ...]
    attrs: tuple[tuple[str, object], ...]
    case_id: str


GridFn = Callable[[], Iterator[GridCase]]


@cache
def valid_mappings(rank: int, mesh_ndim: int) -> tuple[tuple[int, ...], ...]:
    """Every dims_mapping of ``rank`` entries on a mesh with ``mesh_ndim`` dims (no dim twice)."""
    out = []
    for dm in itertools.product(range(-1, mesh_ndim), repeat=rank):
        used = [m for m in dm if m >= 0]
        if len(used) == len(set(used)):
            out.append(dm)
    return tuple(out)


@cache
def placements(rank: int, mesh_ndim: int) -> tuple[Placement, ...]:
    """Every (dims_mapping, partial dims) pair: partial over any subset of the unused mesh dims."""
    out: list[Placement] = []
    for dm in valid_mappings(rank, mesh_ndim):
        free = [m for m in range(mesh_ndim) if m not in dm]
        for k in range(len(free) + 1):
            for subset in itertools.combinations(free, k):
                out.append((dm, frozenset(subset)))
    return tuple(out)


#: Meshes beyond the default numbering and names: Paddle's own tests use ids [[0,1,2],[3,4,5]]
#: with dim names x, y; the 3-D mesh runs its ids backwards so that ids and positions differ.
_MESH_IDS_AND_NAMES: dict[tuple[int, ...], tuple[tuple[int, ...] | None, tuple[str, ...]]] = {
    (2, 3): (None, ("x", "y")),
    (2, 2, 2): ((7, 6, 5, 4, 3, 2, 1, 0), ("dp", "mp", "pp")),
}


def mesh_of(shape: tuple[int, ...]) -> ProcessMesh:
    """The grid's mesh of this shape: one object per shape for every rule's grid (meshes are
    immutable values; the port's interned answers then find theirs by identity)."""
    mesh = _GRID_MESHES.get(shape)
    if mesh is None:
        ids, names = _MESH_IDS_AND_NAMES.get(shape, (None, None))
        mesh = _GRID_MESHES[shape] = ProcessMesh(shape, ids, names)
    return mesh


_GRID_MESHES: dict[tuple[int, ...], ProcessMesh] = {}


def placed_spec(shape: Sequence[int], placement: Placement, mesh: ProcessMesh) -> DistTensorSpec:
    """The spec of this shape and placement on ``mesh``. Specs are immutable values, so the grids'
    cases share one object per value (the default sweep's inputs are a few tens of thousands of
    values): drawn once, pickled once per worker slice, and their texts kept once (``Case.json_text``)."""
    shape = tuple(shape)
    key = (shape, placement[0], placement[1], id(mesh))
    found = _GRID_SPECS.get(key)
    if found is None or found.mesh is not mesh:  # (the spec holds its mesh: the id stays the mesh's)
        if len(_GRID_SPECS) > 200_000:
            _GRID_SPECS.clear()
        found = _GRID_SPECS[key] = DistTensorSpec(shape, placement[0], mesh, placement[1])
    return found


_GRID_SPECS: dict[tuple[Any, ...], DistTensorSpec] = memo_table({})


def rep(shape: Sequence[int], mesh: ProcessMesh) -> DistTensorSpec:
    """The replicated spec of this shape on ``mesh``."""
    return placed_spec(shape, ((-1,) * len(shape), frozenset()), mesh)


def one_at_a_time(names: Sequence[str], shapes: Mapping[str, tuple[int, ...]], mesh: ProcessMesh,
                  optional: Iterable[str]) -> list[dict[str, DistTensorSpec | None]]:
    """Variants of the secondary tensors: all replicated; then each tensor alone takes every
    (mapping, partial) it can have, or None if optional; then every optional one None together."""
    base: dict[str, DistTensorSpec | None] = {n: rep(shapes[n], mesh) for n in names}
    variants = [dict(base)]
    for name in names:
        for pl in placements(len(shapes[name]), mesh.ndim):
            if pl == ((-1,) * len(shapes[name]), frozenset()):
                continue
            variants.append({**base, name: placed_spec(shapes[name], pl, mesh)})
    opt = [n for n in names if n in set(optional)]
    for name in opt:
        variants.append({**base, name: None})
    if len(opt) > 1:
        variants.append({**base, **{n: None for n in opt}})
    return variants


#: Labels of the corner sets: hand-written cases every rule's grid holds beside its sweep, numbered
#: ``<rule>-<label>-<n>`` (``invalid``, ``invalid-mixed-ndim``, ``mixed-mesh``). Sampling always
#: keeps them.
CORNER_LABELS = ("invalid", "mixed-mesh")


class CaseNumbering:
    """Makes cases of one rule numbered ``<rule>-<n>`` (``<rule>-<label>-<n>`` for a corner set)."""

    def __init__(self, rule: str, label: str = "") -> None:
        self.rule, self.prefix, self.n = rule, f"{rule}-{label}" if label else rule, 0

    def __call__(self, mesh: ProcessMesh, inputs: Sequence[DistTensorSpec | None],
                 attrs: Sequence[tuple[str, object]] = ()) -> GridCase:
        self.n += 1
        return GridCase(self.rule, mesh, tuple(inputs), tuple(attrs), f"{self.prefix}-{self.n}")


# --------------------------------------------------------------------------- mixed meshes
#: x mappings of the mixed-mesh sets, per mesh ndim, for x [8,6,4,4] (axis 1 split, axis 1 split
#: with another axis, nothing split) and for x [8,6,4] (and a few more where a rule has only one
#: or two other tensors to move).
MIXED_X_RANK4: dict[int, tuple[tuple[int, ...], ...]] = {
    3: ((2, 1, -1, 0), (-1, -1, -1, -1)), 2: ((0, 1, -1, -1), (-1, 0, -1, 1), (-1, -1, -1, -1)),
    1: ((-1, 0, -1, -1), (0, -1, -1, -1))}
MIXED_X_RANK3: dict[int, tuple[tuple[int, ...], ...]] = {
    2: ((0, 1, -1), (1, -1, 0), (-1, -1, -1)), 1: ((0, -1, -1), (-1, -1, -1))}
MIXED_X_RANK3_MORE: dict[int, tuple[tuple[int, ...], ...]] = {
    2: MIXED_X_RANK3[2] + ((1, 0, -1), (-1, 0, -1)), 1: MIXED_X_RANK3[1] + ((-1, 0, -1),)}


def other_meshes(base: ProcessMesh) -> tuple[ProcessMesh, ...]:
    """The meshes a mixed-mesh case moves one input to, for x on ``base``: the same shape with
    other process ids, another shape of as many dims, fewer dims (if any) and more dims."""
    size = math.prod(base.shape)
    same_shape = ProcessMesh(base.shape, tuple(range(size, 2 * size)), base.dim_names)
    if base.ndim == 1:
        return same_shape, ProcessMesh((4,), (3, 2, 1, 0)), mesh_of((2, 2, 2))
    if base.ndim == 3:
        return same_shape, ProcessMesh((1, 2, 4), tuple(range(size))[::-1]), mesh_of((2, 3)), ProcessMesh((2,))
    return (same_shape, ProcessMesh(base.shape[::-1], tuple(range(size))[::-1], ("a", "b")),
            ProcessMesh((2,), (0, 1)), mesh_of((2, 2, 2)))


def mixed_meshes(rule: str, variants: Sequence[tuple[Mapping[str, tuple[int, ...]], tuple[Any, ...]]],
                 x_maps: Mapping[int, Sequence[tuple[int, ...]]],
                 bases: Sequence[tuple[int, ...]] = ((2, 3), (2,))) -> Iterator[GridCase]:
    """The mixed-mesh corner sets: x on each of ``bases``, one other input at a time on each of
    :func:`other_meshes`, replicated or with axis 0 split along that mesh's last dim; the rest
    replicated on x's mesh; ``variants`` gives the shapes and attributes. On a mesh of as many
    dims as x's (same shape with other process ids, or another shape) the cases are
    ``<rule>-mixed-mesh-<n>``: Paddle answers them all (each attr keeps its own tensor's mesh, or
    takes x's), or raises a sharding conflict, and the port must match. On a mesh of fewer or more
    dims they are ``<rule>-invalid-mixed-ndim-<n>``: Paddle answers some and crashes on, or
    answers mesh dims an attr's mesh lacks for, others, which the port rejects (InvalidSpecError
    naming the input)."""
    same_ndim, other_ndim = CaseNumbering(rule, "mixed-mesh"), CaseNumbering(rule, "invalid-mixed-ndim")
    names = RULES[rule].inputs
    for (shapes, attrs), base in itertools.product(variants, [mesh_of(b) for b in bases]):
        for x_dm in x_maps[base.ndim]:
            x = DistTensorSpec(shapes["x"], x_dm, base)
            for name in names[1:]:
                for other in other_meshes(base):
                    for split in (False, True):
                        dm = [-1] * len(shapes[name])
                        if split:
                            dm[0] = other.ndim - 1
                        tensors = {n: rep(shapes[n], base) for n in names[1:]}
                        tensors[name] = DistTensorSpec(shapes[name], tuple(dm), other)
                        make = same_ndim if other.ndim == base.ndim else other_ndim
                        yield make(base, [x] + [tensors[n] for n in names[1:]], attrs)


# --------------------------------------------------------------------------- co-sharded inputs
#: Meshes of the co-shard set: 2-D and 3-D, even and uneven (the mesh dim that survives Paddle's
#: fallback depends on the sizes: docs/coshard-3.3.1.md).
COSHARD_MESH_SHAPES: tuple[tuple[int, ...], ...] = ((2, 2), (2, 3), (3, 2), (2, 2, 2), (2, 3, 2))


@cache
def coshard_mappings(rank: int, mesh_ndim: int) -> tuple[DimsMapping, ...]:
    """Every dims_mapping of ``rank`` entries that splits some axis along two or more mesh dims:
    each mesh dim on at most one axis, the dims of an axis in every order. On a 2-D mesh, rank 2::

        ((0,1),-1)  ((1,0),-1)  (-1,(0,1))  (-1,(1,0))
    """
    out: list[DimsMapping] = []
    for owner in itertools.product(range(-1, rank), repeat=mesh_ndim):  # owner[m]: the axis mesh dim m splits
        groups = [[m for m in range(mesh_ndim) if owner[m] == axis] for axis in range(rank)]
        if max(map(len, groups), default=0) < 2:
            continue
        for orders in itertools.product(*(itertools.permutations(g) for g in groups)):
            out.append(tuple(entry_of(o) for o in orders))
    return tuple(out)


def coshard_mappings_with_partial(rank: int, mesh_ndim: int) -> Iterator[tuple[DimsMapping, frozenset[int]]]:
    """:func:`coshard_mappings`, each with partial over every subset of the mesh dims it leaves free."""
    for dm in coshard_mappings(rank, mesh_ndim):
        used = {m for e in dm for m in mesh_dims_of(e)}
        free = [m for m in range(mesh_ndim) if m not in used]
        for k in range(len(free) + 1):
            for subset in itertools.combinations(free, k):
                yield dm, frozenset(subset)


ShapesFn = Callable[[str, tuple[int, ...], Mapping[str, object]], dict[str, tuple[int, ...]]]


@dataclass(frozen=True)
class CoshardPlan:
    """A family's co-shard set: the x ranks (the ranks its rules answer; more axes add no new way
    to fall back, the fallback being per axis), the attribute variants per (rule, rank), and the
    x rank and variant (index) of its invalid co-shard cases."""

    ranks: range
    attr_variants: Callable[[str, int], list[dict[str, object]]]
    invalid_rank: int = 4
    invalid_variant: int = 0


def coshard_cases(rule: str, plan: CoshardPlan, input_shapes: ShapesFn) -> Iterator[GridCase]:
    """The co-shard set (ids ``<rule>-coshard-<n>``), on every mesh of :data:`COSHARD_MESH_SHAPES`
    and the plan's x ranks, for every attribute variant:

    * x through every co-shard mapping, with partial over every subset of the mesh dims left free;
      the other inputs replicated (out_grad: replicated, and again with x's mapping);
    * every other input of rank >= 1, one at a time, through every co-shard mapping of its rank,
      x replicated;

    then ``<rule>-coshard-invalid-<n>`` (a corner set, kept by sampling): on 2x3, a partial dim
    that is also a co-shard member, a member listed twice, a member outside the mesh, ``-1``
    inside a co-shard, and a member that also splits another axis.
    """
    make = CaseNumbering(rule, "coshard")
    names = RULES[rule].inputs
    for mesh_shape in COSHARD_MESH_SHAPES:
        mesh = mesh_of(mesh_shape)
        for rank in plan.ranks:
            x_shape = X_SHAPES[rank]
            for attrs in plan.attr_variants(rule, rank):
                shapes = input_shapes(rule, x_shape, attrs)
                reps = {n: rep(shapes[n], mesh) for n in names}
                attr_items = tuple(attrs.items())
                for dm, partial in coshard_mappings_with_partial(rank, mesh.ndim):
                    x = DistTensorSpec(x_shape, dm, mesh, partial)
                    yield make(mesh, [x] + [reps[n] for n in names[1:]], attr_items)
                    if "out_grad" in names and not partial:
                        with_og = {**reps, "x": x, "out_grad": DistTensorSpec(x_shape, dm, mesh)}
                        yield make(mesh, [with_og[n] for n in names], attr_items)
                for name in names[1:]:
                    for dm in coshard_mappings(len(shapes[name]), mesh.ndim):
                        one = {**reps, name: DistTensorSpec(shapes[name], dm, mesh)}
                        yield make(mesh, [one[n] for n in names], attr_items)
    bad = CaseNumbering(rule, "coshard-invalid")
    mesh = mesh_of((2, 3))
    rank = plan.invalid_rank
    x_shape = X_SHAPES[rank]
    attrs = plan.attr_variants(rule, rank)[plan.invalid_variant]
    shapes = input_shapes(rule, x_shape, attrs)
    reps = {n: rep(shapes[n], mesh) for n in names}
    tail = (-1,) * (rank - 1)
    invalid: tuple[tuple[DimsMapping, tuple[int, ...]], ...] = (
        (((0, 1),) + tail, (1,)), (((0, 1),) + tail, (0,)), (((0, 0),) + tail, ()), (((0, 2),) + tail, ()),
        (((-1, 0),) + tail, ()), (((0, 1), 1) + tail[1:], ()))
    for dm, partial_dims in invalid:
        x = DistTensorSpec(x_shape, dm, mesh, frozenset(partial_dims))
        yield bad(mesh, [x] + [reps[n] for n in names[1:]], tuple(attrs.items()))


def no_attr_variants(rule: str, rank: int) -> list[dict[str, object]]:
    """One attribute variant, the defaults (a rule that reads no attribute)."""
    return [{}]


# --------------------------------------------------------------------------- statistics norms
#: The one attribute of the statistics norms' grids.
EPS: tuple[tuple[str, object], ...] = (("epsilon", 1e-5),)
#: Input names of the saved statistics the statistics norms take from x's mapping.
STAT_NAMES = ("saved_mean", "saved_variance", "mean", "invvar")


@dataclass(frozen=True)
class StatNormPlan:
    """A normalisation with saved statistics, over the trailing axes (statistics ``x.shape[:-1]``,
    scale/bias the last axis' size) or, with ``channel_stats``, per sample and channel
    (statistics ``[N, C]``, scale/bias ``[C]``): the x ranks of its own grid, and the x ranks of
    its invalid set (ranks Paddle rejects, crashes on or answers garbage for)."""

    ranks: tuple[int, ...]
    invalid_x_ranks: tuple[int, ...]
    channel_stats: bool = False

    @property
    def corner_rank(self) -> int:
        """x's rank in the corner sets."""
        return 4 if self.channel_stats else 3


def stat_norm_shapes(rule: str, x_shape: tuple[int, ...], channel_stats: bool) -> dict[str, tuple[int, ...]]:
    """Input shapes of a statistics norm for x of ``x_shape`` (see :class:`StatNormPlan`); out /
    out_grad / y_grad like x."""
    param = (x_shape[1],) if channel_stats and len(x_shape) > 1 else x_shape[-1:] or (4,)
    stat = x_shape[:2] if channel_stats else x_shape[:-1]
    shapes = {}
    for name in RULES[rule].inputs:
        shapes[name] = x_shape if name in LIKE_X else param if name in ("scale", "bias") else stat
    return shapes


def norm_x_probes(rank: int, mesh: ProcessMesh, channel_stats: bool) -> list[Placement]:
    """x placements the other inputs are varied against: replicated; axis 0 split along mesh dim 0;
    the axis before the normalised one (``channel_stats``: C) split along the last mesh dim."""
    probes: list[Placement] = [((-1,) * rank, frozenset())]
    for axis, m in ((0, 0), (1 if channel_stats else rank - 2, mesh.ndim - 1)):
        if 0 <= axis < rank:
            dm = [-1] * rank
            dm[axis] = m
            if tuple(dm) not in [p[0] for p in probes]:
                probes.append((tuple(dm), frozenset()))
    return probes


def stat_norm_grid(rule: str, plan: StatNormPlan) -> Iterator[GridCase]:
    """The own grid of a statistics norm's rule, on every mesh and x rank of the plan: x through
    every placement, paired with out / out_grad / y_grad cycled through every placement (each
    placement once as x and once as the other: ``(7k+3) mod n``) and the statistics taken from x
    (a reverse rule: out through every mapping with invvar cycled, x cycled: the rule ignores x);
    then every other input one at a time through every placement (and None where optional)
    against :func:`norm_x_probes`, at the plan's first rank of 3 or more."""
    make = CaseNumbering(rule)
    rspec = RULES[rule]
    names = rspec.inputs
    like_x = [n for n in names[1:] if n in LIKE_X]
    for mesh_shape in MESH_SHAPES:
        mesh = mesh_of(mesh_shape)
        for rank in plan.ranks:
            x_shape = X_SHAPES[rank]
            shapes = stat_norm_shapes(rule, x_shape, plan.channel_stats)
            all_pl = placements(rank, mesh.ndim)
            reps = {n: rep(shapes[n], mesh) for n in names}
            for k, pl in enumerate(all_pl):
                other = all_pl[(k * 7 + 3) % len(all_pl)]
                pairs = ((pl, other), (other, pl)) if like_x else ((pl, other),)
                for x_pl, o_pl in pairs:
                    tensors: dict[str, DistTensorSpec | None] = {**reps, "x": placed_spec(x_shape, x_pl, mesh)}
                    for n in like_x:
                        tensors[n] = placed_spec(x_shape, o_pl, mesh)
                    if rspec.direction == "reverse":  # the statistics from out: x is not read
                        tensors["invvar"] = placed_spec(shapes["invvar"], (o_pl[0][:-1], frozenset()), mesh)
                    else:
                        for n in names:
                            if n in STAT_NAMES:
                                tensors[n] = placed_spec(shapes[n], (x_pl[0][:len(shapes[n])], frozenset()), mesh)
                    yield make(mesh, [tensors[n] for n in names], EPS)
            if rank != next(r for r in plan.ranks if r >= 3):
                continue
            side = [n for n in names[1:] if n not in LIKE_X]
            optional = [n for n in side if n in rspec.optional]
            for xp in norm_x_probes(rank, mesh, plan.channel_stats):
                base = {n: placed_spec(x_shape, xp, mesh) for n in like_x}
                for variant in one_at_a_time(side, shapes, mesh, optional)[1:]:
                    tensors = {"x": placed_spec(x_shape, xp, mesh), **base, **variant}
                    yield make(mesh, [tensors[n] for n in names], EPS)
                if rspec.direction == "reverse":  # invvar against each out mapping of the probe's kind
                    for inv in placements(rank - 1, mesh.ndim):
                        tensors = {**reps, "out": placed_spec(x_shape, xp, mesh),
                                   "invvar": placed_spec(shapes["invvar"], inv, mesh)}
                        yield make(mesh, [tensors[n] for n in names], EPS)


def stat_norm_mixed_meshes(rule: str, plan: StatNormPlan) -> Iterator[GridCase]:
    """The mixed-mesh sets (see :func:`mixed_meshes`): x [8,6,4,4] (``channel_stats``) or [8,6,4]."""
    rank = plan.corner_rank
    x_maps = MIXED_X_RANK4 if rank == 4 else MIXED_X_RANK3_MORE
    yield from mixed_meshes(rule, [(stat_norm_shapes(rule, X_SHAPES[rank], plan.channel_stats), EPS)], x_maps)


def stat_norm_invalid(rule: str, plan: StatNormPlan) -> Iterator[GridCase]:
    """Per rule, on 2x3: the plan's invalid x ranks, statistics / scale of the wrong rank, x
    mappings Paddle does not validate (a mesh dim twice, out of range, shorter than the rank), x
    without a mesh, and, where scale is optional, a None scale while x is split."""
    bad = CaseNumbering(rule, "invalid")
    rspec = RULES[rule]
    names = rspec.inputs
    mesh = mesh_of((2, 3))
    rank = plan.corner_rank
    x_shape = X_SHAPES[rank]
    shapes = stat_norm_shapes(rule, x_shape, plan.channel_stats)
    base: dict[str, DistTensorSpec | None] = {n: rep(shapes[n], mesh) for n in names}
    variants: list[dict[str, DistTensorSpec | None]] = []
    for r in plan.invalid_x_ranks:
        other_shapes = stat_norm_shapes(rule, X_SHAPES.get(r, (8, 6, 4, 4, 2, 2)) if r else (), plan.channel_stats)
        variants.append({n: rep(other_shapes[n], mesh) for n in names})
    for n in names[1:]:
        if n in LIKE_X:
            variants.append({n: rep(x_shape[:-1], mesh)})  # rank != x's
        else:
            variants.append({n: rep(shapes[n] + (2,), mesh)})  # one axis too many
    split = (0,) + (-1,) * (rank - 1)
    variants += [{"x": DistTensorSpec(x_shape, (0, 0) + (-1,) * (rank - 2), mesh)},
                 {"x": DistTensorSpec(x_shape, (-1, 2) + (-1,) * (rank - 2), mesh)},
                 {"x": DistTensorSpec(x_shape, split[:-1], mesh)},
                 {"x": DistTensorSpec(x_shape, (), None)}]
    if "scale" in rspec.optional:
        variants.append({"x": DistTensorSpec(x_shape, split, mesh), "scale": None})
    for variant in variants:
        tensors = {**base, **variant}
        yield bad(mesh, [tensors[n] for n in names], EPS)


def stat_norm_rule_grid(rule: str, plan: StatNormPlan) -> GridFn:
    """A statistics norm rule's grid: :func:`stat_norm_grid`, :func:`stat_norm_mixed_meshes`,
    :func:`stat_norm_invalid`."""
    def grid() -> Iterator[GridCase]:
        yield from stat_norm_grid(rule, plan)
        yield from stat_norm_mixed_meshes(rule, plan)
        yield from stat_norm_invalid(rule, plan)
    grid.__name__ = f"_grid_{rule}"
    return grid


def stat_norm_problem(op: str, plan_ranks: range, rank: int, named: Mapping[str, DistTensorSpec | None],
                      channel_stats: bool) -> str | None:
    """Validity of a statistics norm's input: x's rank in ``plan_ranks``; scale/bias 1-D; the
    saved statistics 2-D (``channel_stats``) or of x's rank minus one; the rest like x."""
    if rank not in plan_ranks:
        return f"x rank {rank} outside {plan_ranks.start}..{plan_ranks.stop - 1} for {op}"
    stat_rank = 2 if channel_stats else rank - 1
    for name, t in named.items():
        if t is None or name == "x":
            continue
        want = {"scale": 1, "bias": 1, "saved_mean": stat_rank, "saved_variance": stat_rank, "mean": stat_rank,
                "invvar": stat_rank}.get(name, rank)
        if len(t.shape) != want:
            return f"{name} rank {len(t.shape)} != {want}"
    return None


# --------------------------------------------------------------------------- random mode
#: A family's draw of one attribute: (the case's random stream, x's rank) -> the value.
AttrDraw = Callable[["random.Random", int], Any]


class BadAttr(NamedTuple):
    """An attribute value outside what the op takes, for random mode's ``attr`` mutation: the
    attribute, a draw(rng, x rank) of such a value, its weight among the family's ``bad_attrs``
    (the mutation picks one of those the rule takes, by weight), and the values other attributes
    take with it (where another attribute could make the value count for nothing)."""

    name: str
    draw: AttrDraw
    weight: int = 1
    with_attrs: tuple[tuple[str, Any], ...] = ()


def bad_epsilon(rng: random.Random, rank: int) -> float:
    """A negative epsilon: the variance plus it may go below zero, which no norm means. No rule
    reads epsilon, so Paddle's rules answer it as any other (and so must the port)."""
    return rng.choice((-1e-5, -0.5, -1.0))


def bad_momentum(rng: random.Random, rank: int) -> float:
    """A momentum outside 0..1 (the running statistics would not be a weighted mean). No rule reads it."""
    return rng.choice((-0.5, 1.5, 2.0))


#: Strings that are no channel layout: empty, too short for the second character Paddle's rules
#: read, a layout's letters reordered or in lower case.
BAD_DATA_FORMATS = ("", "N", "CN", "NWC", "NCWH", "nchw")


def bad_data_format(rng: random.Random, rank: int) -> str:
    """One of :data:`BAD_DATA_FORMATS`."""
    return rng.choice(BAD_DATA_FORMATS)


def choice_draw(values: Sequence[Any]) -> AttrDraw:
    """The draw of one of ``values``, uniform (whatever x's rank)."""
    values = tuple(values)

    def draw(rng: random.Random, rank: int) -> Any:
        return rng.choice(values)
    return draw


@dataclass(frozen=True)
class RandomPlan:
    """What ``parity --random`` draws for a family: x ranks of a valid draw (uniform, inclusive),
    the x ranks an ``x-rank`` mutation picks from, the data_format choices (rules that take one),
    and which statistics are drawn like x (copying x's mapping 30% of the time)."""

    ranks: tuple[int, int]
    bad_x_ranks: tuple[int, ...]
    data_formats: tuple[str, ...] = ()
    stats_like_x: frozenset[str] = frozenset()
    attr_draws: tuple[tuple[str, AttrDraw], ...] = ()
    """(attribute, draw(rng, x rank)) for attributes the family draws itself; the others take the
    generic draws of parity/random_cases.py (a default the generic draw does not know stays fixed)."""
    rank_attrs: tuple[str, ...] = ()
    """Attributes whose valid draw depends on x's rank: an ``x-rank`` mutation draws them again
    (through ``attr_draws``) for the rank it gives x, so that x's rank is the one thing wrong."""
    bad_attrs: tuple[BadAttr, ...] = ()
    """The values outside what the op takes that an ``attr`` mutation draws (one attribute a case);
    every family whose rules take an attribute declares some."""

    def __post_init__(self) -> None:
        drawn = {name for name, _ in self.attr_draws}
        if missing := [name for name in self.rank_attrs if name not in drawn]:
            raise ValueError(f"RandomPlan: rank_attrs {missing} have no attr_draws entry to draw them again")
        if [b for b in self.bad_attrs if b.weight < 1]:
            raise ValueError("RandomPlan: a bad_attrs weight is below 1")


# --------------------------------------------------------------------------- answer form
#: How the rank of the tensor a returned output attr describes follows from the call: an input's
#: name -- that input's rank as passed (the output is that tensor again, or its gradient); an int
#: -- that rank; a function of (x's rank, the call's attributes) -- a rank the attributes decide
#: (statistics over the leading axes, a reduction).
RankOf = str | int | Callable[[int, Mapping[str, object]], int]
#: A grad's usual outputs: each ``<input>_grad`` has its input's rank.
GRAD_RANKS: dict[str, RankOf] = {"x_grad": "x", "scale_grad": "scale", "bias_grad": "bias"}



def leading_rank(x_rank: int, attrs: Mapping[str, object]) -> int:
    """Statistics over every axis but the last (``x.shape[:-1]``)."""
    return x_rank - 1


#: The ways tools/fuzz.py finds a returned attr malformed (the first one found is the answer's).
MALFORMED_DEFECTS = ("not-a-result", "attr-count", "not-an-attr", "non-int", "mesh-dim-without-mesh",
                     "mesh-dim-out-of-range", "mesh-dim-twice", "wrong-length")


@dataclass(frozen=True)
class KnownMalformed:
    """An answer a profile's rule gives malformed on purpose (it reproduces a proposal's bug): the
    defect (a :data:`MALFORMED_DEFECTS` name) on one of ``when_none``'s outputs, while the input
    that output names there is None. Counted under ``label``, never a property violation."""

    rule: str
    defect: str
    when_none: Mapping[str, str]
    label: str

    def __post_init__(self) -> None:
        if self.defect not in MALFORMED_DEFECTS:
            raise ValueError(f"{self.rule}: unknown defect {self.defect!r}; one of {', '.join(MALFORMED_DEFECTS)}")


#: (rule, the inputs by name, attrs with defaults filled, x's rank) -> why the input is invalid for
#: the op, or None (paddle_spmd_port/validity.py has the checks common to every op).
ProblemFn = Callable[[str, Mapping[str, DistTensorSpec | None], Mapping[str, object], int], str | None]


@dataclass(frozen=True)
class GridPlan(FamilyPart):
    """A family's parity grid and what is drawn around it (``GRID`` in ``ops/<family>/grid.py``)."""

    MODULE = "grid"
    ATTRIBUTE = "GRID"

    grids: Mapping[str, GridFn]
    """rule key -> a function yielding that rule's own grid (:class:`GridCase` drafts, in a fixed
    order); it covers exactly the family's keys."""
    input_shapes: ShapesFn
    """(rule, x shape, attrs) -> every input's shape for that x (what a real call passes): the
    co-shard set, random mode and ``infer`` size tensors with it."""
    coshard: CoshardPlan
    """The ranks and attribute variants of the co-shard set."""
    input_problem: ProblemFn
    """Why an input is invalid for the op (written from the op's contract, not from the rules)."""
    random: RandomPlan
    """x ranks and attribute choices of ``parity --random`` (tools/fuzz.py draws from it too)."""
    answer_ranks: Mapping[str, Mapping[str, RankOf]]
    """rule key -> returned output -> :data:`RankOf`: tools/fuzz.py checks every answer's form by it."""
    derived_shapes: ShapesFn | None = None
    """``input_shapes`` for ``infer``'s flags, where a user's attribute may be outside what the grid
    draws; raises :class:`ShapeNotDerivable` for a shape that cannot be worked out. None: input_shapes."""
    free_size: frozenset[str] = frozenset()
    """Inputs whose 1-D size the op leaves free (no rule reads it): the fuzz draws any size for them."""
    profile_answer_ranks: Mapping[str, Mapping[str, Mapping[str, RankOf]]] = \
        dataclasses.field(default_factory=dict)
    """profile -> rule key -> output -> rank, where that profile's rules answer otherwise."""
    known_malformed: Mapping[str, tuple[KnownMalformed, ...]] = dataclasses.field(default_factory=dict)
    """profile -> the malformed answers its rules give on purpose (the fuzz counts them apart)."""

    def problems(self, family: OpFamily) -> list[str]:
        out = []
        if set(self.grids) != set(family.keys):
            out.append(f"grids covers {sorted(self.grids)}, the family declares {sorted(family.keys)}")
        if set(self.answer_ranks) - set(family.keys):
            out.append(f"answer_ranks names {foreign_keys(family, self.answer_ranks)}, not the family's keys")
        for profile, ranks in self.profile_answer_ranks.items():
            if foreign := foreign_keys(family, ranks):
                out.append(f"profile_answer_ranks[{profile!r}] names {foreign}, not the family's keys")
        for profile, known in self.known_malformed.items():
            if foreign := foreign_keys(family, (k.rule for k in known)):
                out.append(f"known_malformed[{profile!r}] names {foreign}, not the family's keys")
        return out

    def shapes_for_flags(self) -> ShapesFn:
        """What ``infer``'s flags size the tensors with: ``derived_shapes`` where given."""
        return self.derived_shapes or self.input_shapes


def _like_x(rule: str, x_shape: tuple[int, ...], attrs: Mapping[str, object]) -> dict[str, tuple[int, ...]]:
    return dict.fromkeys(RULES[rule].inputs, x_shape)


def _no_problem(rule: str, named: Mapping[str, DistTensorSpec | None], attrs: Mapping[str, object],
                rank: int) -> str | None:
    return None


#: The x ranks of the default grid.
DEFAULT_RANKS = (1, 2, 3)


def default_grid(rule: str) -> GridFn:
    """The default grid of a rule: on every mesh of :data:`MESH_SHAPES`, x of every rank of
    :data:`DEFAULT_RANKS` through every placement, every other input replicated and shaped like x,
    the attributes at their declared defaults."""
    def grid() -> Iterator[GridCase]:
        spec = RULES[rule]
        make = CaseNumbering(rule)
        for mesh_shape in MESH_SHAPES:
            mesh = mesh_of(mesh_shape)
            for rank in DEFAULT_RANKS:
                x_shape = X_SHAPES[rank]
                others = [None if n in spec.optional else rep(x_shape, mesh) for n in spec.inputs[1:]]
                for placement in placements(rank, mesh.ndim):
                    yield make(mesh, [placed_spec(x_shape, placement, mesh), *others], spec.attrs)
    grid.__name__ = f"default_grid_{rule}"
    return grid


def default_plan(family: OpFamily) -> GridPlan:
    """The grid plan of a family without ``ops/<family>/grid.py``: :func:`default_grid` for each
    key (every input shaped like x), the co-shard set of x ranks 2-3, no validity rule of its own,
    random draws of x ranks 1-3, and no answer ranks (tools/fuzz.py refuses the family's rules,
    naming them, until the family declares its own plan)."""
    return GridPlan(grids={key: default_grid(key) for key in family.keys}, input_shapes=_like_x,
                    coshard=CoshardPlan(ranks=range(2, 4), attr_variants=no_attr_variants, invalid_rank=3),
                    input_problem=_no_problem, random=RandomPlan(ranks=(1, 3), bad_x_ranks=(0, 4)),
                    answer_ranks={})


__all__ = ["AttrDraw", "BAD_DATA_FORMATS", "BadAttr", "CORNER_LABELS", "COSHARD_MESH_SHAPES", "CaseNumbering",
           "CoshardPlan", "DEFAULT_RANKS", "EPS", "GRAD_RANKS", "GridCase", "GridFn", "GridPlan", "KnownMalformed",
           "LIKE_X", "MALFORMED_DEFECTS", "MESH_SHAPES", "MIXED_X_RANK3", "MIXED_X_RANK3_MORE", "MIXED_X_RANK4",
           "Placement", "ProblemFn", "RandomPlan", "RankOf", "STAT_NAMES", "ShapesFn", "StatNormPlan", "X_SHAPES",
           "bad_data_format", "bad_epsilon", "bad_momentum", "choice_draw", "coshard_cases", "coshard_mappings",
           "coshard_mappings_with_partial", "default_grid", "default_plan", "leading_rank", "mesh_of",
           "mixed_meshes", "no_attr_variants", "norm_x_probes", "one_at_a_time", "other_meshes", "placed_spec",
           "placements", "rep", "stat_norm_grid", "stat_norm_invalid", "stat_norm_mixed_meshes", "stat_norm_problem",
           "stat_norm_rule_grid", "stat_norm_shapes", "valid_mappings"]
