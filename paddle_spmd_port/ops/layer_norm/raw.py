"""Paddle's layer_norm rules on the raw inputs the strict port refuses: the ``mirror`` policy's
answers for the layer_norm and fast_ln families (:mod:`..kit.strictness`).

Each function walks the steps of Paddle 3.3.1's rule (layer_norm.cc: ``LayerNormInferSpmd``,
``LayerNormInferSpmdReverse``, ``LayerNormGradInferSpmd``; fast_ln's call them) on the inputs as
given: a mapping of any length and any mesh dims, tensors of any rank, meshes that differ, a
required tensor left None read as Paddle's stand-in (shape [0], empty mapping, no mesh). What the
steps do with such inputs, read from the rule's source and probed on the native routes:

* Nothing in these rules looks a mesh dim up in a mesh: the mappings are copied, merged and read
  back as they are, and the answer keeps each attr's own mesh (or none). Only the grad's partial
  status is set on scale's and bias's attrs, which crashes Paddle (SIGSEGV) for a mesh dim their
  mesh lacks, and raises for one listed twice (:func:`..kit.raw_mapping.remapped`).
* The notations are built from x's rank and begin_norm_axis, not from the tensors read against
  them: a mapping merges entry by entry under its notation's letters (:func:`..kit.raw_mapping.merge_raw_tensors`:
  one entry more merges under the empty letter, two more raise), and a letter no mapping reached
  is left out of the answer (it is shorter than the notation).
* The forward and the grad overwrite x's (and out_grad's) entries from begin_norm_axis on: a mapping
  shorter than that is written past its end (a crash, or an answer that differs by run). The
  forward and the reverse write the notation's letters into a string of x's rank: a begin_norm_axis
  beyond it writes past that string's end. The grad reads x's answered mapping up to
  begin_norm_axis for the partial status: an answer shorter than that is read past its end. Each is
  refused as ``unset-memory`` (declared ``undefined``: no answer to agree with).
* x of rank 0: the forward and the reverse read one character before their empty notation, for a
  log line only; the answer does not depend on it.

Inputs Paddle cannot build into an attr are refused before any step (a partial dim outside a
spec's mesh: SIGSEGV; a mesh dim both sharding and partial: Paddle raises), as is a co-shard beside
a malformed input (not modelled).
"""

from __future__ import annotations

from typing import Any

from ...errors import InvalidSpecError, PaddleInvalidArgument
from ...notation import ALPHABET, FORCED_REPLICATED
from ...types import DistAttr, DistTensorSpec, SpmdResult
from ..kit.raw_mapping import (
    merge_raw_tensors,
    read_back_raw,
    remapped,
    require_buildable_raw,
    unset_memory,
)
from ..kit.tensor import RuleInput, as_input, check_attrs, require_ndim
from .checks import check_grad_ranks

_NONE: frozenset[int] = frozenset()


def raw_inputs(named: tuple[tuple[str, DistTensorSpec | None], ...]) -> tuple[RuleInput, ...]:
    """Each input as Paddle's rule reads it (None: the stand-in, for a required tensor too), after
    refusing what Paddle cannot build or the port does not model."""
    require_buildable_raw(named)
    for name, spec in named:
        if isinstance(spec, DistTensorSpec) and spec.mesh is None and spec.partial_dims:
            raise InvalidSpecError(f"{name}: partial dims without a mesh: Paddle crashes (SIGSEGV) building the "
                                   "attr; no answer to mirror", kind=f"invalid-spec:{name}:partial-range")
        if isinstance(spec, DistTensorSpec) and spec.coshard:
            raise InvalidSpecError(f"{name}: a co-shard beside a malformed input is not modelled; no answer to "
                                   "mirror", kind=f"invalid-spec:{name}:coshard")
    return tuple(as_input(spec, name, optional=True) for name, spec in named)


def _copy(t: RuleInput, mapping: tuple[int, ...], keep_partial: bool) -> DistAttr:
    """``t``'s attr with ``mapping``: a plain copy (partial kept) or ``CopyTensorDistAttrForOutput``."""
    return DistAttr.make(mapping, t.partial_dims if keep_partial else _NONE, t.mesh)


def _replicated(t: RuleInput) -> DistAttr:
    """``GetReplicatedDistAttr``: -1 for each entry of the *given* mapping, partial cleared."""
    return DistAttr.make((-1,) * len(t.dims_mapping), _NONE, t.mesh)


def _notations(tx: RuleInput, begin: int) -> tuple[str, str]:
    """The forward's and the reverse's (x, mean) notations: ``begin`` letters then ``'1'`` up to x's
    rank. A ``begin`` beyond x's rank writes letters past the string's end; past the alphabet's
    terminator Paddle reads past its end."""
    if begin < 0:  # std::string of a negative (unsigned: huge) length
        raise PaddleInvalidArgument("basic_string::_M_create", kind="native-raises:begin_norm_axis")
    if begin > tx.ndim:
        unset_memory(f"begin_norm_axis={begin} beyond x's rank {tx.ndim}: Paddle writes the notation's letters past "
                     "the end of a string of x's rank", "begin_norm_axis")
    if begin > len(ALPHABET) + 1:
        unset_memory(f"begin_norm_axis={begin}: Paddle reads letters past the end of its alphabet", "begin_norm_axis")
    lead = (ALPHABET + "\0")[:begin]  # (index 18 is the alphabet string's terminator)
    return lead + FORCED_REPLICATED * (tx.ndim - begin), lead


