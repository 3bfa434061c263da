"""The data model: meshes, input specs, returned dist attrs and rule results.

Everything here is a frozen dataclass, validated when built (types and values that can be
checked without knowing which rule will read the object); a spec's consistency with its mesh is
judged when it is built too but reported by :meth:`DistTensorSpec.check`, run by every rule on
every input, because Paddle's own classes accept such input silently and so must the spec
constructor, for the comparator to be able to send the very same input to Paddle.

The functions marked :func:`c_stand_in` (``DistTensorSpec.__init__`` and ``.check``, ``DistAttr.make``,
``SpmdResult.make``) have C stand-ins in the optional C module, put in their place when it is in use
(:data:`SPEEDUPS`, :data:`CORE` ``"c"``); the Python written here stays the reference
(:data:`REFERENCES`), and the C hands it every input it does not handle itself.

Short forms, used in reports and repros and parsed back by :func:`parse_dist_attr`::

    [0,-1]          dims_mapping only: axis 0 split along mesh dim 0, axis 1 replicated
    [0,-1] P{1}     ... and Partial(SUM) pending on mesh dim 1
    [-1] @-         an attr that carries no process mesh (Paddle's answer for a None input)
    [(0,1),-1]      axis 0 co-sharded: split along mesh dim 0, each piece split again along mesh
                    dim 1 (Paddle's ``multi_dims_mapping`` ``[[0,1],[]]``; the order is the shard order)

A dims_mapping entry is a mesh dim, ``-1``, or a tuple of two or more mesh dims (a co-shard).
The short spellings Paddle also accepts are normalised when a spec is built: ``()`` is ``-1``
and ``(m,)`` is ``m``, so equal distributions are equal values.

Placements, one per mesh dim (the dynamic-graph view of the same thing)::

    dims_mapping [1,-1,0] on a 2-D mesh  ->  (S(2), S(0))
    dims_mapping [-1,-1] P{0} on 2-D     ->  (P, R)
    dims_mapping [(1,0),-1] on 2-D       ->  (S(0)#1, S(0)#0)    (#k: shard order k of that axis)
"""

from __future__ import annotations

import math
import operator
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

from .errors import ArgumentTypeError, InvalidSpecError

REPLICATED = -1
_set = object.__setattr__
_Fn = TypeVar("_Fn", bound=Callable[..., Any])
_Cls = TypeVar("_Cls", bound=type)


class Table(Protocol):
    """What :func:`memo_table` registers: a table that can say its size and be emptied."""

    def __len__(self) -> int: ...

    def clear(self) -> None: ...


_Table = TypeVar("_Table", bound=Table)
#: every table registered by :func:`memo_table`, in the order registered
MEMOS: list[Table] = []


def memo_table(table: _Table) -> _Table:
    """Registers ``table`` (values worked out once and found again: texts, parsed answers, interned
    values) as one that :func:`drop_memos` empties, and returns it. Each such table also empties
    itself at its own size limit; this is for a caller that knows when its entries stop being useful."""
    MEMOS.append(table)
    return table


def drop_memos() -> None:
    """Empties every table registered by :func:`memo_table`. A long run that works in rounds calls it
    between them: each round draws values the last one seldom repeats, so kept entries would mostly
    hold memory, and tables filling up to their limits over many rounds would make the run's peak
    memory grow with its length. Emptied, each round starts from the state the first one did.
    Entries are values (or keyed by an object the entry itself holds), so a round after the drop
    computes equal ones again: no answer depends on it."""
    for table in MEMOS:
        table.clear()


def _load_speedups() -> Any:
    """The optional C module (``_speedups.c``) that stands in for the hot functions marked
    :func:`c_stand_in`, or ``None``: when ``PADDLE_SPMD_PORT_PURE`` is set (to anything but ``0``), or
    when it was not built (an install without a C compiler builds none and runs the Python as it is)."""
    if os.environ.get("PADDLE_SPMD_PORT_PURE", "0") not in ("", "0"):
        return None
    try:
        from . import _speedups
    except ImportError:
        return None
    return _speedups


#: the C module when it is in use (see :func:`_load_speedups`), else ``None``; :data:`CORE` names which
SPEEDUPS: Any = _load_speedups()
CORE = "python" if SPEEDUPS is None else "c"

#: the Python reference of every C stand-in, by its name (``"DistTensorSpec.__init__"``,
#: ``"notation.merge_shardings"``, ...), whether or not the C module is in use: tests hold each C
#: function equal to the function here (tests/test_speedups.py)
REFERENCES: dict[str, Callable[..., Any]] = {}


def c_stand_in(name: str) -> Callable[[_Fn], _Fn]:
    """Mark the decorated function as the Python reference of the C module's stand-in ``name``: a C
    function with the same answers, faster, that hands every input off its common path back to the
    reference.

    ``name`` is the qualified name of what the C replaces. A method (``"DistTensorSpec.__init__"``,
    ``"DistAttr.make"``: a class name, capitalised, then the attribute) is put in place by the class
    decorator :func:`c_stand_ins` once its class exists, since the C method needs the class; a
    module's function (``"notation.merge_shardings"``) is replaced at once. Either way the Python
    stays reachable as :data:`REFERENCES` ``[name]``. Without the C module nothing is replaced."""

    def mark(fn: _Fn) -> _Fn:
        reference = fn.__func__ if isinstance(fn, staticmethod) else fn
        REFERENCES[name] = reference
        if name[:1].isupper():  # a method: c_stand_ins finds the mark
            reference.c_stand_in = name  # type: ignore[attr-defined]
            return fn
        return fn if SPEEDUPS is None else cast(_Fn, SPEEDUPS.stand_in(name, reference))

    return mark


