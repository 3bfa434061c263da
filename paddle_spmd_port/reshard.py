"""What a reshard costs: the steps Paddle runs to move a tensor from one distribution to another on
one mesh, each named as Paddle names its reshard function, with the bytes it moves per rank.

Paddle picks a reshard function from its registry in registration order, the first whose
``IsSuitable`` holds (``reshard_function_registry.cc``). On one mesh:

* a 1-D mesh: one function by the (source, target) status, S = sharded, P = partial, R = replicated::

      S->R  SToRReshardFunction   all_gather      (uneven axes padded to ceil(n/k) per rank)
      S->P  SToPReshardFunction   all_gather      (its S->R, then a local R->P)
      S->S  SToSReshardFunction   all_to_all      (another axis)
      R->S  RToSReshardFunction   none            (each rank slices its piece)
      R->P  RToPReshardFunction   none            (rank 0 keeps the value, the others zeros)
      P->R  PToRReshardFunction   all_reduce
      P->S  PToSReshardFunction   reduce_scatter

* a mesh of 2 or more dims: ``SameNdMeshReshardFunction``, which decomposes into 1-D functions on
  the sub-mesh along one mesh dim at a time, in four passes (``nd_mesh_reshard_function.cc``, the
  version with co-shards that 3.3.1 ships: its ``libphi_core.so`` holds that version's strategy
  classes and log lines):

  1. every source partial dim that the target neither keeps partial nor shards: P->R (all_reduce);
  2. from the last tensor axis whose mapping differs, down to axis 0: every axis whose shard differs
     from the target's to replicated, S->R (all_gather), a co-shard one member at a time, the last
     member first; an axis the target shards the same way is left alone;
  3. every target partial dim not yet partial: R->P (local);
  4. the same axes, each that still differs from the target cut as the target says, a co-shard
     one member at a time in order: P->S (reduce_scatter) where that mesh dim is still partial,
     else R->S (a local slice).

Equal source and target: no reshard (Paddle calls none).

Bytes are those each rank receives, under the ring/pairwise algorithms the collectives run, with
``itemsize`` bytes per element (4: float32). A rank's piece of an axis split ``k`` ways is padded to
``ceil(n / k)``, as Paddle pads uneven shards for the collective. For a group of ``k`` ranks and a
per-rank piece of ``c`` elements (``L`` the local tensor, ``c = ceil(L / k)`` for the reducing ones)::

    all_gather       (k - 1) * c          reduce_scatter  (k - 1) * c
    all_to_all       (k - 1) * c          all_reduce      2 * (k - 1) * c   (reduce-scatter + all-gather)

A group of one rank moves nothing. Pure: no numpy, no Paddle.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from .types import DimsMapping, MeshDims, ProcessMesh

#: the collective each function runs ("none": a local slice or a local R->P)
COLLECTIVES = ("all_gather", "all_reduce", "reduce_scatter", "all_to_all", "none")
#: the outer function whose per-dim decomposition a step belongs to on a mesh of 2 or more dims
ND_FUNCTION = "SameNdMeshReshardFunction"


class Distribution(Protocol):
    """Anything with a dims_mapping and partial dims: a ``DistAttr`` or a ``DistTensorSpec``."""

    @property
    def dims_mapping(self) -> DimsMapping: ...

    @property
    def partial_dims(self) -> frozenset[int]: ...


@dataclass(frozen=True, slots=True)
class Step:
    """One 1-D reshard Paddle runs."""

    function: str
    """Paddle's class name, e.g. ``SToRReshardFunction``."""
    collective: str
    """One of :data:`COLLECTIVES`."""
    mesh_dim: int
    """The mesh dim it runs along (0 on a 1-D mesh)."""
    axis: int
    """The tensor axis it gathers, slices or scatters; -1 for P->R and R->P."""
    group: int
    """Ranks in the collective: the mesh dim's size."""
    bytes: int
    """Bytes each rank receives (0 for ``none``)."""
    within: str = ""
    """:data:`ND_FUNCTION` for a step of its decomposition, else ``""`` (a 1-D mesh)."""

    def __str__(self) -> str:
        where = f" axis {self.axis}" if self.axis >= 0 else ""
        return f"{self.function}({self.collective} on mesh dim {self.mesh_dim}{where}, {self.bytes} B)"

    def to_json(self) -> dict[str, object]:
        return {"function": self.function, "collective": self.collective, "mesh_dim": self.mesh_dim,
                "axis": self.axis, "group": self.group, "bytes": self.bytes, "within": self.within}


