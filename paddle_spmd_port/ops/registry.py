"""A registry mirroring ``paddle.framework.core.get_phi_spmd_rule``, with rule *profiles*.

The names ``get_spmd_rule`` answers to, the rule keys behind each name's ``infer_forward`` and
``infer_backward``, and whether Paddle's registry has the name are each family's declaration
(:data:`paddle_spmd_port.ops.REGISTRY_NAMES`; the port adds its own names for rules Paddle keeps
unregistered). A name without a backward key raises ``NotFound`` from ``infer_backward``, as Paddle does.

A profile chooses the function behind each rule key. Every family declares its rules with
:func:`~.kit.checks.rule` in ``ops/<family>/rules.py`` (the ``paddle`` profile) and, where it
corrects or proposes one, in ``ops/<family>/<profile>.py``; profile P is the paddle rules
overlaid by every family's module named P::

    paddle     what Paddle 3.3.1 does, quirks and bugs included (the default)
    pr72918    paddle, except the rules proposed upstream for sync_batch_norm (never shipped)
    proposed   the port's corrected rules, sound on the oracle's whole grid (every rule key); its
               reverse rules answer the cheaper of the reverse and the forward answer (kit/cheapest.py)
"""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from types import ModuleType
from typing import Any

from ..errors import ArgumentTypeError, InvalidSpecError, PaddleInvalidArgument, RuleNotFoundError, UnknownKeyError
from ..types import DistTensorSpec, SpmdResult
from . import FAMILIES, REGISTRY_NAMES, RULES, family_module, family_part
from .kit.cheapest import cheaper_reverse, usable
from .kit.strictness import POLICIES, SHARED, Strictness, StrictnessNotes

RuleFn = Callable[..., SpmdResult]

#: The profiles, the default first; each but the first is the name of a family module that overlays it.
PROFILE_NAMES = ("paddle", "pr72918", "proposed")


def rules_in(module: ModuleType) -> dict[str, RuleFn]:
    """The rules a profile module declares (:func:`~.kit.checks.rule`), by key: the functions
    defined there, not those it imports from another family's module."""
    found: dict[str, RuleFn] = {}
    for value in vars(module).values():
        key = getattr(value, "rule_key", None)
        if key is None or getattr(value, "__module__", None) != module.__name__:
            continue
        if key in found:
            raise ImportError(f"{module.__name__} declares rule {key!r} twice")
        if key not in RULES or RULES[key].op != module.__name__.split(".")[-2]:
            raise ImportError(f"{module.__name__} declares rule {key!r}, which its family does not declare")
        found[key] = value
    return found


def _profile(part: str) -> dict[str, RuleFn]:
    rules: dict[str, RuleFn] = {}
    for family in FAMILIES:
        module = family_module(family, part)
        if module is not None:
            rules.update(rules_in(module))
    return rules


PADDLE_RULES: dict[str, RuleFn] = _profile("rules")
if missing := [key for key in RULES if key not in PADDLE_RULES]:
    raise ImportError(f"no paddle rule for {missing}: each family's rules.py declares every key it has")
PADDLE_RULES = {key: PADDLE_RULES[key] for key in RULES}  # declaration order, family by family

PROFILES: dict[str, dict[str, RuleFn]] = {"paddle": PADDLE_RULES}
for _name in PROFILE_NAMES[1:]:
    PROFILES[_name] = {**PADDLE_RULES, **_profile(_name)}
del _name


def _choose_cheaper_reverse() -> None:
    """The proposed reverse rules answer the cheaper of their answer and their forward rule's
    (:mod:`.kit.cheapest`)."""
    done: set[str] = set()
    proposed = PROFILES["proposed"]
    for reg in REGISTRY_NAMES.values():
        key = reg.backward
        if key is None or key in done or RULES[key].direction != "reverse":
            continue
        if not usable(RULES[key], RULES[reg.forward]):
            continue
        done.add(key)
        proposed[key] = cheaper_reverse(RULES[key], proposed[key], RULES[reg.forward], proposed[reg.forward])


_choose_cheaper_reverse()

