"""notation.local_shape, the one per-rank shape (Paddle's cut: ceil(size / parts) per rank, the
last shard of an uneven axis smaller), and its two users: the oracle and the launch prediction."""

from __future__ import annotations

import pytest

from paddle_spmd_port.launch.cases import LaunchCase
from paddle_spmd_port.launch.predict import predict
from paddle_spmd_port.launch.report import verdict_for_case
from paddle_spmd_port.notation import ShardError, local_shape


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
