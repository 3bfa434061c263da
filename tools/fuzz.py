#!/usr/bin/env python
"""API fuzz of every rule function, in every profile (hypothesis).

    python tools/fuzz.py --examples 100000 [--seed 0] [--show 10]

Each example is one call of one rule (``rule_function(key, profile)``, or through
``get_spmd_rule(name, profile).infer_forward/infer_backward``), drawn in one of three ways:

    valid+mutations   a valid call (every tensor on one mesh, shapes that fit, attributes in range:
                      x's rank, the data formats, the op's own attribute draws and every input's
                      shape are its family's, ops/<family>/grid.py's ``RANDOM`` and
                      ``input_shapes``), then 0-3 mutations: an argument replaced by a value of
                      another type (None, str, float, list, dict, a mesh, ...), a tensor moved to
                      another mesh (other shape, or the same shape with other process ids),
                      dims_mapping / partial dims / shape / mesh made invalid, an attribute out of
                      range, two tensors swapped
    random            every argument random: a random spec (any rank, any mapping, any mesh or
                      none) or a value of another type; attributes random or of another type
    lookup            ``get_spmd_rule`` / ``rule_function`` / ``contains_spmd_rule`` with random
                      names and profiles

Properties checked on every example (:func:`judge`):

1. the only exceptions that escape are the documented ones (:data:`DOCUMENTED`:
   ShardingConflictError, PaddleInvalidArgument, InvalidSpecError and its ArgumentTypeError,
   RuleNotFoundError and its UnknownKeyError);
2. an argument of the wrong type (or ``None`` for a required tensor) is an InvalidSpecError naming
   the *first* such argument in signature order (ArgumentTypeError for a wrong type), never an
   answer; every InvalidSpecError's ``kind`` and message name one of the call's arguments;
3. the same call again gives the same answer, or the same exception with the same message;
4. every answer is well formed: as many input and output attrs as the rule returns; each attr's
   dims_mapping and partial dims use only mesh dims of that attr's *own* mesh (all -1 and no
   partial on an attr without a mesh), no mesh dim twice, and a dims_mapping as long as the rank
   of the tensor the attr describes (its family's ``ANSWER_RANKS``, in the call's profile). A
   malformed answer a profile keeps on purpose (its module's ``KNOWN_MALFORMED``) is counted,
   not a violation.

The fuzz names no op: every fact it needs of one is its family's declaration (ops/kit/grid.py
lists them); a fact missing is an internal error (exit 4) before the first example.

Prints the counts of outcomes (answers, each exception type), per mode, and every property
violation found (the first ``--show`` with a repro); exits 1 if any property was violated. On
SIGINT/SIGTERM (exit 130/143, taken between examples) it prints the counts of the examples judged so
far under ``INTERRUPTED by``, and writes no ``--json`` (a part cut short is no part to merge).
``tests/test_fuzz_rules.py`` runs the same property on a few hundred examples.

Long runs in parts: ``--shard K/M`` draws the same examples as the whole run and judges every M-th
(examples K-1, K-1+M, ...); ``--json FILE`` writes the counts, and
``python tools/fuzz.py --merge FILE...`` adds the parts' counts up (the unsplit run's), refusing
parts of different runs or a part given twice (exit 2); a part missing, or parts that drew
different numbers of examples, is incomplete (exit 3), never a pass.
"""

from __future__ import annotations

import functools
import json
import math
import numbers
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from paddle_spmd_port.errors import (
    ArgumentTypeError,
    InvalidSpecError,
    PaddleInvalidArgument,
    RuleNotFoundError,
    ShardingConflictError,
)
from paddle_spmd_port.grid import placements as grid_placements
from paddle_spmd_port.ops import FAMILIES, RULES, family_part
from paddle_spmd_port.ops.kit.grid import GridPlan, KnownMalformed, RandomPlan, RankOf, default_plan
from paddle_spmd_port.ops.registry import NAMES, PROFILES
from paddle_spmd_port.parity.merge import read_tool_parts
from paddle_spmd_port.rules import contains_spmd_rule, get_spmd_rule, rule_function
from paddle_spmd_port.runctl.command import run_command
from paddle_spmd_port.runctl.exits import EXIT_INCOMPLETE, UsageError, error_text
from paddle_spmd_port.runctl.grammar import ArgumentParser, add_shard_argument, count
from paddle_spmd_port.runctl.paths import check_output_file
from paddle_spmd_port.runctl.signals import Interrupted, add_detail, signals_deferred, stopped_by
from paddle_spmd_port.types import DistAttr, DistTensorSpec, ProcessMesh, SpmdResult

DOCUMENTED: tuple[type[BaseException], ...] = (ShardingConflictError, PaddleInvalidArgument, InvalidSpecError,
                                               RuleNotFoundError)
"""The exception classes a rule function may raise (errors.py; subclasses included)."""

RULE_KEYS = tuple(RULES)
PROFILE_NAMES = tuple(PROFILES)
#: An attribute's kind, by the type of the default its family declares (the declaration, not the rules' checks).
_KIND_OF_DEFAULT: dict[type, str] = {bool: "bool", int: "int", float: "real", str: "str"}
#: rule key -> (registry name, "forward" | "backward")
REGISTRY_ROUTE = {fwd: (name, "forward") for name, (fwd, _, _) in NAMES.items()}
REGISTRY_ROUTE.update({bwd: (name, "backward") for name, (_, bwd, _) in NAMES.items() if bwd})
MESH_SHAPES = ((1,), (2,), (3,), (4,), (8,), (1, 1), (1, 2), (2, 1), (2, 2), (2, 3), (3, 2), (2, 4), (4, 2),
               (1, 1, 1), (2, 2, 2), (1, 2, 3))


