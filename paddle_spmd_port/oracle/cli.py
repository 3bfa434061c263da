"""``python -m paddle_spmd_port oracle``: numerical soundness of every rule's answer, no devices.

::

    python -m paddle_spmd_port oracle                          # every rule, paddle and proposed
    python -m paddle_spmd_port oracle --rules all --profile paddle
    python -m paddle_spmd_port oracle --sample 300 --seed 1 --report-dir out/
    python -m paddle_spmd_port oracle --meshes 2,4,2x2,2x3,2x2x2 --sync-group mesh
    python -m paddle_spmd_port oracle --profile native --sample 50   # the installed Paddle's own answers
    python -m paddle_spmd_port oracle --search                       # cheaper sound answers: .search_report

For every case of the oracle grid (:mod:`.grid`) and every profile, the rule answers, the answer
runs on a virtual mesh in numpy (:mod:`.simulator`) and gets a verdict. Printed: one table per
profile, the paddle-vs-proposed comparison, and each distinct bug with a minimal repro.
``--profile native`` judges the installed Paddle's own answers, from each rule's primary native
route through parity's worker pool (:mod:`.native` says what a raise, a crash or an undecodable
answer becomes); ``--profile all`` includes it when Paddle is installed.
Written to ``--report-dir``: ``oracle.md`` (the same), ``oracle.json`` (counts and bugs),
``oracle-cases.jsonl.gz`` (one line per case that is not sound, rule-error or n/a), ``oracle.html`` (the
same as a page, with a map per rule and profile: :mod:`.pages`) and ``repro-*`` files for
``python -m paddle_spmd_port launch`` / ``paddle.distributed.launch`` (the commands printed name them by
the path they were written to, so they run as pasted from the directory the oracle ran in).
``--max-cases N`` judges the first N cases of each rule's grid, ``--sample N`` a seeded sample of N.

Exit code (:mod:`paddle_spmd_port.runctl`): 0 done (Paddle's bugs are findings of the report, not
failures); 1 the proposed profile was run and some answer of it is not sound; 2 bad arguments (one
line on stderr, nothing written); 3 the selection held no case, or the native profile was asked for
and Paddle is not installed (one line, before any work) or left some case unanswered (a worker timed
out, a backend could not start: the ``no-answer`` column); 130/143 interrupted by
SIGINT/SIGTERM: the report of what was judged so far is written, its first line says
``INTERRUPTED`` and the rules not finished are marked; 4 an internal error: the same partial report,
its first line ``INTERRUPTED by an internal error (...)``, named on the one line.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..case import Case
from ..grid import MESH_SHAPES, sample
from ..outcome import Outcome
from ..reporting import write_files
from ..runctl.command import run_command
from ..runctl.exits import EXIT_FINDING, EXIT_INCOMPLETE, EXIT_OK, UsageError, prefix
from ..runctl.grammar import (
    MAX_SECONDS,
    ArgumentParser,
    add_profile_argument,
    add_rules_argument,
    add_selection_arguments,
    add_workers_arguments,
    count,
    mesh_list,
    path_text,
    rule_keys,
    seconds,
    whole_number,
    workers,
)
from ..runctl.paths import add_replace_report_argument, check_output_dir, refuse_other_selection
from ..runctl.signals import Interrupted, add_detail, stopped_by, write_partial
from .grid import ORACLE_MESHES, oracle_grid
from .kernels import MODELS, all_reducing_families
from .native import NATIVE, NO_ANSWER, collect, paddle_installed
from .pages import oracle_page
from .report import (
    BUG_LABELS,
    PROFILE_NAMES,
    Judge,
    Judged,
    RuleTally,
    bug_section,
    comparison_table,
    distinct_bugs,
    profile_table,
    rule_error_groups,
    summary_json,
    totals,
    verdict_differences,
    without_refused,
)
from .search import DEFAULT_SAMPLE, MAX_CANDIDATES
from .search_report import SearchRun, not_sound_proposed, unanswered, write_report
from .simulator import OP_REJECTS, SOUND, SYNC_GROUPS

PROG = "python -m paddle_spmd_port oracle"


def _mesh_text(shape: Sequence[int]) -> str:
    return "x".join(map(str, shape))


def _grid_meshes(text: str) -> list[tuple[int, ...]]:
    """``--meshes``: comma-separated meshes (:func:`runctl.grammar.mesh_list`), each one of the case grid's."""
    meshes = mesh_list(text)
    outside = [_mesh_text(m) for m in meshes if m not in MESH_SHAPES]
    if outside:
        raise argparse.ArgumentTypeError(f"{', '.join(outside)}: not a mesh of the case grid; choose from "
                                         f"{','.join(_mesh_text(m) for m in MESH_SHAPES)}")
    return meshes