def _filled(t: RuleInput, begin: int, owner: str) -> tuple[int, ...]:
    """``t``'s mapping with the entries from ``begin`` on set to -1; one shorter than ``begin`` is
    written past its end."""
    if begin > len(t.dims_mapping):
        unset_memory(f"{owner}: dims_mapping of {len(t.dims_mapping)} entries, filled with -1 from axis {begin}: "
                     "Paddle writes past its end", owner)
    return tuple(t.dims_mapping[:begin]) + (-1,) * (len(t.dims_mapping) - begin)


def forward(x: Any, scale: Any, bias: Any, epsilon: Any, begin: Any, check_begin: bool = True) -> SpmdResult:
    """``LayerNormInferSpmd`` on raw inputs (``check_begin``: begin_norm_axis is an argument, so its
    type is checked; fast_ln's comes from x's rank)."""
    check_attrs(("epsilon", epsilon), *((("begin_norm_axis", begin),) if check_begin else ()))
    tx, ts, tb = raw_inputs((("x", x), ("scale", scale), ("bias", bias)))
    require_ndim(ts, 1, "layer_norm")
    require_ndim(tb, 1, "layer_norm")
    x_axes, mean_axes = _notations(tx, begin)
    filled = _filled(tx, begin, "x")
    merged = merge_raw_tensors((("x", x_axes, filled),))
    stat = read_back_raw(mean_axes, merged)
    return SpmdResult.make(
        inputs=(_copy(tx, filled, False), _copy(ts, (-1,), False), _copy(tb, (-1,), False)),
        outputs=(_copy(tx, read_back_raw(x_axes, merged), False), _copy(tx, stat, False), _copy(tx, stat, False)))


def _rank_vs_mapping(t: RuleInput, label: str) -> None:
    if t.ndim != len(t.dims_mapping):
        raise PaddleInvalidArgument(
            f"The Tensor {label}'s rank [{t.ndim}] and {label}'s dims_mapping size [{len(t.dims_mapping)}] "
            "are not matched.", kind=f"rank-vs-mapping:{t.name}")


def reverse(x: Any, scale: Any, bias: Any, out: Any, mean: Any, variance: Any, epsilon: Any,
            begin: Any) -> SpmdResult:
    """``LayerNormInferSpmdReverse`` on raw inputs: x, scale and bias give their attrs only (partial
    kept, mesh kept), out, mean and variance merge as given (partial kept)."""
    check_attrs(("epsilon", epsilon), ("begin_norm_axis", begin))
    tx, ts, tb, to, tm, tv = raw_inputs((("x", x), ("scale", scale), ("bias", bias), ("out", out), ("mean", mean),
                                         ("variance", variance)))
    for t, label in ((to, "Out"), (tm, "Mean"), (tv, "Variance")):
        _rank_vs_mapping(t, label)
    x_axes, mean_axes = _notations(tx, begin)
    merged = merge_raw_tensors((("out", x_axes, to.dims_mapping), ("mean", mean_axes, tm.dims_mapping),
                                ("variance", mean_axes, tv.dims_mapping)))
    x_mapping, stat = read_back_raw(x_axes, merged), read_back_raw(mean_axes, merged)
    return SpmdResult.make(
        inputs=(_copy(tx, x_mapping, True), _copy(ts, (-1,), True), _copy(tb, (-1,), True)),
        outputs=(_copy(to, x_mapping, True), _copy(tm, stat, True), _copy(tv, stat, True)))


#: The grad's inputs as layer_norm_grad names them, and as fast_ln_grad does.
GRAD_NAMES = ("x", "scale", "bias", "mean", "variance", "out_grad")


def grad(x: Any, scale: Any, bias: Any, mean: Any, variance: Any, out_grad: Any, epsilon: Any, begin: Any,
         names: tuple[str, ...] = GRAD_NAMES, check_begin: bool = True) -> SpmdResult:
    """``LayerNormGradInferSpmd`` on raw inputs (``names``: the inputs' names in refusals)."""
    check_attrs(("epsilon", epsilon), *((("begin_norm_axis", begin),) if check_begin else ()))
    tx, ts, tb, tm, tv, tg = raw_inputs(tuple(zip(names, (x, scale, bias, mean, variance, out_grad), strict=True)))
    check_grad_ranks(tx, ts, tb, tm, tv, tg, begin)
    if begin > 0:
        x_axes = ALPHABET[:tx.ndim]
        stat_axes = x_axes[:begin]
        x_filled, og_filled = _filled(tx, begin, names[0]), _filled(tg, begin, names[5])
        merged = merge_raw_tensors(((names[0], x_axes, x_filled), (names[3], stat_axes, tm.dims_mapping),
                                    (names[4], stat_axes, tv.dims_mapping), (names[5], x_axes, og_filled)))
        x_mapping, stat = read_back_raw(x_axes, merged), read_back_raw(stat_axes, merged)
        x_attr, og_attr = _copy(tx, x_mapping, True), _copy(tg, x_mapping, False)
        mean_attr, var_attr = _copy(tm, stat, True), _copy(tv, stat, True)
    else:
        x_mapping = ()
        x_attr, mean_attr, var_attr, og_attr = _replicated(tx), _replicated(tm), _replicated(tv), _replicated(tg)
    if len(x_mapping) < begin:
        unset_memory(f"x's answered dims_mapping has {len(x_mapping)} entries (letters no mapping reached are left "
                     f"out); Paddle reads it up to begin_norm_axis={begin}, past its end", names[0])
    partial = [m for m in x_mapping[:begin] if m != -1]
    grads = tuple(_replicated(t) if t.mesh is None else remapped(_replicated(t), (-1,) * len(t.dims_mapping), partial,
                                                                  t.name)
                  for t in (ts, tb))
    return SpmdResult.make(inputs=(x_attr, _replicated(ts), _replicated(tb), mean_attr, var_attr, og_attr),
                           outputs=(og_attr, *grads))
