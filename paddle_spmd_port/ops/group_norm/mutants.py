"""group_norm's mutants: realistic one-line bugs in the code its rules run (its own files, and the shared
code its rules judge best), each judged by tools/mutants.py."""

from __future__ import annotations

from ..kit.mutants import MutantSet, family_file, mutant

RULES_FILE = family_file("group_norm")

#: The oracle's tests on the norm kernels and the proposed rules.
ORACLE_TESTS = ("tests/test_oracle_norms.py",)

#: The family's mutants, read by tools/mutants.py.
MUTANTS = MutantSet((
    # ------------------------------------------------------------------ group_norm
    mutant("gn-keeps-channel", RULES_FILE,
           "    return (x.dims_mapping[0],) + (-1,) * (x.ndim - 1)",
           "    return x.dims_mapping[:2] + (-1,) * (x.ndim - 2)",
           "x keeps axis 1's sharding (C) as well as axis 0's", rules=("group_norm_base",)),
    mutant("gn-stat-1d", RULES_FILE,
           "    stat = tx.attr((kept[0], -1))   # mean / variance [N, groups] on x's mesh",
           "    stat = tx.attr((kept[0],))   # mean / variance [N, groups] on x's mesh",
           "mean / variance answered 1-D (as a source revision before 3.3.1 did)", rules=("group_norm",)),
    mutant("gn-grad-no-partial", RULES_FILE,
           "                 DistAttr.make((-1,), partial, ts.mesh),  # PADDLE-QUIRK(gn-grad-partial)",
           "                 DistAttr.make((-1,), frozenset(), ts.mesh),  # PADDLE-QUIRK(gn-grad-partial)",
           "scale_grad is not marked Partial over x's axis-0 mesh dim", rules=("group_norm_grad",)),
    mutant("gn-grad-stat-message", family_file("group_norm", "checks"),
           "The ndim of bias in {GN} should be 2, but got [{tb.ndim}].",
           "The ndim of {t.name} in {GN} should be 2, but got [{t.ndim}].",
           "a mean / variance of the wrong rank is reported under its own name and rank (Paddle: bias, [1])",
           rules=("group_norm_grad_base",)),
    mutant("oracle-gn-one-group", family_file("group_norm", "kernel"),
           "    rows = _grouped(x, c, groups)",
           "    rows = _grouped(x, c, 1)",
           "the group_norm kernel normalises over all channels (groups ignored)", tests=ORACLE_TESTS),
    mutant("proposed-gn-keeps-c", family_file("group_norm", "proposed"),
           "    return with_coshards((tx.dims_mapping[0],) + (-1,) * (tx.ndim - 1), x)",
           "    return with_coshards(tx.dims_mapping[:2] + (-1,) * (tx.ndim - 2), x)",
           "proposed group_norm keeps C split", tests=ORACLE_TESTS),
))
