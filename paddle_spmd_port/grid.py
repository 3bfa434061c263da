"""The case grid of every rule, assembled from the families, and deterministic sampling from it.

Each family's grid is its grid plan (``GRID`` of ``ops/<family>/grid.py``, read by
:func:`paddle_spmd_port.ops.family_part`: its grids, input shapes and co-shard plan), built from the
kit (:mod:`paddle_spmd_port.ops.kit.grid`: meshes, mappings, the mixed-mesh and co-shard corner
sets, case numbering). Axes every family's grid shares::

    meshes            (2,) (4,) (2,2) (2,3) (2,2,2)
    x                 every valid dims_mapping x every subset of the remaining mesh dims as
                      Partial(SUM), for every rank the op takes
    attributes        the op's (its grid module says which values)
    other tensors     every valid (dims_mapping, partial) of each one, None where optional;
                      varied one tensor at a time around the all-replicated default, against a
                      few x placements (or cycled along x's placements where the rules read them)
    corner sets       invalid inputs, inputs on other meshes (see below); ``sample`` keeps them all
    co-shard set      after each rule's own grid: co-sharded inputs (:func:`coshard_cases`)

What each family's grid thins, and why, is in its module docstring.

Corner sets (ids ``<rule>-<label>-<n>``; ``is_corner``)::

    invalid               per rule, by hand: ranks Paddle rejects, wrong ranks of the other
                          tensors, mappings Paddle does not validate (mesh dim twice, out of range,
                          shorter than the rank), attributes out of range, x or another read tensor
                          without a mesh
    mixed-mesh            one input other than x at a time on a mesh of as many dims as x's (the
                          same shape with other process ids, or another shape), replicated or split
                          on axis 0: Paddle answers every one (each attr keeps its tensor's mesh or
                          takes x's) or raises a sharding conflict, and the port must match
    invalid-mixed-ndim    the same on a mesh of fewer or more dims: Paddle answers some, and crashes
                          on or answers mesh dims an attr's mesh lacks for others (the port rejects
                          those, naming the input)

Sizes are printed by ``python -m paddle_spmd_port parity --list``.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Mapping as MappingOf

from .case import Case
from .ops import FAMILIES, RULES, family_part, rule_spec
from .ops.kit.grid import (
    CORNER_LABELS,
    MESH_SHAPES,
    X_SHAPES,
    GridCase,
    GridFn,
    GridPlan,
    coshard_mappings,
    coshard_mappings_with_partial,
    default_plan,
    mesh_of,
    placements,
    valid_mappings,
)
from .ops.kit.grid import coshard_cases as _kit_coshard_cases

#: family -> its grid plan (ops/<family>/grid.py's ``GRID``; a family without one: the kit's default).
GRID_PLANS: dict[str, GridPlan] = {family: family_part(family, GridPlan) or default_plan(spec)
                                   for family, spec in FAMILIES.items()}


def grid_plan(rule: str) -> GridPlan:
    """The grid plan of ``rule``'s family (ValueError for an unknown key)."""
    return GRID_PLANS[rule_spec(rule).op]


def _as_cases(draft_grid: GridFn) -> Callable[[], Iterator[Case]]:
    def grid() -> Iterator[Case]:
        return (Case(*draft) for draft in draft_grid())
    grid.__name__ = getattr(draft_grid, "__name__", "grid")
    grid.__doc__ = draft_grid.__doc__
    return grid


def _assemble() -> dict[str, Callable[[], Iterator[Case]]]:
    """Every rule's grid, in the order of :data:`paddle_spmd_port.ops.RULES` (each plan covers
    exactly its family's keys: :meth:`GridPlan.problems`)."""
    found: dict[str, GridFn] = {}
    for plan in GRID_PLANS.values():
        found.update(plan.grids)
    return {rule: _as_cases(found[rule]) for rule in RULES}


#: rule key -> a function yielding its own grid (without the co-shard set), in a fixed order.
GRIDS = _assemble()


def is_corner(case: Case) -> bool:
    """True for a case of a corner set: its id reads ``<rule>-invalid-...`` or ``<rule>-mixed-mesh-<n>``."""
    return any(f"-{label}-" in case.case_id for label in CORNER_LABELS)


def grid_for(rule: str) -> Iterator[Case]:
    """Every case of ``rule``'s grid, in a fixed order: its own grid, then its co-shard set."""
    try:
        own = GRIDS[rule]()
    except KeyError:
        raise ValueError(f"no grid for rule {rule!r}; choose one of {', '.join(GRIDS)}") from None
    return itertools.chain(own, coshard_cases(rule))


def input_shapes(rule: str, x_shape: tuple[int, ...], attrs: MappingOf[str, object]) -> dict[str, tuple[int, ...]]:
    """Each input's shape for an x of ``x_shape`` (the shapes a real call passes), by the rule's
    family (its grid plan's ``input_shapes``)."""
    shapes: dict[str, tuple[int, ...]] = grid_plan(rule).input_shapes(rule, x_shape, attrs)
    return shapes


def derived_shapes(rule: str, x_shape: tuple[int, ...], attrs: MappingOf[str, object]) -> dict[str, tuple[int, ...]]:
    """:func:`input_shapes` for ``infer``'s flags: the family's ``derived_shapes`` where it has one
    (a user's attribute may lie outside what the grid draws), else its ``input_shapes``."""
    shapes: dict[str, tuple[int, ...]] = grid_plan(rule).shapes_for_flags()(rule, x_shape, attrs)
    return shapes


def coshard_cases(rule: str) -> Iterator[Case]:
    """The co-shard set of ``rule`` (ids ``<rule>-coshard-<n>``, then the corner set
    ``<rule>-coshard-invalid-<n>``): :func:`paddle_spmd_port.ops.kit.grid.coshard_cases` with the
    family's ranks and attribute variants (its grid plan's ``coshard``)."""
    plan = grid_plan(rule)
    return (Case(*draft) for draft in _kit_coshard_cases(rule, plan.coshard, plan.input_shapes))


def sample(cases: Sequence[Case], n: int, seed: int = 0, corners: bool = True) -> list[Case]:
    """A deterministic sample of ``n`` cases (all of them when ``n >= len(cases)``), grid order kept,
    plus every corner case (:func:`is_corner`: the invalid and mixed-mesh sets) the draw left out,
    unless ``corners=False``. The draw itself does not depend on ``corners``."""
    if n >= len(cases):
        return list(cases)
    picked = set(random.Random(seed).sample(range(len(cases)), n))
    if corners:
        picked.update(i for i, case in enumerate(cases) if is_corner(case))
    return [cases[i] for i in sorted(picked)]


__all__ = ["CORNER_LABELS", "GRIDS", "GRID_PLANS", "GridCase", "MESH_SHAPES", "X_SHAPES", "coshard_cases",
           "coshard_mappings", "coshard_mappings_with_partial", "derived_shapes", "grid_for", "grid_plan",
           "input_shapes", "is_corner", "mesh_of", "placements", "sample", "valid_mappings"]
