"""The Python API called the way a Paddle developer calls Paddle's registry.

``get_spmd_rule(name).infer_forward(...)`` with the port's ``DistTensorSpec`` / ``ProcessMesh`` built as
Paddle's own rule tests build theirs: meshes as nested process ids with dim names (lists, tuples, a
numpy array), shapes and dims_mappings as lists, tuples, numpy ints or numpy arrays, partial dims,
attributes positional, the answer unpacked as ``inputs, outputs``. The first tests need no Paddle;
the last compares the port's answers with Paddle's registry (``native``) on hypothesis-drawn valid
inputs the port takes (what it refuses as invalid never reaches Paddle, which may crash on it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paddle_spmd_port import DistTensorSpec, InvalidSpecError, ProcessMesh
from paddle_spmd_port.rules import get_spmd_rule
from paddle_spmd_port.types import mesh_dims_of


def test_mesh_from_nested_process_ids_as_paddle_builds_it() -> None:
    mesh = ProcessMesh([[0, 1, 2], [3, 4, 5]], dim_names=["x", "y"])
    assert (mesh.shape, mesh.process_ids, mesh.dim_names) == ((2, 3), (0, 1, 2, 3, 4, 5), ("x", "y"))
    assert mesh == ProcessMesh((2, 3), dim_names=("x", "y")) and hash(mesh) == hash(ProcessMesh((2, 3)))
    assert ProcessMesh(((4, 5), (6, 7))).process_ids == (4, 5, 6, 7)
    grid = ProcessMesh(np.arange(8).reshape(2, 2, 2), dim_names=["dp", "mp", "pp"])
    assert grid.shape == (2, 2, 2) and grid.process_ids == tuple(range(8))
    assert ProcessMesh(np.array([[3, 2], [1, 0]])).process_ids == (3, 2, 1, 0)
    # a flat sequence is still the shape (the port's own spelling)
    assert ProcessMesh([2, 3]).shape == (2, 3) and ProcessMesh(np.array([2, 3])).shape == (2, 3)


@pytest.mark.parametrize("grid, kwargs", [
    ([[0, 1], [2]], {}),                       # ragged
    ([[0, 1], [2, [3]]], {}),                  # a list where an id belongs
    ([[0, 1], [2, 3]], {"process_ids": [0, 1, 2, 3]}),  # ids twice
    ([[0, 0], [2, 3]], {}),                    # an id twice
    ([[0, 1], [2, 3]], {"dim_names": ["x"]}),  # names for another rank
])
def test_bad_nested_mesh_is_refused_by_name(grid: Any, kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidSpecError, match="ProcessMesh"):
        ProcessMesh(grid, **kwargs)


def test_result_reads_as_paddles_pair() -> None:
    mesh = ProcessMesh([[0, 1, 2], [3, 4, 5]], dim_names=["x", "y"])
    x = DistTensorSpec([8, 6, 4], [0, 1, -1], mesh)
    result = get_spmd_rule("layer_norm").infer_forward(x, None, None, 1e-5, 1)
    inputs, outputs = result
    assert (inputs, outputs) == (result.inputs, result.outputs) and len(result) == 2
    assert result[0][0].dims_mapping == (0, -1, -1) and result[1][1].dims_mapping == (0,)
    assert result[-1] is result.outputs


# ---------------------------------------------------------------- against Paddle's registry

MESH_SHAPES = ((2,), (4,), (2, 3), (2, 2), (1, 2), (2, 2, 2))


@st.composite
def _mesh(draw: Any) -> tuple[ProcessMesh, Any]:
    shape = draw(st.sampled_from(MESH_SHAPES))
    size = int(np.prod(shape))
    ids = draw(st.sampled_from([list(range(size)), list(range(size))[::-1], list(range(size, 2 * size))]))
    names = [f"n{i}" for i in range(len(shape))]
    grid = np.array(ids).reshape(shape)
    import paddle.distributed as dist

    theirs = dist.ProcessMesh(grid.tolist(), dim_names=names)
    if len(shape) == 1:  # a flat list is a shape here: a 1-D mesh spells its ids out
        return ProcessMesh(shape, ids, dim_names=names), theirs
    return ProcessMesh(draw(st.sampled_from([grid.tolist(), grid])), dim_names=names), theirs


def _form(values: list[int], form: str) -> Any:
    return {"list": list(values), "tuple": tuple(values), "np64": [np.int64(v) for v in values],
            "np32": [np.int32(v) for v in values], "array": np.array(values, dtype=np.int64)}[form]


@st.composite
def _mapping(draw: Any, rank: int, ndim: int) -> tuple[list[int], list[int]]:
    dims = draw(st.permutations(list(range(ndim))))
    mapping = [-1] * rank
    for axis, dim in zip(draw(st.permutations(list(range(rank)))), dims, strict=False):
        if draw(st.booleans()):
            mapping[axis] = dim
    free = [d for d in range(ndim) if d not in mapping]
    partial = sorted(draw(st.sets(st.sampled_from(free)))) if free else []
    return mapping, partial


def _paddle_spec(shape: list[int], mapping: list[int], partial: list[int], pmesh: Any) -> Any:
    from paddle.distributed.auto_parallel.static.dist_attribute import DistTensorSpec as PaddleSpec
    from paddle.distributed.auto_parallel.static.dist_attribute import TensorDistAttr

    attr = TensorDistAttr()
    attr.process_mesh = pmesh
    attr.dims_mapping = mapping
    if partial:
        attr._set_partial_dims(partial)
    return PaddleSpec(shape, attr)


#: registry name, method -> (tensor ranks as a function of x's rank and shape, attrs drawn)
def _call(draw: Any, name: str, mesh: ProcessMesh, pmesh: Any) -> tuple[list[Any], list[Any], list[Any]]:
    ndim = len(mesh.shape)
    form = draw(st.sampled_from(["list", "tuple", "np64", "np32", "array"]))
    rank = draw(st.integers(2, 4))
    x_shape = [draw(st.sampled_from([2, 4, 6, 8, 12])) for _ in range(rank)]
    tensors: list[list[int]] = [x_shape]
    attrs: list[Any]
    if name == "layer_norm":
        b = draw(st.integers(1, rank - 1))
        tensors += [[int(np.prod(x_shape[b:]))]] * 2
        attrs = [draw(st.sampled_from([1e-5, 0.5])), b]
    elif name == "p_norm":
        attrs = [draw(st.sampled_from([2.0, 1.0, float("inf")])), draw(st.integers(-rank, rank - 1)), 1e-12,
                 draw(st.booleans()), draw(st.booleans())]
    elif name == "fused_rms_norm":
        tensors += [[x_shape[-1]]]
        attrs = [1e-5]
    elif name == "instance_norm":
        tensors += [[x_shape[1]]] * 2
        attrs = [1e-5]
    elif name == "group_norm":
        tensors += [[x_shape[1]]] * 2
        attrs = [1e-5, 2, "NCHW"]
    else:  # batch_norm: x, mean, variance, scale, bias; no attributes
        tensors += [[x_shape[1]]] * 4
        attrs = []
    mine, theirs = [], []
    for shape in tensors:
        mapping, partial = draw(_mapping(len(shape), ndim))
        mine.append(DistTensorSpec(_form(shape, form), _form(mapping, form), mesh,
                                   draw(st.sampled_from([list, set, tuple]))(partial)))
        theirs.append(_paddle_spec(shape, mapping, partial, pmesh))
    return mine, theirs, attrs


def _paddle_view(raw: Any) -> Any:
    flat = [a for group in raw for item in group for a in (item if isinstance(item, list) else [item])]
    return [(tuple(a.dims_mapping), frozenset(a._partial_dims()) if a._is_partial() else frozenset(),
             tuple(a.process_mesh.shape), tuple(a.process_mesh.process_ids)) for a in flat]


def _port_view(inputs: Any, outputs: Any) -> Any:
    return [(a.dims_mapping, a.partial_dims, a.mesh.shape, a.mesh.process_ids) for a in (*inputs, *outputs)]


NAMES = ("layer_norm", "p_norm", "fused_rms_norm", "instance_norm", "group_norm", "batch_norm")


@pytest.mark.native
@pytest.mark.parametrize("name", NAMES)
def test_port_answers_as_paddles_registry_in_paddle_call_forms(name: str) -> None:
    from paddle.framework import core

    native = core.get_phi_spmd_rule(name)
    port = get_spmd_rule(name)

    @settings(max_examples=60, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data: Any) -> None:
        mesh, pmesh = data.draw(_mesh())
        mine, theirs, attrs = _call(data.draw, name, mesh, pmesh)
        try:  # the port first: input it refuses (Paddle takes it silently or crashes) never reaches Paddle
            inputs, outputs = port.infer_forward(*mine, *attrs)
            got = ("answer", _port_view(inputs, outputs))
        except InvalidSpecError:
            return
        except Exception as exc:
            got = ("error", type(exc).__name__)
        try:
            expected = ("answer", _paddle_view(native.infer_forward(*theirs, *attrs)))
        except Exception as exc:  # then the port must refuse too
            expected = ("error", type(exc).__name__)
        if expected[0] == "error":
            assert got[0] == "error", (mine, attrs, expected)
        else:
            assert got == expected, (mine, attrs)

    check()


#: registry name -> (tensor shapes, their mappings, attrs): a static program's dynamic batch axis (-1)
DYNAMIC_CALLS: dict[str, tuple[list[list[int]], list[list[int]], list[Any]]] = {
    "layer_norm": ([[-1, 6, 4], [4], [4]], [[0, 1, -1], [-1], [-1]], [1e-5, 2]),
    "p_norm": ([[-1, 6]], [[0, 1]], [2.0, 1, 1e-12, False, False]),
    "fused_rms_norm": ([[-1, 4, 16], [16]], [[1, 0, -1], [-1]], [1e-6]),
    "instance_norm": ([[-1, 6, -1, -1], [6], [6]], [[1, 0, -1, -1], [-1], [-1]], [1e-5]),
    "group_norm": ([[-1, 6, 4, 4], [6], [6]], [[1, 0, -1, -1], [-1], [-1]], [1e-5, 2, "NCHW"]),
    "batch_norm": ([[-1, 6, 4, 4]] + [[6]] * 4, [[1, 0, -1, -1]] + [[-1]] * 4, []),
}


def test_unknown_size_is_a_size_and_below_it_is_refused() -> None:
    mesh = ProcessMesh((2, 3))
    inputs, outputs = get_spmd_rule("layer_norm").infer_forward(DistTensorSpec([-1, 6], [0, 1], mesh), None, None,
                                                                  1e-5, 1)
    assert [a.dims_mapping for a in (*inputs, *outputs)][::3] == [(0, -1), (0, -1)]
    with pytest.raises(InvalidSpecError, match="shape"):
        DistTensorSpec([-2, 6], [0, 1], mesh)


@pytest.mark.native
@pytest.mark.parametrize("name", sorted(DYNAMIC_CALLS))
def test_dynamic_size_answers_as_paddles_registry(name: str) -> None:
    import paddle.distributed as dist
    from paddle.framework import core

    shapes, mappings, attrs = DYNAMIC_CALLS[name]
    pmesh = dist.ProcessMesh([[0, 1, 2], [3, 4, 5]], dim_names=["x", "y"])
    mesh = ProcessMesh([[0, 1, 2], [3, 4, 5]], dim_names=["x", "y"])
    mine = [DistTensorSpec(s, m, mesh) for s, m in zip(shapes, mappings, strict=True)]
    theirs = [_paddle_spec(s, m, [], pmesh) for s, m in zip(shapes, mappings, strict=True)]
    inputs, outputs = get_spmd_rule(name).infer_forward(*mine, *attrs)
    assert _port_view(inputs, outputs) == _paddle_view(core.get_phi_spmd_rule(name).infer_forward(*theirs, *attrs))


def test_coshard_entry_as_a_numpy_array() -> None:
    mesh = ProcessMesh([[0, 1], [2, 3]], dim_names=["x", "y"])
    want = DistTensorSpec((8, 6), ((0, 1), -1), mesh)
    assert DistTensorSpec(np.array([8, 6]), [np.array([0, 1]), -1], mesh) == want
    assert DistTensorSpec((8, 6), [np.array([1]), np.array([], dtype=np.int64)], mesh).dims_mapping == (1, -1)
    with pytest.raises(TypeError, match="dims_mapping"):  # a set has no order: no co-shard
        DistTensorSpec((8, 6), [{0, 1}, -1], mesh)


@pytest.mark.native
def test_coshard_calls_answer_as_paddles_registry() -> None:
    import paddle.distributed as dist
    from paddle.distributed.auto_parallel.static.dist_attribute import DistTensorSpec as PaddleSpec
    from paddle.distributed.auto_parallel.static.dist_attribute import TensorDistAttr
    from paddle.framework import core

    pmesh = dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["x", "y"])
    mesh = ProcessMesh(np.array([[0, 1], [2, 3]]), dim_names=["x", "y"])

    def theirs(shape: list[int], multi: list[list[int]]) -> Any:
        attr = TensorDistAttr()
        attr.process_mesh = pmesh
        attr.multi_dims_mapping = multi
        return PaddleSpec(shape, attr)

    for multi in ([[0, 1], [], []], [[1, 0], [], []], [[], [0, 1], []], [[1], [0], []]):
        x = DistTensorSpec([8, 8, 4], [np.array(m, dtype=np.int64) for m in multi], mesh)
        raw = core.get_phi_spmd_rule("layer_norm").infer_forward(
            theirs([8, 8, 4], multi), theirs([4], [[]]), theirs([4], [[]]), 1e-5, 2)
        inputs, outputs = get_spmd_rule("layer_norm").infer_forward(x, None, None, 1e-5, 2)
        want = [tuple(map(tuple, a.multi_dims_mapping)) for a in raw[1]]
        assert want == [tuple(mesh_dims_of(e) for e in a.dims_mapping) for a in outputs], multi


# ---------------------------------------------------------------- ProcessMesh call forms, as Paddle's


@pytest.mark.parametrize("build", [
    pytest.param(lambda: ProcessMesh(mesh=[[0, 1], [2, 3]], dim_names=["x", "y"]), id="mesh-keyword"),
    pytest.param(lambda: ProcessMesh([[0, 1], [2, 3]], ["x", "y"]), id="names-positional"),
    pytest.param(lambda: ProcessMesh(mesh=((0, 1), (2, 3)), dim_names=("x", "y")), id="tuples"),
    pytest.param(lambda: ProcessMesh(mesh=np.array([[0, 1], [2, 3]]), dim_names=np.array(["x", "y"])), id="numpy"),
    pytest.param(lambda: ProcessMesh(mesh=[[np.int64(0), np.int32(1)], [np.int64(2), 3]], dim_names=["x", "y"]),
                 id="numpy-ints"),
    pytest.param(lambda: ProcessMesh(shape=[2, 2], process_ids=range(4), dim_names=["x", "y"]), id="shape-and-ids"),
])
def test_mesh_takes_paddles_call_forms(build: Any) -> None:
    """Each form Paddle's ``dist.ProcessMesh`` takes (its tests write ``mesh=`` and positional names)
    gives the same mesh, with exact ints and strs."""
    mesh = build()
    assert mesh == ProcessMesh((2, 2), dim_names=("x", "y"))
    assert all(type(i) is int for i in mesh.process_ids) and all(type(n) is str for n in mesh.dim_names)


def test_mesh_keyword_matches_paddles_mesh() -> None:
    """``mesh=`` reads as Paddle's ``mesh``: a flat list is the ids of a 1-D mesh (not a shape)."""
    import paddle.distributed as dist

    for grid in ([2, 3], [[4, 5, 6], [0, 1, 2]], np.arange(8).reshape(2, 2, 2)):
        theirs = dist.ProcessMesh(mesh=grid)
        ours = ProcessMesh(mesh=grid)
        assert (list(ours.shape), list(ours.process_ids), list(ours.dim_names)) == \
            (theirs.shape, theirs.process_ids, theirs.dim_names)


