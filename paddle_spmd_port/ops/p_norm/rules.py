"""p_norm, the ``paddle`` profile: ``PNormInferSpmd``, ``PNormInferSpmdReverse``,
``PNormGradInferSpmd`` (Paddle 3.3.1, p_norm.cc). Each builds the list of reduced axes (every
axis with asvector, else ``[axis]``) and calls the generic reduction rule (reduction.cc:
``ReductionInferSpmd``, ``ReductionInferSpmdReverse``, ``ReductionGradInferSpmd``); porder and
epsilon are never read.

Notation, x of rank 3 reduced along axis 1 (``'1'`` = a kept size-1 axis, forced replicated)::

    forward   ijk -> ik  (keepdims: i1k)       x keeps its mapping; out Partial(SUM) on the
                                               mesh dims that split a reduced axis
    reverse   ik (i1k) -> ijk                  x from out, -1 on the reduced axes
    grad      out_grad ik -> x ijk             x, out, out_grad, x_grad: out_grad's attr, -1
                                               inserted at the reduced axes

Worked table, 2x3 mesh, x [4,6,8]::

    rule     input                                 x answered      out answered
    forward  x [0,1,-1] axis=1                     [0,1,-1]        [0,-1] P{1}
    forward  x [0,1,-1] axis=-1 keepdims           [0,1,-1]        [0,1,-1]
    forward  x [0,1,-1] asvector                   [0,1,-1]        [] P{0,1}
    forward  x [0,-1,-1] P{1} axis=0               [0,-1,-1]       [-1,-1] P{0}
    reverse  out [1,0] axis=1                      [1,-1,0]        [1,0] (as given)
    reverse  out [1,0,-1] axis=1 keepdims          [1,-1,-1]       [1,0,-1] (as given)
    reverse  out [1,0,-1] asvector keepdims        NotImplementedError: the two '1' axes conflict
    grad     out_grad [1,-1] P{0} axis=1           x, x_grad [1,-1,-1]; out, out_grad [1,-1]

Quirks kept on purpose (Paddle 3.3.1 does this):

* PADDLE-QUIRK(pn-partial-sum): a sharded reduced axis makes out Partial(**SUM**) whatever porder:
  right for porder 1 and 0 (a sum of |x| or of nonzero counts), wrong for every other porder
  (docs/ops/p_norm.md; :mod:`.proposed` replicates the reduced axes instead).
* PADDLE-QUIRK(pn-forced-key): the reverse rule merges every ``'1'`` axis of a keepdims out as one
  shared key (:mod:`paddle_spmd_port.notation`): two of them split along different mesh dims raise.
* PADDLE-QUIRK(pn-partial): forward and reverse clear x's partial status; the reverse rule
  answers out exactly as given (partial and co-shard included).
* PADDLE-QUIRK(pn-grad-from-out-grad): the grad rule never reads x's or out's dist attrs: all four
  answers are out_grad's attr (mesh included) with its partial status cleared. Where x and
  out_grad have equal ranks (keepdims) the attr is copied whole, co-shard included; else its
  mapping is read (a co-shard collapses, as the getter does) and -1 is inserted (the compiled
  route compares the co-shard set's out_grad; PIR values hold no co-shard).
* Co-sharded inputs are read through Paddle's getter (one mesh dim per axis:
  :func:`~paddle_spmd_port.ops.kit.tensor.getter_mapping`), so a co-shard reaches the answer only
  where Paddle copies the whole attr.

The port's own checks (Paddle accepts garbage or crashes) are :mod:`.checks`'.
"""

from __future__ import annotations

import inspect
from typing import Any, cast

from ...errors import InvalidSpecError
from ...notation import merge_axis
from ...types import DimsMapping, DistAttr, DistTensorSpec, SpmdResult
from ..kit.checks import RuleFn, rule
from ..kit.strictness import argument, call_with, first_kept, mirror, mirror_via
from ..kit.tensor import RuleInput, on_meshes_of_other_ndim, require_mesh_dims_exist
from .checks import check_attr_types, forward_inputs, grad_inputs, out_rank, reduced_axes, reverse_inputs

#: frozenset({d}) per mesh dim d: a one-axis reduction's partial set, shared (no set built per call)
_ONE_DIM = tuple(frozenset((d,)) for d in range(16))
_NONE: frozenset[int] = frozenset()
_REPLICATED = frozenset((-1,))


