"""paddle_spmd_port: PaddlePaddle's SPMD rules for the norm ops (one family per folder, ``ops/``),
ported to Python (the value types' hot constructors also in an optional C module, ``_speedups``)
and checked cell by cell against Paddle's own C++ rules."""

from .errors import (
    ArgumentTypeError,
    InvalidSpecError,
    PaddleInvalidArgument,
    RuleNotFoundError,
    ShardingConflictError,
    SpmdError,
    UnknownKeyError,
)
from .types import DistAttr, DistTensorSpec, ProcessMesh, SpmdResult, parse_dist_attr

__version__ = "0.1.0"

__all__ = [
    "ArgumentTypeError", "DistAttr", "DistTensorSpec", "InvalidSpecError", "PaddleInvalidArgument", "ProcessMesh",
    "RuleNotFoundError", "ShardingConflictError", "SpmdError", "SpmdResult", "UnknownKeyError", "parse_dist_attr",
]