def c_stand_ins(cls: _Cls) -> _Cls:
    """Class decorator: when the C module is in use, put the C stand-in of every method of ``cls``
    marked :func:`c_stand_in` in that method's place (the C module sets the class attribute itself:
    a class's call slot must be set after its ``__init__``)."""
    if SPEEDUPS is not None:
        for attr, value in list(vars(cls).items()):
            name = getattr(value.__func__ if isinstance(value, staticmethod) else value, "c_stand_in", None)
            if name is not None:
                SPEEDUPS.stand_in(name, REFERENCES[name], cls, attr)
    return cls


def _items(value: Iterable[Any], what: str) -> tuple[Any, ...]:
    """``value`` as a tuple (the very tuple when it is one), when it is a sequence (not a str, bytes or
    dict); else :class:`ArgumentTypeError` (a TypeError) naming ``what``."""
    if type(value) is tuple:
        return value
    kind = f"invalid-spec:{what}:type"
    if isinstance(value, (str, bytes, dict)) or not isinstance(value, Iterable):
        raise ArgumentTypeError(f"{what} must be a sequence of ints, got {type(value).__name__} {value!r:.60}",
                                kind=kind)
    try:
        return tuple(value)
    except TypeError:
        raise ArgumentTypeError(f"{what} must be a sequence of ints, got {value!r:.60}", kind=kind) from None


def _as_int(item: Any) -> int | None:
    """``item`` as an exact int when it is an integer -- anything with ``__index__``: an int, a bool
    (``True`` is 1, as Paddle's ``TensorDistAttr.dims_mapping`` and ``DistTensorSpec`` take it), an int
    subclass, a numpy integer -- else None (a float, a str, None, a numpy bool: numpy gives it no
    ``__index__``)."""
    if type(item) is int:
        return item
    if isinstance(item, float):
        return None  # a float has no __index__; checked first as the likeliest wrong type
    try:
        return operator.index(item)
    except TypeError:
        return None


def _int_tuple(value: Iterable[Any], what: str) -> tuple[int, ...]:
    """``value`` as a tuple of exact ints (integers converted by :func:`_as_int`; a tuple of exact ints
    is returned as it is); anything else raises :class:`ArgumentTypeError` (a TypeError) naming ``what``."""
    items = _items(value, what)
    if all(type(item) is int for item in items):
        return items
    out = []
    for item in items:
        number = _as_int(item)
        if number is None:
            raise ArgumentTypeError(f"{what} must hold ints, got {item!r:.30} in {value!r:.60}",
                                    kind=f"invalid-spec:{what}:type")
        out.append(number)
    return tuple(out)


def _int_frozenset(value: Iterable[Any], what: str) -> frozenset[int]:
    """``value`` as a frozenset of exact ints, as :func:`_int_tuple` converts them (a frozenset of exact
    ints is returned as it is)."""
    if type(value) is frozenset and all(type(item) is int for item in value):
        return value
    return frozenset(_int_tuple(value, what))


UNKNOWN_SIZE = -1
"""A shape's size for a dimension known only at run time (Paddle's static programs write -1)."""

MeshDims = int | tuple[int, ...]
"""One dims_mapping entry: a mesh dim, ``-1`` (replicated) or a co-shard (two or more mesh dims, in order)."""
DimsMapping = tuple[MeshDims, ...]


def entry_of(members: Sequence[int]) -> MeshDims:
    """The dims_mapping entry of an axis split along ``members`` (in shard order): ``()`` -> -1,
    ``(m,)`` -> m, two or more -> the tuple (the inverse of :func:`mesh_dims_of`)."""
    return -1 if not members else members[0] if len(members) == 1 else tuple(members)


def _mapping_tuple(value: Iterable[Any], what: str) -> DimsMapping:
    """``value`` as a dims_mapping: integers (:func:`_as_int`), or ordered sequences of them for
    co-sharded axes (tuples, lists, numpy arrays: Paddle's multi_dims_mapping takes them), normalised
    by :func:`entry_of`; a tuple of exact ints is returned as it is. Anything else raises
    :class:`ArgumentTypeError` naming ``what``."""
    items = _items(value, what)
    if all(type(item) is int for item in items):
        return items
    out: list[MeshDims] = []
    for item in items:
        number = _as_int(item)
        if number is not None:
            out.append(number)
        elif _is_ordered(item):
            out.append(entry_of(_int_tuple(item, what)))
        else:
            raise ArgumentTypeError(f"{what} must hold ints (or tuples of ints for a co-sharded axis), got "
                                    f"{item!r:.30} in {value!r:.60}", kind=f"invalid-spec:{what}:type")
    return tuple(out)


