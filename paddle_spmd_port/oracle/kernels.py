"""numpy models of the kernels the rules feed: batch_norm, sync_batch_norm, layer_norm, instance_norm,
rms_norm, fast_ln, group_norm and their grads.

Each model takes one dict of input arrays *per rank* (a single dict = one device) and returns
one dict of output arrays per rank. Only sync_batch_norm talks across ranks: its statistics are
all-reduced within ``groups`` (for each rank, the ranks it sums with). Everything is float64.

What each kernel computes (checked against Paddle 3.3.1's CPU kernels by
``tests/test_oracle.py::test_kernels_match_paddle_dense``; sync_batch_norm has no CPU kernel, it
follows the arithmetic of Paddle's GPU kernel, ``sync_batch_norm_utils.h``)::

    op                    statistics                             outputs
    batch_norm train      batch mean/var (biased) over all       out, mean_out = m*mom + mean*(1-mom),
                          axes but C                             variance_out likewise (biased var),
                                                                 saved_mean, saved_variance = 1/sqrt(var+eps)
    batch_norm global     running mean/variance; used when       out; mean_out/variance_out = the inputs;
    stats                 use_global_stats or (is_test and       saved_* are left uninitialised by Paddle
                          not trainable_statistics)              (not checked)
    batch_norm_grad       saved stats; running stats when        x_grad, scale_grad = sum(dy*x_hat),
                          is_test or use_global_stats            bias_grad = sum(dy)
    sync_batch_norm       per-rank mean of x and x^2, summed     as batch_norm; test mode as global stats;
                          over the group and divided by the      use_global_stats=True is rejected
                          number of ranks (mean of means!)
    sync_batch_norm_grad  per-rank sum(dy), sum(dy*(x-mean))     x_grad from the all-reduced sums;
                          summed over the group; the flags are   scale_grad/bias_grad from the *local* sums
                          ignored (always saved stats)
    layer_norm            mean/var over axes >= b per row        out, mean, variance (shape x.shape[:b])
    layer_norm_grad       the given mean/variance                x_grad, scale_grad, bias_grad
    instance_norm         mean/var over the spatial axes per     y, saved_mean, saved_variance = 1/sqrt(var+eps),
                          (n, c)                                 both [N, C] (Paddle's op stores [N*C])
    instance_norm_grad    the saved statistics                   x_grad, scale_grad, bias_grad (sums over N and
                                                                 the spatial axes)
    rms_norm              mean(x^2) over the last axis           out = x * invvar * scale, invvar = 1/sqrt(. + eps)
    rms_norm_grad         the given invvar                       x_grad, scale_grad (sum over the leading axes)
    fast_ln               layer_norm over the last axis          out, mean, invvar = 1/sqrt(var+eps)
    fast_ln_grad          the given mean/invvar                  x_grad, scale_grad, bias_grad (always made)
    group_norm            mean/var over each group of C/groups   y, mean, variance (biased), both [N, groups];
                          channels and the spatial axes          C on axis 1 or last (data_format)
    group_norm_grad       x_hat from y, scale, bias (as Paddle's x_grad, scale_grad, bias_grad
                          CPU kernel) and the given variance

The closed-form grads are checked against central finite differences of the forward kernels
(``tests/test_oracle_norms.py``).

Local shapes a kernel cannot use raise :class:`KernelRejects`. ``checked`` says whether Paddle's
kernel itself rejects them (``True``: an InvalidArgument/ShapeError) or silently reads the wrong
entries or past the end of the buffer (``False``: batch_norm's mean/variance, batch_norm_grad's
scale/bias/statistics, instance_norm_grad's scale and statistics), measured on the 3.3.1 CPU
kernels; ``None`` where no 3.3.1 CPU kernel exists to measure (rms_norm, fast_ln: the message
says so).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..rules.signatures import RULES, channel_axis

Arrays = dict[str, "np.ndarray | None"]


class KernelRejects(Exception):
    """The local inputs of one rank do not fit the kernel."""

    def __init__(self, tensor: str, message: str, *, checked: bool | None, rank: int | None = None) -> None:
        super().__init__(message)
        self.tensor = tensor
        self.checked = checked
        self.rank = rank


def required(ins: Arrays, name: str) -> np.ndarray:
    """A required input of the kernel (the simulator fills every one; None is a bug in the caller)."""
    t = ins[name]
    if t is None:
        raise TypeError(f"the kernel needs input {name!r}, got None")
    return t


def _on_rank(rank: int, fn: Callable[[], Arrays]) -> Arrays:
    try:
        return fn()
    except KernelRejects as exc:
        if exc.rank is None:
            exc.rank = rank
        raise


def f32(value: float) -> float:
    """Paddle's float attributes (momentum, epsilon) are C++ floats."""
    return float(np.float32(value))


