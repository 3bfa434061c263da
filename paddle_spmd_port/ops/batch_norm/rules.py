"""batch_norm: ``BatchNormInferSpmd``, ``BatchNormInferSpmdStatic``, ``BatchNormGradInferSpmd``
(Paddle 3.3.1's batch_norm.cc; the revision read: docs/measurements/2026-12-01-rules-notes.md).

Notation (channel axis ``c`` from data_format, here NCHW so c = j)::

    forward   ijkl, j, j, j, j  ->  ijkl, j, j, j, j, -     x, mean, variance, scale, bias ->
                                                          out, mean_out, variance_out,
                                                          saved_mean, saved_variance, reserve_space
    grad      ijkl, j, j, j, j, j, j, -, ijkl  ->  ijkl, j, j

Only the channel axis keeps its sharding; every other axis, the batch axis included, is forced
to replicated. ``c = 1 if data_format[1] == 'C' else ndim - 1`` (a character test: NC, NCL,
NCHW, NCDHW -> 1; NLC, NHWC, NDHWC -> last axis; :func:`.layout.channel_axis`). The checks
before the answer are :mod:`.checks`' (shared with the other profiles).

Worked table, 2x3 mesh, x [8,6,4,4] (d = x.dims_mapping[c])::

    data_format  x             inputs                          outputs
    NCHW         [0,1,-1,-1]   [-1,1,-1,-1] [1] [1] [-1] [-1]   [-1,1,-1,-1] [1] [1] [1] [1] [-1]
    NCHW         [0,-1,-1,1]   all -1                           all -1
    NHWC         [0,-1,-1,1]   [-1,-1,-1,1] [1] [1] [-1] [-1]   [-1,-1,-1,1] [1] [1] [1] [1] [-1]
    grad NCHW    [0,1,-1,-1]   x/out_grad [-1,1,-1,-1], scale/bias/reserve [-1], stats [1]
                               -> x_grad [-1,1,-1,-1], scale_grad [-1] P{1}, bias_grad [-1] P{1}

Quirks kept on purpose (Paddle 3.3.1 does this):

* PADDLE-QUIRK(bn-ignored-stats): the incoming dims_mappings of mean, variance, scale and bias
  are ignored, and every input's partial status is dropped.
* PADDLE-QUIRK(bn-scale-replicated): scale and bias are forced to [-1] even when C stays split;
  with more than one rank along that mesh dim the kernel then fails on a shape mismatch.
* PADDLE-QUIRK(bn-grad-partial): scale_grad / bias_grad are [-1] Partial(SUM) over C's mesh dim,
  although each rank holds different channels (Shard(0) would be right).
* PADDLE-QUIRK(bn-grad-og-ignored): the grad rule reads only x; out_grad's sharding and partial
  status are ignored, and every grad input takes its mesh from x.
* PADDLE-QUIRK(bn-static-nchw): the registry's ``batch_norm`` is ``BatchNormInferSpmdStatic``,
  which takes no attributes and so always uses NCHW.

Port-only checks (Paddle crashes or accepts garbage): x needs a mesh; an unknown or empty
data_format; scale/bias None while C is split in the grad rule (Paddle: SIGSEGV, it sets partial
on an attr without a mesh).
"""

from __future__ import annotations

import inspect
from typing import Any, cast

from ...errors import InvalidSpecError
from ...notation import ALPHABET
from ...types import DistAttr, DistTensorSpec, SpmdResult
from ..kit.checks import Attrs, RuleFn, Specs, input_names, rule
from ..kit.layout import channel_axis, channel_first
from ..kit.raw_mapping import answer_raw, copy_overwriting, merge_raw, read_back, remapped
from ..kit.strictness import argument, mirror_via
from ..kit.tensor import RuleInput
from .checks import FORWARD_AT, GRAD_AT, MIRRORED, bn_forward_inputs, bn_grad_inputs

_FORMAT, _GRAD_FORMAT = FORWARD_AT["data_format"], GRAD_AT["data_format"]
_GRAD_NAMES = input_names("batch_norm_grad")


