"""Moved: the code lives in :mod:`paddle_spmd_port.ops.rms_norm.rules` (kept so old imports work)."""

from __future__ import annotations

from ..ops.rms_norm.rules import (
    align_leading_axes,
    rms_norm_grad_infer_spmd,
    rms_norm_infer_spmd,
    rms_norm_infer_spmd_reverse,
)

__all__ = ["align_leading_axes", "rms_norm_grad_infer_spmd", "rms_norm_infer_spmd", "rms_norm_infer_spmd_reverse"]
