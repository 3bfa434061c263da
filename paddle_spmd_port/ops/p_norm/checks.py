"""p_norm's checks before any profile answers, in this order (P = Paddle's own check, a
PaddleInvalidArgument with its message; port = InvalidSpecError, where Paddle accepts garbage or
crashes)::

    preamble         checks after the argument types (tensors, then attributes, in signature order)
    forward_inputs   P x: rank == len(dims_mapping); port x valid, axis
    reverse_inputs   P out: rank == len(dims_mapping); port x, out valid, x on a mesh, axis, out's rank
    grad_inputs      port x, out, out_grad valid, x on a mesh, axis, ranks of out and out_grad, out_grad
                     on a mesh

``axis`` (port): ``-rank <= axis < rank`` unless ``asvector`` (every axis is reduced and axis is
never read) or x is 0-D (the op accepts any axis there). Paddle normalises a negative axis once,
by adding the rank; any other value matches no axis, so the forward rule reduces nothing, the
reverse rule merges a notation with one letter too many, and the grad rule inserts past the end
of a dims_mapping (undefined behaviour). The reverse and grad rules never read x's dims_mapping,
but an invalid x spec, or one without a mesh, is still refused: it is no input a program can hold.

The out rank each rule expects: ``rank(x)`` with keepdims, else 0 with asvector, else ``rank(x) - 1``
(0 for a 0-D x). Paddle reads out's (and out_grad's) dims_mapping against the notation that
rank implies, and answers a mapping of the wrong length for any other.
"""

from __future__ import annotations

from typing import Any

from ...errors import ArgumentTypeError, InvalidSpecError, PaddleInvalidArgument
from ...types import DistTensorSpec
from ..kit.checks import REAL, input_names
from ..kit.strictness import PLACEMENTS, Strictness, StrictnessNotes
from ..kit.tensor import RuleInput, as_input, attr_type_ok, check_specs, require_x_mesh, valid_inputs

