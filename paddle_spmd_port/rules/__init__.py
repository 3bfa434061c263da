"""The ported rules: pure functions, no Paddle import. One module per op.

``batch_norm``, ``layer_norm``, ``sync_batch_norm``, ``instance_norm``, ``rms_norm``, ``fast_ln``, ``group_norm``:
Paddle 3.3.1's behaviour (profile ``paddle``).
``pr72918``: the sync_batch_norm rules proposed upstream. ``proposed``: our corrected rules.
"""

from .batch_norm import batch_norm_grad_infer_spmd, batch_norm_infer_spmd, batch_norm_infer_spmd_static
from .fast_ln import fast_ln_grad_infer_spmd, fast_ln_infer_spmd
from .group_norm import (
    group_norm_grad_infer_spmd,
    group_norm_grad_infer_spmd_base,
    group_norm_infer_spmd,
    group_norm_infer_spmd_base,
)
from .instance_norm import instance_norm_grad_infer_spmd, instance_norm_infer_spmd
from .layer_norm import layer_norm_grad_infer_spmd, layer_norm_infer_spmd, layer_norm_infer_spmd_reverse
from .registry import (
    PROFILES,
    SpmdRule,
    contains_spmd_rule,
    get_spmd_rule,
    rule_function,
    rule_names,
)
from .rms_norm import rms_norm_grad_infer_spmd, rms_norm_infer_spmd, rms_norm_infer_spmd_reverse
from .sync_batch_norm import sync_batch_norm_grad_infer_spmd, sync_batch_norm_infer_spmd

__all__ = [
    "PROFILES", "SpmdRule", "batch_norm_grad_infer_spmd", "batch_norm_infer_spmd", "batch_norm_infer_spmd_static",
    "contains_spmd_rule", "get_spmd_rule", "layer_norm_grad_infer_spmd", "layer_norm_infer_spmd",
    "layer_norm_infer_spmd_reverse", "rule_function", "rule_names", "sync_batch_norm_grad_infer_spmd",
    "sync_batch_norm_infer_spmd", "instance_norm_infer_spmd", "instance_norm_grad_infer_spmd", "rms_norm_infer_spmd",
    "rms_norm_infer_spmd_reverse", "rms_norm_grad_infer_spmd", "fast_ln_infer_spmd", "fast_ln_grad_infer_spmd",
    "group_norm_infer_spmd", "group_norm_infer_spmd_base", "group_norm_grad_infer_spmd",
    "group_norm_grad_infer_spmd_base",
]
