"""layer_norm: forward, reverse (the registry's infer_backward) and grad. Axes from
``begin_norm_axis`` on are normalised; mean and variance cover the axes before it.

::

    rule key            inputs                              returned
    layer_norm          x scale? bias?                      out mean variance
    layer_norm_reverse  x scale? bias? out mean variance    inputs x scale bias; out mean variance
    layer_norm_grad     x scale? bias? mean variance        x_grad scale_grad bias_grad
                        out_grad
"""

from __future__ import annotations

from ..spec import OpFamily, RegistryName, RuleSpec

INPUTS = ("x", "scale", "bias")
OUTPUTS = ("out", "mean", "variance")
REVERSE_IN = INPUTS + OUTPUTS
GRAD_IN = ("x", "scale", "bias", "mean", "variance", "out_grad")
GRAD_OUT = ("x_grad", "scale_grad", "bias_grad")
OPTIONAL = frozenset({"scale", "bias"})
#: LayerNormInferSpmd(Reverse) declare no defaults; these are the op's, so a case may leave them out.
ATTRS = (("epsilon", 1e-5), ("begin_norm_axis", 1))

FAMILY = OpFamily(
    "layer_norm",
    rules=(
        RuleSpec("layer_norm", "layer_norm", "forward", INPUTS, OPTIONAL, ATTRS, INPUTS, OUTPUTS,
                 cpp="LayerNormInferSpmd", routes=("registry", "pir")),
        RuleSpec("layer_norm_reverse", "layer_norm", "reverse", REVERSE_IN, OPTIONAL, ATTRS, INPUTS, OUTPUTS,
                 cpp="LayerNormInferSpmdReverse", routes=("registry",)),
        RuleSpec("layer_norm_grad", "layer_norm", "grad", GRAD_IN, OPTIONAL, ATTRS, GRAD_IN, GRAD_OUT,
                 cpp="LayerNormGradInferSpmd", routes=("compiled", "pir")),
    ),
    registry_names=(
        RegistryName("layer_norm", "layer_norm", "layer_norm_reverse", in_paddle=True),
        RegistryName("layer_norm_grad", "layer_norm_grad"),
    ),
    summary="normalisation over the axes from begin_norm_axis on",
)
