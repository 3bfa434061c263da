"""rms_norm's numpy kernels and the oracle's models of its rules::

    op                    statistics                             outputs
    rms_norm              mean(x^2) over the last axis           out = x * invvar * scale, invvar = 1/sqrt(. + eps)
    rms_norm_grad         the given invvar                       x_grad, scale_grad (sum over the leading axes)

The grads are checked against central finite differences of the forward (``tests/test_oracle_norms.py``).
No eager API reaches the rms_norm rules on a 3.3.1 CPU build, so what Paddle's kernel checks is not
measured (a rejection says so).
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


def rms_norm(ins: Arrays, attrs: Attrs) -> Arrays:
    """``ins``: x, scale -> out = x * invvar * scale, invvar = 1/sqrt(mean(x^2 over the last axis) + eps)
    (shape ``x.shape[:-1]``)."""
    x = required(ins, "x")
    check_last_axis(x, ins, ("scale",), "rms_norm")
    inv = 1.0 / np.sqrt((x * x).mean(axis=-1) + f32(attrs["epsilon"]))
    out = x * inv[..., None]
    if (scale := ins.get("scale")) is not None:
        out = out * scale
    return {"out": out, "invvar": inv}


def rms_norm_grad(ins: Arrays, attrs: Attrs) -> Arrays:
    """``ins``: x, scale, invvar, out_grad -> x_grad = invvar * (g - x_hat * mean(g * x_hat)) with
    g = out_grad * scale and x_hat = x * invvar; scale_grad = sum(out_grad * x_hat) over the leading axes."""
    x, dy = required(ins, "x"), required(ins, "out_grad")
    check_last_axis(x, ins, ("scale",), "rms_norm_grad")
    if dy.shape != x.shape:
        raise KernelRejects("out_grad", f"rms_norm_grad: local out_grad {list(dy.shape)} != local x "
                            f"{list(x.shape)}" + paddle_check_note(None), checked=None)
    check_stats(ins, ("invvar",), x.shape[:-1], "rms_norm_grad", checked=None)
    inv = required(ins, "invvar")[..., None]
    x_hat = x * inv
    scale = ins.get("scale")
    g = dy * scale if scale is not None else dy
    dx = inv * (g - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))
    lead = tuple(range(x.ndim - 1))
    return {"x_grad": dx, "scale_grad": (dy * x_hat).sum(axis=lead) if scale is not None else None}


# --------------------------------------------------------------------------- what the oracle needs besides
def sizes(old: Shape, new: Shape, attrs: Attrs) -> list[tuple[Shape, Shape]]:
    """The last axis is normalised: scale per element of it, invvar ``x.shape[:-1]``."""
    return row_sizes(old, new, len(old) - 1)


FACTS = Facts(sizes=sizes)
_NO_EAGER = "no eager API reaches the rms_norm rules on a 3.3.1 CPU build"
_FORWARD = model("rms_norm", per_rank(rms_norm), FACTS, not_on_ranks=_NO_EAGER)

MODELS: dict[str, OpModel] = {
    "rms_norm": _FORWARD,
    "rms_norm_reverse": model("rms_norm_reverse", per_rank(rms_norm), FACTS,
                              not_on_ranks="the reverse rule is only used by static completion"),
    "rms_norm_grad": model("rms_norm_grad", per_rank(rms_norm_grad), FACTS,
                           saved_inputs=from_forward(_FORWARD, {"invvar": "invvar"}), not_on_ranks=_NO_EAGER),
}

#: The family's oracle part, read by paddle_spmd_port.oracle.kernels.
KERNEL = KernelModels(MODELS)