class _Opaque:
    """A value of no type any argument takes."""

    def __repr__(self) -> str:
        return "<object>"


JUNK: tuple[Any, ...] = (None, "abc", "1", "", "NCHW", 1, 0, -1, 2, 1.5, 1e-5, math.nan, math.inf, True, False,
                         [8, 6], (8, 6), [], {}, {"x": 1}, b"x", 10 ** 20, _Opaque(), ProcessMesh((2,)),
                         DistAttr((-1,)), frozenset({0}), complex(1, 1))


# --------------------------------------------------------------------------- the families' facts
# The fuzz names no op: what it needs of a rule (how to draw a valid call, how its answer is formed)
# is its family's declaration, read here (ops/kit/grid.py lists the facts).
class RuleFacts(NamedTuple):
    """What the fuzz reads of one rule's family, from its grid plan (``GRID`` of ops/<family>/grid.py):
    ``input_shapes``, ``random`` (x ranks, data formats, attribute draws), ``free_size`` and
    ``answer_ranks``, overlaid per profile by ``profile_answer_ranks``, and ``known_malformed``."""

    input_shapes: Callable[[str, tuple[int, ...], dict[str, Any]], dict[str, tuple[int, ...]]]
    plan: RandomPlan
    free_size: tuple[str, ...]
    answer_ranks: dict[str, dict[str, RankOf]]
    """profile -> returned output -> how its rank follows from the call"""
    known: dict[str, tuple[KnownMalformed, ...]]
    """profile -> the malformed answers its rules give on purpose"""


def family_grid(family: str) -> GridPlan:
    """The family's grid plan (ops/<family>/grid.py's, else the kit's default, which gives no answer ranks)."""
    return family_part(family, GridPlan) or default_plan(FAMILIES[family])


def load_facts(rule: str) -> RuleFacts:
    """The facts of ``rule`` (uncached); a fact missing or naming what the rule lacks raises LookupError."""
    spec = RULES[rule]
    grid = family_grid(spec.op)
    outputs = set(spec.result_outputs)
    base = grid.answer_ranks.get(rule)
    if base is None or set(base) != outputs:
        raise LookupError(f"{rule}: ops/{spec.op}/grid.py's GRID.answer_ranks must give the rank of each returned "
                          f"output ({', '.join(spec.result_outputs)}); it gives {sorted(base or ())}")
    answer_ranks: dict[str, dict[str, RankOf]] = {}
    known: dict[str, tuple[KnownMalformed, ...]] = {}
    for profile in PROFILE_NAMES:
        overlay = grid.profile_answer_ranks.get(profile, {}).get(rule, {})
        if set(overlay) - outputs:
            raise LookupError(f"{rule}: profile {profile}'s answer ranks name {sorted(set(overlay) - outputs)}, "
                              "which the rule does not return")
        answer_ranks[profile] = {**base, **overlay}
        known[profile] = tuple(k for k in grid.known_malformed.get(profile, ()) if k.rule == rule)
        for k in known[profile]:
            if not set(k.when_none) <= outputs or not set(k.when_none.values()) <= spec.optional:
                raise LookupError(f"{rule}: profile {profile}'s known malformed answer {k.label!r} names outputs or "
                                  "optional inputs the rule lacks")
    for profile, ranks in answer_ranks.items():
        if bad := sorted(out for out, how in ranks.items() if isinstance(how, str) and how not in spec.inputs):
            raise LookupError(f"{rule}: profile {profile}: the ranks of {bad} follow an input the rule lacks")
    free = tuple(n for n in spec.inputs if n in grid.free_size)
    return RuleFacts(grid.input_shapes, grid.random, free, answer_ranks, known)


rule_facts = functools.cache(load_facts)


@functools.cache
def attr_kinds() -> dict[str, str]:
    """The specification of each attribute's Python type (``int``, ``real``, ``str``, ``bool``): its
    declared default's; an attribute declared with defaults of two kinds, or of another type, raises
    LookupError."""
    kinds: dict[str, str] = {}
    for rule, spec in RULES.items():
        for name, default in spec.attrs:
            kind = _KIND_OF_DEFAULT.get(type(default))
            if kind is None or kinds.setdefault(name, kind) != kind:
                raise LookupError(f"{rule}: attribute {name}'s default {default!r} gives it another kind than "
                                  f"{kinds.get(name, 'int, real, str or bool')}")
    return kinds


def check_facts() -> list[str]:
    """Every rule's facts loaded (what a run needs before its first example): the problems found."""
    problems = []
    for rule in RULES:
        try:
            load_facts(rule)
        except LookupError as exc:
            problems.append(str(exc))
    try:
        attr_kinds()
    except LookupError as exc:
        problems.append(str(exc))
    return problems


