"""fast_ln's numpy kernels and the oracle's models of its rules::

    op                    statistics                             outputs
    fast_ln               layer_norm over the last axis          out, mean, invvar = 1/sqrt(var+eps)
    fast_ln_grad          the given mean/invvar                  x_grad, scale_grad, bias_grad (always made)

The grads are checked against central finite differences of the forward (``tests/test_oracle_norms.py``).
3.3.1 has no CPU fast_ln kernel, so what Paddle's kernel checks is not measured (a rejection says so).
"""

from __future__ import annotations

import numpy as np

from ..kit.kernel import (
    Arrays,
    Attrs,
    Facts,
    KernelModels,
    KernelRejects,
    OpModel,
    Shape,
    check_last_axis,
    check_stats,
    f32,
    from_forward,
    model,
    paddle_check_note,
    per_rank,
    required,
    row_sizes,
)


def fast_ln(ins: Arrays, attrs: Attrs) -> Arrays:
    """layer_norm over the last axis: ``ins`` x, scale, bias -> out, mean, invvar = 1/sqrt(var+eps)
    (both ``x.shape[:-1]``)."""
    x = required(ins, "x")
    check_last_axis(x, ins, ("scale", "bias"), "fast_ln")
    mean = x.mean(axis=-1)
    inv = 1.0 / np.sqrt(((x - mean[..., None]) ** 2).mean(axis=-1) + f32(attrs["epsilon"]))
    out = (x - mean[..., None]) * inv[..., None]
    if (scale := ins.get("scale")) is not None:
        out = out * scale
    if (bias := ins.get("bias")) is not None:
        out = out + bias
    return {"out": out, "mean": mean, "invvar": inv}


def fast_ln_grad(ins: Arrays, attrs: Attrs) -> Arrays:
    """``ins``: x, scale, mean, invvar, y_grad -> x_grad, scale_grad (with a scale), bias_grad =
    sum(y_grad) over the leading axes (the op has no bias input; its bias_grad is always made)."""
    x, dy = required(ins, "x"), required(ins, "y_grad")
    check_last_axis(x, ins, ("scale",), "fast_ln_grad")
    if dy.shape != x.shape:
        raise KernelRejects("y_grad", f"fast_ln_grad: local y_grad {list(dy.shape)} != local x "
                            f"{list(x.shape)}" + paddle_check_note(None), checked=None)
    check_stats(ins, ("mean", "invvar"), x.shape[:-1], "fast_ln_grad", checked=None)
    inv = required(ins, "invvar")[..., None]
    x_hat = (x - required(ins, "mean")[..., None]) * inv
    scale = ins.get("scale")
    g = dy * scale if scale is not None else dy
    dx = inv * (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))
    lead = tuple(range(x.ndim - 1))
    return {"x_grad": dx, "scale_grad": (dy * x_hat).sum(axis=lead) if scale is not None else None,
            "bias_grad": dy.sum(axis=lead)}


# --------------------------------------------------------------------------- what the oracle needs besides
def sizes(old: Shape, new: Shape, attrs: Attrs) -> list[tuple[Shape, Shape]]:
    """The last axis is normalised: scale/bias per element of it, mean/invvar ``x.shape[:-1]``."""
    return row_sizes(old, new, len(old) - 1)


FACTS = Facts(sizes=sizes, statistics=frozenset({"invvar", "saved_mean", "saved_variance", "mean", "variance"}))
_NO_CPU = "3.3.1 has no CPU fast_ln kernel"
_FORWARD = model("fast_ln", per_rank(fast_ln), FACTS, not_on_ranks=_NO_CPU)

MODELS: dict[str, OpModel] = {
    "fast_ln": _FORWARD,
    "fast_ln_grad": model("fast_ln_grad", per_rank(fast_ln_grad), FACTS,
                          saved_inputs=from_forward(_FORWARD, {"mean": "mean", "invvar": "invvar"}),
                          not_on_ranks=_NO_CPU),
}

#: The family's oracle part, read by paddle_spmd_port.oracle.kernels.
KERNEL = KernelModels(MODELS)