#: The port's refusals beyond Paddle's p_norm rules (:mod:`~paddle_spmd_port.ops.kit.strictness`).
STRICTNESS = StrictnessNotes((
    Strictness("invalid-spec:axis", "axis outside -rank..rank-1 (asvector False, x not 0-D); Paddle's forward rule "
               "reduces no axis, its reverse rule reads out as of x's rank, its grad rule inserts past the end of a "
               "mapping where out has fewer axes than x (invalid-spec:axis:insert-outside)", "varies", "refuses",
               "paddle.linalg.norm and _C_ops.p_norm raise ValueError (InferMeta: axis >= -x_rank && axis < x_rank), "
               "3.3.1, x [4,6,8], axis 3, -4, 100",
               mirror_keys=("p_norm", "p_norm_reverse", "p_norm_grad"), families=("p_norm",)),
    Strictness("invalid-spec:axis:insert-outside", "axis outside -rank..rank-1 without keepdims (asvector False); "
               "Paddle's grad rule inserts -1 into out_grad's mapping at that axis, outside the vector (whatever it "
               "answers is memory's content)", "undefined", "refuses",
               "paddle.linalg.norm and _C_ops.p_norm raise ValueError (InferMeta: axis >= -x_rank && axis < x_rank), "
               "3.3.1, x [4,6,8], axis 3, -4, 100", families=("p_norm",)),
    Strictness("invalid-spec:out_grad:insert-outside", "out_grad of another rank (or mapping length) than x, "
               "keepdims and asvector imply, with a reduced axis past the end of its mapping; Paddle's grad rule "
               "inserts -1 there, outside the vector (whatever it answers is memory's content)", "undefined",
               "inexpressible", "the op makes out itself, of the rank x, axis, keepdims and asvector give",
               families=("p_norm",)),
    Strictness("invalid-spec:x:duplicate", "x's dims_mapping splits two axes along one mesh dim; Paddle's forward "
               "rule keeps each mesh dim on the first axis it splits (-1 on the others) and reduces that, its "
               "reverse and grad rules never read x's mapping", "answers", "inexpressible", PLACEMENTS,
               mirror_keys=("p_norm", "p_norm_reverse", "p_norm_grad"), families=("p_norm",)),
    Strictness("invalid-spec:x:length", "x's dims_mapping of another length than its rank (the forward rule's own "
               "check refuses it); the reverse and grad rules never read x's mapping", "answers", "inexpressible",
               PLACEMENTS, mirror_keys=("p_norm_reverse", "p_norm_grad"), families=("p_norm",)),
    Strictness("invalid-spec:x:mesh-dim", "x's dims_mapping names a mesh dim the mesh lacks; Paddle's forward rule "
               "answers x as given and copies the kept axes' entries into out (entries >= 0 on a reduced axis made "
               "partial), and crashes where a reduced axis names a mesh dim past the mesh, or raises where out "
               "names one outside it beside a partial status; the reverse and grad rules never read x's mapping",
               "varies", "inexpressible", PLACEMENTS, mirror_keys=("p_norm", "p_norm_reverse", "p_norm_grad"),
               families=("p_norm",)),
    *(Strictness(f"invalid-spec:out:{problem}", f"out's dims_mapping {what}; the reverse rule reads it (Paddle "
                 "merges or copies it), the grad rule never reads out's attr", "varies", "inexpressible", PLACEMENTS,
                 mirror_keys=("p_norm_reverse", "p_norm_grad") if problem != "length" else ("p_norm_grad",),
                 families=("p_norm",))
      for problem, what in (("duplicate", "splits two axes along one mesh dim"),
                            ("length", "has another length than out's rank"),
                            ("mesh-dim", "names a mesh dim the mesh lacks"))),
    *(Strictness(f"invalid-spec:out_grad:{problem}", f"out_grad's dims_mapping {what}; the grad rule answers "
                 "out_grad's mapping (with -1 inserted at the reduced axes where out_grad has fewer axes than x) and "
                 "looks none of its mesh dims up", "answers", "inexpressible", PLACEMENTS,
                 mirror_keys=("p_norm_grad",), families=("p_norm",))
      for problem, what in (("duplicate", "splits two axes along one mesh dim"),
                            ("mesh-dim", "names a mesh dim the mesh lacks"))),
    Strictness("invalid-spec:out:rank", "out of another rank than x, keepdims and asvector imply; the reverse rule "
               "reads out's mapping against that rank's notation (-1 past the end of a shorter mapping; one entry "
               "too many goes to an empty letter no axis reads; two or more make Paddle raise), the grad rule never "
               "reads out", "varies",
               "inexpressible", "the op makes out itself, of the rank x, axis, keepdims and asvector give",
               mirror_keys=("p_norm_reverse", "p_norm_grad"), families=("p_norm",)),
    Strictness("invalid-spec:out_grad:rank", "out_grad of another rank than x, keepdims and asvector imply; the grad "
               "rule answers out_grad's mapping, with -1 inserted at the reduced axes where out_grad's rank differs "
               "from x's (past the end of the mapping: invalid-spec:out_grad:insert-outside)", "varies",
               "inexpressible",
               "the op makes out itself, of the rank x, axis, keepdims and asvector give",
               mirror_keys=("p_norm_grad",), families=("p_norm",)),
    Strictness("invalid-spec:out_grad:length", "out_grad's dims_mapping of another length than its rank; the grad "
               "rule answers that mapping, with -1 inserted at the reduced axes where out_grad's rank differs from "
               "x's (past the end of the mapping: invalid-spec:out_grad:insert-outside)", "varies", "inexpressible",
               PLACEMENTS,
               mirror_keys=("p_norm_grad",), families=("p_norm",)),
    Strictness("invalid-spec:*:rank", "out or out_grad of another rank than x, keepdims and asvector imply; "
               "Paddle's rule reads its mapping against that rank's notation", "varies", "inexpressible",
               "the op makes out itself, of the rank x, axis, keepdims and asvector give", families=("p_norm",)),
    Strictness("invalid-spec:out:mixed-mesh", "out on a mesh of another number of dims than x's; the reverse rule "
               "copies out's mesh dims into x's mapping unlooked-up (an attr on x's mesh naming mesh dims it may "
               "lack), the grad rule never reads out", "varies", "unmeasured",
               mirror_keys=("p_norm_reverse",), families=("p_norm",)),
    Strictness("invalid-spec:x:mesh", "x without a process mesh; the grad rule reads x's shape only and answers "
               "from out_grad; the reverse rule answers x on no mesh (a copy of x's attr)",
               "varies", "inexpressible", "a dist tensor always has a process mesh",
               mirror_keys=("p_norm_reverse", "p_norm_grad"), families=("p_norm",)),
    Strictness("invalid-spec:x:missing", "None for x; the reverse rule reads Paddle's stand-in for None (a "
               "rank-1 tensor without a mesh) for x's shape and answers x on no mesh; the grad rule reads only the "
               "stand-in's rank and answers copies of out_grad's attr (-1 inserted at the reduced axes where "
               "out_grad's rank is not 1; outside its mapping: invalid-spec:out_grad:insert-outside); the forward "
               "rule raises on the stand-in's empty mapping", "varies", "refuses",
               "the op's Python API needs every required tensor", mirror_keys=("p_norm_reverse", "p_norm_grad"),
               families=("p_norm",)),
    Strictness("invalid-spec:out_grad:missing", "None for out_grad; the grad rule reads Paddle's stand-in for None "
               "(rank 1, an empty mapping, no mesh) and answers copies of its attr, with -1 inserted at the reduced "
               "axes where x's rank is not 1 (past the end of the empty mapping: "
               "invalid-spec:out_grad:insert-outside)", "varies", "refuses",
               "the op's Python API needs every required tensor", mirror_keys=("p_norm_grad",),
               families=("p_norm",)),
    Strictness("invalid-spec:out:missing", "None for out; the grad rule never reads out, the reverse rule reads "
               "Paddle's stand-in for None (a rank-1 spec with an empty mapping)", "varies", "refuses",
               "the op's Python API needs every required tensor", mirror_keys=("p_norm_grad",),
               families=("p_norm",)),
    Strictness("invalid-spec:out_grad:mesh", "out_grad without a mesh while x_grad is answered from its mapping; "
               "Paddle inserts into an empty mapping", "varies", "inexpressible",
               "a dist tensor always has a process mesh", families=("p_norm",)),
))

