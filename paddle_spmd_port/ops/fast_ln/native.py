"""fast_ln on the native routes: only the compiled caller reaches its rules. Paddle's registry
has neither, and the fast_ln op never calls them (no PIR op runs them either:
:data:`~paddle_spmd_port.ops.rms_norm.native.NO_PIR_OP`). Its functions are declared in
layer_norm.h.
"""

from __future__ import annotations

from ..rms_norm.native import NO_PIR_OP

CPP_HEADER = "layer_norm.h"

PIR_NOT_ROUTED = {
    "fast_ln": "FastLnInferSpmd: " + NO_PIR_OP,
    "fast_ln_grad": "FastLnGradInferSpmd: " + NO_PIR_OP,
}
