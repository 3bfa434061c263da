"""batch_norm's numpy kernels and the oracle's models of its rules (checked against Paddle 3.3.1's
CPU kernels by ``tests/test_oracle.py::test_kernels_match_paddle_dense``)::

    op                    statistics                             outputs
    batch_norm train      batch mean/var (biased) over all       out, mean_out = m*mom + mean*(1-mom),
                          axes but C                             variance_out likewise (biased var),
                                                                 saved_mean, saved_variance = 1/sqrt(var+eps)
    batch_norm global     running mean/variance; used when       out; mean_out/variance_out = the inputs;
    stats                 use_global_stats or (is_test and       saved_* are left uninitialised by Paddle
                          not trainable_statistics)              (not checked)
    batch_norm_grad       saved stats; running stats when        x_grad, scale_grad = sum(dy*x_hat),
                          is_test or use_global_stats            bias_grad = sum(dy)

What Paddle's CPU kernels check (measured on 3.3.1): a wrong-sized scale/bias is rejected by the
forward; mean/variance of the forward and every per-channel input of the grad are not checked
(the kernel reads the wrong channels or past the end of the buffer).

The oracle crosses every case of the attributed rules with four statistics modes (:data:`MODES`:
train, eval = is_test, global = use_global_stats, eval-trainable = is_test + trainable_statistics);
``batch_norm_static`` takes no attributes and is judged in training mode with the forward's
defaults. An answer that splits the batch and is right only if each batch shard normalises with
its own statistics is labelled ``local-stats-only``; an unrunnable answer is run again with the
per-channel inputs resharded to follow x's channel axis.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..kit.kernel import (
    Array,
    Arrays,
    Attrs,
    Facts,
    KernelModels,
    KernelRejects,
    Mode,
    OpModel,
    Shape,
    channel_shape,
    check_per_channel,
    check_x,
    f32,
    model,
    per_rank,
    required,
)
from ..kit.layout import DATA_FORMAT_NDIM, channel_axis, kernel_layout
from .layout import FORWARD_ATTRS, PER_CHANNEL

#: The statistics modes the oracle crosses the attributed rules' cases with (name, attributes set).
MODES: tuple[Mode, ...] = (
    ("train", ()),
    ("eval", (("is_test", True),)),
    ("global", (("use_global_stats", True),)),
    ("eval-trainable", (("is_test", True), ("trainable_statistics", True))),
)


def bn_global_stats(attrs: Attrs) -> bool:
    """Does the batch_norm forward kernel normalise with the running statistics?"""
    return bool(attrs.get("use_global_stats")) or (bool(attrs.get("is_test")) and not attrs.get("trainable_statistics"))


def bn_grad_global_stats(attrs: Attrs) -> bool:
    """Does the batch_norm_grad kernel use the running statistics? (trainable_statistics is ignored)."""
    return bool(attrs.get("is_test")) or bool(attrs.get("use_global_stats"))


def affine(x: Array, mean: Array, var: Array, scale: Array | None, bias: Array | None, eps: float,
           bs: tuple[int, ...]) -> Array:
    """(x - mean) / sqrt(var + eps), times scale, plus bias (per channel, broadcast as ``bs``)."""
    out = (x - mean.reshape(bs)) / np.sqrt(var.reshape(bs) + eps)
    if scale is not None:
        out = out * scale.reshape(bs)
    if bias is not None:
        out = out + bias.reshape(bs)
    return out


def batch_norm(ins: Arrays, attrs: Attrs) -> Arrays:
    """One device. ``ins``: x, mean, variance, scale, bias (scale/bias may be None)."""
    x = required(ins, "x")
    check_x(x, "batch_norm")
    c = channel_axis(attrs["data_format"], x.ndim)
    c_len = x.shape[c]
    check_per_channel(ins, ("scale", "bias"), c_len, checked=lambda _: True, op="batch_norm")
    check_per_channel(ins, ("mean", "variance"), c_len, checked=lambda _: False, op="batch_norm")
    bs = channel_shape(x.ndim, c, c_len)
    eps, mom = f32(attrs["epsilon"]), f32(attrs["momentum"])
    if bn_global_stats(attrs):
        mean_in, var_in = required(ins, "mean"), required(ins, "variance")
        out = affine(x, mean_in, var_in, ins["scale"], ins["bias"], eps, bs)
        return {"out": out, "mean_out": mean_in.copy(), "variance_out": var_in.copy(),
                "saved_mean": None, "saved_variance": None, "reserve_space": None}
    axes = tuple(a for a in range(x.ndim) if a != c)
    mean = x.mean(axis=axes)
    var = ((x - mean.reshape(bs)) ** 2).mean(axis=axes)
    return bn_outputs(x, ins, mean, var, eps, mom, bs)


def bn_outputs(x: Array, ins: Arrays, mean: Array, var: Array, eps: float, mom: float,
               bs: tuple[int, ...]) -> Arrays:
    """The training outputs from the batch statistics ``mean``, ``var`` (biased)."""
    return {"out": affine(x, mean, var, ins["scale"], ins["bias"], eps, bs),
            "mean_out": required(ins, "mean") * mom + mean * (1.0 - mom),
            "variance_out": required(ins, "variance") * mom + var * (1.0 - mom),
            "saved_mean": mean, "saved_variance": 1.0 / np.sqrt(var + eps), "reserve_space": None}


def batch_norm_grad(ins: Arrays, attrs: Attrs) -> Arrays:
    """One device. ``ins``: x, scale, bias, mean_out, variance_out, saved_mean, saved_variance,
    reserve_space, out_grad."""
    x, dy = required(ins, "x"), required(ins, "out_grad")
    check_x(x, "batch_norm_grad")
    if dy.shape != x.shape:
        raise KernelRejects("out_grad", f"batch_norm_grad: local out_grad {list(dy.shape)} != local x "
                            f"{list(x.shape)}", checked=False)
    c = channel_axis(attrs["data_format"], x.ndim)
    c_len = x.shape[c]
    use_global = bn_grad_global_stats(attrs)
    stats = ("mean_out", "variance_out") if use_global else ("saved_mean", "saved_variance")
    check_per_channel(ins, ("scale", "bias") + stats, c_len, checked=lambda _: False, op="batch_norm_grad")
    bs = channel_shape(x.ndim, c, c_len)
    eps = f32(attrs["epsilon"])
    if use_global:
        mean, inv = required(ins, "mean_out"), 1.0 / np.sqrt(required(ins, "variance_out") + eps)
    else:
        mean, inv = required(ins, "saved_mean"), required(ins, "saved_variance")
    given_scale = ins["scale"]
    scale = given_scale if given_scale is not None else np.ones(c_len)
    axes = tuple(a for a in range(x.ndim) if a != c)
    x_hat = (x - mean.reshape(bs)) * inv.reshape(bs)
    d_bias = dy.sum(axis=axes)
    d_scale = (dy * x_hat).sum(axis=axes)
    if use_global:
        dx = dy * (scale * inv).reshape(bs)
    else:
        n = x.size // c_len
        dx = (scale * inv).reshape(bs) * (dy - d_bias.reshape(bs) / n - x_hat * d_scale.reshape(bs) / n)
    return {"x_grad": dx, "scale_grad": d_scale if ins["scale"] is not None else None,
            "bias_grad": d_bias if ins["bias"] is not None else None}


# --------------------------------------------------------------------------- what the oracle needs besides
def sizes(old: Shape, new: Shape, attrs: Attrs) -> list[tuple[Shape, Shape]] | None:
    """The per-channel tensors follow x's channel size (the format is not judged yet: Paddle's bare
    character test)."""
    if len(old) < 2:
        return None
    c = channel_axis(str(attrs.get("data_format", "NCHW")), len(old), strict=False)
    return [((old[c],), (new[c],))]


def saved_statistics(arrays: Arrays, attrs: Attrs) -> None:
    """The grad's saved_mean / saved_variance as the training forward saves them from x (where the
    shapes fit): the batch mean and 1/sqrt(biased var + eps)."""
    x = required(arrays, "x")
    if x.ndim < 2:
        return
    c = channel_axis(attrs["data_format"], x.ndim)
    axes = tuple(a for a in range(x.ndim) if a != c)
    mean, var = x.mean(axis=axes), x.var(axis=axes)
    if (saved := arrays.get("saved_mean")) is not None and saved.shape == mean.shape:
        arrays["saved_mean"] = mean
    if (saved := arrays.get("saved_variance")) is not None and saved.shape == var.shape:
        arrays["saved_variance"] = 1.0 / np.sqrt(var + f32(attrs["epsilon"]))


def launch_fields(attrs: Attrs, x_shape: Shape) -> dict[str, Any] | None:
    """``F.batch_norm`` as a launch case: the layout must fit x's rank; a launch case says training
    or not (is_test) and has no use_global_stats or trainable_statistics."""
    fmt = attrs["data_format"]
    if DATA_FORMAT_NDIM.get(fmt) != len(x_shape) or attrs["use_global_stats"] or attrs["trainable_statistics"]:
        return None
    return {"op": "batch_norm", "data_format": fmt, "training": not attrs["is_test"]}


def _static_attrs(attrs: Attrs, present: frozenset[str]) -> Attrs:
    """The static rule takes no attributes: its kernel runs with the forward's defaults (train, NCHW)."""
    return dict(FORWARD_ATTRS)


