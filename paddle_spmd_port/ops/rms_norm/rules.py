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

from collections.abc import Callable, Sequence
from typing import Any, NoReturn, cast

from ...errors import InvalidSpecError
from ...notation import ALPHABET, FORCED_REPLICATED, letters, mapping_for_axes, merge_shardings
from ...types import DimsMapping, DistAttr, DistTensorSpec, SpmdResult, mesh_dims_of
from ..kit.checks import RuleFn, rule
from ..kit.raw_mapping import (
    merge_raw_tensors,
    not_mirrored,
    read_back_raw,
    require_buildable_raw,
    require_paddle_profile,
)
from ..kit.strictness import argument, mirror_via
from .checks import STRICTNESS, rms_forward_inputs, rms_grad_inputs, rms_reverse_inputs

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


def _give_cheapest(ndim_mesh: int, align: str, mismatch: Callable[[int], bool], cost: Callable[[str, int], float],
                   split: set[str], taken: dict[int, str]) -> None:
    """The alignment's second pass, shared by the strict grad rule and its raw model: each mesh dim
    the tensors disagree on goes to the cheapest letter not split yet (ties: the earlier letter),
    ``cost(letter, mesh_dim)`` asked letter by letter in ``align``'s order; none where every cost is
    infinite. Fills ``split`` and ``taken`` (mesh dim -> letter)."""
    for m in range(ndim_mesh):
        if not mismatch(m):
            continue
        costs = [(_INF if letter in split else cost(letter, m), letter) for letter in align]
        for total, letter in sorted(costs):
            if total != _INF:
                split.add(letter)
                taken[m] = letter
                break


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
    def cost(letter: str, m: int) -> float:
        total = 0.0
        for i in live:
            axis = notations[i].index(letter)
            if shapes[i][axis] < mesh_shape[m]:
                total += _INF
                continue
            if mesh_dims_of(mappings[i][axis]) or _int_product(shapes[i]) == 0:
                continue
            total += local_size(i) * mesh_shape[m]
        return total

    _give_cheapest(ndim_mesh, align, mismatch, cost, split, taken)
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


# --------------------------------------------------------------------------- the mirror policy
def _strict_refusal(fn: RuleFn, args: tuple[Any, ...], kwargs: dict[str, Any]) -> NoReturn:
    """The strict rule's own refusal, raised again: for the inputs a raw model leaves to it."""
    fn(*args, **kwargs)
    raise InvalidSpecError("the strict rule answered an input it refused", kind="invalid-spec:profile")


def _raw_inputs(fn: RuleFn, args: tuple[Any, ...], kwargs: dict[str, Any],
                names: tuple[str, ...]) -> list[DistTensorSpec]:
    """The named arguments as Paddle's rule reads them: specs on a mesh, no co-shard, each mapping as
    long as its rank (anything else meets Paddle's rank check, a stand-in without a mesh or the
    co-shard getter: the strict refusal stands), that Paddle can build
    (:func:`~..kit.raw_mapping.require_buildable_raw`)."""
    require_paddle_profile(fn, args, kwargs)
    specs = [argument(fn, args, kwargs, name) for name in names]
    for spec in specs:
        if not isinstance(spec, DistTensorSpec) or spec.mesh is None or spec.coshard \
                or len(spec.dims_mapping) != len(spec.shape):
            _strict_refusal(fn, args, kwargs)
    require_buildable_raw(zip(names, specs, strict=True))
    return specs


def _attr(mapping: Sequence[int], spec: DistTensorSpec) -> DistAttr:
    """``CopyTensorDistAttrForOutput(spec)`` with ``mapping``: spec's mesh, no partial status."""
    return DistAttr.make(tuple(mapping), frozenset(), spec.mesh)


def rms_norm_raw(fn: RuleFn, *args: Any, **kwargs: Any) -> SpmdResult:
    """``RmsNormInferSpmd`` on the raw input, for the mirror policy: x's mapping copied with its last
    entry set to -1 is x's answer as it is (a repeat or an unknown mesh dim kept); its merge
    (:func:`~..kit.raw_mapping.merge_raw_tensors`: a repeated mesh dim kept on the first axis) gives
    out, and invvar its leading axes; scale answers [-1] on its own mesh whatever its rank or
    mapping. x of rank 0 (Paddle raises) keeps the strict refusal."""
    x, scale = _raw_inputs(fn, args, kwargs, ("x", "scale"))
    rank = len(x.shape)
    if not 1 <= rank <= len(ALPHABET):
        _strict_refusal(fn, args, kwargs)
    kept = (*cast(tuple[int, ...], x.dims_mapping[:-1]), -1)
    axes = letters(rank - 1) + FORCED_REPLICATED
    out = read_back_raw(axes, merge_raw_tensors([("x", axes, kept)]))
    return SpmdResult.make(inputs=(_attr(kept, x), _attr((-1,), scale)), outputs=(_attr(out, x), _attr(out[:-1], x)))


