"""group_norm in the ``proposed`` profile.

Same signatures, same checks and error classes as the ``paddle`` profile (both run the family's
:mod:`.checks`); only the answers differ (see :mod:`paddle_spmd_port.ops.kit.proposed`).

What changes, and why::

    rule                  Paddle 3.3.1                            proposed
    group_norm (4 keys)   (sound: only N kept)                    the same; C cannot stay split (groups is
                                                                  one attribute for every rank)
"""

from __future__ import annotations

from collections.abc import Sequence

from ...types import DistTensorSpec, MeshDims, SpmdResult, mesh_dims_of
from ..kit.checks import Attrs, Specs, rule
from ..kit.proposed import grad_needs_mesh, ln_param, with_coshards
from ..kit.tensor import RuleInput
from .checks import gn_forward_inputs, gn_grad_inputs


def _gn_kept(x: DistTensorSpec, tx: RuleInput) -> tuple[MeshDims, ...]:
    """Only N keeps its sharding (co-shards too). C cannot: the op's ``groups`` is global, so a rank
    holding C/k channels would group them as if it held all C; the spatial axes are reduced."""
    return with_coshards((tx.dims_mapping[0],) + (-1,) * (tx.ndim - 1), x)


def _gn_forward(x: DistTensorSpec, tx: RuleInput, ts: RuleInput, tb: RuleInput) -> SpmdResult:
    kept = _gn_kept(x, tx)
    stat = (kept[0], -1)
    return SpmdResult(inputs=(tx.attr(kept), ln_param(ts), ln_param(tb)),
                      outputs=(tx.attr(kept), tx.attr(stat), tx.attr(stat)))


@rule("group_norm_base", packed=True)
def group_norm_infer_spmd_base(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Forward (Base): Paddle's answer (sound), with N's co-shard kept."""
    x, scale, bias = specs
    return _gn_forward(x, *gn_forward_inputs(x, scale, bias, ()))


@rule("group_norm", packed=True)
def group_norm_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Forward: as the Base rule (the attributes are checked, not needed)."""
    x, scale, bias = specs
    (_, epsilon), (_, groups), (_, data_format) = attrs
    return _gn_forward(x, *gn_forward_inputs(x, scale, bias, (("epsilon", epsilon), ("groups", groups),
                                                              ("data_format", data_format))))


#: The grads' answer check (:func:`~paddle_spmd_port.ops.kit.checks.rule`).
_GRAD_OTHERS = ("scale", "bias", "y", "mean", "variance", "y_grad")
_GRAD_MESH_OF = ("x", "scale", "bias", "y", "mean", "variance", "y_grad", "x", "scale", "bias")


def _gn_grad(x: DistTensorSpec, t: Sequence[RuleInput]) -> SpmdResult:
    tx, ts, tb, ty, tm, tv, tg = t
    kept = _gn_kept(x, tx)
    stat = (kept[0], -1)
    partial = frozenset(mesh_dims_of(kept[0]))
    grad_needs_mesh(partial, ts, tb)
    result = SpmdResult(
        inputs=(tx.attr(kept), ln_param(ts), ln_param(tb), ty.attr(kept), tm.attr(stat), tv.attr(stat),
                tg.attr(kept)),
        outputs=(tx.attr(kept), ln_param(ts, partial), ln_param(tb, partial)),
    )
    return result


@rule("group_norm_grad_base", packed=True, others=_GRAD_OTHERS, mesh_of=_GRAD_MESH_OF)
def group_norm_grad_infer_spmd_base(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Grad (Base): Paddle's answer (sound: scale_grad/bias_grad Partial over N's mesh dims)."""
    x, scale, bias, y, mean, variance, y_grad = specs
    return _gn_grad(x, gn_grad_inputs(x, scale, bias, y, mean, variance, y_grad, ()))


@rule("group_norm_grad", packed=True, others=_GRAD_OTHERS, mesh_of=_GRAD_MESH_OF)
def group_norm_grad_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Grad: as the Base rule."""
    x, scale, bias, y, mean, variance, y_grad = specs
    (_, epsilon), (_, groups), (_, data_format) = attrs
    return _gn_grad(x, gn_grad_inputs(x, scale, bias, y, mean, variance, y_grad,
                                      (("epsilon", epsilon), ("groups", groups), ("data_format", data_format))))

