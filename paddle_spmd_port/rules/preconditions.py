"""The checks every profile runs before it answers: one copy, so ``paddle``, ``pr72918`` and
``proposed`` raise the same error, with the same message, for the same input.

Each preamble wraps the tensors (:func:`~._tensor.as_input`), checks the argument types
(tensors, then attributes, in signature order), then, in this order (the ``paddle`` profile's,
compared against Paddle 3.3.1; P = Paddle's own check, a PaddleInvalidArgument with its message;
port = InvalidSpecError, where Paddle crashes or accepts garbage)::

    preamble            checks after the types
    bn_forward_inputs   P x rank 2..5; P mean, variance, scale, bias 1-D; port x on a mesh, specs valid
    bn_grad_inputs      P x rank 2..5; P out_grad rank == x's; P 1-D in Paddle's order: mean_out,
                        variance_out, scale, bias, saved_mean, saved_variance (those the rule has);
                        P reserve_space 1-D; port x on a mesh, specs valid
    ln_forward_inputs   P scale, bias 1-D; port x on a mesh, specs valid, begin_norm_axis
    ln_reverse_inputs   P out, mean, variance: rank == len(dims_mapping); port x on a mesh, specs
                        valid, begin_norm_axis, ranks of out/mean/variance, scale/bias 1-D
    ln_grad_inputs      P 0 <= b <= rank(x); P rank pairs x/out_grad, scale/bias, mean/variance;
                        port x on a mesh, specs valid, begin_norm_axis, mean's rank, mean/variance/
                        out_grad on a mesh

``begin_norm_axis``: x of rank 1..18 and ``0 <= b <= rank(x)``. batch_norm's data_format is
checked by :func:`.signatures.channel_axis` (the PR #72918 rules do not read it).

Messages name ``batch_norm`` also for sync_batch_norm (the proposal's messages do), and the
rank-2 reserve_space message says ``reserve_space_ndim``, as Paddle's does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InvalidSpecError, PaddleInvalidArgument
from ..notation import ALPHABET
from ..types import DistTensorSpec
from ._tensor import (
    EXACT_ATTR_TYPES,
    RuleInput,
    as_input,
    attrs_exact,
    check_attrs,
    check_specs,
    require_ndim,
    require_x_mesh,
    valid_inputs,
)
from .signatures import GRAD_OPTIONAL, RULES

BN = "batch_norm"
LN = "layer_norm"

#: Paddle's order of the grad rule's 1-D checks (not the signature order).
_BN_GRAD_1D = ("mean_out", "variance_out", "scale", "bias", "saved_mean", "saved_variance")


# --------------------------------------------------------------------------- the fast path
# Each preamble first tries the common case in one pass: every tensor a spec of the class itself,
# on a mesh and valid by its own check (co-shards read as Paddle's getter does), or None where the
# signature allows it, every attribute of its usual exact type, and every rank what the op needs.
# None of the full checks can raise on such input, so the inputs are built at once. Anything else
# takes the full checks in their order: every error, its message and which error comes first are
# the full path's by construction (tests/test_preconditions.py: both paths give equal inputs).

def _names(rule_key: str) -> tuple[tuple[str, bool], ...]:
    """(name, optional) per tensor of ``rule_key``, from the signature table."""
    sig = RULES[rule_key]
    return tuple((name, name in sig.optional) for name in sig.inputs)


_BN_FORWARD, _LN_FORWARD = _names("batch_norm"), _names("layer_norm")
_LN_REVERSE, _LN_GRAD = _names("layer_norm_reverse"), _names("layer_norm_grad")
_REAL = EXACT_ATTR_TYPES["epsilon"]


# --------------------------------------------------------------------------- batch_norm family
def check_bn_x_rank(x: RuleInput) -> None:
    """Paddle's x-rank check of batch_norm: 2 <= rank <= 5."""
    if x.ndim < 2:
        raise PaddleInvalidArgument(f"The ndim of x in batch_norm should be greater than 1, but got [{x.ndim}].",
                                    kind="ndim:x:min")
    if x.ndim > 5:
        raise PaddleInvalidArgument(f"The ndim of x in batch_norm should be less than 6, but got [{x.ndim}].",
                                    kind="ndim:x:max")


