"""The missing-sharding search: is a rule's answer the cheapest sound one, and what does it cost?

For one case the answer space searched is, per given input: its dims_mapping kept, or with the
mesh dims of any subset of its sharded axes dropped (all of them: replicated; a co-shard may also
keep a leading part of its members), times its partial dims kept or dropped (any subset); the
candidates are every combination over the inputs, in that order (the given layout first). A
candidate keeping an input Partial must also hold when that input is split as Paddle's R->P splits
it (:func:`_holds_on_paddles_split`). Each candidate's inputs are laid out on the virtual mesh and the
op's kernel runs (:mod:`.simulator`); for every output the kernel returns, the cheapest claim under
which the values the ranks hold are right is taken (Partial only where the op leaves partial sums,
priced by the all_reduce it still needs). A candidate is sound when every input lays out, the
kernel accepts them and every output has a right claim; the cheapest sound candidate is confirmed
by :func:`.simulator.simulate` (the oracle's own verdict) before it is reported.

Every answer, the rule's and the candidates', is priced with one cost model
(:mod:`paddle_spmd_port.reshard`): the bytes per rank of resharding each given input to the
answer's input attr, by Paddle's own choice of reshard functions, plus what its outputs need: a
forward rule's partial outputs reduced (P->R), a reverse rule's outputs resharded to the
distributions the case asks for. float32 bytes.

A case is classed, per profile::

    cheaper     the rule's answer is sound and a sound candidate costs strictly less
    as-cheap    the rule's answer is sound and no candidate costs less
    missing     the rule has no sound answer (it raises, or its answer is not sound) while a sound
                candidate exists: "possibly missing" in PyTorch's validator's sense
    none-sound  neither the rule nor any candidate is sound
    skipped     not searched: more candidates than the bound, mixed meshes (a cross-mesh reshard,
                not modelled), or a given input that does not fit its mesh; counted, never silent
    op-rejects  the op rejects the case on one device
    no-answer   the native profile only: Paddle gave no answer in this run (a worker timed out)

The search is bounded by the number of cases per rule (the command's ``--sample``/``--max-cases``,
a sample of :data:`DEFAULT_SAMPLE` by default) and by :data:`MAX_CANDIDATES` candidates per case.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..case import Case
from ..errors import InvalidSpecError
from ..notation import ShardError, local_shape
from ..ops.kit.grid import placements
from ..reshard import Step, plan, settle, total_bytes
from ..types import DistAttr, DistTensorSpec, SpmdResult, mesh_dims_of
from .kernels import MODELS, KernelRejects
from .native import NO_ANSWER
from .simulator import (
    SOUND,
    VirtualMesh,
    _check,
    _layout,
    _Run,
    case_data,
    kernel_attrs,
    local_slice,
    op_rejects,
    simulate,
)

DEFAULT_SAMPLE = 300
"""Cases per rule when the command is given neither ``--sample`` nor ``--max-cases``."""
MAX_CANDIDATES = 256
"""Candidates per case; a case with more is skipped (and counted)."""
#: why a case is skipped (a report groups by these; the reason adds its detail after ": ")
SKIP_MESHES = "inputs on different meshes (a cross-mesh reshard, not modelled)"
SKIP_INVALID = "a given input does not fit its mesh"
SKIP_ASKED = "an asked output has another rank than the op's"
SKIP_BOUND = "more candidates than the bound"
CLASSES = ("cheaper", "missing", "as-cheap", "none-sound", "skipped", "op-rejects", NO_ANSWER)
ITEMSIZE = 4


@dataclass(frozen=True)
class Priced:
    """An answer with its price: per tensor, the reshard steps (inputs: given -> wanted; outputs:
    what they still need)."""

    answer: SpmdResult
    steps: tuple[tuple[str, tuple[Step, ...]], ...]

    @property
    def bytes(self) -> int:
        return sum(total_bytes(s) for _, s in self.steps)

    def breakdown(self) -> str:
        parts = [f"{name}: " + " + ".join(f"{s.function.removesuffix('ReshardFunction')} "
                                          f"{s.collective} d{s.mesh_dim} {s.bytes} B" for s in steps if s.bytes)
                 for name, steps in self.steps if total_bytes(steps)]
        return "; ".join(parts) or "no communication"

    def to_json(self) -> dict[str, Any]:
        return {"answer": str(self.answer), "bytes": self.bytes,
                "steps": {name: [s.to_json() for s in steps] for name, steps in self.steps if steps}}


@dataclass(frozen=True)
class Space:
    """One case searched (independent of the profile)."""

    case: Case
    status: str
    """``searched``, ``skipped`` or ``op-rejects``."""
    candidates: int = 0
    sound: int = 0
    cheapest: Priced | None = None
    reason: str = ""
    unconfirmed: int = 0
    """Candidates the fast check found sound that :func:`simulate` did not (0 unless the two disagree)."""


@dataclass(frozen=True)
class Found:
    """One case under one profile."""

    space: Space
    profile: str
    klass: str
    rule: Priced | None = None
    rule_label: str = ""
    error: str = ""

    @property
    def saving(self) -> int:
        if self.klass != "cheaper" or self.rule is None or self.space.cheapest is None:
            return 0
        return self.rule.bytes - self.space.cheapest.bytes


# --------------------------------------------------------------------------- pricing
def _given(case: Case) -> dict[str, DistTensorSpec]:
    return {n: s for n, s in case.named_inputs().items() if s is not None}


def price(case: Case, answer: SpmdResult) -> Priced:
    """``answer`` priced for ``case``; ``ValueError`` when an attr does not fit its tensor or the mesh."""
    spec, given = case.spec, _given(case)
    reference = case_data(case).reference or {}
    steps: list[tuple[str, tuple[Step, ...]]] = []
    for name, attr in zip(spec.result_inputs, answer.inputs, strict=True):
        src = given.get(name)
        if src is not None:
            steps.append((name, plan(src.shape, src, attr, case.mesh, ITEMSIZE)))
    for name, attr in zip(spec.result_outputs, answer.outputs, strict=True):
        value = reference.get(name)
        if value is None:  # not produced on CPU: nothing to move
            continue
        wanted = given.get(name)  # a reverse rule's output: it must reach the asked distribution
        steps.append((name, plan(value.shape, attr, wanted, case.mesh, ITEMSIZE) if wanted is not None
                      else settle(value.shape, attr, case.mesh, ITEMSIZE)))
    return Priced(answer, tuple(steps))


# --------------------------------------------------------------------------- the answer space
def _entry(members: tuple[int, ...]) -> Any:
    if not members:
        return -1
    return members[0] if len(members) == 1 else members


def input_options(spec: DistTensorSpec) -> list[DistAttr]:
    """The attrs searched for one given input, the given one first: each sharded axis kept or
    dropped (a co-shard also cut back to any leading part of its members: the outer cuts of its
    nested cut), times its partial dims each kept or dropped."""
    per_axis = [[_entry(mesh_dims_of(e)[:k]) for k in range(len(mesh_dims_of(e)), -1, -1)]
                for e in spec.dims_mapping]
    partial = sorted(spec.partial_dims)
    out = []
    for dm in itertools.product(*per_axis):
        for gone in itertools.chain.from_iterable(itertools.combinations(partial, k) for k in range(len(partial) + 1)):
            out.append(DistAttr.make(tuple(dm), frozenset(partial) - frozenset(gone), spec.mesh))
    return out


def space_size(case: Case) -> int:
    return math.prod(len(input_options(s)) for s in _given(case).values() if s is not None)


def _claims(rank: int, mesh: Any, given: DistTensorSpec | None) -> list[DistAttr]:
    """An output's claims in the order tried: a reverse rule's asked distribution first (it costs
    nothing), then every placement, those without partial dims before those with."""
    out = sorted((DistAttr.make(dm, partial, mesh) for dm, partial in placements(rank, mesh.ndim)),
                 key=lambda a: len(a.partial_dims))
    if given is not None:
        asked = DistAttr.make(tuple(given.dims_mapping), given.partial_dims, mesh)
        out = [asked] + [a for a in out if a != asked]
    return out


def _cheapest_claim(run: _Run, outs: list[dict[str, np.ndarray | None]], name: str,
                    given: DistTensorSpec | None) -> DistAttr | None:
    reference = run.data.reference
    assert reference is not None
    value = reference[name]
    assert value is not None
    locs = [o.get(name) for o in outs]
    if any(v is None for v in locs):
        return None
    shapes = [v.shape for v in locs if v is not None]
    right: list[tuple[int, DistAttr]] = []
    mesh_shape = run.mesh.shape
    for attr in _claims(value.ndim, run.case.mesh, given):
        try:
            if any(local_shape(value.shape, attr.dims_mapping, c, mesh_shape) != shapes[r]
                   for r, c in enumerate(run.mesh.coords)):
                continue
        except ShardError:
            continue
        probe = _Run(run.case, run.model, run.mesh, run.attrs, run.data, run.in_attrs, {**run.out_attrs, name: attr},
                     run.sync_group)
        if _check(probe, outs, lambda n, _r: reference[n], names=(name,)):  # type: ignore[arg-type,return-value]
            continue
        cost = total_bytes(plan(value.shape, attr, given, run.case.mesh, ITEMSIZE) if given is not None
                           else settle(value.shape, attr, run.case.mesh, ITEMSIZE))
        if cost == 0:
            return attr
        right.append((cost, attr))
    return min(right, key=lambda r: r[0])[1] if right else None


def _holds_on_paddles_split(run: _Run, claims: dict[str, DistAttr]) -> bool:
    """The candidate's claims hold again when each Partial input is split as Paddle's R->P splits
    it: the whole value on the first rank of each partial group, zeros on the others. Random
    addends alone would pass a kernel that is not linear but reads the same from every nonzero
    addend (a count of nonzeros: the oracle's data has no zeros)."""
    mesh = run.mesh
    per_rank: list[dict[str, np.ndarray | None]] = [{} for _ in range(mesh.size)]
    for name in run.model.inputs:
        value = run.data.inputs[name]
        for r, coords in enumerate(mesh.coords):
            if value is None:
                per_rank[r][name] = None
                continue
            attr = run.in_attrs[name]
            first = all(coords[p] == 0 for p in attr.partial_dims)
            per_rank[r][name] = local_slice(value if first else np.zeros_like(value), attr.dims_mapping, coords,
                                            mesh.shape)
    with np.errstate(all="ignore"):
        try:
            outs = run.model.run(per_rank, run.attrs, run.groups())
        except KernelRejects:
            return False
        probe = _Run(run.case, run.model, run.mesh, run.attrs, run.data, run.in_attrs, claims, run.sync_group)
        reference = run.data.reference
        assert reference is not None
        names = [n for n in claims if claims[n].mesh is not None]
        return not _check(probe, outs, lambda n, _r: reference[n], names=names)  # type: ignore[arg-type,return-value]


def sound(case: Case, answer: SpmdResult, sync_group: str = "batch") -> bool:
    """The search's test of one whole answer: the oracle's verdict is sound and, where the answer
    keeps an input Partial, its claims hold on Paddle's own split too."""
    if simulate(case, answer, sync_group=sync_group).label != SOUND:
        return False
    spec = case.spec
    in_attrs = dict(zip(spec.result_inputs, answer.inputs, strict=True))
    given = _given(case)
    if not any(in_attrs[n].partial_dims for n in given if n in in_attrs):
        return True
    data = case_data(case)
    run = _Run(case, MODELS[case.rule], VirtualMesh(tuple(case.mesh.shape)), kernel_attrs(case), data, in_attrs,
               {}, sync_group)
    claims = {n: a for n, a in zip(spec.result_outputs, answer.outputs, strict=True)
              if data.reference is not None and data.reference.get(n) is not None}
    return _holds_on_paddles_split(run, claims)


def _skip_reason(case: Case, max_candidates: int) -> str:
    given = _given(case)
    meshes = {s.mesh for s in given.values()}
    if len(meshes) > 1 or any(m != case.mesh for m in meshes):
        return f"{SKIP_MESHES}: {' '.join(sorted(set(map(str, meshes))))}"
    for name, s in given.items():
        try:
            s.check(name)
        except InvalidSpecError:
            return f"{SKIP_INVALID}: {name} {s}"
    reference = case_data(case).reference or {}
    for name in case.spec.result_outputs:
        asked, value = given.get(name), reference.get(name)
        if asked is not None and value is not None and len(asked.shape) != value.ndim:
            return f"{SKIP_ASKED}: {name} {asked}, the op's of rank {value.ndim}"
    n = space_size(case)
    if n > max_candidates:
        return f"{SKIP_BOUND}: {n} > {max_candidates}"
    return ""


def _candidates(case: Case) -> Iterator[dict[str, DistAttr]]:
    given = _given(case)
    names = [n for n in case.spec.result_inputs if n in given]
    for combo in itertools.product(*(input_options(given[n]) for n in names)):
        yield dict(zip(names, combo, strict=True))


def search_case(case: Case, max_candidates: int = MAX_CANDIDATES, sync_group: str = "batch") -> Space:
    """Search ``case``'s answer space (the module doc); profile-independent."""
    if op_rejects(case) is not None:
        return Space(case, "op-rejects")
    reason = _skip_reason(case, max_candidates)
    if reason:
        return Space(case, "skipped", reason=reason)
    spec, given = case.spec, _given(case)
    model = MODELS[case.rule]
    mesh = VirtualMesh(tuple(case.mesh.shape))
    attrs = kernel_attrs(case)
    data = case_data(case)
    assert data.reference is not None
    absent = {n: DistAttr.make((), frozenset(), None) for n in spec.result_inputs if n not in given}
    found: list[tuple[int, int, SpmdResult]] = []
    count = 0
    for chosen in _candidates(case):
        count += 1
        in_attrs = {**absent, **chosen}
        run = _Run(case, model, mesh, attrs, data, in_attrs, {}, sync_group)
        rng = np.random.default_rng(count)
        with np.errstate(all="ignore"):
            if _layout(run, rng):
                continue
            try:
                outs = model.run(run.per_rank, run.attrs, run.groups())
            except KernelRejects:
                continue
            claims: dict[str, DistAttr] = {}
            ok = True
            for name in spec.result_outputs:
                if data.reference.get(name) is None or name not in model.outputs:
                    claims[name] = DistAttr.make((), frozenset(), None)  # not produced on CPU: no claim
                    continue
                claim = _cheapest_claim(run, outs, name, given.get(name))
                if claim is None:
                    ok = False
                    break
                claims[name] = claim
        if not ok or (any(a.partial_dims for a in chosen.values()) and not _holds_on_paddles_split(run, claims)):
            continue
        answer = SpmdResult(tuple(in_attrs[n] for n in spec.result_inputs),
                            tuple(claims[n] for n in spec.result_outputs))
        found.append((price(case, answer).bytes, count, answer))
    found.sort(key=lambda f: (f[0], f[1]))
    unconfirmed = 0
    for _bytes, _order, answer in found:  # the oracle's own verdict, cheapest first
        if sound(case, answer, sync_group):
            return Space(case, "searched", count, len(found), price(case, answer), unconfirmed=unconfirmed)
        unconfirmed += 1
    return Space(case, "searched", count, len(found), None, unconfirmed=unconfirmed)


# --------------------------------------------------------------------------- one profile's answer
def classify(space: Space, profile: str, answer: SpmdResult | None, label: str, error: str = "") -> Found:
    """``space`` under one profile whose rule answered ``answer`` (None: raised) judged ``label``."""
    if space.status != "searched":
        return Found(space, profile, space.status, None, label, error)
    if label == NO_ANSWER:  # not run: neither the rule's answer nor its absence is known
        return Found(space, profile, NO_ANSWER, None, label, error)
    rule = None
    if answer is not None:
        try:
            rule = price(space.case, answer)
        except (ValueError, IndexError, KeyError, TypeError):
            rule = None  # an answer that does not fit its tensors: not sound either
    if label == SOUND and rule is not None:
        cheaper = space.cheapest is not None and space.cheapest.bytes < rule.bytes
        return Found(space, profile, "cheaper" if cheaper else "as-cheap", rule, label, error)
    return Found(space, profile, "missing" if space.cheapest is not None else "none-sound", rule, label, error)


@dataclass
class Tally:
    """Per rule and profile."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLASSES, 0))
    saved: int = 0
    rule_bytes: int = 0
    best_bytes: int = 0
    best: Found | None = None
    """The case with the largest saving."""

    def add(self, f: Found) -> None:
        self.counts[f.klass] += 1
        if f.klass in ("cheaper", "as-cheap") and f.rule is not None and f.space.cheapest is not None:
            self.rule_bytes += f.rule.bytes
            self.best_bytes += min(f.rule.bytes, f.space.cheapest.bytes)
        if f.klass == "cheaper":
            self.saved += f.saving
            if self.best is None or f.saving > self.best.saving:
                self.best = f

    @property
    def searched(self) -> int:
        return sum(self.counts[k] for k in ("cheaper", "missing", "as-cheap", "none-sound"))


def tallies(found: dict[str, dict[str, list[Found]]]) -> dict[str, dict[str, Tally]]:
    """profile -> rule -> tally."""
    out: dict[str, dict[str, Tally]] = {}
    for profile, rows in found.items():
        for rule, fs in rows.items():
            t = out.setdefault(profile, {}).setdefault(rule, Tally())
            for f in fs:
                t.add(f)
    return out


Answerer = Callable[[Case], tuple[SpmdResult | None, str]]

__all__ = ["CLASSES", "DEFAULT_SAMPLE", "MAX_CANDIDATES", "Found", "Priced", "Space", "Tally", "classify",
           "input_options", "price", "search_case", "sound", "space_size", "tallies"]
