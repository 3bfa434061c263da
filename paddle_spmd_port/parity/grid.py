"""The case grid of every rule, and deterministic sampling from it.

Axes of the grid (per rule, see each ``_grid_*``)::

    meshes            (2,) (4,) (2,2) (2,3) (2,2,2)
    x                 every valid dims_mapping x every subset of the remaining mesh dims as
                      Partial(SUM), for every rank the op takes: batch_norm 2-5, layer_norm 1-4
    attributes        every begin_norm_axis 0..ndim; every batch_norm data_format (7), except
                      sync_batch_norm(_grad): NCHW and NHWC only
    other tensors     every valid (dims_mapping, partial) of each one, None where optional;
                      varied one tensor at a time around the all-replicated default (batch_norm
                      family: against x replicated, and x split on N or on C along each mesh dim)
    corner sets       invalid inputs, inputs on other meshes (see below); ``sample`` keeps them all
    co-shard set      after each rule's own grid: co-sharded inputs (:func:`coshard_cases`)

What is a full product and what is thinned, and why (pairs counted over every mesh, rank,
begin_norm_axis and data_format of the grid)::

    rule                  product                          grid                 full product would be
    layer_norm_reverse    out dims_mapping x mean mapping  full (14,117 pairs)  -
                          x's placement, partial on out,   cycled along the     (x's mapping and scale/bias are not
                          variance, scale/bias             pairs                read; x alone and variance alone
                                                                                take every placement)
    layer_norm_grad       x placement x out_grad mapping   22,748 of 79,300     every pair where out_grad's mapping
                                                           pairs (thinned 4:1)  equals x's or is replicated, and every
                                                                                4th other pair; out_grad partial on
                                                                                every 8th; mean/variance/scale/bias
                                                                                cycled
    batch_norm_grad,      x placement x out_grad           11,172 of 710,304    placement k once as x and once as
    sync_batch_norm_grad  placement                        pairs (cycled;       out_grad, paired with placement
                                                           batch_norm_grad)     (7k+3) mod n: the paddle-profile rules
                                                                                never read out_grad's placement
                                                                                (bn-grad-og-ignored; the replicated
                                                                                fallback reads nothing), so the full
                                                                                product (63x the cases) would add time,
                                                                                not coverage
    sync_batch_norm(_grad) data_format                     NCHW, NHWC (2 of 7)  the replicated fallback reads no
                                                                                attribute; the two cover C on axis 1
                                                                                and on the last axis
    layer_norm            x placement x scale/bias         every x placement with replicated scale/bias and with one
                                                           cycled scale/bias variant; every scale/bias variant with x
                                                           split on axis 0 along each mesh dim
    group_norm(_grad)     x placement x attributes x       every x placement once, the 4 (data_format, groups)
                          y / y_grad placement             variants of its rank and (grad) the y / y_grad placement
                                                           cycled along them: the rules read x's mapping only

Corner sets (ids ``<rule>-<label>-<n>``; ``is_corner``)::

    invalid               per rule, by hand: ranks Paddle rejects, out_grad's rank, 2-D per-channel
                          or scale tensors, mappings Paddle does not validate (mesh dim twice, out
                          of range, shorter than the rank), begin_norm_axis out of range, unknown
                          data_format, x or another read tensor without a mesh
    mixed-mesh            one input other than x at a time on a mesh of as many dims as x's (the
                          same shape with other process ids, or another shape), replicated or split
                          on axis 0: Paddle answers every one (each attr keeps its tensor's mesh or
                          takes x's) or raises a sharding conflict, and the port must match
    invalid-mixed-ndim    the same on a mesh of fewer or more dims: Paddle answers some, and crashes
                          on or answers mesh dims an attr's mesh lacks for others (the port rejects
                          those, naming the input)

x is on (2,3) or (2,) in the corner sets (sync rules: (2,2,2), outside the oracle's meshes, so the
oracle judges only valid sync inputs).

"Valid dims_mapping": one entry per axis, each -1 or a mesh dim, no mesh dim twice.
Sizes are printed by ``python -m paddle_spmd_port parity --list``.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Mapping as MappingOf
from functools import cache
from typing import Any

from ..case import Case
from ..rules.signatures import DATA_FORMATS as BN_DATA_FORMATS
from ..rules.signatures import GN_DATA_FORMATS, RULES, channel_axis
from ..types import DistTensorSpec, Mapping, ProcessMesh, entry_of, mesh_dims_of

MESH_SHAPES: tuple[tuple[int, ...], ...] = ((2,), (4,), (2, 2), (2, 3), (2, 2, 2))
X_SHAPES = {1: (8,), 2: (8, 6), 3: (8, 6, 4), 4: (8, 6, 4, 4), 5: (8, 6, 4, 4, 2)}
Placement = tuple[tuple[int, ...], frozenset[int]]


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
_MESH_IDS_AND_NAMES = {
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


def _spec(shape: Sequence[int], placement: Placement, mesh: ProcessMesh) -> DistTensorSpec:
    """The spec of this shape and placement on ``mesh``. Specs are immutable values, so the grids'
    cases share one object per value (the default sweep's 1.16 million inputs are some 31,000 values): drawn
    once, pickled once per worker slice, and their texts kept once (:meth:`Case.json_text`)."""
    shape = tuple(shape)
    key = (shape, placement[0], placement[1], id(mesh))
    spec = _GRID_SPECS.get(key)
    if spec is None or spec.mesh is not mesh:  # (the spec holds its mesh: the id stays the mesh's)
        if len(_GRID_SPECS) > 200_000:
            _GRID_SPECS.clear()
        spec = _GRID_SPECS[key] = DistTensorSpec(shape, placement[0], mesh, placement[1])
    return spec


_GRID_SPECS: dict[tuple[Any, ...], DistTensorSpec] = {}


def _rep(shape: Sequence[int], mesh: ProcessMesh) -> DistTensorSpec:
    return _spec(shape, ((-1,) * len(shape), frozenset()), mesh)


def _one_at_a_time(names: Sequence[str], shapes: dict[str, tuple[int, ...]], mesh: ProcessMesh,
                   optional: Iterable[str]) -> list[dict[str, DistTensorSpec | None]]:
    """Variants of the secondary tensors: all replicated; then each tensor alone takes every
    (mapping, partial) it can have, or None if optional; then every optional one None together."""
    base: dict[str, DistTensorSpec | None] = {n: _rep(shapes[n], mesh) for n in names}
    variants = [dict(base)]
    for name in names:
        for pl in placements(len(shapes[name]), mesh.ndim):
            if pl == ((-1,) * len(shapes[name]), frozenset()):
                continue
            variants.append({**base, name: _spec(shapes[name], pl, mesh)})
    opt = [n for n in names if n in set(optional)]
    for name in opt:
        variants.append({**base, name: None})
    if len(opt) > 1:
        variants.append({**base, **{n: None for n in opt}})
    return variants


#: Labels of the corner sets: hand-written cases every rule's grid holds beside its sweep, numbered
#: ``<rule>-<label>-<n>`` (``invalid``, ``invalid-mixed-ndim``, ``mixed-mesh``). :func:`sample`
#: always keeps them.
CORNER_LABELS = ("invalid", "mixed-mesh")


def is_corner(case: Case) -> bool:
    """True for a case of a corner set: its id reads ``<rule>-invalid-...`` or ``<rule>-mixed-mesh-<n>``."""
    return any(f"-{label}-" in case.case_id for label in CORNER_LABELS)


class _Ids:
    """Makes cases of one rule numbered ``<rule>-<n>`` (``<rule>-<label>-<n>`` for a corner set)."""

    def __init__(self, rule: str, label: str = "") -> None:
        self.rule, self.prefix, self.n = rule, f"{rule}-{label}" if label else rule, 0

    def __call__(self, mesh: ProcessMesh, inputs: Sequence[DistTensorSpec | None],
                 attrs: Sequence[tuple[str, object]] = ()) -> Case:
        self.n += 1
        return Case(self.rule, mesh, tuple(inputs), tuple(attrs), f"{self.prefix}-{self.n}")


# --------------------------------------------------------------------------- batch_norm family
def _bn_forward(rule: str, formats: Sequence[str]) -> Iterator[Case]:
    make = _Ids(rule)
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
                    yield make(mesh, [_spec(x_shape, pl, mesh)] + [_rep(shapes[n], mesh) for n in names], attrs)
                # the others: one at a time, against a few x placements (C split, N split, none)
                x_probe: list[tuple[tuple[int, ...], frozenset[int]]] = [((-1,) * rank, frozenset())]
                for m in range(mesh.ndim):
                    for axis in {0, c}:
                        dm = [-1] * rank
                        dm[axis] = m
                        x_probe.append((tuple(dm), frozenset()))
                for xp in x_probe:
                    for variant in _one_at_a_time(names, shapes, mesh, ("scale", "bias"))[1:]:
                        yield make(mesh, [_spec(x_shape, xp, mesh)] + [variant[n] for n in names], attrs)


def _bn_invalid(rule: str, with_format: bool) -> Iterator[Case]:
    make = _Ids(rule, "invalid")
    mesh = mesh_of((2, 3))
    attrs = (("data_format", "NCHW"),) if with_format else ()
    stat = _rep((6,), mesh)
    for shape in ((8,), (8, 6, 4, 4, 2, 2)):  # ranks Paddle rejects
        yield make(mesh, [_rep(shape, mesh), stat, stat, stat, stat], attrs)
    yield make(mesh, [_rep((8, 6, 4, 4), mesh), _rep((6, 1), mesh), stat, stat, stat], attrs)  # 2-D mean
    yield make(mesh, [_rep((8, 6, 4, 4), mesh), stat, stat, _rep((6, 1), mesh), stat], attrs)  # 2-D scale
    yield make(mesh, [DistTensorSpec((8, 6, 4, 4), (0, 0, -1, -1), mesh), stat, stat, stat, stat], attrs)
    yield make(mesh, [DistTensorSpec((8, 6, 4, 4), (-1, 2, -1, -1), mesh), stat, stat, stat, stat], attrs)
    yield make(mesh, [DistTensorSpec((8, 6, 4, 4), (-1, 1, -1), mesh), stat, stat, stat, stat], attrs)
    # mean without a mesh while C is split: Paddle answers mean [1] without a mesh
    yield make(mesh, [DistTensorSpec((8, 6, 4, 4), (-1, 1, -1, -1), mesh), DistTensorSpec((6,), (), None), stat, stat,
                      stat], attrs)


def _other_meshes(base: ProcessMesh) -> tuple[ProcessMesh, ...]:
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


def _mixed_meshes(rule: str, variants: Sequence[tuple[dict[str, tuple[int, ...]], tuple]],
                  x_maps: MappingOf[int, Sequence[tuple[int, ...]]],
                  bases: Sequence[tuple[int, ...]] = ((2, 3), (2,))) -> Iterator[Case]:
    """The mixed-mesh corner sets: x on each of ``bases``, one other input at a time on each of
    :func:`_other_meshes`, replicated or with axis 0 split along that mesh's last dim; the rest
    replicated on x's mesh; ``variants`` gives the shapes and attributes (one begin_norm_axis
    each). On a mesh of as many dims as x's (same shape with other process ids, or another shape)
    the cases are ``<rule>-mixed-mesh-<n>``: Paddle answers them all (each attr keeps its own
    tensor's mesh, or takes x's), or raises a sharding conflict, and the port must match. On a
    mesh of fewer or more dims they are ``<rule>-invalid-mixed-ndim-<n>``: Paddle answers some and
    crashes on, or answers mesh dims an attr's mesh lacks for, others, which the port rejects
    (InvalidSpecError naming the input)."""
    same_ndim, other_ndim = _Ids(rule, "mixed-mesh"), _Ids(rule, "invalid-mixed-ndim")
    names = RULES[rule].inputs
    for (shapes, attrs), base in itertools.product(variants, [mesh_of(b) for b in bases]):
        for x_dm in x_maps[base.ndim]:
            x = DistTensorSpec(shapes["x"], x_dm, base)
            for name in names[1:]:
                for other in _other_meshes(base):
                    for split in (False, True):
                        dm = [-1] * len(shapes[name])
                        if split:
                            dm[0] = other.ndim - 1
                        tensors = {n: _rep(shapes[n], base) for n in names[1:]}
                        tensors[name] = DistTensorSpec(shapes[name], tuple(dm), other)
                        make = same_ndim if other.ndim == base.ndim else other_ndim
                        yield make(base, [x] + [tensors[n] for n in names[1:]], attrs)


#: x mappings of the batch_norm mixed-mesh sets, per mesh ndim (x [8,6,4,4], C = axis 1): C split,
#: C split with another axis, nothing split.
_BN_MIXED_X = {3: ((2, 1, -1, 0), (-1, -1, -1, -1)), 2: ((0, 1, -1, -1), (-1, 0, -1, 1), (-1, -1, -1, -1)),
               1: ((-1, 0, -1, -1), (0, -1, -1, -1))}


def _bn_mixed_meshes(rule: str, with_format: bool, bases: Sequence[tuple[int, ...]] = ((2, 3), (2,))) -> Iterator[Case]:
    shapes: dict[str, tuple[int, ...]] = {n: (6,) for n in RULES[rule].inputs}
    shapes.update(x=X_SHAPES[4], out_grad=X_SHAPES[4], reserve_space=(5,))
    attrs = (("data_format", "NCHW"),) if with_format else ()
    yield from _mixed_meshes(rule, [(shapes, attrs)], _BN_MIXED_X, bases)


def _grid_batch_norm_static() -> Iterator[Case]:
    yield from _bn_forward("batch_norm_static", ("",))
    yield from _bn_mixed_meshes("batch_norm_static", False)
    yield from _bn_invalid("batch_norm_static", False)


def _grid_batch_norm() -> Iterator[Case]:
    yield from _bn_forward("batch_norm", BN_DATA_FORMATS)
    yield from _bn_mixed_meshes("batch_norm", True)
    yield from _bn_invalid("batch_norm", True)


def _grid_sync_batch_norm() -> Iterator[Case]:
    yield from _bn_forward("sync_batch_norm", ("NCHW", "NHWC"))
    yield from _bn_mixed_meshes("sync_batch_norm", True, ((2, 2, 2),))
    yield from _sync_invalid("sync_batch_norm")


def _sync_invalid(rule: str) -> Iterator[Case]:
    """What the replicated fallback answers without reading it and the port rejects: a 2-D
    per-channel tensor, mesh dims used twice or out of range, a mapping shorter than the rank.
    (x without a mesh is left out: it kills the registry's worker.) On the 2x2x2 mesh, like the sync
    rules' mixed-mesh sets: the oracle's grid (1-D and 2-D meshes) judges only valid sync inputs."""
    make = _Ids(rule, "invalid")
    mesh = mesh_of((2, 2, 2))
    names = RULES[rule].inputs
    attrs = (("data_format", "NCHW"),)
    x4 = _rep(X_SHAPES[4], mesh)
    base: dict[str, DistTensorSpec | None] = {n: _rep((6,), mesh) for n in names}
    base.update(x=x4, out_grad=x4, reserve_space=None)
    per_channel = [n for n in names if n not in ("x", "out_grad", "reserve_space")]
    variants = [{per_channel[0]: _rep((6, 1), mesh)}, {per_channel[-1]: _rep((6, 2), mesh)},
                {"x": DistTensorSpec(X_SHAPES[4], (0, 0, -1, -1), mesh)},
                {"x": DistTensorSpec(X_SHAPES[4], (-1, 3, -1, -1), mesh)},
                {"x": DistTensorSpec(X_SHAPES[4], (-1, 1, -1), mesh)},
                {per_channel[1]: DistTensorSpec((6,), (3,), mesh)}]
    for variant in variants:
        tensors = {**base, **variant}
        yield make(mesh, [tensors[n] for n in names], attrs)


def _bn_grad(rule: str, names: Sequence[str], formats: Sequence[str]) -> Iterator[Case]:
    """x and out_grad: every placement of each (the other cycled through a fixed list); the
    per-channel tensors one at a time."""
    make = _Ids(rule)
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
                reps = {n: _rep(shapes[n], mesh) for n in side}
                for k, pl in enumerate(all_pl):
                    og = all_pl[(k * 7 + 3) % len(all_pl)]
                    for x_pl, og_pl in ((pl, og), (og, pl)):
                        tensors: dict[str, DistTensorSpec | None] = {
                            "x": _spec(x_shape, x_pl, mesh), "out_grad": _spec(x_shape, og_pl, mesh), **reps}
                        yield make(mesh, [tensors[n] for n in names], attrs)
                x_probe: list[tuple[tuple[int, ...], frozenset[int]]] = [((-1,) * rank, frozenset())]
                x_probe += [(tuple(m if a == c else -1 for a in range(rank)), frozenset()) for m in range(mesh.ndim)]
                optional = [n for n in ("scale", "bias", "reserve_space") if n in side]
                for xp in x_probe:
                    for variant in _one_at_a_time(side, shapes, mesh, optional)[1:]:
                        tensors = {"x": _spec(x_shape, xp, mesh), "out_grad": _spec(x_shape, xp, mesh), **variant}
                        yield make(mesh, [tensors[n] for n in names], attrs)


def _bn_grad_invalid(rule: str) -> Iterator[Case]:
    """Paddle's own checks (x rank 1 and 6, out_grad's rank, 2-D per-channel tensors, a 2-D
    reserve_space) and input it does not validate (mesh dims used twice or out of range, a mapping
    shorter than the rank, an unknown data_format, x without a mesh)."""
    make = _Ids(rule, "invalid")
    mesh = mesh_of((2, 3))
    names = RULES[rule].inputs
    nchw = (("data_format", "NCHW"),)
    x4 = _rep(X_SHAPES[4], mesh)
    base: dict[str, DistTensorSpec | None] = {n: _rep((6,), mesh) for n in names}
    base.update(x=x4, out_grad=x4, reserve_space=None)
    variants: list[tuple[dict, tuple]] = [
        ({"x": _rep((8,), mesh), "out_grad": _rep((8,), mesh)}, nchw),
        ({"x": _rep((8, 6, 4, 4, 2, 2), mesh), "out_grad": _rep((8, 6, 4, 4, 2, 2), mesh)}, nchw),
        ({"out_grad": _rep((8, 6, 4), mesh)}, nchw),  # The ndim of out_grad ... should be equal with x
        ({"scale": _rep((6, 1), mesh)}, nchw),
        ({"saved_variance": _rep((6, 2), mesh)}, nchw),
        ({"reserve_space": _rep((5, 2), mesh)}, nchw),
        ({"x": DistTensorSpec(X_SHAPES[4], (0, 0, -1, -1), mesh)}, nchw),
        ({"x": DistTensorSpec(X_SHAPES[4], (-1, 2, -1, -1), mesh)}, nchw),
        ({"x": DistTensorSpec(X_SHAPES[4], (-1, 1, -1), mesh)}, nchw),
        ({"x": DistTensorSpec(X_SHAPES[4], (-1, 1, -1, -1), mesh)}, (("data_format", "CHWN"),)),
        ({"x": DistTensorSpec(X_SHAPES[4], (), None)}, nchw),
    ]
    for variant, attrs in variants:
        tensors = {**base, **variant}
        yield make(mesh, [tensors[n] for n in names], attrs)


def _grid_batch_norm_grad() -> Iterator[Case]:
    yield from _bn_grad("batch_norm_grad", RULES["batch_norm_grad"].inputs, BN_DATA_FORMATS)
    yield from _bn_mixed_meshes("batch_norm_grad", True)
    yield from _bn_grad_invalid("batch_norm_grad")


def _grid_sync_batch_norm_grad() -> Iterator[Case]:
    yield from _bn_grad("sync_batch_norm_grad", RULES["sync_batch_norm_grad"].inputs, ("NCHW", "NHWC"))
    yield from _bn_mixed_meshes("sync_batch_norm_grad", True, ((2, 2, 2),))
    yield from _sync_invalid("sync_batch_norm_grad")


# --------------------------------------------------------------------------- layer_norm family
def _ln_side_variants(mesh: ProcessMesh, size: int) -> list[tuple[DistTensorSpec | None, DistTensorSpec | None]]:
    """(scale, bias): each alone through every placement and None, then both None."""
    shapes: dict[str, tuple[int, ...]] = {"scale": (size,), "bias": (size,)}
    return [(v["scale"], v["bias"]) for v in _one_at_a_time(("scale", "bias"), shapes, mesh, ("scale", "bias"))]


def _ln_norm_size(x_shape: Sequence[int], b: int) -> int:
    size = 1
    for s in x_shape[b:]:
        size *= s
    return size


def _ln_slices() -> Iterator[tuple[ProcessMesh, int, tuple[int, ...], int, tuple, tuple[int, ...], list]]:
    """The layer_norm grids' outer axes: (mesh, rank, x shape, begin_norm_axis, attrs, mean/variance
    shape, scale/bias variants) for every mesh, x rank 1..4 and begin_norm_axis 0..rank."""
    for mesh_shape in MESH_SHAPES:
        mesh = mesh_of(mesh_shape)
        for rank in range(1, 5):
            x_shape = X_SHAPES[rank]
            for b in range(0, rank + 1):
                side = _ln_side_variants(mesh, _ln_norm_size(x_shape, b))
                yield mesh, rank, x_shape, b, (("epsilon", 1e-5), ("begin_norm_axis", b)), x_shape[:b], side


#: x mappings of the layer_norm mixed-mesh sets, per mesh ndim (x [8,6,4]).
_LN_MIXED_X = {2: ((0, 1, -1), (1, -1, 0), (-1, -1, -1)), 1: ((0, -1, -1), (-1, -1, -1))}


def _ln_mixed_meshes(rule: str) -> Iterator[Case]:
    """The mixed-mesh set of a layer_norm rule, for begin_norm_axis 1 and 2 (x [8,6,4])."""
    x = X_SHAPES[3]
    variants = []
    for b in (1, 2):
        norm = (_ln_norm_size(x, b),)
        shapes = {"x": x, "scale": norm, "bias": norm, "out": x, "mean": x[:b], "variance": x[:b], "out_grad": x}
        variants.append((shapes, (("epsilon", 1e-5), ("begin_norm_axis", b))))
    yield from _mixed_meshes(rule, variants, _LN_MIXED_X)


def _grid_layer_norm() -> Iterator[Case]:
    make = _Ids("layer_norm")
    for mesh, rank, x_shape, _b, attrs, _stat_shape, side in _ln_slices():
        for k, pl in enumerate(placements(rank, mesh.ndim)):
            # every x placement with replicated scale/bias, and a cycled side variant
            for scale, bias in (side[0], side[1 + k % (len(side) - 1)]):
                yield make(mesh, [_spec(x_shape, pl, mesh), scale, bias], attrs)
        for scale, bias in side[1:]:
            for m in range(-1, mesh.ndim):
                dm = tuple([m] + [-1] * (rank - 1))
                yield make(mesh, [_spec(x_shape, (dm, frozenset()), mesh), scale, bias], attrs)
    yield from _ln_mixed_meshes("layer_norm")
    mesh = mesh_of((2, 3))
    bad = _Ids("layer_norm", "invalid")
    for rank in range(1, 5):
        x_shape = X_SHAPES[rank]
        for b in (-1, rank + 1):  # Paddle: ValueError basic_string::_M_create / segfault
            yield bad(mesh, [_rep(x_shape, mesh), None, None], (("epsilon", 1e-5), ("begin_norm_axis", b)))
    x3 = X_SHAPES[3]
    attrs = (("epsilon", 1e-5), ("begin_norm_axis", 1))
    yield bad(mesh, [_rep(x3, mesh), _rep((6, 4), mesh), None], attrs)  # 2-D scale: Paddle rejects
    yield bad(mesh, [_rep(x3, mesh), None, _rep((6, 4), mesh)], attrs)
    yield bad(mesh, [DistTensorSpec(x3, (0, 0, -1), mesh), None, None], (("epsilon", 1e-5), ("begin_norm_axis", 2)))
    yield bad(mesh, [DistTensorSpec(x3, (0, 5, -1), mesh), None, None], (("epsilon", 1e-5), ("begin_norm_axis", 2)))


def _grid_layer_norm_reverse() -> Iterator[Case]:
    make = _Ids("layer_norm_reverse")
    for mesh, rank, x_shape, b, attrs, stat_shape, side in _ln_slices():
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
                yield make(mesh, [_spec(x_shape, x_pl, mesh), scale, bias, _spec(x_shape, out_pl, mesh),
                                  _spec(stat_shape, mean_pl, mesh), _spec(stat_shape, var, mesh)], attrs)
        # variance on its own: every placement against replicated out/mean
        for var in stat_pls:
            yield make(mesh, [_rep(x_shape, mesh), None, None, _rep(x_shape, mesh), _rep(stat_shape, mesh),
                              _spec(stat_shape, var, mesh)], attrs)
        for pl in x_pls:  # x's own placement (ignored by the rule; its partial is kept)
            yield make(mesh, [_spec(x_shape, pl, mesh), None, None, _rep(x_shape, mesh),
                              _rep(stat_shape, mesh), _rep(stat_shape, mesh)], attrs)
    bad = _Ids("layer_norm_reverse", "invalid")
    mesh = mesh_of((2, 3))
    x3 = X_SHAPES[3]
    attrs = (("epsilon", 1e-5), ("begin_norm_axis", 2))
    yield bad(mesh, [_rep(x3, mesh), None, None, DistTensorSpec(x3, (0, -1), mesh), _rep((8, 6), mesh),
                     _rep((8, 6), mesh)], attrs)  # Paddle: rank vs dims_mapping size
    yield bad(mesh, [_rep(x3, mesh), None, None, _rep(x3, mesh), DistTensorSpec((8, 6), (0,), mesh),
                     _rep((8, 6), mesh)], attrs)
    yield bad(mesh, [_rep(x3, mesh), None, None, _rep(x3, mesh), _rep((8, 6), mesh),
                     DistTensorSpec((8, 6), (0, -1, 1), mesh)], attrs)
    yield bad(mesh, [_rep(x3, mesh), None, None, _rep(x3, mesh), _rep((8,), mesh), _rep((8,), mesh)], attrs)
    # a 2-D scale: Paddle answers [-1] for it; the port rejects (the answer would not fit it)
    yield bad(mesh, [_rep(x3, mesh), _rep((6, 4), mesh), None, _rep(x3, mesh), _rep((8,), mesh), _rep((8,), mesh)],
              (("epsilon", 1e-5), ("begin_norm_axis", 1)))
    yield from _ln_mixed_meshes("layer_norm_reverse")


def _grid_layer_norm_grad() -> Iterator[Case]:
    make = _Ids("layer_norm_grad")
    for mesh, rank, x_shape, b, attrs, stat_shape, side in _ln_slices():
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
                yield make(mesh, [_spec(x_shape, x_pl, mesh), scale, bias, _spec(stat_shape, mean_pl, mesh),
                                  _spec(stat_shape, var_pl, mesh), _spec(x_shape, og_pl, mesh)], attrs)
        for scale, bias in side[1:]:
            for m in range(-1, mesh.ndim):
                x_dm = tuple([m] + [-1] * (rank - 1))
                x = _spec(x_shape, (x_dm, frozenset()), mesh)
                stat = _spec(stat_shape, (x_dm[:b], frozenset()), mesh)
                yield make(mesh, [x, scale, bias, stat, stat, x], attrs)
    bad = _Ids("layer_norm_grad", "invalid")
    mesh = mesh_of((2, 3))
    x3 = X_SHAPES[3]
    stat = _rep((8, 6), mesh)
    for b in (-1, 4):
        yield bad(mesh, [_rep(x3, mesh), None, None, stat, stat, _rep(x3, mesh)], (("begin_norm_axis", b),))
    attrs = (("epsilon", 1e-5), ("begin_norm_axis", 2))
    yield bad(mesh, [_rep(x3, mesh), None, None, stat, stat, _rep((8, 6), mesh)], attrs)  # out_grad rank
    yield bad(mesh, [_rep(x3, mesh), _rep((4,), mesh), _rep((2, 2), mesh), stat, stat, _rep(x3, mesh)], attrs)
    yield bad(mesh, [_rep(x3, mesh), None, None, stat, _rep((8,), mesh), _rep(x3, mesh)], attrs)
    yield bad(mesh, [_rep(x3, mesh), _rep((6, 4), mesh), _rep((6, 4), mesh), _rep((8,), mesh), _rep((8,), mesh),
                     _rep(x3, mesh)], (("epsilon", 1e-5), ("begin_norm_axis", 1)))  # 2-D scale: Paddle allows
    # specs without a mesh that the rule reads: Paddle answers mean [0] without a mesh / segfaults
    x_split = DistTensorSpec(x3, (0, -1, -1), mesh)
    b1 = (("epsilon", 1e-5), ("begin_norm_axis", 1))
    yield bad(mesh, [x_split, None, None, DistTensorSpec((8,), (), None), _rep((8,), mesh), _rep(x3, mesh)], b1)
    yield bad(mesh, [x_split, None, None, _rep((8,), mesh), _rep((8,), mesh), DistTensorSpec(x3, (), None)], b1)
    yield from _ln_mixed_meshes("layer_norm_grad")

# --------------------------------------------------------------------------- instance_norm, rms_norm, fast_ln
#: The ops of these grids (each rule reads x, its statistics and, for instance_norm's grad, scale's mesh).
NORM_OPS_MORE = ("instance_norm", "rms_norm", "fast_ln")
#: x ranks of each op's own grid: instance_norm 4-5 (2-3 crash Paddle: invalid set), rms_norm 1-4
#: (the grad raises for rank 1: Paddle's own error, compared), fast_ln 1-4.
_NORM_RANKS = {"instance_norm": (4, 5), "rms_norm": (1, 2, 3, 4), "fast_ln": (1, 2, 3, 4)}
EPS = (("epsilon", 1e-5),)


def norm_shapes(rule: str, x_shape: tuple[int, ...]) -> dict[str, tuple[int, ...]]:
    """Input shapes of an instance_norm / rms_norm / fast_ln rule for x of ``x_shape``: scale and
    bias ``[C]`` (instance_norm) or the last axis' size; statistics ``[N, C]`` (instance_norm) or
    ``x.shape[:-1]``; out / out_grad / y_grad like x."""
    inst = RULES[rule].op == "instance_norm"
    param = (x_shape[1],) if inst and len(x_shape) > 1 else x_shape[-1:] or (4,)
    stat = x_shape[:2] if inst else x_shape[:-1]
    shapes = {}
    for name in RULES[rule].inputs:
        shapes[name] = x_shape if name in _LIKE_X else param if name in ("scale", "bias") else stat
    return shapes


def _norm_x_probes(rank: int, mesh: ProcessMesh, inst: bool) -> list[Placement]:
    """x placements the other inputs are varied against: replicated; axis 0 split along mesh dim 0;
    the axis before the normalised one (instance_norm: C) split along the last mesh dim."""
    probes: list[Placement] = [((-1,) * rank, frozenset())]
    for axis, m in ((0, 0), (1 if inst else rank - 2, mesh.ndim - 1)):
        if 0 <= axis < rank:
            dm = [-1] * rank
            dm[axis] = m
            if tuple(dm) not in [p[0] for p in probes]:
                probes.append((tuple(dm), frozenset()))
    return probes


def _norm_grid(rule: str) -> Iterator[Case]:
    """The own grid of an instance_norm / rms_norm / fast_ln rule, on every mesh and x rank of
    :data:`_NORM_RANKS`: x through every placement, paired with out / out_grad / y_grad cycled
    through every placement (each placement once as x and once as the other: ``(7k+3) mod n``, as
    batch_norm_grad's grid pairs them; rms_norm_grad's alignment reads both, the other rules x
    only) and the statistics taken from x (rms_norm_reverse: out through every mapping with invvar
    cycled, x cycled: the rule ignores x); then every other input one at a time through every
    placement (and None where optional) against :func:`_norm_x_probes`, at the op's first
    rank of 3 or more."""
    make = _Ids(rule)
    spec = RULES[rule]
    inst = spec.op == "instance_norm"
    names = spec.inputs
    like_x = [n for n in names[1:] if n in _LIKE_X]
    for mesh_shape in MESH_SHAPES:
        mesh = mesh_of(mesh_shape)
        for rank in _NORM_RANKS[spec.op]:
            x_shape = X_SHAPES[rank]
            shapes = norm_shapes(rule, x_shape)
            all_pl = placements(rank, mesh.ndim)
            reps = {n: _rep(shapes[n], mesh) for n in names}
            for k, pl in enumerate(all_pl):
                other = all_pl[(k * 7 + 3) % len(all_pl)]
                pairs = ((pl, other), (other, pl)) if like_x else ((pl, other),)
                for x_pl, o_pl in pairs:
                    tensors: dict[str, DistTensorSpec | None] = {**reps, "x": _spec(x_shape, x_pl, mesh)}
                    for n in like_x:
                        tensors[n] = _spec(x_shape, o_pl, mesh)
                    if spec.direction == "reverse":  # the statistics from out: x is not read
                        tensors["invvar"] = _spec(shapes["invvar"], (o_pl[0][:-1], frozenset()), mesh)
                    else:
                        for n in names:
                            if n in ("saved_mean", "saved_variance", "mean", "invvar"):
                                tensors[n] = _spec(shapes[n], (x_pl[0][:len(shapes[n])], frozenset()), mesh)
                    yield make(mesh, [tensors[n] for n in names], EPS)
            if rank != next(r for r in _NORM_RANKS[spec.op] if r >= 3):
                continue
            side = [n for n in names[1:] if n not in _LIKE_X]
            optional = [n for n in side if n in spec.optional]
            for xp in _norm_x_probes(rank, mesh, inst):
                base = {n: _spec(x_shape, xp, mesh) for n in like_x}
                for variant in _one_at_a_time(side, shapes, mesh, optional)[1:]:
                    tensors = {"x": _spec(x_shape, xp, mesh), **base, **variant}
                    yield make(mesh, [tensors[n] for n in names], EPS)
                if spec.direction == "reverse":  # invvar against each out mapping of the probe's kind
                    for inv in placements(rank - 1, mesh.ndim):
                        tensors = {**reps, "out": _spec(x_shape, xp, mesh),
                                   "invvar": _spec(shapes["invvar"], inv, mesh)}
                        yield make(mesh, [tensors[n] for n in names], EPS)


#: x mappings of the rms_norm / fast_ln mixed-mesh sets (x [8,6,4]): layer_norm's and a few more,
#: as these rules have one or two other tensors to move.
_NORM_MIXED_X = {2: _LN_MIXED_X[2] + ((1, 0, -1), (-1, 0, -1)), 1: _LN_MIXED_X[1] + ((-1, 0, -1),)}


def _norm_mixed_meshes(rule: str) -> Iterator[Case]:
    """The mixed-mesh sets (see :func:`_mixed_meshes`): x [8,6,4,4] (instance_norm) or [8,6,4]."""
    rank = 4 if RULES[rule].op == "instance_norm" else 3
    x_maps = _BN_MIXED_X if rank == 4 else _NORM_MIXED_X
    yield from _mixed_meshes(rule, [(norm_shapes(rule, X_SHAPES[rank]), EPS)], x_maps)


def _norm_invalid(rule: str) -> Iterator[Case]:
    """Per rule, on 2x3: ranks Paddle rejects or crashes on, statistics / scale of the wrong rank,
    x mappings Paddle does not validate (a mesh dim twice, out of range, shorter than the rank),
    x without a mesh, and each rule's own crash inputs (instance_norm: a 2-D / 3-D x, SIGABRT;
    its grad: scale None while N or C is split, SIGSEGV; rms_norm: a None scale, Paddle's check)."""
    bad = _Ids(rule, "invalid")
    spec = RULES[rule]
    names = spec.inputs
    mesh = mesh_of((2, 3))
    rank = 4 if spec.op == "instance_norm" else 3
    x_shape = X_SHAPES[rank]
    shapes = norm_shapes(rule, x_shape)
    base: dict[str, DistTensorSpec | None] = {n: _rep(shapes[n], mesh) for n in names}
    variants: list[dict[str, DistTensorSpec | None]] = []
    x_ranks = (1, 2, 3, 6) if spec.op == "instance_norm" else (0,) if spec.op == "fast_ln" else (0, 1)
    for r in x_ranks:  # ranks Paddle rejects (instance_norm 1, 6) or crashes on / answers garbage for
        other_shapes = norm_shapes(rule, X_SHAPES.get(r, (8, 6, 4, 4, 2, 2)) if r else ())
        variants.append({n: _rep(other_shapes[n], mesh) for n in names})
    for n in names[1:]:
        if n in _LIKE_X:
            variants.append({n: _rep(x_shape[:-1], mesh)})  # rank != x's
        else:
            variants.append({n: _rep(shapes[n] + (2,), mesh)})  # one axis too many
    split = (0,) + (-1,) * (rank - 1)
    variants += [{"x": DistTensorSpec(x_shape, (0, 0) + (-1,) * (rank - 2), mesh)},
                 {"x": DistTensorSpec(x_shape, (-1, 2) + (-1,) * (rank - 2), mesh)},
                 {"x": DistTensorSpec(x_shape, split[:-1], mesh)},
                 {"x": DistTensorSpec(x_shape, (), None)}]
    if "scale" in spec.optional:
        variants.append({"x": DistTensorSpec(x_shape, split, mesh), "scale": None})
    for variant in variants:
        tensors = {**base, **variant}
        yield bad(mesh, [tensors[n] for n in names], EPS)