# --------------------------------------------------------------------------- calls
@dataclass
class Call:
    """One fuzzed call: ``tensors`` and ``attrs`` in signature order (values of any type)."""

    profile: Any
    rule: str
    via: str  # function | registry | lookup
    tensors: list[Any]
    attrs: list[tuple[str, Any]]
    kwargs: bool = False
    mode: str = "valid"
    mutations: list[str] = field(default_factory=list)
    lookup: tuple[str, Any, Any] | None = None  # (function, name, profile) for via == lookup

    @property
    def names(self) -> tuple[str, ...]:
        return RULES[self.rule].inputs

    def describe(self) -> str:
        if self.via == "lookup":
            fn, name, profile = self.lookup or ("", None, None)
            return f"{fn}({name!r}, {profile!r})"
        head = f"rule_function({self.rule!r}, {self.profile!r})" if self.via == "function" else \
            f"get_spmd_rule{REGISTRY_ROUTE[self.rule]!r} profile={self.profile!r}"
        args = [f"{n}={_show(v)}" for n, v in zip(self.names, self.tensors, strict=True)]
        args += [f"{n}={v!r}" for n, v in self.attrs]
        muts = f"  [mode {self.mode}; mutations: {', '.join(self.mutations) or 'none'}]"
        return f"{head}({', '.join(args)}){' (attrs by keyword)' if self.kwargs else ''}{muts}"

    def invoke(self) -> Any:
        if self.via == "lookup":
            fn, name, profile = self.lookup or ("", None, None)
            if fn == "get_spmd_rule":
                return get_spmd_rule(name, profile)
            if fn == "rule_function":
                return rule_function(name, profile)
            return contains_spmd_rule(name)
        if self.via == "function":
            fn = rule_function(self.rule, self.profile)
        else:
            name, direction = REGISTRY_ROUTE[self.rule]
            rule = get_spmd_rule(name, self.profile)
            fn = rule.infer_forward if direction == "forward" else rule.infer_backward
        if self.kwargs:
            return fn(*self.tensors, **dict(self.attrs))
        return fn(*self.tensors, *(v for _, v in self.attrs))


def _show(value: Any) -> str:
    if isinstance(value, DistTensorSpec):
        mesh = "no mesh" if value.mesh is None else f"mesh {value.mesh} ids {list(value.mesh.process_ids or ())}"
        return f"<{list(value.shape)} {list(value.dims_mapping)} P{sorted(value.partial_dims)} {mesh}>"
    return repr(value)


# --------------------------------------------------------------------------- strategies
# Plain functions of hypothesis's ``draw``; every draw is ``st.integers(lo, hi)``, which hypothesis
# caches (a strategy built from a fresh list is validated anew on each draw: 10x slower).
def _int(draw: Callable, lo: int, hi: int) -> int:
    if isinstance(draw, random.Random):  # --engine random
        return draw.randint(lo, hi)
    return draw(st.integers(lo, hi))


def _pick(draw: Callable, seq: Sequence[Any]) -> Any:
    return seq[_int(draw, 0, len(seq) - 1)]


def _ints(draw: Callable, n: int, lo: int, hi: int) -> tuple[int, ...]:
    """``n`` ints in lo..hi from one draw (its digits in base hi - lo + 1)."""
    base = hi - lo + 1
    code = _int(draw, 0, base ** n - 1)
    out = []
    for _ in range(n):
        code, digit = divmod(code, base)
        out.append(lo + digit)
    return tuple(out)


def draw_mesh(draw: Callable) -> ProcessMesh:
    """A mesh of :data:`MESH_SHAPES`, with default, reversed, shifted or permuted process ids."""
    shape = _pick(draw, MESH_SHAPES)
    size = math.prod(shape)
    ids_kind = _pick(draw, ("default", "default", "reversed", "shifted", "permuted"))
    ids: list[int] | None = None
    if ids_kind == "reversed":
        ids = list(range(size))[::-1]
    elif ids_kind == "shifted":
        ids = list(range(8, 8 + size))
    elif ids_kind == "permuted":
        pool = list(range(size))
        ids = [pool.pop(_int(draw, 0, len(pool) - 1)) for _ in range(size)]
    names = None if _int(draw, 0, 1) else tuple("xyz"[: len(shape)])
    return ProcessMesh(shape, ids, names)


def draw_placement(draw: Callable, rank: int, mesh_ndim: int) -> tuple[tuple[int, ...], frozenset[int]]:
    """A valid (dims_mapping, partial dims): no mesh dim twice, partial only on unused dims (one
    draw among the grid's enumeration, or all replicated)."""
    if _int(draw, 0, 3) == 0:
        return (-1,) * rank, frozenset()
    return _pick(draw, grid_placements(rank, mesh_ndim))


def draw_valid_spec(draw: Callable, shape: Sequence[int], mesh: ProcessMesh) -> DistTensorSpec:
    dm, partial = draw_placement(draw, len(shape), mesh.ndim)
    return DistTensorSpec(tuple(shape), dm, mesh, partial)


def draw_random_spec(draw: Callable) -> DistTensorSpec:
    """Any spec the constructor accepts: any rank, any ints as mapping and partial, any mesh or none."""
    rank = _int(draw, 0, 7)
    shape = _ints(draw, rank, 0, 9)
    mesh = draw_mesh(draw) if _int(draw, 0, 3) else None
    length = max(0, rank + _pick(draw, (0, 0, 0, -1, 1)))
    if mesh is None and _int(draw, 0, 1):
        length = 0
    dm = _ints(draw, length, -2, 4)
    partial = frozenset(_ints(draw, _int(draw, 0, 2), -1, 4))
    return DistTensorSpec(shape, dm, mesh, partial)


