"""batch_norm on the native routes.

    rule key           registry                 compiled                  PIR
    batch_norm_static  ``batch_norm`` (forward)  BatchNormInferSpmdStatic  no op runs it
    batch_norm         unregistered             BatchNormInferSpmd        the batch_norm op (data_format
                                                                          read); the op rejects NC/NCL/NLC,
                                                                          its InferMeta NCDHW with scale
    batch_norm_grad    unregistered             BatchNormGradInferSpmd    the batch_norm_grad op

Crashes (Paddle 3.3.1, every route): the grad with scale or bias None while x is split anywhere
marks Partial on an attr without a mesh and segfaults; a data_format shorter than two characters
is read past its end (``data_format[1]``).

batch_norm.h came with Paddle 3.1, the first release the compiled caller is written against: a
build without it has none of the rules the caller calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..kit.native import CaseView, CoshardProbe, NativeRoutes, short_data_format

CPP_RELEASE_MARKER = "Paddle < 3.1"

PIR_OPS = {"batch_norm": "batch_norm", "batch_norm_grad": "batch_norm_grad"}

PIR_NOT_ROUTED = {
    "batch_norm_static": "BatchNormInferSpmdStatic is only reachable through the registry (the PIR batch_norm op "
                         "runs BatchNormInferSpmd); use the registry backend",
}


def grad_partial_without_mesh(case: CaseView) -> bool:
    """The grad with scale or bias None while x is split anywhere."""
    x = case.inputs[0]
    return (case.rule == "batch_norm_grad" and x is not None and (case.inputs[1] is None or case.inputs[2] is None)
            and any(m != -1 for m in x.dims_mapping))


def compiled_may_crash(case: CaseView, attrs: Mapping[str, object]) -> bool:
    return short_data_format(attrs) or grad_partial_without_mesh(case)


def pir_may_crash(case: CaseView, attrs: Mapping[str, object]) -> bool:
    return grad_partial_without_mesh(case) or (case.rule in PIR_OPS and short_data_format(attrs))


def _coshard_call(api: Any, mesh: Any, x: Any) -> Any:
    replicated = [api.dist.Replicate() for _ in mesh.shape]
    channels = x.shape[1]
    running_mean = api.dist.shard_tensor(api.paddle.zeros([channels]), mesh, replicated)
    running_var = api.dist.shard_tensor(api.paddle.ones([channels]), mesh, replicated)
    return api.F.batch_norm(x, running_mean, running_var, training=True)


#: tools/probe_coshard.py: x rank 4, NCHW.
COSHARD_PROBE = CoshardProbe(x_rank=4, registry=("batch_norm_static",), pir=("batch_norm", "batch_norm_grad"),
                             dynamic=_coshard_call)


#: The family's native part, read by the native room (registry, compiled caller, PIR, crash isolation).
NATIVE = NativeRoutes(cpp_release_marker=CPP_RELEASE_MARKER, pir_ops=PIR_OPS, pir_not_routed=PIR_NOT_ROUTED,
                      compiled_may_crash=compiled_may_crash, pir_may_crash=pir_may_crash,
                      coshard_probe=COSHARD_PROBE)