@rule("p_norm")
def p_norm_infer_spmd(x: DistTensorSpec, porder: float = 2.0, axis: int = -1, epsilon: float = 1e-12,
                      keepdims: bool = False, asvector: bool = False) -> SpmdResult:
    """Forward rule. Input x; output out."""
    tx = forward_inputs(x, (porder, axis, epsilon, keepdims, asvector))
    dm, ndim = tx.dims_mapping, tx.ndim
    if asvector or ndim == 0:  # every axis reduced (none for a 0-D x)
        out: DimsMapping = (-1,) * ndim if keepdims else ()
        partial = frozenset(dm) - _REPLICATED  # every mesh dim that splits x: PADDLE-QUIRK(pn-partial-sum)
    else:  # one axis, as slices: the common call, written without a per-axis loop
        a = axis + ndim if axis < 0 else axis
        out = dm[:a] + (-1,) + dm[a + 1:] if keepdims else dm[:a] + dm[a + 1:]
        d = dm[a]
        partial = _NONE if d == -1 else _ONE_DIM[d] if d < 16 else frozenset((d,))  # PADDLE-QUIRK(pn-partial-sum)
    return SpmdResult.make(inputs=(tx.attr(dm),), outputs=(DistAttr.make(out, partial, tx.mesh),))


@rule("p_norm_reverse")
def p_norm_infer_spmd_reverse(x: DistTensorSpec, out: DistTensorSpec, porder: float = 2.0, axis: int = -1,
                              epsilon: float = 1e-12, keepdims: bool = False,
                              asvector: bool = False) -> SpmdResult:
    """Reverse rule (the registry's ``infer_backward``): infers x from out; x's own dims_mapping
    is not read."""
    tx, to = reverse_inputs(x, out, (porder, axis, epsilon, keepdims, asvector))
    ndim, om = tx.ndim, to.dims_mapping
    x_mapping: DimsMapping
    if asvector or ndim == 0:
        x_mapping = (-1,) * ndim
        if keepdims:  # every axis is a '1': they share one key, PADDLE-QUIRK(pn-forced-key)
            forced = -1
            for m in om:
                if m != -1:
                    forced = merge_axis("1", m, forced)
    else:  # one reduced axis: x is out's mapping with -1 there (a kept '1' dropped); one '1' cannot conflict
        a = axis + ndim if axis < 0 else axis
        x_mapping = om[:a] + (-1,) + om[a + 1:] if keepdims else om[:a] + (-1,) + om[a:]
    raw: DimsMapping = out.dims_mapping  # out is answered as given, co-shard and partial included
    result = SpmdResult.make(inputs=(tx.attr(x_mapping),),
                             outputs=(DistAttr.make(raw, to.partial_dims, to.mesh),))
    # checked here, not by @rule's others: x may come without a mesh (the rule never reads its attr)
    if to.mesh is not tx.mesh and on_meshes_of_other_ndim(tx, to):  # out's mesh dims put on x's mesh
        require_mesh_dims_exist(result, (("x", tx), ("out", to)), tx, (to,))
    return result


@rule("p_norm_grad")
def p_norm_grad_infer_spmd(x: DistTensorSpec, out: DistTensorSpec, out_grad: DistTensorSpec,
                           porder: float = 2.0, axis: int = -1, epsilon: float = 1e-12, keepdims: bool = False,
                           asvector: bool = False) -> SpmdResult:
    """Grad rule. Inputs (x, out, out_grad); output x_grad. PADDLE-QUIRK(pn-grad-from-out-grad)."""
    tx, _, tg = grad_inputs(x, out, out_grad, (porder, axis, epsilon, keepdims, asvector))
    same = _cleared(out_grad, tg)
    if tx.ndim == tg.ndim:
        x_attr = same
    else:
        mapping = list(tg.dims_mapping)
        for a in reduced_axes(tx.ndim, axis, bool(asvector)):  # ascending: each lands where it belongs
            mapping.insert(a, -1)
        x_attr = DistAttr.make(tuple(mapping), frozenset(), tg.mesh)
    return SpmdResult.make(inputs=(x_attr, same, same), outputs=(x_attr,))


def _cleared(spec: DistTensorSpec, t: RuleInput) -> DistAttr:
    """``spec``'s whole attr (a co-shard kept) with its partial status cleared."""
    return DistAttr.make(spec.dims_mapping, frozenset(), t.mesh)



# --------------------------------------------------------------------------- the mirror policy
# An axis outside -rank..rank-1 matches no axis of x (Paddle normalises a negative one once), so
# Paddle's rules run as if nothing were reduced: out has x's rank and notation. The checks are the
# strict rule's with an in-range axis (none of them reads axis but the one that refused).

def _no_axis_reduced(axis: int, asvector: bool) -> None:
    """What the three rules share: an asvector call never reaches here (axis is not read then)."""
    if asvector:
        raise InvalidSpecError(f"axis={axis}: asvector=True reads no axis; nothing to mirror",
                               kind="invalid-spec:axis")


@mirror("p_norm", "invalid-spec:axis")
def p_norm_mirror_axis(fn: RuleFn, x: DistTensorSpec, porder: float = 2.0, axis: int = -1, epsilon: float = 1e-12,
                       keepdims: bool = False, asvector: bool = False) -> SpmdResult:
    """Forward: no axis reduced, so out is x's mapping (whatever keepdims), nothing partial."""
    _no_axis_reduced(axis, asvector)
    tx = forward_inputs(x, (porder, -1, epsilon, keepdims, asvector))
    return SpmdResult.make(inputs=(tx.attr(tx.dims_mapping),),
                           outputs=(DistAttr.make(tx.dims_mapping, _NONE, tx.mesh),))