def _keep_channel_only(x: RuleInput, c: int) -> tuple[int, ...]:
    """x's mapping with every axis but ``c`` replicated. Paddle then merges it alone in x's notation
    (``ijkl``) and reads out and the statistics (``j``) from the merge; one mapping that splits along
    a mesh dim once at most (a valid x) merges to itself, so out is this mapping and the statistics
    ``(kept[c],)``."""
    kept = [-1] * x.ndim
    kept[c] = x.dims_mapping[c]
    return tuple(kept)


@rule("batch_norm", packed=True, others=("mean", "variance", "scale", "bias"),
      mesh_of=("x", "mean", "variance", "scale", "bias", "x", "mean", "variance", "mean", "variance", "x"))
def batch_norm_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Forward rule. Inputs (x, mean, variance, scale, bias); outputs (out, mean_out,
    variance_out, saved_mean, saved_variance, reserve_space). Only data_format is read."""
    tx, tm, tv, ts, tb = bn_forward_inputs(specs, attrs)
    c = channel_axis(attrs[_FORMAT][1], tx.ndim)

    kept = _keep_channel_only(tx, c)
    stat = (kept[c],)
    x_attr = tx.attr(kept)
    mean_attr, var_attr = tm.attr(stat), tv.attr(stat)
    result = SpmdResult.make(
        inputs=(x_attr, mean_attr, var_attr, ts.attr((-1,)), tb.attr((-1,))),
        outputs=(
            x_attr,                                   # out
            mean_attr, var_attr,                      # mean_out, variance_out
            mean_attr, var_attr,                      # saved_mean, saved_variance
            tx.attr((-1,)),                           # reserve_space
        ),
    )
    return result


@rule("batch_norm_static")
def batch_norm_infer_spmd_static(
    x: DistTensorSpec,
    mean: DistTensorSpec,
    variance: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
) -> SpmdResult:
    """The registry's ``batch_norm``: the forward rule with the header defaults (always NCHW)."""
    return batch_norm_infer_spmd(x, mean, variance, scale, bias)