def _norm_rule_grid(rule: str) -> Callable[[], Iterator[Case]]:
    def grid() -> Iterator[Case]:
        yield from _norm_grid(rule)
        yield from _norm_mixed_meshes(rule)
        yield from _norm_invalid(rule)
    grid.__name__ = f"_grid_{rule}"
    grid.__doc__ = f"{rule}: :func:`_norm_grid`, :func:`_norm_mixed_meshes`, :func:`_norm_invalid`."
    return grid


_grid_instance_norm = _norm_rule_grid("instance_norm")
_grid_instance_norm_grad = _norm_rule_grid("instance_norm_grad")
_grid_rms_norm = _norm_rule_grid("rms_norm")
_grid_rms_norm_reverse = _norm_rule_grid("rms_norm_reverse")
_grid_rms_norm_grad = _norm_rule_grid("rms_norm_grad")
_grid_fast_ln = _norm_rule_grid("fast_ln")
_grid_fast_ln_grad = _norm_rule_grid("fast_ln_grad")


# --------------------------------------------------------------------------- group_norm
#: x ranks of the group_norm grids: the three the rules answer (3-5); 2 and 6 are in the corner set.
_GN_RANKS = (3, 4, 5)


def gn_groups(channels: int) -> tuple[int, int]:
    """(a groups count that divides C, one that does not) -- the rules read neither."""
    return 2 if channels % 2 == 0 else 1, next(g for g in (4, 3, 5) if channels % g)