@mirror("p_norm_reverse", "invalid-spec:axis")
def p_norm_reverse_mirror_axis(fn: RuleFn, x: DistTensorSpec, out: DistTensorSpec, porder: float = 2.0, axis: int = -1,
                               epsilon: float = 1e-12, keepdims: bool = False,
                               asvector: bool = False) -> SpmdResult:
    """Reverse: out is read with x's notation, so x takes out's mapping (:func:`_padded_out`: -1 past
    the end of a shorter one; a longer one is refused)."""
    _no_axis_reduced(axis, asvector)
    read = out
    if isinstance(out, DistTensorSpec) and isinstance(x, DistTensorSpec):
        read = _padded_out(out, len(x.shape), "invalid-spec:axis")
    tx, to = reverse_inputs(x, read, (porder, -1, epsilon, True, asvector))  # keepdims: out of x's rank
    result = SpmdResult.make(inputs=(tx.attr(to.dims_mapping),),
                             outputs=(DistAttr.make(out.dims_mapping, to.partial_dims, to.mesh),))
    if to.mesh is not tx.mesh and on_meshes_of_other_ndim(tx, to):
        require_mesh_dims_exist(result, (("x", tx), ("out", to)), tx, (to,))
    return result


def _padded_out(out: DistTensorSpec, length: int, kind: str) -> DistTensorSpec:
    """out as Paddle's reverse rule reads it against a notation of ``length`` letters: its merge walks
    out's mapping, giving the i-th letter the i-th entry, so letters past the end of a shorter mapping
    take -1. One entry too many goes to the empty letter (the substring at the notation's end), which
    no axis of x reads: it is dropped. Refused: two or more too many (Paddle raises taking a substring
    past the end), and an extra entry that is a co-shard, names a mesh dim outside out's mesh or
    repeats one of the others (the merge would weigh it against them). The spec returned has
    ``length`` axes of size 1 and out's mesh and partial status (the reverse rule reads mappings
    only)."""
    mapping = out.dims_mapping
    if len(mapping) == length + 1 and out.mesh is not None:
        extra, mapping = mapping[-1], mapping[:-1]
        if type(extra) is not int or not -1 <= extra < out.mesh.ndim or extra != -1 and extra in mapping:
            raise InvalidSpecError(f"out's entry past the {length} axes Paddle's reverse rule reads it against is "
                                   f"{extra!r}: a co-shard, a mesh dim outside the mesh or a repeat: no answer to "
                                   "mirror", kind=kind)
    if len(mapping) > length:
        raise InvalidSpecError(f"out's {len(mapping)}-entry mapping is longer than the {length} axes Paddle's reverse "
                               "rule reads it against (Paddle raises past one too many): no answer to mirror",
                               kind=kind)
    return DistTensorSpec((1,) * length, tuple(mapping) + (-1,) * (length - len(mapping)), out.mesh,
                          out.partial_dims)


@mirror("p_norm_reverse", "invalid-spec:out:rank")
def p_norm_reverse_mirror_out_rank(fn: RuleFn, x: DistTensorSpec, out: DistTensorSpec, porder: float = 2.0,
                                   axis: int = -1, epsilon: float = 1e-12, keepdims: bool = False,
                                   asvector: bool = False) -> SpmdResult:
    """Reverse, out of another rank than x, keepdims and asvector imply: its mapping read against the
    notation of that rank (:func:`_padded_out`); out answered as given."""
    want = out_rank(len(x.shape), bool(keepdims), bool(asvector))
    result = fn(x, _padded_out(out, want, "invalid-spec:out:rank"), porder, axis, epsilon, keepdims, asvector)
    return SpmdResult.make(inputs=tuple(result.inputs),
                           outputs=(DistAttr.make(out.dims_mapping, out.partial_dims, result.outputs[0].mesh),))


