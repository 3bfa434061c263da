"""Moved: the code lives in :mod:`paddle_spmd_port.ops.layer_norm.rules` (kept so old imports work)."""

from __future__ import annotations

from ..ops.layer_norm.rules import (
    layer_norm_grad_infer_spmd,
    layer_norm_infer_spmd,
    layer_norm_infer_spmd_reverse,
    layer_norm_notation,
)

__all__ = ["layer_norm_grad_infer_spmd", "layer_norm_infer_spmd", "layer_norm_infer_spmd_reverse",
    "layer_norm_notation"]
