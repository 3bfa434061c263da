"""layer_norm in the ``proposed`` profile: Paddle's rules without the partial inputs and the
forced-key merge.

Same signatures, same checks and error classes as the ``paddle`` profile (both run the family's
:mod:`.checks`); only the answers differ (see :mod:`paddle_spmd_port.ops.kit.proposed`).

What changes, and why::

    rule                  Paddle 3.3.1                            proposed
    layer_norm            (sound)                                 the same answer, built without the '1' merge
    layer_norm_reverse    keeps incoming Partial on x, scale,     partial cleared; the normalised axes of out
                          bias, out, mean, variance; merges the   are simply ignored; conflicting leading-axis
                          forced '1' axes as one key (raises)     shardings resolved by priority (out, mean,
                                                                  variance) instead of raising
    layer_norm_grad       keeps x's, mean's, variance's Partial   partial cleared; conflicts resolved per
                          (fed into a non-linear kernel); raises  axis by the mesh dim most of x, mean,
                          on conflicting shardings                variance, out_grad hold (fewest moves)

Worked table, 2x3 mesh, x [8,7,10] with b=2::

    rule / mode               given                          proposed inputs                 proposed outputs
    layer_norm_reverse        out [0,-1,-1] P{1}             x [0,-1,-1]                      out [0,-1,-1] (no P)
    layer_norm_grad           x [0,-1,-1] P{1}               x [0,-1,-1]                      scale/bias_grad [-1] P{0}
"""

from __future__ import annotations

from ...notation import dedupe, first_claim, most_held
from ...types import SpmdResult, mesh_dims_of
from ..kit.checks import Attrs, Specs, rule
from ..kit.proposed import fits_x_mesh, ln_param, with_coshards
from .checks import ln_forward_inputs, ln_grad_inputs, ln_reverse_inputs


@rule("layer_norm", packed=True)
def layer_norm_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Forward: axes before b keep their sharding, the rest are replicated; no partial."""
    x, scale, bias = specs
    (_, epsilon), (_, begin_norm_axis) = attrs
    tx, ts, tb = ln_forward_inputs(x, scale, bias, epsilon, begin_norm_axis)
    b = begin_norm_axis
    kept = with_coshards(dedupe(tx.dims_mapping[:b]) + (-1,) * (tx.ndim - b), x)
    lead = kept[:b]
    return SpmdResult(inputs=(tx.attr(kept), ln_param(ts), ln_param(tb)),
                      outputs=(tx.attr(kept), tx.attr(lead), tx.attr(lead)))


@rule("layer_norm_reverse", packed=True, others=("scale", "bias", "out", "mean", "variance"),
      mesh_of=("x", "scale", "bias", "out", "mean", "variance"))
def layer_norm_infer_spmd_reverse(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Reverse: x's leading axes from out, then mean, then variance; nothing partial."""
    x, scale, bias, out, mean, variance = specs
    (_, epsilon), (_, begin_norm_axis) = attrs
    tx, ts, tb, to, tm, tv = ln_reverse_inputs(x, scale, bias, out, mean, variance, epsilon, begin_norm_axis)
    b = begin_norm_axis
    fits_x_mesh(tx, to, tm, tv)
    claimed = first_claim(to.dims_mapping[:b], tm.dims_mapping, tv.dims_mapping) if b else ()
    kept = with_coshards(claimed + (-1,) * (tx.ndim - b), out)
    lead = kept[:b]
    result = SpmdResult(inputs=(tx.attr(kept), ln_param(ts), ln_param(tb)),
                        outputs=(to.attr(kept), tm.attr(lead), tv.attr(lead)))
    return result


@rule("layer_norm_grad", packed=True, others=("scale", "bias", "mean", "variance", "out_grad"),
      mesh_of=("x", "scale", "bias", "mean", "variance", "out_grad", "out_grad", "scale", "bias"))
def layer_norm_grad_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Grad: x, out_grad, mean and variance agree on the leading axes (per axis the mesh dim most
    of them hold, ties in Paddle's merge order x, mean, variance, out_grad); no partial input;
    scale_grad/bias_grad Partial over the mesh dims of those axes."""
    x, scale, bias, mean, variance, out_grad = specs
    (_, epsilon), (_, begin_norm_axis) = attrs
    tx, ts, tb, tm, tv, tg = ln_grad_inputs(x, scale, bias, mean, variance, out_grad, epsilon, begin_norm_axis)
    b = begin_norm_axis
    fits_x_mesh(tx, tm, tv, tg)
    held = most_held(tx.dims_mapping[:b], tm.dims_mapping, tv.dims_mapping, tg.dims_mapping[:b]) if b else ()
    kept = with_coshards(held + (-1,) * (tx.ndim - b), x, out_grad)
    lead = kept[:b]
    partial = frozenset(m for e in lead for m in mesh_dims_of(e))
    result = SpmdResult(
        inputs=(tx.attr(kept), ln_param(ts), ln_param(tb), tm.attr(lead), tv.attr(lead), tg.attr(kept)),
        outputs=(tg.attr(kept), ln_param(ts, partial), ln_param(tb, partial)),
    )
    return result