def p_norm_reverse_mirror_out_mapping(fn: RuleFn, x: DistTensorSpec, out: DistTensorSpec, porder: float = 2.0,
                                      axis: int = -1, epsilon: float = 1e-12, keepdims: bool = False,
                                      asvector: bool = False) -> SpmdResult:
    """Reverse, out's mapping repeating a mesh dim or naming one the mesh lacks: Paddle merges it (a
    repeated mesh dim kept on the first axis naming it, :func:`~..kit.strictness.first_kept`) and
    copies its mesh dims into x's mapping without looking them up; out is answered as given; with
    asvector and keepdims the '1' axes' shared key merges every entry, unknown mesh dims included
    (two different ones conflict, as in Paddle). A repeat on the kept '1' axis is kept there only
    where that axis comes first (Paddle's merge goes by position, not by letter). Refused: a
    co-shard, a partial dim outside the mesh, out on a mesh of other dims than x's."""
    if not isinstance(out, DistTensorSpec) or not isinstance(x, DistTensorSpec) or out.mesh is None \
            or x.mesh is None or out.coshard or out.mesh.ndim != x.mesh.ndim \
            or any(not 0 <= p < out.mesh.ndim for p in out.partial_dims):
        raise InvalidSpecError("out: a co-shard, a partial dim outside the mesh, or a mesh of other dims than x's "
                               "beside its malformed mapping: no answer to mirror", kind="invalid-spec:out")
    ndim = len(x.shape)
    kept = first_kept(out).dims_mapping
    inside = tuple(m if isinstance(m, int) and -1 <= m < out.mesh.ndim else -1 for m in kept)
    one_axis = not asvector and ndim > 0
    a = axis + ndim if axis < 0 else axis
    if asvector and keepdims:  # every axis a '1' sharing one key: the raw entries merge, unknown dims too
        forced = -1
        for m in kept:
            if m != -1:
                forced = merge_axis("1", cast(int, m), forced)
    result = fn(x, DistTensorSpec(out.shape, inside, out.mesh, out.partial_dims), porder, axis, epsilon, keepdims,
                asvector)
    answered = result.inputs[0]
    x_mapping = answered.dims_mapping
    if one_axis:
        x_mapping = kept[:a] + (-1,) + kept[a + 1:] if keepdims else kept[:a] + (-1,) + kept[a:]
    return SpmdResult.make(inputs=(DistAttr.make(tuple(x_mapping), answered.partial_dims, answered.mesh),),
                           outputs=(DistAttr.make(out.dims_mapping, out.partial_dims, out.mesh),))


_OUT_MAPPING_MIRRORS = tuple(
    mirror_via("p_norm_reverse", f"invalid-spec:out:{problem}", p_norm_reverse_mirror_out_mapping,
               "out's malformed mapping read as Paddle's merge reads it: :func:`p_norm_reverse_mirror_out_mapping`.",
               __name__)
    for problem in ("duplicate", "mesh-dim"))


@mirror("p_norm_grad", "invalid-spec:axis")
def p_norm_grad_mirror_axis(fn: RuleFn, x: DistTensorSpec, out: DistTensorSpec, out_grad: DistTensorSpec,
                            porder: float = 2.0, axis: int = -1, epsilon: float = 1e-12, keepdims: bool = False,
                            asvector: bool = False) -> SpmdResult:
    """Grad: where out_grad has x's rank (keepdims) the answer is out_grad's attr, axis unread; else
    Paddle inserts at ``axis``, past the end of the mapping (undefined behaviour): refused."""
    _no_axis_reduced(axis, asvector)
    if not keepdims:
        raise InvalidSpecError(f"axis={axis} with keepdims=False: Paddle's grad rule inserts at that axis, past "
                               "the end of out_grad's mapping (undefined behaviour): no answer to mirror",
                               kind="invalid-spec:axis:insert-outside")
    return fn(x, out, out_grad, porder, -1, epsilon, keepdims, asvector)


@mirror("p_norm", "invalid-spec:x:duplicate")
def p_norm_mirror_duplicate(fn: RuleFn, x: DistTensorSpec, porder: float = 2.0, axis: int = -1,
                            epsilon: float = 1e-12, keepdims: bool = False, asvector: bool = False) -> SpmdResult:
    """Forward, x splitting two axes along one mesh dim: Paddle's merge keeps each mesh dim on the first
    axis that names it (-1 on the later ones), then reduces as for any x (an out-of-range axis reduces
    nothing); x is answered as given, its partial status cleared. A co-shard or a partial dim that is
    out of range or also sharding is refused (the strict checks' next ones)."""
    mesh, dm = x.mesh, x.dims_mapping
    if mesh is None or x.coshard or any(not 0 <= p < mesh.ndim or p in dm for p in x.partial_dims):
        raise InvalidSpecError("x: a co-shard, or a partial dim out of range or also sharding, beside the "
                               "repeated mesh dim: no answer to mirror", kind="invalid-spec:x:duplicate")
    seen: set[int] = set()
    kept: list[int] = []
    for m in cast("tuple[int, ...]", dm):  # (no co-shard: every entry one int)
        kept.append(-1 if m in seen else m)
        if m != -1:
            seen.add(m)
    ndim = len(kept)
    if asvector or ndim == 0:
        reduced = set(range(ndim))
    else:
        a = axis + ndim if axis < 0 else axis
        reduced = {a} if 0 <= a < ndim else set()
    out = tuple(-1 if i in reduced else m for i, m in enumerate(kept) if keepdims or i not in reduced)
    partial = frozenset(kept[i] for i in reduced) - _REPLICATED  # PADDLE-QUIRK(pn-partial-sum)
    return SpmdResult.make(inputs=(DistAttr.make(tuple(dm), _NONE, mesh),),
                           outputs=(DistAttr.make(out, partial, mesh),))


