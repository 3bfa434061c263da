"""``python -m paddle_spmd_port parity``: the main job.

Enumerates every rule's grid (paddle_spmd_port/grid.py), runs each case through the port (in this
process) and through native Paddle (crash-isolated workers, native/pool.py), compares every
cell (paddle_spmd_port/compare.py) and writes parity.md, parity.json and parity-cases.jsonl.gz
(+ JUnit XML with --junit) into the report directory -- after every backend group, so a
failure or an interrupt still leaves a partial report whose first line says so. The PIR group,
the longest, starts first (as soon as its own cases are drawn) and runs alongside the others
(BackgroundGroup); groups are still compared and reported in the fixed order of
paddle_spmd_port/native/routes.py BACKENDS.

--random N --seed S replaces the grid with N random cases per rule drawn outside it
(parity/random_cases.py: other meshes, odd sizes, higher ranks, None, invalid and mixed-mesh
inputs), compared through each rule's primary backend (or --backend); every mismatching case's
infer --case-json line is printed on the console.

Fails closed: a case is *compared* when at least one native route gave an answer, an error, or a
crash the port predicted. Exit status (the table in runctl/__init__.py):

    0    every selected case compared, no mismatching cell
    1    some case mismatches (outranks 3)
    2    bad usage (one line; nothing run, nothing written)
    3    some selected case was compared by no route (Paddle missing, a backend unavailable,
         workers timing out, an empty selection), or an input invalid for its op was answered
         but its re-run gave no answer (not re-checked); --allow-uncompared accepts that, and the
         report's first line then says so. Cases of a rule (or a need, e.g. co-shards) the installed
         release lacks, where its release profile declares exactly that (class release-lacks), are
         not compared and not counted as uncompared: they are listed apart and fail nothing, unless
         no case at all was compared
    4    internal error (one line; the traceback saved to a file)
    130 / 143  interrupted by SIGINT / SIGTERM (workers ended, partial report written)

Checked before any work (one line, exit 2): a --timeout that is not finite and > 0, an empty
--report-dir or --junit, a --backend that cannot reach a rule of --rules (the line names the routes
that can), --workers beyond this machine's cores (--oversubscribe insists). Within a second it
says what it is about to do (Paddle version and commit, release profile, selection, report
directory) on stderr, unless --quiet.

--save-baseline FILE keeps every native outcome of a finished run; --baseline FILE diffs the
installed Paddle's outcomes with a stored run of the same selection, native against native, and
triages each changed case with the oracle (parity/baseline.py: baseline.md, baseline.json and
baseline-cases.jsonl.gz in the report directory); the exit status is then the diff's: 1 on any
regression, 3 on any case not compared with the baseline, else 0.

The report goes to reports/parity for the whole default sweep and to
reports/parity-<selection> for any narrower one, so a sample never replaces the full sweep's
report; a --report-dir holding another selection's report is refused unless --replace-report.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import os
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..case import Case
from ..compare import compare
from ..grid import GRIDS, coshard_cases, grid_for, sample
from ..native.routes import BACKENDS, DEFAULT_BACKEND, DEFAULT_BACKENDS, add_backend_argument, routes_reaching
from ..ops import rule_spec
from ..outcome import Outcome, port_outcome
from ..releases import AGREEING, ReleaseProfile, detect_release
from ..runctl.command import run_command
from ..runctl.exits import EXIT_FINDING, EXIT_INCOMPLETE, EXIT_OK, ChildRaised, UsageError, error_text, prefix
from ..runctl.forked import call_in_child
from ..runctl.grammar import (
    MAX_SECONDS,
    ArgumentParser,
    add_policy_argument,
    add_rules_argument,
    add_selection_arguments,
    add_shard_argument,
    add_workers_arguments,
    count_at_most,
    path_text,
    policy_of,
    seconds,
    workers,
)
from ..runctl.memory import give_back, hold_thresholds
from ..runctl.paths import add_replace_report_argument, check_output_dir, check_output_file, refuse_other_selection
from ..runctl.signals import Interrupted, add_detail, stopped_by, write_partial
from ..types import drop_memos
from ..validity import input_problem
from .output import write_diff, write_parity_report
from .progress import Progress
from .random_cases import CASES_PER_ROUND, MAX_CASES_PER_RULE, draw_units, random_cases, rounds, shard_units
from .report import CASES_FILE, DONE, INTERRUPTED, NOT_STARTED, RUNNING, ParityReport
from .repro import named_policy, one_line_repro, repro_snippet

if TYPE_CHECKING:
    from .baseline import Diff, Saver

__all__ = ["BACKENDS", "DEFAULT_BACKEND", "DEFAULT_BACKENDS", "main", "parse_args", "select_cases"]
DEFAULT_REPORT_DIR = Path("reports/parity")
REPROS_PRINTED = 50
"""Mismatching cases whose ``infer --case-json`` line is printed on the console (all are in the report)."""
ROUNDS_APART = True
"""A run of more than one round (random_cases.CASES_PER_ROUND) runs each in a forked copy of the sweep
(runctl/forked.py says why), which sends back the report with its round tallied: the sweep's own
memory holds no round's cases, and a round's peak leaves with its copy. The copy runs the same code
as a round in the sweep; tests that watch a round's inside from this process set this to False."""

