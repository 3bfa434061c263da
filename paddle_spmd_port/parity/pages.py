"""parity.html and baseline.html: the parity report and the baseline diff as pages (:mod:`..pages`).

parity.html: the verdict (pass / fail / uncompared), Paddle's version and commit, the release profile
and the selection at the top; the table of every group's classes; per rule and route a verdict map
(mesh x the first given input's placement, each cell its cases over a bar of their classes) and its
records, filterable by class, by text and by a click on a map cell, each with its repro line. A
whole sweep's page holds the maps' counts and the first :data:`~.report.HTML_RECORDS` records per
class and group (the mismatches up to :data:`~.report.MISMATCHES_KEPT`); every record is in
parity-cases.jsonl.gz.

baseline.html: regressions first, a map per rule of the changed cases by class, every changed case
with its repro line (up to :data:`BASELINE_RECORDS`).
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

from ..case import Case
from ..compare import CLASSES
from ..ops import rule_spec
from ..pages import (
    FAIL,
    PASS,
    UNCOMPARED,
    Header,
    Record,
    counts_table,
    esc,
    legend,
    map_key,
    map_label,
    page,
    paragraph,
    pre,
    records_table,
    section,
    verdict_map,
)
from ..types import CORE
from .baseline import CASES_FILE as BASELINE_CASES_FILE
from .baseline import CLASSES as CHANGE_CLASSES
from .baseline import UNSTABLE, Diff, build_text
from .report import CASES_FILE, DONE, HTML_RECORDS, MISMATCHES_KEPT, GroupTally, ParityReport

#: Worst first: a map cell's bar starts with its worst class.
SEVERITY = ("mismatch", "native-crash", "undecodable", "not-run", "unreachable", "release-lacks", "known-difference",
            "native-varies", "port-rejects-invalid", "both-raise-same", "match")
COLOURS = {"match": "#2da44e", "both-raise-same": "#8fd19e", "port-rejects-invalid": "#54aeff",
           "known-difference": "#d4a72c", "release-lacks": "#d0d7de", "unreachable": "#afb8c1", "not-run": "#57606a",
           "undecodable": "#a475f9", "native-crash": "#fb8f44", "native-varies": "#e0c3fc",
           "mismatch": "#cf222e"}
assert set(SEVERITY) == set(CLASSES) == set(COLOURS)

BASELINE_RECORDS = 2000
"""Changed cases listed on baseline.html (regressions first); every one is in baseline-cases.jsonl.gz."""


def parity_verdict(report: ParityReport) -> str:
    """pass: every selected case compared (but those of what the release lacks, as its profile declares),
    none mismatching; fail: a mismatch; uncompared: anything else (cases no route compared, an empty
    selection, no case compared at all, an interrupted or unfinished run)."""
    if report.total_mismatches:
        return FAIL
    if report.complete and not report.interrupted and not report.empty and not report.total_uncompared \
            and report.total_compared:
        return PASS
    return UNCOMPARED


def paddle_text(paddle: dict[str, Any]) -> str:
    version = paddle.get("version")
    if not version:
        return "? (no native route answered)"
    if version == "not installed":
        return "not installed"
    return f"{version} (commit {str(paddle.get('commit') or '?')[:12]})"


def _records(tally: GroupTally) -> list[dict[str, Any]]:
    """The group's records for the page: those kept in this run, or (a merged report) its examples."""
    if tally.shown:
        return [r for v in SEVERITY for r in tally.shown.get(v, [])]
    out = []
    for verdict in SEVERITY:
        for ex in tally.examples.get(verdict, []):
            try:
                cell = map_label(map_key(Case.from_json(ex["case"])))
            except (KeyError, TypeError, ValueError):
                cell = ("", "")
            out.append({**ex, "cell": cell})
    return out


def first_input(rule: str) -> str:
    """The name of the map's column tensor: the rule's first input (the first given one, when a
    case leaves it out)."""
    try:
        return rule_spec(rule).inputs[0]
    except (KeyError, IndexError, ValueError):
        return "first input"


