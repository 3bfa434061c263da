"""rms_norm: ``RmsNormInferSpmd``, ``RmsNormInferSpmdReverse``, ``RmsNormGradInferSpmd`` (Paddle 3.3.1;
the registry's ``fused_rms_norm`` runs the first two as ``infer_forward`` / ``infer_backward``;
the grad rule is unregistered).

Notation, x of rank 3 (``'1'`` = forced replicated)::

    forward   ij1, -  ->  ij1, ij                  x, scale -> out, invvar
    reverse   ij1 (out), ij (invvar) merged  ->  x ij1, scale -, out ij1, invvar ij
    grad      ijk, -, ij, ijk  ->  ijk, -          x, scale, invvar, out_grad -> x_grad, scale_grad
              (the leading axes ij aligned across x, invvar, out_grad by cost: see below)

Every axis but the last keeps its sharding; the last is normalised and replicated; invvar has
shape ``x.shape[:-1]``.

Worked table, 2x3 mesh, x [8,6,4], invvar [8,6]::

    rule     input mappings                          returned inputs          outputs
    forward  x [1,-1,0]                              [1,-1,-1] [-1]           [1,-1,-1] [1,-1]
    reverse  out [-1,-1,1] invvar [0,-1]             x [0,-1,-1] [-1]         [0,-1,-1] [0,-1]
    reverse  out [-1,-1,0] invvar [0,-1]             x [-1,-1,-1] ...         out's '1' takes dim 0
    grad     x [0,-1,1] invvar [-1,-1] og [-1,-1,-1] x/og [0,1,-1] inv [0,1]  x_grad [0,1,-1],
                                                                             scale_grad [-1] P{0,1}

The grad rule's alignment (Paddle's ``AlignDimsSharding``, here :func:`align_leading_axes`):
partial status is cleared first; x's placement is the reference. A mesh dim where every tensor
agrees keeps its split if it splits a leading axis (a split of the last axis is dropped). A mesh
dim where they disagree goes to the cheapest leading axis not yet split: per tensor, infinite if
the axis is shorter than the mesh dim, 0 if the tensor already splits that axis, else the
tensor's local size under its own placement times the mesh dim's size (out_grad sized as x);
ties go to the earlier axis; no finite cost leaves the mesh dim replicated. Mesh dims are taken in
order. So in the table, x's split of its last axis moves to axis 1.

Quirks kept on purpose (Paddle 3.3.1 does this):

* PADDLE-QUIRK(rms-partial): every rule clears the partial status of every tensor.
* PADDLE-QUIRK(rms-reverse-ignores-x): the reverse rule ignores x's own mapping and infers it from
  out and invvar, merged with out's last axis as the shared ``'1'`` key (see
  :mod:`paddle_spmd_port.notation`): a mesh dim on out's last axis can take that dim from invvar.
* PADDLE-QUIRK(rms-grad-align): the grad rule moves splits between leading axes by the cost above
  (a split of x's last axis can reappear on another axis), and x_grad is out_grad's aligned attr
  (out_grad's mesh).
* PADDLE-QUIRK(rms-grad-scale): scale and scale_grad keep the incoming rank of scale (all -1);
  scale_grad is Partial(SUM) over the mesh dims of x's aligned leading axes.
* PADDLE-QUIRK(rms-check-message): Paddle's rank-vs-dims_mapping messages carry its build's file
  name and line (:data:`.checks.RMS_CHECK_LINES`); a None scale fails that check.
* PADDLE-QUIRK(rms-grad-coshard): the alignment reads placements, so a co-sharded input counts
  every member mesh dim as splitting its axis (the other rules read one member:
  :func:`~paddle_spmd_port.ops.kit.tensor.getter_mapping`).
* PADDLE-QUIRK(rms-int-cost): the alignment's size products wrap to 32 bits, as Paddle's
  ``std::accumulate`` with an ``int`` seed does.

Port-only checks (Paddle crashes or answers garbage; :mod:`.checks`): x needs a mesh and
rank >= 1; forward/reverse: scale 1-D (Paddle answers [-1] for any rank); reverse: out of x's rank
and invvar of one less (Paddle builds the notation from out's rank, reads past it, or answers
garbage); grad: invvar of rank ndim - 1, x / invvar / out_grad on meshes of as many dims; any
answer naming a mesh dim that an attr's own mesh lacks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import InvalidSpecError
from ...notation import FORCED_REPLICATED, letters, mapping_for_axes, merge_shardings
from ...types import DimsMapping, DistAttr, DistTensorSpec, SpmdResult, mesh_dims_of
from ..kit.checks import RuleFn, rule
from ..kit.strictness import mirror, mirror_via, norm_forward_first_kept, unread_mirrors, with_vector_stand_ins
from .checks import FIRST_KEPT, UNREAD, VECTORS_ANY_RANK, rms_forward_inputs, rms_grad_inputs, rms_reverse_inputs

_INF = float("inf")


@rule("rms_norm")
def rms_norm_infer_spmd(
    x: DistTensorSpec,
    scale: DistTensorSpec,
    epsilon: float = 1e-5,
) -> SpmdResult:
    """Forward rule. Inputs (x, scale); outputs (out, invvar). (Paddle's header gives epsilon no
    default and its registry object crashes without one; the port defaults to 1e-5.)"""
    tx, ts = rms_forward_inputs(x, scale, epsilon)
    kept = tx.dims_mapping[:-1] + (-1,)
    x_attr = tx.attr(kept)  # PADDLE-QUIRK(rms-partial)
    return SpmdResult.make(inputs=(x_attr, ts.attr((-1,))), outputs=(x_attr, tx.attr(kept[:-1])))


@rule("rms_norm_reverse", others=("out", "invvar", "scale"), mesh_of=("x", "scale", "out", "invvar"))
def rms_norm_infer_spmd_reverse(
    x: DistTensorSpec,
    scale: DistTensorSpec,
    out: DistTensorSpec,
    invvar: DistTensorSpec,
    epsilon: float = 1e-5,
) -> SpmdResult:
    """Reverse rule (the registry's ``fused_rms_norm`` ``infer_backward``): infers x from out and
    invvar. Inputs (x, scale, out, invvar); returned inputs (x, scale); outputs (out, invvar)."""
    tx, ts, to, tv = rms_reverse_inputs(x, scale, out, invvar, epsilon)
    lead = letters(to.ndim - 1)
    x_axes = lead + FORCED_REPLICATED
    # PADDLE-QUIRK(rms-reverse-ignores-x): x's own mapping is not read
    merged = merge_shardings([(x_axes, to.dims_mapping), (lead, tv.dims_mapping)])
    x_mapping, stat = mapping_for_axes(x_axes, merged), mapping_for_axes(lead, merged)
    result = SpmdResult.make(inputs=(tx.attr(x_mapping), ts.attr((-1,))),
                             outputs=(to.attr(x_mapping), tv.attr(stat)))
    return result


def _wrap32(value: int) -> int:
    """``value`` as a C++ ``int`` holds it (two's complement, 32 bits)."""
    return (value + 2**31) % 2**32 - 2**31


def _int_product(values: Sequence[int]) -> int:
    """``std::accumulate(values, 1, multiplies)``: the running product kept in an ``int``
    (PADDLE-QUIRK(rms-int-cost))."""
    acc = 1
    for v in values:
        acc = _wrap32(acc * v)
    return acc


def align_leading_axes(
    mappings: Sequence[DimsMapping],
    shapes: Sequence[tuple[int, ...]],
    notations: Sequence[str],
    align: str,
    mesh_shape: tuple[int, ...],
) -> list[tuple[int, ...]]:
    """Paddle's ``AlignDimsSharding`` without partial status (the grad rule clears it and passes no
    skipped mesh dims), for tensors on meshes of ``mesh_shape``'s number of dims. ``mappings`` are
    the tensors' own dims_mappings, co-shards included: Paddle reads placements here, so every
    member of a co-shard splits its axis (not only the one its dims_mapping getter keeps). Returns
    each tensor's new mapping (its own length). The reference is the first tensor whose shape is
    not empty (no axes, or a first axis of size 0)."""
    ndim_mesh = len(mesh_shape)
    # placements[i][m]: the axis of tensor i split along mesh dim m, or None (replicated)
    placements: list[list[int | None]] = []
    for mapping in mappings:
        axis_of: list[int | None] = [None] * ndim_mesh
        for axis, entry in enumerate(mapping):
            for m in mesh_dims_of(entry):
                if m < ndim_mesh:
                    axis_of[m] = axis
        placements.append(axis_of)
    live = [i for i, shape in enumerate(shapes) if shape and shape[0] != 0]
    if not live:
        raise InvalidSpecError("every tensor of rms_norm_grad's alignment is empty (Paddle reads past its inputs)",
                               kind="invalid-spec:x:empty")
    ref = live[0]

    def mismatch(m: int) -> bool:
        want = placements[ref][m]
        return any(placements[i][m] != want for i in live)  # same letters per index: x, out_grad, invvar prefix

    def local_size(i: int) -> int:
        local = list(shapes[i])
        for m, axis in enumerate(placements[i]):
            if axis is not None:  # each cut from the full size: the last member of a co-shard wins
                local[axis] = -(-shapes[i][axis] // mesh_shape[m])
        return _int_product(local)

    taken: dict[int, str] = {}  # mesh dim -> the letter it splits
    split: set[str] = set()
    for m in range(ndim_mesh):
        held = placements[ref][m]
        if not mismatch(m) and held is not None and notations[ref][held] in align:
            split.add(notations[ref][held])
            taken[m] = notations[ref][held]
    for m in range(ndim_mesh):
        if not mismatch(m):
            continue
        costs = []
        for letter in align:
            cost = _INF
            if letter not in split:
                cost = 0.0
                for i in live:
                    axis = notations[i].index(letter)
                    if shapes[i][axis] < mesh_shape[m]:
                        cost += _INF
                        continue
                    if mesh_dims_of(mappings[i][axis]) or _int_product(shapes[i]) == 0:
                        continue
                    cost += local_size(i) * mesh_shape[m]
            costs.append((cost, letter))
        for cost, letter in sorted(costs):
            if cost != _INF:
                split.add(letter)
                taken[m] = letter
                break
    out = []
    for mapping, notation in zip(mappings, notations, strict=True):
        new = [-1] * len(mapping)
        for m, letter in taken.items():
            new[notation.index(letter)] = m
        out.append(tuple(new))
    return out


@rule("rms_norm_grad", others=("scale",), mesh_of=("x", "scale", "invvar", "out_grad", "out_grad", "scale"))
def rms_norm_grad_infer_spmd(
    x: DistTensorSpec,
    scale: DistTensorSpec,
    invvar: DistTensorSpec,
    out_grad: DistTensorSpec,
    epsilon: float = 1e-5,
) -> SpmdResult:
    """Grad rule. Inputs (x, scale, invvar, out_grad); outputs (x_grad, scale_grad)."""
    tx, ts, tv, tg = rms_grad_inputs(x, scale, invvar, out_grad, epsilon)
    x_axes = letters(tx.ndim)
    lead = x_axes[:-1]
    assert tx.mesh is not None  # rms_grad_inputs checked it
    x_map, inv_map, og_map = align_leading_axes(
        (x.dims_mapping, invvar.dims_mapping, out_grad.dims_mapping),  # co-shards as given
        (_shape(x), _shape(invvar), _shape(x)),  # out_grad is sized as x
        (x_axes, lead, x_axes), lead, tx.mesh.shape)
    og_attr = tg.attr(og_map)  # PADDLE-QUIRK(rms-grad-align): x_grad is out_grad's aligned attr
    scale_rep = ts.replicated()
    partial = frozenset(m for m in x_map[:-1] if m != -1)
    scale_grad = DistAttr.make(scale_rep.dims_mapping, partial, ts.mesh)  # PADDLE-QUIRK(rms-grad-scale)
    result = SpmdResult.make(inputs=(tx.attr(x_map), scale_rep, tv.attr(inv_map), og_attr),
                             outputs=(og_attr, scale_grad))
    return result


def _shape(spec: DistTensorSpec) -> tuple[int, ...]:
    return tuple(spec.shape)


@mirror("rms_norm", "invalid-spec:x:duplicate")
def rms_norm_mirror_x_duplicate(fn: RuleFn, *args: Any, **kwargs: Any) -> SpmdResult:
    """The forward rule's answer to an x splitting two axes along one mesh dim:
    :func:`~..kit.strictness.norm_forward_first_kept` (the last axis normalised)."""
    return norm_forward_first_kept(fn, args, kwargs, UNREAD["rms_norm"])


#: The mirror policy's answers to the malformed mappings of inputs a rule never reads
#: (:data:`.checks.UNREAD`) or merges (:data:`.checks.FIRST_KEPT`).
MIRRORED_UNREAD = unread_mirrors(UNREAD, __name__, FIRST_KEPT)
#: The mirror policy's answers to a scale of another rank (:data:`.checks.VECTORS_ANY_RANK`).
MIRRORED_VECTORS = tuple(
    mirror_via(key, "invalid-spec:scale:rank",
               lambda fn, *args, **kwargs: with_vector_stand_ins(fn, args, kwargs, ("scale",)),
               f"{key}: scale read for its mesh alone; :func:`with_vector_stand_ins`.", __name__)
    for key in VECTORS_ANY_RANK)