@pytest.mark.parametrize("kwargs, args, fragment", [
    pytest.param({"mesh": 3}, (), r"ProcessMesh\.mesh must be the process ids", id="mesh-scalar"),
    pytest.param({"mesh": np.int64(3)}, (), r"ProcessMesh\.mesh must be", id="mesh-numpy-scalar"),
    pytest.param({"mesh": "01"}, (), r"ProcessMesh\.mesh must be", id="mesh-str"),
    pytest.param({"mesh": []}, (), r"ProcessMesh\.mesh must hold at least one", id="mesh-empty"),
    pytest.param({"mesh": [[0, 1], [2]]}, (), r"ProcessMesh\.mesh: .* full grid", id="mesh-ragged"),
    pytest.param({"mesh": [0.0, 1.0]}, (), r"ProcessMesh\.mesh must hold ints", id="mesh-floats"),
    pytest.param({"mesh": [0, 1], "shape": (2,)}, (), "mesh= .* or a shape, not both", id="mesh-and-shape"),
    pytest.param({"mesh": [0, 1], "process_ids": [0, 1]}, (), "not both", id="mesh-and-ids"),
    pytest.param({"mesh": [0, -1]}, (), r"ProcessMesh\.process_ids must be ids >= 0", id="negative-id"),
    pytest.param({"mesh": [0, 0]}, (), r"ProcessMesh\.process_ids must list 2 distinct", id="duplicate-id"),
    pytest.param({"mesh": [0, 1], "dim_names": "x"}, (), r"ProcessMesh\.dim_names must be a sequence of str",
                 id="names-str"),
    pytest.param({"mesh": [0, 1], "dim_names": ["x", "y"]}, (), r"ProcessMesh\.dim_names must give 1",
                 id="names-count"),
    pytest.param({}, (), "ProcessMesh needs a shape .* or mesh=", id="nothing"),
    pytest.param({}, ([0, 1],), r"ProcessMesh\.shape .* positive sizes.*mesh=\[0, 1\]", id="flat-ids-as-shape"),
    pytest.param({}, ([[0, 1], [2, 3]], [0, 1, 2, 3]), "not both", id="grid-and-ids-positional"),
    pytest.param({}, ([0, 1], ["x"]), r"ProcessMesh\.process_ids must hold ints, got the names.*mesh=\[0, 1\]",
                 id="flat-ids-names-positional"),
])
def test_bad_mesh_call_is_one_line_naming_the_argument(kwargs: dict[str, Any], args: tuple[Any, ...],
                                                       fragment: str) -> None:
    with pytest.raises(InvalidSpecError, match=fragment) as err:
        ProcessMesh(*args, **kwargs)
    assert "\n" not in str(err.value)


