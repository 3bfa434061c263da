"""numpy models of the kernels the rules feed: batch_norm, sync_batch_norm, layer_norm and their grads.

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

Local shapes a kernel cannot use raise :class:`KernelRejects`. ``checked`` says whether Paddle's
kernel itself rejects them (``True``: an InvalidArgument/ShapeError) or silently reads the wrong
entries or past the end of the buffer (``False``: batch_norm's mean/variance, batch_norm_grad's
scale/bias/statistics), measured on the 3.3.1 CPU kernels.
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

    def __init__(self, tensor: str, message: str, *, checked: bool, rank: int | None = None) -> None:
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
}
