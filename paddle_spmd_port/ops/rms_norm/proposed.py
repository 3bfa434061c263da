"""rms_norm in the ``proposed`` profile.

Same signatures, same checks and error classes as the ``paddle`` profile (both run the family's
:mod:`.checks`); only the answers differ (see :mod:`paddle_spmd_port.ops.kit.proposed`).

What changes, and why::

    rule                  Paddle 3.3.1                            proposed
    rms_norm(_reverse,    (sound); reverse merges out's last      reverse: leading axes from out, then invvar
    _grad)                axis as the '1' key and raises on a     (first claim); grad: per axis the mesh dim
                          conflict; grad moves splits by cost     most of x, invvar, out_grad hold
"""

from __future__ import annotations

from ...notation import first_claim, most_held
from ...types import SpmdResult, mesh_dims_of
from ..kit.checks import Attrs, Specs, rule
from ..kit.proposed import fits_x_mesh, ln_param, with_coshards
from .checks import rms_forward_inputs, rms_grad_inputs, rms_reverse_inputs


@rule("rms_norm", packed=True)
def rms_norm_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Forward: every axis but the last keeps its sharding (co-shards too); no partial."""
    x, scale = specs
    ((_, epsilon),) = attrs
    tx, ts = rms_forward_inputs(x, scale, epsilon)
    kept = with_coshards(tx.dims_mapping[:-1] + (-1,), x)
    return SpmdResult(inputs=(tx.attr(kept), ln_param(ts)), outputs=(tx.attr(kept), tx.attr(kept[:-1])))


@rule("rms_norm_reverse", packed=True, others=("scale", "out", "invvar"), mesh_of=("x", "scale", "out", "invvar"))
def rms_norm_infer_spmd_reverse(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Reverse: x's leading axes from out, then invvar (no '1' merge: out's last axis is ignored,
    a conflict is resolved, not raised); nothing partial."""
    x, scale, out, invvar = specs
    ((_, epsilon),) = attrs
    tx, ts, to, tv = rms_reverse_inputs(x, scale, out, invvar, epsilon)
    fits_x_mesh(tx, to, tv)
    claimed = first_claim(to.dims_mapping[:-1], tv.dims_mapping) if tx.ndim > 1 else ()
    kept = with_coshards(claimed + (-1,), out)
    result = SpmdResult(inputs=(tx.attr(kept), ln_param(ts)), outputs=(to.attr(kept), tv.attr(kept[:-1])))
    return result


@rule("rms_norm_grad", packed=True, others=("scale", "invvar", "out_grad"),
      mesh_of=("x", "scale", "invvar", "out_grad", "out_grad", "scale"))
def rms_norm_grad_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Grad: x, invvar and out_grad agree on the leading axes, per axis the mesh dim most of them
    hold (ties: x, invvar, out_grad; no split moves to another axis); scale_grad Partial over them."""
    x, scale, invvar, out_grad = specs
    ((_, epsilon),) = attrs
    tx, ts, tv, tg = rms_grad_inputs(x, scale, invvar, out_grad, epsilon)
    fits_x_mesh(tx, tv, tg)
    kept = with_coshards(most_held(tx.dims_mapping[:-1], tv.dims_mapping, tg.dims_mapping[:-1]) + (-1,), x, out_grad)
    lead = kept[:-1]
    partial = frozenset(m for e in lead for m in mesh_dims_of(e))
    result = SpmdResult(inputs=(tx.attr(kept), ln_param(ts), tv.attr(lead), tg.attr(kept)),
                        outputs=(tg.attr(kept), ln_param(ts, partial)))
    return result

