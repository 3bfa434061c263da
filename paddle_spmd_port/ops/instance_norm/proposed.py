"""instance_norm in the ``proposed`` profile.

Same signatures, same checks and error classes as the ``paddle`` profile (both run the family's
:mod:`.checks`); only the answers differ (see :mod:`paddle_spmd_port.ops.kit.proposed`).

What changes, and why::

    rule                  Paddle 3.3.1                            proposed
    instance_norm(_grad)  scale/bias [-1] while C stays split;    scale/bias follow C; every spatial axis
                          a 5-D x keeps its last spatial axis     replicated; scale_grad/bias_grad follow C,
                          split; scale_grad/bias_grad [-1]        Partial over N's mesh dims, each on its own
                          Partial{N, C}                           tensor's mesh
"""

from __future__ import annotations

from ...types import DistTensorSpec, MeshDims, SpmdResult, mesh_dims_of
from ..kit.checks import Attrs, Specs, rule
from ..kit.proposed import grad_needs_mesh, param, with_coshards
from ..kit.tensor import RuleInput
from .checks import in_forward_inputs, in_grad_inputs


def _in_kept(x: DistTensorSpec, tx: RuleInput) -> tuple[MeshDims, ...]:
    """N and C keep x's sharding; every spatial axis (2 .. ndim-1) is replicated: the statistics
    reduce over all of them."""
    return with_coshards(tx.dims_mapping[:2] + (-1,) * (tx.ndim - 2), x)


@rule("instance_norm", packed=True, others=("scale", "bias"), mesh_of=("x", "scale", "bias", "x", "x", "x"))
def instance_norm_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Forward: N and C kept, scale and bias follow C, every spatial axis replicated."""
    x, scale, bias = specs
    ((_, epsilon),) = attrs
    tx, ts, tb = in_forward_inputs(x, scale, bias, epsilon)
    kept = _in_kept(x, tx)
    channel = kept[1:2]
    result = SpmdResult(inputs=(tx.attr(kept), param(ts, channel), param(tb, channel)),
                        outputs=(tx.attr(kept), tx.attr(kept[:2]), tx.attr(kept[:2])))
    return result


@rule("instance_norm_grad", packed=True, others=("scale", "bias", "saved_mean", "saved_variance", "y_grad"),
      mesh_of=("x", "scale", "saved_mean", "saved_variance", "y_grad", "x", "scale", "bias"))
def instance_norm_grad_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Grad: as the forward; scale_grad and bias_grad follow C (each on its own tensor's mesh),
    Partial over N's mesh dims."""
    x, scale, bias, saved_mean, saved_variance, y_grad = specs
    ((_, epsilon),) = attrs
    tx, ts, tb, tm, tv, tg = in_grad_inputs(x, scale, bias, saved_mean, saved_variance, y_grad, epsilon)
    kept = _in_kept(x, tx)
    channel = kept[1:2]
    partial = frozenset(mesh_dims_of(kept[0]))
    grad_needs_mesh(partial, ts, tb)
    result = SpmdResult(
        inputs=(tx.attr(kept), param(ts, channel), tm.attr(kept[:2]), tv.attr(kept[:2]), tg.attr(kept)),
        outputs=(tx.attr(kept), param(ts, channel, partial), param(tb, channel, partial)),
    )
    return result

