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
* **group_norm**: x is re-sized to :data:`GN_ORACLE_X_SHAPES` (C = 12, divisible by the grid's
  groups 2 and 4); its co-shard set, which carries the header's default ``groups=-1`` (which the op
  rejects), is judged with ``groups=2``. instance_norm's statistics ``[N, C]`` and rms_norm's /
  fast_ln's ``x.shape[:-1]`` follow x (their scale/bias: C, the last axis).
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
#: group_norm's x: C = 12 on axis 1 and on the last axis (channel-first and channel-last layouts), so
#: the grid's groups (2 and 4, ``parity.grid.gn_groups``) divide C as the op requires.
GN_ORACLE_X_SHAPES: dict[int, tuple[int, ...]] = {3: (8, 12, 12), 4: (8, 12, 10, 12), 5: (8, 12, 7, 10, 12)}
#: groups for group_norm's co-shard set, which carries the header's default -1 (the op rejects it).
GN_COSHARD_GROUPS = 2
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
    op = case.spec.op
    old = x.shape
    new = GN_ORACLE_X_SHAPES.get(x.ndim, old) if op == "group_norm" else ORACLE_X_SHAPES[x.ndim]
    attrs = dict(zip((n for n, _ in case.spec.attrs), case.attr_values(), strict=True))
    role: dict[tuple[int, ...], tuple[int, ...]] = {old: new}
    if op in ("batch_norm", "sync_batch_norm", "instance_norm", "group_norm"):
        if x.ndim < 2:
            return case
        c = 1 if op == "instance_norm" else channel_axis(str(attrs.get("data_format", "NCHW")), x.ndim, strict=False)
        role[(old[c],)] = (new[c],)
        if op == "instance_norm":
            role.setdefault(old[:2], new[:2])
    else:
        b = x.ndim - 1 if op in ("rms_norm", "fast_ln") else attrs.get("begin_norm_axis", 1)
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
        values = dict(zip((n for n, _ in case.spec.attrs), case.attr_values(), strict=True))
        if "-coshard-" in case.case_id and values.get("groups") == -1:
            attrs = tuple(kv for kv in case.attrs if kv[0] != "groups") + (("groups", GN_COSHARD_GROUPS),)
            case = Case(case.rule, case.mesh, case.inputs, attrs, case.case_id)
        if rule not in MODE_RULES:
            yield case
            continue
        for mode, extra in BN_MODES:
            attrs = tuple(kv for kv in case.attrs if kv[0] not in dict(extra)) + extra
            yield Case(case.rule, case.mesh, case.inputs, attrs, f"{case.case_id}/{mode}")
