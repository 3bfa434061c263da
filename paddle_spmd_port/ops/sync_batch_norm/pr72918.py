"""sync_batch_norm as *proposed* upstream, in the pull request the profile is named after (the branch
revision read: :data:`REVISION`; which one and why: docs/measurements/2026-12-01-rules-notes.md).

Not the default rule set. No Paddle release ships these rules (3.0.0-3.3.1 fall back to the
replicated rule, see :mod:`.sync_batch_norm`); this module reproduces what the PR branch's
``SyncBatchNormInferSpmd`` / ``SyncBatchNormGradInferSpmd`` computed, bugs included, so that the
proposal can be compared with the shipped behaviour and checked numerically.

Notation (x of rank 4; data_format is *not* read, the channel axis is always axis 1)::

    forward  ijkl, i, i, j, j  ->  ijkl, i, i, i, i, -     x, mean, variance, scale, bias ->
                                                          out, mean_out, variance_out,
                                                          saved_mean, saved_variance, reserve_space
    grad     ijkl, j, j, i, i, -, ijkl  ->  ijkl, j, j     x, scale, bias, saved_mean,
                                                          saved_variance, reserve_space, out_grad
                                                          -> x_grad, scale_grad, bias_grad

Only axis 1 of x keeps its sharding ``d = x.dims_mapping[1]``; every other axis is forced to
replicated. The statistics are annotated with x's *first* letter ``i`` (the batch axis), which
is always replicated, so they always come back ``[-1]``.

Worked table, 2x3 mesh, x [8,6,4,4], stats/scale/bias [6]::

    rule     x              inputs                                   outputs
    forward  [0,1,-1,-1]    [-1,1,-1,-1] [-1] [-1] [-1] [-1]         [-1,1,-1,-1] [-1] [-1] [-1] [-1] [-1]
    forward  [0,-1,-1,1]    all -1                                   all -1
    grad     [0,1,-1,-1]    [-1,1,-1,-1] [1] [1] [-1] [-1] [-1]      [-1,1,-1,-1] [1] [1]
                            [-1,1,-1,-1]
    grad     [-1,-1,0,-1]   all -1                                   all -1

Quirks of the proposal, kept on purpose:

* PR72918-QUIRK(stats-batch-letter): mean/variance (and their outputs, saved_mean/variance)
  carry the batch axis letter, so they are never sharded even when C is.
* PR72918-QUIRK(axis-1-always): data_format is ignored; with NHWC the rule keeps *H* sharded.
* PR72918-QUIRK(grad-scale-sharded): scale/bias inputs and scale_grad/bias_grad follow C
  (``[d]``, no partial), which is the right placement for per-channel gradients; the scale/bias
  *inputs* of the grad take x's mesh, the grads take scale's / bias's (none for a None input).
* Every returned attr drops its partial status; out_grad's own mapping is ignored.

Port-only checks (Paddle would read past the end or crash): x needs a mesh; the specs must
pass :meth:`DistTensorSpec.check`; when C is split, the grad rule's scale/bias specs must be on a
mesh with C's mesh dim (else scale_grad/bias_grad ``[d]`` would name a mesh dim their mesh lacks).
A *None* scale/bias is answered ``[d] @-`` as the branch does (PR72918-QUIRK(grad-none-scale):
a mesh dim on an attr without a mesh; pinned by tests/test_rules_pr72918.py, and the one answer
the API fuzz counts as known-malformed).

The checks before the answer are batch_norm's (:mod:`paddle_spmd_port.ops.batch_norm.checks`, shared with the other
profiles): the branch reuses them, so its messages name batch_norm also for sync_batch_norm.
"""

from __future__ import annotations

from ...notation import letters, mapping_for_axes, merge_shardings
from ...types import DistAttr, SpmdResult
from ..batch_norm.checks import bn_forward_inputs, bn_grad_inputs
from ..kit.checks import Attrs, Specs, input_names, rule
from ..kit.grid import KnownMalformed
from ..kit.tensor import RuleInput

REVISION = "19683c0389dce01ea48606aba51149681baa8272"

_GRAD_NAMES = input_names("sync_batch_norm_grad")

#: PR72918-QUIRK(grad-none-scale), the one malformed answer kept on purpose: scale_grad / bias_grad
#: of a None scale / bias come back ``[d] @-`` while C is split (pinned by
#: tests/test_rules_pr72918.py); tools/fuzz.py counts it under this label.
KNOWN_MALFORMED = (KnownMalformed("sync_batch_norm_grad", "mesh-dim-without-mesh",
                                  {"scale_grad": "scale", "bias_grad": "bias"},
                                  "pr72918 sync_batch_norm_grad: [d] @- for the grad of a None scale/bias"),)


def _axis1_only(x: RuleInput) -> tuple[str, tuple[int, ...], dict[str, int]]:
    """x's letters, x's mapping with only axis 1 kept, and the merged letter map."""
    axes = letters(x.ndim)
    kept = [-1] * x.ndim
    kept[1] = x.dims_mapping[1]
    return axes, tuple(kept), merge_shardings([(axes, kept)])


@rule("sync_batch_norm", packed=True)
def sync_batch_norm_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Proposed forward rule (the branch's ``BatchNormInferSpmdBase``). Inputs (x, mean,
    variance, scale, bias); outputs (out, mean_out, variance_out, saved_mean, saved_variance,
    reserve_space). No attribute is read."""
    tx, tm, tv, ts, tb = bn_forward_inputs(specs, attrs)

    axes, kept, merged = _axis1_only(tx)
    stat = mapping_for_axes(axes[0], merged)  # PR72918-QUIRK(stats-batch-letter): always [-1]
    return SpmdResult(
        inputs=(tx.attr(kept), tm.attr(stat), tv.attr(stat), ts.attr((-1,)), tb.attr((-1,))),
        outputs=(tx.attr(mapping_for_axes(axes, merged)), tm.attr(stat), tv.attr(stat), tm.attr(stat),
                 tv.attr(stat), tx.attr((-1,))),
    )


@rule("sync_batch_norm_grad", packed=True, others=("scale", "bias"), mesh_of=("x",) * 8 + ("scale", "bias"))
def sync_batch_norm_grad_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Proposed grad rule. Inputs (x, scale, bias, saved_mean, saved_variance, reserve_space,
    out_grad); outputs (x_grad, scale_grad, bias_grad). No attribute is read."""
    t = bn_grad_inputs(_GRAD_NAMES, specs, attrs)
    tx = t["x"]

    axes, kept, merged = _axis1_only(tx)
    channel = mapping_for_axes(axes[1], merged)  # PR72918-QUIRK(grad-scale-sharded): [d]
    stat = mapping_for_axes(axes[0], merged)     # PR72918-QUIRK(stats-batch-letter): [-1]
    from_x = tx.attr
    result = SpmdResult(
        inputs=(from_x(kept), from_x(channel), from_x(channel), from_x(stat), from_x(stat), from_x((-1,)),
                from_x(mapping_for_axes(axes, merged))),
        outputs=(tx.attr(kept), DistAttr(channel, frozenset(), t["scale"].mesh),
                 DistAttr(channel, frozenset(), t["bias"].mesh)),
    )
    return result
