"""p_norm on the native routes.

    rule key         registry                     compiled                 PIR
    p_norm           ``p_norm`` infer_forward     (PNormInferSpmd)         the p_norm op; its InferMeta
                                                                           refuses an axis outside -R..R-1
    p_norm_reverse   ``p_norm`` infer_backward    PNormInferSpmdReverse    no op runs it
    p_norm_grad      unregistered                 PNormGradInferSpmd       the p_norm_grad op

Every attribute's default says its kind (porder and epsilon floats, axis an int, keepdims and
asvector bools). Crashes (3.3.1): the grad rule inserts -1 into out_grad's mapping at each reduced
axis when x's rank differs from out_grad's; an axis whose position is not 0..len(mapping) writes
outside the vector (:func:`grad_inserts_outside_mapping`). Some such cases abort or segfault at
once; the others corrupt the heap, and a later case of the same program dies instead
(docs/ops/p_norm.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Integral

from ..kit.native import CaseView, NativeRoutes

PIR_OPS = {"p_norm": "p_norm", "p_norm_grad": "p_norm_grad"}

PIR_NOT_ROUTED = {
    "p_norm_reverse": "PNormInferSpmdReverse is only reachable through the registry's infer_backward (no op runs "
                      "it during Build); use the registry backend",
}


def grad_inserts_outside_mapping(case: CaseView, attrs: Mapping[str, object]) -> bool:
    """PNormGradInferSpmd's insert outside out_grad's mapping (undefined behaviour in C++).

    The grad rule copies out_grad's dims_mapping (length L) and, only when x's rank R differs from
    out_grad's rank (a missing out_grad is Paddle's stand-in: rank 1, an empty mapping), inserts -1
    at each reduced axis in ascending order, a negative axis made ``axis + R`` first. With asvector
    the axes are 0..R-1, the j-th inserted into a mapping of length L + j: always in place. Else the
    one axis must land in 0..L; anything else (x 0-D with axis -1, out_grad of a lower rank than
    R - 1, an axis outside -R..R-1 without keepdims) writes before or past the vector's storage.
    Equal ranks insert nothing, whatever the axis."""
    x, out_grad = case.inputs[0], case.inputs[2]
    axis = attrs.get("axis")
    if x is None or attrs.get("asvector") or not isinstance(axis, Integral):
        return False
    rank = len(x.shape)
    g_rank, g_len = (1, 0) if out_grad is None else (len(out_grad.shape), len(out_grad.dims_mapping))
    if g_rank == rank:
        return False
    at = int(axis) + rank if axis < 0 else int(axis)
    return not 0 <= at <= g_len


def compiled_may_crash(case: CaseView, attrs: Mapping[str, object]) -> bool:
    return case.rule == "p_norm_grad" and grad_inserts_outside_mapping(case, attrs)


def pir_may_crash(case: CaseView, attrs: Mapping[str, object]) -> bool:
    return case.rule == "p_norm_grad" and grad_inserts_outside_mapping(case, attrs)


#: The family's native part, read by the native room (registry, compiled caller, PIR, crash isolation).
NATIVE = NativeRoutes(pir_ops=PIR_OPS, pir_not_routed=PIR_NOT_ROUTED, compiled_may_crash=compiled_may_crash,
                      pir_may_crash=pir_may_crash)