def bn_forward_inputs(x: DistTensorSpec, mean: DistTensorSpec, variance: DistTensorSpec,
                      scale: DistTensorSpec | None, bias: DistTensorSpec | None,
                      attrs: Sequence[tuple[str, Any]]) -> tuple[RuleInput, RuleInput, RuleInput, RuleInput, RuleInput]:
    """The forward rules' checks; ``attrs`` in signature order. Returns (x, mean, variance, scale, bias)."""
    ready = valid_inputs((x, mean, variance, scale, bias), _BN_FORWARD)
    if ready is not None and attrs_exact(attrs) and 2 <= ready[0].ndim <= 5 \
            and ready[1].ndim == ready[2].ndim == ready[3].ndim == ready[4].ndim == 1:
        tx, tm, tv, ts, tb = ready
        return tx, tm, tv, ts, tb
    tx, tm, tv = as_input(x, "x"), as_input(mean, "mean"), as_input(variance, "variance")
    ts, tb = as_input(scale, "scale", optional=True), as_input(bias, "bias", optional=True)
    check_attrs(*attrs)
    check_bn_x_rank(tx)
    for t in (tm, tv, ts, tb):
        require_ndim(t, 1, BN)
    require_x_mesh(tx)
    check_specs(("x", x), ("mean", mean), ("variance", variance), ("scale", scale), ("bias", bias))
    return tx, tm, tv, ts, tb


def bn_grad_inputs(named: Sequence[tuple[str, DistTensorSpec | None]],
                   attrs: Sequence[tuple[str, Any]]) -> dict[str, RuleInput]:
    """The grad rules' checks (batch_norm_grad and sync_batch_norm_grad): ``named`` are the
    tensors in signature order, ``attrs`` the attributes. Returns the wrapped tensors by name."""
    ready = valid_inputs([spec for _, spec in named], [(name, name in GRAD_OPTIONAL) for name, _ in named])
    if ready is not None and attrs_exact(attrs) and 2 <= ready[0].ndim <= 5:
        by_name = {t.name: t for t in ready}
        if by_name["out_grad"].ndim == ready[0].ndim and \
                all(t.ndim == 1 for t in ready if t.name != "x" and t.name != "out_grad"):
            return by_name
    t = {name: as_input(spec, name, optional=name in GRAD_OPTIONAL) for name, spec in named}
    check_attrs(*attrs)
    tx, tg = t["x"], t["out_grad"]
    check_bn_x_rank(tx)
    if tg.ndim != tx.ndim:
        raise PaddleInvalidArgument(
            "The ndim of out_grad in batch_norm should be equal with x, "
            f"but got out_grad:[{tg.ndim}] and x:[{tx.ndim}].",
            kind="ndim:out_grad")
    for name in _BN_GRAD_1D:
        if name in t:
            require_ndim(t[name], 1, BN)
    if t["reserve_space"].ndim != 1:  # Paddle's message names it "reserve_space_ndim"
        raise PaddleInvalidArgument(
            f"The ndim of reserve_space_ndim in batch_norm should be 1, but got [{t['reserve_space'].ndim}].",
            kind="ndim:reserve_space")
    require_x_mesh(tx)
    check_specs(*named)
    return t