#: x's rank: uniform over the family's ``RANDOM.ranks``; a family taking six ranks or more (an op of
#: any rank) draws 2 and 3 twice as often, the ranks most calls have (as this fuzz always drew them).
WIDE_RANKS, FAVOURED_RANKS = 6, (2, 3)
#: Attribute values of a valid call, by attribute name (a family's own ``RANDOM.attr_draws`` come
#: first; data_format is the family's ``RANDOM.data_formats``; another bool a fair coin; the rest
#: keep their default). Some are out of what the op allows (epsilon 0, groups -1): the rules read
#: them unchecked, and must answer.
ATTR_POOLS: dict[str, Callable[[Callable, int], Any]] = {
    "epsilon": lambda draw, rank: _pick(draw, (1e-5, 1e-6, 1e-12, 0.1, 0, 1)),
    "momentum": lambda draw, rank: _pick(draw, (0.9, 0.99, 0.0, 1)),
    "begin_norm_axis": lambda draw, rank: _int(draw, 0, rank),
    "groups": lambda draw, rank: _pick(draw, (-1, 0, 1, 2, 3)),
}
#: Sizes of an input the op leaves free (its family's ``FREE_SIZE``).
FREE_SIZES = (0, 5)


def draw_rank(draw: Callable, ranks: tuple[int, int]) -> int:
    lo, hi = ranks
    if hi - lo + 1 < WIDE_RANKS:
        return _int(draw, lo, hi)
    return _pick(draw, tuple(r for r in range(lo, hi + 1) for _ in range(2 if r in FAVOURED_RANKS else 1)))


def _rng(draw: Callable) -> random.Random:
    """A family's attribute draw takes a random.Random: the engine's own, or one seeded by a draw."""
    return draw if isinstance(draw, random.Random) else random.Random(_int(draw, 0, 2 ** 32 - 1))


def draw_attr(draw: Callable, facts: RuleFacts, name: str, default: Any, rank: int) -> Any:
    own = dict(facts.plan.attr_draws)
    if name in own:
        return own[name](_rng(draw), rank)
    if name == "data_format" and facts.plan.data_formats:
        return _pick(draw, facts.plan.data_formats)
    if name in ATTR_POOLS:
        return ATTR_POOLS[name](draw, rank)
    if isinstance(default, bool):
        return _pick(draw, (False, True))
    return default


