"""batch_norm's mutants: realistic one-line bugs in the code its rules run (its own files, and the shared
code its rules judge best), each judged by tools/mutants.py."""

from __future__ import annotations

from ..kit.mutants import MutantSet, family_file, mutant
from . import FAMILY

RULES_FILE = family_file("batch_norm")

#: The family's mutants, read by tools/mutants.py.
MUTANTS = MutantSet((
    # ------------------------------------------------------------------ batch_norm (forward + shared)
    mutant("bn-channel-axis-first-char", family_file("kit", "layout"),
           '    return data_format[1:2] == "C"',
           '    return data_format[0:1] == "C"',
           "channel axis read from data_format[0]: NCHW's C taken as the last axis", rules=FAMILY.keys),
    mutant("bn-batch-axis-kept", RULES_FILE,
           "    kept = [-1] * x.ndim",
           "    kept = [x.dims_mapping[0]] + [-1] * (x.ndim - 1)",
           "the batch axis keeps its sharding too", rules=FAMILY.keys),
    mutant("bn-fwd-scale-follows-c", RULES_FILE,
           "ts.attr((-1,)), tb.attr((-1,))),",
           "ts.attr(stat), tb.attr((-1,))),",
           "forward shards scale along C like mean (what a corrected rule would do)",
           rules=("batch_norm_static", "batch_norm")),
    mutant("bn-fwd-mean-partial-kept", RULES_FILE,
           "    mean_attr, var_attr = tm.attr(stat), tv.attr(stat)",
           "    mean_attr, var_attr = tm.attr(stat, keep_partial=True), tv.attr(stat)",
           "forward keeps mean's incoming partial status", rules=("batch_norm_static", "batch_norm")),
    mutant("bn-fwd-out-partial-kept", RULES_FILE,
           "            x_attr,                                   # out",
           "            tx.attr(kept, keep_partial=True),         # out",
           "forward out keeps x's partial status", rules=("batch_norm",)),
    mutant("bn-fwd-reserve-on-mean-mesh", RULES_FILE,
           "            tx.attr((-1,)),                           # reserve_space",
           "            tm.attr((-1,)),                           # reserve_space",
           "reserve_space takes mean's mesh instead of x's", rules=("batch_norm",)),
    mutant("bn-rank-message", family_file("kit", "layout"),
           "in {op} should be less than 6, but got",
           "in {op} should be less than or equal to 5, but got",
           "the x-rank error message reworded", rules=("batch_norm_static",)),
    # ------------------------------------------------------------------ batch_norm grad
    mutant("bn-grad-partial-cleared", RULES_FILE,
           "    partial = frozenset(m for m in kept if m != -1)",
           "    partial = frozenset()",
           "scale_grad / bias_grad not Partial over C's mesh dim", rules=("batch_norm_grad",)),
    mutant("bn-grad-scale-grad-sharded", RULES_FILE,
           "            DistAttr.make((-1,), partial, ts.mesh),",
           "            DistAttr.make((kept[c],), frozenset(), ts.mesh),",
           "scale_grad Shard(0) along C (the numerically right answer, not 3.3.1's)", rules=("batch_norm_grad",)),
    mutant("bn-grad-x-grad-partial-kept", RULES_FILE,
           "            tx.attr(kept),\n            DistAttr.make((-1,), partial, ts.mesh)",
           "            tx.attr(kept, keep_partial=True),\n            DistAttr.make((-1,), partial, ts.mesh)",
           "x_grad keeps x's partial status", rules=("batch_norm_grad",)),
    mutant("bn-grad-og-own-mesh", RULES_FILE,
           "                from_x(kept)),  # out_grad",
           "                t['out_grad'].attr(kept)),  # out_grad",
           "out_grad keeps its own mesh; Paddle gives it x's", rules=("batch_norm_grad",)),
    mutant("bn-grad-og-rank-message", family_file("batch_norm", "checks"),
           '"The ndim of out_grad in batch_norm should be equal with x, "',
           '"The ndim of out_grad in batch_norm should equal x\'s, "',
           "the out_grad-rank error message reworded", rules=("batch_norm_grad",)),
))
