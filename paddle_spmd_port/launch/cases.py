"""Cases for real multi-process runs: one functional-API call on one sharded input.

A :class:`LaunchCase` (:mod:`paddle_spmd_port.ops.kit.launch`) says which op to call, on which
global shape, how x is placed on which mesh, and the op's options. Weight, bias and any running
statistics are always placed Replicate; the upstream gradient is given exactly the placement the
forward output came out with.

Each op's cases live in its family's ``ops/<family>/launch.py`` (its ``OP``: the configurations,
the variants, why some are left out); this module strings them together in the families'
``order`` and numbers them. :func:`default_cases` is the built-in grid (every R / S(axis)
combination of x, see :func:`~paddle_spmd_port.ops.kit.launch.placement_grid`: n+1 placements of
a rank-n x on a 1-D mesh, (n+1)^2 - n on a 2-D mesh); :func:`coshard_cases` (``launch --coshard``)
the co-shard set: x split along two or more mesh dims (``S(d)#k`` placements), for every member
list of :func:`~paddle_spmd_port.ops.kit.launch.coshard_orders`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..case import write_jsonl
from ..ops.kit.launch import (
    LaunchCase,
    coshard_orders,
    coshard_placement_strings,
    launch_ops,
    not_launched,
    parse_placement,
    placement_grid,
    placements_to_dims_mapping,
)

#: The ops a launch case may call, in the order of the built-in grid.
OPS: tuple[str, ...] = tuple(launch_ops())

#: The rule keys (``runctl.grammar.rule_keys``) each op's eager call runs: its forward rule, and its grad
#: rule in the backward.
OP_RULES: dict[str, tuple[str, ...]] = {name: op.rules for name, op in launch_ops().items()}

#: Rule keys no launch case reaches, and why (``launch --rules`` refuses them by name).
NOT_LAUNCHED: dict[str, str] = not_launched()


def select_by_rules(cases: Iterable[LaunchCase], rules: Iterable[str]) -> list[LaunchCase]:
    """The cases whose op runs one of ``rules`` (rule keys, :data:`OP_RULES`)."""
    wanted = set(rules)
    return [c for c in cases if wanted & set(OP_RULES[c.op])]


def write_cases(cases: Iterable[LaunchCase], path: str | Path) -> int:
    return write_jsonl(cases, path)


def read_cases(path: str | Path) -> list[LaunchCase]:
    cases = []
    with open(path) as fh:
        for lineno, line in enumerate(fh, 1):
            if line.strip():
                try:
                    cases.append(LaunchCase.from_json(json.loads(line)))
                except (ValueError, TypeError, KeyError) as exc:
                    raise ValueError(f"{path}:{lineno}: bad case: {exc}") from exc
    ids = [c.case_id for c in cases]
    if len(ids) != len(set(ids)):
        raise ValueError(f"{path}: case ids must be unique")
    return cases


def default_cases(mesh_shape: Sequence[int], backend: str = "cpu") -> list[LaunchCase]:
    """The built-in grid for one launch over ``prod(mesh_shape)`` ranks: every op's
    :meth:`~paddle_spmd_port.ops.kit.launch.LaunchOp.default_cases`, ids ``c0000``... in op order."""
    mesh_shape = tuple(mesh_shape)
    placement_grid(1, len(mesh_shape))  # a mesh the grid does not cover fails before any op builds its cases
    cases: list[LaunchCase] = []

    def add(**kw: Any) -> None:
        cases.append(LaunchCase(case_id=f"c{len(cases):04d}", **kw))

    for op in launch_ops().values():
        op.default_cases(mesh_shape, backend, add)
    return cases


def coshard_cases(mesh_shape: Sequence[int]) -> list[LaunchCase]:
    """The co-shard set (``launch --coshard``): for every member list of
    :func:`~paddle_spmd_port.ops.kit.launch.coshard_orders`, every op's
    :meth:`~paddle_spmd_port.ops.kit.launch.LaunchOp.coshard_cases`, forward and backward. Case ids
    ``cs0000``...; each case's notes say what its co-sharded axis is."""
    mesh_shape = tuple(mesh_shape)
    cases: list[LaunchCase] = []

    def add(**kw: Any) -> None:
        cases.append(LaunchCase(case_id=f"cs{len(cases):04d}", **kw))

    for members in coshard_orders(len(mesh_shape)):
        for op in launch_ops().values():
            op.coshard_cases(members, mesh_shape, add)
    return cases


__all__ = ["LaunchCase", "NOT_LAUNCHED", "OPS", "OP_RULES", "coshard_cases", "coshard_orders",
           "coshard_placement_strings", "default_cases", "parse_placement", "placement_grid",
           "placements_to_dims_mapping", "read_cases", "select_by_rules", "write_cases"]
