"""The ported rules' public face: every rule function of the ``paddle`` profile and the registry.

The code lives in the op families' folders (``paddle_spmd_port/ops/<family>/rules.py`` and the other
profiles beside it; the registry in :mod:`paddle_spmd_port.ops.registry`). So that imports written
before the folders existed keep working, this package is filled from the families, naming none:

    import                                    is
    paddle_spmd_port.rules.<family>           ops.<family>.rules (the same module)
    paddle_spmd_port.rules.<profile>          every family's ops/<family>/<profile>.py, in one namespace,
                                              plus <PROFILE>_RULES / RULES: key -> function
    paddle_spmd_port.rules.preconditions      every family's checks.py and ops/kit/checks.py
    paddle_spmd_port.rules._tensor            ops.kit.tensor
    paddle_spmd_port.rules.registry           ops.registry's names
    paddle_spmd_port.rules.signatures         the declared rule specs (ops)

A name two families define differently is left out of a merged namespace rather than picked.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from types import ModuleType
from typing import Any

from ..ops import FAMILIES, family_module
from ..ops.kit import checks as _kit_checks
from ..ops.kit import tensor as _tensor
from ..ops.registry import (
    PROFILE_NAMES,
    PROFILES,
    SpmdRule,
    contains_spmd_rule,
    get_spmd_rule,
    rule_function,
    rule_names,
    rules_in,
)
from . import registry, signatures

_AMBIGUOUS = object()


def _public(module: ModuleType) -> dict[str, Any]:
    return {name: value for name, value in vars(module).items()
            if not name.startswith("_") and not isinstance(value, ModuleType)}


def _merged(name: str, doc: str, modules: Iterable[ModuleType], extra: dict[str, Any]) -> ModuleType:
    """One module holding the public names of ``modules`` (a name bound to two different objects is
    dropped), plus ``extra``; registered as ``paddle_spmd_port.rules.<name>``."""
    found: dict[str, Any] = {}
    for module in modules:
        for key, value in _public(module).items():
            if found.get(key, value) is not value:
                value = _AMBIGUOUS
            found[key] = value
    merged = ModuleType(f"{__name__}.{name}", doc)
    for key, value in {**found, **extra}.items():
        if value is not _AMBIGUOUS:
            setattr(merged, key, value)
    merged.__all__ = sorted(k for k in vars(merged) if not k.startswith("_"))  # type: ignore[attr-defined]
    sys.modules[merged.__name__] = merged
    return merged


def _alias(name: str, module: ModuleType) -> None:
    sys.modules[f"{__name__}.{name}"] = module
    globals()[name] = module


__all__ = ["PROFILES", "SpmdRule", "contains_spmd_rule", "get_spmd_rule", "rule_function", "rule_names"]

# every paddle-profile rule function, by its own name; each family's rules module as rules.<family>
for _family in FAMILIES:
    _rules = family_module(_family, "rules")
    if _rules is None:
        continue
    _alias(_family, _rules)
    for _fn in rules_in(_rules).values():
        globals()[_fn.__name__] = _fn
        __all__.append(_fn.__name__)

for _profile in PROFILE_NAMES:
    if _profile == "paddle":
        continue
    _modules = [m for f in FAMILIES if (m := family_module(f, _profile)) is not None]
    _table = {key: fn for m in _modules for key, fn in rules_in(m).items()}
    _merged(_profile, f"The {_profile!r} profile's rules of every family (ops/<family>/{_profile}.py).", _modules,
            {"RULES": _table, f"{_profile.upper()}_RULES": PROFILES[_profile]})

_merged("preconditions", "Every family's checks (ops/<family>/checks.py) and the shared ones (ops/kit/checks.py).",
        [_kit_checks, *(m for f in FAMILIES if (m := family_module(f, "checks")) is not None)], {})
_alias("_tensor", _tensor)

del _family, _rules, _profile, _modules, _table
__all__ += ["registry", "signatures"]