def _members(entry: MeshDims) -> tuple[int, ...]:
    if type(entry) is tuple:
        return entry
    return () if entry == -1 else (entry,)  # type: ignore[return-value]


def _entry(members: Sequence[int]) -> MeshDims:
    if not members:
        return -1
    return members[0] if len(members) == 1 else tuple(members)


def _ceil(n: int, k: int) -> int:
    return -(-n // k)


def _extent(size: int, entry: MeshDims, mesh_shape: Sequence[int]) -> int:
    """The padded per-rank extent of one axis: ceil-cut by each member in order."""
    for m in _members(entry):
        size = _ceil(size, mesh_shape[m])
    return size


def _local(shape: Sequence[int], mapping: Sequence[MeshDims], mesh_shape: Sequence[int]) -> list[int]:
    return [_extent(n, e, mesh_shape) for n, e in zip(shape, mapping, strict=True)]


def _prod(values: Iterable[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def _check(shape: Sequence[int], dist: Distribution, mesh: ProcessMesh, what: str) -> None:
    if len(dist.dims_mapping) != len(shape):
        raise ValueError(f"reshard plan: {what} dims_mapping {list(dist.dims_mapping)} does not fit the shape "
                         f"{list(shape)}; give one entry per axis")
    n = len(mesh.shape)
    used = [m for e in dist.dims_mapping for m in _members(e)]
    if any(not 0 <= m < n for m in used) or any(not 0 <= p < n for p in dist.partial_dims):
        raise ValueError(f"reshard plan: {what} uses a mesh dim outside the mesh {mesh} (dims 0..{n - 1})")
    if len(used) != len(set(used)) or set(used) & set(dist.partial_dims):
        raise ValueError(f"reshard plan: {what} uses a mesh dim twice (a mesh dim shards one axis once, "
                         "or is partial)")


def plan(shape: Sequence[int], src: Distribution, dst: Distribution, mesh: ProcessMesh,
         itemsize: int = 4) -> tuple[Step, ...]:
    """The steps Paddle runs to reshard a tensor of global ``shape`` from ``src`` to ``dst`` on
    ``mesh``, in order (empty when they are equal). ``ValueError`` for a distribution that does not
    fit the shape or the mesh."""
    shape = tuple(shape)
    _check(shape, src, mesh, "source")
    _check(shape, dst, mesh, "target")
    src_dm, dst_dm = tuple(src.dims_mapping), tuple(dst.dims_mapping)
    src_p, dst_p = frozenset(src.partial_dims), frozenset(dst.partial_dims)
    if src_dm == dst_dm and src_p == dst_p:
        return ()
    if len(mesh.shape) == 1:
        return (_one_dim(shape, src_dm, dst_dm, src_p, dst_p, mesh.shape[0], itemsize),)
    return _nd(shape, src_dm, dst_dm, src_p, dst_p, mesh.shape, itemsize)


def _status(mapping: DimsMapping, partial: frozenset[int]) -> str:
    if any(e != -1 for e in mapping):
        return "S"
    return "P" if partial else "R"


def _one_dim(shape: tuple[int, ...], src_dm: DimsMapping, dst_dm: DimsMapping, src_p: frozenset[int],
             dst_p: frozenset[int], k: int, itemsize: int) -> Step:
    src_s, dst_s = _status(src_dm, src_p), _status(dst_dm, dst_p)
    local = _local(shape, src_dm, (k,))
    src_axis = next((i for i, e in enumerate(src_dm) if e != -1), -1)
    dst_axis = next((i for i, e in enumerate(dst_dm) if e != -1), -1)
    if src_s == "S":
        if dst_s == "S":  # another axis: all_to_all of the piece along the target axis
            chunk = list(local)
            chunk[dst_axis] = _ceil(shape[dst_axis], k)
            return Step("SToSReshardFunction", "all_to_all", 0, dst_axis, k, (k - 1) * _prod(chunk) * itemsize)
        name = "SToRReshardFunction" if dst_s == "R" else "SToPReshardFunction"
        return Step(name, "all_gather", 0, src_axis, k, (k - 1) * _prod(local) * itemsize)
    if src_s == "R":
        if dst_s == "S":
            return Step("RToSReshardFunction", "none", 0, dst_axis, k, 0)
        return Step("RToPReshardFunction", "none", 0, -1, k, 0)
    if dst_s == "R":
        return Step("PToRReshardFunction", "all_reduce", 0, -1, k, 2 * (k - 1) * _ceil(_prod(local), k) * itemsize)
    chunk = list(local)
    chunk[dst_axis] = _ceil(shape[dst_axis], k)
    return Step("PToSReshardFunction", "reduce_scatter", 0, dst_axis, k, (k - 1) * _prod(chunk) * itemsize)


def _nd(shape: tuple[int, ...], src_dm: DimsMapping, dst_dm: DimsMapping, src_p: frozenset[int], dst_p: frozenset[int],
        mesh_shape: tuple[int, ...], itemsize: int) -> tuple[Step, ...]:
    steps: list[Step] = []
    cur = list(src_dm)
    partial = set(src_p)
    first_diff = max((i for i in range(len(shape)) if src_dm[i] != dst_dm[i]), default=-1)
    dst_sharding = {m for e in dst_dm for m in _members(e)}

    def add(function: str, collective: str, mesh_dim: int, axis: int, nbytes: int) -> None:
        steps.append(Step(function, collective, mesh_dim, axis, mesh_shape[mesh_dim], nbytes, ND_FUNCTION))

    for p in sorted(src_p):  # 1. partial -> replicated where the target neither keeps nor shards it
        if p in dst_p or p in dst_sharding:
            continue
        k = mesh_shape[p]
        add("PToRReshardFunction", "all_reduce", p, -1,
            2 * (k - 1) * _ceil(_prod(_local(shape, cur, mesh_shape)), k) * itemsize)
        partial.discard(p)
    for i in range(first_diff, -1, -1):  # 2. every shard of those axes that differs -> replicated
        if cur[i] == dst_dm[i]:
            continue
        members = list(_members(cur[i]))
        while members:
            m = members.pop()
            add("SToRReshardFunction", "all_gather", m, i,
                (mesh_shape[m] - 1) * _prod(_local(shape, cur, mesh_shape)) * itemsize)
            cur[i] = _entry(members)
    for p in sorted(dst_p):  # 3. replicated -> partial, locally
        if p not in partial:
            add("RToPReshardFunction", "none", p, -1, 0)
            partial.add(p)
    for i in range(first_diff, -1, -1):  # 4. replicated or partial -> the target's shards
        if cur[i] == dst_dm[i]:
            continue
        done: list[int] = []
        for m in _members(dst_dm[i]):
            k = mesh_shape[m]
            if m in partial:
                chunk = _local(shape, cur, mesh_shape)
                chunk[i] = _ceil(chunk[i], k)
                add("PToSReshardFunction", "reduce_scatter", m, i, (k - 1) * _prod(chunk) * itemsize)
                partial.discard(m)
            else:
                add("RToSReshardFunction", "none", m, i, 0)
            done.append(m)
            cur[i] = _entry(done)
    return tuple(steps)


def total_bytes(steps: Iterable[Step]) -> int:
    """Bytes each rank receives over all the steps."""
    return sum(step.bytes for step in steps)


def cost(shape: Sequence[int], src: Distribution, dst: Distribution, mesh: ProcessMesh, itemsize: int = 4) -> int:
    """``total_bytes(plan(...))``: the bytes per rank of resharding ``src`` to ``dst``."""
    return total_bytes(plan(shape, src, dst, mesh, itemsize))


@dataclass(frozen=True, slots=True)
class _Plain:
    dims_mapping: DimsMapping
    partial_dims: frozenset[int]


def settle(shape: Sequence[int], attr: Distribution, mesh: ProcessMesh, itemsize: int = 4) -> tuple[Step, ...]:
    """The steps that turn an output's pending partial sums into values (its P->R all_reduces):
    the collectives an answer's outputs still need. Empty for an output without partial dims."""
    if not attr.partial_dims:
        return ()
    return plan(shape, attr, _Plain(tuple(attr.dims_mapping), frozenset()), mesh, itemsize)
