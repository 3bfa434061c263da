"""``TensorDistAttr`` and ``DistTensorSpec`` with the Python surface of Paddle 3.3.1's
``paddle.distributed.auto_parallel.static.dist_attribute`` classes, as SPMD rule tests use it.

    call                                       Paddle 3.3.1 (and this module)
    TensorDistAttr()                           no mesh (process_mesh is None), dims_mapping []
    attr.dims_mapping = (0, -1)                stored as [0, -1]; ints, bools and numpy ints accepted
    attr._set_partial_dims([1])                Partial(SUM) on mesh dim 1
    attr._is_partial() / ._is_partial(1)       True / True;  attr._partial_dims() -> {1}
    attr.multi_dims_mapping = [[0, 1], [], []] co-sharding: axis 0 split over mesh dims 0 and 1, kept as
                                               given; dims_mapping then reads one mesh dim per axis
                                               (see :func:`collapse`), which is what the rules see
    DistTensorSpec([64, 32], attr)             copies attr (later edits of attr don't reach the spec)
    DistTensorSpec(spec)                       an independent copy
    spec.shape = [np.prod(s)]                  stored as a list of ints
    spec.dims_mapping(), spec.process_mesh()   methods; the mesh of a mesh-less spec is an empty mesh
    DistTensorSpec([0], TensorDistAttr())      Paddle's stand-in for a missing optional tensor
    attr.batch_dim / chunk_id = 1              ints (0 by default), printed by str, compared by ==
    attr.dynamic_dims = [True, False]          bools; [] until the first mapping set fills it with False
    attr.mark_annotated("process_mesh")        annotated -> {"process_mesh": True} (only the names of
                                               :data:`ANNOTATABLE`); is_annotated, clear_annotated
    attr.reset()                               no mesh, every axis -1, annotated cleared; batch_dim,
                                               chunk_id, dynamic_dims and partial status kept
    attr.verify()                              True only for an attr of a 0-D tensor (no VarDesc here)
    attr._set_split_factor(0, 2)               one mesh dim's split factor, printed by str

Where Paddle 3.3.1 crashes the interpreter (partial on an attr without a mesh, or on a mesh dim
outside the mesh) these classes raise ValueError instead.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping
from typing import Any, cast

from ..ops.kit.tensor import coshard_survivor
from ..types import DistAttr, mesh_dims_of
from ..types import DistTensorSpec as PortSpec
from .mesh import CoreProcessMesh, as_core_mesh, from_port_mesh


def _sequence(values: Any) -> bool:
    """What Paddle's binding takes for a list argument: a sequence (list, tuple, range, numpy
    array), not a str, a dict, a set or a generator."""
    return hasattr(type(values), "__getitem__") and not isinstance(values, (str, bytes, Mapping))


def _int_list(values: Any, what: str) -> list[int]:
    if not _sequence(values):
        raise TypeError(f"{what}(): incompatible function arguments; expected list[int], got {values!r}")
    try:
        return [operator.index(v) for v in values]
    except TypeError:
        raise TypeError(f"{what}(): incompatible function arguments; expected list[int], got {values!r}") from None


def collapse(multi: list[list[int]], mesh: CoreProcessMesh | None) -> list[int]:
    """What Paddle 3.3.1's ``dims_mapping`` reads for a co-sharded attr: per axis, ``-1`` for ``[]``,
    the one dim of a one-dim list, and for several dims the one of the largest mesh size, the first
    listed among equal sizes (measured on the registry route: docs/coshard-3.3.1.md)::

        mesh 2x2  [[0, 1], [], []]  ->  [0, -1, -1]      mesh 2x3  [[0, 1], [], []]  ->  [1, -1, -1]
        mesh 3x2  [[1, 0], [], []]  ->  [0, -1, -1]      mesh 2x2  [[0, 1], [-1], []] -> [0, -1, -1]

    Where Paddle reads past the mesh (no mesh at all, a member outside it) it crashes or answers
    garbage; here that is a ValueError naming the fix."""
    out = []
    for axis in multi:
        if len(axis) <= 1:
            out.append(axis[0] if axis else -1)
            continue
        if mesh is None:
            raise ValueError("(InvalidArgument) a co-sharded dims_mapping needs a process_mesh to read it "
                             "(Paddle 3.3.1 crashes here); set process_mesh first.")
        if any(not 0 <= m < mesh.ndim for m in axis):
            raise ValueError(f"(InvalidArgument) co-shard {axis} names a mesh dim outside the mesh's dims "
                             f"0..{mesh.ndim - 1} (Paddle 3.3.1 reads past the mesh here); use dims of the mesh.")
        out.append(coshard_survivor(axis, mesh.shape))
    return out


#: The field names ``mark_annotated`` records (any other name is ignored, as in Paddle 3.3.1), and
#: the only keys ``verify`` accepts in ``annotated``.
ANNOTATABLE = ("process_mesh", "dims_mapping", "batch_dim", "dynamic_dims", "chunk_id")


def _int64(value: Any, what: str) -> int:
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{what}(): incompatible function arguments; expected int, got {value!r}") from None
    if not -(2 ** 63) <= number < 2 ** 63:
        raise TypeError(f"{what}(): incompatible function arguments; {number} does not fit in int64")
    return number


def _bool_list(values: Any, what: str) -> list[bool]:
    if not _sequence(values):
        raise TypeError(f"{what}(): incompatible function arguments; expected list[bool], got {values!r}")
    try:
        return [bool(operator.index(v)) for v in values]
    except TypeError:
        raise TypeError(f"{what}(): incompatible function arguments; expected list[bool], got {values!r}") from None


class TensorDistAttr:
    """How one tensor is laid out on a mesh: ``process_mesh``, ``dims_mapping`` and the mesh dims
    on which it is Partial(SUM), plus the bookkeeping fields Paddle's attr carries (``batch_dim``,
    ``chunk_id``, ``dynamic_dims``, ``annotated``, a split factor), which no rule reads."""

    __slots__ = ("_mesh", "_dims_mapping", "_multi", "_partial", "_dynamic", "_batch_dim", "_chunk_id",
                 "_annotated", "_split")
    __hash__ = None  # type: ignore[assignment]  # unhashable, like Paddle's

    def __init__(self) -> None:
        self._mesh: CoreProcessMesh | None = None
        self._dims_mapping: list[int] = []
        self._multi: list[list[int]] | None = None  # set by multi_dims_mapping; None: one dim per axis
        self._partial: set[int] = set()
        self._dynamic: list[bool] = []  # Paddle's dynamic_dims: filled with False by a mapping set while empty
        self._batch_dim = 0
        self._chunk_id = 0
        self._annotated: dict[str, bool] = {}
        self._split: tuple[int, int] | None = None  # (mesh dim, factor) of _set_split_factor

    # --- public attributes -------------------------------------------------------------------
    @property
    def dims_mapping(self) -> list[int]:
        if self._multi is None:
            return list(self._dims_mapping)
        return collapse(self._multi, self.process_mesh)

    @dims_mapping.setter
    def dims_mapping(self, value: Iterable[int]) -> None:
        self._dims_mapping = _int_list(value, "dims_mapping")
        self._multi = None
        self._dynamic = self._dynamic or [False] * len(self._dims_mapping)

    @property
    def process_mesh(self) -> CoreProcessMesh | None:
        return None if self._mesh is None or self._mesh.empty() else self._mesh

    @process_mesh.setter
    def process_mesh(self, mesh: Any) -> None:
        self._mesh = as_core_mesh(mesh)

    @property
    def multi_dims_mapping(self) -> list[list[int]]:
        """Per tensor axis, the mesh dims that split it (``[]`` for replicated), in the order given."""
        if self._multi is not None:
            return [list(axis) for axis in self._multi]
        return [[] if m == -1 else [m] for m in self._dims_mapping]

    @multi_dims_mapping.setter
    def multi_dims_mapping(self, value: Iterable[Iterable[int]]) -> None:
        if not _sequence(value):
            raise TypeError(f"multi_dims_mapping(): incompatible function arguments; expected list[list[int]], "
                            f"got {value!r}")
        try:
            axes = [_int_list(axis, "multi_dims_mapping") for axis in value]
        except TypeError:
            raise TypeError(f"multi_dims_mapping(): incompatible function arguments; expected list[list[int]], "
                            f"got {value!r}") from None
        self._multi = axes
        self._dims_mapping = [axis[0] if len(axis) == 1 else -1 for axis in axes]  # (the shape of it; see getter)
        self._dynamic = self._dynamic or [False] * len(axes)

    @property
    def batch_dim(self) -> int:
        return self._batch_dim

    @batch_dim.setter
    def batch_dim(self, value: int) -> None:
        self._batch_dim = _int64(value, "batch_dim")

    @property
    def chunk_id(self) -> int:
        return self._chunk_id

    @chunk_id.setter
    def chunk_id(self, value: int) -> None:
        self._chunk_id = _int64(value, "chunk_id")

    @property
    def dynamic_dims(self) -> list[bool]:
        return list(self._dynamic)

    @dynamic_dims.setter
    def dynamic_dims(self, value: Iterable[bool]) -> None:
        self._dynamic = _bool_list(value, "dynamic_dims")

    # --- annotation and bookkeeping ------------------------------------------------------------
    @property
    def annotated(self) -> dict[str, bool]:
        return dict(self._annotated)

    @annotated.setter
    def annotated(self, value: Mapping[str, bool]) -> None:
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise TypeError(f"annotated(): incompatible function arguments; expected dict[str, bool], got {value!r}")
        self._annotated = {k: bool(v) for k, v in value.items()}

    def is_annotated(self, name: str) -> bool:
        return self._annotated.get(name, False)

    def mark_annotated(self, name: str) -> None:
        if name in ANNOTATABLE:
            self._annotated[name] = True

    def clear_annotated(self) -> None:
        self._annotated.clear()

    def reset(self) -> None:
        """Paddle's reset: no mesh, every axis replicated (the rank kept), annotated cleared; the
        other fields and the partial status stay."""
        rank = len(self._dims_mapping)
        self._mesh, self._multi, self._dims_mapping = None, None, [-1] * rank
        self._annotated.clear()

    def verify(self, tensor: Any = None) -> bool:
        """Paddle's check against the tensor's shape. Without a tensor (the only form here: a
        static-graph VarDesc has no stand-in) the shape is empty, so only a 0-D tensor's attr
        passes: no mapping entry, no dynamic dim, mapping entries inside the mesh, known
        annotations."""
        if tensor is not None:
            raise TypeError("verify(): paddle_spmd_port.compat has no VarDesc; call verify() without a tensor")
        ndim = self._mesh.ndim if self._mesh is not None else 0
        if ndim and any(not -1 <= m < ndim for m in self._dims_mapping):
            return False
        return not self._dims_mapping and not self._dynamic and all(k in ANNOTATABLE for k in self._annotated)

    def _set_split_factor(self, mesh_dim: int, factor: int) -> None:
        mesh_dim, factor = _int64(mesh_dim, "_set_split_factor"), _int64(factor, "_set_split_factor")
        if self._split is not None and self._split[0] != mesh_dim:
            raise ValueError("(InvalidArgument) At now only support to rearrange at one mesh dim.")
        self._split = (mesh_dim, factor)

    # --- partial status ----------------------------------------------------------------------
    def _is_partial(self, mesh_axis: int = -1) -> bool:
        return bool(self._partial) if mesh_axis == -1 else mesh_axis in self._partial

    def _partial_dims(self) -> set[int]:
        return set(self._partial)

    def _set_partial_dims(self, dims: Iterable[int]) -> None:
        """Mark ``dims`` Partial(SUM), one after the other, with Paddle's two checks (already
        partial, or sharding an axis), plus a check for a mesh that has the dim at all."""
        for dim in _int_list(dims, "_set_partial_dims"):
            if dim in self._partial:
                raise ValueError(f"(InvalidArgument) Trying to Set dim {dim} as Partial which is already a "
                                 "Partial dim.")
            mesh = self.process_mesh
            if mesh is None or not 0 <= dim < mesh.ndim:
                where = ("the TensorDistAttr has no process_mesh" if mesh is None
                         else f"the mesh has dims 0..{mesh.ndim - 1}")
                raise ValueError(f"(InvalidArgument) Cannot set mesh dim {dim} as Partial: {where} "
                                 "(Paddle 3.3.1 crashes here); set process_mesh first and use a dim of that mesh.")
            if any(dim in axis for axis in self.multi_dims_mapping):  # every co-shard member counts
                raise ValueError(f"(InvalidArgument) Trying to Set dim {dim} as Partial which is a Sharding dim.")
            self._partial.add(dim)

    def _clean_partial_dims(self, dims: Iterable[int]) -> None:
        for dim in _int_list(dims, "_clean_partial_dims"):
            if dim not in self._partial:
                raise ValueError(f"(InvalidArgument) Trying to clean Partial on dim {dim} but it is not Partial.")
            self._partial.discard(dim)

    def _clean_partial_status(self) -> None:
        self._partial.clear()

    # --- conversions ---------------------------------------------------------------------------
    def copy(self) -> TensorDistAttr:
        twin = TensorDistAttr()
        twin._mesh, twin._dims_mapping, twin._partial = self._mesh, list(self._dims_mapping), set(self._partial)
        twin._multi = None if self._multi is None else [list(axis) for axis in self._multi]
        twin._dynamic, twin._annotated = list(self._dynamic), dict(self._annotated)
        twin._batch_dim, twin._chunk_id, twin._split = self._batch_dim, self._chunk_id, self._split
        return twin

    def __copy__(self) -> TensorDistAttr:  # copy.copy: an independent attr, as Paddle's (no shared partial set)
        return self.copy()

    def __deepcopy__(self, memo: dict[int, Any]) -> TensorDistAttr:
        return self.copy()

    @classmethod
    def from_port(cls, attr: DistAttr) -> TensorDistAttr:
        """A rule's answer (the port's :class:`~paddle_spmd_port.types.DistAttr`) in Paddle's shape."""
        made = cls()
        made._mesh = from_port_mesh(attr.mesh)
        if any(type(e) is tuple for e in attr.dims_mapping):
            made._multi = [list(mesh_dims_of(e)) for e in attr.dims_mapping]
            made._dims_mapping = [-1 if type(e) is tuple else cast(int, e) for e in attr.dims_mapping]  # as the setter
        else:
            made._dims_mapping = list(attr.dims_mapping)  # type: ignore[arg-type]
        made._partial = set(attr.partial_dims)
        made._dynamic = [False] * len(attr.dims_mapping)
        return made

    # --- comparisons and text ------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorDistAttr):
            return False
        return (self.process_mesh == other.process_mesh if self.process_mesh is not None
                else other.process_mesh is None) and \
            self.multi_dims_mapping == other.multi_dims_mapping and self._partial == other._partial and \
            (self._batch_dim, self._chunk_id, self._dynamic, self._split) == \
            (other._batch_dim, other._chunk_id, other._dynamic, other._split)  # annotated is not compared

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __str__(self) -> str:
        mesh = self._mesh if self._mesh is not None else CoreProcessMesh()
        axes = "".join(f"[{','.join(map(str, axis))}] " for axis in self.multi_dims_mapping)
        dynamic = ",".join("1" if d else "0" for d in self._dynamic)
        annotated = ",".join(f"{k}: {int(v)}" for k, v in sorted(self._annotated.items()))
        partial = "".join(f"Partial(dims:{d}, SUM), " for d in sorted(self._partial))
        split = "" if self._split is None else f"mesh dim: {self._split[0]}, split factor: {self._split[1]}"
        return (f"{{process_mesh: {mesh}, dim_mappings: [{axes}], batch_dim: {self._batch_dim}, "
                f"chunk_id: {self._chunk_id}, skip_check_mesh: 0, dynamic_dims: [{dynamic}], "
                f"annotated: [{annotated}], partial: [{partial}], split_factor: {split}.}}")