def rms_norm_reverse_raw(fn: RuleFn, *args: Any, **kwargs: Any) -> SpmdResult:
    """``RmsNormInferSpmdReverse`` on the raw input, for the mirror policy: the notation is built from
    out's rank alone (x's rank and mapping are never read: x's only use is a letter of a string no
    answer reads), out's mapping and invvar's are merged raw against it
    (:func:`~..kit.raw_mapping.merge_raw_tensors`: invvar's entries past its letters merge under no
    letter or make Paddle raise, a repeat kept on the first axis, unknown and negative mesh dims
    carried), and every attr is answered on its own tensor's mesh: x and out by out's letters,
    invvar by the leading ones, scale [-1]."""
    x, scale, out, invvar = _raw_inputs(fn, args, kwargs, ("x", "scale", "out", "invvar"))
    rank = len(out.shape)
    if rank == 0:
        not_mirrored("out of rank 0: Paddle raises basic_string::_M_create (a notation of rank - 1 letters)",
                     "invalid-spec:out:rank")
    if rank > len(ALPHABET) + 2:
        not_mirrored(f"out of rank {rank}: Paddle reads its notation's letters past the end of its "
                     f"{len(ALPHABET)}-letter alphabet", "invalid-spec:out:unset-memory")
    if rank > len(ALPHABET) + 1:  # (the one letter at the alphabet's end is its terminating NUL: not modelled)
        _strict_refusal(fn, args, kwargs)
    lead = letters(rank - 1)
    axes = lead + FORCED_REPLICATED
    merged = merge_raw_tensors([("out", axes, cast(tuple[int, ...], out.dims_mapping)),
                                ("invvar", lead, cast(tuple[int, ...], invvar.dims_mapping))])
    answer, stat = read_back_raw(axes, merged), read_back_raw(lead, merged)
    return SpmdResult.make(inputs=(_attr(answer, x), _attr((-1,), scale)),
                           outputs=(_attr(answer, out), _attr(stat, invvar)))


def _placements_raw(name: str, spec: DistTensorSpec) -> list[int | None]:
    """``TensorDistAttr::to_placement`` of Paddle 3.3.1 as the grad's alignment reads it: per mesh dim of
    the tensor's own mesh, the axis it splits (a mesh dim named twice: the last axis naming it). A
    mesh dim at or past the mesh's ndim makes Paddle raise; a negative one but -1 is written before
    the placements' start (refused: ``unset-memory``)."""
    assert spec.mesh is not None
    ndim = spec.mesh.ndim
    placements: list[int | None] = [None] * ndim
    for axis, dim in enumerate(cast(tuple[int, ...], spec.dims_mapping)):
        if dim >= ndim:
            not_mirrored(f"{name}: mesh dim {dim} outside its mesh {spec.mesh}: Paddle raises building its placements",
                         f"invalid-spec:{name}:mesh-dim")
        if dim < -1:
            not_mirrored(f"{name}: mesh dim {dim}: Paddle writes its placement at index {dim}, before the vector's "
                         "start (memory it never set)", f"invalid-spec:{name}:unset-memory")
        if dim >= 0:
            placements[dim] = axis
    return placements


def _repeats(spec: DistTensorSpec) -> bool:
    named = [d for d in cast(tuple[int, ...], spec.dims_mapping) if d != -1]
    return len(named) != len(set(named))


