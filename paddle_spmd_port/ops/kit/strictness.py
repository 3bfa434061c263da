"""The port's strictness, declared: each input the port refuses (an ``InvalidSpecError``) that goes
beyond what Paddle's rule checks, with why, what Paddle's rule does with it and whether Paddle's
*op* refuses it too.

A declaration names its check by the refusal's ``kind`` (``invalid-spec:<tensor>:<problem>``, the
tensor written ``*`` or named; matched with :func:`fnmatch.fnmatchcase`). The kit declares the
checks every family shares (:data:`SHARED`: the spec checks of ``DistTensorSpec.check`` and the
input wrapping of :mod:`.tensor`); a family declares its own in its ``checks.py`` (``STRICTNESS``),
found before the shared ones (the first match wins). ``ops/registry.strictness_of`` looks one up;
docs/strictness.md is written from them (``tools/strictness_doc.py``); tests/test_strictness.py
checks the page, that every refusal of the grid's corner sets is declared, the op verdict of
p_norm's axis against Paddle's op, and the mirrors against Paddle's rules on seeded samples.

Two policies (:data:`POLICIES`): ``strict`` (the default) refuses every such input; ``mirror``
answers as Paddle's rule does where the declaration says the port can (``mirror_keys``: the rule
keys whose answer on that input the family models, each by a function declared with :func:`mirror`
or :func:`mirror_via` in the family's ``rules.py``), and otherwise refuses naming why no answer is
mirrored (the rule crashes, or answers from memory it never set, or the port does not model it).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ...types import DistTensorSpec
from ..spec import FamilyPart, OpFamily

#: The strictness policies, the default first.
POLICIES = ("strict", "mirror")
DEFAULT_POLICY = POLICIES[0]

#: What Paddle's rule does on the input: it answers (well formed or not), it crashes or raises
#: something unrelated, it does either depending on the rest of the input (``varies``), or it reads
#: or writes memory it never set (``undefined``: past a vector's or a string's end), so whatever it
#: answers is that memory's content, not the rule's, and no port can agree with it by design.
RULE_VERDICTS = ("answers", "crashes", "varies", "undefined")
#: Whether Paddle's op refuses the input: ``refuses`` (its InferMeta or Python API raises),
#: ``accepts``, ``inexpressible`` (no program can hold it: a dist tensor's placements give one
#: placement per mesh dim, so each of these inputs has no placements to stand for it) or
#: ``unmeasured``.
OP_VERDICTS = ("refuses", "accepts", "inexpressible", "unmeasured")


@dataclass(frozen=True)
class Strictness:
    check: str
    """The refusal's ``kind``, a tensor's name written ``*``."""
    reason: str
    """Why the port refuses: what the input is, and what Paddle does with it."""
    rule: str
    """What Paddle's rule does (:data:`RULE_VERDICTS`)."""
    op: str
    """Whether Paddle's op refuses it (:data:`OP_VERDICTS`)."""
    evidence: str = ""
    """How the op's verdict is known."""
    mirror_keys: tuple[str, ...] = ()
    """The rule keys the ``mirror`` policy answers this input for, as Paddle's rule does (each one's
    function declared with :func:`mirror` in the family's ``rules.py``)."""
    families: tuple[str, ...] = ()
    """The families whose refusal this is (empty: every family; a family's own is found first)."""

    def problems(self) -> list[str]:
        out = []
        if not self.check.startswith("invalid-spec:"):
            out.append(f"check {self.check!r} is not an InvalidSpecError kind")
        if self.rule not in RULE_VERDICTS:
            out.append(f"{self.check}: rule {self.rule!r} not one of {RULE_VERDICTS}")
        if self.op not in OP_VERDICTS:
            out.append(f"{self.check}: op {self.op!r} not one of {OP_VERDICTS}")
        if self.mirror_keys and self.rule in ("crashes", "undefined"):
            out.append(f"{self.check}: a rule that {self.rule.replace('undefined', 'reads unset memory')} "
                       "cannot be mirrored")
        if self.op != "unmeasured" and not self.evidence:
            out.append(f"{self.check}: op verdict {self.op!r} without evidence")
        return out

    def op_text(self) -> str:
        return {"refuses": "Paddle's op refuses it too", "accepts": "Paddle's op accepts it",
                "inexpressible": "no Paddle program can hold it (the op never sees it)",
                "unmeasured": "whether Paddle's op refuses it is not measured"}[self.op]

    def rule_text(self) -> str:
        """What Paddle's rule does with the input, as words."""
        return {"answers": "Paddle's rule answers", "crashes": "Paddle's rule crashes",
                "varies": "Paddle's rule varies", "undefined": "Paddle's rule reads or writes memory it never set "
                "(its answer is that memory's content)"}.get(self.rule, f"Paddle's rule {self.rule}")

    def text(self) -> str:
        """The one-line account of a refusal: its reason, the op's verdict, the rule's."""
        return f"strict refusal ({self.check}): {self.reason}; {self.op_text()}; {self.rule_text()}"


