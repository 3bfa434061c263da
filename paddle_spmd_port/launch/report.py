"""Compare what the ranks did with what the port predicted: a verdict per case, and the report
they make (data only: :mod:`.output` writes it as markdown, JSON and HTML).

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

Beside it, two communication verdicts (:mod:`.comm`): ``comm``, the reshards the ranks ran in
eager mode, and ``pir``, the reshard and collective ops of the case's forward through the PIR
passes; each ``agree``, ``differs`` or ``not compared``, with its own ``expected``. A case is a
finding (exit 1) when the port accounts for neither its outcome nor a communication difference
(:attr:`CaseVerdict.finding`).

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

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..outcome import normalize_message
from .cases import LaunchCase
from .comm import CommCheck, compare, compare_pir, predict_comm
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
    comm: CommCheck | None = None
    """The communication verdict (:mod:`.comm`): the reshards Paddle ran against the port's."""
    pir: CommCheck | None = None
    """The PIR route's verdict (:func:`.comm.compare_pir`); None when the route was not run."""

    @property
    def accounted(self) -> bool:
        """The port accounts for the outcome, the communication and the PIR route's reshards."""
        return self.expected and all(c is None or c.expected for c in (self.comm, self.pir))

    @property
    def finding(self) -> bool:
        """An outcome, or a communication, the port does not account for (exit 1)."""
        return ((not self.expected and self.verdict != "skipped")
                or any(c is not None and c.verdict == "differs" and not c.expected for c in (self.comm, self.pir)))

    @property
    def unrun(self) -> bool:
        """Not run where the port expects it to run, or not reached by the PIR route (exit 3)."""
        return ((not self.expected and self.verdict == "skipped")
                or any(c is not None and c.verdict == "not compared" and not c.expected for c in (self.comm, self.pir)))

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
            "comm": None if self.comm is None else self.comm.to_json(),
            "pir": None if self.pir is None else self.pir.to_json(),
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


@dataclass
class _Judging:
    """What one case's judgement has gathered so far: every step below may end it (returning the
    verdict) or add a reason (the outcome is not what the port predicted) or a note."""
    case: LaunchCase
    pred: Prediction
    seconds: float
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def verdict(self, verdict: str, expected: bool, reasons: Sequence[str] | None = None,
                tensors: Sequence[TensorCheck] = (), error: dict[str, Any] | None = None) -> CaseVerdict:
        return CaseVerdict(self.case, self.pred, verdict, expected,
                           tuple(self.reasons if reasons is None else reasons), tuple(tensors), error=error,
                           notes=tuple(self.notes), seconds=self.seconds)


def verdict_for_case(case: LaunchCase, by_rank: dict[int, dict[str, Any]], ranks: Sequence[int], rtol: float,
                     probes: dict[str, dict[str, Any]] | None = None, interrupted: str | None = None,
                     comm_logging: bool = True, pir: dict[str, Any] | None = None,
                     pir_ran: bool = False) -> CaseVerdict:
    """The verdict for one case from every rank's record, with its communication verdict
    (:func:`.comm.compare`; ``comm_logging``: every rank saw its reshard log lines) and, when the
    PIR route ran (``pir_ran``), its verdict from the case's PIR record ``pir``."""
    verdict = _verdict_for_case(case, by_rank, ranks, rtol, probes, interrupted)
    pred = verdict.prediction
    stages = {"forward": pred.forward.result}
    if pred.backward is not None:
        stages["backward"] = pred.backward.result
    predicted = predict_comm(case, stages)
    if pir_ran:
        verdict = dataclasses.replace(verdict, pir=compare_pir(case, predicted.get("forward"), pir,
                                                               pred.forward.runs))
    if not by_rank or any(r not in by_rank for r in ranks):
        return verdict
    return dataclasses.replace(verdict, comm=compare(case, predicted, by_rank, comm_logging))


