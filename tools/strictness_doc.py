"""Print docs/strictness.md's table from the strictness declarations (ops/kit/strictness.py and each
family's checks.py): ``.venv/bin/python tools/strictness_doc.py > docs/strictness.md``.
tests/test_strictness.py checks the page equals this output."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from paddle_spmd_port.ops.registry import STRICTNESS

HEAD = """# Strictness: what the port refuses that Paddle's rule answers

The port refuses (an `InvalidSpecError`, class *port rejects invalid* in parity) some inputs Paddle's
rules do not check. Each such refusal is declared beside its check (`ops/kit/strictness.py` for the
checks every family shares, `STRICTNESS` in `ops/<family>/checks.py` for a family's own); this page is
written from those declarations by `tools/strictness_doc.py` (tests/test_strictness.py holds the two
equal; it runs Paddle's op on p_norm's out-of-range axis, and holds the mirrored answers to Paddle's
rules on seeded samples; the other op verdicts rest on the evidence column, or say `unmeasured`).

Two policies (`parity --policy`, `infer --policy`, `rule_function(key, profile, policy)`,
`get_spmd_rule(name, profile, policy)`):

* `strict` (the default): every input below is refused. Parity counts those cases by what Paddle's
  *op* does with the input: `port-refuses-op-refuses` (its InferMeta or Python API raises too),
  `port-refuses-op-inexpressible` (no program can hold it), `port-refuses-op-accepts`,
  `port-refuses-op-unmeasured`, `port-refuses-undeclared` (a refusal without a declaration).
* `mirror`: where the *mirrored* column names the rule key, the port answers as Paddle's rule does;
  any other refusal is raised again with `[mirror policy: not mirrored: ...]` naming why (Paddle's
  rule crashes there, answers from memory it never set, or the port does not model its answer). A
  mirror run's repro lines and per-case records name the policy (`--policy mirror`), so that they
  replay under it ([parity.md](parity.md#reports)).

Under either policy parity also counts the refused cases Paddle's *rule* answered (its native outcome
an answer), by the refusal's declaration: `paddle-answered-undefined` (rule `undefined`: Paddle's
answer there is memory it never set, which no port can or should agree with) and
`paddle-answered-not-mirrored` (any other: the gap still to close), per group in parity.md and
parity.json (`answered`, `total_answered`) and summed on the console's summary line. The kinds that
split one check's inputs by what Paddle's rule does with them (`x:length-short` from `x:length`,
`data_format:empty`, `axis:insert-outside`, `out_grad:insert-outside`) are raised by the mirror
functions only; under `strict` those inputs keep the check's own kind and declaration, so there they
count in the gap.

Rule: what Paddle's rule does with the input (`answers`, `crashes`, `varies`: either, by the rest of
the input, `undefined`: it reads or writes memory it never set, past a vector's or a string's end,
so what it answers is that memory's content; never mirrored).
Op: `refuses`, `accepts`, `inexpressible` (a dist tensor's placements give each mesh dim
one placement, and it always has a mesh, so no program holds such a tensor), `unmeasured`.

| check (kind) | families | reason | Paddle's rule | Paddle's op | evidence | mirrored |
|---|---|---|---|---|---|---|
"""


def page() -> str:
    rows = [f"| `{d.check}` | {', '.join(d.families) or 'all'} | {d.reason} | {d.rule} | {d.op} | "
            f"{d.evidence or '-'} | {', '.join(d.mirror_keys) or '-'} |" for d in STRICTNESS]
    return HEAD + "\n".join(rows) + "\n"


if __name__ == "__main__":
    sys.stdout.write(page())
