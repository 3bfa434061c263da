"""rms_norm: forward, reverse and grad over the last axis. Paddle registers forward and reverse
under ``fused_rms_norm`` (the name of PaddleNLP's custom kernel); the grad is unregistered.

::

    rule key          inputs                    returned
    rms_norm          x scale?                  out invvar
    rms_norm_reverse  x scale? out invvar       inputs x scale; out invvar
    rms_norm_grad     x scale? invvar out_grad  x_grad scale_grad
"""

from __future__ import annotations

from ..spec import OpFamily, RegistryName, RuleSpec

INPUTS = ("x", "scale")
OUTPUTS = ("out", "invvar")
GRAD_IN = ("x", "scale", "invvar", "out_grad")
#: scale is not an optional input of the op, but Paddle answers a None one with its own rank check.
OPTIONAL = frozenset({"scale"})
ATTRS = (("epsilon", 1e-5),)

FAMILY = OpFamily(
    "rms_norm",
    rules=(
        RuleSpec("rms_norm", "rms_norm", "forward", INPUTS, OPTIONAL, ATTRS, INPUTS, OUTPUTS,
                 cpp="RmsNormInferSpmd", routes=("registry", "compiled")),
        RuleSpec("rms_norm_reverse", "rms_norm", "reverse", INPUTS + OUTPUTS, OPTIONAL, ATTRS, INPUTS, OUTPUTS,
                 cpp="RmsNormInferSpmdReverse", routes=("registry", "compiled")),
        RuleSpec("rms_norm_grad", "rms_norm", "grad", GRAD_IN, OPTIONAL, ATTRS, GRAD_IN, ("x_grad", "scale_grad"),
                 cpp="RmsNormGradInferSpmd", routes=("compiled",)),
    ),
    registry_names=(RegistryName("fused_rms_norm", "rms_norm", "rms_norm_reverse", in_paddle=True,
                                 epsilon_unchecked=True),),
    summary="root-mean-square normalisation over the last axis",
)
