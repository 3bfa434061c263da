"""p_norm's mutants: realistic one-line bugs in the code its rules run (its own files, and the shared
code its rules judge best), each judged by tools/mutants.py."""

from __future__ import annotations

from ..kit.mutants import MutantSet, family_file, mutant

RULES_FILE = family_file("p_norm")

#: The family's mutants, read by tools/mutants.py.
MUTANTS = MutantSet((
    mutant("pn-fwd-partial-dropped", RULES_FILE,
           "        partial = _NONE if d == -1 else _ONE_DIM[d]",
           "        partial = _NONE if True else _ONE_DIM[d]",
           "the forward's out is never partial over the mesh dim that splits the reduced axis", rules=("p_norm",)),
    mutant("pn-rev-partial-cleared", RULES_FILE,
           "outputs=(DistAttr.make(raw, to.partial_dims, to.mesh),))",
           "outputs=(DistAttr.make(raw, frozenset(), to.mesh),))",
           "the reverse clears out's partial status instead of answering out as given", rules=("p_norm_reverse",)),
    mutant("pn-grad-partial-kept", RULES_FILE,
           "    return DistAttr.make(spec.dims_mapping, frozenset(), t.mesh)",
           "    return DistAttr.make(spec.dims_mapping, spec.partial_dims, t.mesh)",
           "the grad keeps out_grad's partial status on every answer", rules=("p_norm_grad",)),
))