#: registry name -> (forward rule key, backward rule key or None, registered in Paddle).
NAMES: dict[str, tuple[str, str | None, bool]] = {
    name: (reg.forward, reg.backward, reg.in_paddle) for name, reg in REGISTRY_NAMES.items()}


def rule_function(rule_key: str, profile: str = "paddle", policy: str = "strict") -> RuleFn:
    """The function behind a rule key (see :data:`paddle_spmd_port.ops.RULES`) in a profile, under a
    strictness policy (:data:`~.kit.strictness.POLICIES`: ``strict``, the profile's own function;
    ``mirror``, see :func:`mirrored`).

    Unknown key, profile or policy: :class:`UnknownKeyError` (a RuleNotFoundError and a ValueError)."""
    _require_str(rule_key, "rule_key")
    _require_str(profile, "profile")
    _require_str(policy, "policy")
    if profile not in PROFILES:
        raise UnknownKeyError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    if policy not in POLICIES:
        raise UnknownKeyError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    try:
        fn = PROFILES[profile][rule_key]
    except KeyError:
        raise UnknownKeyError(f"unknown rule key {rule_key!r}; choose one of {', '.join(PADDLE_RULES)}") from None
    if policy == "strict":
        return fn
    made = _MIRRORED.get((rule_key, profile))
    if made is None:
        made = _MIRRORED[rule_key, profile] = mirrored(rule_key, fn)
    return made


# --------------------------------------------------------------------------- strictness
def _declared() -> tuple[tuple[Strictness, ...], dict[tuple[str, str], RuleFn]]:
    """Every family's declared refusals (:class:`~.kit.strictness.StrictnessNotes`) before the kit's shared
    ones, and the mirror functions of every family's ``rules.py``, by (rule key, check)."""
    own: list[Strictness] = []
    mirrors: dict[tuple[str, str], RuleFn] = {}
    for family in FAMILIES:
        notes = family_part(family, StrictnessNotes)  # (type and problems checked there, naming the file)
        own.extend(notes.declared if notes is not None else ())
        module = family_module(family, "rules")
        for value in vars(module).values() if module is not None else ():
            for item in value if isinstance(value, tuple) else (value,):  # (a tuple: mirrors made in a loop)
                found = getattr(item, "mirror_for", None)
                if found is not None and getattr(item, "__module__", None) == module.__name__:  # type: ignore[union-attr]
                    mirrors[found] = item
    for decl in own:
        for key in decl.mirror_keys:
            if (key, decl.check) not in mirrors:
                raise ImportError(f"{decl.check} declares {key} mirrored, but no @mirror({key!r}, {decl.check!r})")
    for key, check in mirrors:
        if not any(check == d.check and key in d.mirror_keys for d in own):
            raise ImportError(f"@mirror({key!r}, {check!r}) has no STRICTNESS entry naming {key} in mirror_keys")
    return (*own, *SHARED), mirrors


STRICTNESS, MIRRORS = _declared()
_MIRRORED: dict[tuple[str, str], RuleFn] = {}


def strictness_of(rule_key: str, kind: str) -> Strictness | None:
    """The declaration of the refusal ``kind`` of rule ``rule_key`` (its family's own first), or
    None where none is declared."""
    family = RULES[rule_key].op
    for decl in STRICTNESS:
        if (not decl.families or family in decl.families) and fnmatchcase(kind, decl.check):
            return decl
    return None


