"""Moved: each family's checks live in ``ops/<family>/checks.py``, the shared ones in
:mod:`paddle_spmd_port.ops.kit.checks` (kept so old imports work)."""

from __future__ import annotations

from ..ops.batch_norm.checks import (
    BN,
    bn_forward_inputs,
    bn_grad_inputs,
    check_bn_x_rank,
)
from ..ops.group_norm.checks import (
    GN,
    gn_forward_inputs,
    gn_grad_inputs,
)
from ..ops.instance_norm.checks import (
    IN,
    in_forward_inputs,
    in_grad_inputs,
    require_in_spatial_axes,
)
from ..ops.kit.checks import (
    REAL,
    input_names,
    require_buildable,
)
from ..ops.layer_norm.checks import (
    LN,
    check_begin_norm_axis,
    ln_forward_inputs,
    ln_grad_inputs,
    ln_reverse_inputs,
    require_1d_params,
    require_grad_meshes,
    require_rank,
)
from ..ops.rms_norm.checks import (
    RMS_CHECK_LINES,
    RMS_SOURCE,
    rms_forward_inputs,
    rms_grad_inputs,
    rms_reverse_inputs,
)

__all__ = ["BN", "GN", "IN", "LN", "REAL", "RMS_CHECK_LINES", "RMS_SOURCE", "bn_forward_inputs", "bn_grad_inputs",
    "check_begin_norm_axis", "check_bn_x_rank", "gn_forward_inputs", "gn_grad_inputs", "in_forward_inputs",
    "in_grad_inputs", "input_names", "ln_forward_inputs", "ln_grad_inputs", "ln_reverse_inputs", "require_1d_params",
    "require_buildable", "require_grad_meshes", "require_in_spatial_axes", "require_rank", "rms_forward_inputs",
    "rms_grad_inputs", "rms_reverse_inputs"]