def bn_global_stats(attrs: dict) -> bool:
    """Does the batch_norm forward kernel normalise with the running statistics?"""
    return bool(attrs.get("use_global_stats")) or (bool(attrs.get("is_test")) and not attrs.get("trainable_statistics"))


def bn_grad_global_stats(attrs: dict) -> bool:
    """Does the batch_norm_grad kernel use the running statistics? (trainable_statistics is ignored)."""
    return bool(attrs.get("is_test")) or bool(attrs.get("use_global_stats"))


def _per_channel(ins: Arrays, names: Sequence[str], c_len: int, *, checked: Callable[[str], bool],
                 op: str) -> None:
    for name in names:
        t = ins.get(name)
        if t is None:
            continue
        if t.ndim != 1 or t.shape[0] != c_len:
            raise KernelRejects(
                name, f"{op}: local {name} has shape {list(t.shape)} but the local x has C={c_len}"
                + ("" if checked(name) else " (Paddle does not check this: it reads the wrong channels or past "
                                             "the end of the buffer)"),
                checked=checked(name))


def _bshape(ndim: int, c: int, c_len: int) -> tuple[int, ...]:
    shape = [1] * ndim
    shape[c] = c_len
    return tuple(shape)


def _affine(x: np.ndarray, mean: np.ndarray, var: np.ndarray, scale: np.ndarray | None, bias: np.ndarray | None,
            eps: float, bs: tuple[int, ...]) -> np.ndarray:
    out = (x - mean.reshape(bs)) / np.sqrt(var.reshape(bs) + eps)
    if scale is not None:
        out = out * scale.reshape(bs)
    if bias is not None:
        out = out + bias.reshape(bs)
    return out


def _check_x(x: np.ndarray, op: str) -> None:
    if not 2 <= x.ndim <= 5:
        raise KernelRejects("x", f"{op}: x must have rank 2..5, got {x.ndim}", checked=True)
    if x.size == 0:
        raise KernelRejects("x", f"{op}: a rank holds an empty x {list(x.shape)}", checked=False)


# --------------------------------------------------------------------------- batch_norm
def batch_norm(ins: Arrays, attrs: dict) -> Arrays:
    """One device. ``ins``: x, mean, variance, scale, bias (scale/bias may be None)."""
    x = required(ins, "x")
    _check_x(x, "batch_norm")
    c = channel_axis(attrs["data_format"], x.ndim)
    c_len = x.shape[c]
    _per_channel(ins, ("scale", "bias"), c_len, checked=lambda _: True, op="batch_norm")
    _per_channel(ins, ("mean", "variance"), c_len, checked=lambda _: False, op="batch_norm")
    bs = _bshape(x.ndim, c, c_len)
    eps, mom = f32(attrs["epsilon"]), f32(attrs["momentum"])
    if bn_global_stats(attrs):
        mean_in, var_in = required(ins, "mean"), required(ins, "variance")
        out = _affine(x, mean_in, var_in, ins["scale"], ins["bias"], eps, bs)
        return {"out": out, "mean_out": mean_in.copy(), "variance_out": var_in.copy(),
                "saved_mean": None, "saved_variance": None, "reserve_space": None}
    axes = tuple(a for a in range(x.ndim) if a != c)
    mean = x.mean(axis=axes)
    var = ((x - mean.reshape(bs)) ** 2).mean(axis=axes)
    return _bn_outputs(x, ins, mean, var, eps, mom, bs)


def _bn_outputs(x: np.ndarray, ins: Arrays, mean: np.ndarray, var: np.ndarray, eps: float, mom: float,
                bs: tuple[int, ...]) -> Arrays:
    return {"out": _affine(x, mean, var, ins["scale"], ins["bias"], eps, bs),
            "mean_out": required(ins, "mean") * mom + mean * (1.0 - mom),
            "variance_out": required(ins, "variance") * mom + var * (1.0 - mom),
            "saved_mean": mean, "saved_variance": 1.0 / np.sqrt(var + eps), "reserve_space": None}