@dataclass(frozen=True)
class StrictnessNotes(FamilyPart):
    """A family's refusals beyond Paddle's rules, declared beside the checks that make them (its
    ``checks.py`` binds them to ``STRICTNESS``); the registry joins them with the kit's shared ones
    (:data:`SHARED`)."""

    MODULE: ClassVar[str] = "checks"
    ATTRIBUTE: ClassVar[str] = "STRICTNESS"
    declared: tuple[Strictness, ...] = ()

    def problems(self, family: OpFamily) -> list[str]:
        return [f"{decl.check}: {problem}" for decl in self.declared for problem in decl.problems()]



#: The evidence that no program holds a tensor whose dims_mapping is malformed.
PLACEMENTS = "a dist tensor's placements give each mesh dim one placement (Shard(axis), Replicate or Partial)"

#: The checks every family shares: a spec's own check, and the wrapping of the inputs.
SHARED = (
    Strictness("invalid-spec:*:length", "a dims_mapping whose length is not the tensor's rank; Paddle's rule reads "
               "it against the rank's notation (a shorter one aborts it: SIGABRT)", "varies", "inexpressible",
               PLACEMENTS),
    Strictness("invalid-spec:*:mesh-dim", "a dims_mapping naming a mesh dim the mesh lacks; Paddle's rule copies it "
               "into its answer, or crashes (SIGSEGV) or raises where it looks the dim up", "varies", "inexpressible",
               PLACEMENTS),
    Strictness("invalid-spec:*:duplicate", "a dims_mapping splitting two axes along one mesh dim; Paddle's rule "
               "answers a sharding no placements stand for", "varies", "inexpressible", PLACEMENTS),
    Strictness("invalid-spec:*:partial-range", "a partial dim outside the mesh; Paddle crashes (SIGSEGV) while it "
               "builds the input's dist attr", "crashes", "inexpressible", PLACEMENTS),
    Strictness("invalid-spec:*:partial-shard", "a mesh dim both sharding an axis and partial", "varies",
               "inexpressible", PLACEMENTS),
    Strictness("invalid-spec:*:mesh", "a dims_mapping or partial dims without a mesh", "varies", "inexpressible",
               "a dist tensor always has a process mesh"),
    Strictness("invalid-spec:*:missing", "None for a required tensor; Paddle's stand-in for None is a rank-1 spec "
               "with an empty mapping, which its rule reads or refuses", "varies", "refuses",
               "the op's Python API needs every required tensor"),
    Strictness("invalid-spec:*:mixed-mesh", "a tensor on a mesh of another number of dims than x's whose mesh "
               "dims reach the answer; Paddle answers an attr naming mesh dims its mesh lacks", "varies",
               "unmeasured"),
    Strictness("invalid-spec:x:mesh", "x without a process mesh; Paddle's rule crashes on it", "varies",
               "inexpressible", "a dist tensor always has a process mesh"),
)


def mirror(key: str, check: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare the decorated function as rule ``key``'s answer, under the ``mirror`` policy, to the
    inputs its ``strict`` rule refuses with ``check``: it takes the profile's strict function, then
    the rule's arguments, and answers as Paddle's rule does, or raises InvalidSpecError naming why
    Paddle's answer cannot be mirrored."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.mirror_for = (key, check)  # type: ignore[attr-defined]
        return fn

    return register


def call_with(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], **given: Any) -> Any:
    """``fn(*args, **kwargs)`` with the named arguments replaced by ``given`` (bound by ``fn``'s signature,
    defaults applied)."""
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    bound.arguments.update(given)
    return fn(*bound.args, **bound.kwargs)


