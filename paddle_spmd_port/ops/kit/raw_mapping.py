"""What Paddle's batch_norm, group_norm and instance_norm rules answer for malformed inputs, for the
``mirror`` policy (:mod:`.strictness`).

Those rules read one mapping, x's: they copy it, overwrite the entries of the axes they replicate,
merge the copy alone in x's notation (``ShardingMergeForTensors``) and read the merged letters back
(``GetDimsMappingForAxes``). Every other input gives its shape and its mesh only. So an answer to a
malformed input is the answer to the same input with every mapping replicated (the port's own rule
answers that, after all of Paddle's checks), with the attrs that carry x's entries rewritten as
Paddle's steps make them from x's raw mapping (:func:`copy_overwriting`, :func:`merge_raw`,
:func:`read_back`).

What those steps do with a malformed x (Paddle 3.3.1; tests/test_strictness_mirror_bn.py holds the
mirrors to its rules on seeded samples):

* The merge walks the copy's entries, not the notation's letters: an entry at index ``rank`` merges
  under the empty letter (``substr(rank, 1)`` of the notation is empty) and reaches no answer; an
  entry past it makes Paddle raise (``IndexError: basic_string::substr``): not mirrored.
* A letter the copy has no entry for is never merged, and reading it back skips it: the answer has
  fewer entries than the rank.
* A copy shorter than an axis the rule overwrites is written past its end (heap corruption: SIGABRT,
  or an answer that differs by run): not mirrored.
* A mesh dim the mesh lacks is copied as it is (nothing looks it up), except into a partial status,
  which Paddle crashes on (SIGSEGV) when the attr's mesh lacks that dim.
* A mesh dim repeated in the copy stays on the first letter that claims it; the later ones merge to
  -1 (the copy itself, where the rule answers it, keeps the repeat); a grad's partial status listing
  it twice makes Paddle raise ("Trying to Set dim d as Partial which is already a Partial dim.").

A required tensor left None is Paddle's stand-in (:data:`MISSING`), read as any other input.

Inputs Paddle cannot even build are refused here too, before anything is answered: a partial dim
outside a spec's mesh (SIGSEGV), a mesh dim both sharding and partial (Paddle raises).

For rules that merge several tensors' mappings (layer_norm's: ops/layer_norm/raw.py), the end of
this module has the same steps over several mappings (:func:`merge_raw_tensors`,
:func:`read_back_raw`) and the refusal of inputs Paddle answers from memory it never set
(:func:`unset_memory`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn, cast

from ...errors import InvalidSpecError, PaddleInvalidArgument
from ...notation import ALPHABET, FORCED_REPLICATED, merge_axis
from ...types import DistAttr, DistTensorSpec, ProcessMesh, SpmdResult, mesh_dims_of
from .. import RULES

#: Paddle's stand-in for a tensor left None: shape [0] (rank 1), an empty mapping, no mesh. A rule
#: reads it as any other input (its rank passes a 1-D check; the attrs copied from it have no mesh).
MISSING = DistTensorSpec((0,), (), None)


def not_mirrored(why: str, kind: str) -> NoReturn:
    raise InvalidSpecError(f"{why}: no answer to mirror", kind=kind)


def require_paddle_profile(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """The answers here are Paddle's rule's: for another profile's function (one defined outside a
    family's ``rules.py``) the strict refusal stands, saying so."""
    if fn.__module__.endswith(".rules"):
        return
    try:
        fn(*args, **kwargs)
    except InvalidSpecError as exc:
        raise InvalidSpecError(f"{exc} (the mirror policy answers as Paddle's rule, the paddle profile, only)",
                               kind=exc.kind) from None
    not_mirrored("the mirror policy answers as Paddle's rule, the paddle profile, only", "invalid-spec:profile")


def require_buildable_raw(named: Iterable[tuple[str, Any]]) -> None:
    """Refuse what Paddle cannot build into a dist attr, whatever the rule: a partial dim outside the
    spec's mesh (SIGSEGV), a mesh dim both sharding an axis and partial (Paddle raises)."""
    for name, spec in named:
        if not isinstance(spec, DistTensorSpec) or spec.mesh is None:
            continue
        used = {m for entry in spec.dims_mapping for m in mesh_dims_of(entry)}
        for p in sorted(spec.partial_dims):
            if not 0 <= p < spec.mesh.ndim:
                not_mirrored(f"{name}: partial dim {p} is outside the mesh; Paddle crashes (SIGSEGV) building the "
                             "attr", f"invalid-spec:{name}:partial-range")
            if p in used:
                not_mirrored(f"{name}: mesh dim {p} both shards an axis and is partial; Paddle raises building "
                             "the attr", f"invalid-spec:{name}:partial-shard")