def batch_norm_grad(ins: Arrays, attrs: dict) -> Arrays:
    """One device. ``ins``: x, scale, bias, mean_out, variance_out, saved_mean, saved_variance,
    reserve_space, out_grad."""
    x, dy = required(ins, "x"), required(ins, "out_grad")
    _check_x(x, "batch_norm_grad")
    if dy.shape != x.shape:
        raise KernelRejects("out_grad", f"batch_norm_grad: local out_grad {list(dy.shape)} != local x "
                            f"{list(x.shape)}", checked=False)
    c = channel_axis(attrs["data_format"], x.ndim)
    c_len = x.shape[c]
    use_global = bn_grad_global_stats(attrs)
    stats = ("mean_out", "variance_out") if use_global else ("saved_mean", "saved_variance")
    _per_channel(ins, ("scale", "bias") + stats, c_len, checked=lambda _: False, op="batch_norm_grad")
    bs = _bshape(x.ndim, c, c_len)
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


# --------------------------------------------------------------------------- sync_batch_norm
def _all_reduce(values: list[np.ndarray], groups: Sequence[Sequence[int]]) -> list[np.ndarray]:
    """Per rank, the sum over its group. Shapes must agree inside a group (else the collective
    would mix buffers of different lengths)."""
    out = []
    for rank, group in enumerate(groups):
        shapes = {values[r].shape for r in group}
        if len(shapes) != 1:
            raise KernelRejects("x", f"sync_batch_norm: the all-reduce group {list(group)} of rank {rank} holds "
                                f"statistics of different lengths {sorted(shapes)}", checked=False, rank=rank)
        out.append(sum((values[r] for r in group), np.zeros_like(values[group[0]])))
    return out


def _sync_prepare(ins: Arrays, attrs: dict) -> tuple[np.ndarray, tuple[int, ...], tuple[int, ...]]:
    x = required(ins, "x")
    _check_x(x, "sync_batch_norm")
    c = channel_axis(attrs["data_format"], x.ndim)
    c_len = x.shape[c]
    _per_channel(ins, ("scale", "bias"), c_len, checked=lambda _: True, op="sync_batch_norm")
    _per_channel(ins, ("mean", "variance"), c_len, checked=lambda _: False, op="sync_batch_norm")
    return x, tuple(a for a in range(x.ndim) if a != c), _bshape(x.ndim, c, c_len)


def sync_batch_norm(per_rank: list[Arrays], attrs: dict, groups: Sequence[Sequence[int]]) -> list[Arrays]:
    if attrs.get("use_global_stats"):
        raise KernelRejects("x", "sync_batch_norm doesn't support use_global_stats=True", checked=True)
    locals_ = []
    for rank, ins in enumerate(per_rank):
        try:
            locals_.append(_sync_prepare(ins, attrs))
        except KernelRejects as exc:
            exc.rank = rank
            raise
    eps, mom = f32(attrs["epsilon"]), f32(attrs["momentum"])
    if attrs.get("is_test") and not attrs.get("trainable_statistics"):
        return [{"out": _affine(x, required(ins, "mean"), required(ins, "variance"), ins["scale"], ins["bias"], eps,
                                bs),
                 "mean_out": required(ins, "mean").copy(), "variance_out": required(ins, "variance").copy(),
                 "saved_mean": None, "saved_variance": None, "reserve_space": None}
                for ins, (x, _a, bs) in zip(per_rank, locals_, strict=True)]
    # per rank: [mean(x), mean(x^2), 1]; summed over the group; divided by the count of ranks
    stats = [np.concatenate([x.mean(axis=axes), (x * x).mean(axis=axes), [1.0]]) for x, axes, _b in locals_]
    summed = _all_reduce(stats, groups)
    outs = []
    for ins, (x, _axes, bs), s in zip(per_rank, locals_, summed, strict=True):
        c_len = (len(s) - 1) // 2
        n_dev = s[-1]
        mean = s[:c_len] / n_dev
        var = s[c_len:2 * c_len] / n_dev - mean * mean
        outs.append(_bn_outputs(x, ins, mean, var, eps, mom, bs))
    return outs


def _sync_grad_prepare(ins: Arrays, attrs: dict) -> tuple:
    x, dy = required(ins, "x"), required(ins, "out_grad")
    _check_x(x, "sync_batch_norm_grad")
    if dy.shape != x.shape:
        raise KernelRejects("out_grad", f"sync_batch_norm_grad: local out_grad {list(dy.shape)} != local x "
                            f"{list(x.shape)}", checked=False)
    c = channel_axis(attrs["data_format"], x.ndim)
    c_len = x.shape[c]
    _per_channel(ins, ("scale",), c_len, checked=lambda _: True, op="sync_batch_norm_grad")
    _per_channel(ins, ("saved_mean", "saved_variance"), c_len, checked=lambda _: False, op="sync_batch_norm_grad")
    bs = _bshape(x.ndim, c, c_len)
    return x, dy, bs, tuple(a for a in range(x.ndim) if a != c), x - required(ins, "saved_mean").reshape(bs), c_len


