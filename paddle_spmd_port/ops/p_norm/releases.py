"""p_norm on older Paddle releases (evidence: docs/releases/<version>.md, under each name, and
docs/ops/p_norm.md, "Releases").

Measured on 3.0.0, 3.1.0, 3.1.1 and 3.2.2 (registry and PIR routes): every difference is a
co-sharded input the registry cannot take; 3.2.2 answers every case as 3.3.1. The compiled caller's
p_norm_grad raises on co-shards in 3.1.x too: the 3.1.0 -> 3.3.1 baseline diff showed it (114
cases; docs/measurements/2026-12-01-release-diffs.md), 3.1.1 measured the same way. 3.2.0, 3.2.1 and
3.3.0 declare nothing, unmeasured for p_norm: their runs report any difference as a mismatch.
"""

from __future__ import annotations

from ..kit.releases import (
    COSHARD_READ_RAISES,
    NO_CALLER_PATTERN,
    NO_COSHARD_CALLER_262,
    NO_DIST_PIR_262,
    NO_MULTI_DIMS_MAPPING,
    NO_RULE_262,
    Differences,
    KnownDifference,
    ReleaseNotes,
)

DIFFERENCES: Differences = {
    "2.6.2": (
        NO_RULE_262.for_rules("p_norm", "p_norm_reverse", "p_norm_grad"),
        NO_DIST_PIR_262.for_rules("p_norm", "p_norm_grad"),
        NO_COSHARD_CALLER_262.for_rules("p_norm_grad"),
    ),
    "3.0.0": (
        NO_MULTI_DIMS_MAPPING.for_rules("p_norm", "p_norm_reverse"),
        KnownDifference(
            name="no-compiled-caller-p-norm",
            rules=frozenset({"p_norm_grad"}),
            kind="rule-missing",
            why="the compiled caller is built against batch_norm.h, which this release lacks, so it cannot reach "
                "PNormGradInferSpmd (still compared through PIR)",
            params=(("patterns", (NO_CALLER_PATTERN,)),),
        ),
    ),
    "3.1.0": (COSHARD_READ_RAISES.for_rules("p_norm", "p_norm_reverse", "p_norm_grad"),),
    "3.1.1": (COSHARD_READ_RAISES.for_rules("p_norm", "p_norm_reverse", "p_norm_grad"),),
}

REGISTRY_MISSING = {"2.6.2": frozenset({"p_norm"})}
CPP_MISSING = {"2.6.2": frozenset({"PNormInferSpmd", "PNormInferSpmdReverse", "PNormGradInferSpmd"})}

#: The family's release notes, read by paddle_spmd_port/releases.py (one profile per release).
RELEASES = ReleaseNotes(differences=DIFFERENCES, registry_missing=REGISTRY_MISSING, cpp_missing=CPP_MISSING)
