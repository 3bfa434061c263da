"""The ported rules' public face: every rule function of the ``paddle`` profile by its own name, and
the registry (``get_spmd_rule``, ``rule_function``, the profiles).

The rules live in the op families' folders (``ops/<family>/rules.py``, other profiles beside it) and
the registry in :mod:`paddle_spmd_port.ops.registry`; this module only hands their names on, filled
from the declared rules so that it names no op. Nothing inside the package imports it (the
``layers`` import contract): the package's own code imports from ``ops`` directly.

The other profiles' functions: ``rule_function(key, "proposed")`` or ``PROFILES["proposed"][key]``.
"""

from __future__ import annotations

from .ops.registry import (
    PADDLE_RULES,
    PROFILE_NAMES,
    PROFILES,
    SpmdRule,
    contains_spmd_rule,
    get_spmd_rule,
    rule_function,
    rule_names,
)

__all__ = ["PROFILES", "PROFILE_NAMES", "SpmdRule", "contains_spmd_rule", "get_spmd_rule", "rule_function",
           "rule_names"]

for _fn in PADDLE_RULES.values():
    globals()[_fn.__name__] = _fn
    __all__.append(_fn.__name__)
del _fn
