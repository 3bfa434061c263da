"""The oracle's grid: the shared exhaustive grid (:func:`paddle_spmd_port.grid.grid_for`),
re-sized for numerics and crossed with each rule's statistics modes.

* **Placements, meshes, variants** are the shared grid's (every x placement, the other tensors
  one at a time, the invalid set), restricted to ``meshes`` (default 1-D and 2-D:
  (2,), (4,), (2,2), (2,3)).
* **Sizes** are changed so that every axis can be split over 2, 3 or 4 ranks into non-empty
  shards, most of them uneven (the parity grid's 6 over 4 would leave a rank empty, 2 over 4
  cannot be laid out at all)::

      rank   parity grid x       oracle x           per axis over 2 / 3 / 4 ranks
      2      (8, 6)              (8, 7)             8: 4,4 / 3,3,2 / 2,2,2,2   7: 4,3 / 3,3,1 / 2,2,2,1
      3      (8, 6, 4)           (8, 7, 10)         10: 5,5 / 4,4,2 / 3,3,3,1
      4      (8, 6, 4, 4)        (8, 7, 10, 12)     12: 6,6 / 4,4,4 / 3,3,3,3
      5      (8, 6, 4, 4, 2)     (8, 7, 7, 8, 10)

  A family may give x other sizes (its kernel facts' ``x_shapes``). out_grad and out follow x;
  every other tensor is re-sized from its role, as the family's ``sizes`` says (per-channel
  tensors to x's channel size, a row's scale/bias to the product of the normalised sizes,
  statistics to x's leading axes). Tensors of a shape no role explains (the invalid set) keep
  their shape.
* **Co-shard attributes**: where the grid's co-shard set carries an attribute value the op
  rejects, it is judged with the family's replacement (``coshard_attrs``).
* **Modes**: every case of a rule with statistics modes (its model's ``modes``) is crossed with
  them; the case id gets ``/<mode>``.

Each family's facts are in its ``ops/<family>/kernel.py``; docs/ops/ says what they are per op.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ..case import Case
from ..grid import grid_for
from ..types import DistTensorSpec
from .kernels import MODELS

ORACLE_MESHES: tuple[tuple[int, ...], ...] = ((2,), (4,), (2, 2), (2, 3))
ORACLE_X_SHAPES: dict[int, tuple[int, ...]] = {1: (8,), 2: (8, 7), 3: (8, 7, 10), 4: (8, 7, 10, 12),
                                               5: (8, 7, 7, 8, 10)}


def _resized(spec: DistTensorSpec | None, shape: tuple[int, ...]) -> DistTensorSpec | None:
    if spec is None:
        return None
    return DistTensorSpec(shape, spec.dims_mapping, spec.mesh, spec.partial_dims)


def resize(case: Case) -> Case:
    """``case`` with the oracle's sizes (same placements, attributes and id)."""
    named = case.named_inputs()
    x = named.get("x")
    if x is None or x.ndim not in ORACLE_X_SHAPES:
        return case
    facts = MODELS[case.rule].facts
    old = x.shape
    new = facts.x_shapes.get(x.ndim, old) if facts.x_shapes is not None else ORACLE_X_SHAPES[x.ndim]
    attrs = dict(zip((n for n, _ in case.spec.attrs), case.attr_values(), strict=True))
    roles = facts.sizes(old, new, attrs)
    if roles is None:
        return case
    role: dict[tuple[int, ...], tuple[int, ...]] = {old: new}
    for before, after in roles:
        role.setdefault(before, after)  # x's own shape first: a tensor shaped like x follows x
    inputs = tuple(_resized(s, role.get(s.shape, s.shape)) if s is not None else None for s in case.inputs)
    return Case(case.rule, case.mesh, inputs, case.attrs, case.case_id)


def oracle_grid(rule: str, meshes: Sequence[tuple[int, ...]] = ORACLE_MESHES) -> Iterator[Case]:
    """Every oracle case of ``rule`` in a fixed order (ids: the shared grid's, plus ``/<mode>``)."""
    wanted = {tuple(m) for m in meshes}
    op_model = MODELS[rule]
    for case in grid_for(rule):
        if tuple(case.mesh.shape) not in wanted:
            continue
        case = resize(case)
        values = dict(zip((n for n, _ in case.spec.attrs), case.attr_values(), strict=True))
        if "-coshard-" in case.case_id:
            for name, rejected, judged_with in op_model.facts.coshard_attrs:
                if values.get(name) == rejected:
                    attrs = tuple(kv for kv in case.attrs if kv[0] != name) + ((name, judged_with),)
                    case = Case(case.rule, case.mesh, case.inputs, attrs, case.case_id)
        if not op_model.modes:
            yield case
            continue
        for mode, extra in op_model.modes:
            attrs = tuple(kv for kv in case.attrs if kv[0] not in dict(extra)) + extra
            yield Case(case.rule, case.mesh, case.inputs, attrs, f"{case.case_id}/{mode}")
