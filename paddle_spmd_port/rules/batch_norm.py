"""Moved: the code lives in :mod:`paddle_spmd_port.ops.batch_norm.rules` (kept so old imports work)."""

from __future__ import annotations

from ..ops.batch_norm.rules import (
    batch_norm_grad_infer_spmd,
    batch_norm_infer_spmd,
    batch_norm_infer_spmd_static,
)

__all__ = ["batch_norm_grad_infer_spmd", "batch_norm_infer_spmd", "batch_norm_infer_spmd_static"]