def gn_shapes(rule: str, x_shape: tuple[int, ...], attrs: MappingOf[str, object]) -> dict[str, tuple[int, ...]]:
    """Input shapes of a group_norm rule: scale and bias ``[C]`` (C on axis 1, or the last axis for a
    channel-last data_format), mean and variance ``[N, groups]``, y and y_grad like x."""
    channel_last = str(attrs.get("data_format", "NCHW"))[1:2] != "C"
    channels = x_shape[-1] if channel_last else x_shape[1]
    groups = int(attrs.get("groups", gn_groups(channels)[0]))  # type: ignore[call-overload]
    stat = (x_shape[0], groups if groups > 0 else 1)
    return {n: x_shape if n in ("x", "y", "y_grad") else stat if n in ("mean", "variance") else (channels,)
            for n in RULES[rule].inputs}


def _gn_attr_variants(rule: str, rank: int) -> list[tuple[tuple[str, object], ...]]:
    """Every group_norm layout of ``rank`` axes x (groups dividing C, groups not dividing C); one
    empty variant for the Base rules, which take no attribute."""
    if not RULES[rule].attrs:
        return [()]
    out: list[tuple[tuple[str, object], ...]] = []
    for fmt in (f for f in GN_DATA_FORMATS if len(f) == rank):
        channels = X_SHAPES[rank][-1 if fmt[1] != "C" else 1]
        out += [(("epsilon", 1e-5), ("groups", g), ("data_format", fmt)) for g in gn_groups(channels)]
    return out