def sync_batch_norm_grad(per_rank: list[Arrays], attrs: dict, groups: Sequence[Sequence[int]]) -> list[Arrays]:
    """``ins``: x, scale, bias, saved_mean, saved_variance, reserve_space, out_grad."""
    prepared = []
    for rank, ins in enumerate(per_rank):
        try:
            prepared.append(_sync_grad_prepare(ins, attrs))
        except KernelRejects as exc:
            exc.rank = rank
            raise
    stats = [np.concatenate([dy.sum(axis=axes), (dy * x_mu).sum(axis=axes), [1.0]])
             for _x, dy, _bs, axes, x_mu, _c in prepared]
    summed = _all_reduce(stats, groups)
    outs = []
    for ins, (x, dy, bs, axes, x_mu, c_len), s in zip(per_rank, prepared, summed, strict=True):
        inv = required(ins, "saved_variance")
        given_scale = ins["scale"]
        scale = given_scale if given_scale is not None else np.ones(c_len)
        n_dev = s[-1]
        inv_n = 1.0 / (x.size // c_len)  # local count, as the GPU kernel does
        g_sum_dy, g_sum_dy_prod = s[:c_len] / n_dev, s[c_len:2 * c_len] / n_dev
        g_mean = -g_sum_dy * scale * inv
        g_var = -g_sum_dy_prod * scale * inv ** 3
        dx = dy * (scale * inv).reshape(bs) + (g_mean * inv_n).reshape(bs) + (g_var * inv_n).reshape(bs) * x_mu
        outs.append({"x_grad": dx,
                     "scale_grad": (dy * x_mu).sum(axis=axes) * inv if ins["scale"] is not None else None,
                     "bias_grad": dy.sum(axis=axes) if ins["bias"] is not None else None})
    return outs


# --------------------------------------------------------------------------- layer_norm
def _ln_rows(x: np.ndarray, b: int, op: str) -> tuple[int, int]:
    if not 1 <= b < max(x.ndim, 1):
        raise KernelRejects("x", f"{op}: begin_norm_axis must be in 1..{x.ndim - 1}, got {b}", checked=True)
    if x.size == 0:
        raise KernelRejects("x", f"{op}: a rank holds an empty x {list(x.shape)}", checked=False)
    return math.prod(x.shape[:b]), math.prod(x.shape[b:])


def _ln_params(ins: Arrays, right: int, op: str) -> None:
    for name in ("scale", "bias"):
        t = ins.get(name)
        if t is not None and t.size != right:
            raise KernelRejects(name, f"{op}: local {name} has {t.size} entries but a local row of x has "
                                f"{right} (Paddle: Expected {name}.dims()[0] == right)", checked=True)


def layer_norm(ins: Arrays, attrs: dict) -> Arrays:
    x, b = required(ins, "x"), attrs["begin_norm_axis"]
    left, right = _ln_rows(x, b, "layer_norm")
    _ln_params(ins, right, "layer_norm")
    rows = x.reshape(left, right)
    mean = rows.mean(axis=1)
    var = ((rows - mean[:, None]) ** 2).mean(axis=1)
    out = (rows - mean[:, None]) / np.sqrt(var[:, None] + f32(attrs["epsilon"]))
    scale, bias = ins.get("scale"), ins.get("bias")
    if scale is not None:
        out = out * scale.reshape(1, right)
    if bias is not None:
        out = out + bias.reshape(1, right)
    lead = x.shape[:b]
    return {"out": out.reshape(x.shape), "mean": mean.reshape(lead), "variance": var.reshape(lead)}


def layer_norm_grad(ins: Arrays, attrs: dict) -> Arrays:
    x, dy, b = required(ins, "x"), required(ins, "out_grad"), attrs["begin_norm_axis"]
    left, right = _ln_rows(x, b, "layer_norm_grad")
    if dy.shape != x.shape:
        raise KernelRejects("out_grad", f"layer_norm_grad: local out_grad {list(dy.shape)} != local x "
                            f"{list(x.shape)}", checked=False)
    _ln_params(ins, right, "layer_norm_grad")
    stats = {name: required(ins, name) for name in ("mean", "variance")}
    for name, t in stats.items():
        if t.size != left:
            raise KernelRejects(name, f"layer_norm_grad: local {name} has {t.size} entries for {left} local "
                                "rows of x" + (" (Paddle: memory size check)" if t.size < left else
                                               " (Paddle does not check: it reads the first rows)"),
                                checked=t.size < left)
    rows, drows = x.reshape(left, right), dy.reshape(left, right)
    inv = 1.0 / np.sqrt(stats["variance"].reshape(left, 1) + f32(attrs["epsilon"]))
    x_hat = (rows - stats["mean"].reshape(left, 1)) * inv
    scale = ins.get("scale")
    d_xhat = drows * (scale.reshape(1, right) if scale is not None else 1.0)
    dx = inv * (d_xhat - d_xhat.mean(axis=1, keepdims=True) - x_hat * (d_xhat * x_hat).mean(axis=1, keepdims=True))
    return {"x_grad": dx.reshape(x.shape),
            "scale_grad": (drows * x_hat).sum(axis=0) if scale is not None else None,
            "bias_grad": drows.sum(axis=0) if ins.get("bias") is not None else None}


# --------------------------------------------------------------------------- instance_norm
def _spatial(x: np.ndarray) -> tuple[int, ...]:
    return tuple(range(2, x.ndim))


def _nc(stat: np.ndarray, ndim: int) -> np.ndarray:
    """A ``[N, C]`` statistic broadcast against x of ``ndim`` axes."""
    return stat.reshape(stat.shape + (1,) * (ndim - 2))


def _check_stats(ins: Arrays, names: Sequence[str], shape: tuple[int, ...], op: str, *,
                 checked: bool | None) -> None:
    for name in names:
        t = required(ins, name)
        if t.shape != shape:
            raise KernelRejects(name, f"{op}: local {name} has shape {list(t.shape)} but the local x needs "
                                f"{list(shape)}" + _how(checked), checked=checked)


def _how(checked: bool | None) -> str:
    if checked is None:
        return " (not measured on Paddle: no CPU kernel to measure)"
    return "" if checked else " (Paddle does not check this: it reads the wrong entries or past the end)"


def instance_norm(ins: Arrays, attrs: dict) -> Arrays:
    """``ins``: x [N, C, *spatial], scale, bias (``[C]`` or None) -> y, saved_mean and saved_variance
    ``[N, C]`` (the rule's view; Paddle's op stores them flat, ``[N*C]``), saved_variance = 1/sqrt(var+eps)."""
    x = required(ins, "x")
    _check_x(x, "instance_norm")
    _per_channel(ins, ("scale", "bias"), x.shape[1], checked=lambda _: True, op="instance_norm")
    axes = _spatial(x)
    mean = x.mean(axis=axes)
    inv = 1.0 / np.sqrt(((x - _nc(mean, x.ndim)) ** 2).mean(axis=axes) + f32(attrs["epsilon"]))
    bs = _bshape(x.ndim, 1, x.shape[1])
    y = (x - _nc(mean, x.ndim)) * _nc(inv, x.ndim)
    if (scale := ins.get("scale")) is not None:
        y = y * scale.reshape(bs)
    if (bias := ins.get("bias")) is not None:
        y = y + bias.reshape(bs)
    return {"y": y, "saved_mean": mean, "saved_variance": inv}


def instance_norm_grad(ins: Arrays, attrs: dict) -> Arrays:
    """``ins``: x, scale, saved_mean, saved_variance, y_grad (the rule's returned inputs; bias is
    not one) -> x_grad, scale_grad (with a scale), bias_grad (when the case has a bias:
    ``attrs["has_bias"]``). Paddle's CPU grad kernel checks neither scale's nor the statistics' size
    (measured: a wrong size runs and corrupts the heap)."""
    x, dy = required(ins, "x"), required(ins, "y_grad")
    _check_x(x, "instance_norm_grad")
    if dy.shape != x.shape:
        raise KernelRejects("y_grad", f"instance_norm_grad: local y_grad {list(dy.shape)} != local x "
                            f"{list(x.shape)}", checked=False)
    _per_channel(ins, ("scale",), x.shape[1], checked=lambda _: False, op="instance_norm_grad")
    _check_stats(ins, ("saved_mean", "saved_variance"), x.shape[:2], "instance_norm_grad", checked=False)
    axes = _spatial(x)
    inv = _nc(required(ins, "saved_variance"), x.ndim)
    x_hat = (x - _nc(required(ins, "saved_mean"), x.ndim)) * inv
    scale = ins.get("scale")
    g = dy * (scale.reshape(_bshape(x.ndim, 1, x.shape[1])) if scale is not None else 1.0)
    dx = inv * (g - g.mean(axis=axes, keepdims=True) - x_hat * (g * x_hat).mean(axis=axes, keepdims=True))
    per_channel = (0,) + axes
    return {"x_grad": dx, "scale_grad": (dy * x_hat).sum(axis=per_channel) if scale is not None else None,
            "bias_grad": dy.sum(axis=per_channel) if attrs.get("has_bias", True) else None}


# --------------------------------------------------------------------------- rms_norm, fast_ln
def _last_axis_rows(x: np.ndarray, ins: Arrays, names: Sequence[str], op: str) -> None:
    if x.ndim < 1 or x.size == 0:
        raise KernelRejects("x", f"{op}: a rank holds x {list(x.shape)} (no axis to normalise, or empty)",
                            checked=False)
    for name in names:
        t = ins.get(name)
        if t is not None and t.size != x.shape[-1]:
            raise KernelRejects(name, f"{op}: local {name} has {t.size} entries but the local x's last axis has "
                                f"{x.shape[-1]}" + _how(None), checked=None)


def rms_norm(ins: Arrays, attrs: dict) -> Arrays:
    """``ins``: x, scale -> out = x * invvar * scale, invvar = 1/sqrt(mean(x^2 over the last axis) + eps)
    (shape ``x.shape[:-1]``)."""
    x = required(ins, "x")
    _last_axis_rows(x, ins, ("scale",), "rms_norm")
    inv = 1.0 / np.sqrt((x * x).mean(axis=-1) + f32(attrs["epsilon"]))
    out = x * inv[..., None]
    if (scale := ins.get("scale")) is not None:
        out = out * scale
    return {"out": out, "invvar": inv}


def rms_norm_grad(ins: Arrays, attrs: dict) -> Arrays:
    """``ins``: x, scale, invvar, out_grad -> x_grad = invvar * (g - x_hat * mean(g * x_hat)) with
    g = out_grad * scale and x_hat = x * invvar; scale_grad = sum(out_grad * x_hat) over the leading axes."""
    x, dy = required(ins, "x"), required(ins, "out_grad")
    _last_axis_rows(x, ins, ("scale",), "rms_norm_grad")
    if dy.shape != x.shape:
        raise KernelRejects("out_grad", f"rms_norm_grad: local out_grad {list(dy.shape)} != local x "
                            f"{list(x.shape)}" + _how(None), checked=None)
    _check_stats(ins, ("invvar",), x.shape[:-1], "rms_norm_grad", checked=None)
    inv = required(ins, "invvar")[..., None]
    x_hat = x * inv
    scale = ins.get("scale")
    g = dy * scale if scale is not None else dy
    dx = inv * (g - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))
    lead = tuple(range(x.ndim - 1))
    return {"x_grad": dx, "scale_grad": (dy * x_hat).sum(axis=lead) if scale is not None else None}