def replicated_stand_in(spec: Any) -> Any:
    """``spec`` with every axis replicated (its shape, mesh and partial dims kept); anything else as it
    is, for the rule's own checks to judge."""
    if isinstance(spec, DistTensorSpec) and spec.mesh is not None:
        return DistTensorSpec(spec.shape, (-1,) * len(spec.shape), spec.mesh, spec.partial_dims)
    return spec


def copy_overwriting(x: DistTensorSpec, replicated: Iterable[int]) -> list[int]:
    """x's raw mapping with the entries of the axes ``replicated`` set to -1, as the rules make their
    copy; refused where Paddle writes past its end (kind ``invalid-spec:x:length-short``: whatever it
    answers then is memory's content, declared ``undefined`` by each family that copies x) or its
    merge raises."""
    mapping = [cast(int, m) for m in x.dims_mapping]  # (a co-shard x never gets here: answer_raw)
    axes = tuple(replicated)
    rank = len(x.shape)
    if axes and max(axes) >= len(mapping):
        not_mirrored(f"x: dims_mapping of {len(mapping)} entries for rank {rank}; Paddle's rule writes axis "
                     f"{max(axes)} past its end (heap corruption: a crash, or an answer that differs by run)",
                     "invalid-spec:x:length-short")
    if len(mapping) > rank + 1:
        not_mirrored(f"x: dims_mapping of {len(mapping)} entries for rank {rank}; Paddle's merge raises "
                     f"IndexError (basic_string::substr) at entry {rank + 1}", "invalid-spec:x:length")
    for axis in axes:
        mapping[axis] = -1
    return mapping


def merge_raw(rank: int, mapping: Sequence[int]) -> dict[str, int]:
    """``ShardingMergeForTensors`` of one tensor of ``rank`` whose mapping is ``mapping`` (at most
    ``rank + 1`` entries: :func:`copy_overwriting`): letter -> mesh dim; the entry at index ``rank``
    merges under the empty letter; a mesh dim several letters claim stays with the first: the one-tensor
    case of :func:`merge_raw_tensors` (one tensor's letters are distinct, so nothing conflicts)."""
    return merge_raw_tensors((("x", ALPHABET[:rank], mapping),))


def read_back(letters: str, merged: dict[str, int]) -> tuple[int, ...]:
    """``GetDimsMappingForAxes``: each letter's merged dim; a letter never merged is skipped."""
    return tuple(merged[letter] for letter in letters if letter in merged)


def remapped(attr: DistAttr, mapping: Sequence[int], partial: Sequence[int] | None = None,
             owner: str = "x") -> DistAttr:
    """``attr`` (its mesh) with ``mapping`` and, given, the mesh dims ``partial`` in Paddle's order.
    Partial dims on an attr without a mesh, or that its mesh lacks, crash Paddle (SIGSEGV) and are
    refused (``owner``: the input whose mesh the attr has); then a dim listed twice makes Paddle raise,
    as its ``set_partial_status`` does (measured in that order: a repeated dim the mesh lacks crashes)."""
    if partial is None:
        return DistAttr.make(tuple(mapping), attr.partial_dims, attr.mesh)
    mesh: ProcessMesh | None = attr.mesh
    if partial and (mesh is None or any(not 0 <= d < mesh.ndim for d in partial)):
        where = f"{owner} has no mesh" if mesh is None else f"the mesh of {owner} ({mesh}) lacks some"
        not_mirrored(f"a grad partial on mesh dims {sorted(set(partial))}, {where}: Paddle crashes (SIGSEGV)",
                     f"invalid-spec:{owner}:partial-range")
    for i, dim in enumerate(partial):
        if dim in partial[:i]:
            raise PaddleInvalidArgument(f"Trying to Set dim {dim} as Partial which is already a Partial dim.",
                                        kind="partial:repeated")
    return DistAttr.make(tuple(mapping), frozenset(partial), mesh)


