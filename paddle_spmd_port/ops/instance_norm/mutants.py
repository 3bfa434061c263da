"""instance_norm's mutants: realistic one-line bugs in the code its rules run (its own files, and the shared
code its rules judge best), each judged by tools/mutants.py."""

from __future__ import annotations

from ..kit.mutants import MutantSet, family_file, mutant

RULES_FILE = family_file("instance_norm")

#: The oracle's tests on the norm kernels and the proposed rules.
ORACLE_TESTS = ("tests/test_oracle_norms.py",)

#: The family's mutants, read by tools/mutants.py.
MUTANTS = MutantSet((
    # ------------------------------------------------------------------ the rules
    mutant("in-clears-every-spatial-axis", RULES_FILE,
           "    mapping[2] = mapping[3] = -1",
           "    mapping[2:] = [-1] * (len(mapping) - 2)",
           "a 5-D x's last spatial axis is cleared too (the sound rule, not 3.3.1's)", rules=("instance_norm",)),
    mutant("in-grad-bias-own-mesh", RULES_FILE,
           "        outputs=(tx.attr(kept), param_grad, param_grad),",
           "        outputs=(tx.attr(kept), param_grad, DistAttr.make((-1,), partial, _tb.mesh)),",
           "bias_grad takes bias's mesh instead of a copy of scale's attr", rules=("instance_norm_grad",)),
    # ------------------------------------------------------------------ the oracle's kernel, the proposed rules
    mutant("oracle-in-two-spatial-axes", family_file("instance_norm", "kernel"),
           "    return tuple(range(2, x.ndim))",
           "    return tuple(range(2, min(x.ndim, 4)))",
           "the instance_norm kernel reduces over axes 2 and 3 only (as Paddle's rule assumes)", tests=ORACLE_TESTS),
    mutant("proposed-in-keeps-spatial", family_file("instance_norm", "proposed"),
           "    return with_coshards(tx.dims_mapping[:2] + (-1,) * (tx.ndim - 2), x)",
           "    return with_coshards(tx.dims_mapping, x)",
           "proposed instance_norm keeps x's spatial splits", tests=ORACLE_TESTS),
    mutant("proposed-in-grad-partial-on-c", family_file("instance_norm", "proposed"),
           "    channel = kept[1:2]\n    partial = frozenset(mesh_dims_of(kept[0]))",
           "    channel = kept[1:2]\n    partial = frozenset(m for e in kept[:2] for m in mesh_dims_of(e))",
           "proposed instance_norm_grad marks scale_grad/bias_grad Partial over C's mesh dim too", tests=ORACLE_TESTS),
))
