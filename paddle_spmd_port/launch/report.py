"""Compare what the ranks did with what the port predicted; write the report (markdown, JSON, HTML).

Per case, one verdict::

    agree              every observable placement and local shape equals the prediction and
                       every value matches one device within the tolerance
    placement differs  a placement or local shape differs, the ranks disagree, or the port
                       predicted an error and Paddle ran (or the other way round for a rule error)
    numerics differ    placements as predicted, but a gathered value is off by more than the tolerance
    Paddle error       Paddle raised in the case (forward or backward)
    skipped            the case did not run (mesh needs another world size, the launch died first,
                       the port predicts its forward to crash the ranks, or the run was
                       interrupted: "not run: interrupted by SIGINT")

``expected`` says whether the port accounts for the outcome: the same rule error (type and
message), a kernel error whose message carries the local shapes the port's placements imply, a
numeric error on a tensor the port's placements say cannot hold the right values, or a stage not
run because the port predicts a native crash (confirmed by a crash probe when one was run).

Numerics: ``rel = max|dist - ref| / max|ref|`` over the gathered tensor (max-norm relative error;
``max|dist - ref|`` when the reference is all zeros). A tensor agrees when ``rel <= rtol``;
default ``rtol = 1e-5`` (float32: a Partial sum reduced in another order differs from one device
by rounding; the errors seen are in docs/measurements/2026-12-01-launch-notes.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..ops.kit.launch import each_op
from ..outcome import normalize_message
from ..reporting import markdown_table, write_atomic, write_json
from .cases import LaunchCase
from .predict import NOT_RULE_PLACED, UNEVEN_COSHARD, Prediction, StagePrediction, predict

VERDICTS = ("agree", "placement differs", "numerics differ", "Paddle error", "skipped")
DEFAULT_RTOL = 1e-5


@dataclass(frozen=True)
class TensorCheck:
    name: str
    predicted: tuple[str, ...] | None
    observed: tuple[str, ...] | None
    predicted_local: tuple[int, ...] | None
    observed_local: tuple[int, ...] | None
    rel_err: float | None
    placement_ok: bool | None
    """None: placement not compared (not observable or not predicted)."""
    numerics_ok: bool | None
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "predicted": _opt_list(self.predicted), "observed": _opt_list(self.observed),
                "predicted_local_shape": _opt_list(self.predicted_local),
                "observed_local_shape": _opt_list(self.observed_local), "rel_err": self.rel_err,
                "placement_ok": self.placement_ok, "numerics_ok": self.numerics_ok, "note": self.note}


def _opt_list(value: Sequence[Any] | None) -> list[Any] | None:
    return None if value is None else list(value)


@dataclass(frozen=True)
class CaseVerdict:
    case: LaunchCase
    prediction: Prediction
    verdict: str
    expected: bool
    reasons: tuple[str, ...]
    tensors: tuple[TensorCheck, ...] = ()
    error: dict[str, Any] | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        pred = self.prediction
        return {
            "case_id": self.case.case_id, "describe": self.case.describe(), "case": self.case.to_json(),
            "verdict": self.verdict, "expected": self.expected, "reasons": list(self.reasons),
            "notes": list(self.notes), "error": self.error, "seconds": self.seconds,
            "prediction": {"forward": pred.forward.describe(),
                           "backward": None if pred.backward is None else pred.backward.describe(),
                           "numeric_risks": [list(r) for r in pred.numeric_risks]},
            "tensors": [t.to_json() for t in self.tensors],
        }


def _error_matches(stage_pred: StagePrediction, error: dict[str, Any]) -> tuple[bool, str]:
    message = error.get("message", "")
    if stage_pred.rule_error is not None:
        want = stage_pred.rule_error
        got = normalize_message(message)
        if error.get("type") == want.family and got == want.message:
            return True, f"rule error as predicted: {want.message}"
        return False, f"port predicted {want.family}: {want.message}; Paddle raised {error.get('type')}: {got}"
    if stage_pred.kernel_error:
        if all(fragment in message for fragment in stage_pred.kernel_error):
            return True, f"kernel error as predicted ({stage_pred.kernel_reason})"
        return False, (f"port predicted a kernel error containing {list(stage_pred.kernel_error)}; Paddle raised "
                       f"{error.get('type')}: {normalize_message(message)[:300]}")
    return False, f"unexpected {error.get('type')}: {normalize_message(message)[:300]}"


def _rel(entry: dict[str, Any]) -> float | None:
    if "max_abs_err" not in entry:
        return None
    ref = entry.get("ref_max_abs") or 0.0
    return entry["max_abs_err"] / ref if ref > 0 else entry["max_abs_err"]


def _check_tensors(pred: Prediction, by_rank: dict[int, dict[str, Any]], rtol: float) -> list[TensorCheck]:
    first = by_rank[min(by_rank)]
    checks = []
    for name in first["tensors"]:
        entries = [rec["tensors"][name] for rec in by_rank.values() if name in rec["tensors"]]
        entry = first["tensors"][name]
        expect = pred.expectation(name)
        present, ref_present = bool(entry.get("present")), bool(entry.get("ref_present"))
        observed = tuple(entry["placements"]) if present else None
        observed_local = tuple(entry["local_shape"]) if present else None
        notes: list[str] = []
        placement_ok: bool | None = None
        numerics_ok: bool | None = None
        rel: float | None = None
        if name in NOT_RULE_PLACED:
            notes.append(f"placement not compared: {NOT_RULE_PLACED[name]}")
        elif expect is not None and present:
            seen = {tuple(e["placements"]) for e in entries}
            local_ok = all(tuple(rec["tensors"][name]["local_shape"]) == expect.local_shape_on(rank)
                           for rank, rec in by_rank.items() if name in rec["tensors"])  # uneven: per rank
            placement_ok = seen == {expect.placements} and local_ok
            if len(seen) > 1:
                notes.append(f"ranks disagree: {sorted(seen)}")
        if present and ref_present:
            rels = [v for v in (_rel(e) for e in entries) if v is not None]
            rel = max(rels) if rels else None
            numerics_ok = None if rel is None else rel <= rtol
            if any(e.get("shape_ok") is False for e in entries):
                numerics_ok = False
                notes.append("gathered shape differs from the reference")
        elif present:
            notes.append("no single-device value to compare with")
        elif ref_present:
            numerics_ok = False
            notes.append("missing in the distributed run, present on one device")
        else:
            notes.append("absent in eager, also on one device")
        checks.append(TensorCheck(name, None if expect is None else expect.placements, observed,
                                  None if expect is None else expect.local_shape, observed_local, rel,
                                  placement_ok, numerics_ok, "; ".join(notes)))
    return checks


def verdict_for_case(case: LaunchCase, by_rank: dict[int, dict[str, Any]], ranks: Sequence[int], rtol: float,
                     probes: dict[str, dict[str, Any]] | None = None, interrupted: str | None = None) -> CaseVerdict:
    """The verdict for one case from every rank's record. ``interrupted`` (a signal name): the run
    was interrupted, and a case some rank did not finish is marked not run for that reason."""
    pred = predict(case)
    missing = [r for r in ranks if r not in by_rank]
    if missing or not by_rank:  # (no rank known at all: a multi-node launch that failed before any rank wrote)
        ranks_text = f"ranks {missing}" if missing else "any rank"
        why = (f"not run: interrupted by {interrupted} (no result from {ranks_text})" if interrupted
               else f"no result from {ranks_text} (launch ended first)")
        return CaseVerdict(case, pred, "skipped", False, (why,))
    first = by_rank[min(by_rank)]
    seconds = max(rec.get("seconds", 0.0) for rec in by_rank.values())
    skipped = first.get("skipped")
    if skipped and skipped.get("stage") == "setup":
        return CaseVerdict(case, pred, "skipped", True, (skipped["reason"],), seconds=seconds)
    reasons: list[str] = []
    notes: list[str] = []
    errors = {r: rec.get("error") for r, rec in by_rank.items()}
    kinds = {(e or {}).get("stage", "") + "|" + (e or {}).get("type", "") for e in errors.values()}
    if len(kinds) > 1:
        outcome = {r: (e or {}).get("type") for r, e in errors.items()}
        return CaseVerdict(case, pred, "placement differs", False, (f"ranks disagree on the outcome: {outcome}",),
                           seconds=seconds)
    error = first.get("error")
    ref_stage = first.get("stages", {}).get("reference", "")
    if ref_stage.startswith("error"):
        notes.append(f"single-device reference failed too: {normalize_message(ref_stage[7:])[:200]}")

    # forward
    fwd = pred.forward
    if skipped and skipped.get("stage") == "forward":  # the runner never runs a forward the port says crashes
        key = forward_crash_key(pred)
        probe = (probes or {}).get(key) if key else None
        if probe is not None:
            notes.append(f"probe {probe['case_id']}: {probe['summary']}")
            if not probe["confirmed"]:
                reasons.append(f"the port predicts a native crash in the forward, but the probe did not crash: "
                               f"{probe['summary']}")
        return CaseVerdict(case, pred, "skipped", fwd.crash is not None and not reasons,
                           (f"forward not run: {skipped['reason']}", *reasons), notes=tuple(notes), seconds=seconds)
    if error and error.get("stage") in ("forward", "runner"):
        if error.get("stage") == "runner":
            return CaseVerdict(case, pred, "Paddle error", False, (f"runner error: {error.get('message')}",),
                               error=error, seconds=seconds)
        ok, why = _error_matches(fwd, error)
        return CaseVerdict(case, pred, "Paddle error", ok, (why,), error=error, notes=tuple(notes), seconds=seconds)
    if not fwd.runs and fwd.crash is None:
        reasons.append(f"port predicted the forward to fail ({fwd.describe()}); Paddle ran it")

    # backward
    bwd = pred.backward
    if skipped and skipped.get("stage") == "backward":
        key = crash_key(pred)
        probe = (probes or {}).get(key) if key else None
        text = "backward not run: port predicts a native crash"
        if probe is not None:
            text += f" (probe {probe['case_id']}: {probe['summary']})"
            if not probe["confirmed"]:
                reasons.append(f"the port predicts a native crash in the backward, but the probe did not crash: "
                               f"{probe['summary']}")
        notes.append(text)
    elif error and error.get("stage") == "backward":
        ok, why = _error_matches(bwd, error) if bwd is not None else (False, f"unexpected {error.get('type')}")
        checks = _check_tensors(pred, by_rank, rtol)
        risks = dict(pred.numeric_risks)
        for c in checks:  # what the forward gave is judged too: a backward error hides no forward difference
            if c.placement_ok is False:
                reasons.append(f"{c.name}: predicted {list(c.predicted or ())} local {list(c.predicted_local or ())}, "
                               f"observed {list(c.observed or ())} local {list(c.observed_local or ())}")
            elif c.numerics_ok is False:
                text = f"{c.name}: rel error {c.rel_err:.3g} > {rtol:g}" if c.rel_err is not None else c.name
                if c.name in risks:
                    notes.append(f"{text}; port: {risks[c.name]}")
                else:
                    reasons.append(text)
        return CaseVerdict(case, pred, "Paddle error", ok and not reasons, (*reasons, why), tuple(checks),
                           error=error, notes=tuple(notes), seconds=seconds)
    elif bwd is not None and not bwd.runs and case.backward and fwd.runs:
        reasons.append(f"port predicted the backward to fail ({bwd.describe()}); Paddle ran it")

    checks = _check_tensors(pred, by_rank, rtol)
    risks = dict(pred.numeric_risks)
    bad_place = [c for c in checks if c.placement_ok is False]
    bad_num = [c for c in checks if c.numerics_ok is False]
    for c in bad_place:
        reasons.append(f"{c.name}: predicted {list(c.predicted or ())} local {list(c.predicted_local or ())}, "
                       f"observed {list(c.observed or ())} local {list(c.observed_local or ())} {c.note}".strip())
    unexplained_num = [c for c in bad_num if c.name not in risks]
    for c in bad_num:
        why = f"; port: {risks[c.name]}" if c.name in risks else ""
        reasons.append(f"{c.name}: rel error {c.rel_err:.3g} > {rtol:g}{why}" if c.rel_err is not None
                       else f"{c.name}: {c.note}{why}")
    if reasons and (bad_place or any("predict" in r for r in reasons)):
        return CaseVerdict(case, pred, "placement differs", False, tuple(reasons), tuple(checks), notes=tuple(notes),
                           seconds=seconds)
    if bad_num:
        return CaseVerdict(case, pred, "numerics differ", not unexplained_num, tuple(reasons), tuple(checks),
                           notes=tuple(notes), seconds=seconds)
    return CaseVerdict(case, pred, "agree", True, tuple(reasons), tuple(checks), notes=tuple(notes), seconds=seconds)


def forward_crash_key(prediction: Prediction) -> str | None:
    """The error kind of a forward crash a probe can reproduce alone (the rule rejects the input),
    else None. An uneven co-shard's abort (:data:`UNEVEN_COSHARD`) needs the real ranks' reshard."""
    crash = prediction.forward.crash
    if crash is None or crash.startswith(UNEVEN_COSHARD):
        return None
    return crash.split(": ", 1)[0]


def crash_key(prediction: Prediction) -> str | None:
    """Groups cases the port says crash for the same reason (the error kind): the forward's when
    :func:`forward_crash_key` names one, else the backward's."""
    key = forward_crash_key(prediction)
    if key is not None:
        return key
    bwd = prediction.backward
    if bwd is None or bwd.crash is None:
        return None
    return bwd.crash.split(": ", 1)[0]


