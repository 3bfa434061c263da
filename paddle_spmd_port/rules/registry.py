"""Moved: the code lives in :mod:`paddle_spmd_port.ops.registry` (kept so old imports work)."""

from __future__ import annotations

from ..ops.registry import (
    NAMES,
    PADDLE_RULES,
    PROFILE_NAMES,
    PROFILES,
    RuleFn,
    SpmdRule,
    contains_spmd_rule,
    get_spmd_rule,
    rule_function,
    rule_names,
    rules_in,
)

__all__ = ["NAMES", "PADDLE_RULES", "PROFILES", "PROFILE_NAMES", "RuleFn", "SpmdRule", "contains_spmd_rule",
           "get_spmd_rule", "rule_function", "rule_names", "rules_in"]
