"""batch_norm on older Paddle releases (evidence: docs/releases/<version>.md, under each name).

Before 3.1 there is no batch_norm rule at all: no registry entry, no BatchNorm*InferSpmd, no
header; the dist op then falls back to replicating everything.
"""

from __future__ import annotations

from ..kit.releases import (
    COSHARD_READ_RAISES,
    NO_COSHARD_CALLER_262,
    NO_DIST_PIR_262,
    NO_RULE_262,
    Differences,
    KnownDifference,
    ReleaseNotes,
)

_KEYS = ("batch_norm_static", "batch_norm", "batch_norm_grad")

DIFFERENCES: Differences = {
    "2.6.2": (
        NO_RULE_262.for_rules(*_KEYS),
        NO_DIST_PIR_262.for_rules("batch_norm", "batch_norm_grad"),
        NO_COSHARD_CALLER_262.for_rules(*_KEYS),
    ),
    "3.0.0": (
        KnownDifference(
            name="no-batch-norm-rule",
            rules=frozenset(_KEYS),
            kind="rule-missing",
            why="no batch_norm SPMD rule exists (no 'batch_norm' registry entry, no BatchNorm*InferSpmd "
                "functions or batch_norm.h header before 3.1)",
            params=(("patterns", (r"registers no 'batch_norm' rule",
                                  r"`batch_norm` Kernel's Spmd rules is not registered",
                                  r"has no phi/infermeta/spmd_rules/batch_norm\.h")),),
        ),
        KnownDifference(
            name="batch-norm-replicated-fallback",
            rules=frozenset({"batch_norm", "batch_norm_grad"}),
            kind="replicated-fallback",
            why="batch_norm has no InferSpmd rule, so the dist op falls back to replicating every input "
                "and output (no Partial on the grads)",
        ),
        KnownDifference(
            name="batch-norm-grad-pir-mixed-mesh-unbuildable",
            rules=frozenset({"batch_norm_grad"}),
            kind="rule-missing",
            why="with no batch_norm rule, the PIR batch_norm_grad op whose inputs lie on different meshes cannot be "
                "built ('operand_dist_attrs element's mesh(...) not belong to input mesh(...)'): unreachable there",
            params=(("patterns", (r"operand_dist_attrs element's mesh\(.*\) not belong to input mesh",)),),
        ),
        KnownDifference(
            name="batch-norm-grad-abort-without-scale",
            rules=frozenset({"batch_norm_grad"}),
            kind="crash-with-none",
            why="building batch_norm_grad without scale or bias aborts the process (SIGABRT) in the "
                "replicated fallback",
            params=(("crash", r"signal 6\b"), ("when_none", ("scale", "bias"))),
        ),
    ),
    "3.1.0": (COSHARD_READ_RAISES.for_rules(*_KEYS),),
    "3.1.1": (COSHARD_READ_RAISES.for_rules(*_KEYS),),
}

REGISTRY_MISSING = {"2.6.2": frozenset({"batch_norm"}), "3.0.0": frozenset({"batch_norm"})}
CPP_MISSING = {version: frozenset({"BatchNormInferSpmd", "BatchNormInferSpmdStatic", "BatchNormGradInferSpmd"})
               for version in ("2.6.2", "3.0.0")}

#: The family's release notes, read by paddle_spmd_port/releases.py (one profile per release).
RELEASES = ReleaseNotes(differences=DIFFERENCES, registry_missing=REGISTRY_MISSING, cpp_missing=CPP_MISSING)
