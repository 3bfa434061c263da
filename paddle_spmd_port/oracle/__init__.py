"""Numerical soundness oracle: runs a rule's answer on a virtual mesh in numpy (no Paddle).

See :mod:`.simulator` (verdicts, sharding convention), :mod:`.kernels` (the op models, gathered
from each family's ``ops/<family>/kernel.py``; what they compute: docs/ops/<family>.md) and
:mod:`.cli` (``python -m paddle_spmd_port oracle``). Nothing in this room names an op.
"""

from .simulator import LABELS, Verdict, resharded_inputs, simulate

__all__ = ["LABELS", "Verdict", "resharded_inputs", "simulate"]
