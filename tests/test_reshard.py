"""The reshard cost model held to Paddle's choice of reshard function on a table of worked cases.

Each row was worked by hand from Paddle's registry order and ``SameNdMeshReshardFunction``'s four
passes as 3.3.1 ships them (paddle_spmd_port/reshard.py says which); the bytes are each rank's
received bytes for float32."""

from __future__ import annotations

import re

import pytest

from paddle_spmd_port import DistAttr, ProcessMesh
from paddle_spmd_port.installed import paddle_dir
from paddle_spmd_port.reshard import COLLECTIVES, ND_FUNCTION, cost, plan, settle, total_bytes

M4 = ProcessMesh((4,))
M23 = ProcessMesh((2, 3))
M22 = ProcessMesh((2, 2))


def a(dm, partial=()):
    return DistAttr(tuple(dm), frozenset(partial))


# (id, mesh, shape, src, dst, [(function, collective, mesh_dim, axis, bytes), ...])
WORKED = [
    ("1d-s-to-r", M4, (8, 6), a([0, -1]), a([-1, -1]),
     [("SToRReshardFunction", "all_gather", 0, 0, 3 * 2 * 6 * 4)]),
    ("1d-s-to-r-uneven", M4, (7,), a([0]), a([-1]),  # the last rank's 1 row is padded to ceil(7/4) = 2
     [("SToRReshardFunction", "all_gather", 0, 0, 3 * 2 * 4)]),
    ("1d-p-to-r", M4, (8, 6), a([-1, -1], [0]), a([-1, -1]),
     [("PToRReshardFunction", "all_reduce", 0, -1, 2 * 3 * 12 * 4)]),
    ("1d-p-to-s", M4, (8, 6), a([-1, -1], [0]), a([-1, 0]),
     [("PToSReshardFunction", "reduce_scatter", 0, 1, 3 * 8 * 2 * 4)]),
    ("1d-r-to-s", M4, (8, 6), a([-1, -1]), a([0, -1]),
     [("RToSReshardFunction", "none", 0, 0, 0)]),
    ("1d-r-to-p", M4, (8, 6), a([-1, -1]), a([-1, -1], [0]),
     [("RToPReshardFunction", "none", 0, -1, 0)]),
    ("1d-s-to-s", M4, (8, 6), a([0, -1]), a([-1, 0]),  # local [2,6], sent in pieces [2,2]
     [("SToSReshardFunction", "all_to_all", 0, 1, 3 * 2 * 2 * 4)]),
    ("1d-s-to-p", M4, (8, 6), a([0, -1]), a([-1, -1], [0]),
     [("SToPReshardFunction", "all_gather", 0, 0, 3 * 2 * 6 * 4)]),
    # N-D: the last differing axis is 1; axis 0, split the same way in both, is left alone (and
    # shrinks the piece axis 1's all_gather moves)
    ("nd-keep-equal-axis", M23, (12, 6), a([0, 1]), a([0, -1]),
     [("SToRReshardFunction", "all_gather", 1, 1, 2 * 6 * 2 * 4)]),
    ("nd-move-axis", M23, (12, 6), a([0, -1]), a([-1, 0]),  # no all_to_all on N-D: gather, then cut
     [("SToRReshardFunction", "all_gather", 0, 0, 1 * 6 * 6 * 4),
      ("RToSReshardFunction", "none", 0, 1, 0)]),
    ("nd-coshard-grow", M22, (8, 4), a([0, -1]), a([(0, 1), -1]),  # another shard on axis 0: all of it again
     [("SToRReshardFunction", "all_gather", 0, 0, 1 * 4 * 4 * 4),
      ("RToSReshardFunction", "none", 0, 0, 0), ("RToSReshardFunction", "none", 1, 0, 0)]),
    # an axis after the last differing one keeps its shard, so it shrinks the gathered piece
    ("nd-keep-later-axis", M23, (12, 6), a([0, 1]), a([-1, 1]),
     [("SToRReshardFunction", "all_gather", 0, 0, 1 * 6 * 2 * 4)]),
    ("nd-p-to-r-one-dim", M23, (12, 6), a([-1, -1], [0, 1]), a([-1, -1], [1]),
     [("PToRReshardFunction", "all_reduce", 0, -1, 2 * 1 * 36 * 4)]),
    ("nd-p-to-s", M23, (12, 6), a([-1, -1], [0]), a([0, -1]),
     [("PToSReshardFunction", "reduce_scatter", 0, 0, 1 * 6 * 6 * 4)]),
    ("nd-s-to-p-same-dim", M23, (12, 6), a([-1, 1]), a([-1, -1], [1]),
     [("SToRReshardFunction", "all_gather", 1, 1, 2 * 12 * 2 * 4),
      ("RToPReshardFunction", "none", 1, -1, 0)]),
    ("nd-p-and-s", M23, (12, 6), a([0, -1], [1]), a([-1, 1]),  # P on dim 1 becomes S: reduce_scatter
     [("SToRReshardFunction", "all_gather", 0, 0, 1 * 6 * 6 * 4),
      ("PToSReshardFunction", "reduce_scatter", 1, 1, 2 * 12 * 2 * 4)]),
    ("nd-coshard-gather", M22, (8,), a([(0, 1)]), a([-1]),  # innermost member first
     [("SToRReshardFunction", "all_gather", 1, 0, 1 * 2 * 4),
      ("SToRReshardFunction", "all_gather", 0, 0, 1 * 4 * 4)]),
    ("nd-coshard-cut", M22, (8,), a([-1]), a([(1, 0)]),
     [("RToSReshardFunction", "none", 1, 0, 0), ("RToSReshardFunction", "none", 0, 0, 0)]),
    ("nd-size-one-group", ProcessMesh((1, 2)), (4,), a([0]), a([-1]),
     [("SToRReshardFunction", "all_gather", 0, 0, 0)]),
]


