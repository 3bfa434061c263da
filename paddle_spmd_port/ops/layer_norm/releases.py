"""layer_norm on older Paddle releases (evidence: docs/releases/<version>.md, under each name)."""

from __future__ import annotations

from ..kit.releases import (
    COSHARD_READ_RAISES,
    NO_CALLER_PATTERN,
    NO_COSHARD_CALLER_262,
    NO_DIST_PIR_262,
    NO_MULTI_DIMS_MAPPING,
    STR_ARGS_300,
    STR_FORMAT_300,
    Differences,
    KnownDifference,
    Probes,
    ReleaseNotes,
    probes,
)

_KEYS = ("layer_norm", "layer_norm_reverse", "layer_norm_grad")

DIFFERENCES: Differences = {
    "2.6.2": (
        NO_DIST_PIR_262.for_rules("layer_norm", "layer_norm_grad"),
        NO_COSHARD_CALLER_262.for_rules("layer_norm_grad"),
        NO_MULTI_DIMS_MAPPING.for_rules("layer_norm", "layer_norm_reverse"),
        KnownDifference(
            name="layer-norm-grad-first-version",
            rules=frozenset({"layer_norm_grad"}),
            kind="rule-not-modelled",
            why="its LayerNormGradInferSpmd is the rule's first version, another algorithm than 3.3.1's (the port's): "
                "measured, it moves mesh dims that split a normalized axis or hold a partial input onto the batch "
                "axes, drops the inputs' partial status, answers conflicting shards 3.3.1 refuses, and segfaults "
                "on some split inputs; a case it answers otherwise than the port is not compared",
            params=(("verdicts", ("mismatch", "native-crash")),),
        ),
    ),
    "3.0.0": (
        KnownDifference(
            name="no-compiled-caller",
            rules=frozenset(_KEYS),
            kind="rule-missing",
            why="the compiled caller is built against batch_norm.h, which this release lacks, so it cannot "
                "reach the layer_norm rules either (they are still compared through the registry and PIR)",
            params=(("patterns", (NO_CALLER_PATTERN,)),),
        ),
        KnownDifference(
            name="layer-norm-grad-partial-on-absent-grad",
            rules=frozenset({"layer_norm_grad"}),
            kind="partial-on-absent-grad",
            why="LayerNormGradInferSpmd marks scale_grad/bias_grad Partial even when scale/bias is None "
                "(3.1.1 and later leave the absent grad without partial)",
            params=(("grads", (("scale_grad", "scale"), ("bias_grad", "bias"))),),
        ),
        NO_MULTI_DIMS_MAPPING.for_rules("layer_norm", "layer_norm_reverse"),
    ),
    "3.1.0": (
        KnownDifference(
            name="layer-norm-grad-segfault-without-scale",
            rules=frozenset({"layer_norm_grad"}),
            kind="crash-with-none",
            why="LayerNormGradInferSpmd segfaults when scale or bias is None and x_grad is split (it marks "
                "the absent grad Partial); fixed in 3.1.1",
            params=(("crash", r"signal 11\b"), ("when_none", ("scale", "bias")), ("port_sharded", "x_grad")),
        ),
        COSHARD_READ_RAISES.for_rules(*_KEYS),
    ),
    "3.1.1": (COSHARD_READ_RAISES.for_rules(*_KEYS),),
}

#: Before 3.3.0 the registry's Python binding does not range-check integer attributes (3.3.0 and 3.3.1 agree).
_INT_ATTRS_UNCHECKED = (
    ("ln/attribute-big-axis", "begin_norm_axis=2**40 is cut to int32 (0) and answered; 3.3.0+ raises IndexError "
                              "(OutOfRange) 'Integer value 1099511627776 exceeds int32 range'"),
    ("ln/attribute-big-list-epsilon", "epsilon=[2**40] raises ValueError 'Attribute cast error'; 3.3.0+ raises "
                                      "IndexError (OutOfRange) first"),
)

PROBE_DIFFERENCES: Probes = {
    "3.0.0": (*probes(STR_FORMAT_300, "ln/attribute-float64-epsilon", "ln/forward", "ln/forward-absent-with-mapping",
                      "ln/forward-begin-norm-axis-0", "ln/forward-interleaved-args", "ln/forward-one-dim-mesh",
                      "ln/forward-partial-and-absent-scale", "ln/reverse-absent-scale-bias", "ln/reverse-partial-kept"),
              *probes(STR_ARGS_300, "ln/attribute-str-axis", "ln/forward-extra-args"),
              *_INT_ATTRS_UNCHECKED),
    **{version: _INT_ATTRS_UNCHECKED for version in ("3.1.0", "3.1.1", "3.2.0", "3.2.1", "3.2.2")},
}
PROBE_CRASHES: Probes = {
    "3.0.0": (("ln/attribute-empty-list-epsilon",
               "epsilon=[] kills the process with SIGSEGV (3.1.1 answers like 3.3.1)"),),
}

#: The family's release notes, read by paddle_spmd_port/releases.py (one profile per release).
RELEASES = ReleaseNotes(differences=DIFFERENCES, probe_differences=PROBE_DIFFERENCES, probe_crashes=PROBE_CRASHES)
