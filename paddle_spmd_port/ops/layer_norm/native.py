"""layer_norm on the native routes.

    rule key            registry                       compiled                   PIR
    layer_norm          ``layer_norm`` infer_forward   (LayerNormInferSpmd)       the layer_norm op; its
                                                                                  InferMeta rejects
                                                                                  begin_norm_axis 0 and ndim
    layer_norm_reverse  ``layer_norm`` infer_backward  LayerNormInferSpmdReverse  no op runs it
    layer_norm_grad     unregistered                   LayerNormGradInferSpmd     the layer_norm_grad op; it
                                                                                  cannot hold an answer that
                                                                                  is Shard and Partial on one
                                                                                  mesh dim

A begin_norm_axis outside 0..ndim makes the rules index past x's axes: crash-isolated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..kit.native import CaseView, CoshardProbe, NativeRoutes

PIR_OPS = {"layer_norm": "layer_norm", "layer_norm_grad": "layer_norm_grad"}

PIR_NOT_ROUTED = {
    "layer_norm_reverse": "LayerNormInferSpmdReverse is only reachable through the registry's infer_backward "
                          "(no op runs it during Build); use the registry backend",
}


def compiled_may_crash(case: CaseView, attrs: Mapping[str, object]) -> bool:
    begin_norm_axis = attrs.get("begin_norm_axis")
    x = case.inputs[0]
    return isinstance(begin_norm_axis, int) and x is not None and not 0 <= begin_norm_axis <= len(x.shape)


def _coshard_call(api: Any, mesh: Any, x: Any) -> Any:
    return api.F.layer_norm(x, normalized_shape=[x.shape[-1]])


#: tools/probe_coshard.py: x rank 3 with begin_norm_axis 2 (axes 0 and 1 kept, axis 2 normalised).
COSHARD_PROBE = CoshardProbe(x_rank=3, attrs={"begin_norm_axis": 2}, registry=("layer_norm", "layer_norm_reverse"),
                             pir=("layer_norm", "layer_norm_grad"), dynamic=_coshard_call)


#: The family's native part, read by the native room (registry, compiled caller, PIR, crash isolation).
NATIVE = NativeRoutes(pir_ops=PIR_OPS, pir_not_routed=PIR_NOT_ROUTED, compiled_may_crash=compiled_may_crash,
                      coshard_probe=COSHARD_PROBE)
