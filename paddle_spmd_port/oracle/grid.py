"""The oracle's grid: the shared exhaustive grid (:func:`paddle_spmd_port.parity.grid.grid_for`),
re-sized for numerics and crossed with batch_norm's statistics modes.

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

  Every other tensor is re-sized from its role: batch_norm's per-channel tensors to x's channel
  size, out_grad and out to x's shape, layer_norm's scale/bias to the product of the normalised
  sizes and mean/variance to ``x.shape[:b]``. Tensors of a shape no role explains (the invalid
  set) keep their shape.
* **batch_norm modes**: every batch_norm / sync_batch_norm case (and their grads) is crossed with
  ``train``, ``eval`` (is_test), ``global`` (use_global_stats) and ``eval-trainable`` (is_test +
  trainable_statistics). ``batch_norm_static`` has no attributes (always train).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

from ..case import Case
from ..parity.grid import grid_for
from ..rules.signatures import channel_axis
from ..types import DistTensorSpec

ORACLE_MESHES: tuple[tuple[int, ...], ...] = ((2,), (4,), (2, 2), (2, 3))
ORACLE_X_SHAPES: dict[int, tuple[int, ...]] = {1: (8,), 2: (8, 7), 3: (8, 7, 10), 4: (8, 7, 10, 12),
                                               5: (8, 7, 7, 8, 10)}
BN_MODES: tuple[tuple[str, tuple[tuple[str, bool], ...]], ...] = (
    ("train", ()),
    ("eval", (("is_test", True),)),
    ("global", (("use_global_stats", True),)),
    ("eval-trainable", (("is_test", True), ("trainable_statistics", True))),
)
MODE_RULES = frozenset({"batch_norm", "batch_norm_grad", "sync_batch_norm", "sync_batch_norm_grad"})


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
    old, new = x.shape, ORACLE_X_SHAPES[x.ndim]
    attrs = dict(zip((n for n, _ in case.spec.attrs), case.attr_values(), strict=True))
    role: dict[tuple[int, ...], tuple[int, ...]] = {old: new}
    if case.spec.op in ("batch_norm", "sync_batch_norm"):
        if x.ndim < 2:
            return case
        c = channel_axis(str(attrs.get("data_format", "NCHW")), x.ndim, strict=False)
        role[(old[c],)] = (new[c],)
    else:
        b = attrs.get("begin_norm_axis", 1)
        if isinstance(b, int) and 0 <= b <= x.ndim:
            role.setdefault((math.prod(old[b:]),), (math.prod(new[b:]),))
            role.setdefault(tuple(old[:b]), tuple(new[:b]))
    inputs = tuple(_resized(s, role.get(s.shape, s.shape)) if s is not None else None for s in case.inputs)
    return Case(case.rule, case.mesh, inputs, case.attrs, case.case_id)


def oracle_grid(rule: str, meshes: Sequence[tuple[int, ...]] = ORACLE_MESHES) -> Iterator[Case]:
    """Every oracle case of ``rule`` in a fixed order (ids: the shared grid's, plus ``/<mode>``)."""
    wanted = {tuple(m) for m in meshes}
    for case in grid_for(rule):
        if tuple(case.mesh.shape) not in wanted:
            continue
        case = resize(case)
        if rule not in MODE_RULES:
            yield case
            continue
        for mode, extra in BN_MODES:
            attrs = tuple(kv for kv in case.attrs if kv[0] not in dict(extra)) + extra
            yield Case(case.rule, case.mesh, case.inputs, attrs, f"{case.case_id}/{mode}")
