"""The C stand-ins (``paddle_spmd_port/_speedups.c``) held to their Python references.

The C module replaces hot functions when it is built; the Python originals stay as references
(``types.REFERENCES``, by the name each is marked with, ``@c_stand_in(name)``; and
``ops.kit.tensor._valid_inputs``, ``RuleInput._attr``). Every test
here runs the installed function and its reference on the same values and compares all that can be
observed: the exception (type, str, ``kind``) or the value, with the type of every part spelt out
(an int subclass, a bool or a list is not an int or a tuple), identities where the reference keeps
an object (the mesh passed in, the interned attrs) and key order of dicts.

* A build that installs no C module fails ``test_c_module_is_in_use`` unless
  ``PADDLE_SPMD_PORT_PURE`` turns it off on purpose; the comparisons then skip.
* ``test_grid_outcomes_match_pure_subprocess`` runs the whole parity grid (profile ``paddle``, every
  rule of ``GRIDS``, own grid and co-shard set) here and in a ``PADDLE_SPMD_PORT_PURE=1``
  subprocess and compares the outcomes case by case; the other profiles run a fixed sample (every
  ``SPEEDUPS_GRID_EVERY``-th case by the crc32 of its id, 16 by default; ``SPEEDUPS_GRID_EVERY=1``
  runs them in full).
* The last section plants a fault in a copy of each function and shows the comparison reports it.

The hypothesis tests are derandomized (the same examples on every run).
"""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from paddle_spmd_port import notation, types
from paddle_spmd_port.ops.kit import tensor as _tensor
from paddle_spmd_port.ops.kit.tensor import RuleInput
from paddle_spmd_port.types import DistAttr, DistTensorSpec, ProcessMesh, SpmdResult

ROOT = Path(__file__).resolve().parents[1]
SPEC_INIT, SPEC_CHECK = types.REFERENCES["DistTensorSpec.__init__"], types.REFERENCES["DistTensorSpec.check"]
ATTR_MAKE, RESULT_MAKE = types.REFERENCES["DistAttr.make"], types.REFERENCES["SpmdResult.make"]
MERGE, MAPPING_FOR_AXES = types.REFERENCES["notation.merge_shardings"], types.REFERENCES["notation.mapping_for_axes"]
PURE_ON_PURPOSE = os.environ.get("PADDLE_SPMD_PORT_PURE", "0") not in ("", "0")
C_IN_USE = types.SPEEDUPS is not None
needs_c = pytest.mark.skipif(
    not C_IN_USE,
    reason="PADDLE_SPMD_PORT_PURE is set: the C module is off on purpose, there is nothing to compare"
    if PURE_ON_PURPOSE else "the C module is not in use (test_c_module_is_in_use fails for that)")
FUZZ = settings(max_examples=400, deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))


# --------------------------------------------------------------------------- the module is in use
def test_c_module_is_in_use():
    """CI installs with a compiler: no C module there is a broken build, not a reason to skip."""
    if PURE_ON_PURPOSE:
        pytest.skip("PADDLE_SPMD_PORT_PURE is set: the C module is off on purpose")
    assert types.SPEEDUPS is not None and types.CORE == "c", \
        "paddle_spmd_port._speedups is not in use: build it (pip install -e .) or set PADDLE_SPMD_PORT_PURE=1"
    sp = types.SPEEDUPS
    assert DistTensorSpec.__init__ is not SPEC_INIT and DistTensorSpec.check is not SPEC_CHECK
    assert type(DistTensorSpec.__init__) is type(DistTensorSpec.check) is type(list.append)  # C methods
    assert DistAttr.make is sp.attr_make and SpmdResult.make is sp.result_make
    assert notation.merge_shardings is sp.merge_shardings and notation.mapping_for_axes is sp.mapping_for_axes
    assert _tensor.valid_inputs is sp.valid_inputs and RuleInput.attr is not RuleInput._attr


def test_pure_means_the_references_are_installed():
    if C_IN_USE:
        pytest.skip("the C module is in use")
    assert types.CORE == "python"
    assert DistTensorSpec.__init__ is SPEC_INIT and DistAttr.make is ATTR_MAKE
    assert DistTensorSpec.check is SPEC_CHECK and SpmdResult.make is RESULT_MAKE
    assert notation.merge_shardings is MERGE and notation.mapping_for_axes is MAPPING_FOR_AXES
    assert _tensor.valid_inputs is _tensor._valid_inputs


def _installed(name: str) -> Any:
    """What a name marked ``@c_stand_in(name)`` is now: ``"DistTensorSpec.__init__"`` read from the
    class in types.py, ``"notation.merge_shardings"`` from the module."""
    owner, attr = name.rsplit(".", 1)
    return getattr(notation if owner == "notation" else getattr(types, owner), attr)


def test_every_marked_function_is_stood_in_or_left_as_written():
    """Every function marked @c_stand_in is its C stand-in when the C module is in use (a mark
    without its class's @c_stand_ins, say, would leave the Python in place), and the reference
    itself when not."""
    assert sorted(types.REFERENCES) == ["DistAttr.make", "DistTensorSpec.__init__", "DistTensorSpec.check",
                                        "SpmdResult.make", "notation.mapping_for_axes", "notation.merge_shardings"]
    for name, reference in types.REFERENCES.items():
        now = _installed(name)
        if C_IN_USE:
            assert now is not reference and not hasattr(now, "__code__"), f"{name} is not its C stand-in"
        else:
            assert now is reference, f"{name} is not its Python reference"


def test_a_mark_left_without_its_class_decorator_is_caught():
    """Planted defect: a class whose method is marked but which lacks @c_stand_ins keeps the Python;
    the check above (read on that class) would see it."""
    @dataclass(frozen=True)
    class Unstood:
        @types.c_stand_in("Unstood.method")
        def method(self) -> None:
            return None

    try:
        assert Unstood.method is types.REFERENCES["Unstood.method"]
        assert hasattr(Unstood.method, "__code__")  # the Python function: what the check above rejects
    finally:
        del types.REFERENCES["Unstood.method"]


@needs_c
def test_an_unknown_stand_in_name_is_refused():
    with pytest.raises(ValueError, match="no C stand-in named"):
        types.SPEEDUPS.stand_in("DistTensorSpec.nothing", lambda self: None, DistTensorSpec, "nothing")
    with pytest.raises(ValueError, match="no C stand-in named"):
        types.SPEEDUPS.stand_in("notation.nothing", lambda: None)


# --------------------------------------------------------------------------- observing a value
class IntSub(int):
    """An int subclass: the references reject or keep it as it is, never convert it."""


class StrSub(str):
    """A str subclass (a spec's problem name the C check leaves to the reference)."""


class MeshSub(ProcessMesh):
    """A ProcessMesh subclass (not the exact type the C fast paths look for)."""


class Gen:
    """Stands for a generator of ``items`` in a value recipe (a fresh one per call: see :func:`fresh`)."""

    def __init__(self, items: Any) -> None:
        self.items = items

    def __repr__(self) -> str:
        return f"Gen({self.items!r})"


def fresh(value: Any) -> Any:
    """``value`` with every :class:`Gen` made a new generator and every list or set copied."""
    if isinstance(value, Gen):
        return (fresh(item) for item in value.items)
    if type(value) is list:
        return [fresh(item) for item in value]
    if type(value) is tuple:  # the very tuple unless it holds a Gen (a tuple's identity is observable)
        items = tuple(fresh(item) for item in value)
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if type(value) is set:
        return set(value)
    return value


def typed(value: Any) -> Any:
    """``value`` with its type at every level: ``(0, True)`` and ``(0, 1)`` or ``[0]`` and ``(0,)`` differ,
    a dict keeps its key order, a mesh is named by identity."""
    if isinstance(value, ProcessMesh) or value is _NOT_A_MESH:
        return ("object", id(value))
    if isinstance(value, DistAttr):
        return ("DistAttr", typed(value.dims_mapping), typed(value.partial_dims), typed(value.mesh))
    if isinstance(value, (tuple, list)):
        return (type(value).__qualname__, tuple(typed(v) for v in value))
    if isinstance(value, (set, frozenset)):
        return (type(value).__qualname__, tuple(sorted((typed(v) for v in value), key=repr)))
    if isinstance(value, dict):
        return (type(value).__qualname__, tuple((typed(k), typed(v)) for k, v in value.items()))
    return (type(value).__qualname__, repr(value))


def outcome(call: Any) -> tuple[Any, ...]:
    """``("raises", class, str, kind, args, attributes)`` or ``("returns", value)``. The class is
    ``exc.__class__``, the class a caller reads: a refusal C's check raised is of a subclass until
    anything of it is read (test_unread_refusal_is_a_subclass_until_read holds that apart)."""
    try:
        value = call()
    except Exception as exc:  # any exception is an observable to compare
        return ("raises", exc.__class__, _ADDRESS.sub(" at 0x?", str(exc)), getattr(exc, "kind", None),
                tuple(_ADDRESS.sub(" at 0x?", repr(a)) for a in exc.args), sorted(vars(exc)))
    return ("returns", value)


