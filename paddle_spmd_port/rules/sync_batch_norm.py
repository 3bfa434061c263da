"""Moved: the code lives in :mod:`paddle_spmd_port.ops.sync_batch_norm.rules` (kept so old imports work)."""

from __future__ import annotations

from ..ops.sync_batch_norm.rules import (
    sync_batch_norm_grad_infer_spmd,
    sync_batch_norm_infer_spmd,
)

__all__ = ["sync_batch_norm_grad_infer_spmd", "sync_batch_norm_infer_spmd"]