def _gn_grid(rule: str) -> Iterator[Case]:
    """The own grid of a group_norm rule, on every mesh and x rank 3-5: x through every placement,
    the attribute variants (:func:`_gn_attr_variants`) cycled along them; grad: y and y_grad
    cycled through the placements (placement ``(7k+3) mod n`` with x's k-th: the rules read only
    x), mean and variance ``[x's axis-0 dim, -1]``. Then, at rank 4 with the first attribute
    variant, scale, bias (and mean, variance) one at a time through every placement and None where
    optional, against x replicated, split on axis 0 along each mesh dim, and split on C along the
    last."""
    make = _Ids(rule)
    spec = RULES[rule]
    names = spec.inputs
    like_x = [n for n in names[1:] if n in ("y", "y_grad")]
    for mesh_shape in MESH_SHAPES:
        mesh = mesh_of(mesh_shape)
        for rank in _GN_RANKS:
            x_shape = X_SHAPES[rank]
            variants = _gn_attr_variants(rule, rank)
            all_pl = placements(rank, mesh.ndim)
            for k, pl in enumerate(all_pl):
                attrs = variants[k % len(variants)]
                shapes = gn_shapes(rule, x_shape, dict(attrs))
                reps = {n: _rep(shapes[n], mesh) for n in names}
                tensors: dict[str, DistTensorSpec | None] = {**reps, "x": _spec(x_shape, pl, mesh)}
                for n in like_x:
                    tensors[n] = _spec(x_shape, all_pl[(k * 7 + 3) % len(all_pl)], mesh)
                for n in ("mean", "variance"):
                    if n in names:
                        tensors[n] = DistTensorSpec(shapes[n], (pl[0][0], -1), mesh)
                yield make(mesh, [tensors[n] for n in names], attrs)
            if rank != 4:
                continue
            attrs = variants[0]
            shapes = gn_shapes(rule, x_shape, dict(attrs))
            side = [n for n in names[1:] if n not in like_x]
            probes = _norm_x_probes(rank, mesh, inst=True)
            probes += [(tuple(m if i == 0 else -1 for i in range(rank)), frozenset()) for m in range(1, mesh.ndim)]
            for xp in probes:
                base = {n: _spec(x_shape, xp, mesh) for n in like_x}
                for variant in _one_at_a_time(side, shapes, mesh, [n for n in side if n in spec.optional])[1:]:
                    tensors = {"x": _spec(x_shape, xp, mesh), **base, **variant}
                    yield make(mesh, [tensors[n] for n in names], attrs)


