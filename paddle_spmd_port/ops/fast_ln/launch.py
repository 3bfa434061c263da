"""fast_ln on real ranks: Paddle 3.3.1's fast_ln ops never call the rules, so no launch case."""

from __future__ import annotations

from ..kit.launch import LaunchPlan

NOT_LAUNCHED = {
    "fast_ln": "the fast_ln op never calls FastLnInferSpmd (libpaddle links no FastLn* function) and has no CPU kernel",
    "fast_ln_grad": ("the fast_ln_grad op never calls FastLnGradInferSpmd (libpaddle links no FastLn* function) "
                     "and has no CPU kernel"),
}

#: The family's real runs, read by the launch room: none (no eager call reaches a rule).
LAUNCH = LaunchPlan(not_launched=NOT_LAUNCHED)
