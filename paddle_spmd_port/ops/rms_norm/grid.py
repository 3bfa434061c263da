"""rms_norm's parity grid: the kit's statistics-norm grid (``stat_norm_rule_grid``) over the
last axis (invvar ``x.shape[:-1]``, scale the last axis' size).

::

    x rank        1-4 (the grad raises for rank 1: Paddle's own error, compared)
    corner sets   the kit's invalid set, x rank 0 and 1 (and a None scale: Paddle's check);
                  mixed meshes with x [8,6,4]
    co-shard set  x rank 2-3 (rms_norm_grad raises below 2)
"""

from __future__ import annotations

from collections.abc import Mapping

from ...types import DistTensorSpec
from .. import FAMILIES
from ..kit.grid import (
    BadAttr,
    CoshardPlan,
    GridFn,
    GridPlan,
    RandomPlan,
    RankOf,
    StatNormPlan,
    bad_epsilon,
    leading_rank,
    no_attr_variants,
    stat_norm_problem,
    stat_norm_rule_grid,
    stat_norm_shapes,
)

PLAN = StatNormPlan(ranks=(1, 2, 3, 4), invalid_x_ranks=(0, 1), channel_stats=False)
#: The x ranks the op takes (validity).
X_RANKS = range(1, 19)

GRIDS: dict[str, GridFn] = {key: stat_norm_rule_grid(key, PLAN) for key in FAMILIES["rms_norm"].keys}


def input_shapes(rule: str, x_shape: tuple[int, ...], attrs: Mapping[str, object]) -> dict[str, tuple[int, ...]]:
    return stat_norm_shapes(rule, x_shape, PLAN.channel_stats)


COSHARD = CoshardPlan(ranks=range(2, 4), attr_variants=no_attr_variants, invalid_rank=3)


def input_problem(rule: str, named: Mapping[str, DistTensorSpec | None], attrs: Mapping[str, object],
                  rank: int) -> str | None:
    return stat_norm_problem("rms_norm", X_RANKS, rank, named, PLAN.channel_stats)


_FORWARD_RANKS: dict[str, RankOf] = {"out": "x", "invvar": leading_rank}
#: The rank of each returned output (tools/fuzz.py's answer form): invvar ``x.shape[:-1]``.
ANSWER_RANKS: dict[str, dict[str, RankOf]] = {"rms_norm": _FORWARD_RANKS, "rms_norm_reverse": _FORWARD_RANKS,
                                              "rms_norm_grad": {"x_grad": "x", "scale_grad": "scale"}}


#: Out of range: a negative epsilon, the one attribute the op takes.
RANDOM = RandomPlan(ranks=(1, 6), bad_x_ranks=(0, 7),
                    stats_like_x=frozenset({"mean", "variance", "saved_mean", "saved_variance", "invvar"}),
                    bad_attrs=(BadAttr("epsilon", bad_epsilon),))

#: The family's grid part, read by parity (grid, validity, random mode), ``infer`` and tools/fuzz.py.
GRID = GridPlan(grids=GRIDS, input_shapes=input_shapes, coshard=COSHARD, input_problem=input_problem, random=RANDOM,
                answer_ranks=ANSWER_RANKS)