#: the address in a generator's repr (each call builds a fresh generator, so only the address differs)
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def call_difference(installed: Any, reference: Any, view: Any = typed) -> str | None:
    """None when the two zero-argument calls raise alike or return values of the same ``view``."""
    a, b = outcome(installed), outcome(reference)
    if a[0] == "returns" and b[0] == "returns":
        va, vb = view(a[1]), view(b[1])
        return None if va == vb else f"returns differ:\n  installed {va!r}\n  reference {vb!r}"
    if a != b:
        return f"outcomes differ:\n  installed {a!r}\n  reference {b!r}"
    return None


# --------------------------------------------------------------------------- DistTensorSpec
M23 = ProcessMesh((2, 3))
M2 = ProcessMesh((2,))
M222 = ProcessMesh((2, 2, 2))
M23_XY = ProcessMesh((2, 3), dim_names=("x", "y"))
M23_SUB = MeshSub((2, 3))
M63 = ProcessMesh((1,) * 63)
M64 = ProcessMesh((1,) * 64)
class _NotAMesh:
    """Any object that is no mesh; its repr is fixed, so test ids are the same in every process
    (pytest-xdist's workers must collect the same ids)."""

    def __repr__(self) -> str:
        return "<not a mesh>"


_NOT_A_MESH = _NotAMesh()
MESHES = (None, M23, M2, M222, M23_XY, M23_SUB, M63, M64, _NOT_A_MESH, "2x3")
OMIT = "<omitted>"
SPEC_FIELDS = ("shape", "dims_mapping", "mesh", "partial_dims", "valid_on_mesh", "coshard", "_problem")


def build_installed(*args: Any, **kw: Any) -> DistTensorSpec:
    return DistTensorSpec(*args, **kw)


def build_reference(*args: Any, **kw: Any) -> DistTensorSpec:
    obj = object.__new__(DistTensorSpec)
    SPEC_INIT(obj, *args, **kw)
    return obj


def _mesh_value(mesh: Any) -> Any:
    return (type(mesh).__qualname__, mesh.shape, mesh.process_ids, mesh.dim_names) if mesh is not None else None


def spec_view(spec: DistTensorSpec, check: Any = None) -> dict[str, Any]:
    """Everything observable of a built spec (fields and their types, ``check`` -- the installed one
    unless given --, str, hash, pickling)."""
    view: dict[str, Any] = {name: typed(getattr(spec, name)) for name in SPEC_FIELDS}
    view["type"] = type(spec)
    view["check"] = outcome(lambda: (check or type(spec).check)(spec, "x"))
    view["str"], view["repr"], view["ndim"] = str(spec), repr(spec), spec.ndim
    view["hash"] = outcome(lambda: hash(spec))
    view["to_json"] = typed(outcome(spec.to_json))
    loaded = outcome(lambda: pickle.loads(pickle.dumps(spec)))
    if loaded[0] == "returns":
        back = loaded[1]
        view["pickled"] = ({n: typed(getattr(back, n)) for n in SPEC_FIELDS if n != "mesh"},
                           _mesh_value(back.mesh), back == spec)
    else:
        view["pickled"] = loaded
    return view


def spec_pair_difference(a: Any, b: Any) -> str | None:
    if a[0] != "returns" or b[0] != "returns":
        return None if a == b else f"outcomes differ:\n  installed {a!r}\n  reference {b!r}"
    va, vb = spec_view(a[1]), spec_view(b[1], check=SPEC_CHECK)  # the reference: its own check
    for key in va:
        if va[key] != vb[key]:
            return f"{key} differs:\n  installed {va[key]!r}\n  reference {vb[key]!r}"
    if not a[1] == b[1] or a[1] != b[1]:
        return "the two specs are not equal"
    if va["hash"][0] == "returns" and hash(a[1]) != hash(b[1]):
        return "equal specs of different hashes"
    return None


def spec_difference(build: Any, reference: Any, make_args: Any) -> str | None:
    """Build the spec of ``make_args()`` (a fresh ``(args, kwargs)`` per build) with ``build`` and
    ``reference``, cold (caches cleared before each) and warm (each built a second time); None when
    every observable matches."""
    types.clear_caches()
    installed = outcome(lambda: _call(build, make_args))
    types.clear_caches()
    ref_cold = outcome(lambda: _call(reference, make_args))
    installed_warm = outcome(lambda: _call(build, make_args))
    ref_warm = outcome(lambda: _call(reference, make_args))
    for label, a, b in (("cold", installed, ref_cold), ("warm", installed_warm, ref_warm)):
        diff = spec_pair_difference(a, b)
        if diff is not None:
            return f"{label}: {diff}"
    return None


def _call(function: Any, make_args: Any) -> Any:
    args, kw = make_args()
    return function(*args, **kw)


def spec_call(shape: Any, dims_mapping: Any, mesh: Any, partial: Any = OMIT, form: str = "pos") -> Any:
    """``make_args`` for one spec recipe; ``form`` says how the values are passed."""
    def make() -> tuple[tuple[Any, ...], dict[str, Any]]:
        s, d, p = fresh(shape), fresh(dims_mapping), fresh(partial)
        named = {"shape": s, "dims_mapping": d, "mesh": mesh}
        if p is not OMIT:
            named["partial_dims"] = p
        values = tuple(named.values())
        if form == "pos":
            return values, {}
        if form == "kw":
            return (), named
        if form == "kw-mesh":  # the first two by position, the rest by name
            return values[:2], {k: v for k, v in named.items() if k not in ("shape", "dims_mapping")}
        if form == "missing":
            return values[:2], {}
        if form == "extra":
            return values + ((),) * (5 - len(values)), {}
        if form == "unknown":
            return values, {"colour": "red"}
        if form == "twice":
            return values, {"shape": s}
        raise AssertionError(form)
    return make


SPEC_ROWS = [
    ((8, 6), (0, -1), M23), ((8, 6), (0, -1), M23, frozenset({1})), ((8, 6), (1, 1), M23),
    ((8, 6), (0, -1), M23, frozenset({0})), ((8, 6), (-1, -1), M23, frozenset({0, 1})),
    ((8, 6), ((0, 1), -1), M23), ((8, 6), ((1, 0), -1), M23, frozenset()), ((8, 6), ((0,), -1), M23),
    ((8, 6), ((), -1), M23), ((8, 6), ((1, 0, 1), -1), M222), ((8, 6), ((0, 1), 1), M23),
    ((8, 6), ((-1, 0), -1), M23), ((8, 6), ([0, 1], -1), M23), ((8, 6), ([0], []), M23),
    ((8, 6), ((0, 1, 2), -1), M222, frozenset()), ((8, 6, 4), ((2, 0), -1, 1), M222),
    ([8, 6], [0, -1], M23), (Gen((8, 6)), Gen((0, -1)), M23, Gen((1,))), ([8, 6], (0, -1), M23, [1]),
    ((8, 6), (0, -1), M23, {1}), ((8, 6), (0, -1), M23, (1, 1)), ((8, 6), (0, -1), M23, frozenset({True})),
    ((8, 6), (0, -1), M23, frozenset({5})), ((8, 6), (0, -1), M23, frozenset({-1})),
    ((8, 6), (0, -1), M23, frozenset({IntSub(1)})), ((8, 6), (0, -1), M23, frozenset({1.0})),
    ((-1, 6), (0, -1), M23), ((2 ** 70, 6), (0, -1), M23), ((8, 6), (2 ** 70, -1), M23),
    ((8, 6), (-2 ** 70, -1), M23), ((8, 6), (2, -1), M23), ((8, 6), (-2, -1), M23),
    ((True, 6), (0, -1), M23), ((8, 6), (True, -1), M23), ((8.0, 6), (0, -1), M23), ((8, 6), (0.0, -1), M23),
    ((IntSub(8), 6), (0, -1), M23), ((8, 6), (IntSub(0), -1), M23), ((8, 6), (IntSub(-1), -1), M23),
    ((8, 6), (0,), M23), ((8,), (0, -1), M23), ((), (), M23), ((), (), None), ((8,), (), None),
    ((8,), (-1,), None), ((8,), (), None, frozenset({0})), ((8, 6), (0, -1), None),
    ((8, 6), (0, -1), M23_XY), ((8, 6), (0, -1), M23_SUB), ((8, 6), (1, -1), M2), ((8, 6), (0, -1), M2),
    ((8, 6), (0, 62), M63), ((8, 6), (0, 63), M63), ((8, 6), (0, 63), M64), ((8, 6), (-1, -1), M64, frozenset({63})),
    ((8, 6), (0, -1), _NOT_A_MESH), ((8, 6), (0, -1), "2x3"), ("86", (0, -1), M23), (8, (0, -1), M23),
    ((8, 6), {0: 1}, M23), ((8, 6), (0, -1), M23, "1"), ((8, 6), (0, -1), M23, None), ((8, 6), (None, -1), M23),
    ((0, 0), (0, 1), M23), ((8, 6), (0, -1, -1), M23), ((8, 6), ((0, 1),), M23), ((8, 6), ((0, 0), -1), M23),
    ((8, 6), ((0, 5), -1), M23), ((8, 6), ((0, 1), -1), M23, frozenset({1})), ((8, 6), ((0, True), -1), M23),
]

try:  # numpy comes with Paddle; without it, its rows are left out
    import numpy as np
