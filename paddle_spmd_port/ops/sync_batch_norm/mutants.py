"""sync_batch_norm's mutants: realistic one-line bugs in the code its rules run (its own files, and the shared
code its rules judge best), each judged by tools/mutants.py."""

from __future__ import annotations

from ..kit.mutants import MutantSet, family_file, mutant

RULES_FILE = family_file("sync_batch_norm")

#: The family's mutants, read by tools/mutants.py.
MUTANTS = MutantSet((
    # ------------------------------------------------------------------ sync_batch_norm (replicated fallback)
    mutant("sync-partial-kept", RULES_FILE,
           "        inputs=tuple(DistAttr.make((-1,) * t.ndim, frozenset(), t.mesh) for t in inputs),",
           "        inputs=tuple(DistAttr.make((-1,) * t.ndim, t.partial_dims, t.mesh) for t in inputs),",
           "inputs keep their partial status", rules=("sync_batch_norm", "sync_batch_norm_grad")),
    mutant("sync-none-rank-0", RULES_FILE,
           "        inputs=tuple(DistAttr.make((-1,) * t.ndim, frozenset(), t.mesh) for t in inputs),",
           "        inputs=tuple(DistAttr.make((-1,) * len(t.dims_mapping), frozenset(), t.mesh) for t in inputs),",
           "a None input answers [] instead of [-1]", rules=("sync_batch_norm_grad",)),
    mutant("sync-inputs-on-x-mesh", RULES_FILE,
           "        inputs=tuple(DistAttr.make((-1,) * t.ndim, frozenset(), t.mesh) for t in inputs),",
           "        inputs=tuple(DistAttr.make((-1,) * t.ndim, frozenset(), x.mesh) for t in inputs),",
           "every input moves to x's mesh (None inputs included)", rules=("sync_batch_norm",)),
    mutant("sync-outputs-on-mean-mesh", RULES_FILE,
           "    x: RuleInput = inputs[0]",
           "    x: RuleInput = inputs[1]",
           "outputs take the second input's mesh (mean / scale) instead of x's",
           rules=("sync_batch_norm", "sync_batch_norm_grad")),
))