def _gn_invalid(rule: str) -> Iterator[Case]:
    """On 2x3, x [8,6,4,4]: ranks Paddle rejects (x 1, 2, 6; scale / bias 2-D; grad: y / y_grad of
    another rank than x's, mean / variance not 2-D), x mappings Paddle does not validate (a mesh dim
    twice, out of range, shorter than the rank: SIGABRT), x without a mesh (SIGSEGV, or an answer
    on an attr without a mesh); grad: scale or bias None or without a mesh while x's axis 0 is split
    (SIGSEGV), y / mean without a mesh while it is split (an answer naming a mesh dim on an attr
    without a mesh). With attributes: groups 0 and -1, data_format "zz", "" and a layout of another
    rank -- outside the op's contract, answered alike by Paddle's rules and the port."""
    bad = _Ids(rule, "invalid")
    names = RULES[rule].inputs
    mesh = mesh_of((2, 3))
    x_shape = X_SHAPES[4]
    attrs = _gn_attr_variants(rule, 4)[0]
    shapes = gn_shapes(rule, x_shape, dict(attrs))
    base: dict[str, DistTensorSpec | None] = {n: _rep(shapes[n], mesh) for n in names}
    split = DistTensorSpec(x_shape, (0, -1, -1, -1), mesh)
    variants: list[dict[str, DistTensorSpec | None]] = []
    for r in (1, 2, 6):
        shape = X_SHAPES.get(r, (8, 6, 4, 4, 2, 2))
        variants.append({n: _rep(shape, mesh) for n in names if n in ("x", "y", "y_grad")})
    variants += [{"scale": _rep((6, 1), mesh)}, {"bias": _rep((6, 1), mesh)}]
    if "y" in names:
        variants += [{"y": _rep(x_shape[:-1], mesh)}, {"y_grad": _rep(x_shape + (2,), mesh)},
                     {"mean": _rep((8,), mesh)}, {"variance": _rep((8, 2, 1), mesh)}]
    variants += [{"x": DistTensorSpec(x_shape, (0, 0, -1, -1), mesh)},
                 {"x": DistTensorSpec(x_shape, (-1, 2, -1, -1), mesh)},
                 {"x": DistTensorSpec(x_shape, (2, -1, -1, -1), mesh)},
                 {"x": DistTensorSpec(x_shape, (0, -1, -1), mesh)},
                 {"x": DistTensorSpec(x_shape, (), None)},
                 {"x": DistTensorSpec(x_shape, (0, -1, -1, -1), None)}]
    if "y" in names:
        variants += [{"x": split, "scale": None}, {"x": split, "bias": None},
                     {"x": split, "scale": DistTensorSpec((6,), (), None)},
                     {"x": split, "y": DistTensorSpec(x_shape, (), None)},
                     {"x": split, "mean": DistTensorSpec((8, 2), (), None)}]
    for variant in variants:
        tensors = {**base, **variant}
        yield bad(mesh, [tensors[n] for n in names], attrs)
    if attrs:
        for odd in ((("groups", 0),), (("groups", -1),), (("data_format", "zz"),), (("data_format", ""),),
                    (("data_format", "NCL"),)):
            yield bad(mesh, [split] + [base[n] for n in names[1:]], tuple({**dict(attrs), **dict(odd)}.items()))


