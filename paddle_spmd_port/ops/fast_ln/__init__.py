"""fast_ln: layer_norm over the last axis with inverse variance; Paddle registers neither rule and
the fast_ln op never calls them, so only the compiled caller reaches them.

::

    rule key      inputs                         returned
    fast_ln       x scale? bias?                 out mean invvar
    fast_ln_grad  x scale? mean invvar y_grad    x_grad scale_grad bias_grad
"""

from __future__ import annotations

from ..spec import OpFamily, RuleSpec

INPUTS = ("x", "scale", "bias")
OUTPUTS = ("out", "mean", "invvar")
GRAD_IN = ("x", "scale", "mean", "invvar", "y_grad")
GRAD_OUT = ("x_grad", "scale_grad", "bias_grad")
OPTIONAL = frozenset({"scale", "bias"})
ATTRS = (("epsilon", 1e-5),)

FAMILY = OpFamily(
    "fast_ln",
    rules=(
        RuleSpec("fast_ln", "fast_ln", "forward", INPUTS, OPTIONAL, ATTRS, INPUTS, OUTPUTS,
                 cpp="FastLnInferSpmd", routes=("compiled",)),
        # the grad has no bias input: only scale may be None
        RuleSpec("fast_ln_grad", "fast_ln", "grad", GRAD_IN, frozenset({"scale"}), ATTRS, GRAD_IN, GRAD_OUT,
                 cpp="FastLnGradInferSpmd", routes=("compiled",)),
    ),
    summary="layer_norm over the last axis returning inverse variance",
)
