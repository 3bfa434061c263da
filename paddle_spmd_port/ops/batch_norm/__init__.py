"""batch_norm: the static forward Paddle registers, the attributed forward, and the grad.

::

    rule key           inputs                                 returned outputs
    batch_norm_static  x mean variance scale? bias?           out mean_out variance_out saved_mean
                                                              saved_variance reserve_space
    batch_norm         (as batch_norm_static)                 (as batch_norm_static)
    batch_norm_grad    x scale? bias? mean_out variance_out   x_grad scale_grad bias_grad
                       saved_mean saved_variance
                       reserve_space? out_grad

The static rule takes no attributes: its header fixes NCHW, the layout whose channel axis is 1.
"""

from __future__ import annotations

from ..spec import OpFamily, RegistryName, RuleSpec
from .layout import FORWARD_ATTRS, GRAD_ATTRS

FORWARD_IN = ("x", "mean", "variance", "scale", "bias")
FORWARD_OUT = ("out", "mean_out", "variance_out", "saved_mean", "saved_variance", "reserve_space")
GRAD_IN = ("x", "scale", "bias", "mean_out", "variance_out", "saved_mean", "saved_variance", "reserve_space",
           "out_grad")
GRAD_OUT = ("x_grad", "scale_grad", "bias_grad")
OPTIONAL = frozenset({"scale", "bias"})
#: The grads may also go without reserve_space.
GRAD_OPTIONAL = frozenset({"scale", "bias", "reserve_space"})

FAMILY = OpFamily(
    "batch_norm",
    rules=(
        RuleSpec("batch_norm_static", "batch_norm", "forward", FORWARD_IN, OPTIONAL, (), FORWARD_IN, FORWARD_OUT,
                 cpp="BatchNormInferSpmdStatic", routes=("registry",)),
        RuleSpec("batch_norm", "batch_norm", "forward", FORWARD_IN, OPTIONAL, FORWARD_ATTRS, FORWARD_IN,
                 FORWARD_OUT, cpp="BatchNormInferSpmd", routes=("compiled", "pir")),
        RuleSpec("batch_norm_grad", "batch_norm", "grad", GRAD_IN, GRAD_OPTIONAL, GRAD_ATTRS, GRAD_IN, GRAD_OUT,
                 cpp="BatchNormGradInferSpmd", routes=("compiled", "pir")),
    ),
    registry_names=(
        RegistryName("batch_norm", "batch_norm_static", None, in_paddle=True),
        RegistryName("batch_norm_full", "batch_norm"),
        RegistryName("batch_norm_grad", "batch_norm_grad"),
    ),
    summary="batch normalisation over every axis but the channel axis",
)
