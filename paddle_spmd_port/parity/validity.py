"""Is a case's *input* invalid for its op? Decided from the op's signature, never by the rules.

The comparator needs this to tell two port errors apart that look the same: the port rejecting an
input that is invalid for the op (Paddle's rule does not validate it: it answers garbage, crashes
or answers something plausible -- the class *port rejects invalid*), and the port wrongly
rejecting a valid input that Paddle answers (a *mismatch*). So the checks here are written from
the op's contract, independently of ``rules/``::

    check                      invalid when
    spec                       dims_mapping length != rank, a mesh dim out of range or used
                               twice (co-shard members included), a partial dim out of range or
                               also sharding, no mesh
    meshes                     an input's mesh has another number of dims than x's
    batch_norm family          x rank outside 2..5; a per-channel tensor not 1-D; out_grad's
                               rank != x's; data_format not a batch_norm layout
    layer_norm family          x rank 0; begin_norm_axis not an int in 0..rank(x); scale/bias not 1-D;
                               mean/variance rank != begin_norm_axis; out/out_grad rank != x's
    instance_norm              x rank outside 4..5 (the rule indexes axes 2 and 3: a 2-D / 3-D x
                               corrupts Paddle's heap); scale/bias not 1-D; saved statistics not 2-D;
                               y_grad's rank != x's
    rms_norm, fast_ln          x rank 0; scale/bias not 1-D; mean/invvar rank != rank(x) - 1;
                               out/out_grad/y_grad rank != x's
    group_norm                 x rank outside 3..5; scale/bias not 1-D; mean/variance not 2-D; y/y_grad
                               rank != x's; data_format not a group_norm layout of x's rank; groups
                               not a positive divisor of C (the rules read neither attribute)
    attributes                 epsilon / momentum not a number
"""

from __future__ import annotations

from numbers import Real

from ..case import Case
from ..rules.signatures import BN_PER_CHANNEL as PER_CHANNEL
from ..rules.signatures import DATA_FORMATS, GN_DATA_FORMATS
from ..types import DistTensorSpec


def _spec_problem(name: str, spec: DistTensorSpec) -> str | None:
    if spec.mesh is None:
        return f"{name} has no mesh"
    ndim, dm = spec.mesh.ndim, list(spec.dims_mapping)
    if len(dm) != len(spec.shape):
        return f"{name}: dims_mapping length {len(dm)} != rank {len(spec.shape)}"
    used = [m for entry in dm for m in (entry if isinstance(entry, tuple) else (entry,)) if m != -1 or
            isinstance(entry, tuple)]  # a co-shard lists mesh dims only: a -1 in it is out of range
    if any(not 0 <= m < ndim for m in used) or len(used) != len(set(used)):
        return f"{name}: mesh dims {dm} out of range or repeated"
    if any(not 0 <= p < ndim for p in spec.partial_dims) or set(used) & set(spec.partial_dims):
        return f"{name}: partial dims {sorted(spec.partial_dims)} out of range or also sharding"
    return None