@mirror("p_norm", "invalid-spec:x:mesh-dim")
def p_norm_mirror_mesh_dim(fn: RuleFn, x: DistTensorSpec, porder: float = 2.0, axis: int = -1,
                           epsilon: float = 1e-12, keepdims: bool = False, asvector: bool = False) -> SpmdResult:
    """Forward, x's mapping naming a mesh dim the mesh lacks: Paddle's merge of the one input copies
    every entry, so out takes x's entries on the kept axes (-1 on a kept '1') and x is answered as
    given; only entries >= 0 on a reduced axis become partial (an out-of-range axis reduces
    nothing). Refused where Paddle does not answer: a reduced axis naming a mesh dim past the mesh
    (the partial status is set on it: Paddle crashes), out naming one outside the mesh beside a
    partial status (Paddle raises checking the two against each other), and beside a co-shard, a
    repeated mesh dim or a partial dim out of range or also sharding (the strict checks' next ones)."""
    mesh, dm = x.mesh, x.dims_mapping
    if mesh is None or x.coshard or any(not 0 <= p < mesh.ndim or p in dm for p in x.partial_dims):
        raise InvalidSpecError("x: a co-shard, or a partial dim out of range or also sharding, beside the "
                               "unknown mesh dim: no answer to mirror", kind="invalid-spec:x:mesh-dim")
    entries = cast("tuple[int, ...]", dm)  # (no co-shard: every entry one int)
    sharding = [m for m in entries if m >= 0]
    if len(sharding) != len(set(sharding)):
        raise InvalidSpecError("x: a repeated mesh dim beside the unknown one: no answer to mirror",
                               kind="invalid-spec:x:mesh-dim")
    ndim = len(entries)
    if asvector or ndim == 0:
        reduced = set(range(ndim))
    else:
        a = axis + ndim if axis < 0 else axis
        reduced = {a} if 0 <= a < ndim else set()
    partial = frozenset(entries[i] for i in reduced if entries[i] >= 0)  # PADDLE-QUIRK(pn-partial-sum)
    out = tuple(-1 if i in reduced else m for i, m in enumerate(entries) if keepdims or i not in reduced)
    if any(p >= mesh.ndim for p in partial) or partial and any(not -1 <= m < mesh.ndim for m in out):
        raise InvalidSpecError("x: an unknown mesh dim on a reduced axis, or on a kept one beside a partial status "
                               "(Paddle crashes or raises): no answer to mirror", kind="invalid-spec:x:mesh-dim")
    return SpmdResult.make(inputs=(DistAttr.make(tuple(dm), _NONE, mesh),),
                           outputs=(DistAttr.make(out, partial, mesh),))


