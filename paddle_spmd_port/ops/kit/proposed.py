"""The ``proposed`` rule profile: Paddle's rules with the bugs the oracle finds fixed (every rule key).

Same signatures, same validation and error classes as the ``paddle`` profile (the ported 3.3.1
rules: both run the family's ``checks``); only the answers differ, and the checks that an answer
fits the inputs' meshes (where a family's grad answers a None scale/bias while x is split, which
crashes Paddle and the paddle profile refuses: a None input has no grad to place).
Every answer here is sound on the whole oracle grid
(``python -m paddle_spmd_port oracle --profile proposed``).

Each family's ``proposed.py`` holds its rules and says what changes and why; this module holds
the helpers several of them share. One change runs through every family::

    rule                  Paddle 3.3.1                            proposed
    co-sharded inputs     every rule reads one mesh dim of a      an axis the rule keeps split keeps the
    (every rule)          co-shard (the largest; the rest of      whole co-shard of the input that decided
                          the axis is gathered)                   it (:func:`_with_coshards`): the leading
                                                                  axes of layer_norm, C (and in running-
                                                                  statistics modes every axis) of
                                                                  batch_norm, N of sync_batch_norm when
                                                                  it splits evenly over all its mesh dims
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

from ...errors import InvalidSpecError
from ...types import DistAttr, DistTensorSpec, MeshDims, mesh_dims_of
from .tensor import RuleInput, getter_mapping


def fits_x_mesh(tx: RuleInput, *tensors: RuleInput) -> None:
    """The tensors merged with x's axes may only name mesh dims x's mesh has (a tensor on a mesh of
    more dims than x's could bring one x's mesh lacks)."""
    n = tx.mesh.ndim if tx.mesh is not None else 0
    for t in tensors:
        if t.mesh is not None and t.dims_mapping and max(t.dims_mapping) >= n:
            raise InvalidSpecError(
                f"{t.name}: on mesh {t.mesh} it is split along mesh dim {max(t.dims_mapping)}, which x's mesh "
                f"{tx.mesh} lacks (the rule merges it with x's axes); put {t.name} on a mesh with as many dims "
                "as x's", kind=f"invalid-spec:{t.name}:mixed-mesh")



def with_coshards(kept: Sequence[int], *specs: DistTensorSpec | None,
                   partial: Collection[int] = ()) -> tuple[MeshDims, ...]:
    """``kept`` (the rule's mapping, one mesh dim per axis) with each split axis given back the whole
    co-shard of the first of ``specs`` whose co-shard on that axis keeps that dim (the one the rules
    read: :func:`~.tensor.getter_mapping`), when no other member is used on another axis or in
    ``partial`` and the axis splits evenly over all the members (an uneven co-shard can leave a rank
    an empty piece, and Paddle's ranks abort on one: measured by the launch co-shard runs). Splitting a kept axis
    further is sound wherever splitting it once is: each piece is a sub-block of the rank's rows.
    2x3 mesh, x [(0,1),-1] of shape [12, 5], read as [1,-1]::

        kept [1,-1]  ->  [(0,1),-1]        kept [-1,-1]  ->  [-1,-1]  (the axis is gathered anyway)
        kept [1,0]   ->  [1,0]             (mesh dim 0 splits axis 1: the co-shard cannot come back)
    """
    out: list[MeshDims] = list(kept)
    for spec in specs:
        if spec is None or not spec.coshard or spec.mesh is None or len(spec.dims_mapping) != len(kept):
            continue
        read = getter_mapping(spec.dims_mapping, spec.mesh)
        for axis, entry in enumerate(spec.dims_mapping):
            if type(entry) is not tuple or kept[axis] != read[axis] or type(out[axis]) is tuple:
                continue
            others = {m for a, e in enumerate(out) if a != axis for m in mesh_dims_of(e)} | set(partial)
            if not others & set(entry) and spec.shape[axis] % math.prod(spec.mesh.shape[m] for m in entry) == 0:
                out[axis] = entry
    return tuple(out)


def param(t: RuleInput, mapping: tuple[MeshDims, ...], partial: frozenset[int] = frozenset()) -> DistAttr:
    """An attr for a per-channel / parameter tensor; a missing input keeps Paddle's meshless ``[-1]``."""
    if t.mesh is None:
        return DistAttr((-1,) * max(len(mapping), 1), frozenset(), None)
    return DistAttr(mapping, partial, t.mesh)


def ln_param(t: RuleInput, partial: frozenset[int] = frozenset()) -> DistAttr:
    """A parameter tensor replicated at its own rank (:func:`param` with every axis -1)."""
    return param(t, (-1,) * t.ndim, partial)


def grad_needs_mesh(partial: frozenset[int], *tensors: RuleInput) -> None:
    """A parameter grad Partial over ``partial`` needs its tensor's mesh: a spec given without one is
    refused (a None input has no grad to place)."""
    for t in tensors:
        if partial and t.mesh is None and not t.missing:
            raise InvalidSpecError(
                f"{t.name} is a spec without a process mesh while x's batch axis is split along mesh dims "
                f"{sorted(partial)}: {t.name}_grad is Partial over them and needs a mesh; pass {t.name} on x's mesh",
                kind=f"invalid-spec:{t.name}:no-mesh")
