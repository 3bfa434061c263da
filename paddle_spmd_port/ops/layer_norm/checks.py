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

from collections.abc import Mapping

from ...errors import InvalidSpecError, PaddleInvalidArgument
from ...notation import ALPHABET
from ...types import DistTensorSpec
from .. import RULES
from ..kit.checks import REAL, input_names
from ..kit.strictness import PLACEMENTS, Strictness, StrictnessNotes
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


#: The rule keys of the family and the inputs each one's refusals name.
RAW_INPUTS = {key: RULES[key].inputs for key in ("layer_norm", "layer_norm_reverse", "layer_norm_grad")}
#: The inputs whose mapping each rule never merges (their attrs are answered from their mesh, partial
#: status and, in the grad, their mapping's length).
NOT_MERGED = {"layer_norm": ("scale", "bias"), "layer_norm_reverse": ("x", "scale", "bias"),
              "layer_norm_grad": ("scale", "bias")}

_PROBLEMS = {
    "length": ("has another length than its rank", "inexpressible", PLACEMENTS),
    "mesh-dim": ("names a mesh dim the mesh lacks", "inexpressible", PLACEMENTS),
    "duplicate": ("splits two axes along one mesh dim", "inexpressible", PLACEMENTS),
    "mesh": ("without a mesh", "inexpressible", "a dist tensor always has a process mesh"),
    "mixed-mesh": ("on a mesh of another number of dims than x's, whose mesh dims reach the answer", "unmeasured", ""),
    "missing": ("None where the tensor is required (Paddle's stand-in: shape [0], no mapping, no mesh)", "refuses",
                "the op's Python API needs every required tensor"),
}
_RAW = "mirrored: Paddle's rule's steps on the raw input (ops/layer_norm/raw.py)"


def raw_strictness(family: str, inputs: Mapping[str, tuple[str, ...]],
                   not_merged: Mapping[str, tuple[str, ...]], rank_keys: tuple[str, ...]) -> tuple[Strictness, ...]:
    """The declarations of a family whose rules are layer_norm's (this family's, fast_ln's): every
    refusal of a malformed input is mirrored by :mod:`.raw` for each rule key with that input
    (``inputs``); Paddle's rule ``answers`` a malformed mapping of an input no key merges
    (``not_merged``), and ``varies`` otherwise (it raises a merge conflict, or crashes setting a
    partial status, or the input is refused as unset memory beside it). ``rank_keys``: the keys
    refusing tensors of another rank than the op gives them."""
    out = [Strictness("invalid-spec:*:unset-memory", "Paddle's rule writes or reads past the end of a string or "
                      "a vector on this input (a mapping shorter than begin_norm_axis filled from it, x's answer read "
                      "up to begin_norm_axis), so its answer is that memory's content", "undefined", "unmeasured",
                      families=(family,)),
           Strictness("invalid-spec:*:coshard", "a co-shard beside a malformed input (the raw answer is not "
                      "modelled for it)", "varies", "unmeasured", families=(family,))]
    optional = {name for key in inputs for name in RULES[key].optional}
    for tensor in dict.fromkeys(t for names in inputs.values() for t in names):
        for problem, (what, op, evidence) in _PROBLEMS.items():
            keys = tuple(k for k, names in inputs.items() if tensor in names
                         and not (problem == "missing" and tensor in optional))
            if not keys or (tensor == "x" and problem == "mixed-mesh"):  # (x's mesh is the one others differ from)
                continue
            unread = problem in ("length", "mesh-dim", "duplicate") and all(tensor in not_merged[k] for k in keys)
            mapping = {"mixed-mesh": "", "missing": "", "mesh": "" if tensor == "x" else "'s mapping or partial dims"
                       }.get(problem, "'s dims_mapping")
            out.append(Strictness(f"invalid-spec:{tensor}:{problem}", f"{tensor}{mapping} {what}; {_RAW}",
                                  "answers" if unread else "varies", op, evidence, mirror_keys=keys,
                                  families=(family,)))
    keys = tuple(inputs)
    out += [Strictness("invalid-spec:x:rank", f"x of rank 0, or beyond the notation's letters; {_RAW}", "varies",
                       "unmeasured", mirror_keys=keys, families=(family,)),
            Strictness("invalid-spec:*:rank", "scale, bias, out, mean or variance of another rank than the op gives "
                       f"it; {_RAW}", "varies", "inexpressible",
                       "the op makes mean and variance itself, and takes scale and bias flattened to 1-D",
                       mirror_keys=rank_keys, families=(family,))]
    return tuple(out)


#: The port's refusals beyond Paddle's layer_norm rules (:mod:`~paddle_spmd_port.ops.kit.strictness`).
STRICTNESS = StrictnessNotes((
    Strictness("invalid-spec:begin_norm_axis:unset-memory", "begin_norm_axis beyond x's rank; Paddle's rule writes "
               "the notation's letters past the end of a string of x's rank (a crash, or an answer from memory it "
               "never set)", "undefined", "refuses", "_C_ops.layer_norm raises ValueError (InferMeta: "
               "begin_norm_axis > 0 and < rank(x); 3.3.1, x [4,6,8], begin_norm_axis 4, 5)", families=(LN,)),
    Strictness("invalid-spec:begin_norm_axis", "begin_norm_axis outside 0..rank(x); Paddle's rule raises "
               "basic_string::_M_create below 0 (mirrored), and writes past a string's end above the rank "
               "(unset-memory)", "varies", "refuses", "_C_ops.layer_norm raises ValueError (InferMeta: "
               "begin_norm_axis > 0 and < rank(x); 3.3.1, x [4,6,8], begin_norm_axis -1, 4, 5)",
               mirror_keys=("layer_norm", "layer_norm_reverse"), families=(LN,)),
    *raw_strictness(LN, RAW_INPUTS, NOT_MERGED, ("layer_norm_reverse", "layer_norm_grad")),
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


def check_grad_ranks(tx: RuleInput, ts: RuleInput, tb: RuleInput, tm: RuleInput, tv: RuleInput, tg: RuleInput,
                     begin: int) -> None:
    """Paddle's first checks of the grad rule, in its order: begin_norm_axis against x's rank, then
    the rank pairs x/out_grad, scale/bias, mean/variance."""
    if begin < 0 or tx.ndim < begin:  # Paddle compares unsigned: a negative begin fails too
        raise PaddleInvalidArgument(f"The Tensor x's rank [{tx.ndim}] and begin_norm_axis [{begin}] are not matched.",
                                    kind="rank-vs-begin_norm_axis")
    for a, b, label in ((tx, tg, "x's rank [{}] and Tensor out_grad's"),
                        (ts, tb, "scale's rank [{}] and Tensor bias's"),
                        (tm, tv, "mean's rank [{}] and Tensor variance's")):
        if a.ndim != b.ndim:
            raise PaddleInvalidArgument(f"The Tensor {label.format(a.ndim)} rank [{b.ndim}] are not matched.",
                                        kind=f"rank:{a.name}-vs-{b.name}")


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
    check_grad_ranks(tx, ts, tb, tm, tv, tg, begin_norm_axis)
    require_x_mesh(tx)
    check_specs(("x", x), ("scale", scale), ("bias", bias), ("mean", mean), ("variance", variance),
                ("out_grad", out_grad))
    check_begin_norm_axis(begin_norm_axis, tx)
    require_rank(tm, begin_norm_axis, "mean of shape x.shape[:begin_norm_axis]")
    require_grad_meshes(tm, tv, tg)
    return tx, ts, tb, tm, tv, tg
