"""batch_norm's parity grid (and the pieces sync_batch_norm's reuses).

::

    meshes        every mesh of the kit's grid; x rank 2-5
    attributes    every data_format (7); batch_norm_static: none (its header fixes NCHW)
    x             every placement, the per-channel tensors replicated
    the others    one at a time through every placement (None where optional), against x
                  replicated and x split on N or on C along each mesh dim
    grad          x and out_grad: placement k once as x and once as out_grad, paired with
                  placement (7k+3) mod n: the paddle-profile rules never read out_grad's
                  placement (bn-grad-og-ignored), so the full product (63x the cases) would add
                  time, not coverage
    corner sets   invalid: ranks Paddle rejects (1, 6), 2-D per-channel tensors, a 2-D
                  reserve_space, out_grad's rank, mesh dims twice / out of range, a mapping
                  shorter than the rank, an unknown data_format, x or mean without a mesh;
                  mixed meshes with x [8,6,4,4] on 2x3 and 2
    co-shard set  x rank 2-4, data_format NCHW and NHWC (channel first and channel last)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from ...types import DistTensorSpec
from .. import RULES
from ..kit.grid import (
    GRAD_RANKS,
    LIKE_X,
    MESH_SHAPES,
    MIXED_X_RANK4,
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
    ShapeNotDerivable,
    bad_data_format,
    bad_epsilon,
    bad_momentum,
    choice_draw,
    mesh_of,
    mixed_meshes,
    one_at_a_time,
    placed_spec,
    placements,
    rep,
)
from ..kit.layout import DATA_FORMATS, channel_axis
from .layout import PER_CHANNEL

#: batch_norm layouts of the co-shard set: channel first and channel last.
COSHARD_FORMATS = ("NCHW", "NHWC")


def forward_grid(rule: str, formats: Sequence[str]) -> Iterator[GridCase]:
    """x through every placement, the others one at a time against a few x placements."""
    make = CaseNumbering(rule)
    names = ("mean", "variance", "scale", "bias")
    for mesh_shape in MESH_SHAPES:
        mesh = mesh_of(mesh_shape)
        for rank in range(2, 6):
            x_shape = X_SHAPES[rank]
            for fmt in formats:
                attrs = (("data_format", fmt),) if fmt else ()
                c = channel_axis(fmt or "NCHW", rank)  # "": batch_norm_static, always NCHW
                shapes: dict[str, tuple[int, ...]] = {n: (x_shape[c],) for n in names}
                # x: every placement, the others replicated
                for pl in placements(rank, mesh.ndim):
                    yield make(mesh, [placed_spec(x_shape, pl, mesh)] + [rep(shapes[n], mesh) for n in names], attrs)
                # the others: one at a time, against a few x placements (C split, N split, none)
                x_probe: list[Placement] = [((-1,) * rank, frozenset())]
                for m in range(mesh.ndim):
                    for axis in {0, c}:
                        dm = [-1] * rank
                        dm[axis] = m
                        x_probe.append((tuple(dm), frozenset()))
                for xp in x_probe:
                    for variant in one_at_a_time(names, shapes, mesh, ("scale", "bias"))[1:]:
                        yield make(mesh, [placed_spec(x_shape, xp, mesh)] + [variant[n] for n in names], attrs)


def _forward_invalid(rule: str, with_format: bool) -> Iterator[GridCase]:
    make = CaseNumbering(rule, "invalid")
    mesh = mesh_of((2, 3))
    attrs = (("data_format", "NCHW"),) if with_format else ()
    stat = rep((6,), mesh)
    for shape in ((8,), (8, 6, 4, 4, 2, 2)):  # ranks Paddle rejects
        yield make(mesh, [rep(shape, mesh), stat, stat, stat, stat], attrs)
    yield make(mesh, [rep((8, 6, 4, 4), mesh), rep((6, 1), mesh), stat, stat, stat], attrs)  # 2-D mean
    yield make(mesh, [rep((8, 6, 4, 4), mesh), stat, stat, rep((6, 1), mesh), stat], attrs)  # 2-D scale
    yield make(mesh, [DistTensorSpec((8, 6, 4, 4), (0, 0, -1, -1), mesh), stat, stat, stat, stat], attrs)
    yield make(mesh, [DistTensorSpec((8, 6, 4, 4), (-1, 2, -1, -1), mesh), stat, stat, stat, stat], attrs)
    yield make(mesh, [DistTensorSpec((8, 6, 4, 4), (-1, 1, -1), mesh), stat, stat, stat, stat], attrs)
    # mean without a mesh while C is split: Paddle answers mean [1] without a mesh
    yield make(mesh, [DistTensorSpec((8, 6, 4, 4), (-1, 1, -1, -1), mesh), DistTensorSpec((6,), (), None), stat, stat,
                      stat], attrs)


def mixed_mesh_set(rule: str, with_format: bool,
                   bases: Sequence[tuple[int, ...]] = ((2, 3), (2,))) -> Iterator[GridCase]:
    """The mixed-mesh set, x [8,6,4,4] (C = axis 1) on each of ``bases``."""
    shapes: dict[str, tuple[int, ...]] = {n: (6,) for n in RULES[rule].inputs}
    shapes.update(x=X_SHAPES[4], out_grad=X_SHAPES[4], reserve_space=(5,))
    attrs = (("data_format", "NCHW"),) if with_format else ()
    yield from mixed_meshes(rule, [(shapes, attrs)], MIXED_X_RANK4, bases)


def _grid_batch_norm_static() -> Iterator[GridCase]:
    yield from forward_grid("batch_norm_static", ("",))
    yield from mixed_mesh_set("batch_norm_static", False)
    yield from _forward_invalid("batch_norm_static", False)


def _grid_batch_norm() -> Iterator[GridCase]:
    yield from forward_grid("batch_norm", DATA_FORMATS)
    yield from mixed_mesh_set("batch_norm", True)
    yield from _forward_invalid("batch_norm", True)


def grad_grid(rule: str, names: Sequence[str], formats: Sequence[str]) -> Iterator[GridCase]:
    """x and out_grad: every placement of each (the other cycled through a fixed list); the
    per-channel tensors one at a time."""
    make = CaseNumbering(rule)
    side = [n for n in names if n not in ("x", "out_grad")]
    for mesh_shape in MESH_SHAPES:
        mesh = mesh_of(mesh_shape)
        for rank in range(2, 6):
            x_shape = X_SHAPES[rank]
            all_pl = placements(rank, mesh.ndim)
            for fmt in formats:
                c = channel_axis(fmt, rank)
                shapes: dict[str, tuple[int, ...]] = {n: (x_shape[c],) for n in side}
                attrs = (("data_format", fmt),)
                reps = {n: rep(shapes[n], mesh) for n in side}
                for k, pl in enumerate(all_pl):
                    og = all_pl[(k * 7 + 3) % len(all_pl)]
                    for x_pl, og_pl in ((pl, og), (og, pl)):
                        tensors: dict[str, DistTensorSpec | None] = {
                            "x": placed_spec(x_shape, x_pl, mesh), "out_grad": placed_spec(x_shape, og_pl, mesh),
                            **reps}
                        yield make(mesh, [tensors[n] for n in names], attrs)
                x_probe: list[Placement] = [((-1,) * rank, frozenset())]
                x_probe += [(tuple(m if a == c else -1 for a in range(rank)), frozenset()) for m in range(mesh.ndim)]
                optional = [n for n in ("scale", "bias", "reserve_space") if n in side]
                for xp in x_probe:
                    for variant in one_at_a_time(side, shapes, mesh, optional)[1:]:
                        x_spec = placed_spec(x_shape, xp, mesh)
                        tensors = {"x": x_spec, "out_grad": x_spec, **variant}
                        yield make(mesh, [tensors[n] for n in names], attrs)


def _grad_invalid(rule: str) -> Iterator[GridCase]:
    """Paddle's own checks (x rank 1 and 6, out_grad's rank, 2-D per-channel tensors, a 2-D
    reserve_space) and input it does not validate (mesh dims used twice or out of range, a mapping
    shorter than the rank, an unknown data_format, x without a mesh)."""
    make = CaseNumbering(rule, "invalid")
    mesh = mesh_of((2, 3))
    names = RULES[rule].inputs
    nchw = (("data_format", "NCHW"),)
    x4 = rep(X_SHAPES[4], mesh)
    base: dict[str, DistTensorSpec | None] = {n: rep((6,), mesh) for n in names}
    base.update(x=x4, out_grad=x4, reserve_space=None)
    variants: list[tuple[dict[str, DistTensorSpec | None], tuple[tuple[str, object], ...]]] = [
        ({"x": rep((8,), mesh), "out_grad": rep((8,), mesh)}, nchw),
        ({"x": rep((8, 6, 4, 4, 2, 2), mesh), "out_grad": rep((8, 6, 4, 4, 2, 2), mesh)}, nchw),
        ({"out_grad": rep((8, 6, 4), mesh)}, nchw),  # Paddle checks out_grad's rank against x's
        ({"scale": rep((6, 1), mesh)}, nchw),
        ({"saved_variance": rep((6, 2), mesh)}, nchw),
        ({"reserve_space": rep((5, 2), mesh)}, nchw),
        ({"x": DistTensorSpec(X_SHAPES[4], (0, 0, -1, -1), mesh)}, nchw),
        ({"x": DistTensorSpec(X_SHAPES[4], (-1, 2, -1, -1), mesh)}, nchw),
        ({"x": DistTensorSpec(X_SHAPES[4], (-1, 1, -1), mesh)}, nchw),
        ({"x": DistTensorSpec(X_SHAPES[4], (-1, 1, -1, -1), mesh)}, (("data_format", "CHWN"),)),
        ({"x": DistTensorSpec(X_SHAPES[4], (), None)}, nchw),
    ]
    for variant, attrs in variants:
        tensors = {**base, **variant}
        yield make(mesh, [tensors[n] for n in names], attrs)


def _grid_batch_norm_grad() -> Iterator[GridCase]:
    yield from grad_grid("batch_norm_grad", RULES["batch_norm_grad"].inputs, DATA_FORMATS)
    yield from mixed_mesh_set("batch_norm_grad", True)
    yield from _grad_invalid("batch_norm_grad")


GRIDS: dict[str, GridFn] = {
    "batch_norm_static": _grid_batch_norm_static,
    "batch_norm": _grid_batch_norm,
    "batch_norm_grad": _grid_batch_norm_grad,
}


def input_shapes(rule: str, x_shape: tuple[int, ...], attrs: Mapping[str, object]) -> dict[str, tuple[int, ...]]:
    """Per channel ``[C]`` (C by data_format), x-like tensors x's shape."""
    c = channel_axis(str(attrs.get("data_format", "NCHW")), len(x_shape))
    return {n: x_shape if n in LIKE_X else (x_shape[c],) for n in RULES[rule].inputs}


