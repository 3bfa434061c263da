"""oracle.html: the oracle's verdicts as a page (:mod:`..pages`).

At the top the run's verdict (fail: a ``proposed`` answer is not sound, the command's exit 1;
uncompared: interrupted, nothing judged, or Paddle left cases unanswered for ``native``; pass
otherwise: Paddle's own bugs are findings, not failures), Paddle's version and commit, the release
profile and the selection. Then a rule x profile map of sound / unsound / unrunnable / ... counts;
per rule, a mesh x first-input-placement map per profile; and the records of every case that is
not sound (or got no answer), the first :data:`RECORDS_PER_CLASS` per rule, profile and class,
each with an ``infer`` line that shows the answer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..installed import NOT_INSTALLED, paddle_version
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
    records_table,
    section,
    verdict_map,
)
from ..reporting import REPRO_PYTHON
from .native import NATIVE, NO_ANSWER
from .report import Judged
from .simulator import LOCAL_STATS, OP_REJECTS, RULE_ERROR, SOUND, UNRUNNABLE, UNSOUND

SEVERITY = (UNSOUND, UNRUNNABLE, LOCAL_STATS, NO_ANSWER, RULE_ERROR, OP_REJECTS, SOUND)
COLOURS = {UNSOUND: "#cf222e", UNRUNNABLE: "#fb8f44", LOCAL_STATS: "#a475f9", NO_ANSWER: "#57606a",
           RULE_ERROR: "#54aeff", OP_REJECTS: "#afb8c1", SOUND: "#2da44e"}
SHOWN = (UNSOUND, UNRUNNABLE, LOCAL_STATS, NO_ANSWER)
"""The classes whose cases are listed (the rest are counted in the maps only)."""
RECORDS_PER_CLASS = 25


def oracle_verdict(judged: Mapping[str, Mapping[str, Sequence[Judged]]], interrupted: str | None) -> tuple[str, str]:
    """(verdict, status line), the command's exit status in words."""
    cases = {p: sum(len(r) for r in rows.values()) for p, rows in judged.items()}
    first = next(iter(cases.values()), 0)
    bad = [j for rows in judged.get("proposed", {}).values() for j in rows
           if j.verdict.label not in (SOUND, OP_REJECTS) and j.answer is not None]
    unanswered = sum(1 for rows in judged.get(NATIVE, {}).values() for j in rows if j.verdict.label == NO_ANSWER)
    paddle_bugs = Counter(j.verdict.label for rows in judged.get("paddle", {}).values() for j in rows
                          if j.verdict.label in (UNSOUND, UNRUNNABLE, LOCAL_STATS))
    findings = ", ".join(f"{n:,} {k}" for k, n in paddle_bugs.items()) or "none"
    if bad:
        return FAIL, f"FAIL: the proposed profile has {len(bad):,} answers that are not sound ({first:,} cases)"
    if interrupted:
        return UNCOMPARED, f"INTERRUPTED by {interrupted}: partial report of the cases judged so far"
    if not first:
        return UNCOMPARED, "NOTHING JUDGED: the selection holds no case"
    if unanswered:
        return UNCOMPARED, f"INCOMPLETE: Paddle gave no answer for {unanswered:,} cases (native profile)"
    return PASS, (f"DONE: {first:,} cases per profile judged; Paddle's bugs are findings (paddle profile: {findings})"
                  + ("; every proposed answer sound" if "proposed" in judged else ""))


def _repro(j: Judged) -> str:
    text = j.case.json_text()
    if j.profile == NATIVE:
        route = f"--backend {j.route} " if j.route else ""
        return f"{REPRO_PYTHON} -m paddle_spmd_port infer {route}--case-json '{text}'"
    if j.profile == "paddle":
        return f"{REPRO_PYTHON} -m paddle_spmd_port infer --case-json '{text}'"
    return f"{REPRO_PYTHON} -m paddle_spmd_port infer --profile {j.profile} --no-native --case-json '{text}'"


def release_text(info: Mapping[str, str]) -> str:
    """The release profile parity would apply to this Paddle (the oracle judges the port's rule
    profiles; ``native`` is Paddle's own answers)."""
    if not info.get("version"):
        return "none (Paddle is not installed)"
    from ..releases import detect_release

    return detect_release(str(info["version"]), str(info.get("commit") or "")).headline()


