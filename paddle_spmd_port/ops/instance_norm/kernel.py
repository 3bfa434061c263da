"""instance_norm's numpy kernels and the oracle's models of its rules (checked against Paddle 3.3.1's
CPU kernels by ``tests/test_oracle_norms.py``)::

    op                    statistics                             outputs
    instance_norm         mean/var over the spatial axes per     y, saved_mean, saved_variance = 1/sqrt(var+eps),
                          (n, c)                                 both [N, C] (Paddle's op stores [N*C])
    instance_norm_grad    the saved statistics                   x_grad, scale_grad, bias_grad (sums over N and
                                                                 the spatial axes)

x is ``[N, C, *spatial]``, channel first. The forward's kernel rejects a scale/bias of the wrong
size; the grad's CPU kernel checks neither scale's nor the statistics' size (measured: a wrong size
runs and corrupts the heap). An unrunnable answer is run again with scale and bias resharded to
follow C (axis 1).

On real Paddle: ``F.instance_norm`` forward runs as a launch case; its backward does not (see the
grad model's reason).
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
    OpModel,
    Shape,
    channel_shape,
    check_per_channel,
    check_stats,
    check_x,
    f32,
    from_forward,
    model,
    per_rank,
    required,
)


def _spatial(x: Array) -> tuple[int, ...]:
    return tuple(range(2, x.ndim))


def _nc(stat: Array, ndim: int) -> Array:
    """A ``[N, C]`` statistic broadcast against x of ``ndim`` axes."""
    return stat.reshape(stat.shape + (1,) * (ndim - 2))


def instance_norm(ins: Arrays, attrs: Attrs) -> Arrays:
    """``ins``: x [N, C, *spatial], scale, bias (``[C]`` or None) -> y, saved_mean and saved_variance
    ``[N, C]`` (the rule's view; Paddle's op stores them flat, ``[N*C]``), saved_variance = 1/sqrt(var+eps)."""
    x = required(ins, "x")
    check_x(x, "instance_norm")
    check_per_channel(ins, ("scale", "bias"), x.shape[1], checked=lambda _: True, op="instance_norm")
    axes = _spatial(x)
    mean = x.mean(axis=axes)
    inv = 1.0 / np.sqrt(((x - _nc(mean, x.ndim)) ** 2).mean(axis=axes) + f32(attrs["epsilon"]))
    bs = channel_shape(x.ndim, 1, x.shape[1])
    y = (x - _nc(mean, x.ndim)) * _nc(inv, x.ndim)
    if (scale := ins.get("scale")) is not None:
        y = y * scale.reshape(bs)
    if (bias := ins.get("bias")) is not None:
        y = y + bias.reshape(bs)
    return {"y": y, "saved_mean": mean, "saved_variance": inv}


def instance_norm_grad(ins: Arrays, attrs: Attrs) -> Arrays:
    """``ins``: x, scale, saved_mean, saved_variance, y_grad (the rule's returned inputs; bias is
    not one) -> x_grad, scale_grad (with a scale), bias_grad (when the case has a bias:
    ``attrs["has_bias"]``). Paddle's CPU grad kernel checks neither scale's nor the statistics' size
    (measured: a wrong size runs and corrupts the heap)."""
    x, dy = required(ins, "x"), required(ins, "y_grad")
    check_x(x, "instance_norm_grad")
    if dy.shape != x.shape:
        raise KernelRejects("y_grad", f"instance_norm_grad: local y_grad {list(dy.shape)} != local x "
                            f"{list(x.shape)}", checked=False)
    check_per_channel(ins, ("scale",), x.shape[1], checked=lambda _: False, op="instance_norm_grad")
    check_stats(ins, ("saved_mean", "saved_variance"), x.shape[:2], "instance_norm_grad", checked=False)
    axes = _spatial(x)
    inv = _nc(required(ins, "saved_variance"), x.ndim)
    x_hat = (x - _nc(required(ins, "saved_mean"), x.ndim)) * inv
    scale = ins.get("scale")
    g = dy * (scale.reshape(channel_shape(x.ndim, 1, x.shape[1])) if scale is not None else 1.0)
    dx = inv * (g - g.mean(axis=axes, keepdims=True) - x_hat * (g * x_hat).mean(axis=axes, keepdims=True))
    per_channel = (0,) + axes
    return {"x_grad": dx, "scale_grad": (dy * x_hat).sum(axis=per_channel) if scale is not None else None,
            "bias_grad": dy.sum(axis=per_channel) if attrs.get("has_bias", True) else None}


# --------------------------------------------------------------------------- what the oracle needs besides
def sizes(old: Shape, new: Shape, attrs: Attrs) -> list[tuple[Shape, Shape]] | None:
    """scale/bias follow C (axis 1), the statistics ``[N, C]``."""
    if len(old) < 2:
        return None
    return [((old[1],), (new[1],)), (old[:2], new[:2])]


def _grad_attrs(attrs: Attrs, present: frozenset[str]) -> Attrs:
    """bias is not an input of the grad's kernel, but whether it makes bias_grad depends on it."""
    return {**attrs, "has_bias": "bias" in present}


def launch_fields(attrs: Attrs, x_shape: Shape) -> dict[str, Any] | None:
    """``F.instance_norm`` as a launch case: channel first, forward only."""
    return {"op": "instance_norm", "data_format": {3: "NCL", 4: "NCHW", 5: "NCDHW"}[len(x_shape)], "backward": False}


FACTS = Facts(sizes=sizes, statistics=frozenset({"invvar", "saved_mean", "saved_variance", "mean", "variance"}),
              per_channel=frozenset({"scale", "bias"}), channel_axis=lambda attrs, ndim: 1)
_FORWARD = model("instance_norm", per_rank(instance_norm), FACTS, launch=launch_fields)

MODELS: dict[str, OpModel] = {
    "instance_norm": _FORWARD,
    "instance_norm_grad": model(
        "instance_norm_grad", per_rank(instance_norm_grad), FACTS, attrs=_grad_attrs,
        saved_inputs=from_forward(_FORWARD, {"saved_mean": "saved_mean", "saved_variance": "saved_variance"}),
        not_on_ranks="an eager backward never reaches the kernel in 3.3.1: InstanceNormInferMeta makes saved_mean "
                     "1-D [N*C] and the grad rule raises on it"),
}

#: The family's oracle part, read by paddle_spmd_port.oracle.kernels.
KERNEL = KernelModels(MODELS)