def fast_ln(ins: Arrays, attrs: dict) -> Arrays:
    """layer_norm over the last axis: ``ins`` x, scale, bias -> out, mean, invvar = 1/sqrt(var+eps)
    (both ``x.shape[:-1]``)."""
    x = required(ins, "x")
    _last_axis_rows(x, ins, ("scale", "bias"), "fast_ln")
    mean = x.mean(axis=-1)
    inv = 1.0 / np.sqrt(((x - mean[..., None]) ** 2).mean(axis=-1) + f32(attrs["epsilon"]))
    out = (x - mean[..., None]) * inv[..., None]
    if (scale := ins.get("scale")) is not None:
        out = out * scale
    if (bias := ins.get("bias")) is not None:
        out = out + bias
    return {"out": out, "mean": mean, "invvar": inv}


def fast_ln_grad(ins: Arrays, attrs: dict) -> Arrays:
    """``ins``: x, scale, mean, invvar, y_grad -> x_grad, scale_grad (with a scale), bias_grad =
    sum(y_grad) over the leading axes (the op has no bias input; its bias_grad is always made)."""
    x, dy = required(ins, "x"), required(ins, "y_grad")
    _last_axis_rows(x, ins, ("scale",), "fast_ln_grad")
    if dy.shape != x.shape:
        raise KernelRejects("y_grad", f"fast_ln_grad: local y_grad {list(dy.shape)} != local x "
                            f"{list(x.shape)}" + _how(None), checked=None)
    _check_stats(ins, ("mean", "invvar"), x.shape[:-1], "fast_ln_grad", checked=None)
    inv = required(ins, "invvar")[..., None]
    x_hat = (x - required(ins, "mean")[..., None]) * inv
    scale = ins.get("scale")
    g = dy * scale if scale is not None else dy
    dx = inv * (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))
    lead = tuple(range(x.ndim - 1))
    return {"x_grad": dx, "scale_grad": (dy * x_hat).sum(axis=lead) if scale is not None else None,
            "bias_grad": dy.sum(axis=lead)}


