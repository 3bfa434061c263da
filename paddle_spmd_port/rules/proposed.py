"""The ``proposed`` rule profile: Paddle's rules with the bugs the oracle finds fixed (every rule key).

Same signatures, same validation and error classes as the ``paddle`` profile (the ported 3.3.1
rules: both run :mod:`.preconditions`); only the answers differ, and the checks that an answer
fits the inputs' meshes (group_norm's and instance_norm's grads answer a None scale/bias while x is
split, which crashes Paddle and the paddle profile refuses: a None input has no grad to place).
Every answer here is sound on the whole oracle grid
(``python -m paddle_spmd_port oracle --profile proposed``).

What changes, and why (c = channel axis, d = the mesh dim C ends up on; N = batch axis 0)::

    rule                  Paddle 3.3.1                            proposed
    batch_norm(_static)   scale/bias [-1] while x, mean, var      scale/bias [d]: every per-channel tensor
                          keep C split: the kernel rejects        follows C; d is the mesh dim that moves the
                          the local shapes                        fewest of x and the per-channel tensors
                                                                  (:func:`most_held`; ties: x)
                          N always replicated                     running-statistics modes (use_global_stats,
                                                                  or is_test without trainable_statistics) are
                                                                  per-channel affine maps: x keeps every axis
    batch_norm_grad       scale/bias [-1]; scale_grad/bias_grad   scale/bias/statistics [d]; scale_grad and
                          [-1] Partial{d} (each rank holds other  bias_grad [d], Partial over the mesh dims that
                          channels: summing them is wrong)        split other axes (running-statistics modes,
                                                                  where x/out_grad keep every axis); out_grad
                          out_grad's sharding ignored             takes part in the vote (ties: x)
    sync_batch_norm       no rule: everything replicated          N kept when it splits evenly (the kernel
                                                                  all-reduces its statistics as a *mean of
                                                                  per-rank means*, which is wrong for uneven
                                                                  shards); C and the rest replicated: Paddle's
                                                                  kernel all-reduces over its whole
                                                                  communicator, which would add up different
                                                                  channel blocks (running-statistics mode:
                                                                  every axis kept, nothing is all-reduced)
    sync_batch_norm_grad  everything replicated                   N kept (even); scale_grad/bias_grad Partial
                                                                  {N's mesh dim}: the kernel sums them locally,
                                                                  only the x_grad terms are all-reduced
    layer_norm            (sound)                                 the same answer, built without the '1' merge
    layer_norm_reverse    keeps incoming Partial on x, scale,     partial cleared; the normalised axes of out
                          bias, out, mean, variance; merges the   are simply ignored; conflicting leading-axis
                          forced '1' axes as one key (raises)     shardings resolved by priority (out, mean,
                                                                  variance) instead of raising
    layer_norm_grad       keeps x's, mean's, variance's Partial   partial cleared; conflicts resolved per
                          (fed into a non-linear kernel); raises  axis by the mesh dim most of x, mean,
                          on conflicting shardings                variance, out_grad hold (fewest moves)
    co-sharded inputs     every rule reads one mesh dim of a      an axis the rule keeps split keeps the
    (every rule)          co-shard (the largest; the rest of      whole co-shard of the input that decided
                          the axis is gathered)                   it (:func:`_with_coshards`): the leading
                                                                  axes of layer_norm, C (and in running-
                                                                  statistics modes every axis) of
                                                                  batch_norm, N of sync_batch_norm when
                                                                  it splits evenly over all its mesh dims
    instance_norm(_grad)  scale/bias [-1] while C stays split;    scale/bias follow C; every spatial axis
                          a 5-D x keeps its last spatial axis     replicated; scale_grad/bias_grad follow C,
                          split; scale_grad/bias_grad [-1]        Partial over N's mesh dims, each on its own
                          Partial{N, C}                           tensor's mesh
    rms_norm(_reverse,    (sound); reverse merges out's last      reverse: leading axes from out, then invvar
    _grad)                axis as the '1' key and raises on a     (first claim); grad: per axis the mesh dim
                          conflict; grad moves splits by cost     most of x, invvar, out_grad hold
    fast_ln(_grad)        layer_norm's; grad: bias_grad = the     the proposed layer_norm(_grad); bias_grad
                          scale's attr ([] @- for a None scale)   its own [-1], Partial over the leading dims
    group_norm (4 keys)   (sound: only N kept)                    the same; C cannot stay split (groups is
                                                                  one attribute for every rank)

Worked table, 2x3 mesh (x [8,7,10,12] NCHW for batch_norm, [8,7,10] with b=2 for layer_norm)::

    rule / mode               given                          proposed inputs                 proposed outputs
    batch_norm train          x [0,1,-1,-1]                  x [-1,1,-1,-1], mean/var/scale/  out [-1,1,-1,-1],
                                                             bias [1]                         stats [1] x4
    batch_norm eval           x [0,1,-1,-1]                  x [0,1,-1,-1], per-channel [1]   out [0,1,-1,-1]
    batch_norm_grad train     x [0,1,-1,-1], og same         x/og [-1,1,-1,-1], per-ch [1]    x_grad [-1,1,-1,-1],
                                                                                              scale/bias_grad [1]
    batch_norm_grad global    x [0,1,-1,-1], og same         x/og [0,1,-1,-1]                 scale/bias_grad [1] P{0}
    sync_batch_norm train     x [0,1,-1,-1] (8 % 2 == 0)     x [0,-1,-1,-1], per-ch. [-1]     out [0,-1,-1,-1]
    sync_batch_norm train     x [1,0,-1,-1] (8 % 3 != 0)     x [-1,-1,-1,-1]                  out [-1,-1,-1,-1]
    sync_batch_norm_grad      x [0,1,-1,-1], og same         x/og [0,-1,-1,-1]                scale/bias_grad [-1] P{0}
    layer_norm_reverse        out [0,-1,-1] P{1}             x [0,-1,-1]                      out [0,-1,-1] (no P)
    layer_norm_grad           x [0,-1,-1] P{1}               x [0,-1,-1]                      scale/bias_grad [-1] P{0}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence

from ..errors import InvalidSpecError
from ..notation import dedupe, first_claim, most_held
from ..types import DistAttr, DistTensorSpec, MeshDims, SpmdResult, mesh_dims_of
from ._tensor import RuleInput, getter_mapping, on_meshes_of_other_ndim, require_mesh_dims_exist
from .fast_ln import _last_axis, _renamed
from .preconditions import (
    bn_forward_inputs,
    bn_grad_inputs,
    gn_forward_inputs,
    gn_grad_inputs,
    in_forward_inputs,
    in_grad_inputs,
    ln_forward_inputs,
    ln_grad_inputs,
    ln_reverse_inputs,
    rms_forward_inputs,
    rms_grad_inputs,
    rms_reverse_inputs,
)
from .signatures import BN_PER_CHANNEL, RULES, channel_axis


def _fits_x_mesh(tx: RuleInput, *tensors: RuleInput) -> None:
    """The tensors merged with x's axes may only name mesh dims x's mesh has (a tensor on a mesh of
    more dims than x's could bring one x's mesh lacks)."""
    n = tx.mesh.ndim if tx.mesh is not None else 0
    for t in tensors:
        if t.mesh is not None and t.dims_mapping and max(t.dims_mapping) >= n:
            raise InvalidSpecError(
                f"{t.name}: on mesh {t.mesh} it is split along mesh dim {max(t.dims_mapping)}, which x's mesh "
                f"{tx.mesh} lacks (the rule merges it with x's axes); put {t.name} on a mesh with as many dims "
                "as x's", kind=f"invalid-spec:{t.name}:mixed-mesh")


def _checked(result: SpmdResult, owners: Sequence[tuple[str, RuleInput]], tx: RuleInput,
             inputs: Sequence[RuleInput]) -> SpmdResult:
    """``result``, unless an attr would name a mesh dim its own mesh lacks (inputs on meshes of
    other sizes, or without a mesh): then InvalidSpecError naming the input."""
    if on_meshes_of_other_ndim(tx, *inputs):
        require_mesh_dims_exist(result, owners, tx, inputs)
    return result


def _with_coshards(kept: Sequence[int], *specs: DistTensorSpec | None,
                   partial: Collection[int] = ()) -> tuple[MeshDims, ...]:
    """``kept`` (the rule's mapping, one mesh dim per axis) with each split axis given back the whole
    co-shard of the first of ``specs`` whose co-shard on that axis keeps that dim (the one the rules
    read: :func:`~._tensor.getter_mapping`), when no other member is used on another axis or in
    ``partial`` and the axis splits evenly over all the members (an uneven co-shard can leave a rank
    an empty piece, and Paddle's ranks abort on one: measured by the launch co-shard runs). Splitting a kept axis
    further is sound wherever splitting it once is: each piece is a sub-block of the rank's rows.
    2x3 mesh, x [(0,1),-1] of shape [12, 5], read as [1,-1]::

        kept [1,-1]  ->  [(0,1),-1]        kept [-1,-1]  ->  [-1,-1]  (the axis is gathered anyway)
        kept [1,0]   ->  [1,0]             (mesh dim 0 splits axis 1: the co-shard cannot come back)
    """
    out: list[MeshDims] = list(kept)
    for spec in specs:
        if spec is None or not spec.coshard or spec.mesh is None or len(spec.dims_mapping) != len(kept):
            continue
        read = getter_mapping(spec.dims_mapping, spec.mesh)
        for axis, entry in enumerate(spec.dims_mapping):
            if type(entry) is not tuple or kept[axis] != read[axis] or type(out[axis]) is tuple:
                continue
            others = {m for a, e in enumerate(out) if a != axis for m in mesh_dims_of(e)} | set(partial)
            if not others & set(entry) and spec.shape[axis] % math.prod(spec.mesh.shape[m] for m in entry) == 0:
                out[axis] = entry
    return tuple(out)


def _param(t: RuleInput, mapping: tuple[MeshDims, ...], partial: frozenset[int] = frozenset()) -> DistAttr:
    """An attr for a per-channel / parameter tensor; a missing input keeps Paddle's meshless ``[-1]``."""
    if t.mesh is None:
        return DistAttr((-1,) * max(len(mapping), 1), frozenset(), None)
    return DistAttr(mapping, partial, t.mesh)


# --------------------------------------------------------------------------- batch_norm
def _bn_forward(x: DistTensorSpec, mean: DistTensorSpec, variance: DistTensorSpec, scale: DistTensorSpec | None,
                bias: DistTensorSpec | None, attrs: Sequence[tuple[str, object]], data_format: str,
                axes: Callable[[RuleInput, int], Sequence[int]]) -> SpmdResult:
    """``axes(x, c)``: the axes of x that may stay split; they and C get the mesh dims that move the
    fewest of x and the per-channel tensors. ``attrs``: every attribute, in signature order."""
    tx, tm, tv, ts, tb = bn_forward_inputs(x, mean, variance, scale, bias, attrs)
    c = channel_axis(data_format, tx.ndim)
    kept = _with_coshards(_vote(tx, c, axes(tx, c), (), (tm, tv, ts, tb)), x)
    stat = (kept[c],)
    result = SpmdResult(
        inputs=(tx.attr(kept), tm.attr(stat), tv.attr(stat), _param(ts, stat), _param(tb, stat)),
        outputs=(tx.attr(kept), tm.attr(stat), tv.attr(stat), tm.attr(stat), tv.attr(stat), tx.attr((-1,))),
    )
    owners = (("x", tx), ("mean", tm), ("variance", tv), ("scale", ts), ("bias", tb), ("out", tx), ("mean_out", tm),
              ("variance_out", tv), ("saved_mean", tm), ("saved_variance", tv), ("reserve_space", tx))
    return _checked(result, owners, tx, (tm, tv, ts, tb))


def _vote(tx: RuleInput, c: int, axes: Sequence[int], like_x: Sequence[RuleInput],
          per_channel: Sequence[RuleInput]) -> tuple[int, ...]:
    """x's mapping restricted to ``axes``, merged with tensors shaped like x and with the
    per-channel tensors (which vote on C, when C is among ``axes``): see :func:`most_held`."""
    _fits_x_mesh(tx, *like_x, *per_channel)
    keep = set(axes)
    votes = [_only(tx.dims_mapping, keep)] + [_only(t.dims_mapping, keep) for t in like_x]
    for t in per_channel if c in keep else ():
        if t.mesh is not None and len(t.dims_mapping) == 1:
            at_c = [-1] * tx.ndim
            at_c[c] = t.dims_mapping[0]
            votes.append(tuple(at_c))
    return most_held(*votes)


def _only(mapping: Sequence[int], axes: Collection[int]) -> tuple[int, ...]:
    """``mapping`` with every axis outside ``axes`` replicated."""
    return tuple(m if axis in axes else -1 for axis, m in enumerate(mapping))


def batch_norm_infer_spmd(
    x: DistTensorSpec,
    mean: DistTensorSpec,
    variance: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
    is_test: bool = False,
    momentum: float = 0.9,
    epsilon: float = 1e-5,
    data_format: str = "NCHW",
    use_global_stats: bool = False,
    trainable_statistics: bool = False,
) -> SpmdResult:
    """Forward: per-channel tensors follow x's C; with running statistics x keeps every axis."""
    attrs = (("is_test", is_test), ("momentum", momentum), ("epsilon", epsilon), ("data_format", data_format),
             ("use_global_stats", use_global_stats), ("trainable_statistics", trainable_statistics))
    running = use_global_stats or (is_test and not trainable_statistics)

    def axes(tx: RuleInput, c: int) -> Sequence[int]:
        return range(tx.ndim) if running else (c,)

    return _bn_forward(x, mean, variance, scale, bias, attrs, data_format, axes)


def batch_norm_infer_spmd_static(
    x: DistTensorSpec,
    mean: DistTensorSpec,
    variance: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
) -> SpmdResult:
    """The registry's attribute-less forward (training, NCHW), fixed the same way."""
    return batch_norm_infer_spmd(x, mean, variance, scale, bias)


def _per_channel(t: dict[str, RuleInput]) -> list[RuleInput]:
    return [v for k, v in t.items() if k in BN_PER_CHANNEL]


def _grad_result(t: dict[str, RuleInput], order: Sequence[str], kept: tuple[MeshDims, ...], c: int,
                 grad_partial: frozenset[int]) -> SpmdResult:
    stat = (kept[c],)
    inputs = []
    for name in order:
        if name == "x" or name == "out_grad":
            inputs.append(t[name].attr(kept))
        elif name == "reserve_space":
            inputs.append(_param(t[name], (-1,)))
        else:
            inputs.append(_param(t[name], stat))
    result = SpmdResult(
        inputs=tuple(inputs),
        outputs=(t["x"].attr(kept), _param(t["scale"], stat, grad_partial), _param(t["bias"], stat, grad_partial)),
    )
    owners = [(name, t[name]) for name in order] + [("x_grad", t["x"]), ("scale_grad", t["scale"]),
                                                    ("bias_grad", t["bias"])]
    return _checked(result, owners, t["x"], [t[name] for name in order[1:]])


def batch_norm_grad_infer_spmd(
    x: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
    mean_out: DistTensorSpec,
    variance_out: DistTensorSpec,
    saved_mean: DistTensorSpec,
    saved_variance: DistTensorSpec,
    reserve_space: DistTensorSpec | None,
    out_grad: DistTensorSpec,
    momentum: float = 0.9,
    epsilon: float = 1e-5,
    data_format: str = "NCHW",
    is_test: bool = False,
    use_global_stats: bool = False,
    trainable_statistics: bool = False,
) -> SpmdResult:
    """Grad: scale_grad/bias_grad sharded like C; Partial only over mesh dims that split other
    axes, which stay split only when the kernel uses the running statistics."""
    order = RULES["batch_norm_grad"].inputs
    named = tuple(zip(order, (x, scale, bias, mean_out, variance_out, saved_mean, saved_variance, reserve_space,
                              out_grad), strict=True))
    t = bn_grad_inputs(named, (
        ("momentum", momentum), ("epsilon", epsilon), ("data_format", data_format), ("is_test", is_test),
        ("use_global_stats", use_global_stats), ("trainable_statistics", trainable_statistics)))
    tx = t["x"]
    c = channel_axis(data_format, tx.ndim)
    running = is_test or use_global_stats  # the grad kernel's own test (trainable_statistics is not read)
    kept = _with_coshards(_vote(tx, c, range(tx.ndim) if running else (c,), (t["out_grad"],), _per_channel(t)),
                          x, out_grad)
    partial = frozenset(m for axis, e in enumerate(kept) if axis != c for m in mesh_dims_of(e))
    return _grad_result(t, order, kept, c, partial)


# --------------------------------------------------------------------------- sync_batch_norm
def _even_batch(tx: RuleInput, shape: Sequence[int], mapping: Sequence[MeshDims]) -> int:
    """N's mesh dim when it splits N evenly (the sync kernel averages per-rank means), else -1;
    for a co-shard on N, its first member when N splits evenly over all of them."""
    dims = mesh_dims_of(mapping[0])
    if not dims or tx.mesh is None or shape[0] % math.prod(tx.mesh.shape[m] for m in dims):
        return -1
    return dims[0]


def sync_batch_norm_infer_spmd(
    x: DistTensorSpec,
    mean: DistTensorSpec,
    variance: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
    is_test: bool = False,
    momentum: float = 0.9,
    epsilon: float = 1e-5,
    data_format: str = "NCHW",
    use_global_stats: bool = False,
    trainable_statistics: bool = False,
) -> SpmdResult:
    """Forward: N stays split (statistics are all-reduced) when even; C with its per-channel tensors."""
    attrs = (("is_test", is_test), ("momentum", momentum), ("epsilon", epsilon), ("data_format", data_format),
             ("use_global_stats", use_global_stats), ("trainable_statistics", trainable_statistics))
    running = use_global_stats or (is_test and not trainable_statistics)

    def axes(tx: RuleInput, c: int) -> Sequence[int]:
        if running:
            return range(tx.ndim)
        even = _even_batch(tx, x.shape, x.dims_mapping) >= 0 and _even_batch(tx, x.shape, tx.dims_mapping) >= 0
        return (0,) if even else ()

    return _bn_forward(x, mean, variance, scale, bias, attrs, data_format, axes)


def sync_batch_norm_grad_infer_spmd(
    x: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
    saved_mean: DistTensorSpec,
    saved_variance: DistTensorSpec,
    reserve_space: DistTensorSpec | None,
    out_grad: DistTensorSpec,
    momentum: float = 0.9,
    epsilon: float = 1e-5,
    data_format: str = "NCHW",
    is_test: bool = False,
    use_global_stats: bool = False,
    trainable_statistics: bool = False,
) -> SpmdResult:
    """Grad: the kernel always uses the saved statistics and all-reduces the x_grad sums, so N
    (even) and C stay split; scale_grad/bias_grad are local sums, Partial over N's mesh dim."""
    order = RULES["sync_batch_norm_grad"].inputs
    named = tuple(zip(order, (x, scale, bias, saved_mean, saved_variance, reserve_space, out_grad), strict=True))
    t = bn_grad_inputs(named, (
        ("momentum", momentum), ("epsilon", epsilon), ("data_format", data_format), ("is_test", is_test),
        ("use_global_stats", use_global_stats), ("trainable_statistics", trainable_statistics)))
    tx = t["x"]
    c = channel_axis(data_format, tx.ndim)
    kept = list(_with_coshards(_vote(tx, c, (0,), (t["out_grad"],), _per_channel(t)), x, out_grad))
    if c != 0 and kept[0] != -1 and _even_batch(tx, x.shape, kept) < 0:
        kept[0] = -1
    partial = frozenset(mesh_dims_of(kept[0])) if c != 0 else frozenset()
    return _grad_result(t, order, tuple(kept), c, partial)


# --------------------------------------------------------------------------- layer_norm
def _ln_param(t: RuleInput, partial: frozenset[int] = frozenset()) -> DistAttr:
    return _param(t, (-1,) * t.ndim, partial)


def layer_norm_infer_spmd(
    x: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
    epsilon: float = 1e-5,
    begin_norm_axis: int = 1,
) -> SpmdResult:
    """Forward: axes before b keep their sharding, the rest are replicated; no partial."""
    tx, ts, tb = ln_forward_inputs(x, scale, bias, epsilon, begin_norm_axis)
    b = begin_norm_axis
    kept = _with_coshards(dedupe(tx.dims_mapping[:b]) + (-1,) * (tx.ndim - b), x)
    lead = kept[:b]
    return SpmdResult(inputs=(tx.attr(kept), _ln_param(ts), _ln_param(tb)),
                      outputs=(tx.attr(kept), tx.attr(lead), tx.attr(lead)))


def layer_norm_infer_spmd_reverse(
    x: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
    out: DistTensorSpec,
    mean: DistTensorSpec,
    variance: DistTensorSpec,
    epsilon: float = 1e-5,
    begin_norm_axis: int = 1,
) -> SpmdResult:
    """Reverse: x's leading axes from out, then mean, then variance; nothing partial."""
    tx, ts, tb, to, tm, tv = ln_reverse_inputs(x, scale, bias, out, mean, variance, epsilon, begin_norm_axis)
    b = begin_norm_axis
    _fits_x_mesh(tx, to, tm, tv)
    claimed = first_claim(to.dims_mapping[:b], tm.dims_mapping, tv.dims_mapping) if b else ()
    kept = _with_coshards(claimed + (-1,) * (tx.ndim - b), out)
    lead = kept[:b]
    result = SpmdResult(inputs=(tx.attr(kept), _ln_param(ts), _ln_param(tb)),
                        outputs=(to.attr(kept), tm.attr(lead), tv.attr(lead)))
    owners = (("x", tx), ("scale", ts), ("bias", tb), ("out", to), ("mean", tm), ("variance", tv))
    return _checked(result, owners, tx, (ts, tb, to, tm, tv))


def layer_norm_grad_infer_spmd(
    x: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
    mean: DistTensorSpec,
    variance: DistTensorSpec,
    out_grad: DistTensorSpec,
    epsilon: float = 1e-5,
    begin_norm_axis: int = 1,
) -> SpmdResult:
    """Grad: x, out_grad, mean and variance agree on the leading axes (per axis the mesh dim most
    of them hold, ties in Paddle's merge order x, mean, variance, out_grad); no partial input;
    scale_grad/bias_grad Partial over the mesh dims of those axes."""
    tx, ts, tb, tm, tv, tg = ln_grad_inputs(x, scale, bias, mean, variance, out_grad, epsilon, begin_norm_axis)
    b = begin_norm_axis
    _fits_x_mesh(tx, tm, tv, tg)
    held = most_held(tx.dims_mapping[:b], tm.dims_mapping, tv.dims_mapping, tg.dims_mapping[:b]) if b else ()
    kept = _with_coshards(held + (-1,) * (tx.ndim - b), x, out_grad)
    lead = kept[:b]
    partial = frozenset(m for e in lead for m in mesh_dims_of(e))
    result = SpmdResult(
        inputs=(tx.attr(kept), _ln_param(ts), _ln_param(tb), tm.attr(lead), tv.attr(lead), tg.attr(kept)),
        outputs=(tg.attr(kept), _ln_param(ts, partial), _ln_param(tb, partial)),
    )
    owners = (("x", tx), ("scale", ts), ("bias", tb), ("mean", tm), ("variance", tv), ("out_grad", tg),
              ("x_grad", tg), ("scale_grad", ts), ("bias_grad", tb))
    return _checked(result, owners, tx, (ts, tb, tm, tv, tg))


# --------------------------------------------------------------------------- instance_norm
def _grad_needs_mesh(partial: frozenset[int], *tensors: RuleInput) -> None:
    """A parameter grad Partial over ``partial`` needs its tensor's mesh: a spec given without one is
    refused (a None input has no grad to place)."""
    for t in tensors:
        if partial and t.mesh is None and not t.missing:
            raise InvalidSpecError(
                f"{t.name} is a spec without a process mesh while x's batch axis is split along mesh dims "
                f"{sorted(partial)}: {t.name}_grad is Partial over them and needs a mesh; pass {t.name} on x's mesh",
                kind=f"invalid-spec:{t.name}:no-mesh")


def _in_kept(x: DistTensorSpec, tx: RuleInput) -> tuple[MeshDims, ...]:
    """N and C keep x's sharding; every spatial axis (2 .. ndim-1) is replicated: the statistics
    reduce over all of them."""
    return _with_coshards(tx.dims_mapping[:2] + (-1,) * (tx.ndim - 2), x)


def instance_norm_infer_spmd(
    x: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
    epsilon: float = 1e-5,
) -> SpmdResult:
    """Forward: N and C kept, scale and bias follow C, every spatial axis replicated."""
    tx, ts, tb = in_forward_inputs(x, scale, bias, epsilon)
    kept = _in_kept(x, tx)
    channel = kept[1:2]
    result = SpmdResult(inputs=(tx.attr(kept), _param(ts, channel), _param(tb, channel)),
                        outputs=(tx.attr(kept), tx.attr(kept[:2]), tx.attr(kept[:2])))
    owners = (("x", tx), ("scale", ts), ("bias", tb), ("y", tx), ("saved_mean", tx), ("saved_variance", tx))
    return _checked(result, owners, tx, (ts, tb))


def instance_norm_grad_infer_spmd(
    x: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
    saved_mean: DistTensorSpec,
    saved_variance: DistTensorSpec,
    y_grad: DistTensorSpec,
    epsilon: float = 1e-5,
) -> SpmdResult:
    """Grad: as the forward; scale_grad and bias_grad follow C (each on its own tensor's mesh),
    Partial over N's mesh dims."""
    tx, ts, tb, tm, tv, tg = in_grad_inputs(x, scale, bias, saved_mean, saved_variance, y_grad, epsilon)
    kept = _in_kept(x, tx)
    channel = kept[1:2]
    partial = frozenset(mesh_dims_of(kept[0]))
    _grad_needs_mesh(partial, ts, tb)
    result = SpmdResult(
        inputs=(tx.attr(kept), _param(ts, channel), tm.attr(kept[:2]), tv.attr(kept[:2]), tg.attr(kept)),
        outputs=(tx.attr(kept), _param(ts, channel, partial), _param(tb, channel, partial)),
    )
    owners = (("x", tx), ("scale", ts), ("saved_mean", tm), ("saved_variance", tv), ("y_grad", tg),
              ("x_grad", tx), ("scale_grad", ts), ("bias_grad", tb))
    return _checked(result, owners, tx, (ts, tb, tm, tv, tg))


# --------------------------------------------------------------------------- rms_norm
def rms_norm_infer_spmd(
    x: DistTensorSpec,
    scale: DistTensorSpec,
    epsilon: float = 1e-5,
) -> SpmdResult:
    """Forward: every axis but the last keeps its sharding (co-shards too); no partial."""
    tx, ts = rms_forward_inputs(x, scale, epsilon)
    kept = _with_coshards(tx.dims_mapping[:-1] + (-1,), x)
    return SpmdResult(inputs=(tx.attr(kept), _ln_param(ts)), outputs=(tx.attr(kept), tx.attr(kept[:-1])))


def rms_norm_infer_spmd_reverse(
    x: DistTensorSpec,
    scale: DistTensorSpec,
    out: DistTensorSpec,
    invvar: DistTensorSpec,
    epsilon: float = 1e-5,
) -> SpmdResult:
    """Reverse: x's leading axes from out, then invvar (no '1' merge: out's last axis is ignored,
    a conflict is resolved, not raised); nothing partial."""
    tx, ts, to, tv = rms_reverse_inputs(x, scale, out, invvar, epsilon)
    _fits_x_mesh(tx, to, tv)
    claimed = first_claim(to.dims_mapping[:-1], tv.dims_mapping) if tx.ndim > 1 else ()
    kept = _with_coshards(claimed + (-1,), out)
    result = SpmdResult(inputs=(tx.attr(kept), _ln_param(ts)), outputs=(to.attr(kept), tv.attr(kept[:-1])))
    owners = (("x", tx), ("scale", ts), ("out", to), ("invvar", tv))
    return _checked(result, owners, tx, (ts, to, tv))


def rms_norm_grad_infer_spmd(
    x: DistTensorSpec,
    scale: DistTensorSpec,
    invvar: DistTensorSpec,
    out_grad: DistTensorSpec,
    epsilon: float = 1e-5,
) -> SpmdResult:
    """Grad: x, invvar and out_grad agree on the leading axes, per axis the mesh dim most of them
    hold (ties: x, invvar, out_grad; no split moves to another axis); scale_grad Partial over them."""
    tx, ts, tv, tg = rms_grad_inputs(x, scale, invvar, out_grad, epsilon)
    _fits_x_mesh(tx, tv, tg)
    kept = _with_coshards(most_held(tx.dims_mapping[:-1], tv.dims_mapping, tg.dims_mapping[:-1]) + (-1,), x, out_grad)
    lead = kept[:-1]
    partial = frozenset(m for e in lead for m in mesh_dims_of(e))
    result = SpmdResult(inputs=(tx.attr(kept), _ln_param(ts), tv.attr(lead), tg.attr(kept)),
                        outputs=(tg.attr(kept), _ln_param(ts, partial)))
    owners = (("x", tx), ("scale", ts), ("invvar", tv), ("out_grad", tg), ("x_grad", tg), ("scale_grad", ts))
    return _checked(result, owners, tx, (ts, tv, tg))


# --------------------------------------------------------------------------- fast_ln
def fast_ln_infer_spmd(
    x: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
    epsilon: float = 1e-5,
) -> SpmdResult:
    """Forward: the proposed layer_norm with begin_norm_axis = rank(x) - 1 (Paddle's is sound too)."""
    return layer_norm_infer_spmd(x, scale, bias, epsilon, _last_axis(x))


def fast_ln_grad_infer_spmd(
    x: DistTensorSpec,
    scale: DistTensorSpec | None,
    mean: DistTensorSpec,
    invvar: DistTensorSpec,
    y_grad: DistTensorSpec,
    epsilon: float = 1e-5,
) -> SpmdResult:
    """Grad: the proposed layer_norm_grad with begin_norm_axis = rank(x) - 1 (no partial input);
    bias_grad is its own 1-D attr, Partial over the leading mesh dims, on scale's mesh (x's when
    scale is None: the op makes bias_grad without a bias input)."""
    try:  # scale also stands in for the bias Paddle passes: the same checks as the paddle profile
        full = layer_norm_grad_infer_spmd(x, scale, scale, mean, invvar, y_grad, epsilon, _last_axis(x))
    except InvalidSpecError as exc:
        raise _renamed(exc) from None
    x_attr = full.inputs[0]
    partial = frozenset(m for e in x_attr.dims_mapping[:-1] for m in mesh_dims_of(e))
    scale_grad = full.outputs[1]
    bias_grad = DistAttr((-1,), partial, scale_grad.mesh if scale_grad.mesh is not None else x_attr.mesh)
    return SpmdResult(inputs=full.inputs[:2] + full.inputs[3:], outputs=(full.outputs[0], scale_grad, bias_grad))


# --------------------------------------------------------------------------- group_norm
def _gn_kept(x: DistTensorSpec, tx: RuleInput) -> tuple[MeshDims, ...]:
    """Only N keeps its sharding (co-shards too). C cannot: the op's ``groups`` is global, so a rank
    holding C/k channels would group them as if it held all C; the spatial axes are reduced."""
    return _with_coshards((tx.dims_mapping[0],) + (-1,) * (tx.ndim - 1), x)


def _gn_forward(x: DistTensorSpec, tx: RuleInput, ts: RuleInput, tb: RuleInput) -> SpmdResult:
    kept = _gn_kept(x, tx)
    stat = (kept[0], -1)
    return SpmdResult(inputs=(tx.attr(kept), _ln_param(ts), _ln_param(tb)),
                      outputs=(tx.attr(kept), tx.attr(stat), tx.attr(stat)))


def group_norm_infer_spmd_base(
    x: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
) -> SpmdResult:
    """Forward (Base): Paddle's answer (sound), with N's co-shard kept."""
    return _gn_forward(x, *gn_forward_inputs(x, scale, bias, ()))


def group_norm_infer_spmd(
    x: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
    epsilon: float = 1e-5,
    groups: int = -1,
    data_format: str = "NCHW",
) -> SpmdResult:
    """Forward: as the Base rule (the attributes are checked, not needed)."""
    return _gn_forward(x, *gn_forward_inputs(x, scale, bias, (("epsilon", epsilon), ("groups", groups),
                                                              ("data_format", data_format))))


def _gn_grad(x: DistTensorSpec, t: Sequence[RuleInput]) -> SpmdResult:
    tx, ts, tb, ty, tm, tv, tg = t
    kept = _gn_kept(x, tx)
    stat = (kept[0], -1)
    partial = frozenset(mesh_dims_of(kept[0]))
    _grad_needs_mesh(partial, ts, tb)
    result = SpmdResult(
        inputs=(tx.attr(kept), _ln_param(ts), _ln_param(tb), ty.attr(kept), tm.attr(stat), tv.attr(stat),
                tg.attr(kept)),
        outputs=(tx.attr(kept), _ln_param(ts, partial), _ln_param(tb, partial)),
    )
    owners = (("x", tx), ("scale", ts), ("bias", tb), ("y", ty), ("mean", tm), ("variance", tv), ("y_grad", tg),
              ("x_grad", tx), ("scale_grad", ts), ("bias_grad", tb))
    return _checked(result, owners, tx, (ts, tb, ty, tm, tv, tg))


def group_norm_grad_infer_spmd_base(
    x: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
    y: DistTensorSpec,
    mean: DistTensorSpec,
    variance: DistTensorSpec,
    y_grad: DistTensorSpec,
) -> SpmdResult:
    """Grad (Base): Paddle's answer (sound: scale_grad/bias_grad Partial over N's mesh dims)."""
    return _gn_grad(x, gn_grad_inputs(x, scale, bias, y, mean, variance, y_grad, ()))


def group_norm_grad_infer_spmd(
    x: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
    y: DistTensorSpec,
    mean: DistTensorSpec,
    variance: DistTensorSpec,
    y_grad: DistTensorSpec,
    epsilon: float = 1e-5,
    groups: int = -1,
    data_format: str = "NCHW",
) -> SpmdResult:
    """Grad: as the Base rule."""
    return _gn_grad(x, gn_grad_inputs(x, scale, bias, y, mean, variance, y_grad,
                                      (("epsilon", epsilon), ("groups", groups), ("data_format", data_format))))


#: rule key (see :mod:`paddle_spmd_port.rules.signatures`) -> proposed rule function.
PROPOSED_RULES: dict[str, Callable[..., SpmdResult]] = {
    "batch_norm_static": batch_norm_infer_spmd_static,
    "batch_norm": batch_norm_infer_spmd,
    "batch_norm_grad": batch_norm_grad_infer_spmd,
    "sync_batch_norm": sync_batch_norm_infer_spmd,
    "sync_batch_norm_grad": sync_batch_norm_grad_infer_spmd,
    "layer_norm": layer_norm_infer_spmd,
    "layer_norm_reverse": layer_norm_infer_spmd_reverse,
    "layer_norm_grad": layer_norm_grad_infer_spmd,
    "instance_norm": instance_norm_infer_spmd,
    "instance_norm_grad": instance_norm_grad_infer_spmd,
    "rms_norm": rms_norm_infer_spmd,
    "rms_norm_reverse": rms_norm_infer_spmd_reverse,
    "rms_norm_grad": rms_norm_grad_infer_spmd,
    "fast_ln": fast_ln_infer_spmd,
    "fast_ln_grad": fast_ln_grad_infer_spmd,
    "group_norm": group_norm_infer_spmd,
    "group_norm_base": group_norm_infer_spmd_base,
    "group_norm_grad": group_norm_grad_infer_spmd,
    "group_norm_grad_base": group_norm_grad_infer_spmd_base,
}