# --------------------------------------------------------------------------- layer_norm
def check_begin_norm_axis(begin_norm_axis: int, x: RuleInput) -> None:
    """Port-only: x of rank 1..18 (the notation's letters) and ``0 <= begin_norm_axis <= rank(x)``."""
    check_attrs(("begin_norm_axis", begin_norm_axis))
    if x.ndim < 1:
        raise InvalidSpecError("x must have rank >= 1 for layer_norm", kind="invalid-spec:x:rank")
    if x.ndim > len(ALPHABET):
        raise InvalidSpecError(f"x has rank {x.ndim}; layer_norm's notation names at most {len(ALPHABET)} axes",
                               kind="invalid-spec:x:rank")
    if not 0 <= begin_norm_axis <= x.ndim:
        raise InvalidSpecError(
            f"begin_norm_axis={begin_norm_axis} is outside 0..{x.ndim} for x of rank {x.ndim}; "
            f"pass a value in that range (x.ndim - len(normalized_shape))",
            kind="invalid-spec:begin_norm_axis")


def require_rank(t: RuleInput, want: int, why: str) -> None:
    if t.ndim != want:
        raise InvalidSpecError(f"{t.name} has rank {t.ndim}, but {why} requires rank {want}",
                               kind=f"invalid-spec:{t.name}:rank")


def require_1d_params(*params: RuleInput) -> None:
    """scale/bias of the reverse rule: 1-D (or None), else the ``[-1]`` answer would not fit them."""
    for t in params:
        if not t.missing:
            require_rank(t, 1, "layer_norm's scale/bias (the normalised sizes, flattened; the rule answers [-1])")


def require_grad_meshes(*tensors: RuleInput) -> None:
    """mean, variance, out_grad of the grad rule: a spec without a mesh (dims_mapping ``[]``) of
    rank >= 1 makes Paddle read its mapping past the end (a crash, or a mesh dim answered on an
    attr without a mesh)."""
    for t in tensors:
        if t.mesh is None and t.ndim > 0:
            raise InvalidSpecError(
                f"{t.name} has no process mesh; layer_norm_grad reads its dims_mapping (Paddle crashes or "
                f"answers a mesh dim on an attr without a mesh); give {t.name} a ProcessMesh",
                kind=f"invalid-spec:{t.name}:mesh")


def ln_forward_inputs(x: DistTensorSpec, scale: DistTensorSpec | None, bias: DistTensorSpec | None,
                      epsilon: float, begin_norm_axis: int) -> tuple[RuleInput, RuleInput, RuleInput]:
    """The forward rule's checks. Returns (x, scale, bias)."""
    ready = valid_inputs((x, scale, bias), _LN_FORWARD)
    if ready is not None and type(epsilon) in _REAL and type(begin_norm_axis) is int:
        tx, ts, tb = ready
        if ts.ndim == tb.ndim == 1 and 0 <= begin_norm_axis <= tx.ndim and 1 <= tx.ndim <= len(ALPHABET):
            return tx, ts, tb
    tx, ts, tb = as_input(x, "x"), as_input(scale, "scale", optional=True), as_input(bias, "bias", optional=True)
    check_attrs(("epsilon", epsilon), ("begin_norm_axis", begin_norm_axis))
    require_ndim(ts, 1, LN)
    require_ndim(tb, 1, LN)
    require_x_mesh(tx)
    check_specs(("x", x), ("scale", scale), ("bias", bias))
    check_begin_norm_axis(begin_norm_axis, tx)
    return tx, ts, tb


