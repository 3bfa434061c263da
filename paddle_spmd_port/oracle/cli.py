"""``python -m paddle_spmd_port oracle``: numerical soundness of every rule's answer, no devices.

::

    python -m paddle_spmd_port oracle                          # every rule, paddle and proposed
    python -m paddle_spmd_port oracle --rules batch_norm layer_norm_grad --profile paddle
    python -m paddle_spmd_port oracle --max-cases 300 --report-dir out/
    python -m paddle_spmd_port oracle --meshes 2 4 2x2 2x3 2x2x2 --sync-group mesh

For every case of the oracle grid (:mod:`.grid`) and every profile, the rule answers, the answer
runs on a virtual mesh in numpy (:mod:`.simulator`) and gets a verdict. Printed: one table per
profile, the paddle-vs-proposed comparison, and each distinct bug with a minimal repro.
Written to ``--report-dir``: ``oracle.md`` (the same), ``oracle.json`` (counts and bugs),
``oracle-cases.jsonl.gz`` (one line per case that is not sound, rule-error or n/a) and ``repro-*`` files for
``python -m paddle_spmd_port launch`` / ``paddle.distributed.launch``.

Exit code: 0 done (Paddle's bugs are findings, not failures); 1 the proposed profile was run and
some answer of it is not sound; 2 bad arguments.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ..cases.grid import sample
from ..cases.rulebook import RULES
from .grid import ORACLE_MESHES, oracle_grid
from .report import (
    BUG_LABELS,
    PROFILES,
    Judge,
    Judged,
    RuleTally,
    bug_section,
    comparison_table,
    distinct_bugs,
    profile_table,
    rule_error_groups,
    summary_json,
)
from .simulator import OP_REJECTS, SOUND, SYNC_GROUPS


def _mesh(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a mesh looks like 4 or 2x3, got {text!r}") from None
    if not shape or min(shape) < 1:
        raise argparse.ArgumentTypeError(f"mesh sizes must be positive: {text!r}")
    return shape


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m paddle_spmd_port oracle", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rules", nargs="+", default=list(RULES), metavar="RULE",
                   help=f"rule keys (default all): {', '.join(RULES)}; commas also separate")
    p.add_argument("--profile", choices=(*PROFILES, "both"), default="both",
                   help="whose answers to judge (default both, with a comparison)")
    p.add_argument("--report-dir", type=Path, default=Path("reports"), help="where the report goes (default reports/)")
    p.add_argument("--max-cases", type=int, default=None, metavar="N",
                   help="a deterministic sample of N cases per rule (default: the whole grid)")
    p.add_argument("--meshes", nargs="+", type=_mesh, default=list(ORACLE_MESHES), metavar="MESH",
                   help="mesh shapes, e.g. 2 4 2x2 2x3 (default) or add 2x2x2")
    p.add_argument("--sync-group", choices=SYNC_GROUPS, default="batch",
                   help="ranks sync_batch_norm all-reduces over: the mesh dims that shard x's batch axis (default) "
                        "or the whole mesh (what Paddle's GPU kernel does with the world communicator)")
    p.add_argument("--max-bugs", type=int, default=40, help="distinct bugs to print in full (default 40)")
    p.add_argument("--quiet", action="store_true", help="print only the tables")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    rules = [r for item in args.rules for r in item.split(",") if r]
    unknown = [r for r in rules if r not in RULES]
    if unknown:
        print(f"unknown rule(s) {unknown}; choose from {', '.join(RULES)}", file=sys.stderr)
        return 2
    if args.max_cases is not None and args.max_cases < 1:
        print("--max-cases must be positive", file=sys.stderr)
        return 2
    profiles = PROFILES if args.profile == "both" else (args.profile,)

    start = time.perf_counter()
    judge = Judge(sync_group=args.sync_group)
    judged: dict[str, dict[str, list[Judged]]] = {p: {} for p in profiles}
    tallies: dict[str, dict[str, RuleTally]] = {p: {} for p in profiles}
    for rule in rules:
        t0 = time.perf_counter()
        cases = list(oracle_grid(rule, args.meshes))
        if args.max_cases is not None:
            cases = sample(cases, args.max_cases)
        for profile in profiles:
            rows = [judge(case, profile) for case in cases]
            judged[profile][rule] = rows
            tally = tallies[profile][rule] = RuleTally()
            for row in rows:
                tally.add(row)
        if not args.quiet:
            print(f"[oracle] {rule}: {len(cases)} cases x {len(profiles)} profile(s) in "
                  f"{time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - start

    everything = [j for p in profiles for rows in judged[p].values() for j in rows]
    bugs = distinct_bugs(everything)
    meshes = " ".join("x".join(map(str, m)) for m in args.meshes)
    parts = [f"# Oracle: numerical soundness on a virtual mesh\n\nmeshes {meshes}; sync_batch_norm all-reduces over "
             f"{'the batch mesh dims' if args.sync_group == 'batch' else 'the whole mesh'}; "
             f"{sum(len(r) for r in judged[profiles[0]].values())} cases per profile; {judge.simulations} "
             f"distinct simulations; {seconds:.1f}s.\n"]
    for profile in profiles:
        parts.append(f"## Profile `{profile}`\n\n{profile_table(tallies[profile])}\n")
    if len(profiles) == 2:
        parts.append("## paddle vs proposed\n\n" + comparison_table(judged["paddle"], judged["proposed"]) + "\n\n"
                     "paddle -> proposed. resharded inputs = inputs whose wanted dist attr differs from the given one; "
                     "with communication = those that need a collective (a Shard or Partial that is not kept; "
                     "Replicate -> Shard is a local slice); summed over the cases both profiles answer, and over those "
                     "where both answers are sound.\n")
    if "paddle" in profiles:
        parts.append("## Paddle's rule raising on cases the op can run\n\n"
                     + rule_error_groups(judged["paddle"], judged.get("proposed")))
    parts.append(f"## Distinct bugs ({len(bugs)})\n")
    files: dict[str, str] = {}
    for i, bug in enumerate(bugs, 1):
        if i > args.max_bugs:
            parts.append(f"... {len(bugs) - args.max_bugs} more in oracle.json\n")
            break
        text, extra = bug_section(bug, f"B{i}", args.sync_group)
        parts.append(text)
        files.update(extra)
    report = "\n".join(parts)
    print(report if not args.quiet else "\n".join(parts[: len(profiles) + 2]))

    out = args.report_dir
    out.mkdir(parents=True, exist_ok=True)
    (out / "oracle.md").write_text(report)
    (out / "oracle.json").write_text(json.dumps(summary_json(tallies, bugs, seconds, judge.simulations), indent=1))
    with gzip.open(out / "oracle-cases.jsonl.gz", "wt") as fh:
        for j in everything:
            if j.verdict.label in BUG_LABELS:
                v = j.verdict
                row = {"profile": j.profile, "id": j.case.case_id, "case": j.case.describe(), "answer": str(j.answer),
                       "label": v.label, "kind": v.kind, "tensor": v.tensor,
                       "max_error": v.max_error if v.max_error is not None and math.isfinite(v.max_error) else None}
                fh.write(json.dumps(row, separators=(",", ":")) + "\n")
    for name, text in files.items():
        (out / name).write_text(text)
    print(f"\n[oracle] report: {out / 'oracle.md'} ({seconds:.1f}s)", file=sys.stderr)

    if "proposed" in profiles:
        bad = [j for rows in judged["proposed"].values() for j in rows
               if j.verdict.label not in (SOUND, OP_REJECTS) and j.answer is not None]
        if bad:
            print(f"[oracle] the proposed profile has {len(bad)} answers that are not sound", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
