"""p_norm's parity grid.

::

    meshes, ranks    every mesh of the kit's grid; x rank 0-4; per rank every axis -R..R-1 with
                     keepdims off and on, and asvector with keepdims off and on; porder cycled
                     through 2, 1, inf, 0, -inf, 3 (the rules never read it: one per case is enough)
    p_norm           every x placement against every attribute variant (rank 4 on a 3-D mesh:
                     every third pair)
    p_norm_reverse   every out placement against every attribute variant, x's placement cycled
                     (the rule never reads x's mapping)
    p_norm_grad      every out_grad placement against every attribute variant; x's and out's
                     placements cycled (the rule reads out_grad alone)
    corner sets      invalid: an axis outside -R..R-1 (Paddle reduces nothing, or, in the grad,
                     reads past a mapping), out/out_grad of the wrong rank, mappings of the wrong
                     length, mesh dims twice / out of range, out_grad without a mesh; mixed meshes
                     with x [8,6,4] reduced along axis 1, and along axis 2 with keepdims
    co-shard set     x rank 1-3; axis 0, axis -1 with keepdims, asvector
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from ...types import DistTensorSpec, ProcessMesh
from ..kit.grid import (
    MESH_SHAPES,
    MIXED_X_RANK3,
    X_SHAPES,
    BadAttr,
    CaseNumbering,
    CoshardPlan,
    GridCase,
    GridFn,
    GridPlan,
    Placement,
    RandomPlan,
    RankOf,
    bad_epsilon,
    mesh_of,
    mixed_meshes,
    placed_spec,
    placements,
    rep,
)
from .checks import out_rank, reduced_axes

if TYPE_CHECKING:
    import random

#: The porders the grid cycles through: the summable ones (0, 1), the max/min ones, and two others.
PORDERS = (2.0, 1.0, math.inf, 0.0, -math.inf, 3.0)
SHAPES = {0: (), **X_SHAPES}
Attrs = tuple[tuple[str, object], ...]


def attrs_of(porder: float, axis: int, keepdims: bool, asvector: bool, epsilon: float = 1e-12) -> Attrs:
    return (("porder", porder), ("axis", axis), ("epsilon", epsilon), ("keepdims", keepdims), ("asvector", asvector))


def out_shape(x_shape: tuple[int, ...], axis: int, keepdims: bool, asvector: bool) -> tuple[int, ...]:
    """out's shape, as the op makes it (an out-of-range axis: as if the last axis were reduced, the
    rank a user would expect)."""
    rank = len(x_shape)
    if not asvector and rank and not -rank <= axis < rank:
        axis = -1
    reduced = set(reduced_axes(rank, axis, asvector))
    return tuple(1 if a in reduced else x_shape[a] for a in range(rank) if keepdims or a not in reduced)


def _variants(rank: int) -> list[tuple[int, bool, bool]]:
    """(axis, keepdims, asvector): every axis -R..R-1 with keepdims off and on, then asvector."""
    axes = list(range(-rank, rank)) if rank else [0, -1]
    return [(a, k, False) for a in axes for k in (False, True)] + [(-1, k, True) for k in (False, True)]


def _slices() -> Iterator[tuple[ProcessMesh, int, tuple[int, ...], int, Attrs]]:
    """(mesh, rank, x shape, variant number, attrs) over every mesh, rank 0..4 and attribute variant."""
    n = 0
    for mesh_shape in MESH_SHAPES:
        mesh = mesh_of(mesh_shape)
        for rank in range(0, 5):
            for v, (axis, keepdims, asvector) in enumerate(_variants(rank)):
                n += 1
                yield mesh, rank, SHAPES[rank], v, attrs_of(PORDERS[n % len(PORDERS)], axis, keepdims, asvector)


def _named(attrs: Attrs) -> dict[str, object]:
    return dict(attrs)


def _out_of(x_shape: tuple[int, ...], attrs: Attrs) -> tuple[int, ...]:
    a = _named(attrs)
    return out_shape(x_shape, int(a["axis"]), bool(a["keepdims"]), bool(a["asvector"]))  # type: ignore[call-overload]


def _mixed_mesh_set(rule: str) -> Iterator[GridCase]:
    x = X_SHAPES[3]
    variants = []
    for axis, keepdims in ((1, False), (2, True)):
        out = out_shape(x, axis, keepdims, False)
        variants.append(({"x": x, "out": out, "out_grad": out}, attrs_of(2.0, axis, keepdims, False)))
    yield from mixed_meshes(rule, variants, MIXED_X_RANK3)


def _grid_p_norm() -> Iterator[GridCase]:
    make = CaseNumbering("p_norm")
    k = 0
    for mesh, rank, x_shape, _v, attrs in _slices():
        for pl in placements(rank, mesh.ndim):
            k += 1
            if rank == 4 and mesh.ndim == 3 and k % 3:
                continue
            yield make(mesh, [placed_spec(x_shape, pl, mesh)], attrs)
    yield from _mixed_mesh_set("p_norm")
    bad = CaseNumbering("p_norm", "invalid")
    mesh = mesh_of((2, 3))
    for rank in range(1, 5):
        x = placed_spec(SHAPES[rank], ((0,) + (-1,) * (rank - 1), frozenset()), mesh)
        for axis, keepdims in itertools.product((rank, -rank - 1, rank + 3), (False, True)):
            yield bad(mesh, [x], attrs_of(2.0, axis, keepdims, False))
    x3 = X_SHAPES[3]
    a = attrs_of(2.0, 1, False, False)
    yield bad(mesh, [DistTensorSpec(x3, (0, 1), mesh)], a)  # Paddle: rank vs dims_mapping size
    yield bad(mesh, [DistTensorSpec(x3, (0, 0, -1), mesh)], a)
    yield bad(mesh, [DistTensorSpec(x3, (0, -1, -1), mesh, frozenset({0}))], a)


def _grid_p_norm_reverse() -> Iterator[GridCase]:
    make = CaseNumbering("p_norm_reverse")
    k = 0
    for mesh, rank, x_shape, _v, attrs in _slices():
        out = _out_of(x_shape, attrs)
        x_pls = placements(rank, mesh.ndim)
        for pl in placements(len(out), mesh.ndim):
            k += 1
            x_spec = placed_spec(x_shape, x_pls[(k * 7) % len(x_pls)], mesh)
            yield make(mesh, [x_spec, placed_spec(out, pl, mesh)], attrs)
    bad = CaseNumbering("p_norm_reverse", "invalid")
    mesh = mesh_of((2, 3))
    x3 = X_SHAPES[3]
    x = placed_spec(x3, ((0, 1, -1), frozenset()), mesh)
    for axis in (3, -4, 7):  # out of range: out of the rank a reduced axis gives, and of x's
        yield bad(mesh, [x, DistTensorSpec((8, 6), (1, 0), mesh)], attrs_of(2.0, axis, False, False))
        yield bad(mesh, [x, DistTensorSpec(x3, (1, -1, 0), mesh)], attrs_of(2.0, axis, True, False))
    a = attrs_of(2.0, 1, False, False)
    yield bad(mesh, [x, DistTensorSpec((8, 4), (-1,), mesh)], a)  # Paddle: rank vs dims_mapping size
    yield bad(mesh, [x, rep(x3, mesh)], a)  # out of x's rank without keepdims
    yield bad(mesh, [x, rep((8,), mesh)], a)
    yield bad(mesh, [x, DistTensorSpec((8, 4), (0, 0), mesh)], a)
    yield bad(mesh, [x, DistTensorSpec((8, 4), (0, 5), mesh)], a)
    yield bad(mesh, [x, DistTensorSpec((8, 4), (), None)], a)
    yield from _mixed_mesh_set("p_norm_reverse")


def _grid_p_norm_grad() -> Iterator[GridCase]:
    make = CaseNumbering("p_norm_grad")
    k = 0
    for mesh, rank, x_shape, _v, attrs in _slices():
        out = _out_of(x_shape, attrs)
        x_pls = placements(rank, mesh.ndim)
        out_pls = placements(len(out), mesh.ndim)
        for pl in out_pls:
            k += 1
            x = placed_spec(x_shape, x_pls[(k * 5) % len(x_pls)], mesh)
            o = placed_spec(out, pl if k % 3 == 0 else out_pls[(k * 7) % len(out_pls)], mesh)
            yield make(mesh, [x, o, placed_spec(out, pl, mesh)], attrs)
    bad = CaseNumbering("p_norm_grad", "invalid")
    mesh = mesh_of((2, 3))
    for rank in range(1, 5):
        x_shape = SHAPES[rank]
        x = rep(x_shape, mesh)
        for axis, keepdims in itertools.product((rank, -rank - 1, rank + 3), (False, True)):
            o_shape = x_shape if keepdims else x_shape[:-1]
            split: Placement = ((0,) + (-1,) * (len(o_shape) - 1), frozenset())
            for og in (rep(o_shape, mesh), placed_spec(o_shape, split, mesh)) if o_shape else (rep(o_shape, mesh),):
                yield bad(mesh, [x, rep(o_shape, mesh), og], attrs_of(2.0, axis, keepdims, False))
    x3 = X_SHAPES[3]
    a = attrs_of(2.0, 1, False, False)
    x = rep(x3, mesh)
    yield bad(mesh, [x, rep((8, 4), mesh), rep(x3, mesh)], a)  # out_grad's rank: the registry answers
    yield bad(mesh, [x, rep(x3, mesh), rep((8, 4), mesh)], a)  # out's rank
    yield bad(mesh, [x, rep((8, 4), mesh), DistTensorSpec((8, 4), (), None)], a)  # out_grad without a mesh
    yield bad(mesh, [x, rep((8, 4), mesh), DistTensorSpec((8, 4), (0, 0), mesh)], a)
    yield from _mixed_mesh_set("p_norm_grad")


GRIDS: dict[str, GridFn] = {
    "p_norm": _grid_p_norm,
    "p_norm_reverse": _grid_p_norm_reverse,
    "p_norm_grad": _grid_p_norm_grad,
}


def input_shapes(rule: str, x_shape: tuple[int, ...], attrs: Mapping[str, object]) -> dict[str, tuple[int, ...]]:
    """x as given; out and out_grad as the op makes out (axis -1, no keepdims, no asvector where
    not given)."""
    axis, keepdims, asvector = attrs.get("axis", -1), attrs.get("keepdims", False), attrs.get("asvector", False)
    out = out_shape(x_shape, int(axis), bool(keepdims), bool(asvector))  # type: ignore[call-overload]
    shapes = {"x": x_shape, "out": out, "out_grad": out}
    return {n: shapes[n] for n in ("x", "out", "out_grad")[:{"p_norm": 1, "p_norm_reverse": 2}.get(rule, 3)]}


def coshard_attr_variants(rule: str, rank: int) -> list[dict[str, object]]:
    """Axis 0 (porder 2), the last axis with keepdims (porder 1), every axis (asvector)."""
    return [dict(attrs_of(2.0, 0, False, False)), dict(attrs_of(1.0, -1, True, False)),
            dict(attrs_of(2.0, -1, False, True))]


COSHARD = CoshardPlan(ranks=range(1, 4), attr_variants=coshard_attr_variants, invalid_rank=3, invalid_variant=0)


def input_problem(rule: str, named: Mapping[str, DistTensorSpec | None], attrs: Mapping[str, object],
                  rank: int) -> str | None:
    """porder and epsilon numbers; axis an int in -R..R-1 (unless asvector or x is 0-D); keepdims
    and asvector bools; out and out_grad of the rank keepdims / asvector give."""
    for name in ("porder", "epsilon"):
        v = attrs.get(name)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return f"{name} {v!r} is not a number"
    axis, keepdims, asvector = attrs.get("axis"), attrs.get("keepdims"), attrs.get("asvector")
    if isinstance(axis, bool) or not isinstance(axis, int):
        return f"axis {axis!r} is not an int"
    if not isinstance(keepdims, (bool, int)) or not isinstance(asvector, (bool, int)):
        return "keepdims and asvector are bools"
    if not asvector and rank and not -rank <= axis < rank:
        return f"axis {axis} is outside {-rank}..{rank - 1}"
    want = out_rank(rank, bool(keepdims), bool(asvector))
    for name in ("out", "out_grad"):
        t = named.get(name)
        if t is not None and len(t.shape) != want:
            return f"{name} rank {len(t.shape)} != {want}"
    return None


def _out_rank(x_rank: int, attrs: Mapping[str, object]) -> int:
    """out's rank, as :func:`input_shapes` shapes it."""
    return len(input_shapes("p_norm_reverse", (1,) * x_rank, attrs)["out"])


