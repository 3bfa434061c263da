"""The exhaustive case grid of every rule, and deterministic sampling from it.

Axes of the grid (per rule, see each ``_grid_*``)::

    meshes            (2,) (4,) (2,2) (2,3) (2,2,2)
    x                 every valid dims_mapping x every subset of the remaining mesh dims as
                      Partial(SUM) -- all of them, for every rank the op takes
    attributes        every begin_norm_axis 0..ndim; every batch_norm data_format
    other tensors     every valid (dims_mapping, partial) of each one, None where optional;
                      varied one tensor at a time around the all-replicated default, plus
                      full products where the rule actually reads the tensor (LN reverse:
                      out x mean; LN grad: x x out_grad)
    invalid input     a fixed set per rule (ranks Paddle rejects, mappings it does not
                      validate, begin_norm_axis out of range, x without mesh, ...)

"Valid dims_mapping": one entry per axis, each -1 or a mesh dim, no mesh dim twice.
Sizes are printed by ``python -m paddle_spmd_port parity --list``.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Iterator, Sequence
from functools import cache

from ..types import DistTensorSpec, ProcessMesh
from .case import Case
from .rulebook import RULES

MESH_SHAPES: tuple[tuple[int, ...], ...] = ((2,), (4,), (2, 2), (2, 3), (2, 2, 2))
BN_DATA_FORMATS = ("NC", "NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC")
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
    ids, names = _MESH_IDS_AND_NAMES.get(shape, (None, None))
    return ProcessMesh(shape, ids, names)


def _spec(shape: Sequence[int], placement: Placement, mesh: ProcessMesh) -> DistTensorSpec:
    return DistTensorSpec(tuple(shape), placement[0], mesh, placement[1])


def _rep(shape: Sequence[int], mesh: ProcessMesh) -> DistTensorSpec:
    return DistTensorSpec(tuple(shape), (-1,) * len(shape), mesh)


def _one_at_a_time(names: Sequence[str], shapes: dict[str, tuple[int, ...]], mesh: ProcessMesh,
                   optional: Iterable[str]) -> list[dict[str, DistTensorSpec | None]]:
    """Variants of the secondary tensors: all replicated; then each tensor alone takes every
    (mapping, partial) it can have, or None if optional; then every optional one None together."""
    base = {n: _rep(shapes[n], mesh) for n in names}
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


class _Ids:
    """Makes cases of one rule numbered ``<rule>-<n>`` (``<rule>-invalid-<n>`` for the invalid set)."""

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
                c = 1 if fmt == "" or fmt[1] == "C" else rank - 1
                shapes = {n: (x_shape[c],) for n in names}
                # x: every placement, the others replicated
                for pl in placements(rank, mesh.ndim):
                    yield make(mesh, [_spec(x_shape, pl, mesh)] + [_rep(shapes[n], mesh) for n in names], attrs)
                # the others: one at a time, against a few x placements (C split, N split, none)
                x_probe = [((-1,) * rank, frozenset())]
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


def _bn_mixed_meshes(rule: str, with_format: bool) -> Iterator[Case]:
    """mean/variance/scale on other meshes than x: each returned attr copies its own source's mesh."""
    make = _Ids(rule, "mixed-mesh")
    mesh, other = mesh_of((2, 3)), ProcessMesh((3, 2), (5, 4, 3, 2, 1, 0), ("a", "b"))
    attrs = (("data_format", "NCHW"),) if with_format else ()
    for x_dm in ((0, 1, -1, -1), (-1, 0, -1, 1), (-1, -1, -1, -1)):
        x = DistTensorSpec(X_SHAPES[4], x_dm, mesh)
        for odd in range(4):
            stats = [_rep((6,), other if k == odd else mesh) for k in range(4)]
            yield make(mesh, [x, *stats], attrs)


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
                c = 1 if fmt[1] == "C" else rank - 1
                shapes = {n: (x_shape[c],) for n in side}
                attrs = (("data_format", fmt),)
                reps = {n: _rep(shapes[n], mesh) for n in side}
                for k, pl in enumerate(all_pl):
                    og = all_pl[(k * 7 + 3) % len(all_pl)]
                    for x_pl, og_pl in ((pl, og), (og, pl)):
                        tensors = {"x": _spec(x_shape, x_pl, mesh), "out_grad": _spec(x_shape, og_pl, mesh), **reps}
                        yield make(mesh, [tensors[n] for n in names], attrs)
                x_probe = [((-1,) * rank, frozenset())] + [
                    (tuple(m if a == c else -1 for a in range(rank)), frozenset()) for m in range(mesh.ndim)]
                optional = [n for n in ("scale", "bias", "reserve_space") if n in side]
                for xp in x_probe:
                    for variant in _one_at_a_time(side, shapes, mesh, optional)[1:]:
                        tensors = {"x": _spec(x_shape, xp, mesh), "out_grad": _spec(x_shape, xp, mesh), **variant}
                        yield make(mesh, [tensors[n] for n in names], attrs)


def _grid_batch_norm_grad() -> Iterator[Case]:
    yield from _bn_grad("batch_norm_grad", RULES["batch_norm_grad"].inputs, BN_DATA_FORMATS)


def _grid_sync_batch_norm_grad() -> Iterator[Case]:
    yield from _bn_grad("sync_batch_norm_grad", RULES["sync_batch_norm_grad"].inputs, ("NCHW", "NHWC"))


# --------------------------------------------------------------------------- layer_norm family
def _ln_side_variants(mesh: ProcessMesh, size: int) -> list[tuple[DistTensorSpec | None, DistTensorSpec | None]]:
    """(scale, bias): each alone through every placement and None, then both None."""
    shapes = {"scale": (size,), "bias": (size,)}
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
    mixed = _Ids("layer_norm", "mixed-mesh")  # scale/bias on another mesh: each attr keeps its own
    mesh, other = mesh_of((2, 3)), ProcessMesh((3, 2), (5, 4, 3, 2, 1, 0), ("a", "b"))
    for b in (1, 2):
        for x_dm in ((0, 1, -1), (1, -1, 0), (-1, -1, -1)):
            scale = DistTensorSpec((_ln_norm_size(X_SHAPES[3], b),), (0,), other)
            yield mixed(mesh, [DistTensorSpec(X_SHAPES[3], x_dm, mesh), scale, None],
                        (("epsilon", 1e-5), ("begin_norm_axis", b)))
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
                out_pl = (out_dm, frozenset())
                mean_pl = (mean_dm, frozenset())
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


GRIDS = {
    "batch_norm_static": _grid_batch_norm_static,
    "batch_norm": _grid_batch_norm,
    "batch_norm_grad": _grid_batch_norm_grad,
    "sync_batch_norm": _grid_sync_batch_norm,
    "sync_batch_norm_grad": _grid_sync_batch_norm_grad,
    "layer_norm": _grid_layer_norm,
    "layer_norm_reverse": _grid_layer_norm_reverse,
    "layer_norm_grad": _grid_layer_norm_grad,
}


def grid_for(rule: str) -> Iterator[Case]:
    """Every case of ``rule``'s grid, in a fixed order."""
    try:
        return GRIDS[rule]()
    except KeyError:
        raise ValueError(f"no grid for rule {rule!r}; choose one of {', '.join(GRIDS)}") from None


def sample(cases: Sequence[Case], n: int, seed: int = 0) -> list[Case]:
    """A deterministic sample of ``n`` cases (all of them when ``n >= len(cases)``), order kept."""
    if n >= len(cases):
        return list(cases)
    picked = sorted(random.Random(seed).sample(range(len(cases)), n))
    return [cases[i] for i in picked]
