"""rms_norm's checks before any profile answers: Paddle's in its order, then the port's (each
preamble's docstring says which)."""

from __future__ import annotations

from ...errors import InvalidSpecError, PaddleInvalidArgument
from ...notation import ALPHABET
from ...types import DistTensorSpec
from ..kit.checks import REAL, input_names, require_buildable
from ..kit.strictness import PLACEMENTS, Strictness, StrictnessNotes
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


#: The rule keys whose ``mirror`` answer is Paddle's rule worked on the raw input (rules.py:
#: ``rms_norm_raw``, ``rms_norm_reverse_raw``, ``rms_norm_grad_raw``): each input those rules read
#: without a crash, a raise or memory they never set is answered as they answer it.
RAW_MODELED = ("rms_norm", "rms_norm_reverse", "rms_norm_grad")
#: The grad rule reads x, invvar and out_grad through their placements, which Paddle 3.3.1 builds
#: its own way: a mesh dim at or past the mesh's ndim raises ("Split axis ... can not exceed the
#: ndim"), a negative one but -1 is written before the placements' start (memory it never set), a
#: repeated one reads as the last axis naming it, and raises where the alignment asks whether that
#: tensor splits an axis ("ProcessMesh dimension can't be mapped to two dimension of the same
#: tensor"). The grad's mirror answers the repeats where Paddle does, and names the others' refusal.
GRAD_READ = ("x", "invvar", "out_grad")
#: The rule keys that read scale's mesh alone, answering [-1] for it whatever its rank: its other
#: ranks are mirrored.
VECTORS_ANY_RANK = ("rms_norm", "rms_norm_reverse")

#: The malformed mappings the rules can meet (a mapping of another length than its rank never
#: reaches them: every rms_norm rule checks each rank against its mapping's length first, as
#: Paddle's does, and raises Paddle's error; the kit's shared declaration covers the kind).
_WHAT = {"duplicate": "splits two axes along one mesh dim", "mesh-dim": "names a mesh dim the mesh lacks"}
_HOW = {"x": "the forward rule merges it with its last entry replicated, a mesh dim named twice kept on the "
             "first axis (x itself answered as given), any entry but -1 copied as it is; the reverse rule never "
             "reads it",
        "scale": "no rule reads its mapping (only its shape and mesh)",
        "out": "the reverse rule merges it raw with invvar (a repeat kept on the first axis, an unknown or "
               "negative mesh dim copied into every answer)",
        "invvar": "the reverse rule merges it raw with out (a repeat kept on the first axis, an unknown or "
                  "negative mesh dim copied into every answer)",
        "out_grad": "only the grad rule has it"}


def _mapping_strictness() -> tuple[Strictness, ...]:
    """The malformed mappings of every input, mirrored by the raw models where their rule reads them
    without raising (the grad: see :data:`GRAD_READ`)."""
    from .. import RULES

    out = []
    for tensor in ("x", "scale", "out", "invvar", "out_grad"):
        having = [k for k, spec in RULES.items() if spec.op == "rms_norm" and tensor in spec.inputs]
        for problem, what in _WHAT.items():
            raises = "rms_norm_grad" in having and tensor in GRAD_READ
            grad = ("" if not raises else
                    "; the grad rule raises on one at or past the mesh's ndim and writes a negative one before its "
                    "placements' start (never answered: the mirror names which)" if problem == "mesh-dim" else
                    "; the grad rule reads it as the last axis naming the dim, and raises where its alignment asks "
                    "whether that tensor splits an axis")
            out.append(Strictness(
                f"invalid-spec:{tensor}:{problem}", f"{tensor}'s dims_mapping {what}; {_HOW[tensor]}{grad}",
                "varies" if raises else "answers", "inexpressible", PLACEMENTS, mirror_keys=tuple(having),
                families=("rms_norm",)))
    return tuple(out)


#: The port's refusals beyond Paddle's rms_norm rules (:mod:`~paddle_spmd_port.ops.kit.strictness`).
STRICTNESS = StrictnessNotes((
    *_mapping_strictness(),
    Strictness("invalid-spec:x:rank", "x of rank 0 (the forward rule raises basic_string::_M_create; the reverse "
               "rule builds its notation from out's rank and answers x from it), or beyond the notation's letters",
               "varies", "unmeasured", mirror_keys=("rms_norm_reverse",), families=("rms_norm",)),
    Strictness("invalid-spec:scale:rank", "scale of another rank than 1; the forward and reverse rules read only its "
               "mesh and answer [-1] for it (a mapping of the wrong length)", "varies", "unmeasured",
               mirror_keys=VECTORS_ANY_RANK, families=("rms_norm",)),
    Strictness("invalid-spec:out:rank", "out of another rank than x; the reverse rule builds its notation from out's "
               "rank (out of rank 0: basic_string::_M_create) and answers x, out and invvar from it",
               "varies", "inexpressible", "the op makes out itself, of x's rank",
               mirror_keys=("rms_norm_reverse",), families=("rms_norm",)),
    Strictness("invalid-spec:invvar:rank", "invvar of another rank than x's one less; the reverse rule merges its "
               "mapping against out's leading letters (an entry one past them merges under no letter; more raise "
               "basic_string::substr) and answers it with those letters; the grad rule reads its shape and writes "
               "its answer by those letters' positions (past the end of a shorter invvar: not mirrored)",
               "varies", "inexpressible", "the op makes invvar itself, of x's rank less one",
               mirror_keys=("rms_norm_reverse", "rms_norm_grad"), families=("rms_norm",)),
    Strictness("invalid-spec:*:unset-memory",
               "an input Paddle's rule reads or writes past a vector's or string's end for: "
               "out of a rank whose notation needs more letters than Paddle's alphabet (reverse); in the grad, an "
               "invvar shorter than x's leading axes where the alignment reads its shape or writes its answer by "
               "their positions, a split of invvar past its notation, a tensor on a mesh of fewer dims than x's "
               "(its placements read by x's mesh dims), a negative mesh dim but -1 (written before the placements' "
               "start), scale_grad partial on a mesh dim scale's mesh lacks (SIGSEGV on most such inputs, an answer "
               "on some); whatever it answers is memory it never set", "undefined",
               "unmeasured", families=("rms_norm",)),
    Strictness("invalid-spec:*:mixed-mesh", "a tensor on a mesh of other dims than x's; the reverse rule answers each "
               "attr on its own tensor's mesh with the merged mesh dims, whether that mesh has them or not; the grad "
               "reads each tensor's placements by x's mesh dims (a mesh of more dims: answered; fewer: past their end) "
               "and gives scale_grad a partial status on x's mesh dims (past the end where scale's mesh lacks one)",
               "varies", "unmeasured", mirror_keys=("rms_norm_reverse", "rms_norm_grad"), families=("rms_norm",)),
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
