"""Moved: each family's proposed rules live in ``ops/<family>/proposed.py`` (kept so old imports work)."""

from __future__ import annotations

from ..ops.batch_norm.proposed import batch_norm_grad_infer_spmd, batch_norm_infer_spmd, batch_norm_infer_spmd_static
from ..ops.fast_ln.proposed import fast_ln_grad_infer_spmd, fast_ln_infer_spmd
from ..ops.group_norm.proposed import (
           group_norm_grad_infer_spmd,
           group_norm_grad_infer_spmd_base,
           group_norm_infer_spmd,
           group_norm_infer_spmd_base,
)
from ..ops.instance_norm.proposed import instance_norm_grad_infer_spmd, instance_norm_infer_spmd
from ..ops.layer_norm.proposed import layer_norm_grad_infer_spmd, layer_norm_infer_spmd, layer_norm_infer_spmd_reverse
from ..ops.registry import PROFILES, RuleFn
from ..ops.rms_norm.proposed import rms_norm_grad_infer_spmd, rms_norm_infer_spmd, rms_norm_infer_spmd_reverse
from ..ops.sync_batch_norm.proposed import sync_batch_norm_grad_infer_spmd, sync_batch_norm_infer_spmd

#: rule key -> proposed rule function (the profile has every key).
PROPOSED_RULES: dict[str, RuleFn] = PROFILES["proposed"]

__all__ = ["PROPOSED_RULES", "batch_norm_grad_infer_spmd", "batch_norm_infer_spmd", "batch_norm_infer_spmd_static",
           "fast_ln_grad_infer_spmd", "fast_ln_infer_spmd", "group_norm_grad_infer_spmd",
           "group_norm_grad_infer_spmd_base", "group_norm_infer_spmd", "group_norm_infer_spmd_base",
           "instance_norm_grad_infer_spmd", "instance_norm_infer_spmd", "layer_norm_grad_infer_spmd",
           "layer_norm_infer_spmd", "layer_norm_infer_spmd_reverse", "rms_norm_grad_infer_spmd",
           "rms_norm_infer_spmd", "rms_norm_infer_spmd_reverse", "sync_batch_norm_grad_infer_spmd",
           "sync_batch_norm_infer_spmd"]