except ImportError:  # pragma: no cover - CI installs Paddle
    np = None

#: a user's data: lists as JSON gives them, numpy ints, bools (integers, as Paddle takes them), the
#: co-shard spellings, and invalid specs of each kind from lists (the keyword forms: ``form`` below)
USER_ROWS: list[tuple[Any, ...]] = [
    ([8, 6, 4], [0, -1, 1], M23), ([8, 6, 4], [0, -1, -1], M23, [1]), ([8, 6, 4], [0, -1, -1], M23, (1,)),
    ([8, 6, 4], [[0, 1], -1, -1], M23), ([8, 6], [(0, 1), -1], M23), ([8, 6], [[0], [1]], M23),
    ([8, 6], [[], [1]], M23, [0]), ([8, 6, 4], [[0, 1], [], [1]], M23), ([8, 6], [[0, 1], -1], M23, [1]),
    ([True, 6], [True, False], M23), ([8, 6], [False, -1], M23, [True]), ([8, 6], [[True, 0], -1], M23),
    ([8, 6], [True, True], M23), ([8, 6], [0, -1], M23, {True}),
    ([8, 6, 4], [0, -1], M23), ([8, 6], [0, -1, -1], M23), ([8, 6], [0, 2], M23), ([8, 6], [0, -2], M23),
    ([8, 6], [0, 0], M23), ([8, 6], [0, -1], M23, [0]), ([8, 6], [0, -1], M23, [2]), ([8, 6], [0, -1], M23, [-1]),
    ([8, 6], [-1, -1], M23, [1, 0, 5]), ([8, 6], [0, 0], M23, [7]), ([8, 6], [5, 0], M23), ([8, 6], [0, -1], None),
    ([8, 6], [], None, [0]), ([-1, 6], [0, -1], M23), ([-1, 6], [0, 0], M23), ([8.0, 6], [0, -1], M23),
    (["8", 6], [0, -1], M23), ([8, 6], [0, -1], M23, [1.0]), ([8, 6], [0, None], M23), ([8, 6], [0, "1"], M23),
    ([8, 6], [2 ** 70, -1], M23), ([8, 6], [-2 ** 70, -1], M23), ([2 ** 70, 6], [0, 0], M23),
    ([2 ** 62, 6], [0, 5], M23), ([8, 6], [2 ** 62, 0], M23), ([8, 6], [-1, -1], M23, [2 ** 70]),
    ([1] * 1000, [-1] * 999, M23), ([1] * 300, [-1] * 299, M23), ([8, 6], [0, 62], M63), ([8, 6], [0, 63], M63),
    ([8, 6], [0, 70], M64), ([8, 6], [0, 1], M23_XY), ([8, 6], [0, 5], M23_XY), ([8, 6], [0, 5], M23_SUB),
    ([8, 6], [0, 0], M23_SUB), ([8, 6], [0, 5], M222), ([8, 6], [0, -1], M23, frozenset({IntSub(1)})),
    ([IntSub(8), 6], [IntSub(0), -1], M23), ((8, 6), [0, 0], M23, frozenset({0})),
]
if np is not None:
    I64, I32, U64 = np.int64, np.int32, np.uint64
    USER_ROWS += [
        (list(np.array([8, 6, 4])), list(np.array([0, -1, 1])), M23),
        ([I64(8), I32(6)], [I64(1), I64(-1)], M23, [I64(0)]),
        ([U64(2 ** 64 - 1), 6], [0, -1], M23), ([8, 6], [U64(2 ** 64 - 1), -1], M23), ([I64(-1), 6], [0, -1], M23),
        ([8, 6], [np.bool_(True), -1], M23), ([8, 6], [np.float64(0.0), -1], M23), ([8, 6], [np.float32(0), -1], M23),
        ([8, 6], [np.array(0), -1], M23), ([8, 6], [np.array([0, 1]), -1], M23), ([8, 6], [[I64(0), I64(1)], -1], M23),
        ([8, 6], [I64(0), I64(0)], M23), ([8, 6], [I64(2), -1], M23), ((I64(8), I64(6)), (I64(0), I64(-1)), M23),
        ([8, 6], [0, -1], M23, np.array([1])), ([8, 6], [0, -1], M23, [np.uint8(1)]), (np.array([8, 6]), [0, -1], M23),
    ]
SPEC_ROWS += USER_ROWS


@needs_c
@pytest.mark.parametrize("form", ["pos", "kw", "kw-mesh", "missing", "extra", "unknown", "twice"])
@pytest.mark.parametrize("row", SPEC_ROWS, ids=lambda row: repr(row)[:60])
def test_spec_rows_match_reference(row, form):
    diff = spec_difference(build_installed, build_reference, spec_call(*row, form=form))
    assert diff is None, f"{row} ({form}): {diff}"


LEAVES = st.one_of(st.integers(-2, 4), st.sampled_from(
    [2 ** 70, -2 ** 70, 2 ** 63, 2 ** 63 - 1, 62, 63, 64, True, False, 1.0, -1.0, IntSub(0), IntSub(-1), IntSub(2),
     None, "0"] + ([] if np is None else [np.int64(1), np.int64(-1), np.int32(0), np.uint64(2 ** 64 - 1),
                                          np.bool_(True), np.float64(1.0)])))


def _container(items: Any, kinds: Any) -> Any:
    return st.tuples(kinds, items).map(lambda ki: {"tuple": tuple, "list": list, "gen": Gen, "set": set,
                                                   "frozenset": frozenset}[ki[0]](ki[1]))


@st.composite
def spec_recipes(draw: Any) -> tuple[Any, ...]:
    """Mostly near-valid specs (the right rank, entries -1..n-1, a few partial dims), then odd values."""
    mesh = draw(st.sampled_from(MESHES[:6] + (M63, M64)) if draw(st.booleans()) else st.sampled_from(MESHES))
    n = len(mesh.shape) if isinstance(mesh, ProcessMesh) else 2
    rank = draw(st.integers(0, 4))
    near = draw(st.booleans())
    entry_dims = st.integers(-1, n - 1) if near else LEAVES
    coshard = st.lists(entry_dims, max_size=3)
    entry = st.one_of(entry_dims, _container(coshard, st.sampled_from(["tuple", "tuple", "list", "gen"])))
    shape_items = st.lists(st.integers(0, 9) if near else LEAVES, min_size=rank, max_size=rank)
    dm_items = st.lists(entry_dims if near else entry, min_size=rank, max_size=rank) if draw(st.booleans()) \
        else st.lists(entry, max_size=5)
    kinds = st.sampled_from(["tuple", "tuple", "tuple", "list", "gen"])
    shape = draw(_container(shape_items, kinds))
    dims_mapping = draw(_container(dm_items, kinds))
    partial = draw(st.one_of(st.just(OMIT), _container(st.lists(st.integers(-1, n) if near else LEAVES,
                                                                 max_size=3),
                                                        st.sampled_from(["frozenset", "frozenset", "set", "list"]))))
    form = draw(st.sampled_from(["pos", "pos", "pos", "kw", "kw-mesh", "missing", "unknown"]))
    return shape, dims_mapping, mesh, partial, form


@needs_c
@FUZZ
@given(spec_recipes())
def test_spec_construction_matches_reference(recipe):
    note(repr(recipe))
    shape, dims_mapping, mesh, partial, form = recipe
    diff = spec_difference(build_installed, build_reference, spec_call(shape, dims_mapping, mesh, partial, form))
    assert diff is None, diff


@needs_c
def test_spec_built_by_c_equals_one_built_by_reference():
    """The C path's spec and the reference's: equal values, one hash, either answers ``check`` alike."""
    for row in SPEC_ROWS[:5]:
        a, b = build_installed(*row), build_reference(*row)
        assert a == b and hash(a) == hash(b) and {a, b} == {a}
        assert outcome(lambda a=a: a.check("x")) == outcome(lambda b=b: b.check("x"))


CHECK_ARGS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    (("x",), {}), (("out_grad",), {}), (("{x}",), {}), (("a}b",), {}), (("{arg}",), {}), (("é",), {}), ((5,), {}),
    ((None,), {}), ((), {"arg": "x"}), ((), {}), (("x", "y"), {}), ((IntSub(1),), {})]


def _check_specs() -> list[Any]:
    specs: list[Any] = [build_reference(*row) for row in USER_ROWS[:40] if _builds(row)]
    odd = build_reference((8, 6), (0, 0), M23)
    object.__setattr__(odd, "_problem", "length")  # a name the values do not bear out: the kind says it, the words not
    other = build_reference((8, 6), (0, 0), M23)
    object.__setattr__(other, "_problem", ("duplicate", "{arg}: a template"))  # not a name
    odd_kind = build_reference((8, 6), (0, 0), M23)
    object.__setattr__(odd_kind, "_problem", StrSub("duplicate"))
    unset = object.__new__(DistTensorSpec)  # no field set: the reference raises AttributeError
    sub = object.__new__(SpecSub)
    SPEC_INIT(sub, (8, 6), (0, 0), M23)
    return specs + [odd, other, odd_kind, unset, sub]


def _builds(row: Any) -> bool:
    try:
        build_reference(*row)
    except Exception:
        return False
    return True


