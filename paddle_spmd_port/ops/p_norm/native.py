"""p_norm on the native routes.

    rule key         registry                     compiled                 PIR
    p_norm           ``p_norm`` infer_forward     (PNormInferSpmd)         the p_norm op; its InferMeta
                                                                           refuses an axis outside -R..R-1
    p_norm_reverse   ``p_norm`` infer_backward    PNormInferSpmdReverse    no op runs it
    p_norm_grad      unregistered                 PNormGradInferSpmd       the p_norm_grad op

Every attribute's default says its kind (porder and epsilon floats, axis an int, keepdims and
asvector bools). Crashes (3.3.1): the grad with an axis outside -R..R-1 (not asvector, x not 0-D)
inserts into out_grad's mapping past its end, and some such cases segfault (docs/ops/p_norm.md).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..kit.native import CaseView

PIR_OPS = {"p_norm": "p_norm", "p_norm_grad": "p_norm_grad"}

PIR_NOT_ROUTED = {
    "p_norm_reverse": "PNormInferSpmdReverse is only reachable through the registry's infer_backward (no op runs "
                      "it during Build); use the registry backend",
}


def axis_out_of_range(case: CaseView, attrs: Mapping[str, object]) -> bool:
    """An axis outside -R..R-1 that the rule reads (not asvector, x not 0-D)."""
    x = case.inputs[0]
    axis = attrs.get("axis")
    if x is None or attrs.get("asvector") or not isinstance(axis, int):
        return False
    rank = len(x.shape)
    return rank > 0 and not -rank <= axis < rank


def compiled_may_crash(case: CaseView, attrs: Mapping[str, object]) -> bool:
    return case.rule == "p_norm_grad" and axis_out_of_range(case, attrs)


def pir_may_crash(case: CaseView, attrs: Mapping[str, object]) -> bool:
    return case.rule == "p_norm_grad" and axis_out_of_range(case, attrs)
