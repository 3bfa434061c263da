"""instance_norm: ``InstanceNormInferSpmd``, ``InstanceNormGradInferSpmd`` (Paddle 3.3.1; the registry's
``instance_norm`` runs the first as ``infer_forward`` and the grad rule as ``infer_backward``).

Notation, x [N, C, H, W] (``'1'`` = forced replicated; a 5-D x [N, C, D, H, W] adds an axis ``m``)::

    forward   ij11, -, -  ->  ij11, ij, ij              x, scale, bias -> y, saved_mean, saved_variance
    grad      ij11, -, -, ij, ij, ij11  ->  ij11, -, -  x, scale, bias, saved_mean, saved_variance, y_grad
                                                        -> x_grad, scale_grad, bias_grad

N and C keep x's sharding; axes 2 and 3 are cleared **by index**; scale and bias become [-1].
saved_mean / saved_variance have shape [N, C] and take x's N and C mesh dims.

Worked table, 2x3 mesh, x [8,6,4,4] (5-D: [8,6,4,4,4])::

    rule     x                 inputs out                           outputs
    forward  [0,1,-1,-1]       [0,1,-1,-1] [-1] [-1]                [0,1,-1,-1] [0,1] [0,1]
    forward  [1,-1,0,-1]       [1,-1,-1,-1] [-1] [-1]               [1,-1,-1,-1] [1,-1] [1,-1]
    forward  [0,-1,-1,-1,1]    [0,-1,-1,-1,1] ...                   y [0,-1,-1,-1,1] (axis 4 kept)
    grad     [-1,0,-1,1]       x/y_grad [-1,0,-1,-1], scale [-1],   x_grad [-1,0,-1,-1],
             (y_grad ignored)  saved_mean/var [-1,0]                scale_grad/bias_grad [-1] P{0}

Quirks kept on purpose (Paddle 3.3.1 does this):

* PADDLE-QUIRK(in-5d-last-axis): axes 2 and 3 are cleared by index, so a 5-D x keeps a split of
  its last spatial axis (axis 4) in y and x_grad, although instance norm reduces over every
  spatial axis (numerically unsound; the oracle decides).
* PADDLE-QUIRK(in-partial): every answer clears the partial status of every tensor.
* PADDLE-QUIRK(in-grad-ignores): the grad rule reads only x's mapping: y_grad, saved_mean and
  saved_variance take x's (y_grad keeps its own mesh, the statistics theirs); bias is never read
  and is left out of the returned inputs (five: x, scale, saved_mean, saved_variance, y_grad).
* PADDLE-QUIRK(in-grad-partial): scale_grad **and bias_grad** are copies of scale's attr (bias_grad
  takes scale's mesh), [-1] and Partial(SUM) over the mesh dims of x's N and C axes.
* PADDLE-QUIRK(in-grad-message): the grad's y_grad-rank message prints ``[0]`` whatever the rank
  (Paddle formats the tensor, not its rank), and its x-rank messages read "should greater than 1" /
  "should less than 6" (the forward's: "should be ...").

Port-only checks (Paddle crashes or accepts garbage; :mod:`.checks`): x needs a mesh; x of
rank 2 or 3 (Paddle writes past the dims_mapping: SIGABRT, heap corruption); grad: scale None
while N or C is split (Paddle marks partial on an attr without a mesh: SIGSEGV), and any answer
naming a mesh dim that an attr's own mesh lacks (inputs on meshes of other sizes).
"""

from __future__ import annotations

from typing import Any

from ...errors import InvalidSpecError
from ...notation import ALPHABET
from ...types import DistAttr, DistTensorSpec, SpmdResult
from ..kit.checks import RuleFn, rule
from ..kit.raw_mapping import answer_raw, copy_overwriting, merge_raw, read_back, remapped, statistics_forward
from ..kit.strictness import mirror_via
from ..kit.tensor import RuleInput
from .checks import MIRRORED, in_forward_inputs, in_grad_inputs


def _clear_spatial(x: RuleInput) -> tuple[int, ...]:
    """x's mapping with axes 2 and 3 replicated (PADDLE-QUIRK(in-5d-last-axis): by index). A valid
    x merges to itself in Paddle's notation, so this is x's, y's and x_grad's mapping."""
    mapping = list(x.dims_mapping)
    mapping[2] = mapping[3] = -1
    return tuple(mapping)