def _verdict_for_case(case: LaunchCase, by_rank: dict[int, dict[str, Any]], ranks: Sequence[int], rtol: float,
                      probes: dict[str, dict[str, Any]] | None = None, interrupted: str | None = None) -> CaseVerdict:
    """The verdict for one case from every rank's record. ``interrupted`` (a signal name): the run
    was interrupted, and a case some rank did not finish is marked not run for that reason.

    In order: did every rank report; did the ranks agree on the outcome; the forward stage (not
    run, or an error); the backward stage; then the tensors' placements, local shapes and values."""
    pred = predict(case)
    missing = [r for r in ranks if r not in by_rank]
    if missing or not by_rank:  # (no rank known at all: a multi-node launch that failed before any rank wrote)
        ranks_text = f"ranks {missing}" if missing else "any rank"
        why = (f"not run: interrupted by {interrupted} (no result from {ranks_text})" if interrupted
               else f"no result from {ranks_text} (launch ended first)")
        return CaseVerdict(case, pred, "skipped", False, (why,))
    first = by_rank[min(by_rank)]
    j = _Judging(case, pred, max(rec.get("seconds", 0.0) for rec in by_rank.values()))
    skipped = first.get("skipped")
    if skipped and skipped.get("stage") == "setup":
        return j.verdict("skipped", True, (skipped["reason"],))
    errors = {r: rec.get("error") for r, rec in by_rank.items()}
    if len({(e or {}).get("stage", "") + "|" + (e or {}).get("type", "") for e in errors.values()}) > 1:
        outcome = {r: (e or {}).get("type") for r, e in errors.items()}
        return j.verdict("placement differs", False, (f"ranks disagree on the outcome: {outcome}",))
    ref_stage = first.get("stages", {}).get("reference", "")
    if ref_stage.startswith("error"):
        j.notes.append(f"single-device reference failed too: {normalize_message(ref_stage[7:])[:200]}")
    return (_judge_forward(j, first, probes) or _judge_backward(j, first, by_rank, rtol, probes)
            or _judge_tensors(j, by_rank, rtol))


def _probe_disagrees(j: _Judging, key: str | None, probes: dict[str, dict[str, Any]] | None, stage: str) -> str:
    """The crash probe's summary for ``key`` (empty: none was run); a probe that did not crash
    where the port predicts a crash is a reason."""
    probe = (probes or {}).get(key) if key else None
    if probe is None:
        return ""
    if not probe["confirmed"]:
        j.reasons.append(f"the port predicts a native crash in the {stage}, but the probe did not crash: "
                         f"{probe['summary']}")
    return f"probe {probe['case_id']}: {probe['summary']}"


def _judge_forward(j: _Judging, first: dict[str, Any], probes: dict[str, dict[str, Any]] | None) -> CaseVerdict | None:
    """A verdict when the forward did not run or raised; else None (a reason added when the port
    predicted the forward to fail and it ran)."""
    fwd, skipped, error = j.pred.forward, first.get("skipped"), first.get("error")
    if skipped and skipped.get("stage") == "forward":  # the runner never runs a forward the port says crashes
        probe = _probe_disagrees(j, forward_crash_key(j.pred), probes, "forward")
        if probe:
            j.notes.append(probe)
        return j.verdict("skipped", fwd.crash is not None and not j.reasons,
                         (f"forward not run: {skipped['reason']}", *j.reasons))
    if error and error.get("stage") == "runner":  # (only Paddle's: an exception of ours ends the run, exit 4)
        return j.verdict("Paddle error", False, (f"Paddle raised outside the op's stages, in "
                                                 f"{error.get('call') or 'a Paddle call'}: {error.get('message')}",),
                         error=error)
    if error and error.get("stage") == "forward":
        ok, why = _error_matches(fwd, error)
        return j.verdict("Paddle error", ok, (why,), error=error)
    if not fwd.runs and fwd.crash is None:
        j.reasons.append(f"port predicted the forward to fail ({fwd.describe()}); Paddle ran it")
    return None


