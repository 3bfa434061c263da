"""What a rule sees of one input: Paddle's ``DistMetaTensor``, with ``None`` made explicit.

Paddle stands a missing optional input (``scale=None``) in with an empty dist attr on a
tensor of shape ``[0]``: rank 1, no mesh, an empty dims_mapping. :func:`as_input` builds the
same thing, so the rules treat it exactly as Paddle does.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, cast

from ...errors import ArgumentTypeError, InvalidSpecError, PaddleInvalidArgument
from ...types import SPEEDUPS, DimsMapping, DistAttr, DistTensorSpec, MeshDims, ProcessMesh, SpmdResult, mesh_dims_of

_NO_PARTIAL: frozenset[int] = frozenset()


class RuleInput(NamedTuple):
    """One input as the rule sees it (a NamedTuple: rules build several per call)."""

    name: str
    ndim: int
    dims_mapping: tuple[int, ...]
    partial_dims: frozenset[int]
    mesh: ProcessMesh | None
    missing: bool

    def attr(self, dims_mapping: Iterable[MeshDims], *, keep_partial: bool = False) -> DistAttr:
        """A copy of this input's attr with a new dims_mapping.

        ``keep_partial=False`` is Paddle's ``CopyTensorDistAttrForOutput`` (partial cleared);
        ``True`` is a plain copy of the incoming attr followed by ``set_dims_mapping``. (With the C
        module in use, ``RuleInput.attr`` is its C stand-in and this method is ``RuleInput._attr``.)
        """
        mapping = dims_mapping if type(dims_mapping) is tuple else tuple(dims_mapping)
        return DistAttr.make(mapping, self.partial_dims if keep_partial else _NO_PARTIAL, self.mesh)

    def replicated(self) -> DistAttr:
        """Paddle's ``GetReplicatedDistAttr``: all -1 with the length of the *incoming*
        dims_mapping (empty for a missing input), partial cleared, same mesh."""
        return DistAttr.make((-1,) * len(self.dims_mapping), _NO_PARTIAL, self.mesh)


_tuple_new = tuple.__new__  # builds a RuleInput without NamedTuple's Python-level __new__ (hot path)


def _new_input(fields: tuple[Any, ...]) -> RuleInput:
    return _tuple_new(RuleInput, fields)


def as_input(spec: DistTensorSpec | None, name: str, *, optional: bool = False) -> RuleInput:
    """Validate ``spec`` (see :meth:`DistTensorSpec.check`) and wrap it for a rule."""
    if spec is None:
        if not optional:
            raise InvalidSpecError(f"{name} is required; pass a DistTensorSpec for it, not None",
                                   kind=f"invalid-spec:{name}:missing")
        return _new_input((name, 1, (), _NO_PARTIAL, None, True))
    if type(spec) is not DistTensorSpec and not isinstance(spec, DistTensorSpec):
        raise ArgumentTypeError(f"{name} must be a DistTensorSpec{' or None' if optional else ''}, got "
                                f"{type(spec).__name__} {_short(spec)}", kind=f"invalid-spec:{name}:type")
    dims_mapping = spec.dims_mapping if not spec.coshard else getter_mapping(spec.dims_mapping, spec.mesh)
    return _new_input((name, len(spec.shape), dims_mapping, spec.partial_dims, spec.mesh, False))


def _valid_inputs(specs: Sequence[DistTensorSpec | None],
                  names: Sequence[tuple[str, bool]]) -> list[RuleInput] | None:
    """:func:`as_input` of each spec at once (``names``: (name, optional) per spec) when every spec is
    of the class itself and :attr:`~DistTensorSpec.valid_on_mesh`, or ``None`` where optional;
    ``None`` when any spec needs :func:`as_input`'s checks or fails its own. The preambles' fast path
    (:mod:`.checks`). The reference of ``_speedups.valid_inputs``: :data:`valid_inputs` is
    that C function when the C module is in use."""
    out = []
    # an index into names, not zip(): fewer instructions on this hot path (docs/measurements/2026-12-01-rules-notes.md)
    position = 0
    for spec in specs:
        if type(spec) is DistTensorSpec and spec.valid_on_mesh:
            dims_mapping = spec.dims_mapping if not spec.coshard else getter_mapping(spec.dims_mapping, spec.mesh)
            out.append(_tuple_new(RuleInput, (names[position][0], len(spec.shape), dims_mapping, spec.partial_dims,
                                              spec.mesh, False)))
        elif spec is None and names[position][1]:
            out.append(as_input(None, names[position][0], optional=True))
        else:
            return None
        position += 1
    return out


valid_inputs = _valid_inputs


def getter_mapping(dims_mapping: DimsMapping, mesh: ProcessMesh | None) -> tuple[int, ...]:
    """What a Paddle rule reads of a co-sharded input: ``TensorDistAttr::dims_mapping()`` keeps one
    mesh dim per axis, the member of the largest mesh size, the first listed among equal sizes
    (Paddle 3.3.1 logs ``fallback to sharding by mesh dim M`` and goes on; the probes:
    docs/coshard-3.3.1.md). Worked on a 2x3 mesh (sizes 2, 3) and a 2x2x2 one::

        mesh    entry      size of each member    kept
        2x3     (0, 1)     2, 3                   1
        2x3     (1, 0)     3, 2                   1
        2x2x2   (2, 0)     2, 2                   2     (tie: first listed)
        2x2x2   (0, 1, 2)  2, 2, 2                0

    A member outside the mesh counts as size 0 (Paddle reads past the shape there; the spec's own
    check rejects such input before any rule uses it)."""
    sizes = mesh.shape if mesh is not None else ()
    return tuple(coshard_survivor(e, sizes) if type(e) is tuple else cast(int, e) for e in dims_mapping)


def coshard_survivor(members: Sequence[int], mesh_shape: Sequence[int]) -> int:
    """The one mesh dim Paddle keeps of a co-shard's ``members`` (see :func:`getter_mapping`)."""
    return max(members, key=lambda m: mesh_shape[m] if 0 <= m < len(mesh_shape) else 0)  # max keeps the first tie


