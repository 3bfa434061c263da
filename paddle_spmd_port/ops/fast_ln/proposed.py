"""fast_ln in the ``proposed`` profile: the proposed layer_norm rules with begin_norm_axis = rank(x) - 1.

Same signatures, same checks and error classes as the ``paddle`` profile (both run the family's
:mod:`.checks`); only the answers differ (see :mod:`paddle_spmd_port.ops.kit.proposed`).

What changes, and why::

    rule                  Paddle 3.3.1                            proposed
    fast_ln(_grad)        layer_norm's; grad: bias_grad = the     the proposed layer_norm(_grad); bias_grad
                          scale's attr ([] @- for a None scale)   its own [-1], Partial over the leading dims
"""

from __future__ import annotations

from ...errors import InvalidSpecError
from ...types import DistAttr, SpmdResult, mesh_dims_of
from ..kit.checks import Attrs, Specs, rule
from ..kit.grid import RankOf
from ..layer_norm.proposed import layer_norm_grad_infer_spmd, layer_norm_infer_spmd
from .rules import _last_axis, _renamed

#: The answer form this profile changes (over ops/fast_ln/grid.py's, for tools/fuzz.py): the grad's
#: bias_grad is its own 1-D attr, whatever scale's rank.
ANSWER_RANKS: dict[str, dict[str, RankOf]] = {"fast_ln_grad": {"bias_grad": 1}}


@rule("fast_ln", packed=True)
def fast_ln_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Forward: the proposed layer_norm with begin_norm_axis = rank(x) - 1 (Paddle's is sound too)."""
    x, scale, bias = specs
    ((_, epsilon),) = attrs
    return layer_norm_infer_spmd(x, scale, bias, epsilon, _last_axis(x))


@rule("fast_ln_grad", packed=True)
def fast_ln_grad_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Grad: the proposed layer_norm_grad with begin_norm_axis = rank(x) - 1 (no partial input);
    bias_grad is its own 1-D attr, Partial over the leading mesh dims, on scale's mesh (x's when
    scale is None: the op makes bias_grad without a bias input)."""
    x, scale, mean, invvar, y_grad = specs
    ((_, epsilon),) = attrs
    try:  # scale also stands in for the bias Paddle passes: the same checks as the paddle profile
        full = layer_norm_grad_infer_spmd(x, scale, scale, mean, invvar, y_grad, epsilon, _last_axis(x))
    except InvalidSpecError as exc:
        raise _renamed(exc) from None
    x_attr = full.inputs[0]
    partial = frozenset(m for e in x_attr.dims_mapping[:-1] for m in mesh_dims_of(e))
    scale_grad = full.outputs[1]
    bias_grad = DistAttr((-1,), partial, scale_grad.mesh if scale_grad.mesh is not None else x_attr.mesh)
    return SpmdResult(inputs=full.inputs[:2] + full.inputs[3:], outputs=(full.outputs[0], scale_grad, bias_grad))