def mesh_dims_of(entry: MeshDims) -> tuple[int, ...]:
    """The mesh dims one dims_mapping entry splits its axis along, in shard order: ``-1`` -> ``()``,
    ``0`` -> ``(0,)``, ``(1, 0)`` -> ``(1, 0)``."""
    if type(entry) is tuple:
        return entry
    return () if entry == -1 else (cast(int, entry),)


def is_coshard(dims_mapping: DimsMapping) -> bool:
    """True when some axis is split along two or more mesh dims."""
    return tuple in {*map(type, dims_mapping)}


def plain_mapping(dims_mapping: DimsMapping, where: str) -> tuple[int, ...]:
    """``dims_mapping`` for code that handles one mesh dim per axis only; a co-shard raises
    :class:`InvalidSpecError` naming ``where``, so such code never misreads a co-shard silently."""
    if is_coshard(dims_mapping):
        raise InvalidSpecError(f"{where} does not handle co-sharded dims_mapping {format_mapping(dims_mapping)} "
                               "yet; give one mesh dim (or -1) per axis", kind="invalid-spec:coshard:unsupported")
    return cast("tuple[int, ...]", dims_mapping)


def _is_seq(value: Any) -> bool:
    return isinstance(value, Iterable) and not isinstance(value, (str, bytes, dict))


def _is_ordered(value: Any) -> bool:
    """A sequence with an order (indexable and sized: a numpy array, a range), not a str, bytes,
    dict or set."""
    return hasattr(value, "__getitem__") and hasattr(value, "__len__") and not isinstance(value, (str, bytes, dict))


def _nested(value: Any) -> bool:
    """True when ``value`` is a sequence whose first item is a sequence too (not a str or bytes):
    a mesh given as Paddle's nested process ids rather than as a shape."""
    if type(value) is tuple and (not value or type(value[0]) is int) or not _is_seq(value):
        return False  # (the usual ProcessMesh((2, 3)) decided at once)
    try:
        first = next(iter(value))
    except (StopIteration, TypeError):
        return False
    return _is_seq(first)


def _names(value: Any) -> bool:
    """True when ``value`` is a non-empty sequence of str (read without using it up: not an iterator):
    dim names given where process ids go."""
    if not _is_ordered(value) or isinstance(value, Iterator):
        return False
    return len(value) > 0 and all(isinstance(n, str) for n in value)