@dataclass(frozen=True)
class Report:
    verdicts: tuple[CaseVerdict, ...]
    meta: dict[str, Any]

    def counts(self) -> Counter:
        return Counter(v.verdict for v in self.verdicts)

    def counts_expected(self) -> Counter:
        return Counter((v.verdict, v.expected) for v in self.verdicts)

    @property
    def unexpected(self) -> list[CaseVerdict]:
        return [v for v in self.verdicts if not v.expected]

    def to_json(self) -> dict[str, Any]:
        return {"meta": self.meta,
                "counts": dict(self.counts()),
                "counts_expected": [{"verdict": k[0], "expected": k[1], "cases": n}
                                    for k, n in sorted(self.counts_expected().items())],
                "cases": [v.to_json() for v in self.verdicts]}

    def markdown(self) -> str:
        return render_markdown(self)

    def write(self, directory: Path, stem: str) -> tuple[Path, Path]:
        """``<stem>.md``, ``<stem>.json`` and ``<stem>.html`` (:mod:`.pages`) in ``directory``, each
        written atomically; the paths of the first two."""
        from .pages import launch_page

        directory.mkdir(parents=True, exist_ok=True)
        md = write_atomic(directory / f"{stem}.md", self.markdown())
        js = write_json(directory / f"{stem}.json", self.to_json())
        write_atomic(directory / f"{stem}.html", launch_page(self))
        return md, js


