"""fast_ln's refusals beyond Paddle's rules (its checks are layer_norm's, begin_norm_axis the last
axis: :mod:`..layer_norm.checks`, whose declarations name fast_ln where they hold for it too).

The forward rule never reads scale's and bias's mappings (only their shape and mesh); the grad rule
merges x, mean, invvar and y_grad, a mesh dim named on two axes kept on the first. Their malformed
mappings are mirrored; the forward rule merges x too, but answers x as given (rules.py: its own
mirror).
"""

from __future__ import annotations

from ..kit.strictness import StrictnessNotes, unread_strictness

#: The inputs each rule never reads the mapping of.
UNREAD = {"fast_ln": ("scale", "bias")}
#: The inputs each rule merges keeping a repeated mesh dim on the first axis that names it.
FIRST_KEPT = {"fast_ln_grad": ("x", "mean", "invvar", "y_grad")}

#: The port's refusals beyond Paddle's fast_ln rules (:mod:`~paddle_spmd_port.ops.kit.strictness`).
STRICTNESS = StrictnessNotes(unread_strictness("fast_ln", UNREAD, {**FIRST_KEPT, "fast_ln": ("x",)}))
