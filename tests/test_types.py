import pytest

from paddle_spmd_port import DistAttr, DistTensorSpec, InvalidSpecError, ProcessMesh, parse_dist_attr
from paddle_spmd_port.case import Case

from .helpers import MESH_2x3, spec


def test_mesh_defaults_match_paddle_naming():
    mesh = ProcessMesh((2, 3))
    assert mesh.process_ids == (0, 1, 2, 3, 4, 5)
    assert mesh.dim_names == ("d0", "d1")
    assert mesh.ndim == 2


@pytest.mark.parametrize("kwargs, fragment", [
    pytest.param({"shape": (0, 2)}, "positive sizes", id="zero-size"),
    pytest.param({"shape": (2, 2), "process_ids": (0, 1, 2)}, "4 distinct ids", id="too-few-ids"),
    pytest.param({"shape": (2,), "dim_names": ("x", "y")}, "1 distinct names", id="too-many-names"),
])
def test_bad_mesh_says_what_is_valid(kwargs, fragment):
    with pytest.raises(InvalidSpecError, match=fragment):
        ProcessMesh(**kwargs)


@pytest.mark.parametrize("dm, partial, fragment", [
    pytest.param((0, -1, -1), (), "has 3 entries but the shape", id="mapping-shorter-than-rank"),
    pytest.param((0, 0, -1, -1), (), "same mesh dim", id="mesh-dim-twice"),
    pytest.param((-1, 2, -1, -1), (), "uses mesh dim 2", id="mesh-dim-out-of-range"),
    pytest.param((-1, -2, -1, -1), (), "uses mesh dim -2", id="mesh-dim-negative"),
    pytest.param((0, -1, -1, -1), (0,), "both shards an axis and is partial", id="partial-on-sharding-dim"),
    pytest.param((0, -1, -1, -1), (3,), "outside the mesh", id="partial-outside-mesh"),
])
def test_check_names_argument_and_fix(dm, partial, fragment):
    s = DistTensorSpec((8, 6, 4, 4), dm, MESH_2x3, frozenset(partial))
    with pytest.raises(InvalidSpecError, match=fragment) as err:
        s.check("out_grad")
    assert str(err.value).startswith("out_grad:")
    assert isinstance(err.value, ValueError)


def test_valid_spec_passes_check():
    spec((8, 6), (1, 0), partial=()).check("x")
    spec((8, 6), (1, -1), partial=(0,)).check("x")


@pytest.mark.parametrize("text", ["[0,-1]", "[0,-1] P{1}", "[-1] @-", "[] @-", "[-1,-1] P{0,1}"])
def test_short_form_round_trips(text):
    attr = parse_dist_attr(text, MESH_2x3)
    assert str(attr) == text


def test_placements_view():
    attr = DistAttr((1, -1, 0), frozenset(), ProcessMesh((2, 2)))
    assert attr.placements() == ("S(2)", "S(0)")
    assert DistAttr((-1, -1), frozenset({0}), ProcessMesh((2, 2))).placements() == ("P", "R")


def test_case_json_round_trip():
    case = Case("layer_norm", MESH_2x3, (spec((4, 6, 8), (0, -1, -1), partial=(1,)), None, spec((8,), (-1,))),
                (("begin_norm_axis", 2),), "id-1")
    assert Case.from_json(case.to_json()) == case


def test_case_fills_unset_attributes_with_the_signature_defaults():
    case = Case("layer_norm", MESH_2x3, (spec((4, 6, 8), (0, -1, -1)), None, None), (("begin_norm_axis", 2),))
    assert case.attr_values() == (1e-5, 2)  # epsilon from the signature, begin_norm_axis as given