@rule("instance_norm")
def instance_norm_infer_spmd(
    x: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
    epsilon: float = 1e-5,
) -> SpmdResult:
    """Forward rule. Inputs (x, scale, bias); outputs (y, saved_mean, saved_variance)."""
    tx, ts, tb = in_forward_inputs(x, scale, bias, epsilon)
    kept = _clear_spatial(tx)
    x_attr = tx.attr(kept)           # PADDLE-QUIRK(in-partial): cleared
    stat = tx.attr(kept[:2])         # saved_mean / saved_variance: [N, C] on x's mesh
    return SpmdResult.make(inputs=(x_attr, ts.attr((-1,)), tb.attr((-1,))), outputs=(x_attr, stat, stat))


@rule("instance_norm_grad", others=("saved_mean", "saved_variance", "y_grad", "scale"),
      mesh_of=("x", "scale", "saved_mean", "saved_variance", "y_grad", "x", "scale", "scale"))
def instance_norm_grad_infer_spmd(
    x: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
    saved_mean: DistTensorSpec,
    saved_variance: DistTensorSpec,
    y_grad: DistTensorSpec,
    epsilon: float = 1e-5,
) -> SpmdResult:
    """Grad rule. Inputs (x, scale, bias, saved_mean, saved_variance, y_grad); returned inputs
    (x, scale, saved_mean, saved_variance, y_grad); outputs (x_grad, scale_grad, bias_grad)."""
    tx, ts, _tb, tm, tv, tg = in_grad_inputs(x, scale, bias, saved_mean, saved_variance, y_grad, epsilon)
    kept = _clear_spatial(tx)
    partial = frozenset(m for m in kept[:2] if m != -1)
    if partial and ts.mesh is None:
        what = "None" if ts.missing else "a spec without a process mesh"
        raise InvalidSpecError(
            f"scale is {what} while x's N or C axis is split (mesh dims {sorted(partial)}): Paddle then marks "
            "scale_grad and bias_grad partial on an attr without a mesh and crashes (SIGSEGV); pass a scale "
            "spec on x's mesh or replicate N and C", kind="invalid-spec:scale:none-with-sharded-nc")
    param_grad = DistAttr.make((-1,), partial, ts.mesh)  # PADDLE-QUIRK(in-grad-partial): bias_grad too
    result = SpmdResult.make(
        inputs=(tx.attr(kept), ts.attr((-1,)), tm.attr(kept[:2]), tv.attr(kept[:2]), tg.attr(kept)),
        outputs=(tx.attr(kept), param_grad, param_grad),
    )
    return result


# --------------------------------------------------------------------------- the mirror policy
def _spatial_copy(x: DistTensorSpec) -> tuple[list[int], dict[str, int], str]:
    """Paddle's copy of x's mapping (axes 2 and 3 replicated, by index), its merge, and x's letters."""
    rank = len(x.shape)
    copy = copy_overwriting(x, (2, 3))
    return copy, merge_raw(rank, copy), ALPHABET[:rank]


#: The forward rule on x's raw mapping: x answered with Paddle's copy (_spatial_copy), y and the
#: statistics read back from its merge.
_forward_raw = statistics_forward(_spatial_copy)


def _grad_raw(fn: RuleFn, *args: Any, **kwargs: Any) -> SpmdResult:
    """The grad rule on x's raw mapping: x and y_grad answered with Paddle's copy, the statistics and
    x_grad read back from its merge, scale_grad and bias_grad (both on scale's mesh) partial over the
    copy's N and C mesh dims."""

    def patch(base: SpmdResult, raw: dict[str, Any]) -> SpmdResult:
        copy, merged, letters = _spatial_copy(raw["x"])
        stat = read_back(letters[:2], merged)
        partial = [m for m in copy[:2] if m != -1]
        xi, si, mi, vi, gi = base.inputs
        xg, sg, bg = base.outputs
        return SpmdResult.make(
            inputs=(remapped(xi, copy), si, remapped(mi, stat), remapped(vi, stat), remapped(gi, copy)),
            outputs=(remapped(xg, read_back(letters, merged)), remapped(sg, (-1,), partial, "scale"),
                     remapped(bg, (-1,), partial, "scale")))

    return answer_raw(fn, args, kwargs, patch)


#: The mirror policy: one answer per rule for every refusal :data:`.checks.MIRRORED` names.
MIRRORS = tuple(mirror_via(key, check, _grad_raw if "grad" in key else _forward_raw,
                           f"{key}: Paddle's steps on x's raw mapping (:mod:`~..kit.raw_mapping`).", __name__)
                for key, checks in MIRRORED.items() for check in checks)
