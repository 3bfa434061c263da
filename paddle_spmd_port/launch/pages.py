"""launch-np<N>.html: a real-run report as a page (:mod:`..pages`).

At the top the run's verdict (fail: an outcome the port does not account for; uncompared: the run
was interrupted or cases it should have run were not; pass otherwise), Paddle's version and commit,
the release profile and the selection. Per op, a map of mesh x x's placements coloured by verdict
(an outcome the port does not account for is its own, red, class); then every case, filterable by
verdict, with a shell line that runs that case alone.
"""

from __future__ import annotations

import json
import math
import shlex
from collections import Counter

from ..pages import (
    FAIL,
    PASS,
    UNCOMPARED,
    Header,
    Record,
    counts_table,
    esc,
    legend,
    mesh_label,
    page,
    paragraph,
    records_table,
    section,
    verdict_map,
)
from ..reporting import REPRO_PYTHON
from .report import CaseVerdict, Report

NOT_EXPECTED = "NOT EXPECTED"
COMM_DIFFERS = f"communication differs ({NOT_EXPECTED})"
SEVERITY = (f"placement differs ({NOT_EXPECTED})", f"numerics differ ({NOT_EXPECTED})",
            f"Paddle error ({NOT_EXPECTED})", COMM_DIFFERS, f"skipped ({NOT_EXPECTED})", "skipped", "Paddle error",
            "numerics differ", "placement differs", "agree")
COLOURS = {SEVERITY[0]: "#cf222e", SEVERITY[1]: "#a40e26", SEVERITY[2]: "#fb8f44", COMM_DIFFERS: "#bf3989",
           f"skipped ({NOT_EXPECTED})": "#57606a",
           "skipped": "#afb8c1", "Paddle error": "#54aeff", "numerics differ": "#a475f9",
           "placement differs": "#d4a72c", "agree": "#2da44e"}


def klass(v: CaseVerdict) -> str:
    """The case's class on the page: its verdict, NOT EXPECTED where the port does not account for
    it; an accounted outcome whose communication the port does not account for is
    :data:`COMM_DIFFERS`."""
    if not v.expected:
        return f"{v.verdict} ({NOT_EXPECTED})"
    return COMM_DIFFERS if not v.accounted else v.verdict


def launch_verdict(report: Report) -> str:
    if report.meta.get("interrupted"):
        return UNCOMPARED
    if any(v.finding for v in report.verdicts):
        return FAIL
    if report.unexpected or not report.verdicts or not report.meta.get("comm_logging", True):
        return UNCOMPARED
    return PASS


def _release(paddle: str) -> str:
    version = paddle.split(" ", 1)[0]
    if not version or version == "?":
        return "unknown (no rank reported Paddle's version)"
    from ..releases import detect_release

    commit = paddle.split("(", 1)[1].rstrip(")") if "(" in paddle else ""
    return detect_release(version, commit).headline()


def _repro(v: CaseVerdict) -> str:
    ranks = math.prod(v.case.mesh_shape)
    line = json.dumps(v.case.to_json(), separators=(",", ":"))
    name = f"{v.case.case_id}.jsonl"
    return (f"echo {shlex.quote(line)} > {shlex.quote(name)} && {REPRO_PYTHON} -m paddle_spmd_port launch "
            f"--nproc {ranks} --cases {shlex.quote(name)}")


def launch_page(report: Report) -> str:
    meta = report.meta
    paddle = str(meta.get("paddle", "?"))
    selection = meta.get("selection") or {}
    describe = selection.get("describe") if isinstance(selection, dict) else None
    facts = [("Paddle", paddle), ("release profile", _release(paddle)),
             ("selection", str(describe or meta.get("command") or "?")),
             ("run", f"{meta.get('nproc', '?')} ranks, {meta.get('backend', '?')}; meshes "
                     f"{', '.join(meta.get('meshes') or [])}; {meta.get('cases', len(report.verdicts))} cases"),
             ("launch", str(meta.get("launch", "?"))),
             ("time", f"wall {meta.get('wall_seconds', '?')} s, launch {meta.get('launch_seconds', '?')} s"),
             ("tolerance", f"rel = max|dist - ref| / max|ref| <= {meta.get('rtol', '?')} per tensor")]
    verdict = launch_verdict(report)
    counts = Counter(klass(v) for v in report.verdicts)
    if meta.get("interrupted"):
        status = f"INTERRUPTED by {meta['interrupted']}: partial report; unfinished cases are marked skipped"
    else:
        status = (f"{verdict.upper()}: " + ", ".join(f"{k} {n:,}" for k, n in sorted(
            counts.items(), key=lambda kv: SEVERITY.index(kv[0]))))
    ops = list(dict.fromkeys(v.case.op for v in report.verdicts))
    present = [c for c in SEVERITY if counts[c]]
    rows = [(op, *(sum(1 for v in report.verdicts if v.case.op == op and klass(v) == c) for c in present))
            for op in ops]
    sections = [section("Verdicts by op", legend(present, COLOURS, counts)
                        + counts_table(("op", *present), rows, COLOURS)),
                paragraph("Per op: a row per mesh, a column per placement of x (one entry per mesh dim). A cell "
                          "holds its cases over a bar of their verdicts, worst on the left; NOT EXPECTED = an "
                          "outcome the port does not account for. Click a cell to filter the cases below.")]
    maps = []
    for op in ops:
        cells: dict[tuple[str, str], dict[str, int]] = {}
        for v in report.verdicts:
            if v.case.op == op:
                cell = cells.setdefault((mesh_label(v.case.mesh_shape), "[" + ",".join(v.case.placements) + "]"), {})
                cell[klass(v)] = cell.get(klass(v), 0) + 1
        maps.append(f"<h3>{esc(op)}</h3>" + verdict_map(cells, SEVERITY, COLOURS, col_title="x",
                                                         target="rec-launch", cell_prefix=f"{op} "))
    sections.append(section("Where: mesh x x's placement, per op", "".join(maps)))
    records = []
    for v in sorted(report.verdicts, key=lambda v: SEVERITY.index(klass(v))):
        t = {c.name: c for c in v.tensors}
        out = t.get("out")
        rels = [c.rel_err for c in v.tensors if c.rel_err is not None]
        records.append(Record(klass(v), f"{v.case.op} {mesh_label(v.case.mesh_shape)} [{','.join(v.case.placements)}]",
                              (v.case.case_id, v.case.describe(),
                               f"{out.predicted} / {out.observed}" if out is not None else "-",
                               f"{max(rels):.1e}" if rels else "-", v.comm.cell() if v.comm else "-",
                               v.pir.cell() if v.pir else "-",
                               "; ".join([*v.reasons, *(v.comm.reasons if v.comm else []),
                                          *(f"PIR: {r}" for r in (v.pir.reasons if v.pir else [])), *v.notes])[:600]),
                              _repro(v)))
    sections.append(section("Cases", records_table("rec-launch", ("case", "call", "out predicted / observed",
                                                                  "max rel err", "communication (reshards "
                                                                  "pred/obs)", "PIR route", "reasons"), records,
                                                   COLOURS,
                                                   "every case of the run")))
    title = f"Real-run report: {meta.get('title', 'paddle.distributed.launch')}"
    header = Header(title, verdict, status, facts)
    return page(header, sections, data={"verdict": verdict, "status": status})


__all__ = ["COLOURS", "SEVERITY", "launch_page", "launch_verdict"]