#: x mappings of the group_norm mixed-mesh sets, per mesh ndim (x [8,6,4,4]): axis 0 split along the
#: last mesh dim (which a mesh of fewer dims lacks), along mesh dim 0, or nothing split.
_GN_MIXED_X = {3: ((2, -1, -1, -1), (-1, 1, -1, 0)), 2: ((1, 0, -1, -1), (0, -1, -1, 1), (-1, -1, -1, -1)),
               1: ((0, -1, -1, -1), (-1, 0, -1, -1))}


def _gn_rule_grid(rule: str) -> Callable[[], Iterator[Case]]:
    def grid() -> Iterator[Case]:
        yield from _gn_grid(rule)
        attrs = _gn_attr_variants(rule, 4)[0]
        yield from _mixed_meshes(rule, [(gn_shapes(rule, X_SHAPES[4], dict(attrs)), attrs)], _GN_MIXED_X,
                                 ((2, 3), (2,), (2, 2, 2)))
        yield from _gn_invalid(rule)
    grid.__name__ = f"_grid_{rule}"
    grid.__doc__ = f"{rule}: :func:`_gn_grid`, the mixed-mesh sets (x [8,6,4,4] on 2x3, 2, 2x2x2), :func:`_gn_invalid`."
    return grid


_grid_group_norm = _gn_rule_grid("group_norm")
_grid_group_norm_base = _gn_rule_grid("group_norm_base")
_grid_group_norm_grad = _gn_rule_grid("group_norm_grad")
_grid_group_norm_grad_base = _gn_rule_grid("group_norm_grad_base")


