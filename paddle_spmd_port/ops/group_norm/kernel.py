"""group_norm's numpy kernels and the oracle's models of its rules (checked against Paddle 3.3.1's
CPU kernels by ``tests/test_oracle_norms.py``)::

    op                    statistics                             outputs
    group_norm            mean/var over each group of C/groups   y, mean, variance (biased), both [N, groups];
                          channels and the spatial axes          C on axis 1 or last (data_format)
    group_norm_grad       x_hat from y, scale, bias (as Paddle's x_grad, scale_grad, bias_grad
                          CPU kernel) and the given variance

Paddle rejects C % groups != 0 ("Expected number of channels in input to be divisible by
num_groups") and a forward scale/bias of the wrong size; the grad's CPU kernel checks neither the
per-channel inputs' nor the statistics' sizes.

For the oracle, x is re-sized to :data:`X_SHAPES` (C = 12 on axis 1 and on the last axis, so both
layouts divide by the grid's groups 2 and 4). The grid's co-shard set carries the header's default
``groups=-1``, which the op rejects: it is judged with ``groups=2``. The Base rules read no
attributes; their kernels run with :data:`BASE_KERNEL_ATTRS`.
"""

from __future__ import annotations

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
    check_per_channel,
    check_stats,
    f32,
    from_forward,
    model,
    per_rank,
    required,
)
from ..kit.layout import channel_axis, kernel_layout

#: x's numeric shape per rank: C = 12 on axis 1 and on the last axis (channel-first and channel-last
#: layouts), so the grid's groups (2 and 4) divide C as the op requires.
X_SHAPES: dict[int, Shape] = {3: (8, 12, 12), 4: (8, 12, 10, 12), 5: (8, 12, 7, 10, 12)}
#: The attributes the Base rules (which take none) are judged with: the grid's groups for them (2)
#: and a channel-first layout.
BASE_KERNEL_ATTRS = (("epsilon", 1e-5), ("groups", 2), ("data_format", "NCHW"))


def _gn_layout(x: Array, attrs: Attrs, op: str) -> tuple[int, int]:
    """(channel axis, groups); Paddle rejects C % groups != 0."""
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


def _grouped(t: Array, c: int, groups: int) -> Array:
    """x-shaped ``t`` as ``[N, groups, C/groups * spatial]`` (channel axis moved next to N)."""
    moved = np.moveaxis(t, c, 1)
    return moved.reshape(moved.shape[0], groups, -1)


def _ungrouped(t: Array, like: Array, c: int) -> Array:
    return np.moveaxis(t.reshape(np.moveaxis(like, c, 1).shape), 1, c)


def _channel_row(t: Array, like: Array, c: int) -> Array:
    """A per-channel ``[C]`` vector broadcast against the grouped view of x."""
    moved = np.moveaxis(like, c, 1)
    full = np.broadcast_to(t.reshape((1, -1) + (1,) * (like.ndim - 2)), (1,) + moved.shape[1:])
    return full.reshape(1, -1)


def group_norm(ins: Arrays, attrs: Attrs) -> Arrays:
    """``ins``: x, scale, bias -> y, mean, variance (``[N, groups]``, biased variance); statistics over
    each group of C/groups channels and every spatial axis; channel axis from data_format."""
    x = required(ins, "x")
    c, groups = _gn_layout(x, attrs, "group_norm")
    check_per_channel(ins, ("scale", "bias"), x.shape[c], checked=lambda _: True, op="group_norm")
    rows = _grouped(x, c, groups)
    mean = rows.mean(axis=2)
    var = ((rows - mean[..., None]) ** 2).mean(axis=2)
    y = ((rows - mean[..., None]) / np.sqrt(var[..., None] + f32(attrs["epsilon"]))).reshape(rows.shape[0], -1)
    if (scale := ins.get("scale")) is not None:
        y = y * _channel_row(scale, x, c)
    if (bias := ins.get("bias")) is not None:
        y = y + _channel_row(bias, x, c)
    return {"y": _ungrouped(y, x, c), "mean": mean, "variance": var}


def group_norm_grad(ins: Arrays, attrs: Attrs) -> Arrays:
    """``ins``: x, scale, bias, y, mean, variance, y_grad. As Paddle's CPU kernel, the normalised
    input comes from y: x_hat = (y - bias) / scale (x and mean are only shape-checked here)."""
    x, y, dy = required(ins, "x"), required(ins, "y"), required(ins, "y_grad")
    c, groups = _gn_layout(x, attrs, "group_norm_grad")
    for name, t in (("y", y), ("y_grad", dy)):
        if t.shape != x.shape:
            raise KernelRejects(name, f"group_norm_grad: local {name} {list(t.shape)} != local x {list(x.shape)}",
                                checked=False)
    check_per_channel(ins, ("scale", "bias"), x.shape[c], checked=lambda _: False, op="group_norm_grad")
    check_stats(ins, ("mean", "variance"), (x.shape[0], groups), "group_norm_grad", checked=False)
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


# --------------------------------------------------------------------------- what the oracle needs besides
def sizes(old: Shape, new: Shape, attrs: Attrs) -> list[tuple[Shape, Shape]] | None:
    """scale/bias follow C; the statistics ``[N, groups]`` keep their shape (N and groups do)."""
    if len(old) < 2:
        return None
    c = channel_axis(str(attrs.get("data_format", "NCHW")), len(old), strict=False)
    return [((old[c],), (new[c],))]


def _base_attrs(attrs: Attrs, present: frozenset[str]) -> Attrs:
    return dict(BASE_KERNEL_ATTRS)


FACTS = Facts(sizes=sizes, x_shapes=X_SHAPES, coshard_attrs=(("groups", -1, 2),), layout=kernel_layout,
              statistics=frozenset({"invvar", "saved_mean", "saved_variance", "mean", "variance"}),
              per_channel=frozenset({"scale", "bias"}))
_SAVED = {"y": "y", "mean": "mean", "variance": "variance"}
_FORWARD = model("group_norm", per_rank(group_norm), FACTS)
_FORWARD_BASE = model("group_norm_base", per_rank(group_norm), FACTS, attrs=_base_attrs)

MODELS: dict[str, OpModel] = {
    "group_norm": _FORWARD,
    "group_norm_base": _FORWARD_BASE,
    "group_norm_grad": model("group_norm_grad", per_rank(group_norm_grad), FACTS,
                             saved_inputs=from_forward(_FORWARD, _SAVED)),
    "group_norm_grad_base": model("group_norm_grad_base", per_rank(group_norm_grad), FACTS, attrs=_base_attrs,
                                  saved_inputs=from_forward(_FORWARD_BASE, _SAVED)),
}

#: The family's oracle part, read by paddle_spmd_port.oracle.kernels.
KERNEL = KernelModels(MODELS)
