"""sync_batch_norm on older Paddle releases (evidence: docs/releases/<version>.md). Its only route
is the registry's replicated rule, which reads no mapping: 3.1.x's co-shard reads do not concern it."""

from __future__ import annotations

from ..kit.releases import (
    NO_MULTI_DIMS_MAPPING,
    Differences,
    ReleaseNotes,
)

DIFFERENCES: Differences = {
    "2.6.2": (NO_MULTI_DIMS_MAPPING.for_rules("sync_batch_norm", "sync_batch_norm_grad"),),
    "3.0.0": (NO_MULTI_DIMS_MAPPING.for_rules("sync_batch_norm", "sync_batch_norm_grad"),),
}

#: The family's release notes, read by paddle_spmd_port/releases.py (one profile per release).
RELEASES = ReleaseNotes(differences=DIFFERENCES)
