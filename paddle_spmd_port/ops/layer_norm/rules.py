"""layer_norm: ``LayerNormInferSpmd``, ``LayerNormInferSpmdReverse``, ``LayerNormGradInferSpmd``
(Paddle 3.3.1's layer_norm.cc; the revision read: docs/measurements/2026-12-01-rules-notes.md).

Notation, ``b = begin_norm_axis``, x of rank 3 and b = 2 (``'1'`` = forced replicated)::

    forward   ij1, 1, 1  ->  ij1, ij, ij          x, scale, bias -> out, mean, variance
    reverse   (same notation; merges out, mean, variance and infers x)
    grad      ijk, -, -, ij, ij, ijk  ->  ijk, -, -   x, scale, bias, mean, variance, out_grad
                                                       -> x_grad, scale_grad, bias_grad

Axes before b keep their sharding; axes from b on are normalised and become replicated.
mean and variance have shape ``x.shape[:b]``.

Worked table, 2x3 mesh, x [64,32,1024]::

    rule     input mappings                    inputs out            outputs
    forward  x [1,-1,-1] b=2                   [1,-1,-1] [-1] [-1]   [1,-1,-1] [1,-1] [1,-1]
    forward  x [0,1,-1]  b=1                   [0,-1,-1] [-1] [-1]   [0,-1,-1] [0] [0]
    forward  x [0,0,-1]  b=2 (invalid input)   [0,0,-1] ...          [0,-1,-1] [0,-1] [0,-1]
    reverse  out [-1,-1,-1] mean [0,-1]        [0,1,-1] [-1] [-1]    [0,1,-1] [0,1] [0,1]
             var [-1,1] b=2
    reverse  out [-1,-1,0] mean [-1,0] b=2     [-1,-1,-1] ...        mean loses dim 0 to key '1'
    grad     x [0,-1,1] og [-1,-1,0] b=2       x/og [0,-1,-1]        x_grad [0,-1,-1],
                                                                     scale/bias_grad [-1] P{0}

Quirks kept on purpose (Paddle 3.3.1 does this):

* PADDLE-QUIRK(ln-scale-rank): forward and reverse answer ``[-1]`` for scale and bias whatever
  their rank (the forward rule checks they are 1-D; for the reverse rule the port rejects any
  other rank, as the answer would not fit the tensor); the grad rule keeps their rank
  (``GetReplicatedDistAttr``).
* PADDLE-QUIRK(ln-forced-key): the reverse rule merges the ``'1'`` axes of out as one shared
  key (see :mod:`paddle_spmd_port.notation`): two sharded normalised axes raise, and one can
  steal a mesh dim from mean/variance.
* PADDLE-QUIRK(ln-partial): the forward rule clears every partial status; the reverse rule
  keeps the incoming partial status of all six tensors; the grad rule keeps x's, mean's and
  variance's, clears out_grad's, and x_grad copies out_grad's final attr (mesh included).
* PADDLE-QUIRK(ln-grad-partial): scale_grad/bias_grad are replicated and Partial(SUM) on the
  mesh dims that split x's axes before b (numerically right), unless scale/bias is None.

Port-only checks (Paddle crashes or accepts garbage): x needs a mesh and rank >= 1;
0 <= begin_norm_axis <= rank(x) (negative: Paddle raises a bare ``basic_string::_M_create``;
larger: Paddle segfaults); mean/variance rank must equal begin_norm_axis and out's rank x's;
x of rank <= 18 (the notation's letters); reverse: scale/bias 1-D; grad: mean, variance and out_grad
on a mesh (a spec without one makes Paddle crash or answer a mesh dim on an attr without a mesh).
These checks are :mod:`.checks`' (shared with the ``proposed`` profile).

Under the ``mirror`` policy each of those refusals is answered by :mod:`.raw`, Paddle's steps on the
raw input (fast_ln's rules too), or refused naming why (Paddle crashes, or reads or writes memory it
never set).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from ...notation import FORCED_REPLICATED, letters, mapping_for_axes, merge_shardings
from ...types import DistAttr, DistTensorSpec, SpmdResult
from ..kit.checks import RuleFn, rule
from ..kit.raw_mapping import require_paddle_profile
from ..kit.strictness import mirror_via
from ..kit.tensor import RuleInput
from . import raw
from .checks import STRICTNESS, ln_forward_inputs, ln_grad_inputs, ln_reverse_inputs


@lru_cache(maxsize=256)
def layer_norm_notation(ndim: int, begin_norm_axis: int) -> tuple[str, str]:
    """(x axes, mean axes) for forward/reverse: ``(ij1, ij)`` for ndim 3, b 2."""
    lead = letters(begin_norm_axis)
    return lead + FORCED_REPLICATED * (ndim - begin_norm_axis), lead


@rule("layer_norm")
def layer_norm_infer_spmd(
    x: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
    epsilon: float = 1e-5,
    begin_norm_axis: int = 1,
) -> SpmdResult:
    """Forward rule. Inputs (x, scale, bias); outputs (out, mean, variance)."""
    tx, ts, tb = ln_forward_inputs(x, scale, bias, epsilon, begin_norm_axis)

    # Paddle merges x alone in its notation (ij1: the axes from b on forced to -1). A valid x splits
    # along each mesh dim once at most, so the merge hands that filled mapping back unchanged.
    b = begin_norm_axis  # the first normalised axis
    out = tx.dims_mapping[:b] + (-1,) * (tx.ndim - b)
    x_attr = tx.attr(out)         # x's wanted attr and out's (partial cleared)
    stat = tx.attr(out[:b])       # mean and variance: x's leading axes
    return SpmdResult.make(inputs=(x_attr, ts.attr((-1,)), tb.attr((-1,))), outputs=(x_attr, stat, stat))


@rule("layer_norm_reverse", others=("out", "mean", "variance", "scale", "bias"),
      mesh_of=("x", "scale", "bias", "out", "mean", "variance"))
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
    """Reverse rule (the registry's ``infer_backward``): infers x from out, mean and variance.
    The incoming dims_mappings of x, scale and bias are ignored."""
    tx, ts, tb, to, tm, tv = ln_reverse_inputs(x, scale, bias, out, mean, variance, epsilon, begin_norm_axis)

    x_axes, mean_axes = layer_norm_notation(tx.ndim, begin_norm_axis)
    merged = merge_shardings([(x_axes, to.dims_mapping), (mean_axes, tm.dims_mapping),
                              (mean_axes, tv.dims_mapping)])  # PADDLE-QUIRK(ln-forced-key)
    x_mapping, stat = mapping_for_axes(x_axes, merged), mapping_for_axes(mean_axes, merged)
    keep = True  # PADDLE-QUIRK(ln-partial): reverse copies the incoming attrs, partial status included
    result = SpmdResult.make(
        inputs=(tx.attr(x_mapping, keep_partial=keep), ts.attr((-1,), keep_partial=keep),
                tb.attr((-1,), keep_partial=keep)),
        outputs=(to.attr(x_mapping, keep_partial=keep), tm.attr(stat, keep_partial=keep),
                 tv.attr(stat, keep_partial=keep)),
    )
    return result


@rule("layer_norm_grad", others=("mean", "variance", "out_grad", "scale", "bias"),
      mesh_of=("x", "scale", "bias", "mean", "variance", "out_grad", "out_grad", "scale", "bias"))
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
    """Grad rule. Inputs (x, scale, bias, mean, variance, out_grad); outputs (x_grad,
    scale_grad, bias_grad)."""
    tx, ts, tb, tm, tv, tg = ln_grad_inputs(x, scale, bias, mean, variance, out_grad, epsilon, begin_norm_axis)

    b = begin_norm_axis
    if b > 0:
        x_axes = letters(tx.ndim)
        stat_axes = x_axes[:b]
        x_filled = tx.dims_mapping[:b] + (-1,) * (tx.ndim - b)
        og_filled = tg.dims_mapping[:b] + (-1,) * (tg.ndim - b)
        merged = merge_shardings([(x_axes, x_filled), (stat_axes, tm.dims_mapping), (stat_axes, tv.dims_mapping),
                                  (x_axes, og_filled)])
        x_mapping, stat = mapping_for_axes(x_axes, merged), mapping_for_axes(stat_axes, merged)
        x_attr = tx.attr(x_mapping, keep_partial=True)
        mean_attr = tm.attr(stat, keep_partial=True)
        var_attr = tv.attr(stat, keep_partial=True)
        og_attr = tg.attr(x_mapping)  # out_grad's partial is cleared first
        partial = frozenset(m for m in x_mapping[:b] if m != -1)
    else:
        x_attr, mean_attr, var_attr, og_attr = tx.replicated(), tm.replicated(), tv.replicated(), tg.replicated()
        partial = frozenset()

    def grad_of(t: RuleInput) -> DistAttr:
        rep = t.replicated()  # PADDLE-QUIRK(ln-grad-partial): Partial(SUM) over x's leading mesh dims
        return rep if t.mesh is None else DistAttr.make(rep.dims_mapping, partial, rep.mesh)

    result = SpmdResult.make(
        inputs=(x_attr, ts.replicated(), tb.replicated(), mean_attr, var_attr, og_attr),
        outputs=(og_attr, grad_of(ts), grad_of(tb)),
    )
    return result


# --------------------------------------------------------------------------- the mirror policy
def _raw_body(key: str) -> Any:
    """The mirror of rule ``key``: Paddle's rule on the raw arguments (:mod:`.raw`), for the paddle
    profile's function only."""
    name = {"layer_norm": "forward", "layer_norm_reverse": "reverse", "layer_norm_grad": "grad"}[key]

    def answer(fn: RuleFn, *args: Any, **kwargs: Any) -> SpmdResult:
        require_paddle_profile(fn, args, kwargs)
        bound = inspect.signature(fn).bind(*args, **kwargs)
        bound.apply_defaults()
        model: Callable[..., SpmdResult] = getattr(raw, name)  # (looked up per call: tests swap in mutants)
        return model(*bound.arguments.values())

    return answer


#: The mirror policy's answers: every declared check of the family (:data:`.checks.STRICTNESS`) that
#: names a rule key among its ``mirror_keys`` is answered by :mod:`.raw`'s model of that rule.
MIRRORED_RAW = tuple(
    mirror_via(key, decl.check, _raw_body(key), f"{key}: Paddle's rule on the raw input; :mod:`.raw`.", __name__)
    for decl in STRICTNESS.declared for key in decl.mirror_keys)
