"""instance_norm: forward and grad (Paddle's registry gives the grad as the name's infer_backward).

::

    rule key            inputs                                     returned
    instance_norm       x scale? bias?                             y saved_mean saved_variance
    instance_norm_grad  x scale? bias? saved_mean saved_variance   inputs: all but bias;
                        y_grad                                     x_grad scale_grad bias_grad
"""

from __future__ import annotations

from ..spec import OpFamily, RegistryName, RuleSpec

INPUTS = ("x", "scale", "bias")
OUTPUTS = ("y", "saved_mean", "saved_variance")
GRAD_IN = ("x", "scale", "bias", "saved_mean", "saved_variance", "y_grad")
GRAD_OUT = ("x_grad", "scale_grad", "bias_grad")
OPTIONAL = frozenset({"scale", "bias"})
ATTRS = (("epsilon", 1e-5),)

FAMILY = OpFamily(
    "instance_norm",
    rules=(
        RuleSpec("instance_norm", "instance_norm", "forward", INPUTS, OPTIONAL, ATTRS, INPUTS, OUTPUTS,
                 cpp="InstanceNormInferSpmd", routes=("registry", "compiled")),
        # bias is an input but not among the returned attrs
        RuleSpec("instance_norm_grad", "instance_norm", "grad", GRAD_IN, OPTIONAL, ATTRS,
                 tuple(n for n in GRAD_IN if n != "bias"), GRAD_OUT,
                 cpp="InstanceNormGradInferSpmd", routes=("registry", "compiled")),
    ),
    registry_names=(RegistryName("instance_norm", "instance_norm", "instance_norm_grad", in_paddle=True,
                                 epsilon_unchecked=True),),
    summary="normalisation over the spatial axes of each (sample, channel)",
)
