"""The one table of op signatures: every other layer reads it (no copies elsewhere).

Per op and rule key: the input names in call order (``?`` = may be None), the names of the
returned input and output attrs (``result_inputs`` / ``result_outputs``), the attributes with
their defaults in signature order; for batch_norm, the data formats it accepts and
:func:`channel_axis`, the one place its channel axis is worked out. Imports nothing from
``rules/`` (the rule modules import it)::

    op               rule key              inputs                               outputs
    batch_norm       batch_norm_static     x mean variance scale? bias?         out mean_out variance_out saved_mean
                                                                                saved_variance reserve_space
                     batch_norm            (as batch_norm_static)               (as batch_norm_static)
                     batch_norm_grad       x scale? bias? mean_out variance_out x_grad scale_grad bias_grad
                                           saved_mean saved_variance
                                           reserve_space? out_grad
    sync_batch_norm  sync_batch_norm       (as batch_norm)                      (as batch_norm)
                     sync_batch_norm_grad  x scale? bias? saved_mean            x_grad scale_grad bias_grad
                                           saved_variance reserve_space? out_grad
    layer_norm       layer_norm            x scale? bias?                       out mean variance
                     layer_norm_reverse    x scale? bias? out mean variance     out mean variance (returned inputs:
                                                                                x scale bias only)
                     layer_norm_grad       x scale? bias? mean variance         x_grad scale_grad bias_grad
                                           out_grad
    instance_norm    instance_norm         x scale? bias?                       y saved_mean saved_variance
                     instance_norm_grad    x scale? bias? saved_mean            x_grad scale_grad bias_grad (returned
                                           saved_variance y_grad                inputs: all but bias)
    rms_norm         rms_norm              x scale?                             out invvar
                     rms_norm_reverse      x scale? out invvar                  out invvar (returned inputs: x scale)
                     rms_norm_grad         x scale? invvar out_grad             x_grad scale_grad
    fast_ln          fast_ln               x scale? bias?                       out mean invvar
                     fast_ln_grad          x scale? mean invvar y_grad          x_grad scale_grad bias_grad
    group_norm       group_norm            x scale? bias?                       y mean variance
                     group_norm_base       (as group_norm)                      (as group_norm)
                     group_norm_grad       x scale? bias? y mean variance       x_grad scale_grad bias_grad
                                           y_grad
                     group_norm_grad_base  (as group_norm_grad)                 (as group_norm_grad)

    attributes (signature order, defaults)
    batch_norm, sync_batch_norm     is_test=False momentum=0.9 epsilon=1e-5 data_format='NCHW'
                                    use_global_stats=False trainable_statistics=False
    batch_norm_grad, sync_..._grad  momentum=0.9 epsilon=1e-5 data_format='NCHW' is_test=False
                                    use_global_stats=False trainable_statistics=False
    batch_norm_static               none (the header defaults: always NCHW)
    layer_norm (all three)          epsilon=1e-5 begin_norm_axis=1
    instance_norm, rms_norm, fast_ln  epsilon=1e-5
    group_norm, group_norm_grad     epsilon=1e-5 groups=-1 data_format='NCHW' (the rules read none)
    group_norm_base, ..._grad_base  none

    Where a header declares defaults these are they. LayerNormInferSpmd, LayerNormInferSpmdReverse,
    RmsNormInferSpmd(Reverse), RmsNormGradInferSpmd and FastLn(Grad)InferSpmd declare none (the same
    headers in 3.0.0-3.3.1): the port gives their epsilon the ops' usual 1e-5 anyway, so one rule is
    called alike everywhere and a case may leave epsilon out. No answer depends on it: none of
    these rules reads epsilon (parity --random, whose cases draw epsilon from 1e-5, 1e-6, 1e-3 and
    0.5: 2,000 rms_norm/fast_ln cases, 0 mismatches against the C++ functions). The registry
    objects that crash without epsilon (instance_norm, fused_rms_norm) refuse a missing one in the
    port too (rules/registry.py EPSILON_READ_UNCHECKED).

    data_format     NC  NCL  NCHW  NCDHW  NLC  NHWC  NDHWC
    rank of x       2   3    4     5      3    4     5
    channel axis    1   1    1     1      2    3     4      (second character 'C' -> 1, else the last axis)
    kernel layout   NCHW ...                  NHWC ...      (what F.batch_norm hands the op)

The rule keys and the functions behind them::

    key                    port function                      Paddle's C++ function
    batch_norm_static      batch_norm_infer_spmd_static       BatchNormInferSpmdStatic (registry "batch_norm")
    batch_norm             batch_norm_infer_spmd              BatchNormInferSpmd
    batch_norm_grad        batch_norm_grad_infer_spmd         BatchNormGradInferSpmd
    sync_batch_norm        sync_batch_norm_infer_spmd         (none: replicated fallback)
    sync_batch_norm_grad   sync_batch_norm_grad_infer_spmd    (none: replicated fallback)
    layer_norm             layer_norm_infer_spmd              LayerNormInferSpmd (registry "layer_norm")
    layer_norm_reverse     layer_norm_infer_spmd_reverse      LayerNormInferSpmdReverse (registry infer_backward)
    layer_norm_grad        layer_norm_grad_infer_spmd         LayerNormGradInferSpmd
    instance_norm          instance_norm_infer_spmd           InstanceNormInferSpmd (registry "instance_norm")
    instance_norm_grad     instance_norm_grad_infer_spmd      InstanceNormGradInferSpmd (registry infer_backward)
    rms_norm               rms_norm_infer_spmd                RmsNormInferSpmd (registry "fused_rms_norm")
    rms_norm_reverse       rms_norm_infer_spmd_reverse        RmsNormInferSpmdReverse (registry infer_backward)
    rms_norm_grad          rms_norm_grad_infer_spmd           RmsNormGradInferSpmd
    fast_ln                fast_ln_infer_spmd                 FastLnInferSpmd
    fast_ln_grad           fast_ln_grad_infer_spmd            FastLnGradInferSpmd
    group_norm             group_norm_infer_spmd              GroupNormInferSpmd
    group_norm_base        group_norm_infer_spmd_base         GroupNormInferSpmdBase (registry "group_norm")
    group_norm_grad        group_norm_grad_infer_spmd         GroupNormGradInferSpmd
    group_norm_grad_base   group_norm_grad_infer_spmd_base    GroupNormGradInferSpmdBase
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InvalidSpecError

#: Layouts batch_norm accepts (``F.batch_norm``'s list); Paddle's rule reads only their second character.
DATA_FORMATS = ("NC", "NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC")
#: The rank of x each layout implies (one axis per letter).
DATA_FORMAT_NDIM = {fmt: len(fmt) for fmt in DATA_FORMATS}


def channel_first(data_format: str) -> bool:
    """Paddle's test: is the second character ``'C'``? (Any string; a shorter one reads False.)"""
    return data_format[1:2] == "C"


