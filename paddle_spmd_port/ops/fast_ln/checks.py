"""fast_ln's refusals beyond Paddle's rules (its checks are layer_norm's, begin_norm_axis the last
axis: :mod:`..layer_norm.checks`). Under the ``mirror`` policy every malformed input is answered as
Paddle's rule does on it (layer_norm's model, :mod:`..layer_norm.raw`), or refused naming why: the
declarations are layer_norm's (:func:`..layer_norm.checks.raw_strictness`) for this family's inputs.
"""

from __future__ import annotations

from .. import RULES
from ..kit.strictness import StrictnessNotes
from ..layer_norm.checks import raw_strictness

#: The rule keys of the family and the inputs each one's refusals name.
RAW_INPUTS = {key: RULES[key].inputs for key in ("fast_ln", "fast_ln_grad")}
#: The inputs whose mapping each rule never merges (the grad reads scale's length and mesh only).
NOT_MERGED = {"fast_ln": ("scale", "bias"), "fast_ln_grad": ("scale",)}

#: The port's refusals beyond Paddle's fast_ln rules (:mod:`~paddle_spmd_port.ops.kit.strictness`).
STRICTNESS = StrictnessNotes(raw_strictness("fast_ln", RAW_INPUTS, NOT_MERGED, ("fast_ln_grad",)))
