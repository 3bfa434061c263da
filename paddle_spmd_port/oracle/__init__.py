"""Numerical soundness oracle: runs a rule's answer on a virtual mesh in numpy (no Paddle).

See :mod:`.simulator` (verdicts, sharding convention), :mod:`.kernels` (the op models) and
:mod:`.cli` (``python -m paddle_spmd_port oracle``).
"""

from .simulator import LABELS, Verdict, resharded_inputs, simulate

__all__ = ["LABELS", "Verdict", "resharded_inputs", "simulate"]