GRIDS = {
    "batch_norm_static": _grid_batch_norm_static,
    "batch_norm": _grid_batch_norm,
    "batch_norm_grad": _grid_batch_norm_grad,
    "sync_batch_norm": _grid_sync_batch_norm,
    "sync_batch_norm_grad": _grid_sync_batch_norm_grad,
    "layer_norm": _grid_layer_norm,
    "layer_norm_reverse": _grid_layer_norm_reverse,
    "layer_norm_grad": _grid_layer_norm_grad,
    "instance_norm": _grid_instance_norm,
    "instance_norm_grad": _grid_instance_norm_grad,
    "rms_norm": _grid_rms_norm,
    "rms_norm_reverse": _grid_rms_norm_reverse,
    "rms_norm_grad": _grid_rms_norm_grad,
    "fast_ln": _grid_fast_ln,
    "fast_ln_grad": _grid_fast_ln_grad,
    "group_norm": _grid_group_norm,
    "group_norm_base": _grid_group_norm_base,
    "group_norm_grad": _grid_group_norm_grad,
    "group_norm_grad_base": _grid_group_norm_grad_base,
}


def grid_for(rule: str) -> Iterator[Case]:
    """Every case of ``rule``'s grid, in a fixed order: its own grid, then its co-shard set."""
    try:
        own = GRIDS[rule]()
    except KeyError:
        raise ValueError(f"no grid for rule {rule!r}; choose one of {', '.join(GRIDS)}") from None
    return itertools.chain(own, coshard_cases(rule))


# --------------------------------------------------------------------------- co-sharded inputs
#: Meshes of the co-shard set: 2-D and 3-D, even and uneven (the mesh dim that survives Paddle's
#: fallback depends on the sizes: docs/coshard-3.3.1.md).
COSHARD_MESH_SHAPES: tuple[tuple[int, ...], ...] = ((2, 2), (2, 3), (3, 2), (2, 2, 2), (2, 3, 2))
#: batch_norm layouts of the co-shard set: channel first and channel last.
COSHARD_FORMATS = ("NCHW", "NHWC")


@cache
def coshard_mappings(rank: int, mesh_ndim: int) -> tuple[Mapping, ...]:
    """Every dims_mapping of ``rank`` entries that splits some axis along two or more mesh dims:
    each mesh dim on at most one axis, the dims of an axis in every order. On a 2-D mesh, rank 2::

        ((0,1),-1)  ((1,0),-1)  (-1,(0,1))  (-1,(1,0))
    """
    out: list[Mapping] = []
    for owner in itertools.product(range(-1, rank), repeat=mesh_ndim):  # owner[m]: the axis mesh dim m splits
        groups = [[m for m in range(mesh_ndim) if owner[m] == axis] for axis in range(rank)]
        if max(map(len, groups), default=0) < 2:
            continue
        for orders in itertools.product(*(itertools.permutations(g) for g in groups)):
            out.append(tuple(entry_of(o) for o in orders))
    return tuple(out)


