"""fast_ln's parity grid: the kit's statistics-norm grid (``stat_norm_rule_grid``) over the
last axis (mean/invvar ``x.shape[:-1]``, scale/bias the last axis' size).

::

    x rank        1-4
    corner sets   the kit's invalid set, x rank 0 (and the grad: scale None while x is split);
                  mixed meshes with x [8,6,4]
    co-shard set  x rank 1-3
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
from . import proposed

PLAN = StatNormPlan(ranks=(1, 2, 3, 4), invalid_x_ranks=(0,), channel_stats=False)
#: The x ranks the op takes (validity).
X_RANKS = range(1, 19)

GRIDS: dict[str, GridFn] = {key: stat_norm_rule_grid(key, PLAN) for key in FAMILIES["fast_ln"].keys}


def input_shapes(rule: str, x_shape: tuple[int, ...], attrs: Mapping[str, object]) -> dict[str, tuple[int, ...]]:
    return stat_norm_shapes(rule, x_shape, PLAN.channel_stats)


COSHARD = CoshardPlan(ranks=range(1, 4), attr_variants=no_attr_variants, invalid_rank=3)


def input_problem(rule: str, named: Mapping[str, DistTensorSpec | None], attrs: Mapping[str, object],
                  rank: int) -> str | None:
    return stat_norm_problem("fast_ln", X_RANKS, rank, named, PLAN.channel_stats)


#: The rank of each returned output (tools/fuzz.py's answer form): mean / invvar ``x.shape[:-1]``;
#: the grad has no bias input and answers bias_grad like scale_grad (ops/fast_ln/proposed.py
#: declares its own).
ANSWER_RANKS: dict[str, dict[str, RankOf]] = {
    "fast_ln": {"out": "x", "mean": leading_rank, "invvar": leading_rank},
    "fast_ln_grad": {"x_grad": "x", "scale_grad": "scale", "bias_grad": "scale"},
}


#: Out of range: a negative epsilon, the one attribute the op takes.
RANDOM = RandomPlan(ranks=(1, 6), bad_x_ranks=(0, 7),
                    stats_like_x=frozenset({"mean", "variance", "saved_mean", "saved_variance", "invvar"}),
                    bad_attrs=(BadAttr("epsilon", bad_epsilon),))

#: The family's grid part, read by parity (grid, validity, random mode), ``infer`` and tools/fuzz.py.
GRID = GridPlan(grids=GRIDS, input_shapes=input_shapes, coshard=COSHARD, input_problem=input_problem, random=RANDOM,
                answer_ranks=ANSWER_RANKS,
                profile_answer_ranks={"proposed": proposed.ANSWER_RANKS})
