"""rms_norm's mutants: realistic one-line bugs in the code its rules run (its own files, and the shared
code its rules judge best), each judged by tools/mutants.py."""

from __future__ import annotations

from ..kit.mutants import MutantSet, family_file, mutant

RULES_FILE = family_file("rms_norm")

#: The oracle's tests on the norm kernels and the proposed rules.
ORACLE_TESTS = ("tests/test_oracle_norms.py",)

#: The family's mutants, read by tools/mutants.py.
MUTANTS = MutantSet((
    mutant("rms-reverse-reads-x", RULES_FILE,
           "    merged = merge_shardings([(x_axes, to.dims_mapping), (lead, tv.dims_mapping)])",
           "    merged = merge_shardings([(x_axes, tx.dims_mapping), (x_axes, to.dims_mapping), "
           "(lead, tv.dims_mapping)])",
           "the reverse rule merges x's own mapping too", rules=("rms_norm_reverse",)),
    mutant("rms-grad-tie-later-axis", RULES_FILE,
           "        for total, letter in sorted(costs):",
           "        for total, letter in sorted(costs, key=lambda c: (c[0], -ord(c[1]))):",
           "the alignment gives a mesh dim to the later of two equally cheap axes", rules=("rms_norm_grad",)),
    mutant("rms-fwd-invvar-partial-kept", RULES_FILE,
           "outputs=(x_attr, tx.attr(kept[:-1])))",
           "outputs=(x_attr, tx.attr(kept[:-1], keep_partial=True)))",
           "forward invvar keeps x's partial status", rules=("rms_norm",)),
    mutant("oracle-rms-grad-no-projection", family_file("rms_norm", "kernel"),
           "    dx = inv * (g - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))",
           "    dx = inv * g",
           "rms_norm_grad's x_grad drops the term through invvar", tests=ORACLE_TESTS),
    mutant("proposed-rms-grad-scale-grad-not-partial", family_file("rms_norm", "proposed"),
           "                        outputs=(tg.attr(kept), ln_param(ts, partial)))",
           "                        outputs=(tg.attr(kept), ln_param(ts)))",
           "proposed rms_norm_grad's scale_grad is not Partial over the split leading axes", tests=ORACLE_TESTS),
))
