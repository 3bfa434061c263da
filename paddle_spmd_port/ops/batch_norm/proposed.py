"""batch_norm in the ``proposed`` profile: Paddle's rules with the bugs the oracle finds fixed.

Same signatures, same checks and error classes as the ``paddle`` profile (both run the family's
:mod:`.checks`); only the answers differ (see :mod:`paddle_spmd_port.ops.kit.proposed`).

What changes, and why (c = channel axis, d = the mesh dim C ends up on)::

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

Worked table, 2x3 mesh, x [8,7,10,12] NCHW::

    rule / mode               given                          proposed inputs                 proposed outputs
    batch_norm train          x [0,1,-1,-1]                  x [-1,1,-1,-1], mean/var/scale/  out [-1,1,-1,-1],
                                                             bias [1]                         stats [1] x4
    batch_norm eval           x [0,1,-1,-1]                  x [0,1,-1,-1], per-channel [1]   out [0,1,-1,-1]
    batch_norm_grad train     x [0,1,-1,-1], og same         x/og [-1,1,-1,-1], per-ch [1]    x_grad [-1,1,-1,-1],
                                                                                              scale/bias_grad [1]
    batch_norm_grad global    x [0,1,-1,-1], og same         x/og [0,1,-1,-1]                 scale/bias_grad [1] P{0}
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from ...notation import most_held
from ...types import MeshDims, SpmdResult, mesh_dims_of
from .. import RULES
from ..kit.checks import Attrs, Specs, input_names, rule
from ..kit.layout import channel_axis
from ..kit.proposed import fits_x_mesh, param, with_coshards
from ..kit.tensor import RuleInput
from .checks import FORWARD_AT, GRAD_AT, bn_forward_inputs, bn_grad_inputs
from .layout import PER_CHANNEL

#: The forwards' answer check (:func:`~paddle_spmd_port.ops.kit.checks.rule`; sync_batch_norm's too).
FORWARD_OTHERS = ("mean", "variance", "scale", "bias")
FORWARD_MESH_OF = ("x", "mean", "variance", "scale", "bias", "x", "mean", "variance", "mean", "variance", "x")

FORMAT, GRAD_FORMAT = FORWARD_AT["data_format"], GRAD_AT["data_format"]
_GRAD_ORDER = RULES["batch_norm_grad"].inputs
_GRAD_NAMES = input_names("batch_norm_grad")


def running_statistics(attrs: Attrs) -> bool:
    """The forward kernel's test for the running statistics: use_global_stats, or is_test without
    trainable_statistics (``attrs``: the forward's, packed)."""
    return bool(attrs[FORWARD_AT["use_global_stats"]][1] or (
        attrs[FORWARD_AT["is_test"]][1] and not attrs[FORWARD_AT["trainable_statistics"]][1]))


def bn_forward(specs: Specs, attrs: Attrs, axes: Callable[[RuleInput, int], Sequence[int]]) -> SpmdResult:
    """``axes(x, c)``: the axes of x that may stay split; they and C get the mesh dims that move the
    fewest of x and the per-channel tensors. ``specs``, ``attrs``: the forward's, packed."""
    tx, tm, tv, ts, tb = bn_forward_inputs(specs, attrs)
    c = channel_axis(attrs[FORMAT][1], tx.ndim)
    kept = with_coshards(vote(tx, c, axes(tx, c), (), (tm, tv, ts, tb)), specs[0])
    stat = (kept[c],)
    result = SpmdResult(
        inputs=(tx.attr(kept), tm.attr(stat), tv.attr(stat), param(ts, stat), param(tb, stat)),
        outputs=(tx.attr(kept), tm.attr(stat), tv.attr(stat), tm.attr(stat), tv.attr(stat), tx.attr((-1,))),
    )
    return result


def vote(tx: RuleInput, c: int, axes: Sequence[int], like_x: Sequence[RuleInput],
          per_channel: Sequence[RuleInput]) -> tuple[int, ...]:
    """x's mapping restricted to ``axes``, merged with tensors shaped like x and with the
    per-channel tensors (which vote on C, when C is among ``axes``): see :func:`most_held`."""
    fits_x_mesh(tx, *like_x, *per_channel)
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


@rule("batch_norm", packed=True, others=FORWARD_OTHERS, mesh_of=FORWARD_MESH_OF)
def batch_norm_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Forward: per-channel tensors follow x's C; with running statistics x keeps every axis."""
    running = running_statistics(attrs)

    def axes(tx: RuleInput, c: int) -> Sequence[int]:
        return range(tx.ndim) if running else (c,)

    return bn_forward(specs, attrs, axes)


@rule("batch_norm_static", packed=True)
def batch_norm_infer_spmd_static(specs: Specs, attrs: Attrs) -> SpmdResult:
    """The registry's attribute-less forward (training, NCHW), fixed the same way."""
    return batch_norm_infer_spmd(*specs)


def per_channel(t: dict[str, RuleInput]) -> list[RuleInput]:
    return [v for k, v in t.items() if k in PER_CHANNEL]


def grad_result(t: dict[str, RuleInput], order: Sequence[str], kept: tuple[MeshDims, ...], c: int,
                 grad_partial: frozenset[int]) -> SpmdResult:
    stat = (kept[c],)
    inputs = []
    for name in order:
        if name == "x" or name == "out_grad":
            inputs.append(t[name].attr(kept))
        elif name == "reserve_space":
            inputs.append(param(t[name], (-1,)))
        else:
            inputs.append(param(t[name], stat))
    result = SpmdResult(
        inputs=tuple(inputs),
        outputs=(t["x"].attr(kept), param(t["scale"], stat, grad_partial), param(t["bias"], stat, grad_partial)),
    )
    return result


@rule("batch_norm_grad", packed=True, others=RULES["batch_norm_grad"].inputs[1:],
      mesh_of=RULES["batch_norm_grad"].inputs + ("x", "scale", "bias"))
def batch_norm_grad_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Grad: scale_grad/bias_grad sharded like C; Partial only over mesh dims that split other
    axes, which stay split only when the kernel uses the running statistics."""
    t = bn_grad_inputs(_GRAD_NAMES, specs, attrs)
    tx = t["x"]
    c = channel_axis(attrs[GRAD_FORMAT][1], tx.ndim)
    # the grad kernel's own test (trainable_statistics is not read)
    running = attrs[GRAD_AT["is_test"]][1] or attrs[GRAD_AT["use_global_stats"]][1]
    kept = with_coshards(vote(tx, c, range(tx.ndim) if running else (c,), (t["out_grad"],), per_channel(t)),
                         specs[0], specs[-1])
    partial = frozenset(m for axis, e in enumerate(kept) if axis != c for m in mesh_dims_of(e))
    return grad_result(t, _GRAD_ORDER, kept, c, partial)