def derived_shapes(rule: str, x_shape: tuple[int, ...], attrs: Mapping[str, object]) -> dict[str, tuple[int, ...]]:
    """:func:`input_shapes` for any data_format string (Paddle's bare character test: the rule
    judges the format later); no channel axis (x of rank 0) raises :class:`ShapeNotDerivable`."""
    fmt = str(attrs.get("data_format", "NCHW"))
    c = channel_axis(fmt, len(x_shape), strict=False)
    if not 0 <= c < len(x_shape):
        raise ShapeNotDerivable(f"cannot be derived from an x of rank {len(x_shape)} (no channel axis for "
                                f"data_format {fmt})")
    return {n: x_shape if n in LIKE_X else (x_shape[c],) for n in RULES[rule].inputs}


def coshard_attr_variants(rule: str, rank: int) -> list[dict[str, object]]:
    """Channel first and channel last; batch_norm_static takes no attribute (NCHW)."""
    if any(name == "data_format" for name, _ in RULES[rule].attrs):
        return [{"data_format": fmt} for fmt in COSHARD_FORMATS]
    return [{}]


COSHARD = CoshardPlan(ranks=range(2, 5), attr_variants=coshard_attr_variants)


def input_problem(rule: str, named: Mapping[str, DistTensorSpec | None], attrs: Mapping[str, object],
                  rank: int) -> str | None:
    """x rank 2..5; a per-channel tensor 1-D; out_grad's rank x's; data_format a batch_norm layout."""
    if not 2 <= rank <= 5:
        return f"x rank {rank} outside 2..5"
    if "data_format" in attrs and attrs["data_format"] not in DATA_FORMATS:
        return f"data_format {attrs['data_format']!r} is not a batch_norm layout"
    for name, t in named.items():
        if t is not None and name in PER_CHANNEL and len(t.shape) != 1:
            return f"{name} is not 1-D"
    og = named.get("out_grad")
    if og is not None and len(og.shape) != rank:
        return "out_grad's rank differs from x's"
    return None


