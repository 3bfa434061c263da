"""rms_norm on older Paddle releases (evidence: docs/releases/<version>.md, under each name).

3.0.0's missing compiled caller is shared with fast_ln (ops/fast_ln/releases.py joins it): its
text is declared here, once.
"""

from __future__ import annotations

from ..kit.releases import (
    COSHARD_READ_RAISES,
    COSHARD_READ_RAISES_31,
    NO_CALLER_PATTERN,
    NO_COSHARD_300,
    NO_COSHARD_CALLER_262,
    NO_MULTI_DIMS_MAPPING,
    NO_RULE_262,
    STR_FORMAT_300,
    Differences,
    KnownDifference,
    Probes,
    ReleaseNotes,
    probes,
)

_KEYS = ("rms_norm", "rms_norm_reverse", "rms_norm_grad")

NO_COMPILED_CALLER_RMS_FAST_LN = KnownDifference(
    name="no-compiled-caller-rms-fast-ln",
    rules=frozenset(_KEYS),
    kind="rule-missing",
    why="the compiled caller is built against batch_norm.h, which this release lacks, so it cannot reach "
        "RmsNorm*/FastLn* InferSpmd, although the library exports them: rms_norm_grad, fast_ln and "
        "fast_ln_grad are reached by no route (rms_norm and rms_norm_reverse are still compared "
        "through the registry's fused_rms_norm)",
    params=(("patterns", (NO_CALLER_PATTERN,)),),
)

DIFFERENCES: Differences = {
    "2.6.2": (NO_RULE_262.for_rules(*_KEYS), NO_COSHARD_CALLER_262.for_rules(*_KEYS)),
    "3.0.0": (NO_MULTI_DIMS_MAPPING.for_rules("rms_norm", "rms_norm_reverse"), NO_COMPILED_CALLER_RMS_FAST_LN),
    "3.1.0": (COSHARD_READ_RAISES.for_rules(*_KEYS),),
    "3.1.1": (COSHARD_READ_RAISES.for_rules(*_KEYS),),
}

#: The fused_rms_norm registry probes (``rms/*``). 3.1.1 is given the co-shard one on the sweep's word
#: (coshard-dims-mapping-read-raises, every valid co-shard case, 3.1.0 and 3.1.1).
PROBE_DIFFERENCES: Probes = {
    "3.0.0": (*probes(STR_FORMAT_300, "rms/forward", "rms/forward-one-dim-mesh", "rms/forward-partial", "rms/reverse",
                      "rms/reverse-partial"),
              *probes(NO_COSHARD_300, "rms/forward-coshard")),
    "3.1.0": probes(COSHARD_READ_RAISES_31, "rms/forward-coshard"),
    "3.1.1": probes(COSHARD_READ_RAISES_31, "rms/forward-coshard"),
}

REGISTRY_MISSING = {"2.6.2": frozenset({"fused_rms_norm"})}
CPP_MISSING = {"2.6.2": frozenset({"RmsNormInferSpmd", "RmsNormInferSpmdReverse", "RmsNormGradInferSpmd"})}

#: The family's release notes, read by paddle_spmd_port/releases.py (one profile per release).
RELEASES = ReleaseNotes(differences=DIFFERENCES,
                        registry_missing=REGISTRY_MISSING,
                        cpp_missing=CPP_MISSING,
                        probe_differences=PROBE_DIFFERENCES)