def test_compat_mesh_checks_through_the_port_mesh() -> None:
    """The compat ``ProcessMesh`` (Paddle's drop-in) takes its checks from the port's mesh: the same
    refusals (negative ids, as Paddle's), and its port view is the mesh it checked."""
    from paddle_spmd_port.compat import ProcessMesh as CompatMesh

    mesh = CompatMesh(mesh=np.array([[0, 1], [2, 3]]), dim_names=["x", "y"])
    assert mesh.to_port() == ProcessMesh([[0, 1], [2, 3]], ["x", "y"])
    with pytest.raises(InvalidSpecError, match=r"ProcessMesh\.process_ids must be ids >= 0"):
        CompatMesh([0, -1])
    with pytest.raises(ValueError, match="must be an instance of list or np.ndarray"):
        CompatMesh((0, 1))  # Paddle refuses a tuple here


def test_a_spec_on_paddles_own_mesh_says_how_to_build_the_ports() -> None:
    """Both classes are called ProcessMesh: the refusal names the module of each and the port's
    spelling of the same mesh, which then builds it."""
    import paddle.distributed as dist

    theirs = dist.ProcessMesh([[0, 1], [2, 3]], dim_names=["x", "y"])
    with pytest.raises(InvalidSpecError, match=r"must be a paddle_spmd_port\.ProcessMesh or None, got paddle\..*"
                                               r"ProcessMesh\(m\.shape, m\.process_ids, m\.dim_names\)"):
        DistTensorSpec([8, 6], [0, -1], theirs)
    ours = ProcessMesh(theirs.shape, theirs.process_ids, theirs.dim_names)
    assert ours == ProcessMesh([[0, 1], [2, 3]], ["x", "y"]) and ours.dim_names == ("x", "y")