def coshard_placements(rank: int, mesh_ndim: int) -> Iterator[tuple[Mapping, frozenset[int]]]:
    """:func:`coshard_mappings`, each with partial over every subset of the mesh dims it leaves free."""
    for dm in coshard_mappings(rank, mesh_ndim):
        used = {m for e in dm for m in mesh_dims_of(e)}
        free = [m for m in range(mesh_ndim) if m not in used]
        for k in range(len(free) + 1):
            for subset in itertools.combinations(free, k):
                yield dm, frozenset(subset)


def input_shapes(rule: str, x_shape: tuple[int, ...], attrs: MappingOf[str, object]) -> dict[str, tuple[int, ...]]:
    """Each input's shape for an x of ``x_shape`` (the shapes a real call passes): per channel
    ``[C]`` for the batch_norm family, ``x.shape[:b]`` for layer_norm's statistics, and the size of
    the normalised axes for its scale and bias."""
    names = RULES[rule].inputs
    if RULES[rule].op in ("batch_norm", "sync_batch_norm"):
        c = channel_axis(str(attrs.get("data_format", "NCHW")), len(x_shape))
        return {n: x_shape if n in _LIKE_X else (x_shape[c],) for n in names}
    if RULES[rule].op in NORM_OPS_MORE:
        return norm_shapes(rule, x_shape)
    if RULES[rule].op == "group_norm":
        return gn_shapes(rule, x_shape, attrs)
    b = int(attrs["begin_norm_axis"])  # type: ignore[call-overload]
    return {n: x_shape if n in _LIKE_X else x_shape[:b] if n in ("mean", "variance") else (math.prod(x_shape[b:]),)
            for n in names}


_LIKE_X = frozenset({"x", "out", "out_grad", "y_grad"})


def _coshard_attr_variants(rule: str, rank: int) -> list[dict[str, object]]:
    if RULES[rule].op == "layer_norm":
        return [{"epsilon": 1e-5, "begin_norm_axis": b} for b in range(rank + 1)]
    if RULES[rule].op == "group_norm":
        return [{}]  # the rules read no attribute; their own grid has every layout and groups
    if any(name == "data_format" for name, _ in RULES[rule].attrs):
        return [{"data_format": fmt} for fmt in COSHARD_FORMATS]
    return [{}]  # batch_norm_static: NCHW, no attribute


#: x ranks of the co-shard set per op (batch_norm's 2-4 otherwise): the ranks each rule answers
#: (instance_norm: 4; rms_norm_grad raises below 2, so rms_norm's start at 2).
_COSHARD_RANKS = {"layer_norm": range(1, 4), "fast_ln": range(1, 4), "rms_norm": range(2, 4),
                  "instance_norm": range(4, 5), "group_norm": range(3, 4)}


def coshard_cases(rule: str) -> Iterator[Case]:
    """The co-shard set (ids ``<rule>-coshard-<n>``), on every mesh of :data:`COSHARD_MESH_SHAPES`
    and x ranks batch_norm 2-4, layer_norm 1-3 (instance_norm 4, rms_norm 2-3, fast_ln 1-3, group_norm 3;
    rank 5 / 4 would add 3x the cases: the fallback is
    per axis, so more axes add no new way to fall back), for every attribute variant
    (begin_norm_axis 0..rank; data_format NCHW and NHWC; group_norm: the defaults, its rules read
    no attribute):

    * x through every co-shard mapping, with partial over every subset of the mesh dims left free;
      the other inputs replicated (out_grad: replicated, and again with x's mapping);
    * every other input of rank >= 1, one at a time, through every co-shard mapping of its rank,
      x replicated;

    then ``<rule>-coshard-invalid-<n>`` (a corner set, kept by :func:`sample`): on 2x3, a partial
    dim that is also a co-shard member, a member listed twice, a member outside the mesh, ``-1``
    inside a co-shard, and a member that also splits another axis.
    """
    make = _Ids(rule, "coshard")
    names = RULES[rule].inputs
    ranks = _COSHARD_RANKS.get(RULES[rule].op, range(2, 5))
    for mesh_shape in COSHARD_MESH_SHAPES:
        mesh = mesh_of(mesh_shape)
        for rank in ranks:
            x_shape = X_SHAPES[rank]
            for attrs in _coshard_attr_variants(rule, rank):
                shapes = input_shapes(rule, x_shape, attrs)
                reps = {n: _rep(shapes[n], mesh) for n in names}
                attr_items = tuple(attrs.items())
                for dm, partial in coshard_placements(rank, mesh.ndim):
                    x = DistTensorSpec(x_shape, dm, mesh, partial)
                    yield make(mesh, [x] + [reps[n] for n in names[1:]], attr_items)
                    if "out_grad" in names and not partial:
                        with_og = {**reps, "x": x, "out_grad": DistTensorSpec(x_shape, dm, mesh)}
                        yield make(mesh, [with_og[n] for n in names], attr_items)
                for name in names[1:]:
                    for dm in coshard_mappings(len(shapes[name]), mesh.ndim):
                        one = {**reps, name: DistTensorSpec(shapes[name], dm, mesh)}
                        yield make(mesh, [one[n] for n in names], attr_items)
    bad = _Ids(rule, "coshard-invalid")
    mesh = mesh_of((2, 3))
    rank = 3 if RULES[rule].op in ("layer_norm", "rms_norm", "fast_ln") else 4
    x_shape = X_SHAPES[rank]
    attrs = _coshard_attr_variants(rule, rank)[1 if RULES[rule].op == "layer_norm" else 0]
    shapes = input_shapes(rule, x_shape, attrs)
    reps = {n: _rep(shapes[n], mesh) for n in names}
    tail = (-1,) * (rank - 1)
    invalid: tuple[tuple[Mapping, tuple[int, ...]], ...] = (
        (((0, 1),) + tail, (1,)), (((0, 1),) + tail, (0,)), (((0, 0),) + tail, ()), (((0, 2),) + tail, ()),
        (((-1, 0),) + tail, ()), (((0, 1), 1) + tail[1:], ()))
    for dm, partial_dims in invalid:
        x = DistTensorSpec(x_shape, dm, mesh, frozenset(partial_dims))
        yield bad(mesh, [x] + [reps[n] for n in names[1:]], tuple(attrs.items()))


def sample(cases: Sequence[Case], n: int, seed: int = 0, corners: bool = True) -> list[Case]:
    """A deterministic sample of ``n`` cases (all of them when ``n >= len(cases)``), grid order kept,
    plus every corner case (:func:`is_corner`: the invalid and mixed-mesh sets) the draw left out,
    unless ``corners=False``. The draw itself does not depend on ``corners``."""
    if n >= len(cases):
        return list(cases)
    picked = set(random.Random(seed).sample(range(len(cases)), n))
    if corners:
        picked.update(i for i, case in enumerate(cases) if is_corner(case))
    return [cases[i] for i in sorted(picked)]
