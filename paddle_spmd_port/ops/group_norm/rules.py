"""group_norm: ``GroupNormInferSpmd``, ``GroupNormInferSpmdBase``, ``GroupNormGradInferSpmd``,
``GroupNormGradInferSpmdBase`` (Paddle 3.3.1, measured against its exported C++ functions and its
registry: docs/group_norm-3.3.1.md). The registry's ``group_norm`` runs the forward Base rule
(``infer_forward``, any extra arguments ignored) and has no ``infer_backward``.

Notation, x [N, C, H, W] (``'1'`` = forced replicated; x of rank 3 to 5, in any layout)::

    forward   i111, 1, 1  ->  i111, i1, i1              x, scale, bias -> y, mean, variance
    grad      i111, 1, 1, i111, i1, i1, i111  ->  i111, 1, 1
                                                        x, scale, bias, y, mean, variance, y_grad
                                                        -> x_grad, scale_grad, bias_grad

Only x's axis 0 keeps its sharding; every other axis, the channel axis included, is replicated.
mean and variance are 2-D ``[N, groups]`` and take x's axis-0 mesh dim on axis 0. The ``*Base``
functions are the rules; the others call them and read none of their attributes.

Worked table, 2x3 mesh, x [8,6,4,4] (m = x.dims_mapping[0])::

    rule     x              inputs out                          outputs
    forward  [0,1,-1,-1]    [0,-1,-1,-1] [-1] [-1]              [0,-1,-1,-1] [0,-1] [0,-1]
    forward  [-1,1,-1,0]    [-1,-1,-1,-1] [-1] [-1]             [-1,-1,-1,-1] [-1,-1] [-1,-1]
    forward  NHWC [1,-1,-1,0]  [1,-1,-1,-1] ... (C on axis 3 is not kept either)
    grad     [1,0,-1,-1]    x/y/y_grad [1,-1,-1,-1], scale/bias   x_grad [1,-1,-1,-1],
             (y, y_grad,    [-1], mean/variance [1,-1]          scale_grad/bias_grad [-1] P{1}
              mean ignored)

Quirks kept on purpose (Paddle 3.3.1 does this):

* PADDLE-QUIRK(gn-ignored-attrs): epsilon, groups and data_format are never read: any string
  (``"zz"``, ``""``) and any groups (0, -1, one that does not divide C) are answered alike, and a
  channel-last x keeps only axis 0 too.
* PADDLE-QUIRK(gn-partial): every answer clears the partial status of every input.
* PADDLE-QUIRK(gn-grad-ignores): the grad rule reads only x's mapping: y and y_grad take x's
  filled mapping (each keeps its own mesh), mean and variance ``[m, -1]`` (theirs too).
* PADDLE-QUIRK(gn-grad-partial): scale_grad and bias_grad are ``[-1]`` Partial(SUM) over x's
  axis-0 mesh dim, each on its own tensor's mesh (numerically right: each rank sums its batch slice).
* PADDLE-QUIRK(gn-grad-messages): the grad's x-rank message reads "should grater than 2" (the
  forward's: "should be greater than 2"); a mean or variance not 2-D is reported as "The ndim of
  bias in group_norm should be 2, but got [1]." whatever its rank.

Port-only checks (Paddle crashes or accepts garbage; :mod:`.checks`): first, a partial dim
outside its spec's mesh (Paddle segfaults building that input, before its own checks); x needs a
mesh (without one Paddle segfaults or answers on an attr without a mesh); a dims_mapping shorter
than the rank (SIGABRT) and the rest of each spec's own check; grad: scale or bias None (or without a
mesh) while x's axis 0 is split (Paddle marks partial on an attr without a mesh: SIGSEGV), and any
answer naming a mesh dim that an attr's own mesh lacks (inputs on meshes of other sizes: Paddle
segfaults, or answers y / mean / variance / y_grad with a mesh dim their mesh lacks).
"""

from __future__ import annotations

from typing import Any

from ...errors import InvalidSpecError
from ...notation import ALPHABET
from ...types import DistAttr, DistTensorSpec, SpmdResult
from ..kit.checks import Attrs, RuleFn, Specs, rule
from ..kit.raw_mapping import answer_raw, copy_overwriting, merge_raw, read_back, remapped, statistics_forward
from ..kit.strictness import mirror_via
from ..kit.tensor import RuleInput
from .checks import MIRRORED, gn_forward_inputs, gn_grad_inputs


def _keep_batch_only(x: RuleInput) -> tuple[int, ...]:
    """x's mapping with every axis but 0 replicated. Paddle merges it alone in x's notation, and a
    valid x merges to itself, so this is x's, y's and x_grad's mapping."""
    return (x.dims_mapping[0],) + (-1,) * (x.ndim - 1)


def _forward(tx: RuleInput, ts: RuleInput, tb: RuleInput) -> SpmdResult:
    kept = _keep_batch_only(tx)
    x_attr = tx.attr(kept)          # PADDLE-QUIRK(gn-partial): cleared
    stat = tx.attr((kept[0], -1))   # mean / variance [N, groups] on x's mesh
    return SpmdResult.make(inputs=(x_attr, ts.attr((-1,)), tb.attr((-1,))), outputs=(x_attr, stat, stat))


@rule("group_norm_base")
def group_norm_infer_spmd_base(
    x: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
) -> SpmdResult:
    """Forward rule (the registry's ``group_norm``). Inputs (x, scale, bias); outputs (y, mean,
    variance)."""
    return _forward(*gn_forward_inputs(x, scale, bias, ()))


