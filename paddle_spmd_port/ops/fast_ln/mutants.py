"""fast_ln's mutants: realistic one-line bugs in the code its rules run (its own files, and the shared
code its rules judge best), each judged by tools/mutants.py."""

from __future__ import annotations

from ..kit.mutants import MutantSet, family_file, mutant

RULES_FILE = family_file("fast_ln")

#: The oracle's tests on the norm kernels and the proposed rules.
ORACLE_TESTS = ("tests/test_oracle_norms.py",)

#: The family's mutants, read by tools/mutants.py.
MUTANTS = MutantSet((
    mutant("fast-ln-grad-returns-bias", RULES_FILE,
           "        raise _renamed(exc) from None\n"
           "    return SpmdResult.make(inputs=full.inputs[:2] + full.inputs[3:], outputs=full.outputs)",
           "        raise _renamed(exc) from None\n"
           "    return SpmdResult.make(inputs=full.inputs, outputs=full.outputs)",
           "the grad returns the scale-as-bias attr among its inputs", rules=("fast_ln_grad",)),
    mutant("fast-ln-norms-two-axes", RULES_FILE,
           "        return len(x.shape) - 1",
           "        return max(len(x.shape) - 2, 0)",
           "fast_ln normalises the last two axes (begin_norm_axis = rank - 2)", rules=("fast_ln",)),
    mutant("oracle-fast-ln-grad-no-mean-term", family_file("fast_ln", "kernel"),
           "    dx = inv * (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))",
           "    dx = inv * (g - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))",
           "fast_ln_grad's x_grad drops the term through the mean", tests=ORACLE_TESTS),
    mutant("proposed-fast-ln-bias-grad-not-partial", family_file("fast_ln", "proposed"),
           "    bias_grad = DistAttr((-1,), partial,",
           "    bias_grad = DistAttr((-1,), frozenset(),",
           "proposed fast_ln_grad's bias_grad is not Partial over the split leading axes", tests=ORACLE_TESTS),
))
