"""instance_norm on older Paddle releases (evidence: docs/releases/<version>.md, under each name).

Two differences are shared with group_norm (ops/group_norm/releases.py joins them): before 3.1
neither op has a rule, and 3.1.0-3.2.2 word both x-rank checks differently. Their text is
declared here, once.
"""

from __future__ import annotations

from ..kit.releases import (
    COSHARD_READ_RAISES,
    COSHARD_READ_RAISES_31,
    NO_CALLER_PATTERN,
    NO_COSHARD_CALLER_262,
    NO_RULE_262,
    Differences,
    KnownDifference,
    Probes,
    ReleaseNotes,
    probes,
)

_KEYS = ("instance_norm", "instance_norm_grad")

NO_INSTANCE_GROUP_NORM_RULE = KnownDifference(
    name="no-instance-group-norm-rule",
    rules=frozenset(_KEYS),
    kind="rule-missing",
    why="no instance_norm or group_norm SPMD rule exists (no registry entry, no InstanceNorm*/GroupNorm* "
        "InferSpmd functions, no instance_norm.h or group_norm.h before 3.1)",
    params=(("patterns", (r"registers no '(instance|group)_norm' rule", NO_CALLER_PATTERN)),),
)

#: 3.1.0-3.2.2 word the x-rank checks of instance_norm's and group_norm's forward rules differently
#: (same checks, same family; 3.3.0 has 3.3.1's words; instance_norm_grad keeps the old ones in 3.3.1).
X_RANK_WORDING = KnownDifference(
    name="x-rank-message-wording",
    rules=frozenset({"instance_norm"}),
    kind="error-text-differs",
    why="the x-rank check says 'should greater than' / 'should less than' (instance_norm) and 'should grater "
        "than' (group_norm) where 3.3.0+ says 'should be greater than' / 'should be less than'",
    params=(("rewrites", (("should greater than", "should be greater than"),
                          ("should less than", "should be less than"),
                          ("should grater than", "should be greater than"))),),
)

DIFFERENCES: Differences = {
    "2.6.2": (NO_RULE_262.for_rules(*_KEYS), NO_COSHARD_CALLER_262.for_rules(*_KEYS)),
    "3.0.0": (NO_INSTANCE_GROUP_NORM_RULE,),
    "3.1.0": (
        COSHARD_READ_RAISES.for_rules(*_KEYS),
        X_RANK_WORDING,
        KnownDifference(
            name="instance-norm-grad-without-bias",
            rules=frozenset({"instance_norm_grad"}),
            kind="native-raises",
            why="InstanceNormGradInferSpmd takes (x, scale, saved_mean, saved_variance, y_grad), no bias: the "
                "registry's infer_backward reads the inputs shifted by one (saved_variance as y_grad) and raises "
                "'The ndim of y_grad in instance_norm should be equal with x'",
            params=(("family", "ValueError"),
                    ("message", r"^The ndim of y_grad in instance_norm should be equal with x"),
                    ("ranks_differ", ("saved_variance", "x"))),
        ),
        KnownDifference(
            name="instance-norm-grad-no-compiled-call",
            rules=frozenset({"instance_norm_grad"}),
            kind="rule-missing",
            why="the compiled caller cannot call InstanceNormGradInferSpmd with bias (3.1.0's takes none): "
                "unreachable there, compared through the registry",
            params=(("patterns", (r"InstanceNormGradInferSpmd takes no bias",)),),
        ),
    ),
    "3.1.1": (COSHARD_READ_RAISES.for_rules(*_KEYS), X_RANK_WORDING),
    "3.2.0": (X_RANK_WORDING,),
    "3.2.1": (X_RANK_WORDING,),
    "3.2.2": (X_RANK_WORDING,),
}

REGISTRY_MISSING = {version: frozenset({"instance_norm"}) for version in ("2.6.2", "3.0.0")}
CPP_MISSING = {version: frozenset({"InstanceNormInferSpmd", "InstanceNormGradInferSpmd"})
               for version in ("2.6.2", "3.0.0")}

#: The instance_norm registry probes (``in/*``; 3.0.0 registers no instance_norm: skipped there by
#: registry_missing). 3.1.1 is given the co-shard one on the sweep's word.
_X_RANK_PROBE = (("in/x-rank-1", "instance_norm's x-rank check says 'The ndim of x in instance_norm should greater "
                                 "than 1' (3.3.0+: 'should be greater than 1'), same ValueError"),)
PROBE_DIFFERENCES: Probes = {
    "3.1.0": (*probes(COSHARD_READ_RAISES_31, "in/forward-coshard"), *_X_RANK_PROBE,
              *probes("InstanceNormGradInferSpmd takes no bias, so infer_backward reads the inputs shifted by one "
                      "(the 2-D saved_variance as y_grad) and raises ValueError 'The ndim of y_grad in instance_norm "
                      "should be equal with x, but got [0].'", "in/grad", "in/grad-partial-and-absent-bias")),
    "3.1.1": (*probes(COSHARD_READ_RAISES_31, "in/forward-coshard"), *_X_RANK_PROBE),
    **{version: _X_RANK_PROBE for version in ("3.2.0", "3.2.1", "3.2.2")},
}

#: The family's release notes, read by paddle_spmd_port/releases.py (one profile per release).
RELEASES = ReleaseNotes(differences=DIFFERENCES,
                        registry_missing=REGISTRY_MISSING,
                        cpp_missing=CPP_MISSING,
                        probe_differences=PROBE_DIFFERENCES)