def ln_reverse_inputs(x: DistTensorSpec, scale: DistTensorSpec | None, bias: DistTensorSpec | None,
                      out: DistTensorSpec, mean: DistTensorSpec, variance: DistTensorSpec, epsilon: float,
                      begin_norm_axis: int) -> tuple[RuleInput, ...]:
    """The reverse rule's checks. Returns (x, scale, bias, out, mean, variance)."""
    ready = valid_inputs((x, scale, bias, out, mean, variance), _LN_REVERSE)
    if ready is not None and type(epsilon) in _REAL and type(begin_norm_axis) is int:
        tx, ts, tb, to, tm, tv = ready
        if 0 <= begin_norm_axis <= tx.ndim and 1 <= tx.ndim <= len(ALPHABET) and to.ndim == tx.ndim \
                and tm.ndim == tv.ndim == begin_norm_axis and ts.ndim == tb.ndim == 1:
            return tx, ts, tb, to, tm, tv
    tx, ts, tb = as_input(x, "x"), as_input(scale, "scale", optional=True), as_input(bias, "bias", optional=True)
    to, tm, tv = as_input(out, "out"), as_input(mean, "mean"), as_input(variance, "variance")
    check_attrs(("epsilon", epsilon), ("begin_norm_axis", begin_norm_axis))
    for t, label in ((to, "Out"), (tm, "Mean"), (tv, "Variance")):
        if t.ndim != len(t.dims_mapping):
            raise PaddleInvalidArgument(
                f"The Tensor {label}'s rank [{t.ndim}] and {label}'s dims_mapping size [{len(t.dims_mapping)}] "
                "are not matched.", kind=f"rank-vs-mapping:{t.name}")
    require_x_mesh(tx)
    check_specs(("x", x), ("scale", scale), ("bias", bias), ("out", out), ("mean", mean), ("variance", variance))
    check_begin_norm_axis(begin_norm_axis, tx)
    require_rank(to, tx.ndim, "out = layer_norm(x)")
    require_rank(tm, begin_norm_axis, "mean of shape x.shape[:begin_norm_axis]")
    require_rank(tv, begin_norm_axis, "variance of shape x.shape[:begin_norm_axis]")
    require_1d_params(ts, tb)
    return tx, ts, tb, to, tm, tv


def ln_grad_inputs(x: DistTensorSpec, scale: DistTensorSpec | None, bias: DistTensorSpec | None,
                   mean: DistTensorSpec, variance: DistTensorSpec, out_grad: DistTensorSpec, epsilon: float,
                   begin_norm_axis: int) -> tuple[RuleInput, ...]:
    """The grad rule's checks. Returns (x, scale, bias, mean, variance, out_grad)."""
    ready = valid_inputs((x, scale, bias, mean, variance, out_grad), _LN_GRAD)
    if ready is not None and type(epsilon) in _REAL and type(begin_norm_axis) is int:
        tx, ts, tb, tm, tv, tg = ready
        if 0 <= begin_norm_axis <= tx.ndim and 1 <= tx.ndim <= len(ALPHABET) and tg.ndim == tx.ndim \
                and ts.ndim == tb.ndim and tm.ndim == tv.ndim == begin_norm_axis:
            return tx, ts, tb, tm, tv, tg
    tx, ts, tb = as_input(x, "x"), as_input(scale, "scale", optional=True), as_input(bias, "bias", optional=True)
    tm, tv, tg = as_input(mean, "mean"), as_input(variance, "variance"), as_input(out_grad, "out_grad")
    check_attrs(("epsilon", epsilon), ("begin_norm_axis", begin_norm_axis))
    if begin_norm_axis < 0 or tx.ndim < begin_norm_axis:  # Paddle compares unsigned: negative b fails too
        raise PaddleInvalidArgument(
            f"The Tensor x's rank [{tx.ndim}] and begin_norm_axis [{begin_norm_axis}] are not matched.",
            kind="rank-vs-begin_norm_axis")
    for a, b_, label in ((tx, tg, "x's rank [{}] and Tensor out_grad's"),
                         (ts, tb, "scale's rank [{}] and Tensor bias's"),
                         (tm, tv, "mean's rank [{}] and Tensor variance's")):
        if a.ndim != b_.ndim:
            raise PaddleInvalidArgument(f"The Tensor {label.format(a.ndim)} rank [{b_.ndim}] are not matched.",
                                        kind=f"rank:{a.name}-vs-{b_.name}")
    require_x_mesh(tx)
    check_specs(("x", x), ("scale", scale), ("bias", bias), ("mean", mean), ("variance", variance),
                ("out_grad", out_grad))
    check_begin_norm_axis(begin_norm_axis, tx)
    require_rank(tm, begin_norm_axis, "mean of shape x.shape[:begin_norm_axis]")
    require_grad_meshes(tm, tv, tg)
    return tx, ts, tb, tm, tv, tg