#: The rank of each returned output (tools/fuzz.py's answer form): out like x, the per-channel
#: statistics and reserve_space 1-D; the grad's like their inputs.
FORWARD_RANKS: dict[str, RankOf] = {"out": "x", "mean_out": 1, "variance_out": 1, "saved_mean": 1,
                                    "saved_variance": 1, "reserve_space": 1}
ANSWER_RANKS: dict[str, dict[str, RankOf]] = {"batch_norm_static": FORWARD_RANKS, "batch_norm": FORWARD_RANKS,
                                              "batch_norm_grad": GRAD_RANKS}
#: reserve_space is the kernel's scratch buffer: 1-D, of a size no rule reads (tools/fuzz.py draws
#: 0..5, the port must answer it whatever its size).
FREE_SIZE = frozenset({"reserve_space"})


#: Per-channel statistics keep their own draws (only mean/variance may copy x's mapping).
#: Out of range: data_format (mostly: the one attribute the rules read), a negative epsilon, a
#: momentum outside 0..1.
RANDOM = RandomPlan(ranks=(2, 5), bad_x_ranks=(1, 6, 7), data_formats=DATA_FORMATS,
                    stats_like_x=frozenset({"mean", "variance"}),
                    attr_draws=(("data_format", choice_draw(DATA_FORMATS)),),
                    bad_attrs=(BadAttr("data_format", bad_data_format, 3), BadAttr("epsilon", bad_epsilon),
                               BadAttr("momentum", bad_momentum)))

#: The family's grid part, read by parity (grid, validity, random mode), ``infer`` and tools/fuzz.py.
GRID = GridPlan(grids=GRIDS, input_shapes=input_shapes, coshard=COSHARD, input_problem=input_problem, random=RANDOM,
                answer_ranks=ANSWER_RANKS,
                derived_shapes=derived_shapes, free_size=FREE_SIZE)