FACTS = Facts(sizes=sizes, layout=kernel_layout, per_channel=PER_CHANNEL,
              channel_axis=lambda attrs, ndim: channel_axis(attrs["data_format"], ndim))


def _forward_batch_stats(attrs: Attrs) -> bool:
    return not bn_global_stats(attrs)


def _grad_batch_stats(attrs: Attrs) -> bool:
    return not bn_grad_global_stats(attrs)


MODELS: dict[str, OpModel] = {
    "batch_norm_static": model("batch_norm_static", per_rank(batch_norm), FACTS, batch_axis_outputs=("out",),
                               batch_axis_inputs=("x",), batch_statistics=_forward_batch_stats,
                               attrs=_static_attrs, registry_repro=True,
                               not_on_ranks="the registry rule is only used by static completion"),
    "batch_norm": model("batch_norm", per_rank(batch_norm), FACTS, batch_axis_outputs=("out",),
                        batch_axis_inputs=("x",), batch_statistics=_forward_batch_stats, modes=MODES,
                        launch=launch_fields),
    "batch_norm_grad": model("batch_norm_grad", per_rank(batch_norm_grad), FACTS, batch_axis_outputs=("x_grad",),
                             batch_axis_inputs=("x", "out_grad"), batch_statistics=_grad_batch_stats, modes=MODES,
                             saved_inputs=saved_statistics, launch=launch_fields,
                             not_on_ranks="whenever C is split, a real run already stops in the batch_norm forward"),
}

#: The family's oracle part, read by paddle_spmd_port.oracle.kernels.
KERNEL = KernelModels(MODELS)