# --------------------------------------------------------------------------- group_norm
def _gn_layout(x: np.ndarray, attrs: dict, op: str) -> tuple[int, int]:
    """(channel axis, groups); Paddle rejects C % groups != 0 (measured: "Expected number of channels
    in input to be divisible by num_groups")."""
    if not 2 <= x.ndim <= 5:
        raise KernelRejects("x", f"{op}: x must have rank 2..5, got {x.ndim}", checked=True)
    if x.size == 0:
        raise KernelRejects("x", f"{op}: a rank holds an empty x {list(x.shape)}", checked=False)
    c = channel_axis(attrs["data_format"], x.ndim)
    groups = int(attrs["groups"])
    if groups < 1 or x.shape[c] % groups:
        raise KernelRejects("x", f"{op}: the local x has C={x.shape[c]} channels, not divisible by groups={groups}",
                            checked=True)
    return c, groups


def _grouped(t: np.ndarray, c: int, groups: int) -> np.ndarray:
    """x-shaped ``t`` as ``[N, groups, C/groups * spatial]`` (channel axis moved next to N)."""
    moved = np.moveaxis(t, c, 1)
    return moved.reshape(moved.shape[0], groups, -1)


def _ungrouped(t: np.ndarray, like: np.ndarray, c: int) -> np.ndarray:
    return np.moveaxis(t.reshape(np.moveaxis(like, c, 1).shape), 1, c)


