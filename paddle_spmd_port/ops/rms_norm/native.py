"""rms_norm on the native routes: the registry's ``fused_rms_norm`` reaches forward and reverse
(epsilon is always passed: the registry object segfaults without it); the compiled caller
reaches all three; no PIR op runs them (:data:`NO_PIR_OP`).

An invvar of another rank than x's minus one makes the grad's alignment write past its
dims_mapping: crash-isolated.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..kit.native import CaseView, NativeRoutes, no_pir_build

#: Measured on Paddle 3.3.1 (docs/instance-rms-fastln-3.3.1.md "PIR"): of these rule functions the
#: ops' Build code (libpaddle.so) links only InstanceNorm(Grad)InferSpmd and GroupNorm(Grad)InferSpmd.
NO_PIR_OP = no_pir_build("RmsNorm*", "rms_norm, fused_rms_norm_ext(_grad) and fast_rms_norm(_grad)")

PIR_NOT_ROUTED = {
    "rms_norm": "RmsNormInferSpmd: " + NO_PIR_OP,
    "rms_norm_reverse": "RmsNormInferSpmdReverse: only the registry's fused_rms_norm infer_backward runs it; "
                        + NO_PIR_OP,
    "rms_norm_grad": "RmsNormGradInferSpmd: " + NO_PIR_OP,
}


def compiled_may_crash(case: CaseView, attrs: Mapping[str, object]) -> bool:
    if case.rule != "rms_norm_grad":
        return False
    x, invvar = case.inputs[0], case.inputs[2]
    return x is not None and invvar is not None and len(invvar.shape) != len(x.shape) - 1


#: The family's native part, read by the native room (registry, compiled caller, PIR, crash isolation).
NATIVE = NativeRoutes(pir_not_routed=PIR_NOT_ROUTED, compiled_may_crash=compiled_may_crash)