def _x_unread(fn: RuleFn, names: tuple[str, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> SpmdResult:
    """The reverse and grad rules never read these inputs' mappings (nor their partial status): the
    rule's answer with each as a replicated spec of its shape on its mesh."""
    given = {}
    for name in names:
        spec = argument(fn, args, kwargs, name)
        if not isinstance(spec, DistTensorSpec) or spec.mesh is None:
            raise InvalidSpecError(f"{name} is no spec on a mesh: no answer to mirror", kind=f"invalid-spec:{name}")
        given[name] = DistTensorSpec(spec.shape, (-1,) * len(spec.shape), spec.mesh)
    try:
        return cast(SpmdResult, call_with(fn, args, kwargs, **given))
    except InvalidSpecError as exc:  # a second problem, in an input the rule reads: its own mirror, if any
        then = _THEN.get((getattr(fn, "rule_key", ""), exc.kind))
        if then is None:
            raise
        bound = inspect.signature(fn).bind(*args, **kwargs)
        bound.apply_defaults()
        bound.arguments.update(given)
        return cast(SpmdResult, then(fn, *bound.args, **bound.kwargs))


def _mirror_unread(key: str, check: str, names: tuple[str, ...]) -> RuleFn:
    return cast(RuleFn, mirror_via(key, check, lambda fn, *args, **kwargs: _x_unread(fn, names, args, kwargs),
                                   f"{key}: {', '.join(names)} never read; :func:`_x_unread`.", __name__))


_UNREAD_MIRRORS = (
    *(_mirror_unread("p_norm_reverse", f"invalid-spec:x:{problem}", ("x",))
      for problem in ("duplicate", "length", "mesh-dim")),
    *(_mirror_unread("p_norm_grad", f"invalid-spec:x:{problem}", ("x", "out"))
      for problem in ("duplicate", "length", "mesh-dim")),
    *(_mirror_unread("p_norm_grad", f"invalid-spec:out:{problem}", ("x", "out"))
      for problem in ("duplicate", "length", "mesh-dim")),
)


def p_norm_grad_mirror_ranks(fn: RuleFn, *args: Any, **kwargs: Any) -> SpmdResult:
    """Grad, out or out_grad of another rank than x, keepdims and asvector imply, or out_grad's mapping
    of another length than its rank: the rule never reads out, and answers out_grad's mapping as
    given (partial cleared) where out_grad's rank (its shape's) is x's, else that mapping with -1
    inserted at each reduced axis, ascending. The other checks run with stand-ins of the rank the rule
    wants; an insertion past the end of the mapping (undefined behaviour in Paddle), a co-shard or a
    partial dim outside the mesh is refused."""
    x, out, grad, axis, keepdims, asvector = (argument(fn, args, kwargs, n)
                                              for n in ("x", "out", "out_grad", "axis", "keepdims", "asvector"))
    if not isinstance(x, DistTensorSpec) or not isinstance(grad, DistTensorSpec) or grad.mesh is None \
            or grad.coshard or any(not 0 <= p < grad.mesh.ndim for p in grad.partial_dims):
        raise InvalidSpecError("out_grad: no spec on a mesh, a co-shard or a partial dim outside the mesh beside "
                               "its rank or length: no answer to mirror", kind="invalid-spec:out_grad")
    want = (1,) * out_rank(len(x.shape), bool(keepdims), bool(asvector))
    out_mesh = out.mesh if isinstance(out, DistTensorSpec) and out.mesh is not None else grad.mesh
    call_with(fn, args, kwargs, out=DistTensorSpec(want, (-1,) * len(want), out_mesh),  # the other checks
              out_grad=DistTensorSpec(want, (-1,) * len(want), grad.mesh))
    same = DistAttr.make(grad.dims_mapping, _NONE, grad.mesh)
    x_attr = same
    if len(x.shape) != len(grad.shape):
        mapping = list(grad.dims_mapping)
        # a 0-D x reduces [axis] unless asvector (nothing the valid rule ever inserts into)
        axes = (axis,) if not x.shape and not asvector else reduced_axes(len(x.shape), axis, bool(asvector))
        for a in axes:
            if not 0 <= a <= len(mapping):
                raise InvalidSpecError(f"out_grad: Paddle's grad rule inserts at axis {a}, outside out_grad's "
                                       f"{len(mapping)}-entry mapping (undefined behaviour): no answer to mirror",
                                       kind="invalid-spec:out_grad:insert-outside")
            mapping.insert(a, -1)
        x_attr = DistAttr.make(tuple(mapping), _NONE, grad.mesh)
    return SpmdResult.make(inputs=(x_attr, same, same), outputs=(x_attr,))


_RANK_MIRRORS = tuple(mirror_via("p_norm_grad", check, p_norm_grad_mirror_ranks,
                                 "out or out_grad of another rank, or out_grad's mapping of another length: "
                                 ":func:`p_norm_grad_mirror_ranks`.", __name__)
                      for check in ("invalid-spec:out:rank", "invalid-spec:out_grad:rank",
                                    "invalid-spec:out_grad:length"))


def p_norm_grad_mirror_out_grad(fn: RuleFn, *args: Any, **kwargs: Any) -> SpmdResult:
    """Grad, out_grad's mapping repeating a mesh dim or naming one the mesh lacks: the rule's checks
    run with a replicated stand-in of out_grad's shape, then the answer is built from out_grad's own
    mapping as the rule builds it (nothing looks its mesh dims up). A co-shard or a partial dim out of
    range (Paddle crashes building the attr) is refused."""
    grad = argument(fn, args, kwargs, "out_grad")
    if not isinstance(grad, DistTensorSpec) or grad.mesh is None or grad.coshard or any(
            not 0 <= p < grad.mesh.ndim for p in grad.partial_dims):
        raise InvalidSpecError("out_grad: a co-shard, or a partial dim outside the mesh, beside the malformed "
                               "mapping: no answer to mirror", kind="invalid-spec:out_grad")
    # the checks alone (the stand-in's answer carries its own mapping, not out_grad's)
    call_with(fn, args, kwargs, out_grad=DistTensorSpec(grad.shape, (-1,) * len(grad.shape), grad.mesh))
    x, axis, asvector = (argument(fn, args, kwargs, n) for n in ("x", "axis", "asvector"))
    same = DistAttr.make(grad.dims_mapping, _NONE, grad.mesh)
    x_attr = same
    if len(x.shape) != len(grad.shape):
        mapping = list(grad.dims_mapping)
        for a in reduced_axes(len(x.shape), axis, bool(asvector)):
            mapping.insert(a, -1)
        x_attr = DistAttr.make(tuple(mapping), _NONE, grad.mesh)
    return SpmdResult.make(inputs=(x_attr, same, same), outputs=(x_attr,))


@mirror("p_norm_grad", "invalid-spec:out_grad:missing")
def p_norm_grad_mirror_out_grad_missing(fn: RuleFn, *args: Any, **kwargs: Any) -> SpmdResult:
    """Grad, out_grad None: Paddle's rule reads its stand-in for None (rank 1, an empty mapping, no
    mesh) as out_grad, so every attr it answers is a copy of that one, without a mesh: out_grad's and
    out's the empty mapping, x's and x_grad's the same where x has rank 1, else the empty mapping with
    -1 inserted at each reduced axis, ascending (a 0-D x without asvector: at ``axis`` as given). An
    insertion outside the mapping writes outside the vector (undefined behaviour): refused. The
    other checks run with a replicated out_grad of the rank the rule wants on x's mesh."""
    x, axis, keepdims, asvector = (argument(fn, args, kwargs, n) for n in ("x", "axis", "keepdims", "asvector"))
    if not isinstance(x, DistTensorSpec) or x.mesh is None:
        raise InvalidSpecError("out_grad None beside an x that is no spec on a mesh: no answer to mirror",
                               kind="invalid-spec:out_grad:missing")
    want = (1,) * out_rank(len(x.shape), bool(keepdims), bool(asvector))
    call_with(fn, args, kwargs, out_grad=DistTensorSpec(want, (-1,) * len(want), x.mesh))  # the other checks
    mapping: list[int] = []
    if len(x.shape) != 1:  # the stand-in's rank
        axes = (axis,) if not x.shape and not asvector else reduced_axes(len(x.shape), axis, bool(asvector))
        for a in axes:
            if not 0 <= a <= len(mapping):
                raise InvalidSpecError(f"out_grad None: Paddle's grad rule inserts at axis {a} into its stand-in's "
                                       "empty mapping, outside the vector (undefined behaviour): no answer to mirror",
                                       kind="invalid-spec:out_grad:insert-outside")
            mapping.insert(a, -1)
    same = DistAttr.make((), _NONE, None)
    x_attr = DistAttr.make(tuple(mapping), _NONE, None)
    return SpmdResult.make(inputs=(x_attr, same, same), outputs=(x_attr,))


@mirror("p_norm_grad", "invalid-spec:x:missing")
def p_norm_grad_mirror_x_missing(fn: RuleFn, x: DistTensorSpec | None, out: DistTensorSpec | None,
                                 out_grad: DistTensorSpec, porder: float = 2.0, axis: int = -1,
                                 epsilon: float = 1e-12, keepdims: bool = False,
                                 asvector: bool = False) -> SpmdResult:
    """Grad, x None: Paddle's rule reads only the rank of its stand-in for None (1) and answers every
    attr as a copy of out_grad's (partial cleared, on out_grad's mesh; out is never read): x's and
    x_grad's with -1 inserted at the reduced axes of a rank-1 x (axis + 1 where negative; 0 with
    asvector) where out_grad's rank is not 1. An insertion outside out_grad's mapping writes outside
    the vector (undefined behaviour), a co-shard or a partial dim outside the mesh (Paddle crashes
    building the attr) is refused. The attributes' types are checked as the rule checks them."""
    check_attr_types((porder, axis, epsilon, keepdims, asvector))
    grad = out_grad
    if not isinstance(grad, DistTensorSpec) or grad.mesh is None or grad.coshard or any(
            not 0 <= p < grad.mesh.ndim for p in grad.partial_dims):
        raise InvalidSpecError("x None beside an out_grad that is no spec on a mesh, a co-shard or has a partial dim "
                               "outside its mesh: no answer to mirror", kind="invalid-spec:x:missing")
    mapping = list(grad.dims_mapping)
    if len(grad.shape) != 1:  # the stand-in's rank
        for a in reduced_axes(1, axis, bool(asvector)):
            if not 0 <= a <= len(mapping):
                raise InvalidSpecError(f"x None: Paddle's grad rule inserts at axis {a}, outside out_grad's "
                                       f"{len(mapping)}-entry mapping (undefined behaviour): no answer to mirror",
                                       kind="invalid-spec:out_grad:insert-outside")
            mapping.insert(a, -1)
    same = DistAttr.make(grad.dims_mapping, _NONE, grad.mesh)
    x_attr = DistAttr.make(tuple(mapping), _NONE, grad.mesh)
    return SpmdResult.make(inputs=(x_attr, same, same), outputs=(x_attr,))


_OUT_GRAD_MIRRORS = tuple(mirror_via("p_norm_grad", f"invalid-spec:out_grad:{problem}", p_norm_grad_mirror_out_grad,
                                     "out_grad's malformed mapping answered: :func:`p_norm_grad_mirror_out_grad`.",
                                     __name__)
                          for problem in ("duplicate", "mesh-dim"))


#: The mirror a stand-in's call hands a second refusal to, by (rule key, kind).
_THEN: dict[tuple[str, str], Any] = {
    ("p_norm_reverse", "invalid-spec:out:rank"): p_norm_reverse_mirror_out_rank,
    ("p_norm_grad", "invalid-spec:out:rank"): p_norm_grad_mirror_ranks,
}


@mirror("p_norm_reverse", "invalid-spec:out:mixed-mesh")
def p_norm_reverse_mirror_mixed_mesh(fn: RuleFn, x: DistTensorSpec, out: DistTensorSpec, porder: float = 2.0,
                                     axis: int = -1, epsilon: float = 1e-12, keepdims: bool = False,
                                     asvector: bool = False) -> SpmdResult:
    """Reverse, out on a mesh of other dims than x's: Paddle copies out's mesh dims into x's mapping
    without looking them up on x's mesh, so x is answered on its own mesh with a mapping naming mesh
    dims it may lack. The rule runs with x (whose mapping it never reads) replicated on out's mesh;
    x's mesh is put back on its answer."""
    if not isinstance(x, DistTensorSpec) or x.mesh is None:
        raise InvalidSpecError("x is no spec on a mesh: no answer to mirror", kind="invalid-spec:out:mixed-mesh")
    result = fn(DistTensorSpec(x.shape, (-1,) * len(x.shape), out.mesh), out, porder, axis, epsilon, keepdims,
                asvector)
    answered = result.inputs[0]
    return SpmdResult.make(inputs=(DistAttr.make(answered.dims_mapping, _NONE, x.mesh),),
                           outputs=tuple(result.outputs))


def _grad_stand_in(fn: RuleFn, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> SpmdResult:
    """Grad, x without a mesh or out None: the rule reads neither's attr (x's shape only), so it runs
    with a replicated stand-in on out_grad's mesh (x of its own shape, out of the rank the rule
    expects)."""
    x, grad, keepdims, asvector = (argument(fn, args, kwargs, n) for n in ("x", "out_grad", "keepdims", "asvector"))
    if not isinstance(x, DistTensorSpec) or not isinstance(grad, DistTensorSpec) or grad.mesh is None:
        raise InvalidSpecError(f"{name}: x or out_grad is no spec, or out_grad has no mesh: no answer to mirror",
                               kind=f"invalid-spec:{name}")
    shape = x.shape if name == "x" else (1,) * out_rank(len(x.shape), bool(keepdims), bool(asvector))
    return cast(SpmdResult, call_with(fn, args, kwargs, **{name: DistTensorSpec(shape, (-1,) * len(shape),
                                                                                  grad.mesh)}))


_GRAD_STAND_INS = (
    mirror_via("p_norm_grad", "invalid-spec:x:mesh", lambda fn, *a, **k: _grad_stand_in(fn, "x", a, k),
               "x without a mesh: its mesh is never read; :func:`_grad_stand_in`.", __name__),
    mirror_via("p_norm_grad", "invalid-spec:out:missing", lambda fn, *a, **k: _grad_stand_in(fn, "out", a, k),
               "out None: out is never read; :func:`_grad_stand_in`.", __name__),
)


@mirror("p_norm_reverse", "invalid-spec:x:mesh")
def p_norm_reverse_mirror_x_mesh(fn: RuleFn, x: DistTensorSpec | None, out: DistTensorSpec, porder: float = 2.0,
                                 axis: int = -1, epsilon: float = 1e-12, keepdims: bool = False,
                                 asvector: bool = False) -> SpmdResult:
    """Reverse, x without a mesh (or None: Paddle's stand-in for None is a rank-1 tensor without a
    mesh): the rule reads x's shape only and answers x as a copy of x's attr with the mapping it
    infers from out, so x's answer carries no mesh. The rule runs with x replicated on out's mesh;
    the mesh is taken off x's answer. A second refusal of that run (out of another rank than the
    stand-in implies) goes to its own mirror (``_THEN``), as Paddle reads out against x's rank."""
    if not isinstance(out, DistTensorSpec) or out.mesh is None:
        raise InvalidSpecError("out is no spec on a mesh: no answer to mirror", kind="invalid-spec:x:mesh")
    shape = x.shape if isinstance(x, DistTensorSpec) else (1,)  # Paddle's stand-in for None has rank 1
    args = (DistTensorSpec(shape, (-1,) * len(shape), out.mesh), out, porder, axis, epsilon, keepdims, asvector)
    try:
        result = fn(*args)
    except InvalidSpecError as exc:
        then = _THEN.get((getattr(fn, "rule_key", ""), exc.kind))
        if then is None:
            raise
        result = then(fn, *args)
    return SpmdResult.make(inputs=(DistAttr.make(result.inputs[0].dims_mapping, _NONE, None),),
                           outputs=tuple(result.outputs))


_X_MISSING = mirror_via("p_norm_reverse", "invalid-spec:x:missing", p_norm_reverse_mirror_x_mesh,
                        "x None, read as Paddle's stand-in: :func:`p_norm_reverse_mirror_x_mesh`.", __name__)