@rule("batch_norm_grad", packed=True, others=("scale", "bias"), mesh_of=("x",) * 10 + ("scale", "bias"))
def batch_norm_grad_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Grad rule. Inputs: the nine tensors in signature order; outputs (x_grad, scale_grad,
    bias_grad)."""
    t = bn_grad_inputs(_GRAD_NAMES, specs, attrs)
    tx = t["x"]
    c = channel_axis(attrs[_GRAD_FORMAT][1], tx.ndim)

    kept = _keep_channel_only(tx, c)
    stat = (kept[c],)
    partial = frozenset(m for m in kept if m != -1)
    for name in ("scale", "bias"):
        if partial and t[name].mesh is None:
            raise InvalidSpecError(
                f"{name} is None while the channel axis is split along mesh dim {kept[c]}: Paddle then marks "
                f"{name}_grad partial on an attr without a mesh and crashes; pass a {name} spec or replicate C",
                kind=f"invalid-spec:{name}:none-with-sharded-c")
    from_x = tx.attr  # PADDLE-QUIRK(bn-grad-og-ignored): every grad input takes x's mesh
    ts, tb = t["scale"], t["bias"]
    one, stat_attr = from_x((-1,)), from_x(stat)
    result = SpmdResult.make(
        inputs=(from_x(kept), one, one, stat_attr, stat_attr, stat_attr, stat_attr, one,
                from_x(kept)),  # out_grad
        outputs=(
            tx.attr(kept),
            DistAttr.make((-1,), partial, ts.mesh),  # PADDLE-QUIRK(bn-grad-partial)
            DistAttr.make((-1,), partial, tb.mesh),
        ),
    )
    return result


# --------------------------------------------------------------------------- the mirror policy
def _layout_of(fn: RuleFn, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """The valid layout Paddle's rule reads ``data_format`` as: its second character 'C' means the
    channel is axis 1, anything else the last axis (a one-letter string's second character is its
    terminating NUL); an empty string is read past its end, so nothing can be mirrored. A rule
    without the attribute (``batch_norm_static``) reads NCHW."""
    if "data_format" not in inspect.signature(fn).parameters:
        return "NCHW"
    fmt = argument(fn, args, kwargs, "data_format")
    if not isinstance(fmt, str):
        raise InvalidSpecError(f"data_format {fmt!r} is not a string: no answer to mirror",
                               kind="invalid-spec:data_format")
    if not fmt:
        raise InvalidSpecError(f"data_format {fmt!r}: Paddle's rule reads past the end of it (memory it never "
                               "set): no answer to mirror", kind="invalid-spec:data_format:empty")
    return "NCHW" if channel_first(fmt) else "NHWC"


def _channel_copy(x: DistTensorSpec, layout: str) -> tuple[list[int], dict[str, int], int]:
    """Paddle's copy of x's mapping (every axis but the channel replicated), its merge, and the
    channel axis."""
    rank = len(x.shape)
    c = 1 if channel_first(layout) else rank - 1
    copy = copy_overwriting(x, range(rank))  # (every axis, the channel's entry written back after)
    copy[c] = cast(int, x.dims_mapping[c])
    return copy, merge_raw(rank, copy), c


def _forward_raw(fn: RuleFn, *args: Any, **kwargs: Any) -> SpmdResult:
    """The forward rules on x's raw mapping (:mod:`~..kit.raw_mapping`): x answered with Paddle's copy,
    out and the statistics read back from its merge."""
    layout = _layout_of(fn, args, kwargs)

    def patch(base: SpmdResult, raw: dict[str, Any]) -> SpmdResult:
        x = raw["x"]
        copy, merged, c = _channel_copy(x, layout)
        letters = ALPHABET[:len(x.shape)]
        stat = read_back(letters[c], merged)
        (xi, mi, vi, si, bi), (out, mo, vo, sm, sv, rs) = base.inputs, base.outputs
        return SpmdResult.make(
            inputs=(remapped(xi, copy), remapped(mi, stat), remapped(vi, stat), si, bi),
            outputs=(remapped(out, read_back(letters, merged)), remapped(mo, stat), remapped(vo, stat),
                     remapped(sm, stat), remapped(sv, stat), rs))

    given = {"data_format": layout} if "data_format" in inspect.signature(fn).parameters else {}
    return answer_raw(fn, args, kwargs, patch, **given)


def _grad_raw(fn: RuleFn, *args: Any, **kwargs: Any) -> SpmdResult:
    """The grad rule on x's raw mapping: x and x_grad answered with Paddle's copy, the statistics and
    out_grad read back from its merge, scale_grad and bias_grad partial over the copy's mesh dims."""
    layout = _layout_of(fn, args, kwargs)

    def patch(base: SpmdResult, raw: dict[str, Any]) -> SpmdResult:
        x = raw["x"]
        copy, merged, c = _channel_copy(x, layout)
        letters = ALPHABET[:len(x.shape)]
        stat = read_back(letters[c], merged)
        partial = [m for m in copy[:len(x.shape)] if m != -1]
        xi, si, bi, mo, vo, sm, sv, rs, og = base.inputs
        xg, sg, bg = base.outputs
        return SpmdResult.make(
            inputs=(remapped(xi, copy), si, bi, remapped(mo, stat), remapped(vo, stat), remapped(sm, stat),
                    remapped(sv, stat), rs, remapped(og, read_back(letters, merged))),
            outputs=(remapped(xg, copy), remapped(sg, (-1,), partial, "scale"), remapped(bg, (-1,), partial, "bias")))

    return answer_raw(fn, args, kwargs, patch, data_format=layout)


#: The mirror policy: one answer per rule for every refusal :data:`.checks.MIRRORED` names (a rule that
#: reads only x's mapping answers a malformed input whatever else is malformed with it).
MIRRORS = tuple(mirror_via(key, check, _grad_raw if key == "batch_norm_grad" else _forward_raw,
                           f"{key}: Paddle's steps on x's raw mapping (:mod:`~..kit.raw_mapping`).", __name__)
                for key, checks in MIRRORED.items() for check in checks)