def _judge_backward(j: _Judging, first: dict[str, Any], by_rank: dict[int, dict[str, Any]], rtol: float,
                    probes: dict[str, dict[str, Any]] | None) -> CaseVerdict | None:
    """A verdict when the backward raised (what the forward gave is judged too: a backward error
    hides no forward difference); else None, with a note or a reason added."""
    bwd, skipped, error = j.pred.backward, first.get("skipped"), first.get("error")
    if skipped and skipped.get("stage") == "backward":
        probe = _probe_disagrees(j, crash_key(j.pred), probes, "backward")
        j.notes.append("backward not run: port predicts a native crash" + (f" ({probe})" if probe else ""))
        return None
    if error and error.get("stage") == "backward":
        ok, why = _error_matches(bwd, error) if bwd is not None else (False, f"unexpected {error.get('type')}")
        checks = _check_tensors(j.pred, by_rank, rtol)
        risks = dict(j.pred.numeric_risks)
        for c in checks:
            if c.placement_ok is False:
                j.reasons.append(_placement_text(c))
            elif c.numerics_ok is False:
                text = f"{c.name}: rel error {c.rel_err:.3g} > {rtol:g}" if c.rel_err is not None else c.name
                if c.name in risks:
                    j.notes.append(f"{text}; port: {risks[c.name]}")
                else:
                    j.reasons.append(text)
        return j.verdict("Paddle error", ok and not j.reasons, (*j.reasons, why), checks, error=error)
    if bwd is not None and not bwd.runs and j.case.backward and j.pred.forward.runs:
        j.reasons.append(f"port predicted the backward to fail ({bwd.describe()}); Paddle ran it")
    return None


def _placement_text(c: TensorCheck) -> str:
    return (f"{c.name}: predicted {list(c.predicted or ())} local {list(c.predicted_local or ())}, "
            f"observed {list(c.observed or ())} local {list(c.observed_local or ())}")


def _judge_tensors(j: _Judging, by_rank: dict[int, dict[str, Any]], rtol: float) -> CaseVerdict:
    """Both stages ran as predicted: the verdict from every tensor's placement, local shape and value."""
    checks = _check_tensors(j.pred, by_rank, rtol)
    risks = dict(j.pred.numeric_risks)
    bad_place = [c for c in checks if c.placement_ok is False]
    bad_num = [c for c in checks if c.numerics_ok is False]
    for c in bad_place:
        j.reasons.append(f"{_placement_text(c)} {c.note}".strip())
    for c in bad_num:
        why = f"; port: {risks[c.name]}" if c.name in risks else ""
        j.reasons.append(f"{c.name}: rel error {c.rel_err:.3g} > {rtol:g}{why}" if c.rel_err is not None
                         else f"{c.name}: {c.note}{why}")
    if j.reasons and (bad_place or any("predict" in r for r in j.reasons)):
        return j.verdict("placement differs", False, tensors=checks)
    if bad_num:
        return j.verdict("numerics differ", all(c.name in risks for c in bad_num), tensors=checks)
    return j.verdict("agree", True, tensors=checks)


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

    def comm_counts(self, route: str = "comm") -> Counter:
        """(communication verdict, expected) -> cases, of the eager run (``comm``) or the PIR route
        (``pir``); a case without one is ``not compared``."""
        checks = [getattr(v, route) for v in self.verdicts]
        return Counter(("not compared", True) if c is None else (c.verdict, c.expected) for c in checks)

    @property
    def unexpected(self) -> list[CaseVerdict]:
        """The cases whose outcome or communication the port does not account for."""
        return [v for v in self.verdicts if not v.accounted]

    def to_json(self) -> dict[str, Any]:
        return {"meta": self.meta,
                "counts": dict(self.counts()),
                "counts_expected": [{"verdict": k[0], "expected": k[1], "cases": n}
                                    for k, n in sorted(self.counts_expected().items())],
                "cases": [v.to_json() for v in self.verdicts]}


def build_report(cases: Sequence[LaunchCase], records: dict[str, dict[int, dict[str, Any]]], ranks: Sequence[int],
                 meta: dict[str, Any], rtol: float = DEFAULT_RTOL,
                 probes: dict[str, dict[str, Any]] | None = None, interrupted: str | None = None,
                 comm_logging: bool = True, pir: dict[str, dict[str, Any]] | None = None) -> Report:
    """``interrupted`` (a signal name) makes a partial report: it says so in its first line and in
    ``meta["interrupted"]``, and every case not finished on every rank is marked not run.
    ``comm_logging`` False (a rank did not see its reshard log lines): no communication is
    compared, ``meta["comm_logging"]`` says so. ``pir``: case id -> the PIR route's record (None:
    the route was not run; a case missing from it was not reached)."""
    verdicts = tuple(verdict_for_case(case, records.get(case.case_id, {}), ranks, rtol, probes, interrupted,
                                      comm_logging, (pir or {}).get(case.case_id), pir is not None)
                     for case in cases)
    meta = dict(meta, rtol=rtol, comm_logging=comm_logging)
    if interrupted:
        meta["interrupted"] = interrupted
    return Report(verdicts, meta)