@needs_c
def test_spec_check_raises_as_reference():
    """DistTensorSpec.check (C) against SPEC_CHECK on specs of every kind and odd arguments."""
    for spec in _check_specs():
        for args, kw in CHECK_ARGS:
            diff = call_difference(lambda spec=spec, args=args, kw=kw: DistTensorSpec.check(spec, *args, **kw),
                                   lambda spec=spec, args=args, kw=kw: SPEC_CHECK(spec, *args, **kw))
            assert diff is None, f"{spec!r:.80} {args} {kw}: {diff}"


@needs_c
def test_partial_dim_problems_named_as_reference():
    """The C build names a bad partial dim while it judges the spec (the smallest one outside the
    mesh or also sharding, in any set order): every subset of up to three odd partial dims, on
    specs valid but for them and not, built by C and by the reference, same fields."""
    import itertools

    for mesh in (M2, M23, M222):
        for dm in ((-1, -1), (0, -1), (1, 0), (-1, 2), ((0, 1), -1)):
            for size in range(4):
                for dims in itertools.combinations((-2, -1, 0, 1, 2, 3, 5, 70, 2**70), size):
                    c, ref = build_installed((8, 6), dm, mesh, frozenset(dims)), \
                        build_reference((8, 6), dm, mesh, frozenset(dims))
                    assert spec_view(c) == spec_view(ref), f"{mesh} {dm} {dims}"


@needs_c
def test_small_partial_sets_as_reference():
    """The C build shares one frozenset per set of mesh dims 0..7 given as a list or tuple: every
    subset of 0..8 (8 and -1 off that table), in either order, with a dim repeated, built twice (the
    second from the table), on a mesh it fits and one it does not: the fields the reference builds."""
    import itertools

    for size in range(4):
        for dims in itertools.combinations((-1, 0, 1, 2, 5, 7, 8), size):
            for dims_given in (list(dims), tuple(reversed(dims)), list(dims) + list(dims[:1])):
                for mesh in (M23, M222):
                    for _ in range(2):
                        c, ref = build_installed((8, 6), (-1, -1), mesh, dims_given), \
                            build_reference((8, 6), (-1, -1), mesh, list(dims_given))
                        assert spec_view(c) == spec_view(ref), f"{mesh} {dims_given}"
                        assert c.partial_dims == frozenset(dims)


def _refusal_view(exc: BaseException) -> tuple[Any, ...]:
    """Everything a caller can read of a refusal: type name, str, repr, args, kind, the instance
    dict, the ErrorInfo parity records, and the same of it pickled and read back."""
    from paddle_spmd_port.outcome import ErrorInfo

    def seen(e: BaseException) -> tuple[Any, ...]:
        return (type(e).__name__, str(e), repr(e), e.args, getattr(e, "kind", None), sorted(vars(e).items()),
                ErrorInfo.from_exception(e), isinstance(e, (types.InvalidSpecError, ValueError)))
    back = pickle.loads(pickle.dumps(exc))
    return seen(exc) + (type(back) is types.InvalidSpecError,) + seen(back)


def _refusals(cases: Any) -> list[tuple[str, tuple[Any, ...]]]:
    out = []
    for case in cases:
        try:
            case.call_port()
        except types.InvalidSpecError as exc:
            out.append((case.case_id, _refusal_view(exc)))
        except (ValueError, NotImplementedError, RuntimeError, TypeError):
            pass
    return out


def test_refusals_read_as_the_references(monkeypatch):
    """Every invalid input of every rule's grid (co-shard sets included) and of 300 random-mode cases
    per rule: the error check raises (C or Python, whichever core is in use) reads exactly as the
    Python reference's -- str, repr, args, kind, instance dict, pickled and read back, and parity's
    ErrorInfo."""
    from paddle_spmd_port.grid import GRIDS, coshard_cases, grid_for
    from paddle_spmd_port.parity.random_cases import random_cases

    cases = [c for rule in GRIDS for c in (*grid_for(rule), *coshard_cases(rule), *random_cases(rule, 300, seed=1))]
    installed = _refusals(cases)
    refused = {case_id for case_id, _ in installed}
    monkeypatch.setattr(DistTensorSpec, "check", SPEC_CHECK)
    reference = _refusals([c for c in cases if c.case_id in refused])
    assert len(installed) > 1000 and len(reference) == len(installed)
    for (case_id, a), (_, b) in zip(installed, reference, strict=True):
        assert a == b, f"{case_id}:\n  installed {a}\n  reference {b}"


def test_planted_wording_fault_is_caught():
    """An error that words another argument's name is told from the reference's."""
    spec = build_installed((8, 6), (0, 0), M23)
    with pytest.raises(types.InvalidSpecError) as installed:
        spec.check("x")
    with pytest.raises(types.InvalidSpecError) as reference:
        SPEC_CHECK(spec, "y")
    assert _refusal_view(installed.value) != _refusal_view(reference.value)


def test_planted_check_fault_is_caught():
    def other_kind(spec: Any, arg: Any) -> None:
        try:
            SPEC_CHECK(spec, arg)
        except types.InvalidSpecError as exc:
            raise types.InvalidSpecError(str(exc), kind="invalid-spec") from None
    spec = build_reference((8, 6), (0, 0), M23)
    assert call_difference(lambda: other_kind(spec, "x"), lambda: SPEC_CHECK(spec, "x")) is not None
    assert call_difference(lambda: SPEC_CHECK(spec, "x"), lambda: SPEC_CHECK(spec, "x")) is None


def _class_difference(exc: BaseException) -> str | None:
    """None when the class of an unread refusal is the C one documented in _speedups.c (refusal_type):
    a subclass of InvalidSpecError adding nothing, named as it, that reading turns into it."""
    cls, plain = type(exc), types.InvalidSpecError

    def names(c: type) -> tuple[Any, ...]:
        return (c.__name__, c.__qualname__, c.__module__, c.__basicsize__, c.__dictoffset__, c.__weakrefoffset__)

    if cls is plain or cls.__mro__[1:] != plain.__mro__:
        return f"{cls.__mro__} is not InvalidSpecError's direct subclass"
    if names(cls) != names(plain) or set(vars(cls)) - {"__module__", "__doc__", "__getattribute__",
                                                       "__setattr__", "__delattr__", "__str__", "__repr__"}:
        return f"{names(cls)} {sorted(vars(cls))}: other names, layout or members than {names(plain)}"
    return None


def _reads() -> list[tuple[str, Any]]:
    import copy
    import traceback

    return [("str", str), ("repr", repr), ("args", lambda e: e.args), ("kind", lambda e: e.kind), ("vars", vars),
            ("__class__", lambda e: e.__class__), ("pickle", lambda e: pickle.dumps(e)), ("copy", copy.copy),
            ("traceback", lambda e: traceback.format_exception(e)), ("add_note", lambda e: e.add_note("n")),
            ("setattr", lambda e: setattr(e, "seen", 1)), ("getattr", lambda e: getattr(e, "missing", None))]


@needs_c
def test_unread_refusal_is_a_subclass_until_read():
    """The one thing that tells C's refusal from the reference's: type() of one not read yet is C's
    subclass (_class_difference). Each way of reading it (str, repr, args, kind, the instance dict,
    pickling, copying, a traceback, a note, any attribute) turns it into a plain InvalidSpecError that
    reads as the reference's, and the read leaves it as the same read leaves the reference's."""
    spec = build_installed((8, 6), (0, 0), M23)
    for name, read in _reads():
        with pytest.raises(types.InvalidSpecError) as installed:
            spec.check("x")
        with pytest.raises(types.InvalidSpecError) as reference:
            SPEC_CHECK(spec, "x")
        exc, ref = installed.value, reference.value
        assert _class_difference(exc) is None, name
        assert isinstance(exc, ValueError) and issubclass(type(exc), types.InvalidSpecError)
        assert outcome(lambda e=exc, r=read: r(e))[0] == outcome(lambda e=ref, r=read: r(e))[0], name
        assert type(exc) is types.InvalidSpecError, name
        assert _refusal_view(exc) == _refusal_view(ref), name


@needs_c
def test_refusals_worded_by_the_reference_read_as_its_own():
    """A refusal whose spec the C does not word (a size beyond a C long, a mesh of a ProcessMesh
    subclass, a message too long for its buffer) takes the reference's words when first read."""
    class MeshSub(ProcessMesh):
        pass

    for spec in (build_installed((2**70, 6), (1, 1, -1), M23), build_installed((8, 6), (0, 0), MeshSub((2, 3))),
                 build_installed((8,) * 3000, (0,) * 3000, M23)):
        with pytest.raises(types.InvalidSpecError) as installed:
            spec.check("x")
        with pytest.raises(types.InvalidSpecError) as reference:
            SPEC_CHECK(spec, "x")
        assert _class_difference(installed.value) is None
        assert _refusal_view(installed.value) == _refusal_view(reference.value)


def test_planted_class_faults_are_caught():
    """_class_difference tells the plain class, an unrelated subclass and one with a member."""
    class Named(types.InvalidSpecError):
        pass

    class Member(types.InvalidSpecError):
        def extra(self) -> None:
            pass
    Member.__name__ = Member.__qualname__ = "InvalidSpecError"
    Member.__module__ = types.InvalidSpecError.__module__
    for cls in (types.InvalidSpecError, Named, Member, types.ArgumentTypeError):
        assert _class_difference(cls("m")) is not None, cls