def channel_axis(data_format: str, ndim: int, *, strict: bool = True) -> int:
    """batch_norm's channel axis for x of rank ``ndim``: ``1`` when ``data_format``'s second
    character is ``'C'``, else the last axis.

    ``strict`` (the rules): a format outside :data:`DATA_FORMATS` raises :class:`InvalidSpecError`.
    ``strict=False``: Paddle's bare character test for any string, for callers that size tensors
    before a rule judges the format."""
    if strict and data_format not in DATA_FORMATS:
        raise InvalidSpecError(
            f"data_format {data_format!r} is not a batch_norm layout; use one of {', '.join(DATA_FORMATS)} "
            "(Paddle's rule only tests data_format[1] == 'C' and reads past the end of shorter strings)",
            kind="invalid-spec:data_format")
    return 1 if channel_first(data_format) else ndim - 1


def kernel_layout(data_format: str) -> str:
    """The layout the batch_norm op receives from ``F.batch_norm``: ``'NCHW'`` or ``'NHWC'``."""
    return "NCHW" if channel_first(data_format) else "NHWC"


BN_FWD_ATTRS = (("is_test", False), ("momentum", 0.9), ("epsilon", 1e-5), ("data_format", "NCHW"),
                ("use_global_stats", False), ("trainable_statistics", False))