def _all_reducing() -> str:
    """Who all-reduces statistics across ranks, as a sentence's subject and verb."""
    families = all_reducing_families()
    if not families:
        return "a kernel that all-reduces would all-reduce"
    return ", ".join(families) + (" all-reduces" if len(families) == 1 else " all-reduce")


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog=PROG, description=__doc__.split("\n")[0],
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    missing = [r for r in rule_keys() if r not in MODELS]
    add_rules_argument(p, all_means="every rule with a numpy kernel (" + (
        f"all but {', '.join(missing)}, which are listed in the report as not judged and refused when named"
        if missing else "every rule key has one") + ")")
    add_profile_argument(p, default="all", also=(NATIVE, "all"),
                         help="whose answers to judge: a rule profile, native (the installed Paddle's own answers, "
                              "from each rule's primary native route), or all (the default: every rule profile, "
                              "and native when Paddle is installed; paddle is compared with proposed)")
    p.add_argument("--report-dir", type=path_text, default=Path("reports"),
                   help="where the report goes (default reports/); a report there of another selection (other "
                        "--rules, --profile, --meshes, --sample, --max-cases, --sync-group) is refused unless "
                        "--replace-report")
    add_replace_report_argument(p)
    add_selection_arguments(p)
    p.add_argument("--meshes", type=_grid_meshes, default=list(ORACLE_MESHES), metavar="MESH[,MESH...]",
                   help=f"comma-separated mesh shapes (default {','.join(_mesh_text(m) for m in ORACLE_MESHES)}; "
                        f"the grid also has 2x2x2)")
    p.add_argument("--sync-group", choices=SYNC_GROUPS, default="batch",
                   help=f"ranks {_all_reducing()} over: the mesh dims that shard x's batch axis (default) "
                        "or the whole mesh (what Paddle's GPU kernel does with the world communicator)")
    add_workers_arguments(p, "native worker processes, for the native profile")
    p.add_argument("--timeout", type=seconds, default=60.0,
                   help=f"seconds a silent native worker is given before it is killed, for the native profile "
                        f"(> 0, at most {MAX_SECONDS:.0f}; default 60)")
    p.add_argument("--max-bugs", type=whole_number, default=40, help="distinct bugs to print in full (default 40)")
    p.add_argument("--quiet", action="store_true", help="print only the tables (no opening line, no progress)")
    p.add_argument("--search", action="store_true",
                   help="the missing-sharding search instead of the verdicts: per case, every answer that keeps or "
                        "drops each given input's shards and partial dims, judged by the oracle and priced in bytes "
                        "per rank by Paddle's reshard functions; reports where a sound answer is cheaper than the "
                        f"rule's (search.md/json/html, search-summary.md); a sample of {DEFAULT_SAMPLE} cases per "
                        "rule unless --sample or --max-cases says otherwise")
    p.add_argument("--max-candidates", type=count, default=None, metavar="N",
                   help=f"with --search: skip (and count) a case with more than N candidate answers "
                        f"(default {MAX_CANDIDATES})")
    return p


