"""layer_norm: ``LayerNormInferSpmd``, ``LayerNormInferSpmdReverse``, ``LayerNormGradInferSpmd``
(Paddle 3.3.1, layer_norm.cc at 01fbd77c).

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
"""

from __future__ import annotations

from functools import lru_cache

from ..errors import InvalidSpecError, PaddleInvalidArgument
from ..notation import ALPHABET, FORCED_REPLICATED, letters, mapping_for_axes, merge_shardings
from ..types import DistAttr, DistTensorSpec, SpmdResult
from ._tensor import (
    RuleInput,
    as_input,
    check_attrs,
    check_specs,
    on_meshes_of_other_ndim,
    require_mesh_dims_exist,
    require_ndim,
    require_x_mesh,
)

OP = "layer_norm"


def _check_begin_norm_axis(begin_norm_axis: int, x: RuleInput) -> None:
    check_attrs(("begin_norm_axis", begin_norm_axis))
    if x.ndim < 1:
        raise InvalidSpecError("x must have rank >= 1 for layer_norm", kind="invalid-spec:x:rank")
    if x.ndim > len(ALPHABET):
        raise InvalidSpecError(f"x has rank {x.ndim}; layer_norm's notation names at most {len(ALPHABET)} axes",
                               kind="invalid-spec:x:rank")
    if not 0 <= begin_norm_axis <= x.ndim:
        raise InvalidSpecError(
            f"begin_norm_axis={begin_norm_axis} is outside 0..{x.ndim} for x of rank {x.ndim}; "
            f"pass a value in that range (x.ndim - len(normalized_shape))",
            kind="invalid-spec:begin_norm_axis")


def _require_rank(t: RuleInput, want: int, why: str) -> None:
    if t.ndim != want:
        raise InvalidSpecError(f"{t.name} has rank {t.ndim}, but {why} requires rank {want}",
                               kind=f"invalid-spec:{t.name}:rank")


def _require_1d_params(*params: RuleInput) -> None:
    """scale/bias of the reverse rule: 1-D (or None), else the ``[-1]`` answer would not fit them."""
    for t in params:
        if not t.missing:
            _require_rank(t, 1, "layer_norm's scale/bias (the normalised sizes, flattened; the rule answers [-1])")


def _require_grad_meshes(*tensors: RuleInput) -> None:
    """mean, variance, out_grad of the grad rule: a spec without a mesh (dims_mapping ``[]``) of
    rank >= 1 makes Paddle read its mapping past the end (a crash, or a mesh dim answered on an
    attr without a mesh)."""
    for t in tensors:
        if t.mesh is None and t.ndim > 0:
            raise InvalidSpecError(
                f"{t.name} has no process mesh; layer_norm_grad reads its dims_mapping (Paddle crashes or "
                f"answers a mesh dim on an attr without a mesh); give {t.name} a ProcessMesh",
                kind=f"invalid-spec:{t.name}:mesh")


@lru_cache(maxsize=256)
def layer_norm_notation(ndim: int, begin_norm_axis: int) -> tuple[str, str]:
    """(x axes, mean axes) for forward/reverse: ``(ij1, ij)`` for ndim 3, b 2."""
    lead = letters(begin_norm_axis)
    return lead + FORCED_REPLICATED * (ndim - begin_norm_axis), lead