def mirrored(rule_key: str, fn: RuleFn) -> RuleFn:
    """``fn`` under the ``mirror`` policy: where it refuses an input (InvalidSpecError) whose
    declaration names ``rule_key`` among its ``mirror_keys``, Paddle's rule's answer, from the
    family's mirror function; any other refusal is raised again, its message naming why no answer is
    mirrored (Paddle's rule crashes or answers garbage there, or the port does not model it)."""

    def call(*args: Any, **kwargs: Any) -> SpmdResult:
        try:
            return fn(*args, **kwargs)
        except InvalidSpecError as exc:
            decl = strictness_of(rule_key, exc.kind)
            if decl is not None and rule_key in decl.mirror_keys:
                try:
                    return MIRRORS[rule_key, decl.check](fn, *args, **kwargs)
                except InvalidSpecError as inner:
                    raise InvalidSpecError(f"{inner} [mirror policy: not mirrored]", kind=inner.kind) from None
            why = "no strictness declared" if decl is None else (
                f"{decl.rule_text()} on it" + ("" if decl.rule in ("crashes", "undefined") else
                                               "; the port does not model that answer"))
            raise InvalidSpecError(f"{exc} [mirror policy: not mirrored: {why}]", kind=exc.kind) from None

    call.__name__ = call.__qualname__ = f"{getattr(fn, '__name__', rule_key)}_mirror"
    call.__doc__ = fn.__doc__
    call.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
    call.rule_key = rule_key  # type: ignore[attr-defined]
    return call


def _require_str(value: object, name: str) -> None:
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{name} must be a str, got {type(value).__name__} {value!r:.60}",
                                kind=f"invalid-spec:{name}:type")


_CAST_ERROR = ("Attribute cast error in InferSpmd Context, the input attr type is `i`, but the expected attribute "
               "type is `f`.")


@dataclass(frozen=True)
class SpmdRule:
    name: str
    forward: RuleFn
    backward: RuleFn | None = None
    registered_in_paddle: bool = False

    def infer_forward(self, *args: Any, **kwargs: Any) -> SpmdResult:
        self._check_epsilon(self.forward, args, kwargs)
        return self.forward(*args, **kwargs)

    def infer_backward(self, *args: Any, **kwargs: Any) -> SpmdResult:
        if self.backward is None:
            raise RuleNotFoundError(f"Current SpmdRule's backward function is not found (rule {self.name!r}).")
        self._check_epsilon(self.backward, args, kwargs)
        return self.backward(*args, **kwargs)

    def _check_epsilon(self, fn: RuleFn, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """For a name declared ``epsilon_unchecked``: epsilon must be given (InvalidSpecError) and, once
        every tensor argument is a spec or None, not an int (Paddle's cast error, raised before its rule
        runs)."""
        reg = REGISTRY_NAMES.get(self.name)
        if reg is None or not reg.epsilon_unchecked:
            return
        params = list(inspect.signature(fn).parameters)
        at = params.index("epsilon")
        if len(args) <= at and "epsilon" not in kwargs:
            raise InvalidSpecError(f"epsilon is missing: Paddle's {self.name!r} registry object reads it unchecked "
                                   "(SIGSEGV); pass epsilon", kind="invalid-spec:epsilon:missing")
        eps = args[at] if len(args) > at else kwargs["epsilon"]
        given = dict(zip(params, args[:at], strict=False)) | {n: kwargs[n] for n in params[:at] if n in kwargs}
        key = reg.forward if fn is self.forward else reg.backward
        optional = RULES[key].optional if key is not None else frozenset()
        if isinstance(eps, numbers.Integral) and not isinstance(eps, bool) and len(given) == at and all(
                isinstance(t, DistTensorSpec) or (t is None and n in optional) for n, t in given.items()):
            raise PaddleInvalidArgument(_CAST_ERROR, kind="attr-cast:epsilon")


def contains_spmd_rule(name: str) -> bool:
    _require_str(name, "name")
    return name in NAMES


def get_spmd_rule(name: str, profile: str = "paddle", policy: str = "strict") -> SpmdRule:
    """Like ``core.get_phi_spmd_rule(name)``; ``profile`` picks one of :data:`PROFILES`, ``policy``
    the strictness policy (:func:`rule_function`)."""
    _require_str(name, "name")
    try:
        fwd, bwd, registered = NAMES[name]
    except KeyError:
        known = ", ".join(NAMES)
        raise RuleNotFoundError(f"`{name}` Kernel's Spmd rules is not registered; known rules: {known}") from None
    return SpmdRule(name, rule_function(fwd, profile, policy),
                    rule_function(bwd, profile, policy) if bwd else None, registered)


def rule_names() -> tuple[str, ...]:
    return tuple(NAMES)
