"""Moved: the code lives in :mod:`paddle_spmd_port.ops.instance_norm.rules` (kept so old imports work)."""

from __future__ import annotations

from ..ops.instance_norm.rules import (
    instance_norm_grad_infer_spmd,
    instance_norm_infer_spmd,
)

__all__ = ["instance_norm_grad_infer_spmd", "instance_norm_infer_spmd"]