def layer_norm_infer_spmd(
    x: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
    epsilon: float = 1e-5,
    begin_norm_axis: int = 1,
) -> SpmdResult:
    """Forward rule. Inputs (x, scale, bias); outputs (out, mean, variance)."""
    tx, ts, tb = as_input(x, "x"), as_input(scale, "scale", optional=True), as_input(bias, "bias", optional=True)
    check_attrs(("epsilon", epsilon), ("begin_norm_axis", begin_norm_axis))
    require_ndim(ts, 1, OP)
    require_ndim(tb, 1, OP)
    require_x_mesh(tx)
    check_specs(("x", x), ("scale", scale), ("bias", bias))
    _check_begin_norm_axis(begin_norm_axis, tx)

    x_axes, mean_axes = layer_norm_notation(tx.ndim, begin_norm_axis)
    filled = tx.dims_mapping[:begin_norm_axis] + (-1,) * (tx.ndim - begin_norm_axis)
    merged = merge_shardings([(x_axes, filled)])
    stat = mapping_for_axes(mean_axes, merged)
    return SpmdResult.make(
        inputs=(tx.attr(filled), ts.attr((-1,)), tb.attr((-1,))),  # filled == merged: no mesh dim is used twice
        outputs=(tx.attr(mapping_for_axes(x_axes, merged)), tx.attr(stat), tx.attr(stat)),
    )


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
    tx, ts, tb = as_input(x, "x"), as_input(scale, "scale", optional=True), as_input(bias, "bias", optional=True)
    to, tm, tv = as_input(out, "out"), as_input(mean, "mean"), as_input(variance, "variance")
    check_attrs(("epsilon", epsilon), ("begin_norm_axis", begin_norm_axis))
    for t, label in ((to, "Out"), (tm, "Mean"), (tv, "Variance")):
        if t.ndim != len(t.dims_mapping):
            raise PaddleInvalidArgument(
                f"The Tensor {label}'s rank [{t.ndim}] and {label}'s dims_mapping size [{len(t.dims_mapping)}] "
                "are not matched.", kind=f"rank-vs-mapping:{t.name}")
    require_x_mesh(tx)
    check_specs(("x", x), ("scale", scale), ("bias", bias), ("out", out), ("mean", mean), ("variance", variance))
    _check_begin_norm_axis(begin_norm_axis, tx)
    _require_rank(to, tx.ndim, "out = layer_norm(x)")
    _require_rank(tm, begin_norm_axis, "mean of shape x.shape[:begin_norm_axis]")
    _require_rank(tv, begin_norm_axis, "variance of shape x.shape[:begin_norm_axis]")
    _require_1d_params(ts, tb)

    x_axes, mean_axes = layer_norm_notation(tx.ndim, begin_norm_axis)
    merged = merge_shardings([(x_axes, to.dims_mapping), (mean_axes, tm.dims_mapping),
                              (mean_axes, tv.dims_mapping)])  # PADDLE-QUIRK(ln-forced-key)
    stat = mapping_for_axes(mean_axes, merged)
    keep = {"keep_partial": True}  # PADDLE-QUIRK(ln-partial): reverse copies the incoming attrs
    result = SpmdResult.make(
        inputs=(tx.attr(mapping_for_axes(x_axes, merged), **keep), ts.attr((-1,), **keep), tb.attr((-1,), **keep)),
        outputs=(to.attr(mapping_for_axes(x_axes, merged), **keep), tm.attr(stat, **keep), tv.attr(stat, **keep)),
    )
    if on_meshes_of_other_ndim(tx, ts, tb, to, tm, tv):  # merged mesh dims of one mesh put on another
        owners = (("x", tx), ("scale", ts), ("bias", tb), ("out", to), ("mean", tm), ("variance", tv))
        require_mesh_dims_exist(result, owners, tx, (to, tm, tv, ts, tb))
    return result


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
    tx, ts, tb = as_input(x, "x"), as_input(scale, "scale", optional=True), as_input(bias, "bias", optional=True)
    tm, tv, tg = as_input(mean, "mean"), as_input(variance, "variance"), as_input(out_grad, "out_grad")
    check_attrs(("epsilon", epsilon), ("begin_norm_axis", begin_norm_axis))
    if begin_norm_axis < 0 or tx.ndim < begin_norm_axis:  # Paddle compares unsigned: negative b fails too
        raise PaddleInvalidArgument(
            f"The Tensor x's rank [{tx.ndim}] and begin_norm_axis [{begin_norm_axis}] are not matched.",
            kind="rank-vs-begin_norm_axis")
    for a, b_, label in ((tx, tg, "x's rank [{}] and Tensor out_grad's"),
                         (ts, tb, "scale's rank [{}] and Tensor bias's"),
                         (tm, tv, "mean's rank [{}] and Tensor variance's")):
        if a.ndim != b_.ndim:
            raise PaddleInvalidArgument(f"The Tensor {label.format(a.ndim)} rank [{b_.ndim}] are not matched.",
                                        kind=f"rank:{a.name}-vs-{b_.name}")
    require_x_mesh(tx)
    check_specs(("x", x), ("scale", scale), ("bias", bias), ("mean", mean), ("variance", variance),
                ("out_grad", out_grad))
    _check_begin_norm_axis(begin_norm_axis, tx)
    _require_rank(tm, begin_norm_axis, "mean of shape x.shape[:begin_norm_axis]")
    _require_grad_meshes(tm, tv, tg)

    b = begin_norm_axis
    if b > 0:
        x_axes = letters(tx.ndim)
        stat_axes = x_axes[:b]
        x_filled = tx.dims_mapping[:b] + (-1,) * (tx.ndim - b)
        og_filled = tg.dims_mapping[:b] + (-1,) * (tg.ndim - b)
        merged = merge_shardings([(x_axes, x_filled), (stat_axes, tm.dims_mapping), (stat_axes, tv.dims_mapping),
                                  (x_axes, og_filled)])
        x_attr = tx.attr(mapping_for_axes(x_axes, merged), keep_partial=True)
        mean_attr = tm.attr(mapping_for_axes(stat_axes, merged), keep_partial=True)
        var_attr = tv.attr(mapping_for_axes(stat_axes, merged), keep_partial=True)
        og_attr = tg.attr(mapping_for_axes(x_axes, merged))  # out_grad's partial is cleared first
    else:
        x_attr, mean_attr, var_attr, og_attr = tx.replicated(), tm.replicated(), tv.replicated(), tg.replicated()

    partial = frozenset(m for m in x_attr.dims_mapping[:b] if m != -1)

    def grad_of(t: RuleInput) -> DistAttr:
        rep = t.replicated()
        return rep if t.mesh is None else DistAttr(rep.dims_mapping, partial, rep.mesh)  # PADDLE-QUIRK(ln-grad-partial)

    result = SpmdResult.make(
        inputs=(x_attr, ts.replicated(), tb.replicated(), mean_attr, var_attr, og_attr),
        outputs=(og_attr, grad_of(ts), grad_of(tb)),
    )
    if on_meshes_of_other_ndim(tx, ts, tb, tm, tv, tg):  # merged mesh dims of one mesh put on another
        owners = (("x", tx), ("scale", ts), ("bias", tb), ("mean", tm), ("variance", tv), ("out_grad", tg),
                  ("x_grad", tg), ("scale_grad", ts), ("bias_grad", tb))
        require_mesh_dims_exist(result, owners, tx, (tm, tv, tg, ts, tb))
    return result