_FORWARD_RANKS: dict[str, RankOf] = {"out": _out_rank}
#: The rank of each returned output (tools/fuzz.py's answer form).
ANSWER_RANKS: dict[str, dict[str, RankOf]] = {"p_norm": _FORWARD_RANKS, "p_norm_reverse": _FORWARD_RANKS,
                                              "p_norm_grad": {"x_grad": "x"}}


def _draw_porder(rng: random.Random, rank: int) -> float:
    return rng.choice(PORDERS)


def _draw_axis(rng: random.Random, rank: int) -> int:
    return rng.randint(-rank, rank - 1) if rank else -1  # every valid axis; the grid's corners hold the others


def _bad_axis(rng: random.Random, rank: int) -> int:
    """An axis outside -rank..rank-1, past either end by 1-3: the op refuses it, the rule reduces
    no axis for it (docs/strictness.md)."""
    return rank + rng.randrange(3) if rng.random() < 0.5 else -rank - 1 - rng.randrange(3)


#: Out of range: the axis (mostly: the one attribute the rules read; with asvector off, which
#: would make it count for nothing), a negative epsilon. porder takes any float (0, negative, inf
#: have their own norms) and keepdims / asvector are bools.
RANDOM = RandomPlan(ranks=(1, 6), bad_x_ranks=(0, 7), attr_draws=(("porder", _draw_porder), ("axis", _draw_axis)),
                    bad_attrs=(BadAttr("axis", _bad_axis, 3, with_attrs=(("asvector", False),)),
                               BadAttr("epsilon", bad_epsilon)))

#: The family's grid part, read by parity (grid, validity, random mode), ``infer`` and tools/fuzz.py.
GRID = GridPlan(grids=GRIDS, input_shapes=input_shapes, coshard=COSHARD, input_problem=input_problem, random=RANDOM,
                answer_ranks=ANSWER_RANKS)
