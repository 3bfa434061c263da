"""Op families, one folder each, registered here once.

Every room (parity, native, oracle, launch, compat) reads the families through this module:
``FAMILIES`` in the order sweeps run, ``RULES`` (rule key -> :class:`RuleSpec`), ``REGISTRY_NAMES``
(the names ``get_spmd_rule`` answers to), and each family's typed parts (:func:`family_part`). Adding an
op is a folder with an ``__init__`` declaring ``FAMILY`` and a ``rules.py``, and one entry in
:data:`_FAMILY_MODULES` (docs/adding-an-op.md).
"""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec
from types import ModuleType
from typing import TypeVar

from .spec import ROUTES, FamilyPart, OpFamily, RegistryName, RuleSpec

_Part = TypeVar("_Part", bound=FamilyPart)

#: The family folders, in the order sweeps and listings run.
_FAMILY_MODULES = ("batch_norm", "sync_batch_norm", "layer_norm", "instance_norm", "rms_norm", "fast_ln",
                   "group_norm", "p_norm")

FAMILIES: dict[str, OpFamily] = {}
for _module in _FAMILY_MODULES:
    _family: OpFamily = import_module(f"{__name__}.{_module}").FAMILY
    if _family.name != _module:
        raise ImportError(f"ops/{_module} declares the family {_family.name!r}; a folder holds the family it names")
    FAMILIES[_family.name] = _family

#: Every rule key, family by family.
RULES: dict[str, RuleSpec] = {}
#: Every name ``get_spmd_rule`` answers to.
REGISTRY_NAMES: dict[str, RegistryName] = {}
for _family in FAMILIES.values():
    for _spec in _family.rules:
        if _spec.key in RULES:
            raise ImportError(f"rule key {_spec.key!r} is declared by {RULES[_spec.key].op} and {_family.name}")
        RULES[_spec.key] = _spec
    for _name in _family.registry_names:
        if _name.name in REGISTRY_NAMES:
            raise ImportError(f"registry name {_name.name!r} is declared twice")
        REGISTRY_NAMES[_name.name] = _name
del _module, _family, _spec, _name

#: family -> its rule keys.
OPS: dict[str, tuple[str, ...]] = {name: family.keys for name, family in FAMILIES.items()}


def rule_spec(key: str) -> RuleSpec:
    """The declared spec of a rule key; an unknown key raises ValueError listing the known ones."""
    try:
        return RULES[key]
    except KeyError:
        raise ValueError(f"unknown rule {key!r}; choose one of {', '.join(RULES)}") from None


def family_module(family: str, part: str) -> ModuleType | None:
    """A family's module ``ops/<family>/<part>.py``, or None where the family has none; a module that
    exists but fails to import raises. The rule profiles (``rules``, ``proposed``, ...) and the
    preconditions (``checks``) are found by it; a room reads a typed part with :func:`family_part`."""
    if family not in FAMILIES:
        raise ValueError(f"unknown op family {family!r}; choose one of {', '.join(FAMILIES)}")
    name = f"{__name__}.{family}.{part}"
    if find_spec(name) is None:
        return None
    return import_module(name)


_PARTS: dict[tuple[str, type[FamilyPart]], FamilyPart | None] = {}


def family_part(family: str, kind: type[_Part]) -> _Part | None:
    """The family's part of ``kind`` (:class:`~paddle_spmd_port.ops.spec.FamilyPart`): the object
    ops/<family>/<kind.MODULE>.py binds to ``kind.ATTRIBUTE``, or None where the family has no such
    module. A module without that name, an object of another type, or one whose ``problems`` are
    not empty raises ImportError naming the file: a misdeclared part never reaches a room."""
    if (family, kind) in _PARTS:
        found = _PARTS[family, kind]
        return found if isinstance(found, kind) else None
    module = family_module(family, kind.MODULE)
    if module is None:
        _PARTS[family, kind] = None
        return None
    where = f"ops/{family}/{kind.MODULE}.py"
    part = getattr(module, kind.ATTRIBUTE, None)
    if not isinstance(part, kind):
        raise ImportError(f"{where} must bind {kind.ATTRIBUTE} to a {kind.__name__}; it binds {type(part).__name__}")
    if problems := part.problems(FAMILIES[family]):
        raise ImportError(f"{where}: {kind.ATTRIBUTE}: {'; '.join(problems)}")
    _PARTS[family, kind] = part
    return part


def family_of(key: str) -> OpFamily:
    """The family declaring a rule key."""
    return FAMILIES[rule_spec(key).op]


__all__ = ["FAMILIES", "OPS", "REGISTRY_NAMES", "ROUTES", "RULES", "FamilyPart", "OpFamily", "RegistryName",
           "RuleSpec", "family_module", "family_of", "family_part", "rule_spec"]
