"""instance_norm on the native routes: the registry's ``instance_norm`` (forward; its
infer_backward is the grad rule) and the compiled caller reach both rules. PIR cannot: the
instance_norm op cannot be built with a distributed input, and the grad op cannot hold the
rule's answer (reasons below).

InstanceNormGradInferSpmd takes bias since Paddle 3.1.1 (3.1.0's: x, scale, saved_mean,
saved_variance, y_grad, epsilon); on a build without it the compiled caller cannot call the
grad rule (:data:`CPP_MISMATCH`).

Crashes (3.3.1): a 2-D or 3-D x corrupts the heap; the grad with scale None or meshless while N
or C is split segfaults; a dims_mapping naming a mesh dim its mesh lacks segfaults the grad
(isolated by the clauses every op shares).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..kit.native import CaseView, NativeRoutes

CPP_MISMATCH = {
    "instance_norm_grad": "this Paddle build's InstanceNormGradInferSpmd takes no bias (x, scale, saved_mean, "
                          "saved_variance, y_grad, epsilon: Paddle 3.1.0)",
}

PIR_NOT_ROUTED = {
    "instance_norm": "the instance_norm op cannot be built with a dist input: InferMeta makes saved_mean/"
                     "saved_variance 1-D [N*C] while InstanceNormInferSpmd answers 2-D dims_mappings (PIR: "
                     "'The global ddim size must equal to dim_mapping's size'); use the registry or compiled backend",
    "instance_norm_grad": "the instance_norm_grad op cannot hold an answer of InstanceNormGradInferSpmd: the rule "
                          "returns 5 input attrs (bias dropped) for the op's 6 inputs (PIR: 'Size of spmd_info.first "
                          "for op[InstanceNormGradOp] is unexpected'), and a 1-D saved_mean (what the forward op "
                          "makes) is refused by the rule; use the registry or compiled backend",
}


def compiled_may_crash(case: CaseView, attrs: Mapping[str, object]) -> bool:
    x, scale = case.inputs[0], case.inputs[1]
    if x is None:
        return False
    return len(x.shape) < 4 or (case.rule == "instance_norm_grad" and (scale is None or scale.mesh is None)
                                and any(m != -1 for m in x.dims_mapping[:2]))


#: The family's native part, read by the native room (registry, compiled caller, PIR, crash isolation).
NATIVE = NativeRoutes(cpp_mismatch=CPP_MISMATCH, pir_not_routed=PIR_NOT_ROUTED, compiled_may_crash=compiled_may_crash)
