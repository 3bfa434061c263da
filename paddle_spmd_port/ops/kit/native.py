"""What an op family's ``native.py`` declares for the native routes, and the helpers it uses.

Pure: nothing here imports Paddle (the native room, :mod:`paddle_spmd_port.native`, does that and
reads these declarations). A family's ``ops/<family>/native.py`` may define any of these names;
every one is optional:

    CPP_HEADER        the header under ``paddle/phi/infermeta/spmd_rules/`` declaring the family's
                      C++ functions (default ``<family>.h``)
    NATIVE_ATTR_KINDS attr name -> "bool" | "int" | "float" | "str", where the default's Python type
                      does not say how Paddle takes it (see :func:`attr_kind`; every route reads it)
    CPP_MISMATCH      rule key -> the reason its cases are unreachable on a build whose header
                      declares the function with other parameters (default: :func:`mismatch_reason`)
    CPP_RELEASE_MARKER  set where the family's header marks a Paddle build the compiled caller is
                      written for at all: what its absence means (e.g. "Paddle < 3.1")
    REGISTRY_ROUTES   rule key -> (registry name, method) for keys a registry name declared in the
                      family's ``FAMILY`` does not give (``"replicated"`` both: Paddle's generic rule)
    replicated_outputs(case)  the output specs Paddle's replicated rule is handed (with REGISTRY_ROUTES)
    PIR_OPS           rule key -> the ``paddle._C_ops`` builder of the op whose Build runs the rule
    PIR_NOT_ROUTED    rule key -> why no PIR op reaches it
    compiled_may_crash(case, attrs), pir_may_crash(case, attrs)
                      the family's own clauses of the crash-isolation predicates (the native room
                      adds the clauses shared by every op); ``attrs``: the case's attributes by name,
                      the defaults filled in. A predicate only picks how a case runs, never its outcome.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ...types import DistTensorSpec
from ..spec import RuleSpec

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
                     "NATIVE_ATTR_KINDS of the family's native.py")


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


__all__ = ["KIND_TOKENS", "CaseView", "attr_kind", "attr_kinds", "mismatch_reason", "short_data_format"]