def test_case_takes_lists_and_a_dict_of_attributes_as_the_tuples():
    x = spec((4, 6), (0, -1))
    case = Case("layer_norm", MESH_2x3, (x, None, None), (("epsilon", 1e-5), ("begin_norm_axis", 1)))
    for inputs, attrs in [([x, None, None], [["begin_norm_axis", 1]]), ((x, None, None), {"begin_norm_axis": 1}),
                          ((x, None, None), [("begin_norm_axis", 1), ("epsilon", 1e-5)])]:
        other = Case("layer_norm", MESH_2x3, inputs, attrs)
        assert other == case and hash(other) == hash(case) and type(other.inputs) is tuple


@pytest.mark.parametrize("args, fragment", [
    pytest.param(((2, 3), ("x", None, None), ()), r"Case\.mesh must be a ProcessMesh", id="mesh-as-shape"),
    pytest.param((MESH_2x3, ((4, 6), None, None), ()), r"Case\.inputs\[0\] \(x\) must be a DistTensorSpec",
                 id="input-as-shape"),
    pytest.param((MESH_2x3, "x", ()), r"Case\.inputs must be", id="inputs-str"),
    pytest.param((MESH_2x3, ("x", None, None), ("epsilon", 1e-5)), r"attrs must be \(name, value\) pairs",
                 id="attrs-one-pair-unwrapped"),
])
def test_case_names_an_argument_of_the_wrong_type(args, fragment):
    from paddle_spmd_port import ArgumentTypeError

    mesh, inputs, attrs = args
    inputs = tuple(spec((4, 6), (0, -1)) if item == "x" else item for item in inputs) if inputs != "x" else inputs
    with pytest.raises(ArgumentTypeError, match=fragment):
        Case("layer_norm", mesh, inputs, attrs)


def test_case_rejects_unknown_attribute():
    with pytest.raises(ValueError, match="has no attribute 'data_format'"):
        Case("layer_norm", MESH_2x3, (spec((4, 6), (0, -1)), None, None), (("data_format", "NCHW"),))


def test_interned_attrs_are_shared_by_equal_meshes_only():
    """DistAttr.make keys its intern table by the mesh's stored hash: an equal mesh finds the same
    attr, and a different mesh with the same hash (planted here; dim names alone differing gives
    one too) gets attrs of its own, shared among its equals (a version that trusted the hash alone
    would hand it an attr on the wrong mesh)."""
    from paddle_spmd_port.types import _INTERNED

    _INTERNED.clear()  # the table empties itself when full: start empty so no refill lands mid-test
    named = ProcessMesh((2, 3), dim_names=("x", "y"))  # hash of shape and ids only: collides with 2x3
    on_named = DistAttr.make((0, -1), frozenset(), named)
    first = DistAttr.make((0, -1), frozenset(), ProcessMesh((2, 3)))
    assert first.mesh == ProcessMesh((2, 3)) and on_named.mesh == named
    assert DistAttr.make((0, -1), frozenset(), ProcessMesh((2, 3))) is first
    assert DistAttr.make((0, -1), frozenset(), ProcessMesh((2, 3), dim_names=("x", "y"))) is on_named
    other = ProcessMesh((3, 2))
    object.__setattr__(other, "_hash", ProcessMesh((2, 3))._hash)  # a planted hash collision
    attr = DistAttr.make((0, -1), frozenset(), other)
    assert attr.mesh is other and attr is not first
    assert DistAttr.make((0, -1), frozenset(), other) is attr
    assert DistAttr.make((0, -1), frozenset(), ProcessMesh((2, 3))) is first


def test_an_attr_read_back_from_a_pickle_is_the_interned_one():
    """Workers pickle their answers: read back, each attr is the one DistAttr.make gives here, so equal
    answers from the port and from Paddle share attrs (without __reduce__ it would be a fresh copy)."""
    import pickle

    from paddle_spmd_port.types import DistAttr, ProcessMesh

    mesh = ProcessMesh((2, 3))
    fresh = DistAttr((0, -1), frozenset({1}), mesh)  # built apart from the table
    back = pickle.loads(pickle.dumps(fresh, protocol=pickle.HIGHEST_PROTOCOL))
    assert back is DistAttr.make((0, -1), frozenset({1}), mesh) and back == fresh
