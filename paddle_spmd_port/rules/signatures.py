"""Where scripts found the rule specs before the op families had folders: each family's
``ops/<family>/__init__.py`` declares its rule keys now, and its own constants beside them (a
family's layouts, say, in its folder); these names are read from :mod:`paddle_spmd_port.ops`.
"""

from __future__ import annotations

from ..ops import OPS, RULES, RuleSpec, rule_spec

__all__ = ["OPS", "RULES", "RuleSpec", "rule_spec"]