_FORWARD, _REVERSE, _GRAD = input_names("p_norm"), input_names("p_norm_reverse"), input_names("p_norm_grad")

#: Each attribute's kind, as :func:`~paddle_spmd_port.ops.kit.tensor.attr_type_ok` reads it.
ATTR_KINDS = (("porder", "real"), ("axis", "int"), ("epsilon", "real"), ("keepdims", "bool"), ("asvector", "bool"))
_WANTED = {"real": "a real number (int or float, not bool)", "int": "an int (not bool)", "bool": "a bool (or 0 / 1)"}


def check_attr_types(values: tuple[Any, ...]) -> None:
    """Reject an attribute of the wrong Python type (:class:`ArgumentTypeError` naming it), in
    signature order. (The registry casts each attribute itself and refuses, e.g., an int porder;
    the port takes any real and leaves the cast to whoever calls Paddle.)"""
    for (name, kind), value in zip(ATTR_KINDS, values, strict=True):
        if not attr_type_ok(kind, value):
            text = repr(value)
            raise ArgumentTypeError(f"{name} must be {_WANTED[kind]}, got {type(value).__name__} "
                                    f"{text if len(text) <= 60 else text[:57] + '...'}",
                                    kind=f"invalid-spec:{name}:type")


def reduced_axes(ndim: int, axis: int, asvector: bool) -> tuple[int, ...]:
    """The axes the rule reduces, ascending: every axis with asvector, else ``axis`` made
    non-negative (the checks have put it in range)."""
    if asvector:
        return tuple(range(ndim))
    if ndim == 0:
        return ()
    return (axis + ndim if axis < 0 else axis,)


def out_rank(ndim: int, keepdims: bool, asvector: bool) -> int:
    """The rank of out (and out_grad) for an x of rank ``ndim``."""
    return ndim if keepdims else 0 if asvector else max(ndim - 1, 0)


def check_axis(axis: int, x: RuleInput, asvector: bool) -> None:
    if asvector or x.ndim == 0 or -x.ndim <= axis < x.ndim:
        return
    raise InvalidSpecError(
        f"axis={axis} is outside {-x.ndim}..{x.ndim - 1} for x of rank {x.ndim} (Paddle's rule then reduces no "
        "axis, or reads past a dims_mapping); pass an axis in that range, or asvector=True",
        kind="invalid-spec:axis")


