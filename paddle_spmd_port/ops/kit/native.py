""":class:`NativeRoutes`, what an op family's ``native.py`` declares for the native routes (as
``NATIVE``), and the helpers it uses.

Pure: nothing here imports Paddle (the native room, :mod:`paddle_spmd_port.native`, does that and
reads these declarations). Every field has a default: a family without a ``native.py`` is reached
by the routes its rule specs declare, with nothing more to say.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ...types import DistTensorSpec
from ..spec import FamilyPart, OpFamily, RuleSpec, foreign_keys

#: The kinds an attribute can be passed as, the C++ caller's request token of each, and its
#: accessor in ``native/cpp/spmd_caller.cc``.
KIND_TOKENS: dict[str, tuple[str, str]] = {"bool": ("b", "boolean"), "int": ("i", "integer"),
                                          "float": ("f", "real"), "str": ("s", "text")}


class CaseView(Protocol):
    """What a family's predicates read of a case (:class:`paddle_spmd_port.case.Case` is one)."""

    @property
    def rule(self) -> str: ...

    @property
    def inputs(self) -> Sequence[DistTensorSpec | None]: ...


def attr_kind(name: str, default: Any, declared: Mapping[str, str] | None = None) -> str:
    """How an attribute is passed to Paddle: ``declared[name]`` if given, else the kind of its
    default's Python type (bool, int, float, str; bool before int, as ``True`` is an int)."""
    if declared and name in declared:
        kind = declared[name]
        if kind not in KIND_TOKENS:
            raise ValueError(f"attribute {name}: kind {kind!r} is not one of {', '.join(KIND_TOKENS)}")
        return kind
    for kind, types in (("bool", (bool,)), ("int", (int,)), ("float", (float,)), ("str", (str,))):
        if isinstance(default, types):
            return kind
    raise ValueError(f"attribute {name}: the default {default!r} does not say its kind; declare it in "
                     "NATIVE.attr_kinds of the family's native.py")


