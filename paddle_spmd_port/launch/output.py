"""Write a real-run report (:class:`.report.Report`): ``<stem>.md``, ``<stem>.json`` and
``<stem>.html`` (:mod:`.pages`). The report is data; this module is its only writer, so the data
imports no renderer."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from ..ops.kit.launch import each_op
from ..reporting import markdown_table, write_atomic, write_json
from .comm import COMM_VERDICTS
from .pages import launch_page
from .report import VERDICTS, CaseVerdict, Report


def write_report(report: Report, directory: Path, stem: str) -> tuple[Path, Path]:
    """``<stem>.md``, ``<stem>.json`` and ``<stem>.html`` in ``directory``, each written
    atomically; the paths of the first two."""
    directory.mkdir(parents=True, exist_ok=True)
    md = write_atomic(directory / f"{stem}.md", render_markdown(report))
    js = write_json(directory / f"{stem}.json", report.to_json())
    write_atomic(directory / f"{stem}.html", launch_page(report))
    return md, js


EAGER_LIMITS = """\
What eager mode can show, and so what is compared:

* compared: placements (Partial included) and local shapes of `out`, of the outputs an op's
  functional call drops but a forward-only call of the same op exposes, and of
  `weight.grad`/`bias.grad`; `x.grad`'s against x's own placement (a leaf's `.grad` is resharded
  back to the leaf's placement, co-shard members with their shard order `S(d)#k`; so the grad
  rule's `x_grad` is invisible); the values of `out`, `x.grad`, `weight.grad`, `bias.grad` and the
  running statistics.
* not compared: the placements of `running_mean`/`running_var` (updated in place, they keep the
  placement they were given); the input-side attributes a rule chooses (x, scale, mean ... after
  resharding); intermediate outputs the functional API does not return.
* upstream gradient: fed with exactly the placement `out` came out with, so the grad rule sees
  out_grad placed like the forward rule's `out`.
"""


def op_notes() -> str:
    """What each op adds to :data:`EAGER_LIMITS` (its family's ``report_notes``)."""
    lines = ["By op:", ""]
    lines += [f"* {note}" for op in each_op() for note in op.report_notes]
    return "\n".join(lines) + "\n"


def _fmt_pl(value: Sequence[str] | None) -> str:
    return "-" if value is None else "[" + ",".join(value) + "]"


def render_markdown(report: Report) -> str:
    meta = report.meta
    title = meta.get("title", "paddle.distributed.launch")
    if meta.get("interrupted"):
        lines = [f"# Real-run report (INTERRUPTED by {meta['interrupted']}, partial): {title}", "",
                 f"Interrupted by {meta['interrupted']}: every process of the launch was ended. Cases that every "
                 "rank finished are judged below; the rest are marked skipped, \"not run: interrupted\".", ""]
    else:
        lines = [f"# Real-run report: {title}", ""]
    for key in ("command", "launch", "paddle", "backend", "nproc", "meshes", "cases", "wall_seconds",
                "launch_seconds"):
        if key in meta:
            lines.append(f"- **{key}**: {meta[key]}")
    lines += [f"- **tolerance**: rel = max|dist - ref| / max|ref| <= {meta['rtol']:g} per tensor "
              "(reference: the same call on plain dense tensors inside the rank)", ""]
    ce = report.counts_expected()
    lines += ["## Verdicts", "", markdown_table(
        ("verdict", "expected (port accounts for it)", "not expected"),
        [(verdict, ce[(verdict, True)], ce[(verdict, False)]) for verdict in VERDICTS
         if ce[(verdict, True)] or ce[(verdict, False)]])]
    by_op = {op: Counter(v.verdict for v in report.verdicts if v.case.op == op)
             for op in sorted({v.case.op for v in report.verdicts})}
    lines += ["", "### By op", "", markdown_table(("op", *VERDICTS),
                                                  [(op, *(c[k] for k in VERDICTS)) for op, c in by_op.items()])]
    lines += ["", "### Placements and values by op", "", markdown_table(
        ("op", "placements compared", "equal to the port", "max rel err (values the port says hold)",
         "max rel err (values the port says cannot hold)"), [_op_figures(report, op) for op in by_op])]
    lines += ["", *render_comm(report), *render_comm(report, "pir")]
    lines += ["", EAGER_LIMITS, op_notes()]
    if meta.get("not_launched"):
        lines += ["## Rules no launch case reaches", ""]
        lines += [f"- `{rule}`: {why}" for rule, why in meta["not_launched"].items()]
        lines.append("")
    if meta.get("probes"):
        lines += ["## Crash probes", "", "Stages the port predicts to crash Paddle are not run inside the launch; "
                  "one case per kind was run alone on a mesh of size-1 dims (a run that did not crash was "
                  "started again, a few times at most: a heap corruption does not abort every run):", ""]
        for key, probe in meta["probes"].items():
            lines.append(f"- `{key}`: case {probe['case_id']} -> {probe['summary']}")
        lines.append("")
    groups: dict[tuple[str, bool, str], list[CaseVerdict]] = {}
    for v in report.verdicts:
        if v.verdict == "agree" and not v.notes:
            continue
        head = v.reasons[0] if v.reasons else (v.notes[0] if v.notes else "")
        groups.setdefault((v.verdict, v.expected, _generalise(head)), []).append(v)
    if groups:
        lines += ["## Cases that are not a plain agree, grouped by reason", ""]
        for (verdict, expected, head), items in sorted(groups.items(), key=lambda kv: (VERDICTS.index(kv[0][0]),
                                                                                          kv[0][1], kv[0][2])):
            tag = "expected" if expected else "NOT EXPECTED"
            lines.append(f"### {verdict} ({tag}), {len(items)} case(s): {head}")
            lines.append("")
            for v in items[:12]:
                extra = "; ".join(list(v.reasons[1:]) + list(v.notes))
                lines.append(f"- {v.case.case_id} `{v.case.describe()}`" + (f": {extra}" if extra else ""))
            if len(items) > 12:
                lines.append(f"- ... and {len(items) - 12} more ({', '.join(x.case.case_id for x in items[12:])})")
            lines.append("")
    rows = []
    for v in report.verdicts:
        t = {c.name: c for c in v.tensors}
        out, wg = t.get("out"), t.get("weight_grad") or t.get("bias_grad")
        rels = [c.rel_err for c in v.tensors if c.rel_err is not None]
        rows.append((v.case.case_id, f"`{v.case.describe()}`", v.verdict + ("" if v.expected else " (!)"),
                     f"{_fmt_pl(out.predicted)} / {_fmt_pl(out.observed)}" if out else "-",
                     f"{_fmt_pl(wg.predicted)} / {_fmt_pl(wg.observed)}" if wg else "-",
                     f"{max(rels):.1e}" if rels else "-", (v.comm.cell() if v.comm else "-"),
                     v.pir.cell() if v.pir else "-"))
    lines += ["## All cases", "", markdown_table(
        ("case", "call", "verdict", "out pred/obs", "weight_grad pred/obs", "max rel err",
         "communication (reshards pred/obs)", "PIR route (reshards pred/obs)"), rows)]
    return "\n".join(lines) + "\n"


COMM_LIMITS = """\
Communication: the reshards Paddle ran inside the op (its forward API and its grad node), read from
its VLOG lines on every rank, against those the port's answer implies (`reshard.plan` from each
operand's placement to the one the port's rule gives it; in the backward also the grad rule's
`x_grad` back to x's placement). A reshard is matched by tensor kind, shape, source and target, then
its functions (Paddle's choice and the 1-D functions it called, with their mesh dims) are compared.
Reshards outside the op (the other ops of a composite API) are counted, not compared. Stages that
raised or did not run are not compared.
"""


PIR_LIMITS = """\
The PIR route: each case's forward built as a static PIR program in one process (no data, nothing
runs) and put through the passes `dist.to_static` runs (mix2dist, partition, reshard). The
`dist_op.reshard` ops the partition pass puts before the op are matched with the predicted input
reshards by shape, source and target; where every reshard of the program feeds the op, the
collective ops the reshard pass leaves (`pd_op.all_gather`, `all_reduce`, `reduce_scatter`,
`all_to_all`, ...) are compared, as a multiset, with the collectives of the predicted steps. A case
whose forward the port predicts to crash Paddle is not built; the backward is not built.
"""


def render_comm(report: Report, route: str = "comm") -> list[str]:
    """The communication section of the eager run (``comm``) or the PIR route (``pir``): verdict
    counts, figures per op, differences grouped."""
    pir = route == "pir"
    if pir and all(v.pir is None for v in report.verdicts):
        return ["## PIR route", "", "Not run.", ""]
    lines = ["## PIR route" if pir else "## Communication", ""]
    if pir and report.meta.get("pir"):
        lines += [f"{report.meta['pir']}.", ""]
    if not pir and not report.meta.get("comm_logging", True):
        lines += ["**Not compared**: no rank saw its reshard log lines (Paddle's VLOG), so the run's "
                  "communication is unknown.", ""]
    counts = report.comm_counts(route)
    lines.append(markdown_table(("PIR route" if pir else "communication", "expected (port accounts for it)",
                                 "not expected"),
                                [(k, counts[(k, True)], counts[(k, False)]) for k in COMM_VERDICTS
                                 if counts[(k, True)] or counts[(k, False)]]))
    rows = []
    for op in sorted({v.case.op for v in report.verdicts}):
        mine = [c for c in (getattr(v, route) for v in report.verdicts if v.case.op == op) if c is not None]
        compared = [c for c in mine if c.verdict != "not compared"]
        pred = sum(len(es) for c in compared for es in c.predicted.values())
        obs = sum(len(es) for c in compared for es in c.observed.values())
        outside = sum(len(es) for c in compared for es in c.outside.values())
        rows.append((op, len(compared), sum(c.verdict == "agree" for c in compared),
                     sum(c.verdict == "differs" for c in compared), pred, obs, outside,
                     f"{sum(c.predicted_bytes() for c in compared):,}"))
    lines += ["", markdown_table(("op", "cases compared", "agree", "differs", "reshards predicted",
                                  "reshards observed (in the op)", "reshards outside the op",
                                  "predicted bytes per rank (all cases)"), rows), "",
              PIR_LIMITS if pir else COMM_LIMITS]
    diffs: dict[str, list[str]] = {}
    for v in report.verdicts:
        check = getattr(v, route)
        for d in check.differences if check else ():
            key = ("explained: " if d.explained else "NOT EXPECTED: ") + _generalise(
                re.sub(r"\[[-\d, ]*\]", "[..]", d.describe()))  # shapes and mappings blurred: one line a kind
            diffs.setdefault(key, []).append(v.case.case_id)
    if diffs:
        lines += [f"### {'PIR route' if pir else 'Communication'} differences, grouped", ""]
        for key, ids in sorted(diffs.items()):
            shown = ", ".join(ids[:12]) + (f" ... ({len(ids)} in all)" if len(ids) > 12 else "")
            lines.append(f"- {key}: {shown}")
        lines.append("")
    return lines


def _op_figures(report: Report, op: str) -> tuple[str, int, int, str, str]:
    """One row of the per-op figures: tensor placements compared (and equal to the prediction),
    the largest relative error where the port predicts right values, and where it predicts wrong ones."""
    placed = equal = 0
    held: list[float] = []
    unsound: list[float] = []
    for v in report.verdicts:
        if v.case.op != op:
            continue
        risky = dict(v.prediction.numeric_risks)
        for c in v.tensors:
            if c.placement_ok is not None:
                placed += 1
                equal += c.placement_ok
            if c.rel_err is not None:
                (unsound if c.name in risky else held).append(c.rel_err)
    return (op, placed, equal, f"{max(held):.1e}" if held else "-", f"{max(unsound):.2g}" if unsound else "-")


def _generalise(text: str) -> str:
    """A reason with case-specific numbers blurred, to group similar cases."""
    text = re.sub(r"rel error [0-9.e+-]+", "rel error X", text)
    text = re.sub(r"\[\d+\]", "[n]", text)
    text = re.sub(r"axis \d+", "axis k", text)
    text = re.sub(r"to \d+ local", "to n local", text)
    text = re.sub(r"with \d+ entries", "with m entries", text)
    text = re.sub(r"placed \[[^\]]*\]", "placed [..]", text)
    return text[:220]
