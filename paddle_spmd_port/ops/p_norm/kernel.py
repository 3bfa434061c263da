"""p_norm's numpy model for the oracle (a draft: the oracle's kernel API, ops/kit/kernel.py, is
being built; this module keeps to plain functions until then).

* :func:`p_norm` and :func:`p_norm_grad`: what Paddle's CPU kernels compute (checked against
  ``_C_ops.p_norm`` and its backward in tests/test_p_norm.py);
* :func:`run_forward`: one rule answer carried out on a mesh, rank by rank: each rank takes its
  shard of x as the answer's x mapping cuts it (Paddle's layout: ``ceil(size / parts)`` a shard),
  runs the kernel on it, and the shards of out are put together as the answer's out mapping and
  Partial(SUM) say. The answer is sound where that equals the kernel on the whole x.

Only this module of the family imports numpy (the oracle's kernels are the one place ops/ may).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np


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


def _cut(size: int, parts: int, index: int) -> slice:
    step = -(-size // parts)
    return slice(min(index * step, size), min((index + 1) * step, size))


def run_forward(x: np.ndarray, mesh_shape: Sequence[int], x_mapping: Sequence[int], out_mapping: Sequence[int],
                partial: frozenset[int], porder: float, axis: int, keepdims: bool, asvector: bool) -> np.ndarray:
    """out as the ranks of ``mesh_shape`` compute it from the rule's answer (one mesh dim per axis).

    Ranks along a mesh dim that splits out hold its pieces; along a Partial dim their values add
    up; along any other mesh dim out is claimed replicated, so any one rank's value (the first's)
    is out, whatever the others hold."""
    out = np.zeros(p_norm(x, porder, axis, 0.0, keepdims, asvector).shape, dtype=np.float64)
    read = {m for m in out_mapping if m != -1} | set(partial)
    for coord in itertools.product(*(range(s) if d in read else range(1) for d, s in enumerate(mesh_shape))):
        piece = x[tuple(_cut(x.shape[a], mesh_shape[m], coord[m]) if m != -1 else slice(None)
                        for a, m in enumerate(x_mapping))]
        local = p_norm(piece, porder, axis, 0.0, keepdims, asvector) if piece.size else 0.0
        where = tuple(_cut(out.shape[i], mesh_shape[m], coord[m]) if m != -1 else slice(None)
                      for i, m in enumerate(out_mapping))
        out[where] += local
    return out