def rms_norm_grad_raw(fn: RuleFn, *args: Any, **kwargs: Any) -> SpmdResult:
    """``RmsNormGradInferSpmd`` on the raw input, for the mirror policy: Paddle's ``AlignDimsSharding``
    step by step (:func:`align_leading_axes` says how it aligns) over x, invvar and out_grad read
    as Paddle reads them: each tensor's placements on its own mesh (a repeated mesh dim: the last
    axis), compared and priced by x's mesh dims, with invvar's notation x's leading letters
    whatever invvar's rank. Refused where Paddle raises (a repeat whose tensor the pricing asks
    about, a split on a mesh dim x's mesh lacks where the pricing reads its size, a mesh dim at or
    past a tensor's mesh), and where it reads or writes past a vector's or string's end (invvar's
    shape or answer shorter than the letters, a tensor on a mesh of fewer dims than x's, a split
    axis past invvar's notation, a negative mesh dim but -1, written before the placements' start,
    scale_grad's partial status on a mesh dim scale's mesh lacks):
    kind ``unset-memory``, Paddle's answer there is memory it never set."""
    x, scale, invvar, out_grad = _raw_inputs(fn, args, kwargs, ("x", "scale", "invvar", "out_grad"))
    rank = len(x.shape)
    if not 2 <= rank <= len(ALPHABET) or len(out_grad.shape) != rank or x.shape[0] == 0:
        _strict_refusal(fn, args, kwargs)  # Paddle raises (rank checks) or the port's own refusal stands
    names = ("x", "invvar", "out_grad")
    tensors = (x, invvar, out_grad)
    shapes = (tuple(x.shape), tuple(invvar.shape), tuple(x.shape))  # out_grad is priced with x's shape
    axes = letters(rank)
    align = axes[:-1]
    notations = (axes, align, axes)
    placements = [_placements_raw(n, t) for n, t in zip(names, tensors, strict=True)]
    assert x.mesh is not None
    sizes = x.mesh.shape
    live = [i for i, shape in enumerate(shapes) if shape and shape[0] != 0]

    def past_end(i: int, what: str) -> NoReturn:
        not_mirrored(f"{names[i]}: Paddle reads or writes {what} past its end (memory it never set)",
                     f"invalid-spec:{names[i]}:unset-memory")

    def letter_of(i: int, axis: int) -> str:
        if axis > len(notations[i]):
            past_end(i, f"its notation {notations[i]!r} at axis {axis}")
        return notations[i][axis] if axis < len(notations[i]) else "\0"

    def mismatch(m: int) -> bool:
        want = placements[0][m]
        for i in live:
            if m >= len(placements[i]):
                past_end(i, f"its placements (mesh {tensors[i].mesh}) at mesh dim {m} of x's mesh")
            got = placements[i][m]
            if want is not None and got is not None and letter_of(0, want) != letter_of(i, got):
                return True
            if want != got:
                return True
        return False

    def is_split(i: int, axis: int) -> bool:
        if _repeats(tensors[i]):
            not_mirrored(f"{names[i]}: a repeated mesh dim, asked whether it splits axis {axis}: Paddle raises "
                         "(ProcessMesh dimension can't be mapped to two dimension of the same tensor)",
                         f"invalid-spec:{names[i]}:duplicate")
        return axis in placements[i]

    def local_size(i: int) -> int:
        local = list(shapes[i])
        for m, axis in enumerate(placements[i]):
            if axis is None:
                continue
            if m >= len(sizes):
                not_mirrored(f"{names[i]}: split on mesh dim {m}, which x's mesh {x.mesh} lacks: Paddle raises "
                             "reading its size", f"invalid-spec:{names[i]}:mixed-mesh")
            local[axis] = -(-shapes[i][axis] // sizes[m])
        return _int_product(local)

    taken: dict[int, str] = {}
    split: set[str] = set()
    for m in range(len(sizes)):
        held = placements[0][m]
        if not mismatch(m) and held is not None and axes[held] in align:
            split.add(axes[held])
            taken[m] = axes[held]
    def cost(letter: str, m: int) -> float:
        total = 0.0
        for i in live:
            axis = notations[i].index(letter)
            if axis >= len(shapes[i]):
                past_end(i, f"its shape {list(shapes[i])} at axis {axis}")
            if shapes[i][axis] < sizes[m]:
                total += _INF
                continue
            if is_split(i, axis) or _int_product(shapes[i]) == 0:
                continue
            total += local_size(i) * sizes[m]
        return total

    _give_cheapest(len(sizes), align, mismatch, cost, split, taken)
    answered = []
    for i, tensor in enumerate(tensors):
        new = [-1] * len(tensor.dims_mapping)
        for m, letter in taken.items():
            axis = notations[i].index(letter)
            if axis >= len(new):
                past_end(i, f"its answer's mapping ({len(new)} entries) at axis {axis}")
            new[axis] = m
        answered.append(_attr(new, tensor))
    x_attr, inv_attr, og_attr = answered
    partial = [m for m in x_attr.dims_mapping[:-1] if isinstance(m, int) and m != -1]
    assert scale.mesh is not None
    if any(m >= scale.mesh.ndim for m in partial):
        not_mirrored(f"scale_grad partial on mesh dims {partial}, which scale's mesh {scale.mesh} lacks: Paddle "
                     "reaches that partial status past the end of the mesh's placements (memory it never set: "
                     "SIGSEGV on most such inputs, an answer on others)", "invalid-spec:scale:unset-memory")
    rep = (-1,) * len(scale.dims_mapping)
    return SpmdResult.make(inputs=(x_attr, _attr(rep, scale), inv_attr, og_attr),
                           outputs=(og_attr, DistAttr.make(rep, frozenset(partial), scale.mesh)))


_RAW_MODELS = {"rms_norm": rms_norm_raw, "rms_norm_reverse": rms_norm_reverse_raw,
               "rms_norm_grad": rms_norm_grad_raw}

#: The mirror policy's answers: Paddle's rules on the raw input for every refusal declared
#: mirrored for them (:data:`.checks.STRICTNESS`).
MIRRORED_RAW = tuple(
    mirror_via(key, decl.check, _RAW_MODELS[key],
               f"{key}: Paddle's rule on the raw input; :func:`{_RAW_MODELS[key].__name__}`.", __name__)
    for decl in STRICTNESS.declared for key in decl.mirror_keys if key in _RAW_MODELS)
