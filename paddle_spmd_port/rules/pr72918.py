"""Moved: the code lives in :mod:`paddle_spmd_port.ops.sync_batch_norm.pr72918` (kept so old imports work)."""

from __future__ import annotations

from ..ops.registry import RuleFn, rules_in
from ..ops.sync_batch_norm import pr72918 as _module
from ..ops.sync_batch_norm.pr72918 import REVISION, sync_batch_norm_grad_infer_spmd, sync_batch_norm_infer_spmd

#: The proposal's rules, by rule key.
RULES: dict[str, RuleFn] = rules_in(_module)

__all__ = ["REVISION", "RULES", "sync_batch_norm_grad_infer_spmd", "sync_batch_norm_infer_spmd"]
