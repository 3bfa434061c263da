"""What the harness knows about each rule it compares: signature, port function, counts.

A *rule key* names one direction of one op. The eight keys::

    key                    port function                      Paddle's C++ function
    batch_norm_static      batch_norm_infer_spmd_static       BatchNormInferSpmdStatic (registry "batch_norm")
    batch_norm             batch_norm_infer_spmd              BatchNormInferSpmd
    batch_norm_grad        batch_norm_grad_infer_spmd         BatchNormGradInferSpmd
    sync_batch_norm        sync_batch_norm_infer_spmd         (none: replicated fallback)
    sync_batch_norm_grad   sync_batch_norm_grad_infer_spmd    (none: replicated fallback)
    layer_norm             layer_norm_infer_spmd              LayerNormInferSpmd (registry "layer_norm")
    layer_norm_reverse     layer_norm_infer_spmd_reverse      LayerNormInferSpmdReverse (registry infer_backward)
    layer_norm_grad        layer_norm_grad_infer_spmd         LayerNormGradInferSpmd
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

BN_FWD_ATTRS = (("is_test", False), ("momentum", 0.9), ("epsilon", 1e-5), ("data_format", "NCHW"),
                ("use_global_stats", False), ("trainable_statistics", False))
BN_GRAD_ATTRS = (("momentum", 0.9), ("epsilon", 1e-5), ("data_format", "NCHW"), ("is_test", False),
                 ("use_global_stats", False), ("trainable_statistics", False))
LN_ATTRS = (("epsilon", 1e-5), ("begin_norm_axis", 1))


@dataclass(frozen=True)
class RuleSpec:
    key: str
    op: str
    direction: str  # forward | reverse | grad
    inputs: tuple[str, ...]
    optional: frozenset[str]
    attrs: tuple[tuple[str, Any], ...]
    result_inputs: tuple[str, ...]
    result_outputs: tuple[str, ...]

    @property
    def n_cells(self) -> int:
        """Cells per case: (dims_mapping, partial, mesh) of every returned attr, plus the error."""
        return 3 * (len(self.result_inputs) + len(self.result_outputs)) + 1


BN_FWD_IN = ("x", "mean", "variance", "scale", "bias")
BN_FWD_OUT = ("out", "mean_out", "variance_out", "saved_mean", "saved_variance", "reserve_space")
BN_GRAD_IN = ("x", "scale", "bias", "mean_out", "variance_out", "saved_mean", "saved_variance", "reserve_space",
              "out_grad")
SBN_GRAD_IN = ("x", "scale", "bias", "saved_mean", "saved_variance", "reserve_space", "out_grad")
GRAD_OUT = ("x_grad", "scale_grad", "bias_grad")
LN_OUT = ("out", "mean", "variance")

RULES: dict[str, RuleSpec] = {
    spec.key: spec
    for spec in (
        RuleSpec("batch_norm_static", "batch_norm", "forward", BN_FWD_IN,
                 frozenset({"scale", "bias"}), (), BN_FWD_IN, BN_FWD_OUT),
        RuleSpec("batch_norm", "batch_norm", "forward", BN_FWD_IN,
                 frozenset({"scale", "bias"}), BN_FWD_ATTRS, BN_FWD_IN, BN_FWD_OUT),
        RuleSpec("batch_norm_grad", "batch_norm", "grad", BN_GRAD_IN,
                 frozenset({"scale", "bias", "reserve_space"}), BN_GRAD_ATTRS, BN_GRAD_IN, GRAD_OUT),
        RuleSpec("sync_batch_norm", "sync_batch_norm", "forward", BN_FWD_IN,
                 frozenset({"scale", "bias"}), BN_FWD_ATTRS, BN_FWD_IN, BN_FWD_OUT),
        RuleSpec("sync_batch_norm_grad", "sync_batch_norm", "grad",
                 SBN_GRAD_IN, frozenset({"scale", "bias", "reserve_space"}), BN_GRAD_ATTRS, SBN_GRAD_IN, GRAD_OUT),
        RuleSpec("layer_norm", "layer_norm", "forward", ("x", "scale", "bias"),
                 frozenset({"scale", "bias"}), LN_ATTRS, ("x", "scale", "bias"), LN_OUT),
        RuleSpec("layer_norm_reverse", "layer_norm", "reverse",
                 ("x", "scale", "bias", "out", "mean", "variance"), frozenset({"scale", "bias"}), LN_ATTRS,
                 ("x", "scale", "bias"), LN_OUT),
        RuleSpec("layer_norm_grad", "layer_norm", "grad",
                 ("x", "scale", "bias", "mean", "variance", "out_grad"), frozenset({"scale", "bias"}), LN_ATTRS,
                 ("x", "scale", "bias", "mean", "variance", "out_grad"), GRAD_OUT),
    )
}


def rule_spec(key: str) -> RuleSpec:
    try:
        return RULES[key]
    except KeyError:
        raise ValueError(f"unknown rule {key!r}; choose one of {', '.join(RULES)}") from None