def _channel_row(t: np.ndarray, like: np.ndarray, c: int) -> np.ndarray:
    """A per-channel ``[C]`` vector broadcast against the grouped view of x."""
    moved = np.moveaxis(like, c, 1)
    full = np.broadcast_to(t.reshape((1, -1) + (1,) * (like.ndim - 2)), (1,) + moved.shape[1:])
    return full.reshape(1, -1)


def group_norm(ins: Arrays, attrs: dict) -> Arrays:
    """``ins``: x, scale, bias -> y, mean, variance (``[N, groups]``, biased variance); statistics over
    each group of C/groups channels and every spatial axis; channel axis from data_format."""
    x = required(ins, "x")
    c, groups = _gn_layout(x, attrs, "group_norm")
    _per_channel(ins, ("scale", "bias"), x.shape[c], checked=lambda _: True, op="group_norm")
    rows = _grouped(x, c, groups)
    mean = rows.mean(axis=2)
    var = ((rows - mean[..., None]) ** 2).mean(axis=2)
    y = ((rows - mean[..., None]) / np.sqrt(var[..., None] + f32(attrs["epsilon"]))).reshape(rows.shape[0], -1)
    if (scale := ins.get("scale")) is not None:
        y = y * _channel_row(scale, x, c)
    if (bias := ins.get("bias")) is not None:
        y = y + _channel_row(bias, x, c)
    return {"y": _ungrouped(y, x, c), "mean": mean, "variance": var}


def group_norm_grad(ins: Arrays, attrs: dict) -> Arrays:
    """``ins``: x, scale, bias, y, mean, variance, y_grad. As Paddle's CPU kernel, the normalised
    input comes from y: x_hat = (y - bias) / scale (x and mean are only shape-checked here)."""
    x, y, dy = required(ins, "x"), required(ins, "y"), required(ins, "y_grad")
    c, groups = _gn_layout(x, attrs, "group_norm_grad")
    for name, t in (("y", y), ("y_grad", dy)):
        if t.shape != x.shape:
            raise KernelRejects(name, f"group_norm_grad: local {name} {list(t.shape)} != local x {list(x.shape)}",
                                checked=False)
    _per_channel(ins, ("scale", "bias"), x.shape[c], checked=lambda _: False, op="group_norm_grad")
    _check_stats(ins, ("mean", "variance"), (x.shape[0], groups), "group_norm_grad", checked=False)
    n = x.shape[0]
    scale, bias = ins.get("scale"), ins.get("bias")
    s_row = _channel_row(scale, x, c) if scale is not None else np.ones((1, 1))
    b_row = _channel_row(bias, x, c) if bias is not None else np.zeros((1, 1))
    flat_y, flat_dy = _grouped(y, c, 1).reshape(n, -1), _grouped(dy, c, 1).reshape(n, -1)
    x_hat = ((flat_y - b_row) / s_row).reshape(n, groups, -1)
    g = (flat_dy * s_row).reshape(n, groups, -1)
    inv = 1.0 / np.sqrt(required(ins, "variance")[..., None] + f32(attrs["epsilon"]))
    dx = inv * (g - g.mean(axis=2, keepdims=True) - x_hat * (g * x_hat).mean(axis=2, keepdims=True))
    per_channel = np.moveaxis(dy * _ungrouped(x_hat.reshape(n, -1), x, c), c, 1)
    axes = tuple(a for a in range(x.ndim) if a != 1)
    return {"x_grad": _ungrouped(dx.reshape(n, -1), x, c),
            "scale_grad": per_channel.sum(axis=axes) if scale is not None else None,
            "bias_grad": np.moveaxis(dy, c, 1).sum(axis=axes) if bias is not None else None}


