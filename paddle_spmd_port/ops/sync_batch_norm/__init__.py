"""sync_batch_norm: batch_norm with statistics reduced across ranks. Paddle exports no C++ rule
for it; the registry's ``replicated`` fallback is what Paddle runs, so that is the only route.

::

    rule key              inputs                               returned outputs
    sync_batch_norm       (as batch_norm)                      (as batch_norm)
    sync_batch_norm_grad  x scale? bias? saved_mean            x_grad scale_grad bias_grad
                          saved_variance reserve_space? out_grad
"""

from __future__ import annotations

from ..batch_norm import FORWARD_IN, FORWARD_OUT, GRAD_OPTIONAL, GRAD_OUT, OPTIONAL
from ..batch_norm.layout import FORWARD_ATTRS, GRAD_ATTRS
from ..spec import OpFamily, RegistryName, RuleSpec

GRAD_IN = ("x", "scale", "bias", "saved_mean", "saved_variance", "reserve_space", "out_grad")

FAMILY = OpFamily(
    "sync_batch_norm",
    rules=(
        RuleSpec("sync_batch_norm", "sync_batch_norm", "forward", FORWARD_IN, OPTIONAL, FORWARD_ATTRS, FORWARD_IN,
                 FORWARD_OUT, routes=("registry",)),
        RuleSpec("sync_batch_norm_grad", "sync_batch_norm", "grad", GRAD_IN, GRAD_OPTIONAL, GRAD_ATTRS, GRAD_IN,
                 GRAD_OUT, routes=("registry",)),
    ),
    registry_names=(
        RegistryName("sync_batch_norm", "sync_batch_norm"),
        RegistryName("sync_batch_norm_grad", "sync_batch_norm_grad"),
    ),
    summary="batch_norm with cross-rank statistics (Paddle: the replicated fallback)",
)