def tensor_shapes(draw: Callable, rule: str, x_shape: tuple[int, ...],
                  attrs: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """The shape of every tensor argument of a valid call: the family's ``input_shapes``, and any
    size (:data:`FREE_SIZES`) for an input whose size the op leaves free."""
    facts = rule_facts(rule)
    shapes = dict(facts.input_shapes(rule, x_shape, attrs))
    for name in facts.free_size:
        shapes[name] = tuple(_int(draw, *FREE_SIZES) for _ in shapes[name])
    return shapes


def draw_valid_call(draw: Callable, rule: str) -> Call:
    """Every tensor on one mesh with shapes that fit, attributes in range, optional inputs
    sometimes None."""
    spec = RULES[rule]
    facts = rule_facts(rule)
    mesh = draw_mesh(draw)
    rank = draw_rank(draw, facts.plan.ranks)
    x_shape = _ints(draw, rank, 1, 9)
    attrs = [(name, draw_attr(draw, facts, name, default, rank)) for name, default in spec.attrs]
    shapes = tensor_shapes(draw, rule, x_shape, dict(attrs))
    tensors: list[Any] = []
    for name in spec.inputs:
        if name in spec.optional and _int(draw, 0, 4) == 0:
            tensors.append(None)
        else:
            tensors.append(draw_valid_spec(draw, shapes[name], mesh))
    return Call(None, rule, "function", tensors, attrs)


INT_EDGES = (-3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 9, 2 ** 31, -(2 ** 31), 10 ** 30)
REAL_EDGES = (math.nan, math.inf, -math.inf, -1.0, 0.0, 0, 10 ** 400, 5e-324, 1e308, -0.0)
STR_EDGES = ("", "N", "NC", "nchw", "NCHW ", "CN", "NHWC", "XYZW", "N\x00C", "NC" * 9, "NCL", "NDHWC", "é", "1")


def draw_edge_value(draw: Callable, name: str) -> Any:
    """An attribute value of the right type, often out of range."""
    kind = attr_kinds()[name]
    if kind == "int":
        return _pick(draw, INT_EDGES)
    if kind == "real":
        return _pick(draw, REAL_EDGES)
    if kind == "str":
        return _pick(draw, STR_EDGES)
    return _pick(draw, (0, 1, True, False))


def draw_junk(draw: Callable) -> Any:
    """A value of another type than the argument takes (or a random spec)."""
    return draw_random_spec(draw) if _int(draw, 0, 4) == 0 else _pick(draw, JUNK)


MUTATIONS = ("junk", "none", "other-mesh", "same-shape-other-ids", "mapping", "partial", "shape", "meshless",
             "attr", "swap")


def _other_mesh(draw: Callable, mesh: ProcessMesh | None, same_shape: bool) -> ProcessMesh:
    if same_shape and mesh is not None:
        size = math.prod(mesh.shape)
        pids = list(mesh.process_ids or ())
        new = [p + size for p in pids] if _int(draw, 0, 1) or size == 1 else pids[::-1]
        return ProcessMesh(mesh.shape, new, mesh.dim_names)
    return draw_mesh(draw)


def mutate(draw: Callable, call: Call) -> None:
    """One mutation of a valid call (see the module doc)."""
    kind = _pick(draw, MUTATIONS)
    n_t, n_a = len(call.tensors), len(call.attrs)
    if kind == "junk":
        slot = _int(draw, 0, n_t + n_a - 1)
        value = draw_junk(draw)
        if slot < n_t:
            call.tensors[slot] = value
            call.mutations.append(f"{call.names[slot]}={_show(value)}")
        else:
            name = call.attrs[slot - n_t][0]
            call.attrs[slot - n_t] = (name, value)
            call.mutations.append(f"{name}={_show(value)}")
        return
    if kind == "attr":
        if not n_a:
            return
        slot = _int(draw, 0, n_a - 1)
        name = call.attrs[slot][0]
        value = draw_edge_value(draw, name)
        call.attrs[slot] = (name, value)
        call.mutations.append(f"{name}={value!r}")
        return
    if kind == "swap":
        i, j = _int(draw, 0, n_t - 1), _int(draw, 0, n_t - 1)
        call.tensors[i], call.tensors[j] = call.tensors[j], call.tensors[i]
        call.mutations.append(f"swap {call.names[i]}<->{call.names[j]}")
        return
    slot = _int(draw, 0, n_t - 1)
    name, old = call.names[slot], call.tensors[slot]
    if kind == "none":
        call.tensors[slot] = None
        call.mutations.append(f"{name}=None")
        return
    if not isinstance(old, DistTensorSpec):
        return
    shape, dm, mesh, partial = old.shape, old.dims_mapping, old.mesh, old.partial_dims
    if kind in ("other-mesh", "same-shape-other-ids"):
        mesh = _other_mesh(draw, mesh, kind == "same-shape-other-ids")
        if _int(draw, 0, 1):
            dm, partial = draw_placement(draw, len(shape), mesh.ndim)
    elif kind == "mapping":
        dm = _ints(draw, max(0, len(shape) + _pick(draw, (0, 0, -1, 1))), -2, 4)
    elif kind == "partial":
        partial = frozenset(_ints(draw, _int(draw, 1, 3), -1, 4))
    elif kind == "shape":
        shape = _ints(draw, _int(draw, 0, 7), 0, 9)
        dm, partial = draw_placement(draw, len(shape), mesh.ndim) if mesh is not None else ((), frozenset())
    elif kind == "meshless":
        mesh, partial = None, frozenset()
        if _int(draw, 0, 1):
            dm = ()
    call.tensors[slot] = DistTensorSpec(shape, dm, mesh, partial)
    call.mutations.append(f"{kind} {name}={_show(call.tensors[slot])}")


def draw_random_call(draw: Callable, rule: str) -> Call:
    """Every argument random: a random spec or junk for tensors, edge values or junk for attributes."""
    spec = RULES[rule]
    tensors = [draw_random_spec(draw) if _int(draw, 0, 11) else draw_junk(draw) for _ in spec.inputs]
    attrs = [(name, draw_edge_value(draw, name) if _int(draw, 0, 11) else draw_junk(draw)) for name, _ in spec.attrs]
    return Call(None, rule, "function", tensors, attrs, mode="random")


_FIRST_NAME = next(iter(NAMES))
#: Every registry name and rule key, then names a step from one (an unknown prefix, another case, a space).
LOOKUP_NAMES = tuple(NAMES) + RULE_KEYS + (f"skip_{_FIRST_NAME}", "", _FIRST_NAME.title(), f"{_FIRST_NAME} ")


def draw_lookup_call(draw: Callable) -> Call:
    fn = _pick(draw, ("get_spmd_rule", "rule_function", "contains_spmd_rule"))
    name = _pick(draw, LOOKUP_NAMES) if _int(draw, 0, 2) else _pick(draw, JUNK)
    profile = _pick(draw, PROFILE_NAMES + ("nightly", "Paddle", "")) if _int(draw, 0, 2) else _pick(draw, JUNK)
    return Call(profile, RULE_KEYS[0], "lookup", [], [], mode="lookup", lookup=(fn, name, profile))


def draw_call(draw: Callable) -> Call:
    """One example: valid+mutations (60 %), random (30 %), lookup (10 %)."""
    mode = _pick(draw, ("valid",) * 6 + ("random",) * 3 + ("lookup",))
    if mode == "lookup":
        return draw_lookup_call(draw)
    rule = _pick(draw, RULE_KEYS)
    call = draw_valid_call(draw, rule) if mode == "valid" else draw_random_call(draw, rule)
    if mode == "valid":
        for _ in range(_pick(draw, (0, 1, 1, 2, 3))):
            mutate(draw, call)
    call.profile = _pick(draw, PROFILE_NAMES)
    call.via = _pick(draw, ("function", "function", "registry"))
    if rule not in REGISTRY_ROUTE:  # no registry name reaches the rule
        call.via = "function"
    call.kwargs = bool(call.attrs) and bool(_int(draw, 0, 1))
    return call


@st.composite
def calls(draw: Callable) -> Call:
    """The fuzz's examples as a hypothesis strategy (see :func:`draw_call`)."""
    return draw_call(draw)


# --------------------------------------------------------------------------- properties
def attr_type_ok(kind: str, value: Any) -> bool:
    """The fuzz's own statement of what each attribute kind accepts."""
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool) or (isinstance(value, int) and value in (0, 1))
    if isinstance(value, bool):
        return False
    return isinstance(value, numbers.Integral if kind == "int" else numbers.Real)


def first_bad_argument(call: Call) -> tuple[str, str] | None:
    """(argument, "type" | "missing") of the first argument of a wrong type, in signature order."""
    spec = RULES[call.rule]
    for name, value in zip(call.names, call.tensors, strict=True):
        if value is None:
            if name not in spec.optional:
                return name, "missing"
        elif not isinstance(value, DistTensorSpec):
            return name, "type"
    for name, value in call.attrs:
        if not attr_type_ok(attr_kinds()[name], value):
            return name, "type"
    return None


