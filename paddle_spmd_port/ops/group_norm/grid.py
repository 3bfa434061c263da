"""group_norm's parity grid.

::

    x rank        3-5, the three the rules answer (1, 2 and 6 are in the invalid set)
    x             every placement once, the 4 (data_format, groups) variants of its rank and
                  (grad) the y / y_grad placement cycled along them: the rules read x's mapping only
    the others    at rank 4 with the first attribute variant, scale, bias (and mean, variance) one
                  at a time through every placement and None where optional, against x
                  replicated, split on axis 0 along each mesh dim, and split on C along the last
    corner sets   invalid (see ``_invalid``); mixed meshes with x [8,6,4,4] on 2x3, 2 and 2x2x2
    co-shard set  x rank 3, the defaults (the rules read no attribute; the own grid has every
                  layout and groups)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from ...types import DistTensorSpec
from .. import FAMILIES, RULES
from ..kit.grid import (
    GRAD_RANKS,
    MESH_SHAPES,
    X_SHAPES,
    BadAttr,
    CaseNumbering,
    CoshardPlan,
    GridCase,
    GridFn,
    GridPlan,
    RandomPlan,
    RankOf,
    bad_data_format,
    bad_epsilon,
    choice_draw,
    mesh_of,
    mixed_meshes,
    no_attr_variants,
    norm_x_probes,
    one_at_a_time,
    placed_spec,
    placements,
    rep,
)
from ..kit.layout import DATA_FORMATS as RANDOM_DATA_FORMATS
from . import DATA_FORMATS

#: x ranks of the grids.
_RANKS = (3, 4, 5)
AttrItems = tuple[tuple[str, object], ...]


def groups_for(channels: int) -> tuple[int, int]:
    """(a groups count that divides C, one that does not) -- the rules read neither."""
    return 2 if channels % 2 == 0 else 1, next(g for g in (4, 3, 5) if channels % g)


def input_shapes(rule: str, x_shape: tuple[int, ...], attrs: Mapping[str, object]) -> dict[str, tuple[int, ...]]:
    """scale and bias ``[C]`` (C on axis 1, or the last axis for a channel-last data_format), mean
    and variance ``[N, groups]``, y and y_grad like x."""
    channel_last = str(attrs.get("data_format", "NCHW"))[1:2] != "C"
    channels = x_shape[-1] if channel_last else x_shape[1]
    groups = int(attrs.get("groups", groups_for(channels)[0]))  # type: ignore[call-overload]
    stat = (x_shape[0], groups if groups > 0 else 1)
    return {n: x_shape if n in ("x", "y", "y_grad") else stat if n in ("mean", "variance") else (channels,)
            for n in RULES[rule].inputs}


def _attr_variants(rule: str, rank: int) -> list[AttrItems]:
    """Every layout of ``rank`` axes x (groups dividing C, groups not dividing C); one empty
    variant for the Base rules, which take no attribute."""
    if not RULES[rule].attrs:
        return [()]
    out: list[AttrItems] = []
    for fmt in (f for f in DATA_FORMATS if len(f) == rank):
        channels = X_SHAPES[rank][-1 if fmt[1] != "C" else 1]
        out += [(("epsilon", 1e-5), ("groups", g), ("data_format", fmt)) for g in groups_for(channels)]
    return out


def _own_grid(rule: str) -> Iterator[GridCase]:
    """The own grid of a rule (module docstring); grad: y and y_grad cycled through the
    placements (placement ``(7k+3) mod n`` with x's k-th), mean and variance ``[x's axis-0 dim, -1]``."""
    make = CaseNumbering(rule)
    rspec = RULES[rule]
    names = rspec.inputs
    like_x = [n for n in names[1:] if n in ("y", "y_grad")]
    for mesh_shape in MESH_SHAPES:
        mesh = mesh_of(mesh_shape)
        for rank in _RANKS:
            x_shape = X_SHAPES[rank]
            variants = _attr_variants(rule, rank)
            all_pl = placements(rank, mesh.ndim)
            for k, pl in enumerate(all_pl):
                attrs = variants[k % len(variants)]
                shapes = input_shapes(rule, x_shape, dict(attrs))
                reps = {n: rep(shapes[n], mesh) for n in names}
                tensors: dict[str, DistTensorSpec | None] = {**reps, "x": placed_spec(x_shape, pl, mesh)}
                for n in like_x:
                    tensors[n] = placed_spec(x_shape, all_pl[(k * 7 + 3) % len(all_pl)], mesh)
                for n in ("mean", "variance"):
                    if n in names:
                        tensors[n] = DistTensorSpec(shapes[n], (pl[0][0], -1), mesh)
                yield make(mesh, [tensors[n] for n in names], attrs)
            if rank != 4:
                continue
            attrs = variants[0]
            shapes = input_shapes(rule, x_shape, dict(attrs))
            side = [n for n in names[1:] if n not in like_x]
            probes = norm_x_probes(rank, mesh, True)
            probes += [(tuple(m if i == 0 else -1 for i in range(rank)), frozenset()) for m in range(1, mesh.ndim)]
            for xp in probes:
                base = {n: placed_spec(x_shape, xp, mesh) for n in like_x}
                for variant in one_at_a_time(side, shapes, mesh, [n for n in side if n in rspec.optional])[1:]:
                    tensors = {"x": placed_spec(x_shape, xp, mesh), **base, **variant}
                    yield make(mesh, [tensors[n] for n in names], attrs)


def _invalid(rule: str) -> Iterator[GridCase]:
    """On 2x3, x [8,6,4,4]: ranks Paddle rejects (x 1, 2, 6; scale / bias 2-D; grad: y / y_grad of
    another rank than x's, mean / variance not 2-D), x mappings Paddle does not validate (a mesh dim
    twice, out of range, shorter than the rank: SIGABRT), x without a mesh (SIGSEGV, or an answer
    on an attr without a mesh); grad: scale or bias None or without a mesh while x's axis 0 is split
    (SIGSEGV), y / mean without a mesh while it is split (an answer naming a mesh dim on an attr
    without a mesh). With attributes: groups 0 and -1, data_format "zz", "" and a layout of another
    rank -- outside the op's contract, answered alike by Paddle's rules and the port."""
    bad = CaseNumbering(rule, "invalid")
    names = RULES[rule].inputs
    mesh = mesh_of((2, 3))
    x_shape = X_SHAPES[4]
    attrs = _attr_variants(rule, 4)[0]
    shapes = input_shapes(rule, x_shape, dict(attrs))
    base: dict[str, DistTensorSpec | None] = {n: rep(shapes[n], mesh) for n in names}
    split = DistTensorSpec(x_shape, (0, -1, -1, -1), mesh)
    variants: list[dict[str, DistTensorSpec | None]] = []
    for r in (1, 2, 6):
        shape = X_SHAPES.get(r, (8, 6, 4, 4, 2, 2))
        variants.append({n: rep(shape, mesh) for n in names if n in ("x", "y", "y_grad")})
    variants += [{"scale": rep((6, 1), mesh)}, {"bias": rep((6, 1), mesh)}]
    if "y" in names:
        variants += [{"y": rep(x_shape[:-1], mesh)}, {"y_grad": rep(x_shape + (2,), mesh)},
                     {"mean": rep((8,), mesh)}, {"variance": rep((8, 2, 1), mesh)}]
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


#: x mappings of the mixed-mesh sets, per mesh ndim (x [8,6,4,4]): axis 0 split along the last mesh
#: dim (which a mesh of fewer dims lacks), along mesh dim 0, or nothing split.
_MIXED_X = {3: ((2, -1, -1, -1), (-1, 1, -1, 0)), 2: ((1, 0, -1, -1), (0, -1, -1, 1), (-1, -1, -1, -1)),
            1: ((0, -1, -1, -1), (-1, 0, -1, -1))}


def _rule_grid(rule: str) -> Callable[[], Iterator[GridCase]]:
    def grid() -> Iterator[GridCase]:
        yield from _own_grid(rule)
        attrs = _attr_variants(rule, 4)[0]
        yield from mixed_meshes(rule, [(input_shapes(rule, X_SHAPES[4], dict(attrs)), attrs)], _MIXED_X,
                                ((2, 3), (2,), (2, 2, 2)))
        yield from _invalid(rule)
    grid.__name__ = f"_grid_{rule}"
    return grid


GRIDS: dict[str, GridFn] = {key: _rule_grid(key) for key in FAMILIES["group_norm"].keys}

COSHARD = CoshardPlan(ranks=range(3, 4), attr_variants=no_attr_variants)


def input_problem(rule: str, named: Mapping[str, DistTensorSpec | None], attrs: Mapping[str, object],
                  rank: int) -> str | None:
    """x [N, C, *] or [N, *, C] of rank 3..5, scale/bias [C], mean/variance [N, groups], y / y_grad
    like x; data_format one of the op's layouts with one letter per axis of x; groups dividing C
    (where the rule takes the attributes; the rules read neither)."""
    if not 3 <= rank <= 5:
        return f"x rank {rank} outside 3..5 for group_norm"
    for name, t in named.items():
        if t is None or name == "x":
            continue
        want = {"scale": 1, "bias": 1, "mean": 2, "variance": 2}.get(name, rank)
        if len(t.shape) != want:
            return f"{name} rank {len(t.shape)} != {want}"
    if "data_format" not in attrs:  # the Base rules take no attribute
        return None
    fmt, groups, x = attrs["data_format"], attrs["groups"], named["x"]
    if not isinstance(fmt, str) or fmt not in DATA_FORMATS or len(fmt) != rank:
        return f"data_format {fmt!r} is not a group_norm layout of a rank-{rank} x"
    channels = x.shape[1 if fmt[1] == "C" else -1] if x is not None else 0
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1 or channels % groups:
        return f"groups {groups!r} does not divide C = {channels}"
    return None


_FORWARD_RANKS: dict[str, RankOf] = {"y": "x", "mean": 2, "variance": 2}
#: The rank of each returned output (tools/fuzz.py's answer form): mean / variance [N, groups].
ANSWER_RANKS: dict[str, dict[str, RankOf]] = {"group_norm": _FORWARD_RANKS, "group_norm_base": _FORWARD_RANKS,
                                              "group_norm_grad": GRAD_RANKS, "group_norm_grad_base": GRAD_RANKS}


#: Random mode draws data_format from batch_norm's seven layouts, not group_norm's own: the rules
#: read no attribute, the own grid covers every layout, and another list would change every seed's
#: stream (each seed's cases stay what they were).
#: groups: any count, dividing C or not (no rule reads it). Out of range: groups below -1 or above
#: every C a draw gives (sizes up to 16, so it divides none) -- values the valid draws never give --,
#: data_format no layout, a negative epsilon.
RANDOM = RandomPlan(ranks=(3, 5), bad_x_ranks=(1, 2, 6), data_formats=RANDOM_DATA_FORMATS,
                    stats_like_x=frozenset({"mean", "variance", "saved_mean", "saved_variance", "invvar"}),
                    attr_draws=(("groups", choice_draw((-1, 0, 1, 2, 3, 4))),
                                ("data_format", choice_draw(RANDOM_DATA_FORMATS))),
                    bad_attrs=(BadAttr("groups", choice_draw((-4, -2, 17, 33)), 2),
                               BadAttr("data_format", bad_data_format, 2), BadAttr("epsilon", bad_epsilon)))

#: The family's grid part, read by parity (grid, validity, random mode), ``infer`` and tools/fuzz.py.
GRID = GridPlan(grids=GRIDS, input_shapes=input_shapes, coshard=COSHARD, input_problem=input_problem, random=RANDOM,
                answer_ranks=ANSWER_RANKS)
