"""notation.local_shape, the one per-rank shape (Paddle's cut: ceil(size / parts) per rank, the
last shard of an uneven axis smaller; a co-sharded axis cut along its mesh dims in shard order, as
measured on real ranks), and its two users: the oracle and the launch prediction."""

from __future__ import annotations

import itertools

import pytest

from paddle_spmd_port.launch.cases import LaunchCase
from paddle_spmd_port.launch.predict import predict
from paddle_spmd_port.launch.report import verdict_for_case
from paddle_spmd_port.notation import ShardError, axis_range, local_shape


def test_last_uneven_shard_is_smaller():
    assert [local_shape((7, 6), (0, -1), (i,), (4,)) for i in range(4)] == [(2, 6), (2, 6), (2, 6), (1, 6)]
    assert [local_shape((7, 5), (-1, 0), (i,), (3,)) for i in range(3)] == [(7, 2), (7, 2), (7, 1)]
    assert local_shape((6, 10), (1, 0), (1, 2), (2, 3)) == (2, 5)  # axis 0: 6 over 3 -> 2,2,2; axis 1: 10 over 2
    assert local_shape((6, 9), (1, 0), (1, 2), (2, 3)) == (2, 4)   # axis 1: 9 over 2 -> 5,4
    assert local_shape((8, 6), (-1, -1), (1,), (2,)) == (8, 6)


def test_a_shard_past_the_end_is_an_error():
    with pytest.raises(ShardError, match="start at 6 > 5"):
        local_shape((5,), (0,), (3,), (4,))


def test_oracle_uses_the_core_function():
    from paddle_spmd_port.oracle import simulator

    assert simulator.local_shape is local_shape


def _record(case: LaunchCase, rank: int, shapes: dict[str, tuple[int, ...]]) -> dict:
    p = predict(case)
    tensors = {t.name: {"present": True, "ref_present": True, "placements": list(t.placements),
                        "local_shape": list(shapes.get(t.name, t.local_shape_on(rank))), "max_abs_err": 0.0,
                        "ref_max_abs": 1.0, "shape_ok": True}
               for t in p.tensors}
    return {"kind": "case", "case_id": case.case_id, "rank": rank, "stages": {"reference": "ok", "forward": "ok"},
            "error": None, "skipped": None, "tensors": tensors, "seconds": 0.01}


def test_launch_prediction_knows_the_last_uneven_shard():
    case = LaunchCase("u", "layer_norm", (7, 6, 8), (4,), ("S(0)",), normalized_shape=(8,))
    out = predict(case).expectation("out")
    assert out.local_shape == (2, 6, 8)
    assert out.rank_local_shapes == ((2, 6, 8), (2, 6, 8), (2, 6, 8), (1, 6, 8))
    # a run whose last rank holds the smaller shard agrees; one that claims the even shape there does not
    real = {r: _record(case, r, {}) for r in range(4)}
    assert verdict_for_case(case, real, [0, 1, 2, 3], 1e-5).verdict == "agree"
    wrong = {**real, 3: _record(case, 3, {"out": (2, 6, 8)})}
    assert verdict_for_case(case, wrong, [0, 1, 2, 3], 1e-5).verdict == "placement differs"


#: Measured on real ranks (Paddle 3.3.1, CPU/gloo): ``dist.shard_tensor(paddle.arange(size), mesh,
#: [Shard(0, shard_order=k) on each member])``; each rank's slice [start, stop) in rank order
#: (row-major mesh coords). ``None``: that rank raised (InvalidArgument) Slice Args 'start' should be
#: less or equal to 'end'. 696 slices were measured (2x2, 2x3, 2x2x2; sizes 3, 5, 7, 10, 12, 13;
#: every ordered list of 2 and 3 members); these rows are a sample, each equal to the nested cut.
MEASURED_COSHARD_SLICES = [
    ((2, 2), 10, (0, 1), [(0, 3), (3, 5), (5, 8), (8, 10)]),
    ((2, 2), 10, (1, 0), [(0, 3), (5, 8), (3, 5), (8, 10)]),
    ((2, 2), 3, (0, 1), [(0, 1), (1, 2), (2, 3), (3, 3)]),
    ((2, 2), 5, (1, 0), [(0, 2), (3, 4), (2, 3), (4, 5)]),
    ((2, 3), 10, (0, 1), [(0, 2), (2, 4), (4, 5), (5, 7), (7, 9), (9, 10)]),
    ((2, 3), 10, (1, 0), [(0, 2), (4, 6), (8, 9), (2, 4), (6, 8), (9, 10)]),
    ((2, 3), 7, (0, 1), [(0, 2), (2, 4), (4, 4), (4, 5), (5, 6), (6, 7)]),
    ((2, 3), 3, (0, 1), [(0, 1), (1, 2), (2, 2), (2, 3), (3, 3), None]),
    ((2, 3), 13, (1, 0), [(0, 3), (5, 8), (10, 12), (3, 5), (8, 10), (12, 13)]),
    ((2, 2, 2), 10, (2, 0), [(0, 3), (5, 8), (0, 3), (5, 8), (3, 5), (8, 10), (3, 5), (8, 10)]),
    ((2, 2, 2), 10, (1, 2, 0), [(0, 2), (3, 4), (5, 7), (8, 9), (2, 3), (4, 5), (7, 8), (9, 10)]),
    ((2, 2, 2), 7, (2, 1, 0), [(0, 1), (4, 5), (2, 3), (6, 7), (1, 2), (5, 6), (3, 4), (7, 7)]),
]


@pytest.mark.parametrize(("mesh", "size", "members", "slices"), MEASURED_COSHARD_SLICES,
                         ids=[f"{'x'.join(map(str, m))}-{n}-{''.join(map(str, o))}"
                              for m, n, o, _ in MEASURED_COSHARD_SLICES])
def test_a_co_sharded_axis_is_cut_as_paddle_cuts_it(mesh, size, members, slices):
    coords = list(itertools.product(*(range(n) for n in mesh)))
    for rank, want in enumerate(slices):
        if want is None:
            with pytest.raises(ShardError):
                local_shape((size, 4), (members, -1), coords[rank], mesh)
        else:
            assert axis_range(size, members, coords[rank], mesh) == want
            assert local_shape((size, 4), (members, -1), coords[rank], mesh) == (want[1] - want[0], 4)


def test_the_nested_cut_is_not_the_flat_cut():
    """The broken alternative (one ceil cut into prod(sizes) pieces) gives 3,3,3,1 for 10 over a 2x2
    co-shard; Paddle and local_shape give 3,2,3,2."""
    nested = [local_shape((10,), ((0, 1),), c, (2, 2))[0] for c in itertools.product(range(2), range(2))]
    flat = [local_shape((10,), (0,), (i,), (4,))[0] for i in range(4)]
    assert nested == [3, 2, 3, 2] and flat == [3, 3, 3, 1]


def test_a_co_shard_and_a_plain_shard_on_other_axes():
    # axis 0 co-sharded along mesh dims (2, 0) of 2x3x2, axis 1 along mesh dim 1 (size 3)
    assert local_shape((12, 9, 5), ((2, 0), 1, -1), (1, 2, 0), (2, 3, 2)) == (3, 3, 5)
    assert local_shape((12, 9, 5), ((2, 0), 1, -1), (0, 0, 1), (2, 3, 2)) == (3, 3, 5)