@needs_c
def test_refusals_raised_again_stay_apart():
    """An unread refusal dropped is raised again by the next check (_speedups.c: a free list of one):
    refusals held, or held only weakly, are never raised again; each words its own name; a chain
    (raise ... from) keeps both; one dropped after it was read is not the next one."""
    import weakref

    specs = [build_installed((8, 6), dm, M23) for dm in ((0, 0), (2, -1), (0, -1, -1))]
    held = []
    for k in range(30):
        try:
            specs[k % 3].check(f"a{k}")
        except types.InvalidSpecError as exc:
            held.append(exc)
    assert len({id(e) for e in held}) == 30
    for k, exc in enumerate(held):
        with pytest.raises(types.InvalidSpecError) as reference:
            SPEC_CHECK(specs[k % 3], f"a{k}")
        assert _refusal_view(exc) == _refusal_view(reference.value)
    died = []
    try:
        specs[0].check("w")
    except types.InvalidSpecError as exc:
        ref = weakref.ref(exc, died.append)
    assert ref() is None and died == [ref]
    try:
        specs[1].check("v")
    except types.InvalidSpecError as exc:
        assert ref() is None and str(exc).startswith("v: ")
    caught = []
    try:
        try:
            specs[0].check("inner")
        except types.InvalidSpecError as inner:
            caught.append(inner)
            specs[1].check("outer")
    except types.InvalidSpecError as outer:
        assert outer.__context__ is caught[0] and caught[0] is not outer
        assert str(caught[0]).startswith("inner: ") and str(outer).startswith("outer: ")
    try:
        try:
            specs[2].check("cause")
        except types.InvalidSpecError as cause:
            raise RuntimeError("wrapped") from cause
    except RuntimeError as wrapped:
        assert str(wrapped.__cause__).startswith("cause: ") and type(wrapped.__cause__) is types.InvalidSpecError


# --------------------------------------------------------------------------- DistAttr.make / SpmdResult.make
M23_AGAIN = ProcessMesh((2, 3))  # equal to M23, another object
M23_D = ProcessMesh((2, 3), dim_names=("d0", "d1"))  # equal to M23 (its names given)
assert M23_XY._hash == M23._hash and M23_XY != M23  # same stored hash, other names: the fallback key


def _passed(args: tuple[Any, ...], kw: dict[str, Any]) -> list[Any]:
    """The objects a call hands over (a RuleInput's fields too): what a result's field may be."""
    out = [*args, *kw.values()]
    return out + [field for value in out if isinstance(value, RuleInput) for field in value]


def _which(value: Any, passed: list[Any]) -> Any:
    if type(value) is frozenset and not value:  # which empty frozenset an attr holds is no one's concern
        return "empty"
    return next((i for i, p in enumerate(passed) if p is value), "new")


def make_trace(calls: list[Any]) -> tuple[list[Any], list[Any]]:
    """Run ``calls`` (``(function, args, kwargs)``) in order from an empty attr table: per call its
    outcome, with each returned object named by the index of the first call that returned it and each
    of its fields by which passed object it is (or "new"); then the table (keys and which call's
    object each holds), in order."""
    types.clear_caches()
    seen: list[Any] = []
    trace: list[Any] = []
    for function, args, kw in calls:
        passed = _passed(args, kw)
        result = outcome(lambda function=function, args=args, kw=kw: function(*args, **kw))
        if result[0] == "raises":
            trace.append(result)
            continue
        obj = result[1]
        index = next((i for i, o in enumerate(seen) if o is obj), None)
        if index is None:
            seen.append(obj)
            index = len(seen) - 1
        fields = tuple(_which(getattr(obj, f), passed) for f in ("dims_mapping", "partial_dims", "mesh")) \
            if isinstance(obj, DistAttr) else ()
        trace.append(("returns", index, type(obj), typed(obj), fields))
    table = [(typed(key), next((i for i, o in enumerate(seen) if o is value), "not returned"))
             for key, value in types._INTERNED.items()]
    return trace, table


def trace_difference(installed_calls: list[Any], reference_calls: list[Any]) -> str | None:
    a, b = make_trace(installed_calls), make_trace(reference_calls)
    if a == b:
        return None
    for i, (x, y) in enumerate(zip(a[0], b[0], strict=True)):
        if x != y:
            return f"call {i}:\n  installed {x!r}\n  reference {y!r}"
    return f"tables differ:\n  installed {a[1]!r}\n  reference {b[1]!r}"


ATTR_DMS = [(0, -1), (-1, -1), ((0, 1), -1), (), (True,), (IntSub(0),), [0, -1]]
ATTR_PARTIALS = [frozenset(), frozenset({1}), frozenset({0}), frozenset({True}), {1}]
ATTR_MESHES = [None, M23, M23_AGAIN, M23_D, M23_XY, M23_SUB, M2, _NOT_A_MESH]


def attr_call(make: Any, dm: Any, partial: Any, mesh: Any, form: str) -> Any:
    if form == "pos":
        return make, (dm, partial, mesh), {}
    if form == "kw":
        return make, (), {"mesh": mesh, "dims_mapping": dm, "partial_dims": partial}
    return make, (dm, partial), {"mesh": mesh}


ATTR_CALLS = st.tuples(st.sampled_from(ATTR_DMS), st.sampled_from(ATTR_PARTIALS), st.sampled_from(ATTR_MESHES),
                       st.sampled_from(["pos", "pos", "kw", "mixed"]), st.booleans())


@needs_c
@FUZZ
@given(st.lists(ATTR_CALLS, min_size=1, max_size=12))
def test_attr_make_interns_as_reference(calls):
    """All C, all reference and the two interleaved (each returning what the other interned) give the
    same trace: same objects shared, same fields (the very objects passed), same table."""
    note(repr(calls))
    c_calls = [attr_call(DistAttr.make, dm, p, m, form) for dm, p, m, form, _ in calls]
    ref_calls = [attr_call(ATTR_MAKE, dm, p, m, form) for dm, p, m, form, _ in calls]
    mixed = [attr_call(DistAttr.make if use_c else ATTR_MAKE, dm, p, m, form)
             for dm, p, m, form, use_c in calls]
    assert trace_difference(c_calls, ref_calls) is None, trace_difference(c_calls, ref_calls)
    assert trace_difference(mixed, ref_calls) is None, trace_difference(mixed, ref_calls)


@needs_c
@pytest.mark.parametrize("first_c", [True, False])
def test_attr_make_shares_with_reference(first_c):
    first, second = (DistAttr.make, ATTR_MAKE) if first_c else (ATTR_MAKE, DistAttr.make)
    types.clear_caches()
    made = first((0, -1), frozenset({1}), M23)
    assert second((0, -1), frozenset({1}), M23) is made
    assert second((0, -1), frozenset({1}), M23_AGAIN) is made and made.mesh is M23  # equal mesh: the same attr
    named = second((0, -1), frozenset({1}), M23_XY)  # same hash, other names: its own attr
    assert named is not made and named.mesh is M23_XY
    assert first((0, -1), frozenset({1}), M23_XY) is named
    assert first((0, -1), frozenset(), None) is second((0, -1), frozenset(), None)


@needs_c
@pytest.mark.parametrize("filled", [65535, 65536, 65537])
def test_attr_table_clears_at_the_same_size(filled):
    """The table is emptied before an insert once it holds more than 65536 attrs (filled directly)."""
    seen = []
    for make in (DistAttr.make, ATTR_MAKE):
        types.clear_caches()
        types._INTERNED.update((("filler", i), None) for i in range(filled))
        make((0, -1), frozenset(), M23)
        seen.append((len(types._INTERNED), ("filler", 0) in types._INTERNED))
    types.clear_caches()
    assert seen[0] == seen[1], seen


def result_view(result: Any) -> Any:
    back = outcome(lambda: pickle.loads(pickle.dumps(result)))
    pickled = (typed(back[1]), back[1] == result) if back[0] == "returns" else back
    return (type(result), typed(result.inputs), typed(result.outputs), id(result.inputs), id(result.outputs),
            outcome(lambda: hash(result)), outcome(lambda: str(result)), outcome(lambda: repr(result)), pickled)


A1 = ATTR_MAKE((0, -1), frozenset(), M23)
A2 = ATTR_MAKE((-1,), frozenset({1}), M23_XY)
RESULT_ROWS = [((A1,), (A2,)), ((), ()), ([A1], [A2]), ((A1, A2), []), ((None,), ("x",)), ((A1,), 5)]


@needs_c
@pytest.mark.parametrize("form", ["pos", "kw", "mixed"])
@pytest.mark.parametrize("row", RESULT_ROWS, ids=repr)
def test_result_make_matches_reference(row, form):
    def call(make: Any) -> Any:
        inputs, outputs = row
        if form == "pos":
            return lambda: make(inputs, outputs)
        if form == "kw":
            return lambda: make(outputs=outputs, inputs=inputs)
        return lambda: make(inputs, outputs=outputs)
    assert outcome(call(SpmdResult.make))[0] == "returns"
    diff = call_difference(call(SpmdResult.make), call(RESULT_MAKE), view=result_view)
    assert diff is None, diff
    assert SpmdResult.make(*row) == RESULT_MAKE(*row)


