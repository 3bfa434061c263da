"""The oracle's numpy models of every rule, gathered from the op families.

Each family's ``ops/<family>/kernel.py`` holds its kernels and a ``MODELS`` dict (rule key ->
:class:`~paddle_spmd_port.ops.kit.kernel.OpModel`); the kernel API they are built from is
:mod:`paddle_spmd_port.ops.kit.kernel`. This module only assembles them, in the order of the
declared rule keys, so the oracle itself names no op. A family without a ``kernel.py`` has no
model: its rules are listed as not judged.
"""

from __future__ import annotations

from ..ops import FAMILIES, RULES, family_module
from ..ops.kit.kernel import Arrays, Facts, KernelRejects, OpModel, f32, required


def _gather() -> dict[str, OpModel]:
    found: dict[str, OpModel] = {}
    for family in FAMILIES:
        module = family_module(family, "kernel")
        if module is None:
            continue
        models: dict[str, OpModel] = module.MODELS
        for key, op_model in models.items():
            # a model keyed by another family's rule would be judged under the wrong facts
            if key not in FAMILIES[family].keys:
                raise ImportError(f"ops/{family}/kernel.py models {key!r}, which is not one of the family's rule keys")
            found[key] = op_model
    return {key: found[key] for key in RULES if key in found}


#: rule key -> its model, in the order of the declared rule keys.
MODELS: dict[str, OpModel] = _gather()


def all_reducing_families() -> tuple[str, ...]:
    """The families whose kernels all-reduce across ranks (what ``--sync-group`` is about)."""
    return tuple(dict.fromkeys(m.family for m in MODELS.values() if m.facts.all_reduces))


__all__ = ["MODELS", "Arrays", "Facts", "KernelRejects", "OpModel", "all_reducing_families", "f32", "required"]
