"""``python -m paddle_spmd_port parity``: the main job.

Enumerates every rule's grid (:mod:`.cases.grid`), runs each case through the port (in this
process) and through native Paddle (crash-isolated workers, :mod:`.native.pool`), compares every
cell (:mod:`.compare`) and writes ``parity.md`` + ``parity.json`` (+ JUnit XML with ``--junit``)
into the report directory -- after every backend group, so a failure still leaves a partial
report. Exit status: 0 when no case mismatches, 1 otherwise, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Sequence

from .cases.case import Case
from .cases.grid import GRIDS, grid_for, sample
from .compare import compare
from .outcome import Outcome, run_port
from .progress import Progress
from .report import ParityReport, RuleTally, repro_snippet
from .versions import AGREEING, VersionProfile, detect_profile

#: The native backends each rule is compared with by default, the primary one first.
#: registry  -- core.get_phi_spmd_rule, what Python users call (sync: the ``replicated`` rule)
#: compiled  -- Paddle's exported C++ rule functions called directly (reaches every cell)
#: pir       -- the op built in PIR static mode; a second, independent route for the hidden rules
DEFAULT_BACKENDS: dict[str, tuple[str, ...]] = {
    "batch_norm_static": ("registry",),
    "layer_norm": ("registry", "pir"),
    "layer_norm_reverse": ("registry",),
    "sync_batch_norm": ("registry",),
    "sync_batch_norm_grad": ("registry",),
    "batch_norm": ("compiled", "pir"),
    "batch_norm_grad": ("compiled", "pir"),
    "layer_norm_grad": ("compiled", "pir"),
}
DEFAULT_BACKEND = {rule: backends[0] for rule, backends in DEFAULT_BACKENDS.items()}
BACKENDS = ("registry", "compiled", "pir")  # also the order backend groups run in


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m paddle_spmd_port parity", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rules", default="all",
                    help=f"comma-separated rule keys, or 'all' ({', '.join(GRIDS)})")
    ap.add_argument("--backend", choices=BACKENDS, default=None,
                    help="compare every rule with this one backend only (default: see DEFAULT_BACKENDS)")
    ap.add_argument("--primary-only", action="store_true",
                    help="skip the second-opinion backend (pir) where a rule has two")
    ap.add_argument("--max-cases", type=int, default=None, help="at most this many cases per rule (first ones)")
    ap.add_argument("--sample", type=int, default=None, help="a deterministic random sample of N cases per rule")
    ap.add_argument("--seed", type=int, default=0, help="seed for --sample")
    ap.add_argument("--workers", type=int, default=2, help="native worker processes (default 2)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds a silent worker is given before it is killed")
    ap.add_argument("--report-dir", default="reports/parity", help="where parity.md / parity.json go")
    ap.add_argument("--junit", default=None, help="also write JUnit XML to this path")
    ap.add_argument("--show-repro", action="store_true", help="print a standalone Python snippet per mismatch")
    ap.add_argument("--list", action="store_true", help="print each rule's grid size and exit")
    ap.add_argument("--quiet", action="store_true", help="no progress line")
    args = ap.parse_args(argv)
    names = list(GRIDS) if args.rules == "all" else [r.strip() for r in args.rules.split(",") if r.strip()]
    unknown = [r for r in names if r not in GRIDS]
    if unknown:
        ap.error(f"--rules: unknown rule(s) {', '.join(unknown)}; choose from {', '.join(GRIDS)}")
    if args.max_cases is not None and args.max_cases < 1:
        ap.error("--max-cases must be >= 1")
    if args.sample is not None and args.sample < 1:
        ap.error("--sample must be >= 1")
    if args.workers < 1:
        ap.error("--workers must be >= 1")
    args.rule_names = names
    return args


def select_cases(rule: str, max_cases: int | None, n_sample: int | None, seed: int) -> list[Case]:
    cases = list(grid_for(rule))
    if n_sample is not None:
        cases = sample(cases, n_sample, seed)
    if max_cases is not None:
        cases = cases[:max_cases]
    return cases


def run_native_group(backend: str, cases: list[Case], args: argparse.Namespace,
                     report: ParityReport) -> list[Outcome]:
    from .native.pool import run_native

    bar = Progress(f"native {backend:8s}", len(cases), enabled=not args.quiet)
    try:
        outcomes, info = run_native(cases, backend=backend, workers=args.workers, timeout=args.timeout,
                                    on_progress=bar.update)
    finally:
        bar.close()
    report.paddle.update(info)
    return outcomes


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    by_rule = {r: select_cases(r, args.max_cases, args.sample, args.seed) for r in args.rule_names}
    if args.list:
        for rule, cases in by_rule.items():
            n_cells = cases[0].spec.n_cells if cases else 0
            print(f"{rule:22s} {len(cases):8,d} cases {len(cases) * n_cells:10,d} cells")
        return 0

    report = ParityReport()
    profile: VersionProfile | None = None
    groups: dict[str, list[str]] = {}
    for rule in by_rule:
        backends = (args.backend,) if args.backend else DEFAULT_BACKENDS[rule]
        for backend in backends[:1] if args.primary_only else backends:
            groups.setdefault(backend, []).append(rule)
    try:
        for backend, rules in sorted(groups.items(), key=lambda item: BACKENDS.index(item[0])):
            cases = [c for r in rules for c in by_rule[r]]
            t0 = time.time()
            try:
                native = run_native_group(backend, cases, args, report)
            except (ImportError, RuntimeError) as exc:
                report.notes.append(f"{backend} backend unavailable: {str(exc).strip()[-400:]}")
                native = [Outcome(unreachable=f"{backend} backend unavailable") for _ in cases]
            native_seconds = time.time() - t0
            if profile is None and report.paddle.get("version"):
                profile = detect_profile(report.paddle["version"], report.paddle.get("commit", ""))
                report.profile = profile.to_json()
                if profile.is_newer_than_known:
                    report.notes.append("Paddle is newer than every known profile: each mismatch is a possible "
                                        "regression of this release (or a change the port has to follow).")
            offset = 0
            for rule in rules:
                key = rule if rule not in report.tallies else f"{rule}@{backend}"
                tally = report.tallies[key] = RuleTally(rule, backend)
                t1 = time.time()
                rule_cases = by_rule[rule]
                for case, nat in zip(rule_cases, native[offset:offset + len(rule_cases)], strict=True):
                    port = run_port(case)
                    cmp = compare(case.spec, port, nat)
                    if cmp.verdict not in AGREEING and profile is not None:
                        why = profile.explain(case, port, nat, cmp)
                        if why:
                            cmp = dataclasses.replace(cmp, verdict="known-difference", note=why)
                    tally.add(case, port, nat, cmp)
                tally.port_seconds = time.time() - t1
                tally.native_seconds = native_seconds * len(rule_cases) / max(len(cases), 1)
                offset += len(rule_cases)
            report.write(args.report_dir, args.junit)  # partial report after every group
        report.complete = True
    finally:
        report.finished = time.time()
        out = report.write(args.report_dir, args.junit)
    print(report.table())
    print(f"\n{report.total_cells:,} cells, {report.total_mismatches:,} mismatching cases; "
          f"{report.finished - report.started:.1f} s; report in {out}/parity.md")
    if args.show_repro:
        for tally in report.tallies.values():
            for ex in tally.examples.get("mismatch", []):
                print(f"\n# --- {ex['describe']}\n" + repro_snippet(Case.from_json(ex["case"])))
    return 1 if report.total_mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