@pytest.mark.parametrize("mesh, shape, src, dst, want", [pytest.param(*row[1:], id=row[0]) for row in WORKED])
def test_worked_cases(mesh, shape, src, dst, want):
    steps = plan(shape, src, dst, mesh)
    got = [(s.function, s.collective, s.mesh_dim, s.axis, s.bytes) for s in steps]
    assert got == want
    assert total_bytes(steps) == cost(shape, src, dst, mesh) == sum(w[-1] for w in want)
    for step in steps:
        assert step.collective in COLLECTIVES
        assert step.within == (ND_FUNCTION if mesh.ndim > 1 else "")
        assert step.group == mesh.shape[step.mesh_dim]
        assert (step.collective == "none") <= (step.bytes == 0)


def test_equal_distributions_need_no_reshard():
    assert plan((8, 6), a([0, 1], []), a([0, 1]), M23) == ()
    assert plan((8, 6), a([-1, -1], [0]), a([-1, -1], [0]), M4) == ()


def test_itemsize_scales_bytes():
    assert cost((8, 6), a([0, -1]), a([-1, -1]), M4, itemsize=2) * 2 == cost((8, 6), a([0, -1]), a([-1, -1]), M4)


def test_settle_prices_only_partial_outputs():
    assert settle((8, 6), a([0, -1]), M23) == ()
    (step,) = settle((8, 6), a([0, -1], [1]), M23)  # local [4,6] reduced over 3 ranks
    assert (step.function, step.collective, step.mesh_dim, step.bytes) == \
        ("PToRReshardFunction", "all_reduce", 1, 2 * 2 * 8 * 4)


@pytest.mark.parametrize("src, dst, fragment", [
    (a([0]), a([-1, -1]), "does not fit the shape"),
    (a([2, -1]), a([-1, -1]), "outside the mesh"),
    (a([0, 0]), a([-1, -1]), "twice"),
    (a([0, -1], [0]), a([-1, -1]), "twice"),
])
def test_bad_distribution_is_refused(src, dst, fragment):
    with pytest.raises(ValueError, match=fragment):
        plan((8, 6), src, dst, M23)


@pytest.mark.native
def test_every_function_named_is_one_of_paddles():
    """Every class name the model emits is declared in the installed Paddle's reshard headers."""
    root = paddle_dir()
    assert root is not None
    headers = root / "include/paddle/phi/core/distributed/auto_parallel/reshard"
    declared = set()
    for header in headers.glob("*.h"):
        declared |= set(re.findall(r"class\s+\w+\s+(\w+)\s+final", header.read_text()))
    named = {s.function for row in WORKED for s in plan(row[2], row[3], row[4], row[1])}
    assert named and named <= declared, named - declared
    assert ND_FUNCTION in declared