# --------------------------------------------------------------------------- merge_shardings / mapping_for_axes
AXES = st.one_of(st.text(alphabet="ijk1", max_size=4), st.sampled_from(["é", "iß", "\x7fi", "ij", "i\u4e00"]))
MESH_DIMS = st.one_of(st.integers(-1, 2), st.integers(-2, 4),
                      st.sampled_from([2 ** 70, 63, 64, True, 1.0, IntSub(1), None]))


@st.composite
def merge_inputs(draw: Any) -> Any:
    pairs = []
    for _ in range(draw(st.integers(0, 4))):
        axes = draw(AXES)
        length = len(axes) if draw(st.integers(0, 5)) else draw(st.integers(0, 5))
        dm = draw(st.lists(MESH_DIMS, min_size=length, max_size=length))
        dm = draw(st.sampled_from([tuple, tuple, tuple, list, Gen]))(dm)
        shape = draw(st.sampled_from(["tuple"] * 6 + ["list", "triple", "axes-only"]))
        pairs.append((axes, dm) if shape == "tuple" else [axes, dm] if shape == "list"
                     else (axes, dm, 0) if shape == "triple" else axes)
    return draw(st.sampled_from([list, list, tuple, Gen]))(pairs)


def merge_difference(installed: Any, reference: Any, tensors: Any) -> str | None:
    """Both raise alike or return the same dict, key order and value types included."""
    return call_difference(lambda: installed(fresh(tensors)), lambda: reference(fresh(tensors)))


@needs_c
@FUZZ
@given(merge_inputs())
def test_merge_shardings_matches_reference(tensors):
    note(repr(tensors))
    diff = merge_difference(notation.merge_shardings, MERGE, tensors)
    assert diff is None, diff


MERGE_ROWS = [[], [("ij", (0, 1))], [("ij", (0, 1)), ("jk", (1, 0))], [("i", (0,)), ("j", (0,))],
              [("i", (-1,)), ("j", (0,)), ("i", (0,))], [("i", (0,)), ("i", (1,))], [("ij", (0,))],
              [("i1", (0, 1)), ("1", (1,))], [("ij", [0, 1])], [["ij", (0, 1)]], Gen([("ij", (0, 1))]),
              [("ié", (0, 1))], [("i", (2 ** 70,))], [("i", (63,)), ("j", (63,))], [("i", (64,))],
              [("i", (-2,)), ("j", (-2,))], [("ij", (True, 1))], [("ij", (0, 1), 2)], ["ij"],
              [("j", (0,)), ("i", (1,))]]


@needs_c
@pytest.mark.parametrize("tensors", MERGE_ROWS, ids=repr)
def test_merge_rows_match_reference(tensors):
    diff = merge_difference(notation.merge_shardings, MERGE, tensors)
    assert diff is None, diff


LETTER_DIMS = st.dictionaries(st.sampled_from("ijk1é"), st.one_of(st.integers(-1, 3), st.sampled_from([True, None])),
                              max_size=4)


class DictSub(dict):
    pass


@needs_c
@FUZZ
@given(AXES, LETTER_DIMS, st.sampled_from(["dict", "dict", "dict", "subclass", "pairs", "none", "list-axes"]))
def test_mapping_for_axes_matches_reference(axes, letter_to_dim, form):
    mapping: Any = {"dict": letter_to_dim, "subclass": DictSub(letter_to_dim), "pairs": list(letter_to_dim.items()),
                    "none": None, "list-axes": letter_to_dim}[form]
    given_axes: Any = list(axes) if form == "list-axes" else axes
    diff = call_difference(lambda: notation.mapping_for_axes(given_axes, mapping),
                           lambda: MAPPING_FOR_AXES(given_axes, mapping))
    assert diff is None, diff


@needs_c
@FUZZ
@given(merge_inputs(), AXES)
def test_mapping_for_axes_of_a_merge_matches_reference(tensors, axes):
    merged = outcome(lambda: MERGE(fresh(tensors)))
    if merged[0] == "returns":
        diff = call_difference(lambda: notation.mapping_for_axes(axes, merged[1]),
                               lambda: MAPPING_FOR_AXES(axes, merged[1]))
        assert diff is None, diff


# --------------------------------------------------------------------------- valid_inputs / RuleInput.attr
SPEC_POOL = [
    DistTensorSpec((8, 6), (0, -1), M23), DistTensorSpec((8, 6), (-1, 1), M23, frozenset({0})),
    DistTensorSpec((8, 6), ((0, 1), -1), M23), DistTensorSpec((8, 6, 4), ((2, 0), -1, 1), M222),
    DistTensorSpec((8, 6), ((1, 0), -1), ProcessMesh((3, 2))), DistTensorSpec((8, 6), (1, 1), M23),
    DistTensorSpec((8, 6), ((0, 0), -1), M23), DistTensorSpec((8,), (), None), DistTensorSpec((6,), (-1,), M2),
    DistTensorSpec((6,), (0,), M23_XY), DistTensorSpec((6,), (0,), M23_SUB), build_reference((8, 6), (0, -1), M23),
    # co-shards read through the getter: a tie (first listed kept), the largest last, three members, two axes
    DistTensorSpec((8, 6, 4), ((0, 1, 2), -1, -1), M222), DistTensorSpec((8, 6), ((0, 1), -1), ProcessMesh((2, 2))),
    DistTensorSpec((8, 6, 4), ((0, 2), (1, 3), -1), ProcessMesh((2, 3, 4, 5))),
    DistTensorSpec((8, 6), ((1, 0), -1), M23_XY),
    None, None, [8, 6], "x", 0,
]


class SpecSub(DistTensorSpec):
    pass


SPEC_POOL.append(SpecSub((8, 6), (0, -1), M23))
OPTIONAL = st.sampled_from([True, False, 0, 1, "", None])


@st.composite
def valid_inputs_args(draw: Any) -> Any:
    specs = draw(st.lists(st.sampled_from(SPEC_POOL), max_size=6))
    names = [(draw(st.sampled_from(["x", "scale", "bias", "é"])), draw(OPTIONAL))
             for _ in range(len(specs) + draw(st.integers(0, 2)))]
    return draw(st.sampled_from([list, list, tuple]))(specs), draw(st.sampled_from([list, tuple]))(names)


def inputs_view(value: Any) -> Any:
    """A valid_inputs answer: None or its RuleInputs field by field, with their types and the mesh's identity."""
    return typed(value)


@needs_c
@FUZZ
@given(valid_inputs_args())
def test_valid_inputs_matches_reference(args):
    """Well-formed names (one (name, optional) tuple per spec, or more); loose names are the rows below."""
    specs, names = args
    note(repr(args))
    diff = call_difference(lambda: _tensor.valid_inputs(specs, names), lambda: _tensor._valid_inputs(specs, names),
                           view=inputs_view)
    assert diff is None, diff


RULE_INPUTS = [_tensor.as_input(s, "x") for s in SPEC_POOL[:11]] + [_tensor.as_input(None, "bias", optional=True)]
ATTR_MAPPINGS = [(0, -1), [0, -1], (-1,), (), Gen((1, -1)), ((0, 1), -1), 5, "01", IntSub(0)]


class MappingTuple(tuple):
    pass


ATTR_MAPPINGS.append(MappingTuple((0, -1)))
KEEP = st.sampled_from([OMIT, True, False, 0, 1, "x", None])


def rule_attr_call(method: Any, rule_input: Any, mapping: Any, keep: Any) -> Any:
    return method, (rule_input, fresh(mapping)), ({} if keep is OMIT else {"keep_partial": keep})


@needs_c
@FUZZ
@given(st.lists(st.tuples(st.sampled_from(RULE_INPUTS), st.sampled_from(ATTR_MAPPINGS), KEEP, st.booleans()),
                min_size=1, max_size=8))
def test_rule_input_attr_matches_reference(calls):
    note(repr(calls))
    c_calls = [rule_attr_call(RuleInput.attr, ri, m, k) for ri, m, k, _ in calls]
    ref_calls = [rule_attr_call(RuleInput._attr, ri, m, k) for ri, m, k, _ in calls]
    mixed = [rule_attr_call(RuleInput.attr if use_c else RuleInput._attr, ri, m, k) for ri, m, k, use_c in calls]
    diff = trace_difference(c_calls, ref_calls)
    assert diff is None, diff
    diff = trace_difference(mixed, [rule_attr_call(RuleInput._attr, ri, m, k) for ri, m, k, _ in calls])
    assert diff is None, diff


