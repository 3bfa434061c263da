"""p_norm's real-run cases (a draft: the launch kit, ops/kit/launch.py, is being built; these are
plain data until then, for it to turn into cases).

Each case is a dygraph call on a 2-rank mesh with x of shape [4, 8] sharded as given, run with
``python -m paddle.distributed.launch --nproc_per_node 2`` (gloo on CPU). ``sound`` is what the
rule's answer predicts (docs/ops/p_norm.md, "Soundness"): out Partial(SUM) of the shards' norms is
exact only for porder 0 and 1. All of them were run by hand on 2026-12-01 (docs/ops/p_norm.md,
"A real run"): on both ranks each came out as predicted.
"""

from __future__ import annotations

from typing import NamedTuple


class RealRun(NamedTuple):
    api: str  # the public call, with x the sharded tensor
    placements: tuple[str, ...]  # x's placements on the mesh [0, 1]
    porder: float
    sound: bool  # what the rule's answer predicts for the result, compared with the single-rank one


CASES: tuple[RealRun, ...] = (
    RealRun("F.normalize(x, p=2, axis=-1)", ("Shard(1)",), 2.0, False),
    RealRun("F.normalize(x, p=1, axis=-1)", ("Shard(1)",), 1.0, True),
    RealRun("paddle.linalg.norm(x, p=2, axis=-1)", ("Shard(1)",), 2.0, False),
    RealRun("paddle.linalg.norm(x, p=1, axis=-1)", ("Shard(1)",), 1.0, True),
    RealRun("paddle.linalg.norm(x, p=float('inf'), axis=-1)", ("Shard(1)",), float("inf"), False),
    RealRun("paddle.linalg.norm(x, p=0, axis=-1)", ("Shard(1)",), 0.0, True),
    RealRun("paddle.linalg.norm(x, p=2, axis=-1)", ("Shard(0)",), 2.0, True),  # a kept axis split: exact
    RealRun("F.normalize(x, p=2, axis=0)", ("Shard(1)",), 2.0, True),
)
