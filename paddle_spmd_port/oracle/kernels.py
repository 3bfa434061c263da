"""The oracle's numpy models of every rule, gathered from the op families.

Each family's ``ops/<family>/kernel.py`` holds its kernels and binds ``KERNEL``, a
:class:`~paddle_spmd_port.ops.kit.kernel.KernelModels` (rule key -> ``OpModel``); the kernel API they are built from is
:mod:`paddle_spmd_port.ops.kit.kernel`. This module only assembles them, in the order of the
declared rule keys, so the oracle itself names no op. A family without a ``kernel.py`` has no
model: its rules are listed as not judged.
"""

from __future__ import annotations

from ..ops import FAMILIES, RULES, family_part
from ..ops.kit.kernel import Arrays, Facts, KernelModels, KernelRejects, OpModel, f32, required


def family_models(family: str) -> KernelModels | None:
    """The family's models (ops/<family>/kernel.py's ``KERNEL``), None where it has no kernel.py."""
    return family_part(family, KernelModels)


def _gather() -> dict[str, OpModel]:
    found: dict[str, OpModel] = {}
    for family in FAMILIES:
        part = family_models(family)
        if part is not None:
            found.update(part.models)  # keys checked against the family's (KernelModels.problems)
    return {key: found[key] for key in RULES if key in found}


#: rule key -> its model, in the order of the declared rule keys.
MODELS: dict[str, OpModel] = _gather()


def all_reducing_families() -> tuple[str, ...]:
    """The families whose kernels all-reduce across ranks (what ``--sync-group`` is about)."""
    return tuple(dict.fromkeys(m.family for m in MODELS.values() if m.facts.all_reduces))


__all__ = ["MODELS", "Arrays", "Facts", "KernelRejects", "OpModel", "all_reducing_families", "f32", "required"]