#: The type every rule attribute needs: what ``check_attrs`` accepts for it.
ATTR_TYPES: dict[str, str] = {
    "epsilon": "real", "momentum": "real", "begin_norm_axis": "int", "data_format": "str",
    "is_test": "bool", "use_global_stats": "bool", "trainable_statistics": "bool", "groups": "int",
}
_WANTED = {"real": "a real number (int or float, not bool)", "int": "an int (not bool)", "str": "a str",
           "bool": "a bool (or 0 / 1)"}


#: Exact types each kind accepts outright; other values go through the general checks below.
_EXACT_OK: dict[str, frozenset[type]] = {"real": frozenset({float, int}), "int": frozenset({int}),
                                         "str": frozenset({str}), "bool": frozenset({bool})}
#: attribute name -> the exact types its check accepts outright
EXACT_ATTR_TYPES: dict[str, frozenset[type]] = {name: _EXACT_OK[kind] for name, kind in ATTR_TYPES.items()}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def attr_type_ok(kind: str, value: Any) -> bool:
    """True when ``value`` has the Python type an attribute of ``kind`` (see :data:`ATTR_TYPES`) needs."""
    if type(value) in _EXACT_OK[kind]:  # the usual float / int / str / bool, without the ABC checks
        return True
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        if isinstance(value, bool) or type(value).__name__ in ("bool_", "bool") and hasattr(value, "item"):
            return True  # Python's bool or numpy's
        return isinstance(value, numbers.Integral) and value in (0, 1)
    if isinstance(value, bool) or type(value).__name__ in ("bool_",):
        return False
    return isinstance(value, numbers.Integral if kind == "int" else numbers.Real)


def check_attrs(*named: tuple[str, Any]) -> None:
    """Reject an attribute of the wrong Python type (:class:`ArgumentTypeError` naming it), in order.

    Rules call it right after wrapping their tensors, before any other check, so a wrongly typed
    argument is reported as such and never reaches a comparison."""
    for name, value in named:
        kind = ATTR_TYPES[name]
        if not attr_type_ok(kind, value):
            raise ArgumentTypeError(f"{name} must be {_WANTED[kind]}, got {type(value).__name__} {_short(value)}",
                                    kind=f"invalid-spec:{name}:type")


def attrs_exact(attrs: Sequence[tuple[str, Any]]) -> bool:
    """True when every attribute is of an exact type :func:`check_attrs` accepts outright (the fast path)."""
    for name, value in attrs:
        if type(value) not in EXACT_ATTR_TYPES[name]:
            return False
    return True


