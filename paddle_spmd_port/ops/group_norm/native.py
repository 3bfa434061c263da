"""group_norm on the native routes.

    rule key              registry                          compiled                     PIR
    group_norm            ``group_norm`` (runs the Base:    GroupNormInferSpmd           the group_norm op
                          the attributes passed are
                          ignored)
    group_norm_base       ``group_norm``                    GroupNormInferSpmdBase       no op runs it directly
    group_norm_grad       unregistered                      GroupNormGradInferSpmd       the group_norm_grad op
    group_norm_grad_base  unregistered                      GroupNormGradInferSpmdBase   no op runs it directly

(docs/group_norm-3.3.1.md.) group_norm.h is missing from some releases: there every rule of the
family is unreachable through the compiled caller, which builds the rest.

Crashes (3.3.1, every route): the grads with scale or bias None (or meshless) while x's axis 0
is split mark Partial on an attr without a mesh and segfault; a data_format shorter than two
characters is read past its end.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..kit.native import CaseView, NativeRoutes, short_data_format

REGISTRY_ROUTES = {"group_norm_base": ("group_norm", "infer_forward")}

PIR_OPS = {"group_norm": "group_norm", "group_norm_grad": "group_norm_grad"}

PIR_NOT_ROUTED = {
    "group_norm_base": "the PIR group_norm op runs GroupNormInferSpmd (the group_norm key), which calls the Base; "
                       "GroupNormInferSpmdBase itself is reached through the registry or the compiled backend",
    "group_norm_grad_base": "the PIR group_norm_grad op runs GroupNormGradInferSpmd (the group_norm_grad key), which "
                            "calls the Base; GroupNormGradInferSpmdBase itself is reached through the compiled backend",
}


def grad_partial_without_mesh(case: CaseView) -> bool:
    """A grad with scale or bias None (or meshless) while x's axis 0 is split."""
    x = case.inputs[0]
    if case.rule not in ("group_norm_grad", "group_norm_grad_base") or x is None or x.dims_mapping[:1] == (-1,):
        return False
    return any(t is None or t.mesh is None for t in case.inputs[1:3])


def compiled_may_crash(case: CaseView, attrs: Mapping[str, object]) -> bool:
    return short_data_format(attrs) or grad_partial_without_mesh(case)


def pir_may_crash(case: CaseView, attrs: Mapping[str, object]) -> bool:
    return grad_partial_without_mesh(case)


#: The family's native part, read by the native room (registry, compiled caller, PIR, crash isolation).
NATIVE = NativeRoutes(registry_routes=REGISTRY_ROUTES, pir_ops=PIR_OPS, pir_not_routed=PIR_NOT_ROUTED,
                      compiled_may_crash=compiled_may_crash, pir_may_crash=pir_may_crash)
