"""fast_ln on older Paddle releases (evidence: docs/releases/<version>.md, under each name)."""

from __future__ import annotations

from ..kit.releases import (
    COSHARD_READ_RAISES,
    NO_COSHARD_CALLER_262,
    NO_RULE_262,
    Differences,
    KnownDifference,
    ReleaseNotes,
)
from ..rms_norm.releases import NO_COMPILED_CALLER_RMS_FAST_LN

_KEYS = ("fast_ln", "fast_ln_grad")

DIFFERENCES: Differences = {
    "2.6.2": (NO_RULE_262.for_rules(*_KEYS), NO_COSHARD_CALLER_262.for_rules(*_KEYS)),
    "3.0.0": (NO_COMPILED_CALLER_RMS_FAST_LN.for_rules(*_KEYS),),
    "3.1.0": (
        COSHARD_READ_RAISES.for_rules(*_KEYS),
        KnownDifference(
            name="fast-ln-grad-segfault-without-scale",
            rules=frozenset({"fast_ln_grad"}),
            kind="crash-with-none",
            why="FastLnGradInferSpmd segfaults when scale is None and x_grad is split; fixed in 3.1.1",
            params=(("crash", r"signal 11\b"), ("when_none", ("scale",)), ("port_sharded", "x_grad")),
        ),
    ),
    "3.1.1": (COSHARD_READ_RAISES.for_rules(*_KEYS),),
}

CPP_MISSING = {"2.6.2": frozenset({"FastLnInferSpmd", "FastLnGradInferSpmd"})}

#: The family's release notes, read by paddle_spmd_port/releases.py (one profile per release).
RELEASES = ReleaseNotes(differences=DIFFERENCES, cpp_missing=CPP_MISSING)