NONE_RANKS = (0, 1)
"""Lengths an attr for a None input may have: Paddle stands it in with a [0]-shaped tensor (rank 1)
and an empty dist attr (dims_mapping ``[]``), and answers ``[-1] @-`` or ``[] @-`` for it."""


def _rank(value: Any) -> int | tuple[int, ...]:
    if value is None:
        return NONE_RANKS
    if value.mesh is None and len(value.dims_mapping) != len(value.shape):  # like Paddle's stand-in
        return (len(value.shape), len(value.dims_mapping))
    return len(value.shape)


def expected_ranks(call: Call) -> list[int | tuple[int, ...]]:
    """The rank of the tensor each returned attr describes (inputs, then outputs: the family's
    ``ANSWER_RANKS`` in the call's profile); a tuple of allowed lengths for a None input, or a spec
    without a mesh (rank, or its own mapping's length)."""
    named = dict(zip(call.names, call.tensors, strict=True))
    spec = RULES[call.rule]
    x = _rank(named["x"])
    attrs = {**dict(spec.attrs), **dict(call.attrs)}  # an attribute left out is its default
    rank_of = rule_facts(call.rule).answer_ranks[call.profile]
    return [_rank(named[n]) for n in spec.result_inputs] + \
        [_rank_by(rank_of[out], named, x, attrs) for out in spec.result_outputs]


def _rank_by(how: RankOf, named: dict[str, Any], x: int | tuple[int, ...],
             attrs: dict[str, Any]) -> int | tuple[int, ...]:
    if isinstance(how, str):  # the input's rank as passed
        return _rank(named[how])
    if isinstance(how, int):
        return how
    if isinstance(x, int):
        return how(x, attrs)
    found = tuple(sorted({how(r, attrs) for r in x}))  # x's rank is one of several: any rank they give
    return found[0] if len(found) == 1 else found


class Malformation(NamedTuple):
    """The first defect of an answer: where (``input`` / ``output`` and the attr's name, or ``""``
    for the answer as a whole), which (ops/kit/grid.py's ``MALFORMED_DEFECTS``) and why, in words."""

    side: str
    name: str
    defect: str
    why: str


def malformation(call: Call, result: Any) -> Malformation | None:
    """The first way an answer is not well formed (see the module doc), or None."""
    spec = RULES[call.rule]
    if not isinstance(result, SpmdResult):
        return Malformation("", "", "not-a-result", f"answer is a {type(result).__name__}, not an SpmdResult")
    if len(result.inputs) != len(spec.result_inputs) or len(result.outputs) != len(spec.result_outputs):
        return Malformation("", "", "attr-count", f"{len(result.inputs)} input / {len(result.outputs)} output attrs, "
                                                  f"want {len(spec.result_inputs)} / {len(spec.result_outputs)}")
    where = [("input", n) for n in spec.result_inputs] + [("output", n) for n in spec.result_outputs]
    for (side, name), attr, rank in zip(where, result.inputs + result.outputs, expected_ranks(call), strict=True):
        label = f"{side} {name}"

        def bad(defect: str, why: str, side: str = side, name: str = name) -> Malformation:
            return Malformation(side, name, defect, why)

        if not isinstance(attr, DistAttr):
            return bad("not-an-attr", f"{label} is a {type(attr).__name__}")
        dm, partial, mesh = attr.dims_mapping, attr.partial_dims, attr.mesh
        if any(isinstance(m, bool) or not isinstance(m, int) for m in dm) or \
                any(isinstance(p, bool) or not isinstance(p, int) for p in partial):
            return bad("non-int", f"{label} {attr}: non-int entries")
        if mesh is None:
            if any(m != -1 for m in dm) or partial:
                return bad("mesh-dim-without-mesh", f"{label} {attr}: a mesh dim on an attr without a mesh")
        else:
            n = mesh.ndim
            if any(not -1 <= m < n for m in dm) or any(not 0 <= p < n for p in partial):
                return bad("mesh-dim-out-of-range",
                           f"{label} {attr}: a mesh dim its mesh {mesh} (dims 0..{n - 1}) lacks")
        used = [m for m in dm if m >= 0]
        if len(used) != len(set(used)):
            return bad("mesh-dim-twice", f"{label} {attr}: one mesh dim shards two axes")
        if len(dm) not in (rank if isinstance(rank, tuple) else (rank,)):
            return bad("wrong-length", f"{label} {attr}: dims_mapping of length {len(dm)} for a tensor of rank {rank}")
    return None


def malformed(call: Call, result: Any) -> str | None:
    """Why an answer is not well formed (see the module doc), or None."""
    found = malformation(call, result)
    return found.why if found else None


def _arg_names(call: Call) -> set[str]:
    if call.via == "lookup":
        return {"name", "profile", "rule_key"}
    return set(call.names) | {n for n, _ in call.attrs}


@dataclass
class Verdict:
    outcome: str
    """``answer`` or the exception's class name."""
    problem: str | None = None
    """The property violated, or None."""
    category: str = ""
    known: str | None = None
    """A malformed answer the profile keeps on purpose (see :func:`known_malformed`): counted, not a violation."""


