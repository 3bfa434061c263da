"""rms_norm on real ranks: no eager API reaches its rules in Paddle 3.3.1 on CPU, so no launch case
(docs/launch-norms-3.3.1.md has the measurements)."""

from __future__ import annotations

from ..kit.launch import LaunchPlan

_NOT_REACHED = (
    "no eager API reaches the rms_norm rules in Paddle 3.3.1 on CPU: F.rms_norm, fused_rms_norm_ext and "
    "fast_rms_norm have no CPU kernel (NotFound), fused_rms_norm (fused_rms_norm_quant) dies with SIGILL in "
    "its AVX kernel on this CPU, and none of their eager functions calls RmsNorm*InferSpmd "
    "(docs/launch-norms-3.3.1.md)")

NOT_LAUNCHED = {key: _NOT_REACHED for key in ("rms_norm", "rms_norm_reverse", "rms_norm_grad")}

#: The family's real runs, read by the launch room: none (no eager call reaches a rule).
LAUNCH = LaunchPlan(not_launched=NOT_LAUNCHED)
