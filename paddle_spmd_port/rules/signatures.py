"""Where scripts found the signatures before the op families had folders: every name here is read
from :mod:`paddle_spmd_port.ops` (each family's ``__init__`` declares its rule keys; batch_norm's
layouts are in ``ops/batch_norm/layout.py``). New code imports from there.
"""

from __future__ import annotations

from ..ops import OPS, RULES, RuleSpec, rule_spec
from ..ops.batch_norm import GRAD_OPTIONAL, OPTIONAL
from ..ops.batch_norm.layout import DATA_FORMAT_NDIM, DATA_FORMATS, channel_axis, channel_first, kernel_layout
from ..ops.batch_norm.layout import FORWARD_ATTRS as BN_FWD_ATTRS
from ..ops.batch_norm.layout import GRAD_ATTRS as BN_GRAD_ATTRS
from ..ops.batch_norm.layout import PER_CHANNEL as BN_PER_CHANNEL
from ..ops.group_norm import DATA_FORMATS as GN_DATA_FORMATS
from ..ops.layer_norm import ATTRS as LN_ATTRS

__all__ = ["BN_FWD_ATTRS", "BN_GRAD_ATTRS", "BN_PER_CHANNEL", "DATA_FORMATS", "DATA_FORMAT_NDIM", "GN_DATA_FORMATS",
           "GRAD_OPTIONAL", "LN_ATTRS", "OPS", "OPTIONAL", "RULES", "RuleSpec", "channel_axis", "channel_first",
           "kernel_layout", "rule_spec"]
