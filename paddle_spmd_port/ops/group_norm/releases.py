"""group_norm on older Paddle releases (evidence: docs/releases/<version>.md, under each name).
It joins two differences declared with instance_norm (no rule before 3.1; the x-rank wording)."""

from __future__ import annotations

from ..instance_norm.releases import NO_INSTANCE_GROUP_NORM_RULE, X_RANK_WORDING
from ..kit.releases import (
    COSHARD_READ_RAISES,
    COSHARD_READ_RAISES_31,
    NO_COSHARD_CALLER_262,
    NO_DIST_PIR_262,
    NO_RULE_262,
    Differences,
    KnownDifference,
    Probes,
    ReleaseNotes,
    probes,
)

_KEYS = ("group_norm", "group_norm_base", "group_norm_grad", "group_norm_grad_base")
_WORDING = X_RANK_WORDING.for_rules("group_norm", "group_norm_base")

DIFFERENCES: Differences = {
    "2.6.2": (
        NO_RULE_262.for_rules(*_KEYS),
        NO_DIST_PIR_262.for_rules("group_norm", "group_norm_grad"),
        NO_COSHARD_CALLER_262.for_rules(*_KEYS),
    ),
    "3.0.0": (
        NO_INSTANCE_GROUP_NORM_RULE.for_rules(*_KEYS),
        KnownDifference(
            name="group-norm-pir-replicated-fallback",
            rules=frozenset({"group_norm", "group_norm_grad"}),
            kind="replicated-fallback",
            why="group_norm has no InferSpmd rule, so the PIR group_norm / group_norm_grad ops fall back to "
                "replicating every input and output (no Partial on the grads)",
        ),
        KnownDifference(
            name="group-norm-grad-pir-abort-without-scale",
            rules=frozenset({"group_norm_grad"}),
            kind="crash-with-none",
            why="building group_norm_grad without scale or bias aborts the process (SIGABRT) in the "
                "replicated fallback",
            params=(("crash", r"signal 6\b"), ("when_none", ("scale", "bias"))),
        ),
    ),
    "3.1.0": (
        COSHARD_READ_RAISES.for_rules(*_KEYS),
        _WORDING,
        KnownDifference(
            name="group-norm-statistics-1d",
            rules=frozenset({"group_norm", "group_norm_base"}),
            kind="outputs-truncated",
            why="GroupNormInferSpmd(Base) answers mean and variance 1-D [N's mesh dim] where 3.1.1+ answers 2-D "
                "[N's mesh dim, -1]",
            params=(("outputs", ("mean", "variance")), ("keep", 1)),
        ),
        KnownDifference(
            name="group-norm-pir-unbuildable",
            rules=frozenset({"group_norm"}),
            kind="rule-missing",
            why="the PIR group_norm op's mean and variance are 2-D, its InferSpmd answers them 1-D: building the dist "
                "op fails ('The global ddim size must equal to dim_mapping's size, but bot 2 vs 1'), so PIR reaches "
                "no group_norm case that answers (the registry and the compiled caller do)",
            params=(("patterns", (r"The global ddim size must equal to dim_mapping's size, but bot 2 vs 1",)),),
        ),
        KnownDifference(
            name="group-norm-grad-wants-1d-statistics",
            rules=frozenset({"group_norm_grad", "group_norm_grad_base"}),
            kind="native-raises",
            why="GroupNormGradInferSpmd(Base) requires 1-D mean and variance (its forward answers them 1-D) and "
                "raises 'The ndim of mean/variance in group_norm should be 1' on the 2-D ones of 3.1.1+",
            params=(("family", "ValueError"),
                    ("message", r"^The ndim of (?P<name>mean|variance) in group_norm should be 1, but got "
                                r"\[(?P<rank>\d+)\]\.$")),
        ),
    ),
    "3.1.1": (COSHARD_READ_RAISES.for_rules(*_KEYS), _WORDING),
    "3.2.0": (_WORDING,),
    "3.2.1": (_WORDING,),
    "3.2.2": (_WORDING,),
}

REGISTRY_MISSING = {version: frozenset({"group_norm"}) for version in ("2.6.2", "3.0.0")}
CPP_MISSING = {version: frozenset({"GroupNormInferSpmd", "GroupNormInferSpmdBase", "GroupNormGradInferSpmd",
                                   "GroupNormGradInferSpmdBase"}) for version in ("2.6.2", "3.0.0")}

#: The group_norm registry probes (``gn/*``; 3.0.0 registers no group_norm: skipped there by
#: registry_missing). 3.1.1 is given the co-shard one on the sweep's word.
_X_RANK_PROBE = (("gn/x-rank-2", "group_norm's x-rank check says 'The ndim of x in group_norm should grater than 2' "
                                 "(3.3.0+: 'should be greater than 2'), same ValueError"),)
PROBE_DIFFERENCES: Probes = {
    "3.1.0": (*probes(COSHARD_READ_RAISES_31, "gn/forward-coshard"), *_X_RANK_PROBE,
              *probes("group_norm's forward answers mean and variance 1-D [N's mesh dim] (3.1.1+: 2-D [N's mesh dim, "
                      "-1]); the other attrs as 3.3.1", "gn/forward", "gn/forward-one-dim-mesh",
                      "gn/forward-partial-absent-and-attributes")),
    "3.1.1": (*probes(COSHARD_READ_RAISES_31, "gn/forward-coshard"), *_X_RANK_PROBE),
    **{version: _X_RANK_PROBE for version in ("3.2.0", "3.2.1", "3.2.2")},
}

#: The family's release notes, read by paddle_spmd_port/releases.py (one profile per release).
RELEASES = ReleaseNotes(differences=DIFFERENCES,
                        registry_missing=REGISTRY_MISSING,
                        cpp_missing=CPP_MISSING,
                        probe_differences=PROBE_DIFFERENCES)
