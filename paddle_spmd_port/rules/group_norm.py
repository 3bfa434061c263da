"""Moved: the code lives in :mod:`paddle_spmd_port.ops.group_norm.rules` (kept so old imports work)."""

from __future__ import annotations

from ..ops.group_norm.rules import (
    group_norm_grad_infer_spmd,
    group_norm_grad_infer_spmd_base,
    group_norm_infer_spmd,
    group_norm_infer_spmd_base,
)

__all__ = ["group_norm_grad_infer_spmd", "group_norm_grad_infer_spmd_base", "group_norm_infer_spmd",
    "group_norm_infer_spmd_base"]