@dataclass
class _Run:
    """What has been judged so far: enough for the full report or, after a signal, a partial one."""

    rules: list[str]
    profiles: tuple[str, ...]
    judge: Judge
    no_kernel: list[str] = field(default_factory=list)  # rules of `--rules all` the oracle has no kernel for
    rows: dict[str, dict[str, list[Judged]]] = field(default_factory=dict)  # profile -> rule -> judged so far
    planned: dict[str, int] = field(default_factory=dict)  # rule -> cases to judge (once its grid is built)
    done: list[str] = field(default_factory=list)  # rules judged completely
    start: float = field(default_factory=time.perf_counter)
    paddle: dict[str, str] = field(default_factory=dict)  # the installed Paddle's version info (native profile)
    routes: dict[str, str] = field(default_factory=dict)  # rule -> the native route its answers came from

    def __post_init__(self) -> None:
        self.rows = {p: {} for p in self.profiles}

    def judge_rule(self, rule: str, cases: list[Case], quiet: bool, native: Sequence[Outcome] = (),
                   route: str = "") -> None:
        """Judge ``cases`` under every profile; ``native``: Paddle's outcomes of them on ``route``
        (for the native profile)."""
        t0 = time.perf_counter()
        self.planned[rule] = len(cases)
        rows = {p: self.rows[p].setdefault(rule, []) for p in self.profiles}
        for i, case in enumerate(cases):
            for p in self.profiles:
                rows[p].append(self.judge.native(case, native[i], route) if p == NATIVE else self.judge(case, p))
        self.done.append(rule)
        if not quiet:
            print(f"[oracle] {rule}: {len(cases)} cases x {len(self.profiles)} profile(s) in "
                  f"{time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)

    @property
    def judged(self) -> dict[str, dict[str, list[Judged]]]:
        """profile -> rule -> the cases judged under every profile (a signal can land between two)."""
        out: dict[str, dict[str, list[Judged]]] = {p: {} for p in self.profiles}
        for rule in self.rows[self.profiles[0]]:
            n = min(len(self.rows[p][rule]) for p in self.profiles)
            for p in self.profiles:
                out[p][rule] = self.rows[p][rule][:n]
        return out

    def status(self, judged: dict[str, dict[str, list[Judged]]]) -> dict[str, dict[str, Any]]:
        out = {}
        for rule in self.rules:
            n = len(judged[self.profiles[0]].get(rule, ()))
            state = "done" if rule in self.done else ("partial" if rule in self.planned else "not started")
            out[rule] = {"status": state, "judged": n, "planned": self.planned.get(rule)}
        return out


def _tallies(rows: dict[str, list[Judged]]) -> dict[str, RuleTally]:
    out = {}
    for rule, judged in rows.items():
        tally = out[rule] = RuleTally()
        for j in judged:
            tally.add(j)
    return out


def _native_vs_paddle(judged: dict[str, dict[str, list[Judged]]]) -> dict[str, Any]:
    """For oracle.json: how many cases the two profiles judge differently, and both totals over the
    cases whose input the port does not refuse as invalid (equal on the Paddle the port follows)."""
    paddle, native = judged["paddle"], judged[NATIVE]
    valid_paddle, valid_native = without_refused(paddle, native)
    differing = sum(a.verdict.label != b.verdict.label for r in paddle for a, b in zip(paddle[r], native[r],
                                                                                         strict=True))
    differing_valid = sum(a.verdict.label != b.verdict.label for r in valid_paddle
                          for a, b in zip(valid_paddle[r], valid_native[r], strict=True))
    return {"cases": sum(len(rows) for rows in paddle.values()), "differing": differing,
            "refused_by_port": sum(len(paddle[r]) - len(valid_paddle[r]) for r in paddle),
            "differing_without_refused": differing_valid,
            "totals_without_refused": {p: totals({"all": _total(rows)})
                                       for p, rows in (("paddle", valid_paddle), (NATIVE, valid_native))}}


def _total(rows: dict[str, list[Judged]]) -> RuleTally:
    """One tally over every rule's rows."""
    tally = RuleTally()
    for judged in rows.values():
        for j in judged:
            tally.add(j)
    return tally


def _unfinished_text(status: dict[str, dict[str, Any]]) -> str:
    parts = []
    for rule, s in status.items():
        if s["status"] == "partial":
            parts.append(f"{rule} (partial: {s['judged']} of {s['planned']} cases)")
        elif s["status"] == "not started":
            parts.append(f"{rule} (not judged)")
    return ", ".join(parts) or "none"


def _render(run: _Run, args: argparse.Namespace, seconds: float, interrupted: str | None
            ) -> tuple[str, str, dict[str, Any], list[Judged], dict[str, str]]:
    """(markdown, what to print, oracle.json, the rows of the cases file, repro files)."""
    profiles, judged = run.profiles, run.judged
    status = run.status(judged)
    everything = [j for p in profiles for rows in judged[p].values() for j in rows]
    bugs = distinct_bugs(everything)
    tallies = {p: _tallies(judged[p]) for p in profiles}

    def label(rule: str) -> str:
        s = status[rule]
        return rule if s["status"] == "done" else f"{rule} (partial: {s['judged']}/{s['planned']})"

    parts = _opening(run, args, seconds, interrupted, status)
    parts += [_profile_section(run, profile, tallies[profile], status, label, interrupted) for profile in profiles]
    parts += _paddle_vs_proposed(judged, profiles, label)
    parts += _rule_errors(judged, profiles, tallies)
    bug_parts, files = _bug_sections(bugs, args)
    parts += bug_parts
    report = "\n".join(parts)
    printed = report if not args.quiet else "\n".join(parts[: len(profiles) + 2])
    summary = {"status": f"INTERRUPTED by {interrupted}: partial" if interrupted else "complete",
               "selection": getattr(args, "selection", None), "rules": status,
               **({"paddle": run.paddle, "native_routes": run.routes} if NATIVE in profiles else {}),
               **({"native_vs_paddle": _native_vs_paddle(judged)} if {NATIVE, "paddle"} <= set(profiles) else {}),
               **summary_json(tallies, bugs, seconds, run.judge.simulations)}
    return report, printed, summary, everything, files


def _opening(run: _Run, args: argparse.Namespace, seconds: float, interrupted: str | None,
             status: dict[str, dict[str, Any]]) -> list[str]:
    """The title, what was run, and the rules without a kernel (an interrupted run says so first)."""
    judged, meshes = run.judged, " ".join(_mesh_text(m) for m in args.meshes)
    head = ""
    if interrupted:
        head = (f"INTERRUPTED by {interrupted} after {seconds:.1f}s: partial report of the cases judged so far; "
                f"unfinished rules: {_unfinished_text(status)}\n\n")
    parts = [f"{head}# Oracle: numerical soundness on a virtual mesh\n\nmeshes {meshes}; {_all_reducing()} "
             f"over {'the batch mesh dims' if args.sync_group == 'batch' else 'the whole mesh'}; "
             f"{sum(len(r) for r in judged[run.profiles[0]].values())} cases per profile; {run.judge.simulations} "
             f"distinct simulations; {seconds:.1f}s.\n"]
    if run.no_kernel:
        parts.append(f"Not judged (no numpy kernel yet): {', '.join(run.no_kernel)}.\n")
    return parts


def _profile_section(run: _Run, profile: str, tallies: dict[str, Any], status: dict[str, dict[str, Any]],
                     label: Callable[[str], str], interrupted: str | None) -> str:
    """One profile's verdict table (the native profile: which Paddle, through which routes)."""
    table = profile_table({label(r): t for r, t in tallies.items()})
    if interrupted:
        missing = [r for r, s in status.items() if s["status"] == "not started"]
        table += f"\n\nnot judged (interrupted): {', '.join(missing) or 'none'}"
    if profile == NATIVE:
        table += (f"\n\nPaddle {run.paddle.get('version', '?')} (commit {run.paddle.get('commit', '?')[:12]}), "
                  "each rule's primary native route: " + "; ".join(
                      f"{route} for {', '.join(r for r in run.routes if run.routes[r] == route)}"
                      for route in dict.fromkeys(run.routes.values())) + ". A raise, a crash, an undecodable "
                  "answer or no rule on the route is rule-error (oracle/native.py).")
    return f"## Profile `{profile}`\n\n{table}\n"


def _paddle_vs_proposed(judged: dict[str, dict[str, list[Judged]]], profiles: Sequence[str],
                        label: Callable[[str], str]) -> list[str]:
    """What proposed changes against paddle: on every case, then on the co-shard set alone."""
    if "paddle" not in profiles or "proposed" not in profiles:
        return []
    parts = ["## paddle vs proposed\n\n" + comparison_table(
        {label(r): rows for r, rows in judged["paddle"].items()},
        {label(r): rows for r, rows in judged["proposed"].items()}) + "\n\n"
        "paddle -> proposed. resharded inputs = inputs whose wanted dist attr differs from the given one; "
        "with communication = those that need a collective (a Shard or Partial that is not kept; "
        "Replicate -> Shard is a local slice); summed over the cases both profiles answer, and over those "
        "where both answers are sound.\n"]
    coshard = {r: [i for i, j in enumerate(rows) if "-coshard-" in j.case.case_id]
               for r, rows in judged["paddle"].items()}
    if any(coshard.values()):
        parts.append("## paddle vs proposed on co-sharded inputs\n\n" + comparison_table(
            {label(r): [judged["paddle"][r][i] for i in idx] for r, idx in coshard.items() if idx},
            {label(r): [judged["proposed"][r][i] for i in idx] for r, idx in coshard.items() if idx}) + "\n\n"
            "The same columns over the grid's co-shard set only (ids `<rule>-coshard-...`): Paddle 3.3.1 "
            "reads one mesh dim of a co-shard and gathers the rest; `proposed` keeps the co-shard on the "
            "axes it keeps split (ops/kit/proposed.py `with_coshards`).\n")
    return parts


def _rule_errors(judged: dict[str, dict[str, list[Judged]]], profiles: Sequence[str],
                 tallies: dict[str, dict[str, Any]]) -> list[str]:
    """Where Paddle's rule (as ported, and as installed) raises on cases the op can run, and the
    installed Paddle's answers against the port's paddle profile."""
    parts = []
    if "paddle" in profiles:
        parts.append("## Paddle's rule raising on cases the op can run\n\n"
                     + rule_error_groups(judged["paddle"], judged.get("proposed")))
    if NATIVE not in profiles:
        return parts
    parts.append("## Paddle's own answers raising, crashing or unreadable on cases the op can run\n\n"
                 + rule_error_groups(judged[NATIVE], None))
    unanswered = sum(tallies[NATIVE][r].counts[NO_ANSWER] for r in tallies[NATIVE])
    if unanswered:
        parts.append(f"**{unanswered} cases got no answer from Paddle in this run** (column {NO_ANSWER}: a worker "
                     "timed out or kept failing, a backend could not start, or an answer's promised re-run gave "
                     "none): the native profile is incomplete.\n")
    if "paddle" in profiles:
        valid_paddle, valid_native = without_refused(judged["paddle"], judged[NATIVE])
        kept = sum(len(rows) for rows in valid_paddle.values())
        parts.append("## native vs paddle\n\nThe installed Paddle's own answers against the port's `paddle` "
                     "profile (Paddle 3.3.1's rules), case by case:\n\n"
                     + verdict_differences(judged["paddle"], judged[NATIVE])
                     + f"\nTotals over the {kept} cases whose input the port does not refuse as invalid (where "
                       "it does, Paddle's rule does not validate the input and answers or crashes instead):\n\n"
                     + profile_table({"paddle": _total(valid_paddle), NATIVE: _total(valid_native)},
                                     "profile", total_row=False) + "\n")
    return parts


def _bug_sections(bugs: list[Any], args: argparse.Namespace) -> tuple[list[str], dict[str, str]]:
    """The distinct bugs, each with its repro (up to --max-bugs), and the repro files they name."""
    parts = [f"## Distinct bugs ({len(bugs)})\n"]
    files: dict[str, str] = {}
    for i, bug in enumerate(bugs, 1):
        if i > args.max_bugs:
            parts.append(f"... {len(bugs) - args.max_bugs} more in oracle.json\n")
            break
        text, extra = bug_section(bug, f"B{i}", args.sync_group, args.report_dir)
        parts.append(text)
        files.update(extra)
    return parts, files


def _cases_file(everything: list[Judged], header: dict[str, Any] | None) -> bytes:
    lines = [json.dumps(header, separators=(",", ":"))] if header else []
    for j in everything:
        if j.verdict.label in BUG_LABELS:
            v = j.verdict
            row = {"profile": j.profile, "id": j.case.case_id, "case": j.case.describe(), "answer": str(j.answer),
                   "label": v.label, "kind": v.kind, "tensor": v.tensor,
                   "max_error": v.max_error if v.max_error is not None and math.isfinite(v.max_error) else None}
            lines.append(json.dumps(row, separators=(",", ":")))
    return gzip.compress("".join(line + "\n" for line in lines).encode(), mtime=0)


def _write_report(run: _Run, args: argparse.Namespace, out: Path, interrupted: str | None) -> str:
    seconds = time.perf_counter() - run.start
    report, printed, summary, everything, repros = _render(run, args, seconds, interrupted)
    header = None
    if interrupted:
        header = {"status": summary["status"], "rules": summary["rules"]}
    sel = getattr(args, "selection", None) or {}
    html = oracle_page(run.judged, selection=str(sel.get("describe", "?")),
                       meshes=" ".join(_mesh_text(m) for m in args.meshes), seconds=seconds, interrupted=interrupted,
                       paddle=run.paddle if NATIVE in run.profiles else None, routes=run.routes,
                       status=run.status(run.judged))
    files: dict[str, str | bytes] = {"oracle.md": report, "oracle.json": json.dumps(summary, indent=1),
                                     "oracle-cases.jsonl.gz": _cases_file(everything, header), "oracle.html": html,
                                     **repros}
    write_files(out, files)  # each file whole or absent
    return printed


def selection_of(args: argparse.Namespace) -> dict[str, Any]:
    """What this run judges: its key (``slug``) and a sentence; kept in oracle.json so that a narrower
    run never silently replaces a broader report (runctl.paths.refuse_other_selection)."""
    slug, words = [], []
    if args.rules != list(rule_keys()):
        slug.append("rules=" + ",".join(args.rules))
        words.append("rules " + ", ".join(args.rules))
    else:
        words.append("every rule")
    if args.profile != "all":
        slug.append(f"profile={args.profile}")
    words.append(f"profile {args.profile}")
    if args.meshes != list(ORACLE_MESHES):
        slug.append("meshes=" + ",".join(_mesh_text(m) for m in args.meshes))
        words.append("meshes " + ",".join(_mesh_text(m) for m in args.meshes))
    if args.sample is not None:
        slug.append(f"sample={args.sample},seed={args.seed}")
        words.append(f"a sample of {args.sample} cases per rule (seed {args.seed})")
    if args.max_cases is not None:
        slug.append(f"max={args.max_cases}")
        words.append(f"the first {args.max_cases} cases per rule")
    if args.sync_group != "batch":
        slug.append(f"sync-group={args.sync_group}")
        words.append(f"sync group {args.sync_group}")
    if args.search:
        slug.append(f"search,max-candidates={args.max_candidates}")
        words.append(f"search, at most {args.max_candidates} candidates per case")
    return {"slug": ";".join(slug) or "full", "describe": ", ".join(words)}


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    rules = [r for r in args.rules if r in MODELS]  # args.rules: checked by runctl.grammar.rule_list
    no_kernel = [r for r in args.rules if r not in MODELS]
    if no_kernel and args.rules != list(rule_keys()):  # named explicitly: refused; `all`: said in the report
        raise UsageError("--rules", f"the oracle has no numpy kernel for {', '.join(no_kernel)} yet",
                         f"choose among {', '.join(MODELS)}")
    if args.max_bugs < 0:
        raise UsageError("--max-bugs", f"{args.max_bugs} is negative", "give 0 or more")
    if args.max_candidates is not None and not args.search:
        raise UsageError("--max-candidates", "only bounds --search", "add --search or leave it out")
    if args.search:
        args.max_candidates = args.max_candidates or MAX_CANDIDATES
        if args.sample is None and args.max_cases is None:  # bounded by default: a stated sample per rule
            args.sample = DEFAULT_SAMPLE
    out = check_output_dir(args.report_dir, "--report-dir")
    args.workers = workers(args.workers, args.oversubscribe)
    args.selection = selection_of(args)
    refuse_other_selection(out / ("search.json" if args.search else "oracle.json"), args.selection,
                           args.replace_report)
    installed = paddle_installed()
    if args.profile == NATIVE and not installed:  # the machine, not the input: exit 3, before any work
        print(f"{prefix(PROG)}: --profile native: Paddle is not installed here, so it has no answers to judge "
              "(pip install paddlepaddle, or choose a rule profile)", file=sys.stderr)
        return EXIT_INCOMPLETE
    profiles = (PROFILE_NAMES + ((NATIVE,) if installed else ())) if args.profile == "all" else (args.profile,)

    if args.search:
        return _search(args, out, rules, profiles)
    run = _Run(rules, profiles, Judge(sync_group=args.sync_group), no_kernel=no_kernel)
    if not args.quiet:
        print(f"{prefix(PROG)}: judging {len(rules)} rule(s) x {len(profiles)} profile(s) "
              f"({args.selection['describe']}) on a virtual mesh in numpy "
              f"({'Paddle answers for the native profile' if NATIVE in profiles else 'Paddle not used'}); report in "
              f"{out / 'oracle.md'}", file=sys.stderr, flush=True)
    if args.profile == "all" and not installed:
        print(f"{prefix(PROG)}: the native profile is left out: Paddle is not installed", file=sys.stderr, flush=True)
    try:
        grids = _grids(args, rules, corners=True)
        native: dict[str, list[Outcome]] = {}
        routes: dict[str, str] = {}
        if NATIVE in profiles:  # Paddle's answers first (one worker pool per route), then every profile per rule
            native, routes, run.paddle = collect(grids, args.workers, args.timeout, args.quiet)
            run.routes = routes
        for rule in rules:
            run.judge_rule(rule, grids[rule], args.quiet, native.get(rule, ()), routes.get(rule, ""))
        printed = _write_report(run, args, out, None)
    except (Interrupted, Exception) as exc:  # a signal or an internal error (exit 4): the same partial report
        # (a second signal is ignored while this runs; a failure writing it is said on the one line)
        reason = stopped_by(exc)
        add_detail(exc, write_partial(lambda: _write_report(run, args, out, reason), str(out / "oracle.md")))
        raise
    print(printed)
    print(f"\n{prefix(PROG)}: report in {out / 'oracle.md'} ({time.perf_counter() - run.start:.1f}s)", file=sys.stderr)

    judged = run.judged
    if not any(judged[profiles[0]].values()):
        print(f"{prefix(PROG)}: no case to judge: the grid has none for {', '.join(rules)} on these meshes",
              file=sys.stderr)
        return EXIT_INCOMPLETE
    if "proposed" in profiles:
        bad = [j for rows in judged["proposed"].values() for j in rows
               if j.verdict.label not in (SOUND, OP_REJECTS) and j.answer is not None]
        if bad:
            print(f"{prefix(PROG)}: the proposed profile has {len(bad)} answers that are not sound", file=sys.stderr)
            return EXIT_FINDING
    if NATIVE in profiles:
        unanswered = [j for rows in judged[NATIVE].values() for j in rows if j.verdict.label == NO_ANSWER]
        if unanswered:
            print(f"{prefix(PROG)}: Paddle gave no answer (or none re-checked) for {len(unanswered)} cases in this "
                  f"run (first: {unanswered[0].case.case_id}: {unanswered[0].error[:200]}); the native profile is "
                  "incomplete",
                  file=sys.stderr)
            return EXIT_INCOMPLETE
    return EXIT_OK


def _grids(args: argparse.Namespace, rules: Sequence[str], corners: bool) -> dict[str, list[Case]]:
    grids = {}
    for rule in rules:
        cases = list(oracle_grid(rule, args.meshes))
        if args.sample is not None:
            cases = sample(cases, args.sample, args.seed, corners=corners)
        if args.max_cases is not None:
            cases = cases[:args.max_cases]
        grids[rule] = cases
    return grids


def _search(args: argparse.Namespace, out: Path, rules: list[str], profiles: tuple[str, ...]) -> int:
    """``--search``: the missing-sharding search (:mod:`.search`, reports: :mod:`.search_report`)."""
    run = SearchRun(rules, profiles, Judge(sync_group=args.sync_group), args.max_candidates)
    if not args.quiet:
        print(f"{prefix(PROG)}: searching {len(rules)} rule(s) x {len(profiles)} profile(s) "
              f"({args.selection['describe']}); report in {out / 'search.md'}", file=sys.stderr, flush=True)
    try:
        grids = _grids(args, rules, corners=False)  # a stated sample: the corner sets are not added to it
        native: dict[str, list[Outcome]] = {}
        if NATIVE in profiles:
            native, run.routes, run.paddle = collect(grids, args.workers, args.timeout, args.quiet)
        for rule in rules:
            run.search_rule(rule, grids[rule], args.quiet, native.get(rule, ()), run.routes.get(rule, ""))
        printed = write_report(run, args, out, None)
    except (Interrupted, Exception) as exc:  # a signal or an internal error (exit 4): the same partial report
        reason = stopped_by(exc)
        add_detail(exc, write_partial(lambda: write_report(run, args, out, reason), str(out / "search.md")))
        raise
    print(printed)
    print(f"\n{prefix(PROG)}: report in {out / 'search.md'} ({time.perf_counter() - run.start:.1f}s)", file=sys.stderr)
    searched = sum(1 for fs in run.found[profiles[0]].values() for f in fs if f.klass not in ("skipped",))
    if not searched:
        print(f"{prefix(PROG)}: nothing searched: the selection holds no case of {', '.join(rules)} that could be "
              "searched (see the skipped table)", file=sys.stderr)
        return EXIT_INCOMPLETE
    bad = not_sound_proposed(run)
    if bad:
        print(f"{prefix(PROG)}: the proposed profile has {len(bad)} answers that are not sound", file=sys.stderr)
        return EXIT_FINDING
    if unanswered(run):
        print(f"{prefix(PROG)}: Paddle gave no answer for {len(unanswered(run))} cases in this run; the native "
              "profile is incomplete", file=sys.stderr)
        return EXIT_INCOMPLETE
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(PROG, lambda: _main(argv))


if __name__ == "__main__":
    sys.exit(main())
