"""sync_batch_norm's parity grid: batch_norm's (ops/batch_norm/grid.py) with two layouts, NCHW
and NHWC (2 of 7: the replicated fallback reads no attribute; the two cover C on axis 1 and on the
last axis), and its corner sets on the 2x2x2 mesh, outside the oracle's meshes, so the oracle
judges only valid sync inputs.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...types import DistTensorSpec
from .. import RULES
from ..batch_norm.grid import (
    COSHARD,
    FORWARD_RANKS,
    FREE_SIZE,
    RANDOM,
    derived_shapes,
    forward_grid,
    grad_grid,
    input_problem,
    input_shapes,
    mixed_mesh_set,
)
from ..kit.grid import GRAD_RANKS, X_SHAPES, CaseNumbering, GridCase, GridFn, GridPlan, RankOf, mesh_of, rep
from . import pr72918


def _invalid(rule: str) -> Iterator[GridCase]:
    """What the replicated fallback answers without reading it and the port rejects: a 2-D
    per-channel tensor, mesh dims used twice or out of range, a mapping shorter than the rank.
    (x without a mesh is left out: it kills the registry's worker.)"""
    make = CaseNumbering(rule, "invalid")
    mesh = mesh_of((2, 2, 2))
    names = RULES[rule].inputs
    attrs = (("data_format", "NCHW"),)
    x4 = rep(X_SHAPES[4], mesh)
    base: dict[str, DistTensorSpec | None] = {n: rep((6,), mesh) for n in names}
    base.update(x=x4, out_grad=x4, reserve_space=None)
    per_channel = [n for n in names if n not in ("x", "out_grad", "reserve_space")]
    variants = [{per_channel[0]: rep((6, 1), mesh)}, {per_channel[-1]: rep((6, 2), mesh)},
                {"x": DistTensorSpec(X_SHAPES[4], (0, 0, -1, -1), mesh)},
                {"x": DistTensorSpec(X_SHAPES[4], (-1, 3, -1, -1), mesh)},
                {"x": DistTensorSpec(X_SHAPES[4], (-1, 1, -1), mesh)},
                {per_channel[1]: DistTensorSpec((6,), (3,), mesh)}]
    for variant in variants:
        tensors = {**base, **variant}
        yield make(mesh, [tensors[n] for n in names], attrs)


def _grid_sync_batch_norm() -> Iterator[GridCase]:
    yield from forward_grid("sync_batch_norm", ("NCHW", "NHWC"))
    yield from mixed_mesh_set("sync_batch_norm", True, ((2, 2, 2),))
    yield from _invalid("sync_batch_norm")


def _grid_sync_batch_norm_grad() -> Iterator[GridCase]:
    yield from grad_grid("sync_batch_norm_grad", RULES["sync_batch_norm_grad"].inputs, ("NCHW", "NHWC"))
    yield from mixed_mesh_set("sync_batch_norm_grad", True, ((2, 2, 2),))
    yield from _invalid("sync_batch_norm_grad")


GRIDS: dict[str, GridFn] = {
    "sync_batch_norm": _grid_sync_batch_norm,
    "sync_batch_norm_grad": _grid_sync_batch_norm_grad,
}

#: batch_norm's answer form (tools/fuzz.py).
ANSWER_RANKS: dict[str, dict[str, RankOf]] = {"sync_batch_norm": FORWARD_RANKS, "sync_batch_norm_grad": GRAD_RANKS}

#: The family's grid part, read by parity (grid, validity, random mode), ``infer`` and tools/fuzz.py.
GRID = GridPlan(grids=GRIDS, input_shapes=input_shapes, coshard=COSHARD, input_problem=input_problem, random=RANDOM,
                answer_ranks=ANSWER_RANKS,
                derived_shapes=derived_shapes, free_size=FREE_SIZE,
                known_malformed={"pr72918": pr72918.KNOWN_MALFORMED})

__all__ = ["GRID", "ANSWER_RANKS", "COSHARD", "FREE_SIZE", "GRIDS", "RANDOM", "derived_shapes", "input_problem",
           "input_shapes"]
