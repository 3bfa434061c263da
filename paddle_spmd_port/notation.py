"""Einsum-like axis notation and the sharding merge shared by every rule.

A rule names each tensor axis with a letter from ``ALPHABET`` (axis 0 is ``i``). Two tensors
that use the same letter must agree on how that axis is split. The character ``'1'`` marks an
axis whose output sharding is forced to replicated.

Worked example of :func:`merge_shardings` (Paddle's ``ShardingMergeForTensors``)::

    tensors                       letter -> mesh dim        note
    ijk:[0,-1,-1], ij:[-1,1]      i->0, j->1, k->-1         -1 yields to a real dim
    ijk:[0,-1,-1], ij:[1,-1]      NotImplementedError       axis i split along 0 and along 1
    ij:[0,-1],     jk:[-1,0]      i->0, j->-1, k->-1        ... mesh dim 0 claimed by i then k:
                                                            the first letter recorded keeps it
    i11:[-1,0,1]                  NotImplementedError       QUIRK: '1' is merged like a letter,
                                                            so the two forced axes conflict

The last line is how Paddle 3.3.1 behaves (a change to skip '1', PR #72720, is not in 3.3.1):
every ``'1'`` axis of every tensor merges into one shared key, which can raise on input that
should simply be replicated, or take a mesh dim away from a real axis.

General merges that never raise (the ``proposed`` profile's; not Paddle's behaviour)::

    first_claim([-1,0], [1,1])   (1, 0)    per axis the first mapping's real dim, then each mesh dim
                                           kept by the first axis that uses it
    most_held([0,-1], [1,-1], [1,-1])  (1, -1)   the (axis, mesh dim) pairs most mappings hold, greedily
    dedupe([0,1,0])              (0, 1, -1) a mesh dim used again is dropped

How a dims_mapping cuts a tensor (:func:`local_shape`, Paddle's layout: ``ceil(size / parts)``
per rank, the last shard of an uneven axis smaller)::

    shape [7,6], dims_mapping [0,-1], mesh (4,)   ranks 0..3: [2,6] [2,6] [2,6] [1,6]
    shape [5],   dims_mapping [0],    mesh (4,)   ShardError: rank 3 would start at 6 > 5
    shape [10],  dims_mapping [(0,1)], mesh (2,2) ranks 0..3: [3] [2] [3] [2]   (co-shard: nested cut,
                                                  10 -> 5,5 along mesh dim 0, each 5 -> 3,2 along 1)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .errors import InvalidSpecError, ShardingConflictError
from .types import c_stand_in

ALPHABET = "ijklmnopqrstuvwxyz"
FORCED_REPLICATED = "1"


def letters(count: int) -> str:
    """The first ``count`` axis letters: ``letters(3) == "ijk"``."""
    if not 0 <= count <= len(ALPHABET):
        raise InvalidSpecError(f"tensor rank {count} is outside 0..{len(ALPHABET)}", kind="invalid-spec:rank")
    return ALPHABET[:count]


def merge_axis(letter: str, new_dim: int, known_dim: int) -> int:
    """Merge two shardings of one axis: equal or one replicated merges; two real dims conflict."""
    if new_dim == known_dim or known_dim == -1:
        return new_dim
    if new_dim == -1:
        return known_dim
    raise ShardingConflictError(
        f"Tensor Axis[{letter}] is Sharded by two different mesh dimension [{new_dim}] and [{known_dim}].")


@c_stand_in("notation.merge_shardings")
def merge_shardings(tensors: Iterable[tuple[str, Sequence[int]]]) -> dict[str, int]:
    """Letter -> mesh dim for all ``(axes, dims_mapping)`` pairs, Paddle's way (see module doc).
    The C stand-in (``_speedups.merge_shardings``) hands every input it does not merge itself,
    conflicts included, to this one.

    Each dims_mapping has one entry per letter of its axes: the rules check ranks before they
    get here, so a length that differs is the port's own error (Paddle would read a letter past
    the end of the notation or leave one unmerged; no input reaches that).
    """
    letter_to_dim: dict[str, int] = {}
    claims: list[str] = []  # letters in the order they first took a mesh dim (a letter takes one at most once)
    # Written with an index and ``in`` tests, not zip() and dict.get/setdefault: every rule call
    # merges here, and this form runs the loop in about two thirds of the instructions (callgrind).
    for axes, dims_mapping in tensors:
        if len(dims_mapping) != len(axes):
            raise InvalidSpecError(
                f"dims_mapping {list(dims_mapping)} does not match its notation {axes!r}",
                kind="invalid-spec:notation")
        position = 0
        for mesh_dim in dims_mapping:
            letter = axes[position]
            position += 1
            if mesh_dim == -1:  # replicated yields to any real dim: it only records the letter
                if letter not in letter_to_dim:
                    letter_to_dim[letter] = -1
            elif letter not in letter_to_dim or letter_to_dim[letter] == -1:
                letter_to_dim[letter] = mesh_dim
                claims.append(letter)
            elif mesh_dim != letter_to_dim[letter]:
                letter_to_dim[letter] = merge_axis(letter, mesh_dim, letter_to_dim[letter])
    # One mesh dim may shard only one letter: the first letter recorded keeps it.
    if len(claims) > 1:
        taken: set[int] = set()
        for letter in claims:
            mesh_dim = letter_to_dim[letter]
            if mesh_dim in taken:
                letter_to_dim[letter] = -1
            else:
                taken.add(mesh_dim)
    return letter_to_dim


@c_stand_in("notation.mapping_for_axes")
def mapping_for_axes(axes: str, letter_to_dim: dict[str, int]) -> tuple[int, ...]:
    """Paddle's ``GetDimsMappingForAxes``: ``'1'`` reads -1, every other letter its merged dim
    (each letter was merged: the notations come from the same ranks)."""
    mapping = []  # a loop, not a comprehension: the comprehension's own frame costs more than its work here
    for letter in axes:
        mapping.append(-1 if letter == FORCED_REPLICATED else letter_to_dim[letter])
    return tuple(mapping)



def first_claim(*mappings: Sequence[int]) -> tuple[int, ...]:
    """Per axis, the first mapping's mesh dim that is not -1; then each mesh dim is kept only by
    the first axis that uses it (no raising: earlier mappings win)."""
    merged = [next((m[i] for m in mappings if i < len(m) and m[i] >= 0), -1) for i in range(len(mappings[0]))]
    return dedupe(merged)


def most_held(*mappings: Sequence[int]) -> tuple[int, ...]:
    """A mapping that moves the fewest tensors: every (axis, mesh dim) pair some mapping uses is
    ranked by how many mappings use it (ties: the earlier mapping, then the lower axis) and taken
    greedily while neither the axis nor the mesh dim is taken yet."""
    n = len(mappings[0])
    pairs: dict[tuple[int, int], tuple[int, int]] = {}
    for rank, mapping in enumerate(mappings):
        for axis in range(min(n, len(mapping))):
            if mapping[axis] >= 0:
                count, first = pairs.get((axis, mapping[axis]), (0, rank))
                pairs[(axis, mapping[axis])] = (count + 1, min(first, rank))
    merged = [-1] * n
    used: set[int] = set()
    for (axis, dim), _ in sorted(pairs.items(), key=lambda kv: (-kv[1][0], kv[1][1], kv[0][0])):
        if merged[axis] < 0 and dim not in used:
            merged[axis] = dim
            used.add(dim)
    return tuple(merged)


def dedupe(mapping: Sequence[int]) -> tuple[int, ...]:
    """``mapping`` with every mesh dim after its first use replaced by -1."""
    seen: set[int] = set()
    out = []
    for m in mapping:
        if m >= 0 and m in seen:
            out.append(-1)
        else:
            seen.add(m)
            out.append(m)
    return tuple(out)


class ShardError(Exception):
    """A dims_mapping that Paddle cannot lay out on this mesh (a shard would start past the end)."""


def shard_range(size: int, parts: int, index: int) -> tuple[int, int]:
    """Paddle's cut of ``size`` elements over ``parts`` ranks: ``[index*ceil, min((index+1)*ceil, size))``."""
    chunk = -(-size // parts)
    start = index * chunk
    if start > size:
        raise ShardError(f"an axis of size {size} over {parts} ranks: rank {index} would start at {start} > {size} "
                         "(Paddle: Slice Args 'start' should be less or equal to 'end')")
    return start, min(start + chunk, size)


def axis_range(size: int, entry: int | tuple[int, ...], coords: Sequence[int],
               mesh_shape: Sequence[int]) -> tuple[int, int]:
    """The ``[start, stop)`` of one tensor axis that the rank at mesh ``coords`` holds, for a
    dims_mapping ``entry``: -1 (the whole axis), a mesh dim (:func:`shard_range`), or a co-shard
    (mesh dims in shard order: the axis is cut along the first, each piece again along the next)::

        size 10, entry (0, 1) on a 2x3 mesh:  coords (0,0) [0,2)  (0,1) [2,4)  (0,2) [4,5)
                                              coords (1,0) [5,7)  (1,1) [7,9)  (1,2) [9,10)

    For sizes that divide evenly this equals one cut into prod(sizes) pieces (row-major over the
    members); for uneven sizes it does not, and the nested cut is Paddle's (measured on real ranks:
    see :func:`local_shape`)."""
    if type(entry) is not tuple:
        if entry < 0:  # type: ignore[operator]
            return 0, size
        return shard_range(size, mesh_shape[entry], coords[entry])  # type: ignore[index]
    lo, hi = 0, size
    for m in entry:
        start, stop = shard_range(hi - lo, mesh_shape[m], coords[m])
        lo, hi = lo + start, lo + stop
    return lo, hi


def local_shape(shape: Sequence[int], dims_mapping: Sequence[int | tuple[int, ...]], coords: Sequence[int],
                mesh_shape: Sequence[int]) -> tuple[int, ...]:
    """The shape the rank at mesh ``coords`` holds of a tensor of ``shape`` split by ``dims_mapping``
    (Partial keeps the shape). :class:`ShardError` where Paddle cannot lay the axis out.

    A co-sharded entry (mesh dims in shard order) is cut as :func:`axis_range` cuts it: along the
    first member, then each piece along the next. Measured on real ranks (``dist.shard_tensor`` with
    ``Shard(d, shard_order=k)``, Paddle 3.3.1, 2x2 / 2x3 / 2x2x2 meshes, sizes 3, 5, 7, 10, 12, 13,
    every order of 2 and 3 members): every rank's slice is the nested cut's, including the empty
    last pieces (size 7 over (0,1) on 2x3: 2,2,0 | 1,1,1) and the ShardError (size 3 over (0,1) on
    2x3: the last rank raises ``Slice Args 'start' should be less or equal to 'end'``); a flat cut
    into prod(sizes) pieces differs (size 10 on 2x2: 3,2,3,2, not 3,3,3,1)."""
    out = list(shape)
    for axis, entry in enumerate(dims_mapping):
        if entry != -1:
            lo, hi = axis_range(shape[axis], entry, coords, mesh_shape)
            out[axis] = hi - lo
    return tuple(out)
