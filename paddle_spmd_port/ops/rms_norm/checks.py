"""rms_norm's checks before any profile answers: Paddle's in its order, then the port's (each
preamble's docstring says which)."""

from __future__ import annotations

from ...errors import InvalidSpecError, PaddleInvalidArgument
from ...notation import ALPHABET
from ...types import DistTensorSpec
from ..kit.checks import REAL, input_names, require_buildable
from ..kit.strictness import Strictness, StrictnessNotes, unread_strictness
from ..kit.tensor import (
    RuleInput,
    as_input,
    check_attrs,
    check_specs,
    require_x_mesh,
    valid_inputs,
)

_RMS_FORWARD, _RMS_REVERSE, _RMS_GRAD = input_names("rms_norm"), input_names("rms_norm_reverse"), \
    input_names("rms_norm_grad")

#: Where Paddle 3.3.1's rms_norm rules check each tensor's rank against its dims_mapping size: the
#: message carries the build's file name and line (measured; the compiled caller and the registry
#: raise the same text).
RMS_SOURCE = "/paddle/paddle/phi/infermeta/spmd_rules/rms_norm.cc"
RMS_CHECK_LINES = {
    "rms_norm": {"x": 32, "scale": 33},
    "rms_norm_reverse": {"x": 84, "scale": 85, "out": 86, "invvar": 87},
    "rms_norm_grad": {"x": 146, "scale": 147, "invvar": 148, "out_grad": 149},
}


#: The inputs each rule never reads the mapping of (PADDLE-QUIRK(rms-reverse-ignores-x)):
#: their malformed mappings are mirrored.
UNREAD = {"rms_norm_reverse": ("x", "scale"), "rms_norm": ("scale",), "rms_norm_grad": ("scale",)}
#: The inputs each rule merges, a mesh dim named on two axes kept on the first (Paddle's merge picks
#: it): their repeated mesh dims are mirrored. The forward rule merges x too, but answers x as given
#: (rules.py: its own mirror). The grad rule aligns x, invvar and out_grad its own way and raises on a
#: repeated mesh dim ("ProcessMesh dimension can't be mapped to two dimension of the same tensor"):
#: refused, not mirrored.
FIRST_KEPT = {"rms_norm_reverse": ("out", "invvar")}

#: The rule keys that read scale's mesh alone, answering [-1] for it whatever its rank: its other
#: ranks are mirrored.
VECTORS_ANY_RANK = ("rms_norm", "rms_norm_reverse")

#: The port's refusals beyond Paddle's rms_norm rules (:mod:`~paddle_spmd_port.ops.kit.strictness`).
STRICTNESS = StrictnessNotes((
    *unread_strictness("rms_norm", UNREAD, {**FIRST_KEPT, "rms_norm": ("x",)}),
    Strictness("invalid-spec:x:rank", "x of rank 0 (Paddle raises basic_string::_M_create), or beyond the "
               "notation's letters", "varies", "unmeasured", families=("rms_norm",)),
    Strictness("invalid-spec:scale:rank", "scale of another rank than 1; the forward and reverse rules read only its "
               "mesh and answer [-1] for it (a mapping of the wrong length)", "varies", "unmeasured",
               mirror_keys=VECTORS_ANY_RANK, families=("rms_norm",)),
    Strictness("invalid-spec:*:rank", "scale, out, invvar or y_grad of another rank than the rule's notation "
               "gives it; Paddle answers garbage or reads past its notation", "varies", "inexpressible",
               "the op makes out and invvar itself, of the ranks x and its scale give", families=("rms_norm",)),
    Strictness("invalid-spec:x:empty", "every tensor of the grad rule's alignment empty; Paddle reads past its "
               "inputs", "crashes", "unmeasured", families=("rms_norm",)),
))

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
    if ready is not None and type(epsilon) in REAL:
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
    if ready is not None and type(epsilon) in REAL:
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
    if ready is not None and type(epsilon) in REAL:
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
