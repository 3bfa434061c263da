"""The ported rules' public face: every rule function of the ``paddle`` profile and the registry.

The code lives in the op families' folders (``paddle_spmd_port/ops/<family>/rules.py`` and the other
profiles beside it; the registry in :mod:`paddle_spmd_port.ops.registry`); the submodules here
re-export it so old imports work.
"""

from ..ops.batch_norm.rules import batch_norm_grad_infer_spmd, batch_norm_infer_spmd, batch_norm_infer_spmd_static
from ..ops.fast_ln.rules import fast_ln_grad_infer_spmd, fast_ln_infer_spmd
from ..ops.group_norm.rules import (
    group_norm_grad_infer_spmd,
    group_norm_grad_infer_spmd_base,
    group_norm_infer_spmd,
    group_norm_infer_spmd_base,
)
from ..ops.instance_norm.rules import instance_norm_grad_infer_spmd, instance_norm_infer_spmd
from ..ops.layer_norm.rules import layer_norm_grad_infer_spmd, layer_norm_infer_spmd, layer_norm_infer_spmd_reverse
from ..ops.registry import (
    PROFILES,
    SpmdRule,
    contains_spmd_rule,
    get_spmd_rule,
    rule_function,
    rule_names,
)
from ..ops.rms_norm.rules import rms_norm_grad_infer_spmd, rms_norm_infer_spmd, rms_norm_infer_spmd_reverse
from ..ops.sync_batch_norm.rules import sync_batch_norm_grad_infer_spmd, sync_batch_norm_infer_spmd

__all__ = [
    "PROFILES", "SpmdRule", "batch_norm_grad_infer_spmd", "batch_norm_infer_spmd", "batch_norm_infer_spmd_static",
    "contains_spmd_rule", "get_spmd_rule", "layer_norm_grad_infer_spmd", "layer_norm_infer_spmd",
    "layer_norm_infer_spmd_reverse", "rule_function", "rule_names", "sync_batch_norm_grad_infer_spmd",
    "sync_batch_norm_infer_spmd", "instance_norm_infer_spmd", "instance_norm_grad_infer_spmd", "rms_norm_infer_spmd",
    "rms_norm_infer_spmd_reverse", "rms_norm_grad_infer_spmd", "fast_ln_infer_spmd", "fast_ln_grad_infer_spmd",
    "group_norm_infer_spmd", "group_norm_infer_spmd_base", "group_norm_grad_infer_spmd",
    "group_norm_grad_infer_spmd_base",
]