def _group_body(tally: GroupTally) -> str:
    table_id = f"rec-{tally.rule}-{tally.backend}"
    cells = tally.verdict_map()
    records = [Record(r["verdict"], " ".join(r["cell"]), (r["id"], r["describe"], r["port"], r["native"],
                                                          "; ".join([*([r["note"]] if r.get("note") else []),
                                                                     *r["diffs"][:6]])), r["repro"])
               for r in _records(tally)]
    shown = Counter(r.klass for r in records)
    capped = [v for v in SEVERITY if v not in ("match", "both-raise-same") and tally.verdicts.get(v, 0) > shown[v]]
    note = (f"first {HTML_RECORDS} per class ({MISMATCHES_KEPT} mismatches); " if capped else "") + \
        f"matches and same errors are counted in the map only; every other case is in {CASES_FILE}"
    present = [v for v in SEVERITY if tally.verdicts.get(v)]
    listed = sum(n for v, n in tally.verdicts.items() if v not in ("match", "both-raise-same"))
    body = (legend(present, COLOURS, tally.verdicts)
            + verdict_map(cells, SEVERITY, COLOURS, col_title=first_input(tally.rule), target=table_id)
            + f'<details class="sub"{" open" if tally.mismatches else ""}><summary>records '
              f"({len(records):,} shown of {listed:,})</summary>"
            + records_table(table_id, ("id", "case", "port", "native", "cells that differ / note"), records, COLOURS,
                            note) + "</details>")
    return body


def parity_page(report: ParityReport) -> str:
    wall = (report.finished or report.started) - report.started
    profile = report.profile.get("headline") if report.profile else None
    facts = [("Paddle", paddle_text(report.paddle)),
             ("release profile", profile or "none (no Paddle answered)"),
             ("selection", str(report.selection.get("describe", "?"))),
             ("cases / cells", f"{sum(c.selected for c in report.coverage.values()):,} selected cases, "
                               f"{report.total_cells:,} cells compared, {report.total_mismatches:,} mismatching "
                               f"cases, {report.total_uncompared:,} uncompared"
                               + (f", {report.total_lacking:,} the release lacks" if report.total_lacking else "")
                               + (f"; {report.answered_text()}" if report.answered_text() else "")),
             ("port core", f"{CORE}; wall time {wall:.1f} s"),
             ("files", f"parity.md, parity.json, {CASES_FILE} (every record) next to this page")]
    head = ("group", "state", "cases", *SEVERITY)
    rows = [(t.key, t.state, t.cases, *(t.verdicts.get(c, 0) for c in SEVERITY)) for t in report.tallies.values()]
    totals = Counter[str]()
    for t in report.tallies.values():
        totals.update(t.verdicts)
    rows.append(("total", "", sum(t.cases for t in report.tallies.values()), *(totals[c] for c in SEVERITY)))
    overview = {(t.rule, t.backend): {v: n for v, n in t.verdicts.items() if n} for t in report.tallies.values()}
    rules = list(dict.fromkeys(t.rule for t in report.tallies.values()))
    routes = list(dict.fromkeys(t.backend for t in report.tallies.values()))
    sections = [section("Rules x native routes", legend([c for c in SEVERITY if totals[c]], COLOURS, totals)
                        + verdict_map(overview, SEVERITY, COLOURS, row_title="rule", col_title="route", rows=rules,
                                      cols=routes)),
                section("Groups (rule @ native route)", counts_table(head, rows, COLOURS)),
                section("Coverage (a case is compared when some route answered it)", pre("\n".join(
                    report.coverage_lines()) or "no rule selected"), open_=bool(report.total_uncompared))]
    if report.notes:
        sections.append(section("Notes", "".join(paragraph(n) for n in report.notes)))
    sections.append(paragraph("Verdict maps: a row per mesh, a column per placement of the rule's first given input "
                              "(dygraph view: S(axis) split, P partial, R replicated; S(a)#k a co-shard's k-th mesh "
                              "dim). A cell holds its cases; its bar shows their classes, worst on the left, each at "
                              "least 8% wide. Hover for the counts; click to filter the group's records."))
    by_rule: dict[str, list[GroupTally]] = {}
    for t in report.tallies.values():
        by_rule.setdefault(t.rule, []).append(t)
    for rule, tallies in by_rule.items():
        parts = []
        for t in tallies:
            state = "" if t.state == DONE else f" ({t.state})"
            parts.append(f"<h3>{esc(t.key + state)}</h3>" + _group_body(t))
        bad = sum(t.mismatches for t in tallies)
        sections.append(section(f"{rule}", "".join(parts), note=f"{bad:,} mismatching" if bad else ""))
    header = Header("Parity: paddle_spmd_port vs Paddle", parity_verdict(report), report.status_line(), facts)
    return page(header, sections, data={"verdict": header.verdict, "status": header.status,
                                        "paddle": report.paddle, "selection": report.selection.get("slug")})