def build_parser() -> ArgumentParser:
    ap = ArgumentParser(prog="python -m paddle_spmd_port parity", description=__doc__,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_rules_argument(ap)
    add_backend_argument(ap, "compare every rule through this one native route only (default: each rule's "
                             "routes, paddle_spmd_port/native/routes.py)")
    ap.add_argument("--primary-only", action="store_true",
                    help="skip the second-opinion backend (pir) where a rule has two")
    add_selection_arguments(ap, seed_help="seed for --sample and --random (default 0)")
    ap.add_argument("--random", type=count_at_most(MAX_CASES_PER_RULE), default=None, metavar="N",
                    help="instead of the grid, N random cases per rule drawn outside it (other meshes, odd sizes, "
                         "higher ranks, None, invalid and mixed-mesh inputs; see parity/random_cases.py), through "
                         f"each rule's primary backend unless --backend is given; at most {MAX_CASES_PER_RULE:,}")
    add_shard_argument(ap, "the --random cases (blocks of each rule's stream, dealt in turn: parity/random_cases.py)")
    ap.add_argument("--merge", nargs="+", type=path_text, default=None, metavar="DIR",
                    help="join the reports of a run's --shard parts (their --report-dir each) into one, written "
                         "to --report-dir (default: where the unsplit run's report goes); nothing is run. A part "
                         "missing or unfinished makes it incomplete (exit 3), never a pass (parity/merge.py)")
    ap.add_argument("--coshard", action="store_true",
                    help="only each rule's co-shard set (co-sharded inputs, ids <rule>-coshard-...; "
                         "paddle_spmd_port/grid.py coshard_cases); --sample and --max-cases then apply to it")
    add_workers_arguments(ap, f"native worker processes per backend group; unless given, one per "
                              f"{CASES_PER_DEFAULT_WORKER} of the group's cases (the compiled route's "
                              "groups aside), up to the default")
    ap.add_argument("--timeout", type=seconds, default=60.0,
                    help=f"seconds a silent worker is given before it is killed (> 0, at most {MAX_SECONDS:.0f}; "
                         "default 60)")
    ap.add_argument("--report-dir", type=path_text, default=None,
                    help=f"where the report goes (default {DEFAULT_REPORT_DIR} for the whole sweep, "
                         f"{DEFAULT_REPORT_DIR}-<selection> for a narrower one)")
    add_replace_report_argument(ap)
    add_policy_argument(ap)
    ap.add_argument("--allow-uncompared", action="store_true",
                    help="exit 0 even if some case was compared by no route (the report's first line says so)")
    ap.add_argument("--junit", type=path_text, default=None, help="also write JUnit XML to this path")
    ap.add_argument("--save-baseline", type=path_text, default=None, metavar="FILE",
                    help="also write every native outcome of the run to FILE (gzip JSON lines, with Paddle's version, "
                         "commit and the selection; parity/baseline.py), for a later --baseline; written whole at the "
                         "end, not at all if the run is interrupted")
    ap.add_argument("--baseline", type=path_text, default=None, metavar="FILE",
                    help="compare the installed Paddle's native outcomes with FILE's (a --save-baseline of the same "
                         "selection), cell by cell, and triage each changed case with the oracle (regressed, fixed, "
                         "changed, newly raises, no longer raises): baseline.md, baseline.json (a summary) and "
                         "baseline-cases.jsonl.gz (every changed case) in --report-dir. "
                         "The exit code is then the diff's: 1 on any regression, 3 on any case not compared with "
                         "the baseline, else 0 (the port's mismatches stay in parity.md)")
    ap.add_argument("--show-repro", action="store_true", help="print a standalone Python snippet per mismatch")
    ap.add_argument("--list", action="store_true", help="print each rule's grid size and exit")
    ap.add_argument("--quiet", action="store_true", help="no opening line and no progress line")
    return ap


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    args = build_parser().parse_args(argv)
    for flag, value in (("--save-baseline", args.save_baseline), ("--baseline", args.baseline)):
        if value is not None and (args.merge is not None or args.list):
            raise UsageError(flag, f"needs a run, and {'--merge' if args.merge is not None else '--list'} runs "
                             "nothing", f"drop {flag}, or drop {'--merge' if args.merge is not None else '--list'}")
    if args.list:  # --list prints and writes nothing: an output option with it would be silently ignored
        for flag, value in (("--junit", args.junit), ("--report-dir", args.report_dir)):
            if value is not None:
                raise UsageError(flag, "writes a report, and --list writes none (it prints each rule's grid size)",
                                 f"drop {flag}, or drop --list")
    if args.merge is not None:  # checked by the merge itself (parity/merge.py), against the parts' reports
        return args
    args.policy = policy_of(args.policy)
    if args.shard is not None and args.random is None:
        raise UsageError("--shard", "splits a --random run only", "give --random N with --shard K/M")
    # rule keys (all: the signature table's order, which is the grid's), checked by runctl.grammar.rule_list
    names = args.rules
    if args.random is not None:
        for flag, value in (("--sample", args.sample), ("--max-cases", args.max_cases),
                            ("--coshard", args.coshard or None)):
            if value is not None:
                raise UsageError("--random", f"cannot be combined with {flag} (random cases are drawn, not sampled "
                                 "from the grid)", f"give --random N alone (N cases per rule), without {flag}")
    if args.primary_only and args.backend:
        raise UsageError("--primary-only", f"contradicts --backend {args.backend} (one route is already chosen)",
                         "drop --primary-only or drop --backend")
    args.rule_names = list(dict.fromkeys(names))
    _check_routes(args.rule_names, args.backend)
    args.workers_given = args.workers is not None
    args.workers = workers(args.workers, args.oversubscribe)
    args.selection = selection_of(args)
    # a baseline holds native outcomes only, which the port's policy does not touch: it is saved and
    # matched under the selection without the policy, so a run under either policy diffs with it
    args.native_selection = selection_of(args, with_policy=False)
    if not args.list:
        slug = args.selection["slug"]
        default_dir = DEFAULT_REPORT_DIR if args.selection["full"] else Path(f"{DEFAULT_REPORT_DIR}-{slug}")
        args.report_dir = check_output_dir(args.report_dir or default_dir, "--report-dir")
        if args.junit:
            args.junit = check_output_file(args.junit, "--junit")
        refuse_other_selection(args.report_dir / "parity.json", args.selection, args.replace_report)
    args.stored = None
    if args.save_baseline is not None:
        args.save_baseline = check_output_file(args.save_baseline, "--save-baseline")
        if args.baseline is not None and args.save_baseline.resolve() == args.baseline.resolve():
            raise UsageError("--save-baseline", f"{args.save_baseline} is also the --baseline being compared with",
                             "save the new baseline to another file")
    if args.baseline is not None:
        from .baseline import load

        args.stored = load(args.baseline, args.native_selection)  # every check before any work (one line, exit 2)
    return args


def opening_line(args: argparse.Namespace) -> str:
    """What the run is about to do, printed before any work: Paddle's version and commit (read from its
    files: Paddle is not imported), the release profile the run compares with, the selection, the report."""
    from ..installed import NOT_INSTALLED, paddle_version

    found = paddle_version()
    if found["version"] == NOT_INSTALLED:
        paddle = "Paddle not installed (no native route can answer: every case stays uncompared)"
    else:
        profile = detect_release(found["version"], found["commit"])
        how = ("exact" if profile.is_exact and profile.commit_matches else
               "newer than every known profile" if profile.is_newer_than_known else
               "older than every known profile" if profile.is_older_than_known else "nearest known")
        paddle = f"Paddle {found['version']} (commit {found['commit'][:12]}), release profile {profile.version} ({how})"
    junit = f" and {args.junit}" if args.junit else ""
    return f"{prefix('parity')}: {paddle}; comparing {args.selection['describe']}; report in {args.report_dir}{junit}"


def _check_routes(rules: list[str], backend: str | None) -> None:
    """``--backend`` names a route every rule of the selection can be compared through
    (backends.routes_reaching: the routes each rule has); else one line naming the routes that can."""
    if backend is None:
        return
    for rule in rules:
        routes = routes_reaching(rule)
        if backend not in routes:
            raise UsageError("--backend", f"the {backend} route cannot reach {rule}",
                             f"{rule} is reached by {', '.join(routes)}: give one of them, or leave out --backend "
                             "(each rule's own routes)")


def selection_of(args: argparse.Namespace, with_policy: bool = True) -> dict:
    """What this run compares: a stable key, a slug for its default report dir, and a sentence. The
    port's policy is part of it (``policy``; named in the slug and the sentence unless the default,
    so a mirror run's report goes apart from a strict one's and the parts of a merge must agree on it);
    ``with_policy=False``: the selection as if the default (what a baseline is matched by)."""
    policy = args.policy if with_policy else policy_of(None)
    all_rules = args.rule_names == list(GRIDS)
    slug, words = [], []
    if not all_rules:
        slug.append("rules-" + "+".join(args.rule_names))
        words.append("rules " + ", ".join(args.rule_names))
    else:
        words.append(f"all {len(GRIDS)} rules")
    if args.backend:
        slug.append(f"backend-{args.backend}")
        words.append(f"backend {args.backend} only")
    elif args.primary_only or args.random is not None:  # random mode: each rule's primary backend
        slug.append("primary")
        words.append("primary backends only")
    else:
        words.append("default backends")
    if args.coshard:
        slug.append("coshard")
        words.append("the co-shard set only")
    named = named_policy(policy)
    if named:  # (before random and shard: a --shard part's slug ends with its part, parity/merge.py)
        slug.append(f"policy-{named}")
        words.append(f"the port under policy {named}")
    if args.random is not None:
        slug.append(f"random{args.random}-seed{args.seed}")
        words.append(f"random {args.random} cases per rule outside the grid (seed {args.seed})")
    if args.shard is not None:
        slug.append(f"shard{args.shard[0]}of{args.shard[1]}")
        words.append(f"part {args.shard[0]} of {args.shard[1]}")
    if args.sample is not None:
        slug.append(f"sample{args.sample}-seed{args.seed}")
        words.append(f"a sample of {args.sample} cases per rule (seed {args.seed})")
    if args.max_cases is not None:
        slug.append(f"max{args.max_cases}")
        words.append(f"the first {args.max_cases} cases per rule")
    full = not slug
    return {"full": full, "slug": "_".join(slug) or "full", "rules": args.rule_names, "backend": args.backend,
            "primary_only": args.primary_only or args.random is not None, "sample": args.sample,
            "random": args.random, "seed": args.seed, "coshard": args.coshard,
            "max_cases": args.max_cases, "shard": list(args.shard) if args.shard else None, "policy": policy,
            "describe": ("the whole grid: " if full else "") + "; ".join(words)}


def select_cases(rule: str, max_cases: int | None, n_sample: int | None, seed: int,
                 n_random: int | None = None, coshard: bool = False) -> list[Case]:
    if n_random is not None:
        return random_cases(rule, n_random, seed)
    cases = list(coshard_cases(rule) if coshard else grid_for(rule))
    if n_sample is not None:
        cases = sample(cases, n_sample, seed)
    if max_cases is not None:
        cases = cases[:max_cases]
    return cases


#: Without --workers, a group of a route whose workers import Paddle starts one worker per this many
#: of its cases (at least one, at most the default count): a worker's start costs a core ~1.6 s, and
#: a few hundred cases take about that (300 registry cases: 6.5 s on one worker, 7.4 s on two, at a
#: load of 8 on 2 cores), so a second worker for fewer cases costs more than it saves. The compiled
#: route's callers start in milliseconds: its groups keep the default count. (The re-run of invalid
#: inputs sizes its own: native/pool.py's RERUN_PER_WORKER.)
CASES_PER_DEFAULT_WORKER = 500


def group_workers(args: argparse.Namespace, backend: str, n_cases: int) -> int:
    """The native workers for ``backend``'s group of ``n_cases``: ``--workers`` as given, else the
    default count (runctl.grammar.workers), cut to one per :data:`CASES_PER_DEFAULT_WORKER` cases
    unless the route is the compiled one."""
    if getattr(args, "workers_given", True) or backend == "compiled":
        return int(args.workers)
    return max(1, min(int(args.workers), -(-n_cases // CASES_PER_DEFAULT_WORKER)))


def run_native_group(backend: str, cases: list[Case], args: argparse.Namespace,
                     report: ParityReport) -> list[Outcome]:
    from ..native.pool import run_native

    bar = Progress(f"native {backend:8s}", len(cases), enabled=not args.quiet)
    try:
        outcomes, info = run_native(cases, backend=backend, workers=group_workers(args, backend, len(cases)),
                                    timeout=args.timeout, on_progress=bar.update)
    finally:
        bar.close()
    report.paddle.update(info)
    return outcomes


def rerun_native(backend: str, cases: list[Case], args: argparse.Namespace) -> list[Outcome]:
    """``cases`` run again on ``backend`` in a pool of their own (parity/baseline.py's Diff.recheck): an
    unavailable backend gives not-run outcomes (no evidence either way)."""
    from ..native.pool import BackendUnavailable, run_native

    if not args.quiet:
        print(f"re-running {len(cases):,} changed invalid-input cases on {backend} (is their outcome stable?)",
              file=sys.stderr, flush=True)
    try:
        return run_native(cases, backend=backend, workers=group_workers(args, backend, len(cases)),
                          timeout=args.timeout, recheck=False)[0]
    except (ImportError, BackendUnavailable) as exc:  # (any other error is ours: exit 4)
        why = " ".join(str(exc).strip().split())[-300:]
        return [Outcome(not_run=f"backend unavailable: {why}") for _ in cases]


class Observer(Protocol):
    """Sees every native outcome the sweep tallies (parity/baseline.py's Saver and Diff)."""

    def record(self, rule: str, backend: str, index: int, case: Case, native: Outcome) -> None: ...


#: The group started first and run alongside the others (the longest: it sets the sweep's wall time);
#: without it (random mode: primary backends only), the registry's (its workers import Paddle).
BACKGROUND_BACKEND = "pir"
BACKGROUND_FALLBACK = "registry"


class BackgroundGroup(threading.Thread):
    """One backend group's native run in a thread of its own, so that the other groups, and the
    port and the comparison of each, run meanwhile: the cores stay busy while this one's workers
    start and while its slices finish unevenly. :meth:`stop` ends its workers (an interrupt)."""

    def __init__(self, backend: str, cases: list[Case], args: argparse.Namespace) -> None:
        super().__init__(daemon=True)
        self.backend, self.cases, self.args = backend, cases, args
        self.cancel = threading.Event()
        self.outcomes: list[Outcome] | None = None
        self.partial: list[Outcome | None] | None = None
        self.info: dict = {}
        self.error: BaseException | None = None
        self.seconds = 0.0

    def run(self) -> None:
        from ..native.pool import run_native

        t0 = time.time()
        bar = Progress(f"native {self.backend:8s}", len(self.cases), enabled=not self.args.quiet)
        bar.tty = False  # a line every few seconds: the groups run meanwhile redraw their own line
        try:
            self.outcomes, self.info = run_native(self.cases, backend=self.backend,
                                                  workers=group_workers(self.args, self.backend, len(self.cases)),
                                                  timeout=self.args.timeout, on_progress=bar.update,
                                                  cancel=self.cancel)
        except BaseException as exc:  # handed to the main thread by result()
            self.error = exc
            self.partial = getattr(exc, "partial_outcomes", None)
        finally:
            self.seconds = time.time() - t0
            bar.close()

    def result(self) -> list[Outcome]:
        """Wait for the outcomes (interruptible: joins in short steps)."""
        while self.is_alive():
            self.join(0.2)
        if self.error is not None:
            raise self.error
        assert self.outcomes is not None
        return self.outcomes

    def stop(self) -> list[Outcome | None] | None:
        """End the workers; the outcomes received so far (None for the rest), if any."""
        self.cancel.set()
        self.join(30)
        return list(self.outcomes) if self.outcomes is not None else self.partial


def _write_unstarted(args: argparse.Namespace, report: ParityReport | None, drawn: dict[str, list[Case]],
                     groups: dict[str, list[str]], exc: BaseException) -> None:
    """The partial report of a run ended while its cases were drawn and its workers started: every
    group planned, nothing compared (the rules not drawn yet count 0 cases), the cases file emptied
    so that no earlier run's rows sit beside it."""
    if report is None:
        report = ParityReport(selection=args.selection, allow_uncompared=args.allow_uncompared)
        for backend, rules in groups.items():
            for rule in rules:
                cases = drawn.get(rule, [])
                report.plan(rule, backend, len(cases), rule_spec(rule).n_cells if cases else 0)
    report.interrupted = stopped_by(exc)
    report.notes.append("ended while the cases were being drawn and the workers started: nothing was compared "
                        "(a rule whose cases were not drawn yet shows 0 selected)")
    for tally in report.tallies.values():
        tally.state = NOT_STARTED
    report.finished = time.time()
    report.open_cases_file(args.report_dir)
    report.close_cases_file()
    write_parity_report(report, args.report_dir, args.junit)


def _plan_groups(args: argparse.Namespace) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for rule in args.rule_names:
        backends = (args.backend,) if args.backend else DEFAULT_BACKENDS[rule]
        for backend in backends[:1] if args.primary_only or args.random is not None else backends:
            groups.setdefault(backend, []).append(rule)
    return dict(sorted(groups.items(), key=lambda item: BACKENDS.index(item[0])))


def tally_group(report: ParityReport, backend: str, rules: list[str], by_rule: dict[str, list[Case]],
                native: Sequence[Outcome | None], native_seconds: float, profile: ReleaseProfile | None,
                state: str = DONE, repros: list[str] | None = None,
                port_answers: dict[int, Outcome] | None = None, first: dict[str, int] | None = None,
                observers: Sequence[Observer] = (), policy: str = "strict") -> None:
    """Compare one backend group's native outcomes with the port, case by case, into the report.
    A None outcome (the group was interrupted before it) is left out: that case stays uncompared.
    Each mismatching case's ``infer --case-json`` line is appended to ``repros`` while it holds fewer than
    :data:`REPROS_PRINTED` (the console prints those; every one is in the per-case file). ``port_answers``
    (keyed by ``id(case)``) keeps the port's outcome of a case for the next route that compares it:
    the port is pure, so a case is answered once however many routes check it. ``first``: per rule,
    the position of its first case here among the rule's selected cases (a round of a long run).
    ``observers`` see every native outcome (a baseline being saved or compared: parity/baseline.py).
    ``policy``: the port's strictness policy (docs/strictness.md)."""
    if port_answers is None:
        port_answers = {}
    classify = profile.classify if profile is not None else None
    add = report.add
    offset = 0
    for rule in rules:
        tally = report.tallies[f"{rule}@{backend}"]
        t1 = time.time()
        rule_cases = by_rule[rule]
        base = first[rule] if first else 0
        spec = rule_spec(rule)
        for index, (case, nat) in enumerate(zip(rule_cases, native[offset:offset + len(rule_cases)], strict=True)):
            if nat is None:
                continue
            for observer in observers:
                observer.record(rule, backend, base + index, case, nat)
            port = port_answers.get(id(case))
            if port is None:
                port = port_answers[id(case)] = port_outcome(case, "paddle", policy)
            # validity of the input matters only where the port rejects it and Paddle answered
            err = port.error
            invalid = input_problem(case) is not None if err and err.port_invalid and nat.result is not None else None
            cmp = compare(spec, port, nat, invalid)
            if cmp.verdict not in AGREEING and classify is not None:
                known = classify(case, port, nat, cmp)  # known-difference, or release-lacks (not compared)
                if known:
                    cmp = dataclasses.replace(cmp, verdict=known[0], note=known[1])
            if cmp.verdict == "mismatch" and repros is not None and len(repros) < REPROS_PRINTED:
                repros.append(f"{rule}@{backend} {case.case_id}: {one_line_repro(case, backend, policy)}")
            add(tally, base + index, case, port, nat, cmp)
        tally.port_seconds += time.time() - t1
        tally.native_seconds += native_seconds * len(rule_cases) / max(len(native), 1)
        tally.state = state
        offset += len(rule_cases)


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("parity", lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    args = parse_args(argv)
    if args.merge is not None:
        from .merge import merge_main

        return merge_main(args)
    # The cyclic GC is off for the run: the sweep builds millions of objects that live until its
    # end (cases, specs, answers) and none in cycles, so each collection would only walk them
    # again (a third of the CPU of drawing the grid, a fifth of tallying it). Everything the run
    # built is freed by reference counting when _sweep returns; the GC's state is then restored.
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        return _sweep(args)
    finally:
        if gc_was_on:
            gc.enable()


def _plan_rounds(args: argparse.Namespace) -> tuple[list, list[list | None], str | None]:
    """The run's rounds: ``(units, batches, empty_part)``. A random run goes in rounds of at most
    CASES_PER_ROUND cases (blocks of every rule's stream in turn, random_cases.rounds), each drawn, compared
    and dropped before the next, so that a long run's memory stays bounded; any other run is one
    round (``[None]``). ``empty_part`` says why a --shard part holds no block, when it holds none."""
    units = shard_units(args.rule_names, args.random, args.shard) if args.random is not None else []
    # A --shard part may hold no block at all (more parts than blocks): it is one empty round, never
    # the whole selection; its report says so and it exits as a run that compared nothing (3), while
    # a merge of every part still adds up to the unsplit run.
    batches: list[list | None] = (list(rounds(units, CASES_PER_ROUND)) or [[]]) if args.random is not None \
        else [None]
    empty_part = None
    if args.random is not None and not units and args.shard is not None:
        dealt = len(shard_units(args.rule_names, args.random))
        empty_part = (f"part {args.shard[0]} of {args.shard[1]} holds none of the selection's {dealt:,} blocks "
                      f"(blocks are dealt in turn to the {args.shard[1]} parts): nothing compared here; the other "
                      "parts hold every case")
    return units, batches, empty_part


def _draw(args: argparse.Namespace, rules: list[str], batch: list | None = None) -> dict[str, list[Case]]:
    """The cases of ``rules``: the selected grid (or random cases) of each, or this round's blocks of them."""
    if batch is None:
        return {r: select_cases(r, args.max_cases, args.sample, args.seed, args.random, args.coshard)
                for r in rules}
    drawn = draw_units([u for u in batch if u[0] in rules], args.seed)
    return {r: drawn.get(r, []) for r in rules}


def _sweep(args: argparse.Namespace) -> int:
    units, batches, empty_part = _plan_rounds(args)
    if args.list:
        for rule, cases in _draw(args, args.rule_names).items():
            n_cells = cases[0].spec.n_cells if cases else 0
            print(f"{rule:22s} {len(cases):8,d} cases {len(cases) * n_cells:10,d} cells")
        return EXIT_OK
    hold_thresholds()  # (runctl/memory.py: so that each round's memory is given back when it is dropped)
    sweep = _Sweep(args, units, batches, empty_part)
    sweep.open()
    return sweep.run()


class _Sweep:
    """One parity run, stage by stage: :meth:`open` (draw the first round, start the background
    group, plan the report), :meth:`run` (each round's groups: native outcomes, tally, a partial
    report after each), and on the way out :meth:`_tally_in_flight` (the interrupt path) and
    :meth:`_close` (the final files and the summary), then the exit status."""

    def __init__(self, args: argparse.Namespace, units: list, batches: list[list | None],
                 empty_part: str | None) -> None:
        self.args, self.units, self.batches, self.empty_part = args, units, batches, empty_part
        self.out: Path = args.report_dir
        self.groups = _plan_groups(args)
        # The background group starts as soon as its own cases are drawn: its workers import Paddle and
        # take their cases while the other rules' cases are drawn here.
        self.background_backend = next((b for b in (BACKGROUND_BACKEND, BACKGROUND_FALLBACK) if b in self.groups),
                                       "")
        self.background_rules = self.groups[self.background_backend] \
            if self.background_backend and len(self.groups) > 1 else []
        self.drawn: dict[str, list[Case]] = {}
        self.by_rule: dict[str, list[Case]] = {}
        # this round's group in flight alongside; only this round's: a round's cases and outcomes are
        # dropped with it (see _run_round)
        self.background: BackgroundGroup | None = None
        self.report: ParityReport  # (set by open)
        self.port_answers: dict[int, Outcome] = {}  # id(case) -> the port's outcome (see tally_group)
        self.saver: Saver | None = None
        self.diff: Diff | None = None
        self.observers: list[Observer] = []
        self.first = dict.fromkeys(args.rule_names, 0)  # per rule: the position of the round's first case
        self.profile: ReleaseProfile | None = None
        self.running: tuple[str, list[str]] | None = None  # the group in flight in this thread
        self.tallied: set[str] = set()  # backends whose group is in the report (this round)
        self.repros: list[str] = []  # the first REPROS_PRINTED mismatching cases' `infer --case-json` lines
        self.stopping: BaseException | None = None  # the signal or internal error ending the run early
        self.diff_note = ""  # why the partial baseline diff could not be written (said on the one line)
        # each round in a forked copy (_run_round_apart), where the system has fork
        self.apart = ROUNDS_APART and len(batches) > 1 and hasattr(os, "fork")

    # --------------------------------------------------------------------------- planning
    def _start_background(self, batch: list | None) -> dict[str, list[Case]]:
        drawn = _draw(self.args, self.background_rules, batch)
        if self.background_rules:
            group = BackgroundGroup(self.background_backend, [c for r in self.background_rules for c in drawn[r]],
                                    self.args)
            self.background = group  # (before it starts: a signal while it starts must still find it to stop)
            group.start()
        return drawn

    def _draw_round(self, batch: list | None) -> None:
        """This round's cases, the background group's first (its group in flight alongside: see BackgroundGroup)."""
        self.drawn = self._start_background(batch)
        self.drawn.update(_draw(self.args, [r for r in self.args.rule_names if r not in self.drawn], batch))
        self.by_rule = {r: self.drawn[r] for r in self.args.rule_names}

    def open(self) -> None:
        """Draw the first round, plan the report, open its cases file. Until :meth:`run`'s own
        handler takes over, anything that ends the run ends the background's workers, and a signal
        or an error of ours writes the partial report of a run that compared nothing."""
        args, units = self.args, self.units
        report: ParityReport | None = None
        try:
            if not args.quiet:  # (inside: a signal from here on writes the partial report)
                print(opening_line(args), file=sys.stderr, flush=True)
            if not self.apart:  # (a copy draws its own round: this process holds none)
                self._draw_round(self.batches[0])
            selected = {r: len(self.by_rule[r]) for r in args.rule_names} if not units else \
                {r: sum(size for rule, _block, size in units if rule == r) for r in args.rule_names}
            report = ParityReport(selection=args.selection, allow_uncompared=args.allow_uncompared)
            # no worker reports Paddle's version in an empty part: read it from its files, as the others do
            if self.empty_part is not None:
                from ..installed import paddle_version

                report.paddle.update(paddle_version())
                report.notes.append(self.empty_part)
            for backend, rules in self.groups.items():
                for rule in rules:
                    report.plan(rule, backend, selected[rule], rule_spec(rule).n_cells if selected[rule] else 0)
            for rule in self.background_rules:
                report.tallies[f"{rule}@{self.background_backend}"].state = RUNNING
            report.open_cases_file(self.out)
            if self.apart:  # each round's copy adds its rows to it (a gzip member each)
                report.close_cases_file()
        except BaseException as exc:
            if self.background is not None and self.background.is_alive():
                self.background.stop()
            if isinstance(exc, (Interrupted, Exception)):  # a signal or a bug of ours before anything was compared
                ended, planned = exc, report
                add_detail(exc, write_partial(lambda: _write_unstarted(args, planned, self.drawn, self.groups, ended),
                                              str(args.report_dir / "parity.md")))
            raise
        self.report = report

    # --------------------------------------------------------------------------- running
    def run(self) -> int:
        """Every round, group by group, then the final files, the summary and the exit status."""
        from .baseline import Diff, Saver

        args = self.args
        self.saver = Saver(args.save_baseline) if args.save_baseline is not None else None
        self.diff = Diff(args.stored, args.policy) if args.stored is not None else None
        self.observers = [o for o in (self.saver, self.diff) if o is not None]
        try:
            for number, batch in enumerate(self.batches):
                if self.apart:
                    self._run_round_apart(number, batch)
                else:
                    self._run_round(number, batch)
            # (before complete: an interrupt here leaves a partial diff, its candidates not re-run)
            if self.diff is not None:
                self.diff.recheck(lambda backend, cases: rerun_native(backend, cases, args))
            self.report.complete = True
        except (Interrupted, Exception) as exc:  # a signal, or an internal error: the same partial report
            self.stopping = exc
            self._tally_in_flight(exc)
            raise
        finally:
            self._close()
        try:
            self._print_epilogue()
        except Exception as exc:  # the files say PASS (or MISMATCH): they must say what ended the run
            self._failed_late(exc)
            raise
        return self._exit_status()

    def _run_round(self, number: int, batch: list | None) -> None:
        last_round = number == len(self.batches) - 1
        if number or self.apart:  # the last round's cases, outcomes and port answers are dropped here, and the
            # package's memos with them (types.drop_memos): every round then peaks as the first did
            self.by_rule, self.drawn, self.background = {}, {}, None
            self.port_answers.clear()
            drop_memos()
            for tally in self.report.tallies.values():
                tally.fold_map()
            give_back()  # what the last round freed, before this round's cases take its place
            self._draw_round(batch)
        self.tallied = set()
        # The groups run here one after the other, the background one last: it has been running since
        # its cases were drawn, so waiting for it first would hold the others back until it ends (random
        # mode's registry group, whose wait once came before the compiled group ran at all).
        for backend, rules in sorted(self.groups.items(), key=lambda item: item[0] == self.background_backend):
            self._run_group(backend, rules, last_round)
        for rule in self.args.rule_names:
            self.first[rule] += len(self.by_rule[rule])

    def _run_round_apart(self, number: int, batch: list | None) -> None:
        """One round in a forked copy of the sweep (:data:`ROUNDS_APART`), whose report, repro lines and
        positions it sends back replace this process's. The observers see the round's outcomes here,
        read back from the copy's spool file once it is over. The copy stopped by a signal or an error
        of ours sends what it tallied first (the interrupt path ran there), and it is raised here the
        same; a copy that ends without sending anything leaves this round out of the report, its rows
        out of the cases file, and ends the run as an internal error."""
        cases_path = self.out / CASES_FILE
        cases_size = cases_path.stat().st_size
        spool = ""
        if self.observers:
            fd, spool = tempfile.mkstemp(prefix="paddle_spmd_port-round-", suffix=".rows.gz")
            os.close(fd)
        name = f"round {number + 1} of {len(self.batches)}'s process"
        try:
            try:
                state = call_in_child(lambda: self._round_in_child(number, batch, spool), name)
            except BaseException as exc:
                sent = getattr(exc, "child_result", None)  # (an Interrupted: what the copy tallied first)
                if sent is not None:
                    self._take_round(sent, spool)
                else:
                    with open(cases_path, "r+b") as fh:  # (the copy's member may be cut short: rows of no tally)
                        fh.truncate(cases_size)
                raise
            self._take_round(state, spool)
        finally:
            if spool:
                with contextlib.suppress(OSError):
                    os.unlink(spool)
        give_back()  # (the report replaced: the last one's memory)
        stopping = state["stopping"]
        if stopping is not None:
            kind, value = stopping
            raise Interrupted(value) if kind == "signal" else ChildRaised(name, value)

    def _round_in_child(self, number: int, batch: list | None, spool: str) -> dict:
        """A forked copy's round: run it as the sweep would, the interrupt path included, and return what
        the sweep keeps (its report with the round's verdict map folded, the repro lines, the positions)
        and what stopped it, if anything."""
        import traceback

        from .baseline import Spool

        report = self.report
        report.open_cases_file(self.out, append=True)
        spooled = Spool(spool) if spool else None
        self.observers = [spooled] if spooled is not None else []
        stopping: tuple[str, object] | None = None
        try:
            self._run_round(number, batch)
        except (Interrupted, Exception) as exc:
            stopping = ("signal", exc.signum) if isinstance(exc, Interrupted) else ("error", traceback.format_exc())
            self._tally_in_flight(exc)
        finally:
            report.close_cases_file()
            if spooled is not None:
                spooled.close()
        for tally in report.tallies.values():
            tally.fold_map()
        return {"report": report, "repros": self.repros, "first": self.first, "stopping": stopping}

    def _take_round(self, state: dict, spool: str) -> None:
        """What a round's copy sent back, in place of this process's; its outcomes to the observers."""
        from .baseline import replay

        self.report, self.repros, self.first = state["report"], state["repros"], state["first"]
        self._detect_profile()
        if spool and self.observers:
            replay(spool, self.observers)

    def _run_group(self, backend: str, rules: list[str], last_round: bool) -> None:
        """One backend group: its native outcomes, compared with the port into the report, and a
        partial report after it (the last one's is written by :meth:`_close`)."""
        report = self.report
        cases = [c for r in rules for c in self.by_rule[r]]
        self.running = (backend, rules)
        for rule in rules:
            report.tallies[f"{rule}@{backend}"].state = RUNNING
        native, native_seconds = self._native_outcomes(backend, cases)
        self._detect_profile()
        tally_group(report, backend, rules, self.by_rule, native, native_seconds, self.profile,
                    state=DONE if last_round else RUNNING, repros=self.repros, port_answers=self.port_answers,
                    first=self.first, observers=self.observers, policy=self.args.policy)
        self.tallied.add(backend)
        self.running = None
        if len(self.tallied) < len(self.groups) or not last_round:  # a partial report after every group
            write_parity_report(report, self.out, self.args.junit)  # (the last one's: see _close)
        give_back()  # the group's outcomes and the report's text are freed: runctl/memory.py says why

    def _native_outcomes(self, backend: str, cases: list[Case]) -> tuple[list[Outcome], float]:
        """The group's native outcomes (the background group's awaited, the port answering its cases
        meanwhile) and the seconds they took; a backend unavailable makes every case not run."""
        from ..native.pool import BackendUnavailable

        report, background = self.report, self.background
        t0 = time.time()
        try:
            if background is not None and backend == background.backend:
                for case in cases:  # the port's answers while its workers finish (this thread idles else)
                    if not background.is_alive():
                        break
                    if id(case) not in self.port_answers:
                        self.port_answers[id(case)] = port_outcome(case, "paddle", self.args.policy)
                native = background.result()
                report.paddle.update(background.info)
                t0 = time.time() - background.seconds
            else:
                native = run_native_group(backend, cases, self.args, report)
        except (ImportError, BackendUnavailable) as exc:  # (any other error is ours: exit 4)
            why = " ".join(str(exc).strip().split())[-300:]
            if f"{backend} backend unavailable: {why}" not in report.notes:
                report.notes.append(f"{backend} backend unavailable: {why}")
            native = [Outcome(not_run=f"backend unavailable: {why}") for _ in cases]
        return native, time.time() - t0

    def _detect_profile(self) -> None:
        """The release profile, once a worker has said which Paddle it runs."""
        report = self.report
        if self.profile is None and report.paddle.get("version") not in (None, "not installed"):
            self.profile = detect_release(report.paddle["version"], report.paddle.get("commit", ""))
            if report.profile:  # (a round's copy put it in the report, and its note)
                return
            report.profile = self.profile.to_json()
            if self.profile.is_newer_than_known:
                report.notes.append("Paddle is newer than every known profile: each mismatch is a possible "
                                    "regression of this release (or a change the port has to follow).")

    # --------------------------------------------------------------------------- the interrupt path
    def _tally_in_flight(self, exc: BaseException) -> None:
        """A signal or an internal error ends the run: the groups in flight are tallied with what their
        workers answered before it, and every group still running is marked interrupted."""
        report, running, background = self.report, self.running, self.background
        report.interrupted = stopped_by(exc)
        in_flight = [running] if running else []
        partials = {running[0]: getattr(exc, "partial_outcomes", None)} if running else {}
        if background is not None and background.backend not in self.tallied:
            partials[background.backend] = background.stop()  # its workers end here
            if not running or running[0] != background.backend:
                in_flight.append((background.backend, self.groups[background.backend]))
        for backend, rules in in_flight:  # what the workers answered before the signal still counts
            partial = partials.get(backend)
            if partial is not None and all(r in self.by_rule for r in rules):
                try:
                    tally_group(report, backend, rules, self.by_rule, partial, 0.0, self.profile, state=INTERRUPTED,
                                repros=self.repros, port_answers=self.port_answers, first=self.first,
                                policy=self.args.policy,
                                observers=self.observers)
                except Exception:  # the comparison itself may be what failed: the error
                    if isinstance(exc, Interrupted):  # reported stays the first one, the group stays unfinished
                        raise
        for tally in report.tallies.values():  # (a group of a long run is running between its rounds)
            if tally.state == RUNNING:
                tally.state = INTERRUPTED

    # --------------------------------------------------------------------------- the final files
    def _close(self) -> None:
        """However the run ends: the background's workers ended, the final (or partial) files
        written, the summary printed."""
        report = self.report
        if self.background is not None and self.background.is_alive():  # any other way out: its workers end too
            self.background.stop()
        finished = report.finished = time.time()
        if self.stopping is None:
            try:
                self._write_final_files()
            except Exception as exc:  # a writer of ours failed (the diff's triage included): as any other error
                self._failed_late(exc)
                raise
        else:  # (a failure writing it is said on the one line, never raised over the first error)
            if self.saver is not None:  # its temp file goes first, whatever the report's writing does
                with contextlib.suppress(Exception):
                    self.saver.discard()
            self._write_partial(self.stopping)
        self._print_summary(finished)

    def _failed_late(self, exc: Exception) -> None:
        """An internal error after every case was compared (writing the final files, the epilogue): the
        report is rewritten as ended by it, its diff with what was triaged before it, and the one line
        names the report (or why it could not be written). A baseline already saved stays: its run finished."""
        self.stopping = exc
        self.report.interrupted = stopped_by(exc)
        if self.saver is not None:  # its temp file, if it is still there (a finished one's is gone already)
            with contextlib.suppress(Exception):
                self.saver.discard()
        self._write_partial(exc)

    def _write_partial(self, exc: BaseException) -> None:
        """The partial files of a run a signal or an internal error ends; the one line says where, and
        whether the baseline diff could not be written beside them."""
        self.diff_note = ""
        where = write_partial(self._write_final_files, str(self.out / "parity.md"))
        add_detail(exc, where + self.diff_note)

    def _write_final_files(self) -> None:
        report, saver, diff, out = self.report, self.saver, self.diff, self.out
        report.close_cases_file()
        write_parity_report(report, out, self.args.junit)
        if saver is not None and self.stopping is None:  # a baseline of a finished run only: an interrupted
            if report.complete:  # one would miss cases
                saver.finish(dict(report.paddle), self.args.native_selection)
            else:
                saver.discard()
        if diff is not None:
            try:
                diff.judge()
                write_diff(diff, out, dict(report.paddle), self.args.selection, report.interrupted)
            except Exception as err:
                if self.stopping is None:
                    raise
                # the run is ending on another error: the parity report above stands, the line says this one
                self.diff_note = f"; the baseline diff could not be written ({error_text(err)})"

    def _print_summary(self, finished: float) -> None:
        report, repros, out = self.report, self.repros, self.out
        mismatching = report.total_mismatches
        if repros:
            print(f"mismatching cases ({mismatching:,}), each with the command that repeats it:")
            print("\n".join(repros))
            if mismatching > len(repros):
                print(f"... {mismatching - len(repros):,} more in {out / 'parity-cases.jsonl.gz'}")
            print()
        print(report.table())
        print("\ncoverage (a case is compared when at least one native route answered it):")
        print("\n".join(report.coverage_lines()))
        if self.empty_part is not None:
            print(f"\n{self.empty_part}")
        print(f"\n{report.status_line()}")
        print(f"{report.total_cells:,} cells, {report.total_mismatches:,} mismatching cases, "
              f"{report.total_uncompared:,} uncompared cases"
              + (f", {report.total_not_rechecked:,} not re-checked" if report.total_not_rechecked else "")
              + (f", {report.total_lacking:,} the release lacks" if report.total_lacking else "")
              + (f", {report.answered_text()}" if report.answered_text() else "")
              + f"; {finished - report.started:.1f} s; "
              f"report in {out}/parity.md")

    def _print_epilogue(self) -> None:
        """After a finished run: the mismatches' repro snippets (--show-repro) and the baseline's lines."""
        report = self.report
        if self.args.show_repro:
            for tally in report.tallies.values():
                for ex in tally.examples.get("mismatch", []):
                    print(f"\n# --- {ex['describe']}\n"
                          + repro_snippet(Case.from_json(ex["case"]), ex["backend"], report.policy))
        if self.saver is not None:
            print(f"baseline of {report.paddle.get('version', '?')}: {self.saver.rows:,} native outcomes in "
                  f"{self.args.save_baseline}")
        if self.diff is not None:
            print(f"baseline diff in {self.out / 'baseline.md'}")
            print(self.diff.summary_line(dict(report.paddle)))

    def _exit_status(self) -> int:
        report, diff = self.report, self.diff
        if diff is not None:  # the diff decides: the port's mismatches with a build that changed are expected
            if diff.regressed:
                return EXIT_FINDING
            if diff.incomplete or report.empty:
                return EXIT_INCOMPLETE
            return EXIT_OK
        if report.total_mismatches:
            return EXIT_FINDING
        # cases of what the release lacks (its profile says so) fail nothing, but a run where they are all it has does
        incomplete = report.total_uncompared or report.total_not_rechecked
        if report.empty or report.all_lacking or (incomplete and not self.args.allow_uncompared):
            return EXIT_INCOMPLETE
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
