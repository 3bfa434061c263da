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
    gn_forward_inputs   P x rank 3..5; P scale, bias 1-D; port x on a mesh, specs valid
    gn_grad_inputs      P x rank 3..5; P y, y_grad rank == x's; P scale, bias 1-D; P mean, variance
                        2-D; port x on a mesh, specs valid

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
_IN_FORWARD, _IN_GRAD = _names("instance_norm"), _names("instance_norm_grad")
_RMS_FORWARD, _RMS_REVERSE, _RMS_GRAD = _names("rms_norm"), _names("rms_norm_reverse"), _names("rms_norm_grad")
_GN_FORWARD, _GN_GRAD = _names("group_norm"), _names("group_norm_grad")
_REAL = EXACT_ATTR_TYPES["epsilon"]


# --------------------------------------------------------------------------- batch_norm family
def check_bn_x_rank(x: RuleInput, op: str = "batch_norm") -> None:
    """Paddle's x-rank check of batch_norm (and instance_norm's forward, same words): 2 <= rank <= 5."""
    if x.ndim < 2:
        raise PaddleInvalidArgument(f"The ndim of x in {op} should be greater than 1, but got [{x.ndim}].",
                                    kind="ndim:x:min")
    if x.ndim > 5:
        raise PaddleInvalidArgument(f"The ndim of x in {op} should be less than 6, but got [{x.ndim}].",
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


# --------------------------------------------------------------------------- instance_norm
IN = "instance_norm"


def in_forward_inputs(x: DistTensorSpec, scale: DistTensorSpec | None, bias: DistTensorSpec | None,
                      epsilon: float) -> tuple[RuleInput, RuleInput, RuleInput]:
    """instance_norm's forward checks: P x rank 2..5, scale and bias 1-D; port x on a mesh, specs
    valid, x rank 4 or 5. Returns (x, scale, bias)."""
    ready = valid_inputs((x, scale, bias), _IN_FORWARD)
    if ready is not None and type(epsilon) in _REAL:
        tx, ts, tb = ready
        if 4 <= tx.ndim <= 5 and ts.ndim == tb.ndim == 1:
            return tx, ts, tb
    tx, ts, tb = as_input(x, "x"), as_input(scale, "scale", optional=True), as_input(bias, "bias", optional=True)
    check_attrs(("epsilon", epsilon))
    require_buildable(("x", x), ("scale", scale), ("bias", bias))
    check_bn_x_rank(tx, IN)
    require_ndim(ts, 1, IN)
    require_ndim(tb, 1, IN)
    require_x_mesh(tx)
    check_specs(("x", x), ("scale", scale), ("bias", bias))
    require_in_spatial_axes(tx)
    return tx, ts, tb


def in_grad_inputs(x: DistTensorSpec, scale: DistTensorSpec | None, bias: DistTensorSpec | None,
                   saved_mean: DistTensorSpec, saved_variance: DistTensorSpec, y_grad: DistTensorSpec,
                   epsilon: float) -> tuple[RuleInput, ...]:
    """instance_norm's grad checks, Paddle's in its order: x rank 2..5 (the grad's own wording),
    y_grad's rank == x's (the message prints ``[0]`` whatever the rank: PADDLE-QUIRK(in-grad-message)),
    scale 1-D, saved_mean and saved_variance 2-D; bias is never read. Then the port's: x on a mesh,
    specs valid, x rank 4 or 5. Returns (x, scale, bias, saved_mean, saved_variance, y_grad)."""
    ready = valid_inputs((x, scale, bias, saved_mean, saved_variance, y_grad), _IN_GRAD)
    if ready is not None and type(epsilon) in _REAL:
        tx, ts, tb, tm, tv, tg = ready  # bias is never read: any rank passes
        if 4 <= tx.ndim <= 5 and tg.ndim == tx.ndim and ts.ndim == 1 and tm.ndim == tv.ndim == 2:
            return tx, ts, tb, tm, tv, tg
    tx, ts, tb = as_input(x, "x"), as_input(scale, "scale", optional=True), as_input(bias, "bias", optional=True)
    tm, tv = as_input(saved_mean, "saved_mean"), as_input(saved_variance, "saved_variance")
    tg = as_input(y_grad, "y_grad")
    check_attrs(("epsilon", epsilon))
    require_buildable(("x", x), ("scale", scale), ("bias", bias), ("saved_mean", saved_mean),
                      ("saved_variance", saved_variance), ("y_grad", y_grad))
    if tx.ndim < 2:
        raise PaddleInvalidArgument(f"The ndim of x in {IN} should greater than 1, but got [{tx.ndim}].",
                                    kind="ndim:x:min")
    if tx.ndim > 5:
        raise PaddleInvalidArgument(f"The ndim of x in {IN} should less than 6, but got [{tx.ndim}].",
                                    kind="ndim:x:max")
    if tg.ndim != tx.ndim:
        raise PaddleInvalidArgument(f"The ndim of y_grad in {IN} should be equal with x, but got [0].",
                                    kind="ndim:y_grad")
    require_ndim(ts, 1, IN)
    require_ndim(tm, 2, IN)
    require_ndim(tv, 2, IN)
    require_x_mesh(tx)
    check_specs(("x", x), ("scale", scale), ("bias", bias), ("saved_mean", saved_mean),
                ("saved_variance", saved_variance), ("y_grad", y_grad))
    require_in_spatial_axes(tx)
    return tx, ts, tb, tm, tv, tg


def require_in_spatial_axes(x: RuleInput) -> None:
    """Port-only: Paddle clears x's axes 2 and 3 (the spatial axes of NCHW) by index, so a 2-D or
    3-D x makes it write past the end of the dims_mapping (SIGABRT, heap corruption; a few runs
    answer garbage)."""
    if x.ndim < 4:
        raise InvalidSpecError(
            f"x has rank {x.ndim}; Paddle's instance_norm rule clears axes 2 and 3 by index and corrupts "
            "its heap (SIGABRT) for a 2-D or 3-D x; pass x as [N, C, H, W] or [N, C, D, H, W] "
            "(reshape an [N, C, L] input to [N, C, L, 1])", kind="invalid-spec:x:rank")


# --------------------------------------------------------------------------- rms_norm
#: Where Paddle 3.3.1's rms_norm rules check each tensor's rank against its dims_mapping size: the
#: message carries the build's file name and line (measured; the compiled caller and the registry
#: raise the same text).
RMS_SOURCE = "/paddle/paddle/phi/infermeta/spmd_rules/rms_norm.cc"
RMS_CHECK_LINES = {
    "rms_norm": {"x": 32, "scale": 33},
    "rms_norm_reverse": {"x": 84, "scale": 85, "out": 86, "invvar": 87},
    "rms_norm_grad": {"x": 146, "scale": 147, "invvar": 148, "out_grad": 149},
}


def require_buildable(*named: tuple[str, DistTensorSpec | None]) -> None:
    """Port-only, before Paddle's own checks: a partial dim outside a spec's mesh (or on a spec
    without one) crashes Paddle while it builds the input's dist attr (SIGSEGV), before any rule
    check runs; the spec's own check names it."""
    for name, spec in named:
        if spec is not None and spec.partial_dims and (
                spec.mesh is None or any(not 0 <= p < spec.mesh.ndim for p in spec.partial_dims)):
            spec.check(name)


def _rms_rank_vs_mapping(rule_key: str, *tensors: RuleInput) -> None:
    """Paddle's first check in every rms_norm rule: each tensor's rank equals its dims_mapping's
    length (a None scale, a [0]-shaped stand-in with an empty mapping, fails it)."""
    for t in tensors:
        if t.ndim != len(t.dims_mapping):
            raise PaddleInvalidArgument(
                f"[{RMS_SOURCE}] [{RMS_CHECK_LINES[rule_key][t.name]}] The Tensor [{t.name}]'s rank [{t.ndim}] "
                f"and dims_mapping size [{len(t.dims_mapping)}] are not matched.", kind=f"rank-vs-mapping:{t.name}")


def _require_rms_rank(t: RuleInput, want: int, why: str) -> None:
    if t.ndim != want:
        raise InvalidSpecError(f"{t.name} has rank {t.ndim}, but {why} requires rank {want} (Paddle answers "
                               f"garbage or reads past its notation); pass {t.name} of rank {want}",
                               kind=f"invalid-spec:{t.name}:rank")


def rms_forward_inputs(x: DistTensorSpec, scale: DistTensorSpec, epsilon: float) -> tuple[RuleInput, RuleInput]:
    """rms_norm's forward checks: P rank vs dims_mapping of x, scale; port x on a mesh, specs valid,
    x rank >= 1 (rank 0: Paddle raises a bare ``basic_string::_M_create``), scale 1-D (Paddle
    answers ``[-1]`` for any rank). Returns (x, scale)."""
    ready = valid_inputs((x, scale), _RMS_FORWARD)
    if ready is not None and type(epsilon) in _REAL:
        tx, ts = ready  # a None scale fails Paddle's rank-vs-mapping check: the full checks say so
        if not ts.missing and 1 <= tx.ndim <= len(ALPHABET) and ts.ndim == 1:
            return tx, ts
    tx, ts = as_input(x, "x"), as_input(scale, "scale", optional=True)
    check_attrs(("epsilon", epsilon))
    require_buildable(("x", x), ("scale", scale))
    _rms_rank_vs_mapping("rms_norm", tx, ts)
    require_x_mesh(tx)
    check_specs(("x", x), ("scale", scale))
    _require_rms_x_rank(tx)
    _require_rms_rank(ts, 1, "rms_norm's scale (the size of x's last axis; the rule answers [-1])")
    return tx, ts


def _require_rms_x_rank(x: RuleInput) -> None:
    if x.ndim < 1:
        raise InvalidSpecError("x has rank 0; rms_norm normalises x's last axis (Paddle raises a bare "
                               "basic_string::_M_create); pass x of rank >= 1", kind="invalid-spec:x:rank")
    if x.ndim > len(ALPHABET):
        raise InvalidSpecError(f"x has rank {x.ndim}; rms_norm's notation names at most {len(ALPHABET)} axes",
                               kind="invalid-spec:x:rank")


def rms_reverse_inputs(x: DistTensorSpec, scale: DistTensorSpec, out: DistTensorSpec, invvar: DistTensorSpec,
                       epsilon: float) -> tuple[RuleInput, RuleInput, RuleInput, RuleInput]:
    """rms_norm's reverse checks: P rank vs dims_mapping of x, scale, out, invvar; port x on a mesh,
    specs valid, x rank >= 1, out's rank x's and invvar's one less (Paddle builds the notation from
    out's rank and answers garbage otherwise), scale 1-D. Returns (x, scale, out, invvar)."""
    ready = valid_inputs((x, scale, out, invvar), _RMS_REVERSE)
    if ready is not None and type(epsilon) in _REAL:
        tx, ts, to, tv = ready
        if not ts.missing and 1 <= tx.ndim <= len(ALPHABET) and to.ndim == tx.ndim and tv.ndim == tx.ndim - 1 \
                and ts.ndim == 1:
            return tx, ts, to, tv
    tx, ts = as_input(x, "x"), as_input(scale, "scale", optional=True)
    to, tv = as_input(out, "out"), as_input(invvar, "invvar")
    check_attrs(("epsilon", epsilon))
    require_buildable(("x", x), ("scale", scale), ("out", out), ("invvar", invvar))
    _rms_rank_vs_mapping("rms_norm_reverse", tx, ts, to, tv)
    require_x_mesh(tx)
    check_specs(("x", x), ("scale", scale), ("out", out), ("invvar", invvar))
    _require_rms_x_rank(tx)
    _require_rms_rank(to, tx.ndim, "out = rms_norm(x)")
    _require_rms_rank(tv, tx.ndim - 1, "invvar of shape x.shape[:-1]")
    _require_rms_rank(ts, 1, "rms_norm's scale (the size of x's last axis; the rule answers [-1])")
    return tx, ts, to, tv


def rms_grad_inputs(x: DistTensorSpec, scale: DistTensorSpec, invvar: DistTensorSpec, out_grad: DistTensorSpec,
                    epsilon: float) -> tuple[RuleInput, RuleInput, RuleInput, RuleInput]:
    """rms_norm's grad checks: P rank vs dims_mapping of x, scale, invvar, out_grad; P x's rank ==
    out_grad's; P x rank >= 2 (``align_axis is empty``); port x on a mesh, specs valid, invvar of
    rank ndim - 1, x / invvar / out_grad on meshes of x's number of dims (Paddle reads their
    placements by x's mesh dims: past the end on a smaller mesh, SIGSEGV). Returns (x, scale,
    invvar, out_grad)."""
    ready = valid_inputs((x, scale, invvar, out_grad), _RMS_GRAD)
    if ready is not None and type(epsilon) in _REAL:
        tx, ts, tv, tg = ready
        if not ts.missing and 2 <= tx.ndim <= len(ALPHABET) and tg.ndim == tx.ndim and tv.ndim == tx.ndim - 1 \
                and len(tv.mesh.shape) == len(tg.mesh.shape) == len(tx.mesh.shape):  # type: ignore[union-attr]
            return tx, ts, tv, tg
    tx, ts = as_input(x, "x"), as_input(scale, "scale", optional=True)
    tv, tg = as_input(invvar, "invvar"), as_input(out_grad, "out_grad")
    check_attrs(("epsilon", epsilon))
    require_buildable(("x", x), ("scale", scale), ("invvar", invvar), ("out_grad", out_grad))
    _rms_rank_vs_mapping("rms_norm_grad", tx, ts, tv, tg)
    if tx.ndim != tg.ndim:
        raise PaddleInvalidArgument(f"The Tensor x's rank [{tx.ndim}] and Tensor out_grad's rank [{tg.ndim}] are "
                                    "not matched.", kind="rank:x-vs-out_grad")
    if tx.ndim < 2:
        raise PaddleInvalidArgument("align_axis is empty", kind="rank:x:align")
    require_x_mesh(tx)
    check_specs(("x", x), ("scale", scale), ("invvar", invvar), ("out_grad", out_grad))
    _require_rms_x_rank(tx)
    _require_rms_rank(tv, tx.ndim - 1, "invvar of shape x.shape[:-1]")
    for t in (tv, tg):
        if t.mesh is None or t.mesh.ndim != tx.mesh.ndim:  # type: ignore[union-attr]
            where = "has no process mesh" if t.mesh is None else f"is on mesh {t.mesh}"
            raise InvalidSpecError(
                f"{t.name} {where} while x is on mesh {tx.mesh}: rms_norm_grad reads {t.name}'s placement on "
                f"every mesh dim of x's mesh (Paddle reads past the end or answers mesh dims the mesh lacks); "
                f"put {t.name} on a mesh with as many dims as x's", kind=f"invalid-spec:{t.name}:mixed-mesh")
    return tx, ts, tv, tg


# --------------------------------------------------------------------------- group_norm
GN = "group_norm"


def _gn_x_rank(x: RuleInput, low_message: str) -> None:
    """Paddle's x-rank check of group_norm: 3 <= rank <= 5 (the grad words the lower bound its own
    way: PADDLE-QUIRK(gn-grad-messages))."""
    if x.ndim < 3:
        raise PaddleInvalidArgument(f"The ndim of x in {GN} {low_message} than 2, but got [{x.ndim}].",
                                    kind="ndim:x:min")
    if x.ndim > 5:
        raise PaddleInvalidArgument(f"The ndim of x in {GN} should be less than 6 , but got [{x.ndim}].",
                                    kind="ndim:x:max")


def gn_forward_inputs(x: DistTensorSpec, scale: DistTensorSpec | None, bias: DistTensorSpec | None,
                      attrs: Sequence[tuple[str, Any]]) -> tuple[RuleInput, RuleInput, RuleInput]:
    """group_norm's forward checks (``attrs``: epsilon, groups, data_format, or none for the Base
    rule; types only): port every partial dim on its spec's mesh (:func:`require_buildable`); P x
    rank: Paddle aborts). Returns (x, scale, bias)."""
    ready = valid_inputs((x, scale, bias), _GN_FORWARD)
    if ready is not None and attrs_exact(attrs):
        tx, ts, tb = ready
        if 3 <= tx.ndim <= 5 and ts.ndim == tb.ndim == 1:
            return tx, ts, tb
    tx, ts, tb = as_input(x, "x"), as_input(scale, "scale", optional=True), as_input(bias, "bias", optional=True)
    check_attrs(*attrs)
    require_buildable(("x", x), ("scale", scale), ("bias", bias))
    _gn_x_rank(tx, "should be greater")
    require_ndim(ts, 1, GN)
    require_ndim(tb, 1, GN)
    require_x_mesh(tx)
    check_specs(("x", x), ("scale", scale), ("bias", bias))
    return tx, ts, tb


def gn_grad_inputs(x: DistTensorSpec, scale: DistTensorSpec | None, bias: DistTensorSpec | None, y: DistTensorSpec,
                   mean: DistTensorSpec, variance: DistTensorSpec, y_grad: DistTensorSpec,
                   attrs: Sequence[tuple[str, Any]]) -> tuple[RuleInput, ...]:
    """group_norm's grad checks: :func:`require_buildable`, then Paddle's in its order: x rank 3..5,
    y's and y_grad's rank == x's,
    scale and bias 1-D, mean and variance 2-D (reported under bias's name:
    PADDLE-QUIRK(gn-grad-messages)); then the port's: x on a mesh, specs valid. Returns (x, scale,
    bias, y, mean, variance, y_grad)."""
    ready = valid_inputs((x, scale, bias, y, mean, variance, y_grad), _GN_GRAD)
    if ready is not None and attrs_exact(attrs):
        tx, ts, tb, ty, tm, tv, tg = ready
        if 3 <= tx.ndim <= 5 and ty.ndim == tg.ndim == tx.ndim and ts.ndim == tb.ndim == 1 \
                and tm.ndim == tv.ndim == 2:
            return tx, ts, tb, ty, tm, tv, tg
    tx, ts, tb = as_input(x, "x"), as_input(scale, "scale", optional=True), as_input(bias, "bias", optional=True)
    ty, tm, tv = as_input(y, "y"), as_input(mean, "mean"), as_input(variance, "variance")
    tg = as_input(y_grad, "y_grad")
    check_attrs(*attrs)
    require_buildable(("x", x), ("scale", scale), ("bias", bias), ("y", y), ("mean", mean), ("variance", variance),
                      ("y_grad", y_grad))
    _gn_x_rank(tx, "should grater")
    for t in (ty, tg):
        if t.ndim != tx.ndim:
            raise PaddleInvalidArgument(f"The ndim of x and {t.name} in {GN} should be equal, but got x:[{tx.ndim}] "
                                        f"and {t.name}[{t.ndim}] .", kind=f"ndim:{t.name}")
    require_ndim(ts, 1, GN)
    require_ndim(tb, 1, GN)
    for t in (tm, tv):
        if t.ndim != 2:  # Paddle names bias and prints its rank (1 by now)
            raise PaddleInvalidArgument(f"The ndim of bias in {GN} should be 2, but got [{tb.ndim}].",
                                        kind=f"ndim:{t.name}")
    require_x_mesh(tx)
    check_specs(("x", x), ("scale", scale), ("bias", bias), ("y", y), ("mean", mean), ("variance", variance),
                ("y_grad", y_grad))
    return tx, ts, tb, ty, tm, tv, tg