BN_GRAD_ATTRS = (("momentum", 0.9), ("epsilon", 1e-5), ("data_format", "NCHW"), ("is_test", False),
                 ("use_global_stats", False), ("trainable_statistics", False))
LN_ATTRS = (("epsilon", 1e-5), ("begin_norm_axis", 1))


@dataclass(frozen=True)
class RuleSpec:
    key: str
    op: str
    direction: str  # forward | reverse | grad
    inputs: tuple[str, ...]
    optional: frozenset[str]
    attrs: tuple[tuple[str, Any], ...]
    result_inputs: tuple[str, ...]
    result_outputs: tuple[str, ...]

    @property
    def n_cells(self) -> int:
        """Cells per case: (dims_mapping, partial, mesh) of every returned attr, plus the error."""
        return 3 * (len(self.result_inputs) + len(self.result_outputs)) + 1


BN_FWD_IN = ("x", "mean", "variance", "scale", "bias")
BN_FWD_OUT = ("out", "mean_out", "variance_out", "saved_mean", "saved_variance", "reserve_space")
BN_GRAD_IN = ("x", "scale", "bias", "mean_out", "variance_out", "saved_mean", "saved_variance", "reserve_space",
              "out_grad")
SBN_GRAD_IN = ("x", "scale", "bias", "saved_mean", "saved_variance", "reserve_space", "out_grad")
GRAD_OUT = ("x_grad", "scale_grad", "bias_grad")
LN_IN = ("x", "scale", "bias")
LN_OUT = ("out", "mean", "variance")
LN_REVERSE_IN = ("x", "scale", "bias", "out", "mean", "variance")
LN_GRAD_IN = ("x", "scale", "bias", "mean", "variance", "out_grad")
#: instance_norm, rms_norm, fast_ln: epsilon only (1e-5 also where the header has no default: see the module docstring).
EPS_ATTRS = (("epsilon", 1e-5),)
IN_OUT = ("y", "saved_mean", "saved_variance")
IN_GRAD_IN = ("x", "scale", "bias", "saved_mean", "saved_variance", "y_grad")
IN_GRAD_RESULT_IN = ("x", "scale", "saved_mean", "saved_variance", "y_grad")  # bias is not returned
RMS_IN = ("x", "scale")
RMS_OUT = ("out", "invvar")
RMS_REVERSE_IN = ("x", "scale", "out", "invvar")
RMS_GRAD_IN = ("x", "scale", "invvar", "out_grad")
#: rms_norm's scale is no optional input, but Paddle answers a None one with its own rank check.
RMS_OPTIONAL = frozenset({"scale"})
FAST_LN_OUT = ("out", "mean", "invvar")
FAST_LN_GRAD_IN = ("x", "scale", "mean", "invvar", "y_grad")
GN_ATTRS = (("epsilon", 1e-5), ("groups", -1), ("data_format", "NCHW"))
GN_OUT = ("y", "mean", "variance")
GN_GRAD_IN = ("x", "scale", "bias", "y", "mean", "variance", "y_grad")
#: The layouts group_norm takes (``paddle.nn.functional.group_norm``; its rules read none of them).
GN_DATA_FORMATS = ("NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC")
#: The inputs that may be None: scale and bias everywhere, and the grads' reserve_space.
OPTIONAL = frozenset({"scale", "bias"})
GRAD_OPTIONAL = frozenset({"scale", "bias", "reserve_space"})
#: batch_norm's per-channel tensors (1-D, one entry per channel of x).
BN_PER_CHANNEL = frozenset({"mean", "variance", "scale", "bias", "mean_out", "variance_out", "saved_mean",
                            "saved_variance"})