def answer_raw(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
               patch: Callable[[SpmdResult, dict[str, Any]], SpmdResult], **given: Any) -> SpmdResult:
    """The mirror's answer: ``fn`` (the strict rule) on the input with every mapping but x's
    replicated and the arguments ``given`` replaced (all of Paddle's checks, in its order, and the
    attrs x's mapping does not reach). A co-shard x is left as it is (it is valid: the malformed
    inputs are the others, whose mappings the rule never reads); any other x is replicated too, and
    ``patch(that answer, the raw arguments by name)`` rewrites the attrs that carry x's entries."""
    require_paddle_profile(fn, args, kwargs)
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    raw = dict(bound.arguments)
    spec = RULES[fn.rule_key]  # type: ignore[attr-defined]
    for name in spec.inputs:  # Paddle's stand-in for a required tensor left None
        if raw[name] is None and name not in spec.optional:
            raw[name] = MISSING
    require_buildable_raw(raw.items())
    x = raw["x"]
    keep_x = isinstance(x, DistTensorSpec) and x.coshard
    for name, value in raw.items():
        bound.arguments[name] = given.get(name, value if keep_x and name == "x" else replicated_stand_in(value))
    base = fn(*bound.args, **bound.kwargs)
    return base if keep_x else patch(base, raw)


def statistics_forward(copy_of: Callable[[DistTensorSpec], tuple[list[int], dict[str, int], str]]
                       ) -> Callable[..., SpmdResult]:
    """A normalization forward (inputs x, scale, bias; outputs y, mean, variance) on x's raw mapping:
    x answered with Paddle's copy (``copy_of`` gives it, its merge and x's letters), y read back from
    the merge, mean and variance from its first two letters; scale and bias as the strict rule
    answers them (the rules never read their mappings)."""

    def forward(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> SpmdResult:
        def patch(base: SpmdResult, raw: dict[str, Any]) -> SpmdResult:
            copy, merged, letters = copy_of(raw["x"])
            (xi, si, bi), (y, mean, var) = base.inputs, base.outputs
            stat = read_back(letters[:2], merged)
            return SpmdResult.make(inputs=(remapped(xi, copy), si, bi),
                                   outputs=(remapped(y, read_back(letters, merged)), remapped(mean, stat),
                                            remapped(var, stat)))

        return answer_raw(fn, args, kwargs, patch)

    return forward


def merge_raw_tensors(pairs: Sequence[tuple[str, str, Sequence[int]]]) -> dict[str, int]:
    """``ShardingMergeForTensors`` of several tensors' raw mappings, each ``(owner, notation,
    mapping)``, a mapping of any length: entry ``i`` merges under the notation's letter ``i``, the
    entry at index ``len(notation)`` under the empty letter (it reaches no answer), and one past that
    makes Paddle raise (``basic_string::substr``): refused naming the owner's length. Two mesh dims
    on one letter raise Paddle's conflict (:func:`~paddle_spmd_port.notation.merge_axis`), at the
    entry where Paddle's loop meets it; a mesh dim several letters claim stays with the first letter
    that claimed it (-1 on the others), as :func:`merge_raw` does for one tensor."""
    merged: dict[str, int] = {}
    claims: dict[int, str] = {}
    for owner, notation, mapping in pairs:
        for i, dim in enumerate(mapping):
            if i > len(notation):
                not_mirrored(f"{owner}: dims_mapping of {len(mapping)} entries read against the notation "
                             f"{notation!r}; Paddle's merge raises IndexError (basic_string::substr) at entry {i}",
                             f"invalid-spec:{owner}:length")
            letter = notation[i] if i < len(notation) else ""
            dim = merge_axis(letter, dim, merged[letter]) if letter in merged else dim
            merged[letter] = dim
            if dim != -1:
                claim = claims.setdefault(dim, letter)
                if letter not in claim:  # (C++ find: the empty letter is found in every claim)
                    claims[dim] = claim + letter
    for claim in claims.values():
        for letter in claim[1:]:
            merged[letter] = -1
    return merged


def read_back_raw(letters: str, merged: dict[str, int]) -> tuple[int, ...]:
    """``GetDimsMappingForAxes`` with the forced letter: ``'1'`` reads -1, any other letter its merged
    dim, a letter never merged is skipped (the answer is shorter than the notation)."""
    return tuple(-1 if letter == FORCED_REPLICATED else merged[letter] for letter in letters
                 if letter == FORCED_REPLICATED or letter in merged)


def unset_memory(why: str, owner: str) -> NoReturn:
    """Refuse an input on which Paddle's rule reads or writes memory it never set (past a vector's or
    a string's end): whatever it answers there is that memory's content. The kind
    (``invalid-spec:<owner>:unset-memory``) is declared ``undefined``, never mirrored."""
    raise InvalidSpecError(f"{why}: Paddle's rule reads or writes memory it never set there; no answer to mirror",
                           kind=f"invalid-spec:{owner}:unset-memory")
