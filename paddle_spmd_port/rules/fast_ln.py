"""Moved: the code lives in :mod:`paddle_spmd_port.ops.fast_ln.rules` (kept so old imports work)."""

from __future__ import annotations

from ..ops.fast_ln.rules import (
    fast_ln_grad_infer_spmd,
    fast_ln_infer_spmd,
)

__all__ = ["fast_ln_grad_infer_spmd", "fast_ln_infer_spmd"]
