"""group_norm: the attributed rules and the Base rules Paddle's registry runs (they read no
attributes), forward and grad.

::

    rule key              inputs                              returned
    group_norm            x scale? bias?                      y mean variance
    group_norm_base       (as group_norm)                     (as group_norm)
    group_norm_grad       x scale? bias? y mean variance      x_grad scale_grad bias_grad
                          y_grad
    group_norm_grad_base  (as group_norm_grad)                (as group_norm_grad)
"""

from __future__ import annotations

from ..spec import OpFamily, RegistryName, RuleSpec

INPUTS = ("x", "scale", "bias")
OUTPUTS = ("y", "mean", "variance")
GRAD_IN = ("x", "scale", "bias", "y", "mean", "variance", "y_grad")
GRAD_OUT = ("x_grad", "scale_grad", "bias_grad")
OPTIONAL = frozenset({"scale", "bias"})
#: The rules read none of these; they are the op's.
ATTRS = (("epsilon", 1e-5), ("groups", -1), ("data_format", "NCHW"))
#: The layouts ``paddle.nn.functional.group_norm`` takes.
DATA_FORMATS = ("NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC")

FAMILY = OpFamily(
    "group_norm",
    rules=(
        RuleSpec("group_norm", "group_norm", "forward", INPUTS, OPTIONAL, ATTRS, INPUTS, OUTPUTS,
                 cpp="GroupNormInferSpmd", routes=("registry", "compiled", "pir")),
        RuleSpec("group_norm_base", "group_norm", "forward", INPUTS, OPTIONAL, (), INPUTS, OUTPUTS,
                 cpp="GroupNormInferSpmdBase", routes=("registry", "compiled")),
        RuleSpec("group_norm_grad", "group_norm", "grad", GRAD_IN, OPTIONAL, ATTRS, GRAD_IN, GRAD_OUT,
                 cpp="GroupNormGradInferSpmd", routes=("compiled", "pir")),
        RuleSpec("group_norm_grad_base", "group_norm", "grad", GRAD_IN, OPTIONAL, (), GRAD_IN, GRAD_OUT,
                 cpp="GroupNormGradInferSpmdBase", routes=("compiled",)),
    ),
    # Paddle's "group_norm" runs the Base rule, which reads no attributes: the port's group_norm
    # function ignores the ones it is given, so the name can point at it.
    registry_names=(RegistryName("group_norm", "group_norm", None, in_paddle=True),),
    summary="normalisation over groups of channels",
)