def known_malformed(call: Call, found: Malformation) -> str | None:
    """The label of a malformed answer the call's profile keeps on purpose (its family's
    ``KNOWN_MALFORMED``: that defect on an output whose input is None), or None."""
    named = dict(zip(call.names, call.tensors, strict=True))
    for known in rule_facts(call.rule).known[call.profile]:
        if found.side == "output" and found.defect == known.defect and found.name in known.when_none and \
                named[known.when_none[found.name]] is None:
            return known.label
    return None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, BaseException) or isinstance(b, BaseException):
        # the class as read (__class__): with the C module, check's error is a subclass of the same
        # name until something reads it (_speedups.c, refusal_type), and the first call's was read above
        return a.__class__ is b.__class__ and str(a) == str(b)
    return a == b


def _run(call: Call) -> Any:
    try:
        return call.invoke()
    except Exception as exc:  # judged by the caller
        return exc


def judge(call: Call) -> Verdict:
    """Run ``call`` twice and check every property (see the module doc)."""
    first = _run(call)
    second = _run(call)
    if isinstance(first, BaseException):
        verdict = Verdict(type(first).__name__)
        if not isinstance(first, DOCUMENTED):
            return Verdict(verdict.outcome, f"undocumented exception {type(first).__name__}: {first}", "undocumented")
    else:
        verdict = Verdict("answer")
    if not _same(first, second):
        return Verdict(verdict.outcome, f"second call differs: {first!r} then {second!r}", "not-repeatable")
    if call.via == "lookup":
        return verdict
    bad = first_bad_argument(call)
    if bad is not None:
        name, why = bad
        if not isinstance(first, InvalidSpecError) or not first.kind.startswith(f"invalid-spec:{name}:") or \
                name not in str(first) or (why == "type" and not isinstance(first, ArgumentTypeError)):
            kind = first.kind if isinstance(first, InvalidSpecError) else ""
            got = f"{type(first).__name__}({kind}): {first}" if isinstance(first, BaseException) else "an answer"
            return Verdict(verdict.outcome, f"argument {name} ({why}) not reported first: got {got}", "bad-argument")
        return verdict
    if isinstance(first, InvalidSpecError):
        parts = first.kind.split(":")
        if len(parts) < 2 or parts[1] not in _arg_names(call) or parts[1] not in str(first):
            return Verdict(verdict.outcome, f"InvalidSpecError names no argument: kind {first.kind!r}: {first}",
                           "unnamed")
    if isinstance(first, ArgumentTypeError):
        return Verdict(verdict.outcome, f"ArgumentTypeError with every argument of the right type: {first}",
                       "spurious-type-error")
    if not isinstance(first, BaseException):
        found = malformation(call, first)
        if found:
            known = known_malformed(call, found)
            if known:
                return Verdict("answer", known=known)
            return Verdict("answer", f"malformed answer: {found.why}; answer {first}", "malformed")
    return verdict


# --------------------------------------------------------------------------- long form
@dataclass
class Tally:
    outcomes: Counter = field(default_factory=Counter)
    by_mode: Counter = field(default_factory=Counter)
    problems: Counter = field(default_factory=Counter)
    known: Counter = field(default_factory=Counter)
    examples: list[tuple[str, str]] = field(default_factory=list)
    total: int = 0
    drawn: int = 0
    """Examples drawn, judged or not (a part judges every M-th)."""

    def add(self, call: Call, verdict: Verdict, keep: int) -> None:
        self.total += 1
        self.outcomes[verdict.outcome] += 1
        self.by_mode[(call.mode, verdict.outcome)] += 1
        if verdict.known:
            self.known[verdict.known] += 1
        if verdict.problem:
            self.problems[(verdict.category, verdict.outcome)] += 1
            if len(self.examples) < keep:
                self.examples.append((verdict.problem, call.describe()))


    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "drawn": self.drawn, "outcomes": dict(self.outcomes),
                "by_mode": [[m, o, n] for (m, o), n in self.by_mode.items()],
                "problems": [[c, o, n] for (c, o), n in self.problems.items()], "known": dict(self.known),
                "examples": [list(e) for e in self.examples]}

    def merge(self, data: dict[str, Any], keep: int) -> None:
        self.total += data["total"]
        self.outcomes.update(data["outcomes"])
        self.by_mode.update({(m, o): n for m, o, n in data["by_mode"]})
        self.problems.update({(c, o): n for c, o, n in data["problems"]})
        self.known.update(data["known"])
        self.examples += [tuple(e) for e in data["examples"]][:max(0, keep - len(self.examples))]


def run(n_examples: int, seed: int, keep: int = 10, engine: str = "hypothesis",
        shard: tuple[int, int] | None = None, tally: Tally | None = None) -> Tally:
    """Judge ``n_examples`` calls into ``tally`` (a new one if None); ``engine`` draws them through
    hypothesis or, 20x faster and without hypothesis's own choices, from ``random.Random(seed)``
    (same generators). ``shard`` ``(K, M)``: draw them all, judge examples K-1, K-1+M, ... only."""
    tally = Tally() if tally is None else tally
    k, m = shard or (1, 1)

    def mine() -> bool:
        tally.drawn += 1
        return (tally.drawn - 1) % m == k - 1

    if engine == "random":
        rng = random.Random(seed)
        for _ in range(n_examples):
            call = draw_call(rng)
            if mine():
                tally.add(call, judge(call), keep)
        return tally

    # a signal is taken between examples only: cut inside hypothesis's engine, it came out as an
    # error of hypothesis's (exit 4); quiet, so that the interrupt it passes on prints no seed to repeat
    with signals_deferred() as interrupt_here:
        @hypothesis_seed(seed)
        @settings(max_examples=n_examples, deadline=None, database=None, phases=(Phase.generate,),
                  suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)
        @given(calls())
        def one(call: Call) -> None:
            interrupt_here()
            if mine():
                tally.add(call, judge(call), keep)

        one()
    return tally


