"""sync_batch_norm on the native routes: Paddle exports no C++ rule, so its dist API falls back to
the registry's generic ``replicated`` rule, applied to the op's signature
(``infer_forward([inputs...], [outputs...])``); that is the only route that reaches it. The PIR
sync_batch_norm_ and sync_batch_norm_grad ops build, but fail their dtype check on a CPU wheel (no
kernel registered) before any rule runs: unreachable there.

A data_format too short for ``data_format[1]`` runs crash-isolated, as for batch_norm.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...types import DistTensorSpec
from ..kit.native import CaseView, NativeRoutes, short_data_format
from . import FAMILY

REGISTRY_ROUTES = {"sync_batch_norm": ("replicated", "replicated"),
                   "sync_batch_norm_grad": ("replicated", "replicated")}

PIR_OPS = {"sync_batch_norm": "sync_batch_norm_", "sync_batch_norm_grad": "sync_batch_norm_grad"}

_RESULT_OUTPUTS = {spec.key: spec.result_outputs for spec in FAMILY.rules}


def replicated_outputs(case: CaseView) -> list[DistTensorSpec]:
    """The output specs the replicated rule is handed: the first output has x's shape, the rest
    [C] (C: x's axis 1), all replicated on x's mesh."""
    x = case.inputs[0]
    channels = x.shape[1] if x is not None and len(x.shape) > 1 else 1
    shapes = [tuple(x.shape) if x is not None else (0,)] + [(channels,)] * (len(_RESULT_OUTPUTS[case.rule]) - 1)
    mesh = x.mesh if x is not None else None
    return [DistTensorSpec(shape, (-1,) * len(shape), mesh) for shape in shapes]


def compiled_may_crash(case: CaseView, attrs: Mapping[str, object]) -> bool:
    return short_data_format(attrs)


#: The family's native part, read by the native room (registry, compiled caller, PIR, crash isolation).
NATIVE = NativeRoutes(registry_routes=REGISTRY_ROUTES, pir_ops=PIR_OPS, replicated_outputs=replicated_outputs,
                      compiled_may_crash=compiled_may_crash)