def require_out_rank(t: RuleInput, x: RuleInput, keepdims: bool, asvector: bool) -> None:
    want = out_rank(x.ndim, keepdims, asvector)
    if t.ndim != want:
        how = "keepdims=True keeps every axis" if keepdims else \
            "asvector=True reduces every axis" if asvector else "one axis is reduced"
        raise InvalidSpecError(f"{t.name} has rank {t.ndim}, but for x of rank {x.ndim} it has rank {want} ({how})",
                               kind=f"invalid-spec:{t.name}:rank")


def _require_mapping_size(t: RuleInput, label: str) -> None:
    """Paddle's check of the tensor whose dims_mapping the rule reads first."""
    if t.ndim != len(t.dims_mapping):
        raise PaddleInvalidArgument(
            f"The Tensor {label}'s rank [{t.ndim}] and {label}'s dims_mapping size [{len(t.dims_mapping)}] "
            "are not matched.", kind=f"rank-vs-mapping:{t.name}")


def _plain(attrs: tuple[Any, ...], ndim: int) -> bool:
    """The attributes have their usual exact types and axis is in range for an x of rank ``ndim``
    (the fast path's test; anything else gets the full checks, which name the problem). One
    expression, no calls: every call of the family runs it."""
    porder, axis, epsilon, keepdims, asvector = attrs
    return type(axis) is int and type(keepdims) is bool and type(asvector) is bool and type(porder) in REAL \
        and type(epsilon) in REAL and (asvector or -ndim <= axis < ndim or ndim == 0)


def forward_inputs(x: DistTensorSpec, attrs: tuple[Any, ...]) -> RuleInput:
    """The forward rule's checks; ``attrs`` = (porder, axis, epsilon, keepdims, asvector)."""
    ready = valid_inputs((x,), _FORWARD)  # a valid spec on a mesh: its rank and mapping agree
    if ready is not None and _plain(attrs, ready[0].ndim):
        return ready[0]
    tx = as_input(x, "x")
    check_attr_types(attrs)
    _require_mapping_size(tx, "X")
    check_specs(("x", x))
    check_axis(attrs[1], tx, bool(attrs[4]))
    return tx


def reverse_inputs(x: DistTensorSpec, out: DistTensorSpec, attrs: tuple[Any, ...]) -> tuple[RuleInput, RuleInput]:
    """The reverse rule's checks. Returns (x, out)."""
    ready = valid_inputs((x, out), _REVERSE)
    if ready is not None:
        tx, to = ready
        if _plain(attrs, tx.ndim) and to.ndim == out_rank(tx.ndim, attrs[3], attrs[4]):
            return tx, to
    tx, to = as_input(x, "x"), as_input(out, "out")
    check_attr_types(attrs)
    _require_mapping_size(to, "Out")
    check_specs(("x", x), ("out", out))
    require_x_mesh(tx)
    keepdims, asvector = bool(attrs[3]), bool(attrs[4])
    check_axis(attrs[1], tx, asvector)
    require_out_rank(to, tx, keepdims, asvector)
    return tx, to


def grad_inputs(x: DistTensorSpec, out: DistTensorSpec, out_grad: DistTensorSpec,
                attrs: tuple[Any, ...]) -> tuple[RuleInput, RuleInput, RuleInput]:
    """The grad rule's checks (Paddle makes none). Returns (x, out, out_grad)."""
    ready = valid_inputs((x, out, out_grad), _GRAD)  # out_grad on a mesh, too
    if ready is not None:
        tx, to, tg = ready
        want = out_rank(tx.ndim, attrs[3], attrs[4])
        if _plain(attrs, tx.ndim) and to.ndim == want and tg.ndim == want:
            return tx, to, tg
    tx, to, tg = as_input(x, "x"), as_input(out, "out"), as_input(out_grad, "out_grad")
    check_attr_types(attrs)
    check_specs(("x", x), ("out", out), ("out_grad", out_grad))
    require_x_mesh(tx)
    keepdims, asvector = bool(attrs[3]), bool(attrs[4])
    check_axis(attrs[1], tx, asvector)
    require_out_rank(to, tx, keepdims, asvector)
    require_out_rank(tg, tx, keepdims, asvector)
    if tg.mesh is None and tg.ndim > 0:
        raise InvalidSpecError(
            "out_grad has no process mesh; p_norm_grad answers out_grad's dims_mapping for x_grad (Paddle inserts "
            "into an empty mapping: undefined behaviour); give out_grad a ProcessMesh",
            kind="invalid-spec:out_grad:mesh")
    return tx, to, tg
