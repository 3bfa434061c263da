"""p_norm on older Paddle releases (evidence: docs/releases/<version>.md, under each name).

Nothing is declared yet: p_norm's sweep on the 3.0.0-3.3.0 venvs is being measured, and a
difference enters here only with its measurement written up (docs/ops/p_norm.md, "Releases").
An empty table makes each older release's run report any difference as a mismatch, which is
the fail-closed reading of "not measured".
"""

from __future__ import annotations

from ..kit.releases import Differences

DIFFERENCES: Differences = {}