def report(tally: Tally, header: str) -> int:
    """Print the counts and the violations; 1 if any property was violated, else 0."""
    print(header)
    print("outcomes:")
    for outcome, n in tally.outcomes.most_common():
        modes = ", ".join(f"{mode} {c:,}" for (mode, o), c in sorted(tally.by_mode.items()) if o == outcome)
        print(f"  {outcome:24} {n:>9,}   ({modes})")
    for known, n in tally.known.items():
        print(f"  of the answers, known malformed (kept on purpose): {n:,} x {known}")
    n_problems = sum(tally.problems.values())
    if not n_problems:
        print("property violations: 0 (no undocumented exception, every wrongly typed argument named first, "
              "every answer well formed and repeatable)")
        return 0
    print(f"property violations: {n_problems:,}")
    for (category, outcome), n in tally.problems.most_common():
        print(f"  {category:24} {outcome:24} {n:>9,}")
    for problem, call in tally.examples:
        print(f"- {problem}\n    {call}")
    return 1


def merge(files: Sequence[str], keep: int) -> int:
    """``--merge``: the parts' counts added up; 3 when a part is missing or the parts drew differently."""
    parts, m, missing = read_tool_parts(files, "fuzz", lambda data: (Tally().merge(data, keep), data["drawn"],
                                                                     data["config"]["engine"], data["config"]["seed"]))
    tally = Tally()
    for data in parts:
        tally.merge(data, keep)
    drawn = {data["drawn"] for data in parts}
    config = parts[0]["config"]
    code = report(tally, f"fuzz: {tally.total:,} examples merged from {len(parts)} of {m} parts "
                         f"({config['engine']}, seed {config['seed']})")
    if missing or len(drawn) != 1 or (not missing and tally.total != drawn.pop()):
        why = f"parts {', '.join(map(str, missing))} of {m} missing" if missing else \
            "the parts drew different examples"
        print(f"INCOMPLETE: {why}; the examples they hold were not judged")
        return code or EXIT_INCOMPLETE
    return code


def _main(argv: Sequence[str] | None) -> int:
    ap = ArgumentParser(prog="python tools/fuzz.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=count, default=100_000, help="examples to run (default 100000)")
    ap.add_argument("--seed", type=int, default=0, help="hypothesis seed (default 0)")
    ap.add_argument("--show", type=int, default=10, help="violations printed with their call (default 10; 0: none)")
    ap.add_argument("--engine", choices=("hypothesis", "random"), default="hypothesis",
                    help="draw examples through hypothesis (default) or from random.Random(seed): same generators, "
                         "about 20x faster")
    add_shard_argument(ap, "the examples (every M-th, from the K-th on; all are drawn)")
    ap.add_argument("--json", default=None, metavar="FILE", help="also write the counts to FILE (for --merge)")
    ap.add_argument("--merge", nargs="+", default=None, metavar="FILE",
                    help="add up the --json files of a run's --shard parts; nothing is run")
    args = ap.parse_args(argv)
    if args.show < 0:
        raise UsageError("--show", f"{args.show} is negative", "give 0 (no call printed) or more")
    if args.merge:
        return merge(args.merge, args.show)
    if problems := check_facts():  # a family's declaration lacks what the fuzz reads: our bug, before any example
        raise LookupError("; ".join(problems))
    out = check_output_file(args.json, "--json") if args.json else None
    start = time.perf_counter()
    part = f", part {args.shard[0]} of {args.shard[1]}" if args.shard else ""
    tally = Tally()
    try:
        run(args.examples, args.seed, args.show, args.engine, args.shard, tally)
    except (Interrupted, Exception) as exc:  # a signal or an internal error (exit 4): the partial report, the
        # examples judged so far (no --json: not a part to merge)
        seconds = time.perf_counter() - start
        try:
            report(tally, f"INTERRUPTED by {stopped_by(exc)}: fuzz: {tally.total:,} of {args.examples:,} examples "
                          f"judged ({args.engine}, seed {args.seed}{part}), {seconds:.1f} s")
            where = "partial report on stdout"
        except Exception as err:  # said on the one line, never raised over the first error
            where = f"the partial report could not be written ({error_text(err)})"
        if not isinstance(exc, Interrupted):  # (a signal's line says only which: as every command's)
            add_detail(exc, where)
        raise
    seconds = time.perf_counter() - start
    if out is not None:  # check_output_file allowed missing directories on the way: they are made now
        out.parent.mkdir(parents=True, exist_ok=True)
        config = {"examples": args.examples, "seed": args.seed, "engine": args.engine}
        out.write_text(json.dumps({"tool": "fuzz", "shard": list(args.shard or (1, 1)), "config": config,
                                   **tally.to_json()}))
    code = report(tally, f"fuzz: {tally.total:,} examples ({args.engine}, seed {args.seed}{part}), {seconds:.1f} s, "
                         f"{len(PROFILE_NAMES)} profiles x {len(RULE_KEYS)} rules + lookups")
    if not tally.total:  # a --shard part of more parts than examples drawn: it judged nothing, never a pass
        print(f"NOTHING JUDGED: part {args.shard[0] if args.shard else 1} of {args.shard[1] if args.shard else 1} "
              f"holds none of the {tally.drawn:,} examples drawn (the other parts hold them all)")
        return code or EXIT_INCOMPLETE
    return code


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("fuzz", lambda: _main(argv))


if __name__ == "__main__":
    sys.exit(main())
