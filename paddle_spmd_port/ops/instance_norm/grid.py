"""instance_norm's parity grid: the kit's statistics-norm grid (``stat_norm_rule_grid``) per sample
and channel (statistics ``[N, C]``, scale/bias ``[C]``).

::

    x rank        4-5 (the rule clears axes 2 and 3 by index: a 2-D / 3-D x corrupts Paddle's
                  heap, SIGABRT, so those ranks are in the invalid set with 1 and 6)
    corner sets   the kit's invalid set (and the grad: scale None while N or C is split,
                  SIGSEGV); mixed meshes with x [8,6,4,4]
    co-shard set  x rank 4
"""

from __future__ import annotations

from collections.abc import Mapping

from ...types import DistTensorSpec
from .. import FAMILIES
from ..kit.grid import (
    GRAD_RANKS,
    BadAttr,
    CoshardPlan,
    GridFn,
    GridPlan,
    RandomPlan,
    RankOf,
    StatNormPlan,
    bad_epsilon,
    no_attr_variants,
    stat_norm_problem,
    stat_norm_rule_grid,
    stat_norm_shapes,
)

PLAN = StatNormPlan(ranks=(4, 5), invalid_x_ranks=(1, 2, 3, 6), channel_stats=True)
#: The x ranks the op takes (validity).
X_RANKS = range(4, 6)

GRIDS: dict[str, GridFn] = {key: stat_norm_rule_grid(key, PLAN) for key in FAMILIES["instance_norm"].keys}


def input_shapes(rule: str, x_shape: tuple[int, ...], attrs: Mapping[str, object]) -> dict[str, tuple[int, ...]]:
    return stat_norm_shapes(rule, x_shape, PLAN.channel_stats)


COSHARD = CoshardPlan(ranks=range(4, 5), attr_variants=no_attr_variants, invalid_rank=4)


def input_problem(rule: str, named: Mapping[str, DistTensorSpec | None], attrs: Mapping[str, object],
                  rank: int) -> str | None:
    return stat_norm_problem("instance_norm", X_RANKS, rank, named, PLAN.channel_stats)


#: The rank of each returned output (tools/fuzz.py's answer form): y like x, the saved statistics
#: [N, C]; the grad answers bias_grad like scale_grad (bias is not among its returned inputs).
ANSWER_RANKS: dict[str, dict[str, RankOf]] = {
    "instance_norm": {"y": "x", "saved_mean": 2, "saved_variance": 2},
    "instance_norm_grad": {**GRAD_RANKS, "bias_grad": "scale"},
}


#: Out of range: a negative epsilon, the one attribute the op takes.
RANDOM = RandomPlan(ranks=(4, 5), bad_x_ranks=(1, 2, 3, 6),
                    stats_like_x=frozenset({"mean", "variance", "saved_mean", "saved_variance", "invvar"}),
                    bad_attrs=(BadAttr("epsilon", bad_epsilon),))

#: The family's grid part, read by parity (grid, validity, random mode), ``infer`` and tools/fuzz.py.
GRID = GridPlan(grids=GRIDS, input_shapes=input_shapes, coshard=COSHARD, input_problem=input_problem, random=RANDOM,
                answer_ranks=ANSWER_RANKS)
