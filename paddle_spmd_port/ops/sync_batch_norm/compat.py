"""sync_batch_norm in the compat layer: Paddle 3.3.1 registers no rule under its name (its dist API
falls back to the generic ``replicated`` rule), so the compat layer serves none either and asking
for one raises NotFound, as Paddle does."""

from __future__ import annotations

from typing import Any

from ..kit.compat import CompatEntries, CompatRule, ProbeKit

RULES: tuple[CompatRule, ...] = ()
CONTAINS = ("sync_batch_norm",)


def probes(kit: ProbeKit) -> None:
    @kit.probe("registry/unknown")
    def _() -> Any:
        kit.fetch("sync_batch_norm")


#: The family's compat entries, read by paddle_spmd_port.compat (the rules it serves, its probes).
COMPAT = CompatEntries(RULES, CONTAINS, probes)
