"""The ported rules: pure functions, no Paddle import. One module per op.

``batch_norm``, ``layer_norm``, ``sync_batch_norm``: Paddle 3.3.1's behaviour (profile ``paddle``).
``pr72918``: the sync_batch_norm rules proposed upstream. ``proposed``: our corrected rules.
"""

from .batch_norm import batch_norm_grad_infer_spmd, batch_norm_infer_spmd, batch_norm_infer_spmd_static
from .layer_norm import layer_norm_grad_infer_spmd, layer_norm_infer_spmd, layer_norm_infer_spmd_reverse
from .registry import (
    PROFILES,
    SpmdRule,
    contains_spmd_rule,
    get_spmd_rule,
    rule_function,
    rule_names,
)
from .sync_batch_norm import sync_batch_norm_grad_infer_spmd, sync_batch_norm_infer_spmd

__all__ = [
    "PROFILES", "SpmdRule", "batch_norm_grad_infer_spmd", "batch_norm_infer_spmd", "batch_norm_infer_spmd_static",
    "contains_spmd_rule", "get_spmd_rule", "layer_norm_grad_infer_spmd", "layer_norm_infer_spmd",
    "layer_norm_infer_spmd_reverse", "rule_function", "rule_names", "sync_batch_norm_grad_infer_spmd",
    "sync_batch_norm_infer_spmd",
]
