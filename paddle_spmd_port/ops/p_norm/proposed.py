"""p_norm, the ``proposed`` profile: corrected rules, sound for every porder.

What changes from Paddle 3.3.1 (:mod:`.rules`) and why (docs/ops/p_norm.md works the numbers):

* forward: a reduced axis stays sharded (out Partial(SUM)) only for porder 0 and 1, whose norms
  are sums of per-element terms (nonzero counts, absolute values), so the shards' norms add up to
  the norm. For any other porder the reduced axes are made replicated in x's wanted mapping (x is
  gathered along them before the kernel runs) and out carries no partial status. (porder = +-inf
  would be exact as Partial(MAX) / Partial(MIN); a :class:`~paddle_spmd_port.types.DistAttr` holds
  SUM only, so the gather is the answer here.)
* reverse: no raising on a keepdims out whose size-1 axes are split along different mesh dims:
  those axes are answered -1 (a size-1 axis is never worth splitting), and out is answered as the
  forward rule would make it from the x inferred, partial status cleared (Paddle hands out back
  as given, even Partial, though no forward answer makes it so).
* grad: as Paddle, x_grad follows out_grad with -1 on the reduced axes (each answer on its own
  tensor's mesh; an out_grad on a mesh of other dims than x's is refused); with keepdims a split
  size-1 axis of out_grad is answered -1 too (Paddle copies it onto x's full-size axis, where the
  shards holding no out_grad row cannot compute their part of x_grad).

Worked table, 2x3 mesh, x [4,6,8]::

    rule     input                                   x answered    out answered
    forward  x [0,1,-1] axis=1 porder=2              [0,-1,-1]     [0,-1]
    forward  x [0,1,-1] axis=1 porder=1              [0,1,-1]      [0,-1] P{1}
    reverse  out [1,0,-1] asvector keepdims          [-1,-1,-1]    [-1,-1,-1]
    grad     out_grad [1,0,-1] axis=1 keepdims       x, x_grad [1,-1,-1]; out, out_grad [1,-1,-1]

The checks are the paddle profile's (:mod:`.checks`).
"""

from __future__ import annotations

from ...types import DistAttr, SpmdResult
from ..kit.checks import Attrs, Specs, rule
from ..kit.tensor import on_meshes_of_other_ndim, require_mesh_dims_exist
from .checks import forward_inputs, grad_inputs, reduced_axes, reverse_inputs

#: porder values whose norm is a sum of per-element terms: Partial(SUM) of the shards' norms is exact.
SUMMABLE = frozenset({0.0, 1.0})


def _image(mapping: tuple[int, ...], reduced: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    """out's mapping for an x mapping: reduced axes dropped, or -1 with keepdims."""
    return tuple(-1 if a in reduced else m for a, m in enumerate(mapping) if keepdims or a not in reduced)


def _attrs(attrs: Attrs) -> tuple[float, int, float, bool, bool]:
    (_, porder), (_, axis), (_, epsilon), (_, keepdims), (_, asvector) = attrs
    return porder, axis, epsilon, keepdims, asvector


# packed: the signature and defaults come from the declared spec (rules.py writes them out once)
@rule("p_norm", packed=True)
def p_norm_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Forward rule: Partial(SUM) only where it is exact, else the reduced axes gathered."""
    (x,) = specs
    porder, axis, epsilon, keepdims, asvector = _attrs(attrs)
    tx = forward_inputs(x, (porder, axis, epsilon, keepdims, asvector))
    reduced = reduced_axes(tx.ndim, axis, bool(asvector))
    dm = tx.dims_mapping
    if porder in SUMMABLE:  # by value, no float(): an int beyond a float's range is simply not 0 or 1
        partial = frozenset(dm[a] for a in reduced if dm[a] != -1)
    else:
        dm, partial = tuple(-1 if a in reduced else m for a, m in enumerate(dm)), frozenset()
    return SpmdResult.make(inputs=(tx.attr(dm),),
                           outputs=(DistAttr.make(_image(dm, reduced, bool(keepdims)), partial, tx.mesh),))


@rule("p_norm_reverse", packed=True)
def p_norm_infer_spmd_reverse(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Reverse rule: x from out's kept axes; out answered as the forward image of that x."""
    x, out = specs
    porder, axis, epsilon, keepdims, asvector = _attrs(attrs)
    tx, to = reverse_inputs(x, out, (porder, axis, epsilon, keepdims, asvector))
    reduced = reduced_axes(tx.ndim, axis, bool(asvector))
    kept = [a for a in range(tx.ndim) if keepdims or a not in reduced]
    x_mapping = [-1] * tx.ndim
    for a, m in zip(kept, to.dims_mapping, strict=True):
        if a not in reduced:
            x_mapping[a] = m
    xm = tuple(x_mapping)
    result = SpmdResult.make(inputs=(tx.attr(xm),),
                             outputs=(DistAttr.make(_image(xm, reduced, bool(keepdims)), frozenset(), to.mesh),))
    # checked here, not by @rule's others: x may come without a mesh (the rule never reads its attr)
    if on_meshes_of_other_ndim(tx, to):  # out's mesh dims put on x's mesh
        require_mesh_dims_exist(result, (("x", tx), ("out", to)), tx, (to,))
    return result


@rule("p_norm_grad", packed=True)
def p_norm_grad_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Grad rule: x_grad follows out_grad, -1 on every reduced axis; partial status cleared."""
    x, out, out_grad = specs
    porder, axis, epsilon, keepdims, asvector = _attrs(attrs)
    tx, to, tg = grad_inputs(x, out, out_grad, (porder, axis, epsilon, keepdims, asvector))
    reduced = reduced_axes(tx.ndim, axis, bool(asvector))
    x_mapping = [-1] * tx.ndim
    for a, m in zip([a for a in range(tx.ndim) if keepdims or a not in reduced], tg.dims_mapping, strict=True):
        if a not in reduced:
            x_mapping[a] = m
    xm = tuple(x_mapping)
    # each attr on its own tensor's mesh (Paddle puts all four on out_grad's): an out_grad on a mesh of
    # other dims than x's is then refused by the answer's check instead of naming a mesh dim x's mesh lacks
    x_attr = DistAttr.make(xm, frozenset(), tx.mesh)
    o_map = _image(xm, reduced, bool(keepdims))
    result = SpmdResult.make(inputs=(x_attr, DistAttr.make(o_map, frozenset(), to.mesh),
                                     DistAttr.make(o_map, frozenset(), tg.mesh)), outputs=(x_attr,))
    if on_meshes_of_other_ndim(tx, to, tg):
        require_mesh_dims_exist(result, (("x", tx), ("out", to), ("out_grad", tg), ("x_grad", tx)), tx, (to, tg))
    return result