def argument(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> Any:
    """The value ``fn`` would take for parameter ``name`` from this call (its default where not given)."""
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.arguments[name]


def mirror_via(key: str, check: str, body: Callable[..., Any], doc: str, module: str) -> Callable[..., Any]:
    """A mirror function of its own for (``key``, ``check``), defined in ``module`` (the family's
    ``rules.py``: where the registry looks), answering by ``body`` (one body serves several checks)."""

    def answer(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return body(fn, *args, **kwargs)

    what = check.split(":", 1)[1].replace(":", "_").replace("*", "any")
    answer.__name__ = answer.__qualname__ = f"{key}_mirror_{what}"
    answer.__module__ = module
    answer.__doc__ = doc
    return mirror(key, check)(answer)


#: The spec problems no rule that reads only a tensor's shape and mesh can notice.
UNREAD_PROBLEMS = ("duplicate", "length", "mesh-dim")


def first_kept(spec: DistTensorSpec) -> DistTensorSpec:
    """``spec`` with each mesh dim kept on the first axis that names it and -1 on the later ones: how
    Paddle's sharding merge reads a mapping that splits two axes along one mesh dim (it picks the
    first axis). Partial status kept."""
    seen: set[int] = set()
    kept: list[Any] = []
    for entry in spec.dims_mapping:
        if isinstance(entry, int) and entry >= 0:
            kept.append(-1 if entry in seen else entry)
            seen.add(entry)
        else:
            kept.append(entry)
    return DistTensorSpec(spec.shape, tuple(kept), spec.mesh, spec.partial_dims)


_WHAT = {"duplicate": "splits two axes along one mesh dim", "length": "has another length than its rank",
         "mesh-dim": "names a mesh dim the mesh lacks"}


def unread_strictness(family: str, unread: Mapping[str, tuple[str, ...]]) -> tuple[Strictness, ...]:
    """The declarations of a family's malformed mappings its rules never read: ``unread`` maps each
    rule key to the inputs whose mapping (and partial status) it never reads, only their shape and
    mesh. Each (input, problem) is mirrored for those keys; Paddle's rule ``answers`` where every key
    of the family with that input is among them, else ``varies``."""
    from .. import RULES

    out = []
    for tensor in dict.fromkeys(t for names in unread.values() for t in names):
        keys = tuple(k for k, names in unread.items() if tensor in names)
        having = [k for k, spec in RULES.items() if spec.op == family and tensor in spec.inputs]
        for problem, what in _WHAT.items():
            out.append(Strictness(
                f"invalid-spec:{tensor}:{problem}",
                f"{tensor}'s dims_mapping {what}; {', '.join(keys)} never read its mapping (only its shape and mesh)",
                "answers" if set(having) <= set(keys) else "varies", "inexpressible", PLACEMENTS,
                mirror_keys=keys, families=(family,)))
    return tuple(out)


def copied_x_strictness(family: str, keys: tuple[str, ...], replicated: str, written: str, *,
                        short: str = "shorter than x's rank", also: str = "", duplicate_note: str = "",
                        length_note: str = "a shorter one is written past its end: invalid-spec:x:length-short",
                        ) -> tuple[Strictness, ...]:
    """The declarations of a malformed x in a family whose rules copy x's mapping, set the entries
    of some axes to -1 in the copy by index and merge the copy alone
    (:func:`~paddle_spmd_port.ops.kit.raw_mapping.copy_overwriting`): a duplicate, a missing mesh dim or
    another length are answered as that merge answers them (mirrored for ``keys``); a mapping ``short``
    of an axis the copy writes is written past its end, which no run answers the same way.

    ``replicated`` names the axes set to -1 in the description of the copy, ``written`` those the
    writes reach in the description of the short case (``also``: what else the rules do past its end);
    ``duplicate_note`` and ``length_note`` add what the family's merge does with those inputs."""
    notes = (("duplicate", f"splits two axes along one mesh dim{duplicate_note}"),
             ("mesh-dim", "names a mesh dim the mesh lacks (copied as is; a grad partial on it crashes Paddle)"),
             ("length", f"has another length than x's rank ({length_note}; one entry more merges under no "
                        "letter; more raise)"))
    copied = tuple(Strictness(f"invalid-spec:x:{problem}", f"x's dims_mapping {what}; {family}'s rules copy it, "
                              f"replicate {replicated} in the copy and merge it alone (ops/kit/raw_mapping.py)",
                              "varies", "inexpressible", PLACEMENTS, mirror_keys=keys, families=(family,))
                   for problem, what in notes)
    return (*copied, Strictness(
        "invalid-spec:x:length-short", f"x's dims_mapping {short}; {family}'s rules write -1 to {written} of their "
        f"copy of it by index, past its end{also} (heap corruption: SIGABRT, or an answer of whatever that memory "
        "held)",
        "undefined", "inexpressible", PLACEMENTS, families=(family,)))