RULES: dict[str, RuleSpec] = {
    spec.key: spec
    for spec in (
        RuleSpec("batch_norm_static", "batch_norm", "forward", BN_FWD_IN, OPTIONAL, (), BN_FWD_IN, BN_FWD_OUT),
        RuleSpec("batch_norm", "batch_norm", "forward", BN_FWD_IN, OPTIONAL, BN_FWD_ATTRS, BN_FWD_IN, BN_FWD_OUT),
        RuleSpec("batch_norm_grad", "batch_norm", "grad", BN_GRAD_IN, GRAD_OPTIONAL, BN_GRAD_ATTRS, BN_GRAD_IN,
                 GRAD_OUT),
        RuleSpec("sync_batch_norm", "sync_batch_norm", "forward", BN_FWD_IN, OPTIONAL, BN_FWD_ATTRS, BN_FWD_IN,
                 BN_FWD_OUT),
        RuleSpec("sync_batch_norm_grad", "sync_batch_norm", "grad", SBN_GRAD_IN, GRAD_OPTIONAL, BN_GRAD_ATTRS,
                 SBN_GRAD_IN, GRAD_OUT),
        RuleSpec("layer_norm", "layer_norm", "forward", LN_IN, OPTIONAL, LN_ATTRS, LN_IN, LN_OUT),
        RuleSpec("layer_norm_reverse", "layer_norm", "reverse", LN_REVERSE_IN, OPTIONAL, LN_ATTRS, LN_IN, LN_OUT),
        RuleSpec("layer_norm_grad", "layer_norm", "grad", LN_GRAD_IN, OPTIONAL, LN_ATTRS, LN_GRAD_IN, GRAD_OUT),
        RuleSpec("instance_norm", "instance_norm", "forward", LN_IN, OPTIONAL, EPS_ATTRS, LN_IN, IN_OUT),
        RuleSpec("instance_norm_grad", "instance_norm", "grad", IN_GRAD_IN, OPTIONAL, EPS_ATTRS, IN_GRAD_RESULT_IN,
                 GRAD_OUT),
        RuleSpec("rms_norm", "rms_norm", "forward", RMS_IN, RMS_OPTIONAL, EPS_ATTRS, RMS_IN, RMS_OUT),
        RuleSpec("rms_norm_reverse", "rms_norm", "reverse", RMS_REVERSE_IN, RMS_OPTIONAL, EPS_ATTRS, RMS_IN,
                 RMS_OUT),
        RuleSpec("rms_norm_grad", "rms_norm", "grad", RMS_GRAD_IN, RMS_OPTIONAL, EPS_ATTRS, RMS_GRAD_IN,
                 ("x_grad", "scale_grad")),
        RuleSpec("fast_ln", "fast_ln", "forward", LN_IN, OPTIONAL, EPS_ATTRS, LN_IN, FAST_LN_OUT),
        RuleSpec("fast_ln_grad", "fast_ln", "grad", FAST_LN_GRAD_IN, OPTIONAL, EPS_ATTRS, FAST_LN_GRAD_IN, GRAD_OUT),
        RuleSpec("group_norm", "group_norm", "forward", LN_IN, OPTIONAL, GN_ATTRS, LN_IN, GN_OUT),
        RuleSpec("group_norm_base", "group_norm", "forward", LN_IN, OPTIONAL, (), LN_IN, GN_OUT),
        RuleSpec("group_norm_grad", "group_norm", "grad", GN_GRAD_IN, OPTIONAL, GN_ATTRS, GN_GRAD_IN, GRAD_OUT),
        RuleSpec("group_norm_grad_base", "group_norm", "grad", GN_GRAD_IN, OPTIONAL, (), GN_GRAD_IN, GRAD_OUT),
    )
}

#: op -> its rule keys.
OPS: dict[str, tuple[str, ...]] = {op: tuple(k for k, s in RULES.items() if s.op == op)
                                   for op in ("batch_norm", "sync_batch_norm", "layer_norm", "instance_norm",
                                              "rms_norm", "fast_ln", "group_norm")}


def rule_spec(key: str) -> RuleSpec:
    try:
        return RULES[key]
    except KeyError:
        raise ValueError(f"unknown rule {key!r}; choose one of {', '.join(RULES)}") from None