# --------------------------------------------------------------------------- calls off the documented form
GOOD = SPEC_POOL[0]
BAD = SPEC_POOL[5]
RI = RULE_INPUTS[0]
OFF_FORM_ROWS = {
    # keyword arguments the references take
    "merge_shardings(tensors=...)": (lambda f: f(tensors=[("ij", (0, 1))]), notation.merge_shardings,
                                     MERGE),
    "mapping_for_axes(axes=..., letter_to_dim=...)": (lambda f: f(axes="ij", letter_to_dim={"i": 0, "j": 1}),
                                                      notation.mapping_for_axes, MAPPING_FOR_AXES),
    "valid_inputs(specs=..., names=...)": (lambda f: f(specs=[GOOD], names=[("x", False)]),
                                           _tensor.valid_inputs, _tensor._valid_inputs),
    "RuleInput.attr(dims_mapping=...)": (lambda f: f(RI, dims_mapping=(0, -1)), RuleInput.attr, RuleInput._attr),
    "DistAttr.make(keywords)": (lambda f: f(mesh=M23, partial_dims=frozenset(), dims_mapping=(0,)),
                                DistAttr.make, ATTR_MAKE),
    "SpmdResult.make(keywords)": (lambda f: f(outputs=(), inputs=()), SpmdResult.make, RESULT_MAKE),
    # names that are not one (name, optional) tuple per spec
    "valid_inputs: fewer names, the spec fails first": (lambda f: f([BAD], []), _tensor.valid_inputs,
                                                        _tensor._valid_inputs),
    "valid_inputs: fewer names than valid specs": (lambda f: f([GOOD], []), _tensor.valid_inputs,
                                                   _tensor._valid_inputs),
    "valid_inputs: [name, optional] lists": (lambda f: f([GOOD, None], [["x", False], ["b", True]]),
                                             _tensor.valid_inputs, _tensor._valid_inputs),
    "valid_inputs: (name,) for a present spec": (lambda f: f([GOOD], [("x",)]), _tensor.valid_inputs,
                                                 _tensor._valid_inputs),
    "valid_inputs: names a generator": (lambda f: f([GOOD], (n for n in [("x", False)])), _tensor.valid_inputs,
                                        _tensor._valid_inputs),
    "valid_inputs: specs a generator": (lambda f: f((s for s in [GOOD, None]), [("x", False), ("b", True)]),
                                        _tensor.valid_inputs, _tensor._valid_inputs),
    # wrong calls: the error's type and text
    "merge_shardings(5)": (lambda f: f(5), notation.merge_shardings, MERGE),
    "valid_inputs(5, [])": (lambda f: f(5, []), _tensor.valid_inputs, _tensor._valid_inputs),
    "DistAttr.make(2 arguments)": (lambda f: f((0,), frozenset()), DistAttr.make, ATTR_MAKE),
    "DistAttr.make(4 arguments)": (lambda f: f((0,), frozenset(), None, 1), DistAttr.make, ATTR_MAKE),
    "DistAttr.make(mesh twice)": (lambda f: f((0,), frozenset(), None, mesh=None), DistAttr.make, ATTR_MAKE),
    "SpmdResult.make(1 argument)": (lambda f: f(()), SpmdResult.make, RESULT_MAKE),
    "RuleInput.attr()": (lambda f: f(RI), RuleInput.attr, RuleInput._attr),
    "RuleInput.attr(keep_partial by position)": (lambda f: f(RI, (0, -1), True), RuleInput.attr, RuleInput._attr),
    "RuleInput.attr(unknown keyword)": (lambda f: f(RI, (0, -1), colour=1), RuleInput.attr, RuleInput._attr),
    "DistTensorSpec(mesh twice)": (lambda f: f((8,), (0,), M2, mesh=M2), build_installed, build_reference),
}


@needs_c
@pytest.mark.parametrize("row", list(OFF_FORM_ROWS))
def test_calls_off_the_documented_form_match(row):
    """Keyword calls, loose ``names`` and wrong calls: the installed function answers or raises as its reference."""
    call, installed, reference = OFF_FORM_ROWS[row]
    diff = call_difference(lambda: call(installed), lambda: call(reference))
    types.clear_caches()
    assert diff is None, f"{row}: {diff}"


# --------------------------------------------------------------------------- the whole parity grid
GRID_EVERY = int(os.environ.get("SPEEDUPS_GRID_EVERY", "16"))


def _mesh_key(mesh: Any) -> Any:
    return None if mesh is None else [list(mesh.shape), list(mesh.process_ids), list(mesh.dim_names)]


def outcome_text(out: Any) -> str:
    """A port outcome's text, with what ``str`` leaves out: the error's kind and class, each attr's mesh."""
    if out.error is not None:
        return f"{out} | kind={out.error.kind} port_invalid={out.error.port_invalid}"
    attrs = out.result.inputs + out.result.outputs
    return f"{out} | meshes={json.dumps([_mesh_key(a.mesh) for a in attrs])}" + \
        ("" if all(type(a) is DistAttr for a in attrs) else " (not DistAttr)")


def grid_texts(rules: Any = None, profiles: Any = None, every: int = GRID_EVERY) -> dict[str, str]:
    """``"<profile> <rule> <case id>"`` -> :func:`outcome_text` for every case of every rule's grid
    (own grid and co-shard set) in profile ``paddle``, and every ``every``-th (crc32 of the key) in the others."""
    from paddle_spmd_port.grid import GRIDS, grid_for
    from paddle_spmd_port.outcome import port_outcome
    from paddle_spmd_port.rules import PROFILES

    out: dict[str, str] = {}
    for rule in rules or GRIDS:
        for case in grid_for(rule):
            for profile in profiles or PROFILES:
                key = f"{profile} {rule} {case.case_id}"
                if profile != "paddle" and zlib.crc32(key.encode()) % every:
                    continue
                assert key not in out, f"two cases with the id {key}"
                out[key] = outcome_text(port_outcome(case, profile))
    return out


def grid_difference(installed: dict[str, str], reference: dict[str, str], show: int = 5) -> str | None:
    """None when both hold the same cases with the same texts; else the first ``show`` differences."""
    lines = []
    if installed.keys() != reference.keys():
        lines.append(f"case ids differ: {sorted(installed.keys() ^ reference.keys())[:show]}")
    differing = [k for k in installed if k in reference and installed[k] != reference[k]]
    for key in differing[:show]:
        lines.append(f"{key}:\n  C    {installed[key]}\n  pure {reference[key]}")
    if differing:
        lines.insert(0, f"{len(differing)} of {len(installed)} cases differ")
    return "\n".join(lines) or None


def start_pure_grid(out_path: str, rules: Any = None, profiles: Any = None, plant: str = "") -> subprocess.Popen:
    env = {**os.environ, "PADDLE_SPMD_PORT_PURE": "1"}
    argv = [sys.executable, "-m", "tests.test_speedups", out_path, ",".join(rules or ()), ",".join(profiles or ()),
            plant]
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish_pure_grid(child: subprocess.Popen, out_path: str) -> dict[str, str]:
    stdout, stderr = child.communicate(timeout=600)
    assert child.returncode == 0, f"pure grid subprocess failed ({child.returncode}):\n{stdout}\n{stderr}"
    assert stdout.strip() == "core=python", stdout
    return json.loads(Path(out_path).read_text())


def _grid_child(argv: list[str]) -> None:
    """The subprocess side: the grid's texts into ``argv[0]`` as JSON (``argv[3]``: a fault to plant)."""
    out_path, rules, profiles, plant = argv
    if plant == "drop-partial":  # every attr the rules make loses its partial dims
        reference_make = types.DistAttr.make
        types.DistAttr.make = staticmethod(lambda dm, partial, mesh: reference_make(dm, frozenset(), mesh))
    texts = grid_texts(rules.split(",") if rules else None, profiles.split(",") if profiles else None)
    Path(out_path).write_text(json.dumps(texts))
    print(f"core={types.CORE}")


@needs_c
def test_grid_outcomes_match_pure_subprocess(tmp_path):
    out_path = str(tmp_path / "pure.json")
    started = time.perf_counter()
    child = start_pure_grid(out_path)
    installed = grid_texts()
    reference = finish_pure_grid(child, out_path)
    elapsed = time.perf_counter() - started
    print(f"grid: {len(installed)} cases (profile paddle in full, others every {GRID_EVERY}th), {elapsed:.1f} s")
    assert len(installed) > 100_000
    diff = grid_difference(installed, reference)
    assert diff is None, diff


# --------------------------------------------------------------------------- planted faults are caught
def fake_spec_duplicates_valid(*args: Any, **kw: Any) -> DistTensorSpec:
    """A "C" constructor that takes a spec sharding along one mesh dim twice as valid."""
    spec = build_reference(*args, **kw)
    if spec._problem == "duplicate":
        object.__setattr__(spec, "_problem", None)
        object.__setattr__(spec, "valid_on_mesh", True)
    return spec


def fake_spec_lists_kept(*args: Any, **kw: Any) -> DistTensorSpec:
    """A constructor that keeps a list shape as a list (an equal-looking value of another type)."""
    spec = build_reference(*args, **kw)
    object.__setattr__(spec, "shape", list(spec.shape))
    return spec


def fake_spec_mesh_copied(*args: Any, **kw: Any) -> DistTensorSpec:
    spec = build_reference(*args, **kw)
    if spec.mesh is not None:
        object.__setattr__(spec, "mesh", ProcessMesh(spec.mesh.shape, spec.mesh.process_ids, spec.mesh.dim_names))
    return spec


