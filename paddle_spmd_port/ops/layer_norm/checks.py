"""layer_norm's checks before any profile answers (families that normalise the last axis run them
too, with begin_norm_axis = rank(x) - 1), in this order after the types (P = Paddle's own check; port =
InvalidSpecError, where Paddle crashes or accepts garbage)::

    preamble            checks after the types
    ln_forward_inputs   P scale, bias 1-D; port x on a mesh, specs valid, begin_norm_axis
    ln_reverse_inputs   P out, mean, variance: rank == len(dims_mapping); port x on a mesh, specs
                        valid, begin_norm_axis, ranks of out/mean/variance, scale/bias 1-D
    ln_grad_inputs      P 0 <= b <= rank(x); P rank pairs x/out_grad, scale/bias, mean/variance;
                        port x on a mesh, specs valid, begin_norm_axis, mean's rank, mean/variance/
                        out_grad on a mesh

``begin_norm_axis``: x of rank 1..18 (the notation's letters) and ``0 <= b <= rank(x)``.
"""

from __future__ import annotations

from ...errors import InvalidSpecError, PaddleInvalidArgument
from ...notation import ALPHABET
from ...types import DistTensorSpec
from ..kit.checks import REAL, input_names
from ..kit.strictness import Strictness, StrictnessNotes, unread_strictness
from ..kit.tensor import (
    RuleInput,
    as_input,
    check_attrs,
    check_specs,
    require_ndim,
    require_x_mesh,
    valid_inputs,
)

LN = "layer_norm"
_LN_FORWARD, _LN_REVERSE, _LN_GRAD = input_names("layer_norm"), input_names("layer_norm_reverse"), \
    input_names("layer_norm_grad")


#: The inputs each rule never reads the mapping of (the reverse rule ignores x, scale and bias, the
#: forward rule scale and bias): their malformed mappings are mirrored.
UNREAD = {"layer_norm_reverse": ("x", "scale", "bias"), "layer_norm": ("scale", "bias")}
#: The inputs each rule merges, a mesh dim named on two axes kept on the first (Paddle's merge picks
#: it): their repeated mesh dims are mirrored. The forward rule merges x too, but answers x as given
#: (rules.py: its own mirror).
FIRST_KEPT = {"layer_norm_reverse": ("out", "mean", "variance"),
              "layer_norm_grad": ("x", "mean", "variance", "out_grad")}

#: The rule keys that read scale's and bias's mesh and partial status alone, answering [-1] for them
#: whatever their rank: their other ranks are mirrored.
VECTORS_ANY_RANK = ("layer_norm_reverse",)

#: The port's refusals beyond Paddle's layer_norm and fast_ln rules (:mod:`~paddle_spmd_port.ops.kit.strictness`).
STRICTNESS = StrictnessNotes((
    *unread_strictness("layer_norm", UNREAD, {**FIRST_KEPT, "layer_norm": ("x",)}),
    Strictness("invalid-spec:begin_norm_axis", "begin_norm_axis outside 0..rank(x); Paddle's rule raises "
               "basic_string::_M_create below 0 and crashes (SIGSEGV) or answers garbage above the rank", "varies",
               "refuses", "_C_ops.layer_norm raises ValueError (InferMeta: begin_norm_axis > 0 and < rank(x); "
               "3.3.1, x [4,6,8], begin_norm_axis -1, 4, 5)", mirror_keys=("layer_norm", "layer_norm_reverse"),
               families=("layer_norm",)),
    Strictness("invalid-spec:x:rank", "x of rank 0, or beyond the notation's letters", "varies", "unmeasured",
               families=("layer_norm", "fast_ln")),
    *(Strictness(f"invalid-spec:{name}:rank", f"{name} of another rank than 1; the reverse rule reads only its mesh "
                 "and partial status and answers [-1] for it (a mapping of the wrong length), the forward rule "
                 "raises (its own check)", "varies", "inexpressible", "the op takes scale and bias flattened to 1-D",
                 mirror_keys=VECTORS_ANY_RANK, families=("layer_norm",))
      for name in ("scale", "bias")),
    Strictness("invalid-spec:*:rank", "scale, bias, mean or variance of another rank than the rule's answer has; "
               "Paddle answers a mapping of the wrong length for it", "answers", "inexpressible",
               "the op makes mean and variance itself, and takes scale and bias flattened to 1-D",
               families=("layer_norm", "fast_ln")),
    Strictness("invalid-spec:*:mesh", "mean, variance or out_grad of rank >= 1 without a mesh; Paddle reads its "
               "mapping past the end (a crash, or a mesh dim on an attr without a mesh)", "varies",
               "inexpressible", "a dist tensor always has a process mesh", families=("layer_norm",)),
))

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
    if ready is not None and type(epsilon) in REAL and type(begin_norm_axis) is int:
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
    if ready is not None and type(epsilon) in REAL and type(begin_norm_axis) is int:
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
    if ready is not None and type(epsilon) in REAL and type(begin_norm_axis) is int:
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
