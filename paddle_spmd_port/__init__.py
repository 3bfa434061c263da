"""paddle_spmd_port: PaddlePaddle's SPMD rules for batch_norm, sync_batch_norm and layer_norm,
ported to pure Python and checked cell by cell against Paddle's own C++ rules."""

from .errors import InvalidSpecError, PaddleInvalidArgument, RuleNotFoundError, ShardingConflictError, SpmdError
from .types import DistAttr, DistTensorSpec, ProcessMesh, SpmdResult, parse_dist_attr

__version__ = "0.1.0"

__all__ = [
    "DistAttr", "DistTensorSpec", "InvalidSpecError", "PaddleInvalidArgument", "ProcessMesh", "RuleNotFoundError",
    "ShardingConflictError", "SpmdError", "SpmdResult", "parse_dist_attr",
]