def _unnest(grid: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The shape and the row-major ids of a mesh given as nested process ids; a ragged grid raises
    :class:`InvalidSpecError`."""
    shape: list[int] = []
    level: Any = grid
    while _is_seq(level):  # the shape, read down the first items
        items = _items(level, "ProcessMesh.mesh")
        shape.append(len(items))
        if not items:
            break
        level = items[0]
    ids: list[Any] = []

    def walk(level: Any, depth: int) -> None:
        items = _items(level, "ProcessMesh.mesh") if _is_seq(level) else None
        if items is None or len(items) != shape[depth]:
            raise InvalidSpecError(f"ProcessMesh.mesh: the process ids {grid!r:.80} do not form a full grid "
                                   f"of shape {tuple(shape)}", kind="invalid-spec:ProcessMesh.mesh")
        for item in items:
            if depth + 1 < len(shape):
                walk(item, depth + 1)
            elif _is_seq(item):
                raise InvalidSpecError(f"ProcessMesh.mesh: the process ids {grid!r:.80} do not form a full grid "
                                       f"of shape {tuple(shape)}", kind="invalid-spec:ProcessMesh.mesh")
            else:
                ids.append(item)

    walk(grid, 0)
    if not ids:
        raise InvalidSpecError(f"ProcessMesh.mesh must hold at least one process id, got {grid!r:.60}",
                               kind="invalid-spec:ProcessMesh.mesh")
    return tuple(shape), _int_tuple(ids, "ProcessMesh.mesh")


def _foreign_mesh(what: str, mesh: Any) -> str:
    """The message for ``mesh`` of another type where a :class:`ProcessMesh` belongs. Paddle's own
    mesh is the likely one (both classes are called ProcessMesh): the message says how to build the
    port's from it."""
    kind = type(mesh)
    text = f"{what} must be a paddle_spmd_port.ProcessMesh or None, got {kind.__module__}.{kind.__qualname__}"
    if all(hasattr(mesh, name) for name in ("shape", "process_ids", "dim_names")):
        text += ("; from a mesh m of Paddle's: ProcessMesh(m.shape, m.process_ids, m.dim_names), or "
                 "ProcessMesh(mesh=[[0, 1], [2, 3]], dim_names=[...]) as Paddle's is built")
    return text


def _entry_text(entry: MeshDims) -> str:
    return "(" + ",".join(map(str, entry)) + ")" if type(entry) is tuple else str(entry)


@dataclass(frozen=True, init=False)
class ProcessMesh:
    """A logical device grid.

    ``ProcessMesh((2, 3))`` numbers processes 0..5 row-major and names the dims ``d0, d1`` like
    Paddle's ``dist.ProcessMesh`` does when no names are given.

    Paddle's own call forms are taken too: the process ids laid out as the grid, by keyword
    (``ProcessMesh(mesh=[[0, 1], [2, 3]], dim_names=["x", "y"])``; ``mesh=[0, 1]`` is a 1-D mesh of ids
    0 and 1), or first whose items are themselves sequences (``ProcessMesh([[0, 1], [2, 3]], ["x", "y"])``,
    the names then positional as in Paddle); lists, tuples or numpy arrays, ids as ints or numpy ints.
    The grid gives the shape and the ids (row-major), so no ``shape`` or ``process_ids`` goes with it. A
    flat sequence given first stays the shape: Paddle's 1-D ``ProcessMesh([0, 1])`` is
    ``ProcessMesh(mesh=[0, 1])`` or ``ProcessMesh((2,), (0, 1))`` here. Bad input raises
    :class:`InvalidSpecError` (:class:`ArgumentTypeError` for a wrong type) naming the argument.
    """

    shape: tuple[int, ...]
    """Size of each mesh dimension, e.g. ``(2, 3)``."""
    process_ids: tuple[int, ...] | None = None
    """Process id of each mesh slot, row-major; defaults to ``0..prod(shape)-1``."""
    dim_names: tuple[str, ...] | None = None
    """Name of each mesh dimension; defaults to ``d0, d1, ...``."""

    _hash: int = field(default=0, init=False, repr=False, compare=False)
    """Hash of shape and ids, worked out once (meshes key the interned attrs of every answer); only
    ints, so it is the same in every process and survives pickling."""

    def __init__(self, shape: Any = None, process_ids: Any = None, dim_names: Any = None, *,
                 mesh: Any = None) -> None:
        if mesh is not None or _nested(shape):  # the ids laid out as the grid
            grid, by_keyword = (mesh, True) if mesh is not None else (shape, False)
            if not _is_seq(grid):
                raise ArgumentTypeError("ProcessMesh.mesh must be the process ids laid out as the grid (a list, tuple "
                                        f"or numpy array, e.g. [[0, 1], [2, 3]]), got {type(grid).__name__} "
                                        f"{grid!r:.60}", kind="invalid-spec:ProcessMesh.mesh:type")
            if by_keyword and shape is not None:
                raise InvalidSpecError("ProcessMesh: give mesh= (the process ids laid out as the grid) or a shape, "
                                       f"not both; got mesh={mesh!r:.60} and shape={shape!r:.60}",
                                       kind="invalid-spec:mesh:both")
            if process_ids is not None and dim_names is None and not by_keyword and _names(process_ids):
                process_ids, dim_names = None, process_ids  # Paddle's ProcessMesh(grid, dim_names) by position
            if process_ids is not None:
                raise InvalidSpecError("ProcessMesh: give the process ids laid out as the grid (Paddle's form, "
                                       f"e.g. [[0, 1], [2, 3]]) or a shape with process_ids, not both; got "
                                       f"{grid!r:.60} and process_ids={process_ids!r:.60}",
                                       kind="invalid-spec:mesh:both")
            shape, process_ids = _unnest(grid)
        elif process_ids is not None and _names(process_ids):
            raise ArgumentTypeError(f"ProcessMesh.process_ids must hold ints, got the names {process_ids!r:.40}: a "
                                    "flat sequence given first is the shape here; Paddle's ProcessMesh([0, 1], ['x']) "
                                    "is ProcessMesh(mesh=[0, 1], dim_names=['x'])",
                                    kind="invalid-spec:ProcessMesh.process_ids:type")
        elif shape is None:
            raise ArgumentTypeError("ProcessMesh needs a shape (e.g. (2, 3)) or mesh= (the process ids laid out as "
                                    "the grid, e.g. [[0, 1], [2, 3]])", kind="invalid-spec:ProcessMesh.shape:type")
        _set(self, "shape", shape)
        _set(self, "process_ids", process_ids)
        _set(self, "dim_names", dim_names)
        if type(shape) is list:  # ProcessMesh([2, 3]) as ProcessMesh((2, 3))
            shape = tuple(shape)
        ids = process_ids
        if dim_names is None and type(shape) is tuple and shape \
                and all(type(size) is int for size in shape) and min(shape) >= 1:
            # the common ProcessMesh((2, 3)), or with its ids 0..n-1 spelt out: default ids and
            # names, worked out once per shape
            layout = _DEFAULT_LAYOUTS.get(shape)
            if layout is None:
                layout = _DEFAULT_LAYOUTS[shape] = (tuple(range(math.prod(shape))),
                                                    tuple(f"d{i}" for i in range(len(shape))))
            if type(ids) is list:
                ids = tuple(ids)
            if ids is None or (type(ids) is tuple and ids == layout[0] and all(type(i) is int for i in ids)):
                _set(self, "shape", shape)
                _set(self, "process_ids", layout[0])
                _set(self, "dim_names", layout[1])
                _set(self, "_hash", hash((shape, layout[0])))
                return
        self._check()

    def _check(self) -> None:
        """Checks and normalises the fields as given (off the common path of ``__init__``)."""
        shape = _int_tuple(self.shape, "ProcessMesh.shape")
        if not shape or any(s < 1 for s in shape):
            hint = "; e.g. (2,) or (2, 3)"
            if shape and self.process_ids is None and min(shape) >= 0:  # Paddle's 1-D ProcessMesh([0, 1])?
                hint += (" (a flat sequence given first is the shape here: the process ids of a 1-D mesh go "
                         f"in mesh=, e.g. ProcessMesh(mesh={list(shape)}))")
            raise InvalidSpecError(f"ProcessMesh.shape must be a non-empty tuple of positive sizes, got "
                                   f"{self.shape!r:.60}{hint}", kind="invalid-spec:ProcessMesh.shape")
        size = math.prod(shape)
        ids = tuple(range(size)) if self.process_ids is None else \
            _int_tuple(self.process_ids, "ProcessMesh.process_ids")
        if len(ids) != size or len(set(ids)) != size:
            raise InvalidSpecError(
                f"ProcessMesh.process_ids must list {size} distinct ids for shape {shape}, got {ids!r:.80}",
                kind="invalid-spec:process_ids")
        if min(ids) < 0:
            raise InvalidSpecError(f"ProcessMesh.process_ids must be ids >= 0 (as Paddle's ProcessMesh requires), "
                                   f"got {ids!r:.80}", kind="invalid-spec:process_ids")
        if self.dim_names is None:
            names = tuple(f"d{i}" for i in range(len(shape)))
        elif isinstance(self.dim_names, (str, bytes)) or not isinstance(self.dim_names, Iterable) or \
                not all(isinstance(n, str) for n in self.dim_names):
            raise ArgumentTypeError(f"ProcessMesh.dim_names must be a sequence of str, got {self.dim_names!r:.60}",
                                    kind="invalid-spec:dim_names:type")
        else:
            names = tuple(n if type(n) is str else str(n) for n in self.dim_names)  # numpy's str_ as str
        if len(names) != len(shape) or len(set(names)) != len(names):
            raise InvalidSpecError(
                f"ProcessMesh.dim_names must give {len(shape)} distinct names for shape {shape}, got {names!r:.80}",
                kind="invalid-spec:dim_names")
        _set(self, "shape", shape)
        _set(self, "process_ids", ids)
        _set(self, "dim_names", names)
        _set(self, "_hash", hash((shape, ids)))

    def __hash__(self) -> int:
        return self._hash

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        return "x".join(map(str, self.shape))

    def nested_ids(self) -> list[Any]:
        """Process ids as nested lists of the mesh's shape: ``[[0, 1, 2], [3, 4, 5]]`` for (2, 3)."""
        ids: list[Any] = list(self.process_ids or ())
        for size in reversed(self.shape[1:]):
            ids = [ids[i:i + size] for i in range(0, len(ids), size)]
        return ids

    def to_json(self) -> dict[str, Any]:
        return {"shape": list(self.shape), "process_ids": list(self.process_ids or ()),
                "dim_names": list(self.dim_names or ())}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProcessMesh:
        key = (tuple(data["shape"]), tuple(data["process_ids"]), tuple(data["dim_names"]))
        mesh = _MESHES_READ.get(key)
        if mesh is None:  # a sweep reads the same few meshes hundreds of thousands of times
            mesh = _MESHES_READ[key] = cls(*key)
        return mesh


_MESHES_READ: dict[tuple[Any, ...], ProcessMesh] = {}
#: every DistAttr made by :meth:`DistAttr.make` (and its C stand-in), by value: see there
_INTERNED: dict[tuple[Any, ...], DistAttr] = memo_table({})
#: the interned-attr table is emptied when it grows past this many entries
INTERNED_LIMIT = 65536

if SPEEDUPS is not None:  # what the C stand-ins below read besides their own class
    SPEEDUPS.configure_types(ProcessMesh, InvalidSpecError, _INTERNED, INTERNED_LIMIT)
#: shape -> (default process ids, default dim names); only ever keyed by a checked tuple of ints
_DEFAULT_LAYOUTS: dict[tuple[int, ...], tuple[tuple[int, ...], tuple[str, ...]]] = {}


def format_mapping(dims_mapping: Sequence[MeshDims], partial_dims: Iterable[int] = (),
                   mesh_present: bool = True) -> str:
    text = "[" + ",".join(map(_entry_text if tuple in {*map(type, dims_mapping)} else str, dims_mapping)) + "]"
    partial = sorted(partial_dims)
    if partial:
        text += " P{" + ",".join(map(str, partial)) + "}"
    if not mesh_present:
        text += " @-"
    return text


@c_stand_ins
@dataclass(frozen=True, init=False, slots=True)
class DistTensorSpec:
    """One input tensor of a rule call: its global shape and how it is distributed.

    A missing optional input (``scale=None``) is passed as ``None`` instead of a spec.

    ``shape``, ``dims_mapping`` and ``partial_dims`` may be given as tuples or lists (co-shards as
    nested tuples, lists or numpy arrays), by position or keyword; the spec holds tuples and a frozenset of
    exact ints. An integer is anything with ``__index__`` (numpy ints included); a bool is an
    integer too, ``True`` 1 and ``False`` 0, as Paddle 3.3.1's ``TensorDistAttr.dims_mapping``,
    ``_set_partial_dims`` and ``DistTensorSpec`` take them. A float, a str or None is refused
    (:class:`ArgumentTypeError`), as Paddle refuses them; so is a numpy bool, which has no
    ``__index__`` in numpy 2 (Paddle converts it, and a numpy float32, through ``__int__``: the port
    does not follow that). A size of ``-1`` is a dimension unknown until run time, as a static
    program declares a batch axis (``paddle.static.data(shape=[-1, 1024])``): Paddle's rules read
    ranks, not sizes, and answer such a spec as any other, and so does the port. A size below -1 is
    refused (:class:`InvalidSpecError`): no tensor has one.
    """

    shape: tuple[int, ...]
    """Global shape."""
    dims_mapping: DimsMapping
    """Per tensor axis: the mesh dim that splits it, -1 for replicated, or a tuple of mesh dims
    (co-shard, in shard order)."""
    mesh: ProcessMesh | None
    """The mesh; ``None`` only to reproduce Paddle's empty-attr inputs (x may never lack one)."""
    partial_dims: frozenset[int] = field(default_factory=frozenset)
    """Mesh dims on which the tensor is Partial(SUM)."""
    _problem: str | None = field(default=None, init=False, repr=False, compare=False, hash=False)
    """Which problem :meth:`check` will report (``"length"``, ``"mesh-dim"``, ``"duplicate"``,
    ``"partial-range"``, ``"partial-shard"``, ``"mesh"``), found once at construction; :meth:`check`
    words the message (only a spec that is checked needs one)."""
    coshard: bool = field(default=False, init=False, repr=False, compare=False, hash=False)
    """True when some axis is split along two or more mesh dims (worked out at construction)."""
    valid_on_mesh: bool = field(default=False, init=False, repr=False, compare=False, hash=False)
    """True when the spec is on a mesh and passes :meth:`check`: the rules take such a spec as it is
    (worked out at construction)."""

    @c_stand_in("DistTensorSpec.__init__")
    def __init__(self, shape: Iterable[int], dims_mapping: Iterable[MeshDims], mesh: ProcessMesh | None,
                 partial_dims: Iterable[int] = frozenset()) -> None:
        # each argument in its normal form (tuples and a frozenset of exact ints), then the types and
        # values that are wrong whatever the mesh, then the spec judged on its mesh (_first_problem),
        # once: a spec is immutable, and check() reports what was found here
        shape = _int_tuple(shape, "DistTensorSpec.shape")
        dims_mapping = _mapping_tuple(dims_mapping, "DistTensorSpec.dims_mapping")
        partial_dims = _int_frozenset(partial_dims, "partial_dims")
        if any(size < UNKNOWN_SIZE for size in shape):
            raise InvalidSpecError(f"DistTensorSpec.shape must be sizes >= 0 or -1 (a size unknown until run "
                                   f"time), got {shape!r}")
        if mesh is not None and not isinstance(mesh, ProcessMesh):
            raise ArgumentTypeError(_foreign_mesh("DistTensorSpec.mesh", mesh), kind="invalid-spec:mesh:type")
        _set(self, "shape", shape)
        _set(self, "dims_mapping", dims_mapping)
        _set(self, "mesh", mesh)
        _set(self, "partial_dims", partial_dims)
        _set(self, "coshard", is_coshard(dims_mapping))
        problem = self._first_problem("")
        _set(self, "_problem", None if problem is None else problem[0])
        _set(self, "valid_on_mesh", mesh is not None and problem is None)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @c_stand_in("DistTensorSpec.check")
    def check(self, arg: str) -> None:
        """Reject what Paddle accepts silently or crashes on; ``arg`` is the argument's name.

        The spec is judged once, when it is built (it is immutable); this reports what was found:
        an :class:`~.errors.InvalidSpecError` naming ``arg`` and the problem."""
        if self._problem is not None:  # found on these (immutable) values: worded from them again
            _, message = cast("tuple[str, str]", self._first_problem(arg))
            raise InvalidSpecError(message, kind=f"invalid-spec:{arg}:{self._problem}")

    def _first_problem(self, arg: str) -> tuple[str, str] | None:
        """The first problem of the spec, in a fixed order (mesh, length, range, duplicates,
        partial), as ``(what, message)``: ``what`` names it (``"length"``, ``"mesh-dim"``,
        ``"duplicate"``, ``"partial-range"``, ``"partial-shard"``, ``"mesh"``; the end of the error's
        ``kind``), the message starts with ``arg``, the argument's name; ``None`` when the spec is
        valid."""
        mesh, dm = self.mesh, self.dims_mapping
        if mesh is None:
            if dm or self.partial_dims:
                return "mesh", f"{arg}: a dims_mapping or partial dims need a mesh; give {arg} a ProcessMesh"
            return None
        n = len(mesh.shape)
        if len(dm) != len(self.shape):
            return "length", (f"{arg}: dims_mapping {format_mapping(dm)} has {len(dm)} entries but the "
                              f"shape {list(self.shape)} has rank {len(self.shape)}; give one entry per tensor axis")
        used: list[int] = []
        for entry in dm:
            co = type(entry) is tuple
            for m in mesh_dims_of(entry):
                if not -1 <= m < n or (m == -1 and co):
                    where = f"co-shard {_entry_text(entry)}" if co else f"mesh dim {m}"
                    return "mesh-dim", (f"{arg}: dims_mapping {format_mapping(dm)} uses {where}, but the mesh "
                                        f"{mesh} has dims 0..{n - 1}; use -1 (replicated), a dim in that range, "
                                        "or a tuple of distinct dims in that range (co-shard)")
                if m != -1:
                    used.append(m)
        if len(used) != len(set(used)):
            return "duplicate", (f"{arg}: dims_mapping {format_mapping(dm)} splits along the same mesh dim "
                                 "twice; each mesh dim may shard at most one axis, once")
        for p in sorted(self.partial_dims):
            if not 0 <= p < n:
                return "partial-range", f"{arg}: partial dim {p} is outside the mesh {mesh} (dims 0..{n - 1})"
            if p in used:
                return "partial-shard", (f"{arg}: mesh dim {p} both shards an axis and is partial; "
                                         "a mesh dim is either Shard or Partial")
        return None

    def __str__(self) -> str:
        return f"{list(self.shape)}{format_mapping(self.dims_mapping, self.partial_dims, self.mesh is not None)}"

    def to_json(self) -> dict[str, Any]:
        return {"shape": list(self.shape), "dims_mapping": _mapping_to_json(self.dims_mapping),
                "partial_dims": sorted(self.partial_dims),
                "mesh": None if self.mesh is None else self.mesh.to_json()}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> DistTensorSpec | None:
        if data is None:
            return None
        mesh = None if data["mesh"] is None else ProcessMesh.from_json(data["mesh"])
        key = (tuple(data["shape"]), _mapping_from_json(data["dims_mapping"]), mesh, frozenset(data["partial_dims"]))
        spec = _SPECS_READ.get(key)
        if spec is None:  # specs are immutable values: equal JSON, one object
            if len(_SPECS_READ) > 200_000:
                _SPECS_READ.clear()
            spec = _SPECS_READ[key] = cls(*key)
        return spec


def _mapping_to_json(dims_mapping: DimsMapping) -> list[Any]:
    """A dims_mapping as JSON: a co-shard is a nested list (``[[0, 1], -1]``)."""
    return [list(e) if type(e) is tuple else e for e in dims_mapping]


def _mapping_from_json(items: list[Any]) -> DimsMapping:
    """A dims_mapping read back from JSON, where a co-shard is a nested list."""
    if list in {*map(type, items)}:
        return tuple(tuple(m) if type(m) is list else m for m in items)
    return tuple(items)


@c_stand_ins
@dataclass(frozen=True, slots=True)
class DistAttr:
    """One dist attr of a rule's answer (an input's wanted distribution, or an output's)."""

    dims_mapping: DimsMapping
    """As :attr:`DistTensorSpec.dims_mapping` (a co-shard is a tuple of mesh dims)."""
    partial_dims: frozenset[int] = field(default_factory=frozenset)
    """Mesh dims with a pending Partial(SUM); the rules here never use another reduce type."""
    mesh: ProcessMesh | None = None
    """``None`` where Paddle returns an attr without a process mesh (the answer for a None input)."""

    def __post_init__(self) -> None:
        if type(self.dims_mapping) is not tuple:
            object.__setattr__(self, "dims_mapping", tuple(self.dims_mapping))
        if type(self.partial_dims) is not frozenset:
            object.__setattr__(self, "partial_dims", frozenset(self.partial_dims))

    @staticmethod
    @c_stand_in("DistAttr.make")
    def make(dims_mapping: DimsMapping, partial_dims: frozenset[int], mesh: ProcessMesh | None) -> DistAttr:
        """Fast constructor for the rules' hot path: the arguments must already be a tuple and a
        frozenset. Attrs are immutable values, so equal ones are shared: interned by value, so a new
        but equal mesh finds the same attrs. The key holds the mesh's stored hash, an int, instead of
        the mesh (hashing a mesh runs a Python ``__hash__``, a third of the lookup); a hit counts only
        when its mesh is this one or equal to it. Another mesh of the same hash (the hash leaves out
        dim names: a 2x3 mesh named ``x, y`` and one named ``d0, d1``) is keyed by the mesh itself."""
        key: tuple[Any, ...] = (dims_mapping, partial_dims, None if mesh is None else mesh._hash)
        attr = _INTERNED.get(key)
        if attr is not None:
            if attr.mesh is mesh or attr.mesh == mesh:
                return attr
            key = (dims_mapping, partial_dims, mesh)  # the hash's key is taken by another mesh
            attr = _INTERNED.get(key)
            if attr is not None:
                return attr
        fresh = object.__new__(DistAttr)
        _set(fresh, "dims_mapping", dims_mapping)
        _set(fresh, "partial_dims", partial_dims)
        _set(fresh, "mesh", mesh)
        if len(_INTERNED) > INTERNED_LIMIT:
            _INTERNED.clear()
        _INTERNED[key] = fresh
        return fresh

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as a :meth:`make` call, so an attr read back in another process (a worker's
        answer) is the interned one there too."""
        return (DistAttr.make, (self.dims_mapping, self.partial_dims, self.mesh))

    def __str__(self) -> str:
        return format_mapping(self.dims_mapping, self.partial_dims, self.mesh is not None)

    def placements(self) -> tuple[str, ...]:
        """Per mesh dim: ``S(axis)``, ``P`` or ``R`` (empty for an attr without a mesh); a co-shard
        member is ``S(axis)#k``, k its shard order."""
        if self.mesh is None:
            return ()
        out = ["R"] * self.mesh.ndim
        for axis, entry in enumerate(self.dims_mapping):
            if type(entry) is tuple:
                for order, m in enumerate(entry):
                    if 0 <= m < len(out):
                        out[m] = f"S({axis})#{order}"
            elif 0 <= cast(int, entry) < len(out):
                out[cast(int, entry)] = f"S({axis})"
        for p in self.partial_dims:
            if 0 <= p < len(out):
                out[p] = "P"
        return tuple(out)

    def to_json(self) -> dict[str, Any]:
        return {"dims_mapping": _mapping_to_json(self.dims_mapping), "partial_dims": sorted(self.partial_dims),
                "mesh": None if self.mesh is None else self.mesh.to_json()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DistAttr:
        mesh = None if data["mesh"] is None else ProcessMesh.from_json(data["mesh"])
        return DistAttr.make(_mapping_from_json(data["dims_mapping"]), frozenset(data["partial_dims"]), mesh)


def clear_caches() -> None:
    """Empty the table of interned attrs (a benchmark starts each timed loop cold, so that no loop
    gains from work an earlier one did)."""
    _INTERNED.clear()


_SPECS_READ: dict[tuple[Any, ...], DistTensorSpec] = memo_table({})

_ATTR_RE = re.compile(r"^\s*\[(?P<dm>[-\d,\s()]*)\](?:\s*P\{(?P<p>[\d,\s]*)\})?(?P<nomesh>\s*@-)?\s*$")
_ENTRY_RE = re.compile(r"\s*(?:\((?P<co>[-\d,\s]*)\)|(?P<m>-?\d+))\s*(?:,|$)")


def _parse_mapping(text: str) -> DimsMapping:
    entries: list[MeshDims] = []
    pos = 0
    while text[pos:].strip():
        match = _ENTRY_RE.match(text, pos)
        if match is None:
            raise ValueError(f"cannot parse dims_mapping entry at {text[pos:]!r}; expected -1, a mesh dim or (0,1)")
        if match["co"] is not None:
            entries.append(entry_of(tuple(int(v) for v in match["co"].split(",") if v.strip())))
        else:
            entries.append(int(match["m"]))
        pos = match.end()
    return tuple(entries)


def parse_dist_attr(text: str, mesh: ProcessMesh | None = None) -> DistAttr:
    """Inverse of ``str(DistAttr)``: ``"[0,-1] P{1}"`` -> DistAttr((0, -1), {1}, mesh)."""
    match = _ATTR_RE.match(text)
    if match is None:
        raise ValueError(f"cannot parse dist attr {text!r}; expected a form like '[0,-1]' or '[0,-1] P{{1}}'")
    dm = _parse_mapping(match["dm"])
    partial = frozenset(int(v) for v in (match["p"] or "").split(",") if v.strip())
    return DistAttr(dm, partial, None if match["nomesh"] else mesh)


@c_stand_ins
@dataclass(frozen=True, slots=True)
class SpmdResult:
    """A rule's answer: the dist attrs it wants for its inputs and those it gives its outputs,
    in Paddle's order and count.

    It also reads as the pair Paddle's ``infer_forward`` / ``infer_backward`` return, so code
    written against Paddle's registry runs on it: ``inputs, outputs = result``, ``result[0][1]``,
    ``len(result) == 2``."""

    inputs: tuple[DistAttr, ...]
    outputs: tuple[DistAttr, ...]

    def __post_init__(self) -> None:
        if type(self.inputs) is not tuple:
            object.__setattr__(self, "inputs", tuple(self.inputs))
        if type(self.outputs) is not tuple:
            object.__setattr__(self, "outputs", tuple(self.outputs))

    @staticmethod
    @c_stand_in("SpmdResult.make")
    def make(inputs: tuple[DistAttr, ...], outputs: tuple[DistAttr, ...]) -> SpmdResult:
        """Fast constructor for the rules' hot path (both arguments already tuples)."""
        result = object.__new__(SpmdResult)
        _set(result, "inputs", inputs)
        _set(result, "outputs", outputs)
        return result

    def __iter__(self) -> Iterator[tuple[DistAttr, ...]]:
        return iter((self.inputs, self.outputs))

    def __len__(self) -> int:
        return 2

    def __getitem__(self, index: Any) -> Any:
        return (self.inputs, self.outputs)[index]

    def __str__(self) -> str:
        return "in: " + " ".join(map(str, self.inputs)) + " | out: " + " ".join(map(str, self.outputs))

    def to_json(self) -> dict[str, Any]:
        return {"inputs": [a.to_json() for a in self.inputs], "outputs": [a.to_json() for a in self.outputs]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SpmdResult:
        read = DistAttr.from_json
        return SpmdResult.make(tuple([read(a) for a in data["inputs"]]), tuple([read(a) for a in data["outputs"]]))