def oracle_page(judged: Mapping[str, Mapping[str, Sequence[Judged]]], *, selection: str, meshes: str,
                seconds: float, interrupted: str | None, paddle: Mapping[str, str] | None,
                routes: Mapping[str, str], status: Mapping[str, Mapping[str, Any]]) -> str:
    """The page; ``paddle``: the version the native profile's answers came from (else the installed
    one, read without importing it)."""
    profiles = list(judged)
    verdict, line = oracle_verdict(judged, interrupted)
    info = dict(paddle or {})
    if not info.get("version"):
        found = paddle_version()
        info = {"version": found["version"], "commit": found["commit"]} if found["version"] != NOT_INSTALLED else {}
    paddle_text = (f"{info['version']} (commit {str(info.get('commit') or '?')[:12]})" if info
                   else "not installed (the oracle judges the port's profiles without it)")
    if not paddle:
        paddle_text += "; installed, not consulted" if info else ""
    unfinished = [f"{r} ({s['status']})" for r, s in status.items() if s["status"] != "done"]
    facts = [("Paddle", paddle_text), ("release profile", release_text(info)), ("selection", selection),
             ("meshes", meshes), ("profiles", ", ".join(profiles)),
             ("time", f"{seconds:.1f} s"),
             ("files", "oracle.md, oracle.json, oracle-cases.jsonl.gz next to this page")]
    if routes:
        facts.append(("native routes", ", ".join(f"{r}: {route}" for r, route in routes.items())))
    if unfinished:
        facts.append(("unfinished", ", ".join(unfinished)))
    rules = list(dict.fromkeys(r for rows in judged.values() for r in rows))
    overview: dict[tuple[str, str], dict[str, int]] = {}
    totals: Counter[str] = Counter()
    for p, rows in judged.items():
        for rule, js in rows.items():
            c = Counter(j.verdict.label for j in js)
            overview[(rule, p)] = dict(c)
            totals.update(c)
    present = [c for c in SEVERITY if totals[c]]
    table_rows = [(rule, p, sum(overview[(rule, p)].values()), *(overview[(rule, p)].get(c, 0) for c in present))
                  for rule in rules for p in profiles if (rule, p) in overview]
    sections = [section("Rules x profiles", legend(present, COLOURS, totals)
                        + verdict_map(overview, SEVERITY, COLOURS, row_title="rule", col_title="profile",
                                      rows=rules, cols=profiles)
                        + '<details class="sub"><summary>the counts</summary>'
                        + counts_table(("rule", "profile", "cases", *present), table_rows, COLOURS) + "</details>"),
                paragraph("Per rule, a map per profile: a row per mesh, a column per placement of the rule's first "
                          "given input (S(axis) split, P partial, R replicated). Each cell holds its cases over a bar "
                          f"of their verdicts, worst on the left. Records: every case that is {', '.join(SHOWN)}, "
                          f"the first {RECORDS_PER_CLASS} per rule, profile and verdict; oracle-cases.jsonl.gz holds "
                          "every unsound, unrunnable and local-stats-only case.")]
    for rule in rules:
        table_id = f"rec-{rule}"
        column = rule_spec(rule).inputs[0] if rule_spec(rule).inputs else "placement"
        maps = []
        records: list[Record] = []
        hidden = 0
        for p in profiles:
            js = judged[p].get(rule, ())
            cells: dict[tuple[str, str], dict[str, int]] = {}
            labels: dict[tuple, tuple[str, str]] = {}
            kept: Counter[str] = Counter()
            for j in js:
                key = map_key(j.case)
                cell = labels.get(key)
                if cell is None:
                    cell = labels[key] = map_label(key)
                label = j.verdict.label
                counts = cells.setdefault(cell, {})
                counts[label] = counts.get(label, 0) + 1
                if label in SHOWN:
                    if kept[label] < RECORDS_PER_CLASS:
                        kept[label] += 1
                        what = j.verdict.summary() if label != NO_ANSWER else j.error
                        records.append(Record(label, f"{p}: {cell[0]} {cell[1]}",
                                              (p, j.case.case_id, j.case.describe(),
                                               str(j.answer) if j.answer is not None else j.error, what),
                                              _repro(j)))
                    else:
                        hidden += 1
            maps.append(f'<div class="prof"><h4>{esc(p)}</h4>'
                        + verdict_map(cells, SEVERITY, COLOURS, col_title=column, target=table_id,
                                      cell_prefix=f"{p}: ") + "</div>")
        note = f"{hidden:,} more not shown (oracle-cases.jsonl.gz)" if hidden else "every such case"
        bad = sum(1 for r in records if r.klass in (UNSOUND, UNRUNNABLE))
        sections.append(section(rule, "".join(maps) + '<details class="sub"><summary>records '
                                f"({len(records) + hidden:,} not sound)</summary>"
                                + records_table(table_id, ("profile", "id", "case", "answer", "what goes wrong"),
                                                records, COLOURS, note) + "</details>",
                                open_=True, note=f"{bad:,} unsound or unrunnable shown" if bad else ""))
    header = Header("Oracle: numerical soundness on a virtual mesh", verdict, line, facts)
    return page(header, sections, data={"verdict": verdict, "status": line, "profiles": profiles})


__all__ = ["COLOURS", "SEVERITY", "oracle_page", "oracle_verdict"]
