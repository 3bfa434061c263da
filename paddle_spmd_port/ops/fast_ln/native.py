"""fast_ln on the native routes: only the compiled caller reaches its rules. Paddle's registry
has neither, and the fast_ln op never calls them (no PIR op runs them either:
measured as for rms_norm, docs/instance-rms-fastln-3.3.1.md "PIR"). Its functions are declared in
layer_norm.h.
"""

from __future__ import annotations

from ..kit.native import NativeRoutes, no_pir_build

CPP_HEADER = "layer_norm.h"

NO_PIR_OP = no_pir_build("FastLn*", "fast_ln(_grad)")

PIR_NOT_ROUTED = {
    "fast_ln": "FastLnInferSpmd: " + NO_PIR_OP,
    "fast_ln_grad": "FastLnGradInferSpmd: " + NO_PIR_OP,
}


#: The family's native part, read by the native room (registry, compiled caller, PIR, crash isolation).
NATIVE = NativeRoutes(cpp_header=CPP_HEADER, pir_not_routed=PIR_NOT_ROUTED)