def attr_kinds(spec: RuleSpec, declared: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """:func:`attr_kind` of each of ``spec``'s attributes, in signature order."""
    return tuple(attr_kind(name, default, declared) for name, default in spec.attrs)


def mismatch_reason(spec: RuleSpec) -> str:
    """Why ``spec``'s cases are unreachable on a build whose function takes other parameters."""
    params = ", ".join([*spec.inputs, *(n for n, _ in spec.attrs)])
    return f"this Paddle build's {spec.cpp} does not take ({params})"


def short_data_format(attrs: Mapping[str, object]) -> bool:
    """A data_format too short for a rule's ``data_format[1]`` read (Paddle reads past the end)."""
    fmt = attrs.get("data_format", "NCHW")
    return not isinstance(fmt, str) or len(fmt) < 2


def no_pir_build(functions: str, ops: str, release: str = "3.3.1") -> str:
    """Why no PIR op reaches a family's rules on a CPU wheel where the ops' Build code (libpaddle.so)
    links none of ``functions`` and ``ops`` fail their dtype check (no kernel registered) before
    any rule runs."""
    return (f"no PIR op runs it during Build in Paddle {release}: libpaddle.so, which holds the ops' Build code, "
            f"links no {functions} rule function, and the {ops} ops fail their dtype check on this build (no "
            "kernel registered) before any rule runs; use the compiled backend")


#: A family's clause of a crash-isolation predicate: (case, its attributes by name, the defaults
#: filled in) -> the case may crash Paddle on that route, so it runs in a forked child.
CrashClause = Callable[[CaseView, Mapping[str, object]], bool]


def _no_map() -> Mapping[str, Any]:
    return {}


#: The size of every axis of tools/probe_coshard.py's tensors: divisible by every mesh size it probes.
PROBE_SIZE = 12


@dataclass(frozen=True)
class CoshardProbe:
    """How tools/probe_coshard.py measures the installed Paddle's answers to co-sharded inputs of a
    family: x of rank ``x_rank`` (every axis :data:`PROBE_SIZE`; the other tensors sized by the
    family's grid plan), the attributes the signature's defaults are overridden with, and the rule
    keys probed on each route."""

    x_rank: int
    attrs: Mapping[str, object] = dataclasses.field(default_factory=_no_map)
    registry: tuple[str, ...] = ()
    """Rule keys called through the registry name ``FAMILY`` declares for them."""
    pir: tuple[str, ...] = ()
    """Rule keys whose PIR op (``NativeRoutes.pir_ops``) is built on co-sharded values."""
    dynamic: Callable[[Any, Any, Any], Any] | None = None
    """The functional call in dygraph on one process: (api with ``paddle``, ``dist`` and ``F``, the
    mesh, a co-sharded x) -> the output; it never imports Paddle itself."""


@dataclass(frozen=True)
class NativeRoutes(FamilyPart):
    """How the native routes reach a family beyond what its rule specs say (``NATIVE`` in
    ``ops/<family>/native.py``)."""

    MODULE = "native"
    ATTRIBUTE = "NATIVE"

    cpp_header: str | None = None
    """The header under ``paddle/phi/infermeta/spmd_rules/`` declaring the family's C++ functions
    (None: ``<family>.h``)."""
    attr_kinds: Mapping[str, str] = dataclasses.field(default_factory=_no_map)
    """attr name -> "bool" | "int" | "float" | "str", where the default's Python type does not say
    how Paddle takes it (:func:`attr_kind`; every route reads it)."""
    cpp_mismatch: Mapping[str, str] = dataclasses.field(default_factory=_no_map)
    """rule key -> why its cases are unreachable on a build whose header declares the function with
    other parameters (default: :func:`mismatch_reason`)."""
    cpp_release_marker: str | None = None
    """Set where the family's header marks a Paddle build the compiled caller is written for at
    all: what its absence means (e.g. "Paddle < 3.1")."""
    registry_routes: Mapping[str, tuple[str, str]] = dataclasses.field(default_factory=_no_map)
    """rule key -> (registry name, method) for keys a registry name of ``FAMILY`` does not give
    (``("replicated", "replicated")``: Paddle's generic rule, fed :attr:`replicated_outputs`)."""
    replicated_outputs: Callable[[CaseView], list[DistTensorSpec]] | None = None
    """The output specs Paddle's replicated rule is handed (with a replicated registry route)."""
    pir_ops: Mapping[str, str] = dataclasses.field(default_factory=_no_map)
    """rule key -> the ``paddle._C_ops`` builder of the op whose Build runs the rule."""
    pir_not_routed: Mapping[str, str] = dataclasses.field(default_factory=_no_map)
    """rule key -> why no PIR op reaches it."""
    compiled_may_crash: CrashClause | None = None
    """The family's clause of the compiled route's crash predicate (the room adds the shared ones);
    a predicate only picks how a case runs, never its outcome."""
    pir_may_crash: CrashClause | None = None
    """The family's clause of the PIR route's crash predicate."""
    coshard_probe: CoshardProbe | None = None
    """What tools/probe_coshard.py calls of the family (None: the family is not probed)."""

    def problems(self, family: OpFamily) -> list[str]:
        out = []
        for name in ("cpp_mismatch", "registry_routes", "pir_ops", "pir_not_routed"):
            if foreign := foreign_keys(family, getattr(self, name)):
                out.append(f"{name} names {foreign}, not the family's keys")
        if both := sorted(set(self.pir_ops) & set(self.pir_not_routed)):
            out.append(f"{both} are both in pir_ops and pir_not_routed")
        replicated = sorted(k for k, (_, method) in self.registry_routes.items() if method == "replicated")
        if replicated and self.replicated_outputs is None:
            out.append(f"{replicated} take the replicated rule, which needs replicated_outputs")
        out += [f"attr_kinds: {name}: {kind!r} is not one of {', '.join(KIND_TOKENS)}"
                for name, kind in self.attr_kinds.items() if kind not in KIND_TOKENS]
        if self.coshard_probe is not None:
            probe = self.coshard_probe
            if foreign := foreign_keys(family, (*probe.registry, *probe.pir)):
                out.append(f"coshard_probe names {foreign}, not the family's keys")
            if unbuilt := sorted(set(probe.pir) - set(self.pir_ops)):
                out.append(f"coshard_probe builds {unbuilt}, which pir_ops has no builder for")
        return out


__all__ = ["CaseView", "CoshardProbe", "CrashClause", "KIND_TOKENS", "NativeRoutes", "PROBE_SIZE", "attr_kind",
           "attr_kinds", "mismatch_reason", "no_pir_build", "short_data_format"]