def input_problem(case: Case) -> str | None:
    """Why ``case``'s input is invalid for its op, or None when it is a valid input."""
    named = case.named_inputs()
    attrs = dict(zip((n for n, _ in case.spec.attrs), case.attr_values(), strict=True))
    x = named.get("x")
    if not isinstance(x, DistTensorSpec):
        return "x is missing"
    for name, spec in named.items():
        if spec is None:
            if name not in case.spec.optional:
                return f"{name} is required"
            continue
        if not isinstance(spec, DistTensorSpec):
            return f"{name} is not a tensor spec"
        why = _spec_problem(name, spec)
        if why:
            return why
        if spec.mesh.ndim != x.mesh.ndim:  # type: ignore[union-attr]
            return f"{name} is on a mesh of {spec.mesh.ndim} dims, x on one of {x.mesh.ndim}"  # type: ignore[union-attr]
    for key in ("epsilon", "momentum"):
        if key in attrs and (isinstance(attrs[key], bool) or not isinstance(attrs[key], Real)):
            return f"{key} is not a number"
    rank = len(x.shape)
    if case.spec.op in ("batch_norm", "sync_batch_norm"):
        if not 2 <= rank <= 5:
            return f"x rank {rank} outside 2..5"
        if "data_format" in attrs and attrs["data_format"] not in DATA_FORMATS:
            return f"data_format {attrs['data_format']!r} is not a batch_norm layout"
        for name, spec in named.items():
            if spec is not None and name in PER_CHANNEL and len(spec.shape) != 1:
                return f"{name} is not 1-D"
        og = named.get("out_grad")
        if og is not None and len(og.shape) != rank:
            return "out_grad's rank differs from x's"
        return None
    if case.spec.op in _NORM_MORE_RANKS:
        return _norm_more_problem(case.spec.op, rank, named)
    if case.spec.op == "group_norm":
        return _group_norm_problem(rank, named, attrs)
    if rank < 1:
        return "x is rank 0 (layer_norm normalises at least one axis)"
    b = attrs.get("begin_norm_axis")
    if isinstance(b, bool) or not isinstance(b, int) or not 0 <= b <= rank:
        return f"begin_norm_axis {b!r} is not an int in 0..{rank}"
    for name, spec in named.items():
        if spec is None or name == "x":
            continue
        want = {"scale": 1, "bias": 1, "mean": b, "variance": b}.get(name, rank)
        if len(spec.shape) != want:
            return f"{name} rank {len(spec.shape)} != {want}"
    return None


#: x ranks instance_norm, rms_norm and fast_ln take (instance_norm: [N, C, H, W] or [N, C, D, H, W];
#: its rule clears axes 2 and 3 by index, so an NC / NCL input is outside what it can answer).
_NORM_MORE_RANKS = {"instance_norm": range(4, 6), "rms_norm": range(1, 19), "fast_ln": range(1, 19)}


def _norm_more_problem(op: str, rank: int, named: dict[str, DistTensorSpec | None]) -> str | None:
    """instance_norm: scale/bias [C], saved statistics [N, C], y_grad like x; rms_norm and fast_ln:
    scale/bias [last], statistics (mean, invvar) x.shape[:-1], out / out_grad / y_grad like x."""
    if rank not in _NORM_MORE_RANKS[op]:
        return f"x rank {rank} outside {_NORM_MORE_RANKS[op].start}..{_NORM_MORE_RANKS[op].stop - 1} for {op}"
    stat_rank = 2 if op == "instance_norm" else rank - 1
    for name, spec in named.items():
        if spec is None or name == "x":
            continue
        want = {"scale": 1, "bias": 1, "saved_mean": stat_rank, "saved_variance": stat_rank, "mean": stat_rank,
                "invvar": stat_rank}.get(name, rank)
        if len(spec.shape) != want:
            return f"{name} rank {len(spec.shape)} != {want}"
    return None


def _group_norm_problem(rank: int, named: dict[str, DistTensorSpec | None], attrs: dict[str, object]) -> str | None:
    """group_norm: x [N, C, *] or [N, *, C] of rank 3..5, scale/bias [C], mean/variance [N, groups],
    y / y_grad like x; data_format one of the op's layouts with one letter per axis of x; groups
    dividing C (where the rule takes the attributes)."""
    if not 3 <= rank <= 5:
        return f"x rank {rank} outside 3..5 for group_norm"
    for name, spec in named.items():
        if spec is None or name == "x":
            continue
        want = {"scale": 1, "bias": 1, "mean": 2, "variance": 2}.get(name, rank)
        if len(spec.shape) != want:
            return f"{name} rank {len(spec.shape)} != {want}"
    if "data_format" not in attrs:  # the Base rules take no attribute
        return None
    fmt, groups, x = attrs["data_format"], attrs["groups"], named["x"]
    if not isinstance(fmt, str) or fmt not in GN_DATA_FORMATS or len(fmt) != rank:
        return f"data_format {fmt!r} is not a group_norm layout of a rank-{rank} x"
    channels = x.shape[1 if fmt[1] == "C" else -1] if x is not None else 0
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1 or channels % groups:
        return f"groups {groups!r} does not divide C = {channels}"
    return None