# --------------------------------------------------------------------------- baseline.html
def baseline_page(diff: Diff, new_paddle: dict[str, Any], selection: dict[str, Any], interrupted: str = "") -> str:
    order = (*CHANGE_CLASSES, UNSTABLE)
    colours = {"regressed": "#cf222e", "newly raises": "#fb8f44", "fixed": "#2da44e", "no longer raises": "#8fd19e",
               "changed": "#d4a72c", "changed (invalid input)": "#54aeff", "changed (unstable)": "#e0c3fc",
               "unstable": "#afb8c1"}
    counts = diff.counts
    if interrupted:
        verdict = UNCOMPARED
    elif counts["regressed"]:
        verdict = FAIL
    elif diff.incomplete:
        verdict = UNCOMPARED
    else:
        verdict = PASS
    old_name, new_name = build_text(diff.stored.paddle), build_text(new_paddle)
    from ..releases import detect_release

    release = (detect_release(str(new_paddle["version"]), str(new_paddle.get("commit") or "")).headline()
               if new_paddle.get("version") not in (None, "", "not installed") else "none (no Paddle answered)")
    facts = [("Paddle", f"baseline {old_name} -> this build {new_name}"),
             ("release profile", f"this build's: {release}"),
             ("baseline file", str(diff.stored.path)),
             ("selection", str(selection.get("describe", "?"))),
             ("cases", f"{diff.unchanged:,} unchanged ({diff.normalised:,} once reasons' source lines and build paths "
                       f"are normalised), {diff.changed():,} changed, {counts[UNSTABLE]:,} unstable (shown to vary), "
                       f"{sum((diff.uncompared + diff.missing()).values()):,} uncompared")]
    rows = [(g, *(n[k] for k in order)) for g, n in sorted(diff.groups.items(), key=lambda kv: -kv[1]["regressed"])]
    rows.append(("total", *(counts[k] for k in order)))
    sections = [section("Changed cases by group (regressions first)", legend(order, colours, counts)
                        + counts_table(("group", *order), rows, colours))]
    uncompared = diff.uncompared + diff.missing()
    if uncompared:
        sections.append(section("Uncompared", pre("\n".join(f"{n:,} cases: {why}" for why, n in
                                                            uncompared.most_common()))))
    by_rule = diff.cells  # (counted as the changes were triaged: the changes themselves are on disk)
    if by_rule:
        maps = "".join(f"<h3>{esc(rule)}</h3>" + verdict_map(cells, order, colours, col_title=first_input(rule),
                                                             target="rec-baseline") for rule, cells in by_rule.items())
        sections.append(section("Where the changes are (per rule: mesh x first input's placement, changed cases "
                                "only)", maps))
    shown = list(itertools.islice(diff.ordered(), BASELINE_RECORDS))
    records = [Record(ch.klass, " ".join(map_label(map_key(ch.case))),
                      (f"{ch.rule}@{ch.backend}", ch.case.case_id, ch.case.describe(),
                       f"{ch.old} — {ch.old_verdict}", f"{ch.new} — {ch.new_verdict}",
                       "; ".join([*ch.diffs[:6], *([f"re-runs: {ch.rerun_note}"] if ch.rerun_note else [])])),
                      ch.repro) for ch in shown]
    note = (f"the first {BASELINE_RECORDS:,} of {diff.total:,}; all in {BASELINE_CASES_FILE}"
            if diff.total > len(shown) else "every changed case") \
        + "; each repro runs under whichever build is installed: run it under each"
    sections.append(section("Changed cases", records_table("rec-baseline", ("group", "id", "case", f"old ({old_name})",
                                                                            f"new ({new_name})", "cells"),
                                                           records, colours, note)))
    header = Header(f"Baseline diff: Paddle {old_name} -> {new_name}", verdict, diff.status(interrupted), facts)
    return page(header, sections, data={"verdict": verdict, "status": header.status})


__all__ = ["COLOURS", "SEVERITY", "baseline_page", "parity_page", "parity_verdict"]
