"""p_norm: the vector p-norm behind ``paddle.linalg.norm`` (vector norms) and ``F.normalize``.
One axis is reduced (``axis``), or every axis (``asvector``); ``keepdims`` keeps reduced axes as
size 1. Paddle's rules hand the reduction to its generic reduction rules (see docs/ops/p_norm.md).

::

    rule key         inputs              returned
    p_norm           x                   x; out
    p_norm_reverse   x out               x; out               (the registry's infer_backward)
    p_norm_grad      x out out_grad      x out out_grad; x_grad
"""

from __future__ import annotations

from ..spec import OpFamily, RegistryName, RuleSpec

#: The op's defaults (paddle/phi/ops/yaml: porder 2, axis -1, epsilon 1e-12, keepdim and asvector off).
#: Paddle's C++ functions declare none; the registry needs every one passed, porder and epsilon as floats.
ATTRS = (("porder", 2.0), ("axis", -1), ("epsilon", 1e-12), ("keepdims", False), ("asvector", False))
GRAD_IN = ("x", "out", "out_grad")

FAMILY = OpFamily(
    "p_norm",
    rules=(
        RuleSpec("p_norm", "p_norm", "forward", ("x",), frozenset(), ATTRS, ("x",), ("out",),
                 cpp="PNormInferSpmd", routes=("registry", "pir")),
        RuleSpec("p_norm_reverse", "p_norm", "reverse", ("x", "out"), frozenset(), ATTRS, ("x",), ("out",),
                 cpp="PNormInferSpmdReverse", routes=("registry",)),
        RuleSpec("p_norm_grad", "p_norm", "grad", GRAD_IN, frozenset(), ATTRS, GRAD_IN, ("x_grad",),
                 cpp="PNormGradInferSpmd", routes=("compiled", "pir")),
    ),
    registry_names=(
        RegistryName("p_norm", "p_norm", "p_norm_reverse", in_paddle=True),
        RegistryName("p_norm_grad", "p_norm_grad"),
    ),
    summary="vector p-norm over one axis or all of them (paddle.linalg.norm, F.normalize)",
)
