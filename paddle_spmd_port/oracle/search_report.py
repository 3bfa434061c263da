"""``oracle --search``: the missing-sharding search run over a grid, and its reports.

Written to ``--report-dir``: ``search.md`` (per profile a table per rule: cases searched, skipped,
cheaper found, possibly missing, bytes the rule moves and the cheapest sound answers move, the
largest saving with its repro line), ``search.json`` (the same as data, every cheaper or missing
case with both answers and their steps), ``search-summary.md`` (one line per rule and profile, to
paste into a rule PR) and ``search.html`` (a rule x mesh map per profile, coloured by how much the
cheapest sound answer saves, and the records).

Exit code: 0 done (Paddle's dearer answers are findings of the report); 1 the proposed profile
was run and some answer of it is not sound; 3 nothing was searched (no case, or every case skipped)
or the native profile left cases unanswered; 130/143 interrupted (the partial report is written,
its first line ``INTERRUPTED``); 4 an internal error (the same partial report).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..case import Case
from ..outcome import Outcome
from ..pages import (
    FAIL,
    PASS,
    UNCOMPARED,
    Header,
    Record,
    counts_table,
    esc,
    legend,
    page,
    paragraph,
    records_table,
    section,
    verdict_map,
)
from ..reporting import REPRO_PYTHON, markdown_table, write_files
from .native import NATIVE, NO_ANSWER
from .report import Judge, Judged
from .search import Found, Tally, classify, search_case, tallies
from .simulator import OP_REJECTS, SOUND

#: the map's classes, worst first: a big saving is the most interesting cell
MAP_CLASSES = ("saves >= 50%", "saves < 50%", "missing", "none-sound", "no-answer", "as-cheap", "skipped",
               "op-rejects")
MAP_COLOURS = {"saves >= 50%": "#cf222e", "saves < 50%": "#fb8f44", "missing": "#a475f9", "none-sound": "#57606a",
               "no-answer": "#24292f", "as-cheap": "#2da44e", "skipped": "#d4a72c", "op-rejects": "#afb8c1"}
RECORDS_PER_RULE = 25


def map_class(f: Found) -> str:
    if f.klass == "cheaper":
        assert f.rule is not None
        return "saves >= 50%" if 2 * f.saving >= f.rule.bytes else "saves < 50%"
    return f.klass


def repro(f: Found, route: str = "") -> str:
    text = f.space.case.json_text()
    if f.profile == NATIVE:
        return f"{REPRO_PYTHON} -m paddle_spmd_port infer {f'--backend {route} ' if route else ''}--case-json '{text}'"
    if f.profile == "paddle":
        return f"{REPRO_PYTHON} -m paddle_spmd_port infer --case-json '{text}'"
    return f"{REPRO_PYTHON} -m paddle_spmd_port infer --profile {f.profile} --no-native --case-json '{text}'"


@dataclass
class SearchRun:
    """What has been searched so far: enough for the full report or, after a signal, a partial one."""

    rules: list[str]
    profiles: tuple[str, ...]
    judge: Judge
    max_candidates: int
    found: dict[str, dict[str, list[Found]]] = field(default_factory=dict)  # profile -> rule -> found
    planned: dict[str, int] = field(default_factory=dict)
    done: list[str] = field(default_factory=list)
    start: float = field(default_factory=time.perf_counter)
    paddle: dict[str, str] = field(default_factory=dict)
    routes: dict[str, str] = field(default_factory=dict)
    candidates: int = 0
    unconfirmed: int = 0

    def __post_init__(self) -> None:
        self.found = {p: {} for p in self.profiles}

    def search_rule(self, rule: str, cases: Sequence[Case], quiet: bool, native: Sequence[Outcome] = (),
                    route: str = "") -> None:
        t0 = time.perf_counter()
        self.planned[rule] = len(cases)
        rows = {p: self.found[p].setdefault(rule, []) for p in self.profiles}
        for i, case in enumerate(cases):
            space = search_case(case, self.max_candidates, self.judge.sync_group)
            self.candidates += space.candidates
            self.unconfirmed += space.unconfirmed
            judged: dict[str, Judged] = {}
            for p in self.profiles:
                judged[p] = self.judge.native(case, native[i], route) if p == NATIVE else self.judge(case, p)
            for p in self.profiles:  # appended together: a signal leaves every profile at the same case
                j = judged[p]
                rows[p].append(classify(space, p, j.answer, j.verdict.label, j.error))
        self.done.append(rule)
        if not quiet:
            print(f"[oracle --search] {rule}: {len(cases)} cases in {time.perf_counter() - t0:.1f}s",
                  file=sys.stderr, flush=True)

    def status(self) -> dict[str, dict[str, Any]]:
        out = {}
        for rule in self.rules:
            n = len(self.found[self.profiles[0]].get(rule, ()))
            state = "done" if rule in self.done else ("partial" if rule in self.planned else "not started")
            out[rule] = {"status": state, "searched": n, "planned": self.planned.get(rule)}
        return out


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def rule_rows(t: Mapping[str, Tally]) -> list[list[object]]:
    rows: list[list[object]] = []
    for rule, x in t.items():
        c = x.counts
        rows.append([rule, sum(c.values()), x.searched, c["skipped"], c["cheaper"], c["missing"], c["as-cheap"],
                     c["none-sound"], c["op-rejects"], c["no-answer"], x.rule_bytes, x.best_bytes, x.saved,
                     _percent(x.saved, x.rule_bytes)])
    return rows


RULE_HEADER = ("rule", "cases", "searched", "skipped", "cheaper", "missing", "as-cheap", "none-sound", "op-rejects",
               "no-answer", "rule bytes", "cheapest bytes", "saved", "saved %")


def summary_lines(t: Mapping[str, Mapping[str, Tally]]) -> str:
    """One line per rule and profile, to paste into a rule PR."""
    lines = []
    for profile, rules in t.items():
        for rule, x in rules.items():
            c = x.counts
            lines.append(f"{rule} [{profile}]: {x.searched} cases searched ({c['skipped']} skipped), "
                         f"{c['cheaper']} with a cheaper sound answer, {c['missing']} possibly missing, "
                         f"{x.saved:,} bytes/rank saved of {x.rule_bytes:,}")
    return "\n".join(lines)


def _best_text(f: Found) -> str:
    assert f.rule is not None and f.space.cheapest is not None
    return (f"`{f.space.case.describe()}`: the rule's `{f.rule.answer}` moves {f.rule.bytes:,} B "
            f"({f.rule.breakdown()}); `{f.space.cheapest.answer}` moves {f.space.cheapest.bytes:,} B "
            f"({f.space.cheapest.breakdown()})")


def render(run: SearchRun, args: argparse.Namespace, seconds: float, interrupted: str | None
           ) -> tuple[str, str, dict[str, Any]]:
    """(search.md, search-summary.md, search.json)."""
    t = tallies(run.found)
    status = run.status()
    head = ""
    if interrupted:
        unfinished = ", ".join(f"{r} ({s['status']})" for r, s in status.items() if s["status"] != "done") or "none"
        head = (f"INTERRUPTED by {interrupted} after {seconds:.1f}s: partial report of the cases searched so far; "
                f"unfinished rules: {unfinished}\n\n")
    sel = getattr(args, "selection", None) or {}
    cases = sum(len(r) for r in run.found[run.profiles[0]].values())
    parts = [f"{head}# Oracle search: missing shardings and what each answer costs\n\n"
             f"{sel.get('describe', '')}; {cases} cases per profile; {run.candidates:,} candidate answers run "
             f"(at most {run.max_candidates} per case, more: skipped); {seconds:.1f}s. Bytes are per rank, float32, "
             "by Paddle's choice of reshard functions (paddle_spmd_port/reshard.py): each given input to the "
             "answer's, plus the outputs' pending partial sums (a reverse rule: its outputs to the asked "
             "distributions). cheaper = the rule's answer is sound and a sound one costs strictly less; missing = "
             "the rule has no sound answer but one exists; rule/cheapest bytes are summed over the cases the rule "
             "answers soundly.\n"]
    if run.unconfirmed:
        parts.append(f"**{run.unconfirmed} candidates passed the search's check but not the oracle's verdict** "
                     "(they were not reported).\n")
    for profile in run.profiles:
        rows = t.get(profile, {})
        parts.append(f"## Profile `{profile}`\n\n" + markdown_table(RULE_HEADER, rule_rows(rows)) + "\n")
        best = [x.best for x in rows.values() if x.best is not None]
        if best:
            lines = [f"* {b.space.case.rule}: saves {b.saving:,} B. {_best_text(b)}\n"
                     f"  `{repro(b, run.routes.get(b.space.case.rule, ''))}`" for b in best]
            parts.append("Largest saving per rule:\n\n" + "\n".join(lines) + "\n")
        missing = [f for fs in run.found[profile].values() for f in fs if f.klass == "missing"][:10]
        if missing:
            lines = [f"* `{f.space.case.describe()}`: rule {'raises' if f.rule is None and f.error else f.rule_label}"
                     f"; sound: `{f.space.cheapest.answer if f.space.cheapest else ''}` "
                     f"({f.space.cheapest.bytes if f.space.cheapest else 0:,} B)" for f in missing]
            parts.append("Possibly missing (first 10): the rule has no sound answer, a sound one exists:\n\n"
                         + "\n".join(lines) + "\n")
    skipped = Counter(f.space.reason.split(":")[0] for fs in run.found[run.profiles[0]].values() for f in fs
                      if f.klass == "skipped")
    if skipped:
        parts.append("## Skipped cases\n\n" + markdown_table(("why", "cases"), skipped.most_common()) + "\n")
    summary = summary_lines(t)
    parts.append("## Summary (for a PR)\n\n```\n" + summary + "\n```\n")
    data: dict[str, Any] = {
        "status": f"INTERRUPTED by {interrupted}: partial" if interrupted else "complete",
        "selection": sel or None, "rules": status, "seconds": round(seconds, 1), "candidates": run.candidates,
        "max_candidates": run.max_candidates, "unconfirmed": run.unconfirmed,
        **({"paddle": run.paddle, "native_routes": run.routes} if NATIVE in run.profiles else {}),
        "profiles": {p: {rule: {"counts": x.counts, "searched": x.searched, "rule_bytes": x.rule_bytes,
                                "cheapest_bytes": x.best_bytes, "saved": x.saved} for rule, x in t.get(p, {}).items()}
                     for p in run.profiles},
        "cases": [{"profile": f.profile, "id": f.space.case.case_id, "class": f.klass, "case": f.space.case.describe(),
                   "rule": f.rule.to_json() if f.rule else None, "rule_label": f.rule_label,
                   "cheapest": f.space.cheapest.to_json() if f.space.cheapest else None, "saving": f.saving,
                   "candidates": f.space.candidates, "sound_candidates": f.space.sound,
                   "repro": repro(f, run.routes.get(f.space.case.rule, ""))}
                  for p in run.profiles for fs in run.found[p].values() for f in fs
                  if f.klass in ("cheaper", "missing")],
    }
    return "\n".join(parts), summary + "\n", data


def search_verdict(run: SearchRun, interrupted: str | None) -> tuple[str, str]:
    found = run.found
    bad = not_sound_proposed(run)
    cases = sum(len(r) for r in found[run.profiles[0]].values())
    searched = sum(x.searched for rows in tallies(found).values() for x in rows.values())
    cheaper = sum(x.counts["cheaper"] for rows in tallies(found).values() for x in rows.values())
    if bad:
        return FAIL, f"FAIL: the proposed profile has {len(bad):,} answers that are not sound"
    if interrupted:
        return UNCOMPARED, f"INTERRUPTED by {interrupted}: partial report of the cases searched so far"
    if not searched:
        return UNCOMPARED, f"NOTHING SEARCHED: {cases:,} cases, none searched"
    if unanswered(run):
        return UNCOMPARED, f"INCOMPLETE: Paddle gave no answer for {len(unanswered(run)):,} cases (native profile)"
    return PASS, f"DONE: {cases:,} cases per profile, {cheaper:,} (case, profile) pairs with a cheaper sound answer"


def not_sound_proposed(run: SearchRun) -> list[Found]:
    return [f for f in (x for fs in run.found.get("proposed", {}).values() for x in fs)
            if f.rule_label not in (SOUND, OP_REJECTS) and f.rule is not None]


def unanswered(run: SearchRun) -> list[Found]:
    return [f for fs in run.found.get(NATIVE, {}).values() for f in fs if f.klass == NO_ANSWER]


def search_page(run: SearchRun, args: argparse.Namespace, seconds: float, interrupted: str | None) -> str:
    verdict, line = search_verdict(run, interrupted)
    sel = getattr(args, "selection", None) or {}
    facts = [("selection", str(sel.get("describe", "?"))), ("profiles", ", ".join(run.profiles)),
             ("bound", f"at most {run.max_candidates} candidates per case"),
             ("cost model", "bytes per rank, float32, by Paddle's reshard functions (paddle_spmd_port/reshard.py)"),
             ("time", f"{seconds:.1f} s"), ("files", "search.md, search.json, search-summary.md next to this page")]
    if run.paddle:
        commit = str(run.paddle.get("commit", "?"))[:12]
        facts.insert(0, ("Paddle", f"{run.paddle.get('version', '?')} (commit {commit})"))
    rules = [r for r in run.rules if any(r in run.found[p] for p in run.profiles)]
    t = tallies(run.found)
    totals: Counter[str] = Counter()
    sections = []
    maps = []
    for p in run.profiles:
        cells: dict[tuple[str, str], dict[str, int]] = {}
        for rule, fs in run.found[p].items():
            for f in fs:
                key = (rule, "x".join(map(str, f.space.case.mesh.shape)))
                cells.setdefault(key, {})
                k = map_class(f)
                cells[key][k] = cells[key].get(k, 0) + 1
                totals[k] += 1
        meshes = sorted({c for _, c in cells}, key=lambda m: (m.count("x"), m))
        maps.append(f'<div class="prof"><h4>{esc(p)}</h4>'
                    + verdict_map(cells, MAP_CLASSES, MAP_COLOURS, row_title="rule", col_title="mesh", rows=rules,
                                  cols=meshes) + "</div>")
    present = [c for c in MAP_CLASSES if totals[c]]
    rows = [[p, *r] for p in run.profiles for r in rule_rows(t.get(p, {}))]
    sections.append(section("Rules x meshes, per profile", legend(present, MAP_COLOURS, totals) + "".join(maps)
                            + '<details class="sub"><summary>the counts and bytes</summary>'
                            + counts_table(("profile", *RULE_HEADER), rows) + "</details>"))
    sections.append(paragraph("Each cell: the cases of that rule on that mesh over a bar of their classes. saves = "
                              "the rule's answer is sound and the cheapest sound answer found moves that much less "
                              "(of the rule's bytes per rank); missing = the rule has no sound answer, one exists. "
                              f"Records: the cheaper and missing cases, the first {RECORDS_PER_RULE} per rule and "
                              "profile; search.json holds them all."))
    for rule in rules:
        records: list[Record] = []
        for p in run.profiles:
            shown = 0
            for f in run.found[p].get(rule, ()):
                if f.klass not in ("cheaper", "missing") or shown >= RECORDS_PER_RULE:
                    continue
                shown += 1
                best = f.space.cheapest
                records.append(Record(map_class(f), "", (
                    p, f.space.case.describe(),
                    f"{f.rule.answer} ({f.rule.bytes:,} B)" if f.rule else (f.error or f.rule_label),
                    f"{best.answer} ({best.bytes:,} B)" if best else "", f"{f.saving:,}",
                    best.breakdown() if best else ""), repro(f, run.routes.get(rule, ""))))
        if records:
            sections.append(section(rule, records_table(f"rec-{rule}", ("profile", "case", "rule's answer",
                                                                         "cheapest sound", "saved B", "its steps"),
                                                        records, MAP_COLOURS), open_=False,
                                    note=f"{len(records)} shown"))
    header = Header("Oracle search: missing shardings and their cost", verdict, line, facts)
    return page(header, sections, data={"verdict": verdict, "status": line, "profiles": list(run.profiles)})


def write_report(run: SearchRun, args: argparse.Namespace, out: Path, interrupted: str | None) -> str:
    """Write every file; returns what to print."""
    seconds = time.perf_counter() - run.start
    md, summary, data = render(run, args, seconds, interrupted)
    write_files(out, {"search.md": md, "search-summary.md": summary, "search.json": json.dumps(data, indent=1),
                      "search.html": search_page(run, args, seconds, interrupted)})
    return summary if args.quiet else md


__all__ = ["MAP_CLASSES", "SearchRun", "render", "search_page", "search_verdict", "summary_lines", "write_report"]