def fake_spec_other_kind(*args: Any, **kw: Any) -> DistTensorSpec:
    try:
        return build_reference(*args, **kw)
    except types.InvalidSpecError as exc:
        exc.kind = "invalid-spec"
        raise


def fake_spec_numpy_kept(*args: Any, **kw: Any) -> DistTensorSpec:
    """A constructor that keeps numpy ints as they came (equal values of another type)."""
    spec = build_reference(*args, **kw)
    object.__setattr__(spec, "shape", tuple(args[0]))
    return spec


def fake_spec_other_problem(*args: Any, **kw: Any) -> DistTensorSpec:
    """A constructor that finds another problem than the reference (check's kind names it)."""
    spec = build_reference(*args, **kw)
    if spec._problem is not None:
        object.__setattr__(spec, "_problem", "length" if spec._problem != "length" else "duplicate")
    return spec


def fake_spec_bools_refused(*args: Any, **kw: Any) -> DistTensorSpec:
    """A constructor that refuses a bool where Paddle (and the reference) take it as 0 or 1."""
    if any(type(v) is bool for v in args[1]):
        raise types.ArgumentTypeError("DistTensorSpec.dims_mapping must hold ints", kind="invalid-spec:x:type")
    return build_reference(*args, **kw)


@pytest.mark.parametrize("fake, row", [
    (fake_spec_other_problem, ([8, 6], [0, 0], M23)), (fake_spec_bools_refused, ([8, 6], [True, -1], M23)),
    *([] if np is None else [(fake_spec_numpy_kept, ([np.int64(8), 6], [0, -1], M23))]),
    (fake_spec_duplicates_valid, ((8, 6), (1, 1), M23)), (fake_spec_lists_kept, ([8, 6], (0, -1), M23)),
    (fake_spec_mesh_copied, ((8, 6), (0, -1), M23)), (fake_spec_other_kind, ((8, 6), (1.0, -1), M23))])
def test_planted_spec_faults_are_caught(fake, row):
    assert spec_difference(build_reference, build_reference, spec_call(*row)) is None
    assert spec_difference(fake, build_reference, spec_call(*row)) is not None


def merge_later_claimant_keeps(tensors: Any) -> dict[str, int]:
    """A merge that gives a mesh dim claimed by two letters to the later one."""
    pairs = [(axes, tuple(dm)) for axes, dm in tensors]
    merged = MERGE(pairs)
    first_claims: dict[str, int] = {}
    for axes, dm in pairs:
        for letter, m in zip(axes, dm, strict=True):
            if m != -1:
                first_claims.setdefault(letter, m)
    taken: set[int] = set()
    for letter in reversed(list(first_claims)):
        merged[letter] = -1 if first_claims[letter] in taken else first_claims[letter]
        taken.add(first_claims[letter])
    return merged


def merge_sorted(tensors: Any) -> dict[str, int]:
    """The right letters and dims, in another key order."""
    return dict(sorted(MERGE(tensors).items()))


def merge_other_message(tensors: Any) -> dict[str, int]:
    try:
        return MERGE(tensors)
    except NotImplementedError:
        raise NotImplementedError("conflict") from None


@pytest.mark.parametrize("fake, tensors", [
    (merge_later_claimant_keeps, [("i", (0,)), ("j", (0,))]), (merge_sorted, [("j", (0,)), ("i", (1,))]),
    (merge_other_message, [("i", (0,)), ("i", (1,))])])
def test_planted_merge_faults_are_caught(fake, tensors):
    assert merge_difference(MERGE, MERGE, tensors) is None
    assert merge_difference(fake, MERGE, tensors) is not None


def test_planted_mapping_for_axes_fault_is_caught():
    def fake(axes: str, letter_to_dim: dict[str, int]) -> tuple[int, ...]:
        return tuple(-1 if letter == "1" else letter_to_dim.get(letter, -1) for letter in axes)
    assert call_difference(lambda: fake("ik", {"i": 0}), lambda: MAPPING_FOR_AXES("ik", {"i": 0}))
    assert call_difference(lambda: fake("i", {"i": True}), lambda: MAPPING_FOR_AXES("i", {"i": 1}))


def make_ignoring_names(dims_mapping: Any, partial_dims: Any, mesh: Any) -> DistAttr:
    """The reference without its mesh check: a mesh of the same hash but other dim names finds the first attr."""
    key = (dims_mapping, partial_dims, None if mesh is None else mesh._hash)
    hit = types._INTERNED.get(key)
    return hit if hit is not None else ATTR_MAKE(dims_mapping, partial_dims, mesh)


def make_not_interned(dims_mapping: Any, partial_dims: Any, mesh: Any) -> DistAttr:
    return DistAttr(dims_mapping, partial_dims, mesh)


def make_converting(dims_mapping: Any, partial_dims: Any, mesh: Any) -> DistAttr:
    return ATTR_MAKE(tuple(dims_mapping), partial_dims, mesh)


@pytest.mark.parametrize("fake, calls", [
    (make_ignoring_names, [((0, -1), frozenset(), M23), ((0, -1), frozenset(), M23_XY)]),
    (make_not_interned, [((0, -1), frozenset(), M23), ((0, -1), frozenset(), M23)]),
    (make_converting, [([0, -1], frozenset(), M23)])])
def test_planted_make_faults_are_caught(fake, calls):
    assert trace_difference([(fake, c, {}) for c in calls], [(ATTR_MAKE, c, {}) for c in calls]) is not None
    assert trace_difference([(ATTR_MAKE, c, {}) for c in calls],
                            [(ATTR_MAKE, c, {}) for c in calls]) is None


def test_planted_table_fault_is_caught():
    """A make that returns the right object but files it under another key."""
    def fake(dims_mapping: Any, partial_dims: Any, mesh: Any) -> DistAttr:
        attr = ATTR_MAKE(dims_mapping, partial_dims, mesh)
        types._INTERNED[(dims_mapping, partial_dims, mesh)] = attr
        return attr
    call = ((0,), frozenset(), M2)
    assert trace_difference([(fake, call, {})], [(ATTR_MAKE, call, {})]).startswith("tables differ")


def test_planted_result_fault_is_caught():
    def fake(inputs: Any, outputs: Any) -> SpmdResult:
        return RESULT_MAKE(tuple(inputs), tuple(outputs))
    assert call_difference(lambda: fake([A1], [A2]), lambda: RESULT_MAKE([A1], [A2]), view=result_view)


def test_planted_valid_inputs_faults_are_caught():
    coshard = [SPEC_POOL[2]]

    def raw_coshard(specs: Any, names: Any) -> Any:  # forgets Paddle's getter fallback
        out = _tensor._valid_inputs(specs, names)
        return out and [ri._replace(dims_mapping=s.dims_mapping) for ri, s in zip(out, specs, strict=True)]

    def optional_ignored(specs: Any, names: Any) -> Any:
        return _tensor._valid_inputs(specs, [(n, True) for n, _ in names])

    names = [("x", False)]
    assert call_difference(lambda: raw_coshard(coshard, names), lambda: _tensor._valid_inputs(coshard, names))
    assert call_difference(lambda: optional_ignored([None], names), lambda: _tensor._valid_inputs([None], names))


def test_planted_rule_attr_fault_is_caught():
    ri = RULE_INPUTS[1]  # partial {0}
    def keeps_partial(self: Any, dims_mapping: Any, *, keep_partial: bool = False) -> DistAttr:
        return RuleInput._attr(self, dims_mapping, keep_partial=True)
    assert trace_difference([(keeps_partial, (ri, (-1, 1)), {})], [(RuleInput._attr, (ri, (-1, 1)), {})])


def test_planted_grid_differences_are_reported():
    texts = {"paddle r r-0": "in: [0] | out: [0]", "paddle r r-1": "raises ValueError: x"}
    assert grid_difference(texts, dict(texts)) is None
    assert "r-1" in grid_difference(texts, {**texts, "paddle r r-1": "raises ValueError: y"})
    assert "case ids differ" in grid_difference(texts, {"paddle r r-0": texts["paddle r r-0"]})


def test_planted_fault_in_the_pure_subprocess_is_caught(tmp_path):
    """The whole route (subprocess, ids, texts) on one small rule: attrs that lose their partial dims."""
    out_path = str(tmp_path / "planted.json")
    child = start_pure_grid(out_path, ["instance_norm_grad"], ["paddle"], plant="drop-partial")
    installed = grid_texts(["instance_norm_grad"], ["paddle"])
    diff = grid_difference(installed, finish_pure_grid(child, out_path))
    assert diff is not None and " P{" in diff


if __name__ == "__main__":
    _grid_child(sys.argv[1:])


def test_the_parity_report_names_the_port_core_that_ran():
    """A parity report says which port it compared: with the C module, or the Python alone."""
    from paddle_spmd_port.parity.report import ParityReport

    report = ParityReport()
    assert report.to_json()["port_core"] == types.CORE and f"port core {types.CORE};" in report.markdown()
    code = "from paddle_spmd_port.parity.report import ParityReport; print(ParityReport().to_json()['port_core'])"
    pure = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PADDLE_SPMD_PORT_PURE="1"), stdin=subprocess.DEVNULL)
    assert pure.stdout.strip() == "python", pure.stderr[-2000:]