class DistTensorSpec:
    """A tensor's global shape plus its ``TensorDistAttr``, the argument type of SPMD rules.

    ``DistTensorSpec()``, ``DistTensorSpec(other_spec)`` (a copy) and ``DistTensorSpec(shape,
    dist_attr)`` (copies ``dist_attr``) are the constructors Paddle offers.
    """

    __slots__ = ("_shape", "_attr")
    _shape: list[int]
    _attr: TensorDistAttr

    def __init__(self, *args: Any) -> None:
        if not args:
            self._shape, self._attr = [], TensorDistAttr()
        elif len(args) == 1 and isinstance(args[0], DistTensorSpec):
            self._shape, self._attr = list(args[0]._shape), args[0]._attr.copy()
        elif len(args) == 2 and isinstance(args[1], TensorDistAttr):
            self._shape, self._attr = _int_list(args[0], "DistTensorSpec"), args[1].copy()
        else:
            raise TypeError(
                "__init__(): incompatible constructor arguments. The following argument types are supported: "
                "DistTensorSpec(), DistTensorSpec(DistTensorSpec), DistTensorSpec(list[int], TensorDistAttr); "
                f"invoked with {args!r}")

    @property
    def shape(self) -> list[int]:
        return list(self._shape)

    @shape.setter
    def shape(self, value: Iterable[int]) -> None:
        self._shape = _int_list(value, "shape")

    def __copy__(self) -> DistTensorSpec:
        return DistTensorSpec(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> DistTensorSpec:
        return DistTensorSpec(self)

    def dims_mapping(self) -> list[int]:
        return self._attr.dims_mapping

    def set_dims_mapping(self, dims_mapping: Iterable[int]) -> None:
        self._attr.dims_mapping = dims_mapping

    def process_mesh(self) -> CoreProcessMesh:
        return self._attr._mesh if self._attr._mesh is not None else CoreProcessMesh()

    def set_process_mesh(self, mesh: Any) -> None:
        if mesh is None:
            raise TypeError("set_process_mesh(): incompatible function arguments; expected a ProcessMesh, got None")
        self._attr.process_mesh = mesh

    def to_port(self) -> PortSpec:
        """The port's :class:`~paddle_spmd_port.types.DistTensorSpec` for the same tensor."""
        attr = self._attr
        mesh = attr.process_mesh.to_port() if attr.process_mesh is not None else None
        mapping = tuple(attr._dims_mapping) if attr._multi is None else tuple(map(tuple, attr._multi))
        return PortSpec(tuple(self._shape), mapping, mesh, frozenset(attr._partial))

    def __str__(self) -> str:
        return f"{{tensor_shape:[{','.join(map(str, self._shape))}], dist_attr:{self._attr}}}"