def build_report(cases: Sequence[LaunchCase], records: dict[str, dict[int, dict[str, Any]]], ranks: Sequence[int],
                 meta: dict[str, Any], rtol: float = DEFAULT_RTOL,
                 probes: dict[str, dict[str, Any]] | None = None, interrupted: str | None = None) -> Report:
    """``interrupted`` (a signal name) makes a partial report: it says so in its first line and in
    ``meta["interrupted"]``, and every case not finished on every rank is marked not run."""
    verdicts = tuple(verdict_for_case(case, records.get(case.case_id, {}), ranks, rtol, probes, interrupted)
                     for case in cases)
    meta = dict(meta, rtol=rtol)
    if interrupted:
        meta["interrupted"] = interrupted
    return Report(verdicts, meta)


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
                     f"{max(rels):.1e}" if rels else "-"))
    lines += ["## All cases", "", markdown_table(
        ("case", "call", "verdict", "out pred/obs", "weight_grad pred/obs", "max rel err"), rows)]
    return "\n".join(lines) + "\n"


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
    import re

    text = re.sub(r"rel error [0-9.e+-]+", "rel error X", text)
    text = re.sub(r"\[\d+\]", "[n]", text)
    text = re.sub(r"axis \d+", "axis k", text)
    text = re.sub(r"to \d+ local", "to n local", text)
    text = re.sub(r"with \d+ entries", "with m entries", text)
    text = re.sub(r"placed \[[^\]]*\]", "placed [..]", text)
    return text[:220]