def check_specs(*named: tuple[str, DistTensorSpec | None]) -> None:
    """Run the port's validation on every present spec, in argument order."""
    for name, spec in named:
        if spec is not None:
            spec.check(name)


def require_x_mesh(x: RuleInput) -> None:
    if x.mesh is None:
        raise InvalidSpecError("x has no process mesh (Paddle crashes on this); give x a ProcessMesh",
                               kind="invalid-spec:x:mesh")


def require_ndim(t: RuleInput, want: int, op: str) -> None:
    """Paddle's ``The ndim of <name> in <op> should be <want>, but got [n].`` check."""
    if t.ndim != want:
        raise PaddleInvalidArgument(f"The ndim of {t.name} in {op} should be {want}, but got [{t.ndim}].",
                                    kind=f"ndim:{t.name}")


def on_meshes_of_other_ndim(x: RuleInput, *others: RuleInput) -> bool:
    """True when some input lives on a mesh with another number of dims than x's, or is a spec
    without a mesh (not a None input): only then can a rule's answer name a mesh dim that its
    attr's mesh lacks (see :func:`require_mesh_dims_exist`)."""
    x_mesh = x.mesh
    n = len(x_mesh.shape) if x_mesh is not None else 0
    for t in others:
        mesh = t.mesh
        if mesh is None:
            if not t.missing:
                return True
        elif mesh is not x_mesh and len(mesh.shape) != n:  # x's own mesh object: the usual case
            return True
    return False


def require_mesh_dims_exist(result: SpmdResult, owners: Iterable[tuple[str, RuleInput]], x: RuleInput,
                            inputs: Iterable[RuleInput]) -> SpmdResult:
    """Reject an answer with an attr whose dims_mapping or partial dims name a mesh dim its own mesh
    lacks (inputs on meshes of different sizes; Paddle then crashes or returns that attr as is).

    ``owners`` names each attr of ``result`` (inputs, then outputs) and the input whose mesh it
    carries. The error names the input on the other mesh: the attr's owner when that is not on a
    mesh of x's size, else the input whose dims_mapping brought the missing mesh dim."""
    others = [t for t in inputs if t.mesh is not None]
    for attr, (label, owner) in zip(result.inputs + result.outputs, owners, strict=True):
        mesh = attr.mesh
        if mesh is None:  # a spec without a mesh: its answer may hold no mesh dim at all
            used = [m for e in attr.dims_mapping for m in mesh_dims_of(e)] + sorted(attr.partial_dims)
            if used:
                what = "is None" if owner.missing else "has no process mesh"
                raise InvalidSpecError(
                    f"{owner.name} {what}, but the answer would put mesh dim {used[0]} of x's mesh {x.mesh} on "
                    f"{label} (Paddle returns that attr as is, or crashes); give {owner.name} a spec on a "
                    "ProcessMesh", kind=f"invalid-spec:{owner.name}:mesh")
            continue
        k = mesh.ndim
        bad = [m for e in attr.dims_mapping for m in mesh_dims_of(e) if m >= k] + \
            [p for p in attr.partial_dims if p >= k]
        if not bad:
            continue
        if owner.mesh is not None and x.mesh is not None and owner.mesh.ndim != x.mesh.ndim:
            culprit = owner
        else:
            culprit = next((t for t in others if any(m >= k for m in t.dims_mapping)),
                           next((t for t in others if t.mesh is not None and t.mesh.ndim > k), owner))
        raise InvalidSpecError(
            f"{culprit.name}: on mesh {culprit.mesh} while x is on mesh {x.mesh}, the answer would put mesh dim "
            f"{max(bad)} on {label}, whose mesh {mesh} has dims 0..{k - 1} (Paddle crashes or returns that "
            f"attr as is); put {culprit.name} on a mesh with as many dims as x's",
            kind=f"invalid-spec:{culprit.name}:mixed-mesh")
    return result


#: the Python RuleInput.attr as written above: the C stand-in's reference
_attr = RuleInput.attr
RuleInput._attr = _attr  # type: ignore[attr-defined]

if SPEEDUPS is not None:
    # valid_inputs and RuleInput.attr become C; a None input is still built by as_input itself
    RuleInput.attr = SPEEDUPS.configure_rules(  # type: ignore[method-assign]
        RuleInput, getter_mapping, as_input, _valid_inputs, _attr)
    valid_inputs = SPEEDUPS.valid_inputs
