"""layer_norm's parity grid.

::

    meshes, ranks       every mesh of the kit's grid; x rank 1-4; every begin_norm_axis 0..rank
    layer_norm          every x placement with replicated scale/bias and with one cycled scale/bias
                        variant; every scale/bias variant with x split on axis 0 along each mesh dim
    layer_norm_reverse  out dims_mapping x mean mapping in full; x's placement, partial on out,
                        variance and scale/bias cycled along the pairs (x's mapping and scale/bias
                        are not read; x alone and variance alone take every placement)
    layer_norm_grad     x placement x out_grad mapping, thinned 4:1: every pair where out_grad's
                        mapping equals x's or is replicated, and every 4th other pair; out_grad
                        partial on every 8th; mean/variance/scale/bias cycled
    corner sets         invalid: begin_norm_axis out of range, 2-D scale/bias, mesh dims twice /
                        out of range, rank vs mapping length, out_grad's rank, statistics without a
                        mesh; mixed meshes with x [8,6,4] for begin_norm_axis 1 and 2
    co-shard set        x rank 1-3, every begin_norm_axis
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, cast

from ...types import DistTensorSpec, ProcessMesh
from .. import RULES
from ..kit.grid import (
    GRAD_RANKS,
    LIKE_X,
    MESH_SHAPES,
    MIXED_X_RANK3,
    X_SHAPES,
    BadAttr,
    CaseNumbering,
    CoshardPlan,
    GridCase,
    GridFn,
    GridPlan,
    RandomPlan,
    RankOf,
    bad_epsilon,
    mesh_of,
    mixed_meshes,
    one_at_a_time,
    placed_spec,
    placements,
    rep,
    valid_mappings,
)

if TYPE_CHECKING:
    import random

Side = list[tuple[DistTensorSpec | None, DistTensorSpec | None]]


def _side_variants(mesh: ProcessMesh, size: int) -> Side:
    """(scale, bias): each alone through every placement and None, then both None."""
    shapes: dict[str, tuple[int, ...]] = {"scale": (size,), "bias": (size,)}
    return [(v["scale"], v["bias"]) for v in one_at_a_time(("scale", "bias"), shapes, mesh, ("scale", "bias"))]


def _norm_size(x_shape: Sequence[int], b: int) -> int:
    size = 1
    for s in x_shape[b:]:
        size *= s
    return size


Slice = tuple[ProcessMesh, int, tuple[int, ...], int, tuple[tuple[str, object], ...], tuple[int, ...], Side]


def _slices() -> Iterator[Slice]:
    """The grids' outer axes: (mesh, rank, x shape, begin_norm_axis, attrs, mean/variance shape,
    scale/bias variants) for every mesh, x rank 1..4 and begin_norm_axis 0..rank."""
    for mesh_shape in MESH_SHAPES:
        mesh = mesh_of(mesh_shape)
        for rank in range(1, 5):
            x_shape = X_SHAPES[rank]
            for b in range(0, rank + 1):
                side = _side_variants(mesh, _norm_size(x_shape, b))
                yield mesh, rank, x_shape, b, (("epsilon", 1e-5), ("begin_norm_axis", b)), x_shape[:b], side


def _mixed_mesh_set(rule: str) -> Iterator[GridCase]:
    """The mixed-mesh set of a rule, for begin_norm_axis 1 and 2 (x [8,6,4])."""
    x = X_SHAPES[3]
    variants = []
    for b in (1, 2):
        norm = (_norm_size(x, b),)
        shapes = {"x": x, "scale": norm, "bias": norm, "out": x, "mean": x[:b], "variance": x[:b], "out_grad": x}
        variants.append((shapes, (("epsilon", 1e-5), ("begin_norm_axis", b))))
    yield from mixed_meshes(rule, variants, MIXED_X_RANK3)


def _grid_layer_norm() -> Iterator[GridCase]:
    make = CaseNumbering("layer_norm")
    for mesh, rank, x_shape, _b, attrs, _stat_shape, side in _slices():
        for k, pl in enumerate(placements(rank, mesh.ndim)):
            # every x placement with replicated scale/bias, and a cycled side variant
            for scale, bias in (side[0], side[1 + k % (len(side) - 1)]):
                yield make(mesh, [placed_spec(x_shape, pl, mesh), scale, bias], attrs)
        for scale, bias in side[1:]:
            for m in range(-1, mesh.ndim):
                dm = tuple([m] + [-1] * (rank - 1))
                yield make(mesh, [placed_spec(x_shape, (dm, frozenset()), mesh), scale, bias], attrs)
    yield from _mixed_mesh_set("layer_norm")
    mesh = mesh_of((2, 3))
    bad = CaseNumbering("layer_norm", "invalid")
    for rank in range(1, 5):
        x_shape = X_SHAPES[rank]
        for b in (-1, rank + 1):  # Paddle: ValueError basic_string::_M_create / segfault
            yield bad(mesh, [rep(x_shape, mesh), None, None], (("epsilon", 1e-5), ("begin_norm_axis", b)))
    x3 = X_SHAPES[3]
    attrs = (("epsilon", 1e-5), ("begin_norm_axis", 1))
    yield bad(mesh, [rep(x3, mesh), rep((6, 4), mesh), None], attrs)  # 2-D scale: Paddle rejects
    yield bad(mesh, [rep(x3, mesh), None, rep((6, 4), mesh)], attrs)
    yield bad(mesh, [DistTensorSpec(x3, (0, 0, -1), mesh), None, None], (("epsilon", 1e-5), ("begin_norm_axis", 2)))
    yield bad(mesh, [DistTensorSpec(x3, (0, 5, -1), mesh), None, None], (("epsilon", 1e-5), ("begin_norm_axis", 2)))


def _grid_layer_norm_reverse() -> Iterator[GridCase]:
    make = CaseNumbering("layer_norm_reverse")
    for mesh, rank, x_shape, b, attrs, stat_shape, side in _slices():
        x_pls = placements(rank, mesh.ndim)
        stat_maps = valid_mappings(b, mesh.ndim)
        stat_pls = placements(b, mesh.ndim)
        k = 0
        for out_dm in valid_mappings(rank, mesh.ndim):
            for mean_dm in stat_maps:
                k += 1
                var = (mean_dm, frozenset()) if k % 3 else stat_pls[k % len(stat_pls)]
                out_pl: tuple[tuple[int, ...], frozenset[int]] = (out_dm, frozenset())
                mean_pl: tuple[tuple[int, ...], frozenset[int]] = (mean_dm, frozenset())
                if k % 5 == 0:  # partial status on out/mean: the reverse rule keeps it
                    free = [m for m in range(mesh.ndim) if m not in out_dm]
                    out_pl = (out_dm, frozenset(free[:1]))
                scale, bias = side[k % len(side)]
                x_pl = x_pls[(k * 11) % len(x_pls)]
                yield make(mesh, [placed_spec(x_shape, x_pl, mesh), scale, bias, placed_spec(x_shape, out_pl, mesh),
                                  placed_spec(stat_shape, mean_pl, mesh), placed_spec(stat_shape, var, mesh)], attrs)
        # variance on its own: every placement against replicated out/mean
        for var in stat_pls:
            yield make(mesh, [rep(x_shape, mesh), None, None, rep(x_shape, mesh), rep(stat_shape, mesh),
                              placed_spec(stat_shape, var, mesh)], attrs)
        for pl in x_pls:  # x's own placement (ignored by the rule; its partial is kept)
            yield make(mesh, [placed_spec(x_shape, pl, mesh), None, None, rep(x_shape, mesh),
                              rep(stat_shape, mesh), rep(stat_shape, mesh)], attrs)
    bad = CaseNumbering("layer_norm_reverse", "invalid")
    mesh = mesh_of((2, 3))
    x3 = X_SHAPES[3]
    attrs = (("epsilon", 1e-5), ("begin_norm_axis", 2))
    yield bad(mesh, [rep(x3, mesh), None, None, DistTensorSpec(x3, (0, -1), mesh), rep((8, 6), mesh),
                     rep((8, 6), mesh)], attrs)  # Paddle: rank vs dims_mapping size
    yield bad(mesh, [rep(x3, mesh), None, None, rep(x3, mesh), DistTensorSpec((8, 6), (0,), mesh),
                     rep((8, 6), mesh)], attrs)
    yield bad(mesh, [rep(x3, mesh), None, None, rep(x3, mesh), rep((8, 6), mesh),
                     DistTensorSpec((8, 6), (0, -1, 1), mesh)], attrs)
    yield bad(mesh, [rep(x3, mesh), None, None, rep(x3, mesh), rep((8,), mesh), rep((8,), mesh)], attrs)
    # a 2-D scale: Paddle answers [-1] for it; the port rejects (the answer would not fit it)
    yield bad(mesh, [rep(x3, mesh), rep((6, 4), mesh), None, rep(x3, mesh), rep((8,), mesh), rep((8,), mesh)],
              (("epsilon", 1e-5), ("begin_norm_axis", 1)))
    yield from _mixed_mesh_set("layer_norm_reverse")


def _grid_layer_norm_grad() -> Iterator[GridCase]:
    make = CaseNumbering("layer_norm_grad")
    for mesh, rank, x_shape, b, attrs, stat_shape, side in _slices():
        x_pls = placements(rank, mesh.ndim)
        stat_pls = placements(b, mesh.ndim)
        x_maps = valid_mappings(rank, mesh.ndim)
        k = 0
        for x_pl in x_pls:
            for og_dm in x_maps:
                k += 1
                if k % 4 and og_dm != x_pl[0] and og_dm != (-1,) * rank:
                    continue  # full x-placement x out_grad-mapping product thinned 4:1
                og_pl = (og_dm, frozenset({(k // 4) % mesh.ndim}) - set(og_dm)) if k % 8 == 0 else \
                    (og_dm, frozenset())
                mean_pl = stat_pls[k % len(stat_pls)] if k % 3 == 0 else (x_pl[0][:b], frozenset())
                var_pl = mean_pl if k % 2 else stat_pls[(k * 5) % len(stat_pls)]
                scale, bias = side[k % len(side)]
                yield make(mesh, [placed_spec(x_shape, x_pl, mesh), scale, bias, placed_spec(stat_shape, mean_pl, mesh),
                                  placed_spec(stat_shape, var_pl, mesh), placed_spec(x_shape, og_pl, mesh)], attrs)
        for scale, bias in side[1:]:
            for m in range(-1, mesh.ndim):
                x_dm = tuple([m] + [-1] * (rank - 1))
                x = placed_spec(x_shape, (x_dm, frozenset()), mesh)
                stat = placed_spec(stat_shape, (x_dm[:b], frozenset()), mesh)
                yield make(mesh, [x, scale, bias, stat, stat, x], attrs)
    bad = CaseNumbering("layer_norm_grad", "invalid")
    mesh = mesh_of((2, 3))
    x3 = X_SHAPES[3]
    stat = rep((8, 6), mesh)
    for b in (-1, 4):
        yield bad(mesh, [rep(x3, mesh), None, None, stat, stat, rep(x3, mesh)], (("begin_norm_axis", b),))
    attrs = (("epsilon", 1e-5), ("begin_norm_axis", 2))
    yield bad(mesh, [rep(x3, mesh), None, None, stat, stat, rep((8, 6), mesh)], attrs)  # out_grad rank
    yield bad(mesh, [rep(x3, mesh), rep((4,), mesh), rep((2, 2), mesh), stat, stat, rep(x3, mesh)], attrs)
    yield bad(mesh, [rep(x3, mesh), None, None, stat, rep((8,), mesh), rep(x3, mesh)], attrs)
    yield bad(mesh, [rep(x3, mesh), rep((6, 4), mesh), rep((6, 4), mesh), rep((8,), mesh), rep((8,), mesh),
                     rep(x3, mesh)], (("epsilon", 1e-5), ("begin_norm_axis", 1)))  # 2-D scale: Paddle allows
    # specs without a mesh that the rule reads: Paddle answers mean [0] without a mesh / segfaults
    x_split = DistTensorSpec(x3, (0, -1, -1), mesh)
    b1 = (("epsilon", 1e-5), ("begin_norm_axis", 1))
    yield bad(mesh, [x_split, None, None, DistTensorSpec((8,), (), None), rep((8,), mesh), rep(x3, mesh)], b1)
    yield bad(mesh, [x_split, None, None, rep((8,), mesh), rep((8,), mesh), DistTensorSpec(x3, (), None)], b1)
    yield from _mixed_mesh_set("layer_norm_grad")


GRIDS: dict[str, GridFn] = {
    "layer_norm": _grid_layer_norm,
    "layer_norm_reverse": _grid_layer_norm_reverse,
    "layer_norm_grad": _grid_layer_norm_grad,
}


def input_shapes(rule: str, x_shape: tuple[int, ...], attrs: Mapping[str, object]) -> dict[str, tuple[int, ...]]:
    """Statistics ``x.shape[:b]``; scale and bias the size of the normalised axes; the rest like x."""
    b = int(attrs["begin_norm_axis"])  # type: ignore[call-overload]
    return {n: x_shape if n in LIKE_X else x_shape[:b] if n in ("mean", "variance") else (math.prod(x_shape[b:]),)
            for n in RULES[rule].inputs}


def derived_shapes(rule: str, x_shape: tuple[int, ...], attrs: Mapping[str, object]) -> dict[str, tuple[int, ...]]:
    """:func:`input_shapes` with begin_norm_axis 1 where it is not given."""
    return input_shapes(rule, x_shape, {"begin_norm_axis": 1, **attrs})


def coshard_attr_variants(rule: str, rank: int) -> list[dict[str, object]]:
    """Every begin_norm_axis 0..rank."""
    return [{"epsilon": 1e-5, "begin_norm_axis": b} for b in range(rank + 1)]


COSHARD = CoshardPlan(ranks=range(1, 4), attr_variants=coshard_attr_variants, invalid_rank=3, invalid_variant=1)


def input_problem(rule: str, named: Mapping[str, DistTensorSpec | None], attrs: Mapping[str, object],
                  rank: int) -> str | None:
    """x rank >= 1; begin_norm_axis an int in 0..rank; scale/bias 1-D; mean/variance of rank
    begin_norm_axis; out/out_grad like x."""
    if rank < 1:
        return "x is rank 0 (layer_norm normalises at least one axis)"
    b = attrs.get("begin_norm_axis")
    if isinstance(b, bool) or not isinstance(b, int) or not 0 <= b <= rank:
        return f"begin_norm_axis {b!r} is not an int in 0..{rank}"
    for name, t in named.items():
        if t is None or name == "x":
            continue
        want = {"scale": 1, "bias": 1, "mean": b, "variance": b}.get(name, rank)
        if len(t.shape) != want:
            return f"{name} rank {len(t.shape)} != {want}"
    return None


def _stats_rank(x_rank: int, attrs: Mapping[str, object]) -> int:
    """mean / variance are ``x.shape[:begin_norm_axis]``."""
    return int(cast(int, attrs["begin_norm_axis"]))


_FORWARD_RANKS: dict[str, RankOf] = {"out": "x", "mean": _stats_rank, "variance": _stats_rank}
#: The rank of each returned output (tools/fuzz.py's answer form).
ANSWER_RANKS: dict[str, dict[str, RankOf]] = {"layer_norm": _FORWARD_RANKS, "layer_norm_reverse": _FORWARD_RANKS,
                                              "layer_norm_grad": GRAD_RANKS}


def _draw_begin_norm_axis(rng: random.Random, rank: int) -> int:
    return rng.randint(0, rank)


def _bad_begin_norm_axis(rng: random.Random, rank: int) -> int:
    """Outside 0..rank: negative 3 times in 4 (Paddle raises on those), beyond the rank by 1-3 else
    (that segfaults Paddle: the case runs in a child of its own)."""
    beyond = rng.random() < 0.25
    return rank + 1 + rng.randrange(3) if beyond else rng.choice((-1, -2, -rank - 1))


#: begin_norm_axis is drawn for x's rank (and again for an x-rank mutation's); out of range: it
#: (mostly: the one attribute the rules read) or a negative epsilon.
RANDOM = RandomPlan(ranks=(1, 6), bad_x_ranks=(0, 7),
                    stats_like_x=frozenset({"mean", "variance", "saved_mean", "saved_variance", "invvar"}),
                    attr_draws=(("begin_norm_axis", _draw_begin_norm_axis),), rank_attrs=("begin_norm_axis",),
                    bad_attrs=(BadAttr("begin_norm_axis", _bad_begin_norm_axis, 3), BadAttr("epsilon", bad_epsilon)))

#: The family's grid part, read by parity (grid, validity, random mode), ``infer`` and tools/fuzz.py.
GRID = GridPlan(grids=GRIDS, input_shapes=input_shapes, coshard=COSHARD, input_problem=input_problem, random=RANDOM,
                answer_ranks=ANSWER_RANKS,
                derived_shapes=derived_shapes)
