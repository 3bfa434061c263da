"""p_norm's numpy kernels and the oracle's models of its rules::

    op            computes                                           outputs
    p_norm        nonzero count (porder 0), max / min |x| (+-inf),   out
                  else (sum |x|^p)^(1/p), over the reduced axes
    p_norm_grad   sign(x) |x|^(p-1) / out^(p-1) * out_grad           x_grad
                  (+-inf: sign(x) where |x| is the max / min; 0: 0)

:func:`p_norm` and :func:`p_norm_grad` equal Paddle's CPU kernels (tests/test_p_norm.py compares
them with ``_C_ops.p_norm`` and its backward). The oracle runs a rule's answer rank by rank
(ops/kit/kernel.py): 3.3.1's forward is unsound where a reduced axis is split and porder is not
0 or 1 (Partial(SUM) of the shards' norms); the reverse rule is judged by the forward kernel.
"""

from __future__ import annotations

import math

import numpy as np

from ..kit.kernel import (
    Arrays,
    Attrs,
    Facts,
    KernelModels,
    KernelRejects,
    OpModel,
    Shape,
    from_forward,
    model,
    per_rank,
    required,
)


def _axes(ndim: int, axis: int, asvector: bool) -> tuple[int, ...]:
    return tuple(range(ndim)) if asvector else (axis % ndim,) if ndim else ()


def p_norm(x: np.ndarray, porder: float = 2.0, axis: int = -1, epsilon: float = 1e-12, keepdims: bool = False,
           asvector: bool = False) -> np.ndarray:
    """The p-norm: nonzero count (porder 0), max / min of |x| (+-inf), else (sum |x|^p)^(1/p)."""
    axes = _axes(x.ndim, axis, asvector)
    a = np.abs(x)
    if porder == 0:
        out = np.sum(x != 0, axis=axes, keepdims=keepdims).astype(x.dtype)
    elif porder == math.inf:
        out = np.max(a, axis=axes, keepdims=keepdims)
    elif porder == -math.inf:
        out = np.min(a, axis=axes, keepdims=keepdims)
    else:
        out = np.sum(a ** porder, axis=axes, keepdims=keepdims) ** (1.0 / porder)
    return np.asarray(out)


def p_norm_grad(x: np.ndarray, out: np.ndarray, out_grad: np.ndarray, porder: float = 2.0, axis: int = -1,
                epsilon: float = 1e-12, keepdims: bool = False, asvector: bool = False) -> np.ndarray:
    """d out / d x times out_grad: 0 for porder 0; sign(x) where |x| is the max (min) for +-inf;
    else sign(x) |x|^(p-1) / out^(p-1), out held off zero by epsilon."""
    axes = _axes(x.ndim, axis, asvector)
    if not keepdims:
        out, out_grad = np.expand_dims(out, axes), np.expand_dims(out_grad, axes)
    if porder == 0:
        return np.zeros_like(x)
    if porder in (math.inf, -math.inf):
        return np.asarray(np.sign(x) * (np.abs(x) == out) * out_grad)
    return np.asarray(np.sign(x) * np.abs(x) ** (porder - 1) / np.maximum(out, epsilon) ** (porder - 1) * out_grad)


def _attrs(attrs: Attrs) -> tuple[float, int, float, bool, bool]:
    return (float(attrs.get("porder", 2.0)), int(attrs.get("axis", -1)), float(attrs.get("epsilon", 1e-12)),
            bool(attrs.get("keepdims", False)), bool(attrs.get("asvector", False)))


def _check_axis(x: np.ndarray, axis: int, asvector: bool, op: str) -> None:
    if not asvector and x.ndim and not -x.ndim <= axis < x.ndim:
        raise KernelRejects("x", f"{op}: axis {axis} is outside {-x.ndim}..{x.ndim - 1} for the local x "
                            f"{list(x.shape)}", checked=True)


def forward_kernel(ins: Arrays, attrs: Attrs) -> Arrays:
    """``ins``: x -> out."""
    x = required(ins, "x")
    porder, axis, epsilon, keepdims, asvector = _attrs(attrs)
    _check_axis(x, axis, asvector, "p_norm")
    return {"out": p_norm(x, porder, axis, epsilon, keepdims, asvector)}


def grad_kernel(ins: Arrays, attrs: Attrs) -> Arrays:
    """``ins``: x, out, out_grad -> x_grad. out and out_grad must have the local out's shape (the
    kernel broadcasts them along the reduced axes of the local x)."""
    x, out, og = required(ins, "x"), required(ins, "out"), required(ins, "out_grad")
    porder, axis, epsilon, keepdims, asvector = _attrs(attrs)
    _check_axis(x, axis, asvector, "p_norm_grad")
    want = p_norm(x, porder, axis, epsilon, keepdims, asvector).shape
    for name, t in (("out", out), ("out_grad", og)):
        if t.shape != want:
            raise KernelRejects(name, f"p_norm_grad: local {name} has shape {list(t.shape)} but the local x "
                                f"{list(x.shape)} reduces to {list(want)}", checked=True)
    return {"x_grad": p_norm_grad(x, out, og, porder, axis, epsilon, keepdims, asvector)}


# --------------------------------------------------------------------------- what the oracle needs besides
def sizes(old: Shape, new: Shape, attrs: Attrs) -> list[tuple[Shape, Shape]]:
    """out and out_grad: x's shape reduced as the attributes say."""
    _, axis, _, keepdims, asvector = _attrs(attrs)
    if not asvector and old and not -len(old) <= axis < len(old):
        return []

    def reduced(shape: Shape) -> Shape:
        axes = _axes(len(shape), axis, asvector)
        return tuple(1 if a in axes else s for a, s in enumerate(shape) if keepdims or a not in axes)

    return [(reduced(old), reduced(new))]


FACTS = Facts(sizes=sizes, statistics=frozenset())
_FORWARD = model("p_norm", per_rank(forward_kernel), FACTS)

MODELS: dict[str, OpModel] = {
    "p_norm": _FORWARD,
    "p_norm_reverse": model("p_norm_reverse", per_rank(forward_kernel), FACTS,
                            not_on_ranks="the reverse rule is only used by static completion"),
    "p_norm_grad": model("p_norm_grad", per_rank(grad_kernel), FACTS,
                         saved_inputs=from_forward(_FORWARD, {"out": "out"})),
}

#: The family's oracle part, read by paddle_spmd_port.oracle.kernels.
KERNEL = KernelModels(MODELS)