# --------------------------------------------------------------------------- per-rule models
@dataclass(frozen=True)
class OpModel:
    """How the oracle runs one rule's op: which answer slots feed the kernel, which it checks."""

    inputs: tuple[str, ...]
    """Kernel inputs, in the order of the rule's returned input attrs."""
    outputs: tuple[str, ...]
    """Kernel outputs, in the order of the rule's returned output attrs."""
    run: Callable[[list[Arrays], dict, Sequence[Sequence[int]]], list[Arrays]]
    """All ranks at once: per-rank inputs, attributes, all-reduce groups -> per-rank outputs."""
    family: str
    """``batch_norm`` (local-statistics label applies), ``sync_batch_norm`` or ``layer_norm``."""
    batch_axis_outputs: tuple[str, ...] = ()
    """Outputs shaped like x (their axis 0 is the batch)."""


def _each(fn: Callable[[Arrays, dict], Arrays]) -> Callable[[list[Arrays], dict, Sequence[Sequence[int]]],
                                                             list[Arrays]]:
    def run(per_rank: list[Arrays], attrs: dict, groups: Sequence[Sequence[int]]) -> list[Arrays]:
        return [_on_rank(r, functools.partial(fn, ins, attrs)) for r, ins in enumerate(per_rank)]
    return run


def _model(rule: str, run: Callable[[list[Arrays], dict, Sequence[Sequence[int]]], list[Arrays]],
           batch_axis_outputs: tuple[str, ...] = ()) -> OpModel:
    """The kernel's inputs and outputs are the rule's returned attrs (the signature table's names);
    the family is the rule's op."""
    spec = RULES[rule]
    return OpModel(spec.result_inputs, spec.result_outputs, run, spec.op, batch_axis_outputs)


MODELS: dict[str, OpModel] = {
    "batch_norm_static": _model("batch_norm_static", _each(batch_norm), ("out",)),
    "batch_norm": _model("batch_norm", _each(batch_norm), ("out",)),
    "batch_norm_grad": _model("batch_norm_grad", _each(batch_norm_grad), ("x_grad",)),
    "sync_batch_norm": _model("sync_batch_norm", sync_batch_norm, ("out",)),
    "sync_batch_norm_grad": _model("sync_batch_norm_grad", sync_batch_norm_grad, ("x_grad",)),
    "layer_norm": _model("layer_norm", _each(layer_norm)),
    "layer_norm_reverse": _model("layer_norm_reverse", _each(layer_norm)),
    "layer_norm_grad": _model("layer_norm_grad", _each(layer_norm_grad)),
    "instance_norm": _model("instance_norm", _each(instance_norm)),
    "instance_norm_grad": _model("instance_norm_grad", _each(instance_norm_grad)),
    "rms_norm": _model("rms_norm", _each(rms_norm)),
    "rms_norm_reverse": _model("rms_norm_reverse", _each(rms_norm)),
    "rms_norm_grad": _model("rms_norm_grad", _each(rms_norm_grad)),
    "fast_ln": _model("fast_ln", _each(fast_ln)),
    "fast_ln_grad": _model("fast_ln_grad", _each(fast_ln_grad)),
    "group_norm": _model("group_norm", _each(group_norm)),
    "group_norm_base": _model("group_norm_base", _each(group_norm)),
    "group_norm_grad": _model("group_norm_grad", _each(group_norm_grad)),
    "group_norm_grad_base": _model("group_norm_grad_base", _each(group_norm_grad)),
}