@rule("group_norm")
def group_norm_infer_spmd(
    x: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
    epsilon: float = 1e-5,
    groups: int = -1,
    data_format: str = "NCHW",
) -> SpmdResult:
    """The forward rule with the op's attributes: their types are checked, their values ignored
    (PADDLE-QUIRK(gn-ignored-attrs))."""
    return _forward(*gn_forward_inputs(x, scale, bias, (("epsilon", epsilon), ("groups", groups),
                                                        ("data_format", data_format))))


#: The grads' answer check (:func:`~paddle_spmd_port.ops.kit.checks.rule`): x's axis-0 mesh dim lands on
#: every tensor's attr, each on its own mesh.
_GRAD_OTHERS = ("y", "mean", "variance", "y_grad", "scale", "bias")
_GRAD_MESH_OF = ("x", "scale", "bias", "y", "mean", "variance", "y_grad", "x", "scale", "bias")


def _grad(tx: RuleInput, ts: RuleInput, tb: RuleInput, ty: RuleInput, tm: RuleInput, tv: RuleInput,
          tg: RuleInput) -> SpmdResult:
    kept = _keep_batch_only(tx)
    partial = frozenset(kept[:1]) - {-1}
    if partial:
        for t in (ts, tb):
            if t.mesh is None:
                what = "None" if t.missing else "a spec without a process mesh"
                raise InvalidSpecError(
                    f"{t.name} is {what} while x's axis 0 is split along mesh dim {kept[0]}: Paddle then marks "
                    f"{t.name}_grad partial on an attr without a mesh and crashes (SIGSEGV); pass a {t.name} spec "
                    "on x's mesh or replicate x's axis 0", kind=f"invalid-spec:{t.name}:none-with-sharded-n")
    stat = (kept[0], -1)
    result = SpmdResult.make(  # PADDLE-QUIRK(gn-grad-ignores): every mapping from x's
        inputs=(tx.attr(kept), ts.attr((-1,)), tb.attr((-1,)), ty.attr(kept), tm.attr(stat), tv.attr(stat),
                tg.attr(kept)),
        outputs=(tx.attr(kept),
                 DistAttr.make((-1,), partial, ts.mesh),  # PADDLE-QUIRK(gn-grad-partial)
                 DistAttr.make((-1,), partial, tb.mesh)),
    )
    return result


@rule("group_norm_grad_base", packed=True, others=_GRAD_OTHERS, mesh_of=_GRAD_MESH_OF)
def group_norm_grad_infer_spmd_base(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Grad rule. Inputs (x, scale, bias, y, mean, variance, y_grad); outputs (x_grad, scale_grad,
    bias_grad)."""
    x, scale, bias, y, mean, variance, y_grad = specs
    return _grad(*gn_grad_inputs(x, scale, bias, y, mean, variance, y_grad, attrs))


@rule("group_norm_grad", packed=True, others=_GRAD_OTHERS, mesh_of=_GRAD_MESH_OF)
def group_norm_grad_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """The grad rule with the op's attributes: their types are checked, their values ignored
    (PADDLE-QUIRK(gn-ignored-attrs))."""
    x, scale, bias, y, mean, variance, y_grad = specs
    return _grad(*gn_grad_inputs(x, scale, bias, y, mean, variance, y_grad, attrs))


# --------------------------------------------------------------------------- the mirror policy
def _batch_copy(x: DistTensorSpec) -> tuple[list[int], dict[str, int], str]:
    """Paddle's copy of x's mapping (every axis but 0 replicated), its merge, and x's letters."""
    rank = len(x.shape)
    copy = copy_overwriting(x, range(1, rank))
    return copy, merge_raw(rank, copy), ALPHABET[:rank]


#: The forward rules on x's raw mapping: x answered with Paddle's copy (_batch_copy), y and the
#: statistics read back from its merge.
_forward_raw = statistics_forward(_batch_copy)


def _grad_raw(fn: RuleFn, *args: Any, **kwargs: Any) -> SpmdResult:
    """The grad rules on x's raw mapping: x, y and y_grad answered with Paddle's copy, mean, variance
    and x_grad read back from its merge, scale_grad and bias_grad partial over the copy's mesh dims."""

    def patch(base: SpmdResult, raw: dict[str, Any]) -> SpmdResult:
        copy, merged, letters = _batch_copy(raw["x"])
        stat = read_back(letters[:2], merged)
        partial = [m for m in copy[:len(letters)] if m != -1]
        xi, si, bi, yi, mi, vi, gi = base.inputs
        xg, sg, bg = base.outputs
        return SpmdResult.make(
            inputs=(remapped(xi, copy), si, bi, remapped(yi, copy), remapped(mi, stat), remapped(vi, stat),
                    remapped(gi, copy)),
            outputs=(remapped(xg, read_back(letters, merged)), remapped(sg, (-1,), partial, "scale"),
                     remapped(bg, (-1,), partial, "bias")))

    return answer_raw(fn, args, kwargs, patch)


#: The mirror policy: one answer per rule for every refusal :data:`.checks.MIRRORED` names.
MIRRORS = tuple(mirror_via(key, check, _grad_raw if "grad" in key else _forward_raw,
                           f"{key}: Paddle's steps on x's raw mapping (:mod:`~..kit.raw_mapping`).", __name__)
                for key, checks in MIRRORED.items() for check in checks)
