"""Parity report: per-group tallies, per-rule coverage, and their renderings.

A run compares each rule with one or more native routes (backends). Two views of it:

* a **tally** per (rule, backend) group, keyed ``rule@backend`` everywhere (JSON, JUnit suite
  ``parity.rule@backend``, markdown headings): how many cases fell in each class;
* a **coverage** line per rule: a case is *compared* when at least one route's verdict is in
  :data:`~paddle_spmd_port.compare.COMPARED`; every other case is listed with the reason each
  route gave (``compiled: not run: ...; pir: unreachable: ...``) and counted by that reason.

Files, rewritten after every backend group (each write atomic), so an interrupted or failed run
still leaves a report whose first line says what it is (``INTERRUPTED by SIGTERM``, or ``INTERRUPTED
by an internal error (...)`` when a bug of ours ended the run: exit 4)::

    parity.md              status, coverage, the table, a few examples per class
    parity.json            the same as data (each group's verdict map included: ``map``)
    parity.html            the same as a page: a verdict map per group, records filterable by class
                           (parity/pages.py; the first HTML_RECORDS per class and group)
    parity-cases.jsonl.gz  every case that is not a match or a same-error, one JSON line each
    (--junit FILE)         JUnit XML: a suite per group, plus parity.coverage
"""

from __future__ import annotations

import gzip
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..case import Case
from ..compare import ANSWERED_CLASSES, CLASSES, COMPARED, REFUSAL_CLASSES, Comparison, answered_class, refusal_class
from ..ops.kit.strictness import DEFAULT_POLICY
from ..outcome import Outcome
from ..pages import map_key, map_label
from ..reporting import markdown_table
from ..types import CORE
from .repro import named_policy, repro_head

EXAMPLES_PER_CLASS = 5
MISMATCHES_KEPT = 200
HTML_RECORDS = 40
"""Per-case records kept per class and group for parity.html (mismatches: MISMATCHES_KEPT)."""
REASONS_SHOWN = 50
"""Distinct uncompared reasons printed per rule (every one is in parity.json)."""
CASES_FILE = "parity-cases.jsonl.gz"
_dumps = json.JSONEncoder(separators=(",", ":")).encode

#: Group states: a group that did not finish is marked in every rendering.
DONE, RUNNING, INTERRUPTED, NOT_STARTED = "done", "running", "interrupted", "not started"


def group_key(rule: str, backend: str) -> str:
    return f"{rule}@{backend}"


@dataclass
class GroupTally:
    rule: str
    backend: str
    state: str = NOT_STARTED
    cases: int = 0
    cells: int = 0
    matching_cells: int = 0
    verdicts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLASSES, 0))
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    native_seconds: float = 0.0
    port_seconds: float = 0.0
    invalid_native: dict[str, int] = field(default_factory=dict)
    """For port-rejects-invalid cases: what Paddle did instead (result = garbage accepted, crash, error)."""
    cells_map: dict[tuple, dict[str, int]] = field(default_factory=dict)
    """The verdict map: :func:`map_key` of each case -> its cases per verdict (labelled by :meth:`verdict_map`)."""
    merged_map: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    """The verdict map already labelled: the parts a merged report joins (parity --merge), and the
    rounds of a random run :meth:`fold_map` folded (labels are bounded by the meshes and placements
    there are; the raw keys are not, so a long run would otherwise grow with N)."""
    shown: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """parity.html's records: the first :data:`HTML_RECORDS` per verdict (in memory only)."""
    refusals: dict[str, int] = field(default_factory=dict)
    """For port-rejects-invalid cases: their :data:`~paddle_spmd_port.compare.REFUSAL_CLASSES` member."""
    not_rechecked: int = 0
    """Cases answered once whose promised re-run gave no answer (:attr:`Outcome.not_rechecked`)."""
    answered: dict[str, int] = field(default_factory=dict)
    """For port-rejects-invalid cases Paddle's rule answered: their
    :data:`~paddle_spmd_port.compare.ANSWERED_CLASSES` member (undefined, or not mirrored: the gap)."""

    @property
    def key(self) -> str:
        return group_key(self.rule, self.backend)

    def count(self, native: Outcome, cmp: Comparison, case: Case | None = None) -> bool:
        """Count one case in the totals (and in the verdict map, given the case); True when it
        needs a per-case record (not a plain agreement)."""
        verdict = cmp.verdict
        self.cases += 1
        if case is not None:
            key = map_key(case)
            cell = self.cells_map.get(key)
            if cell is None:
                cell = self.cells_map[key] = {}
            cell[verdict] = cell.get(verdict, 0) + 1
        self.cells += cmp.cells
        self.matching_cells += cmp.matching_cells
        self.verdicts[verdict] += 1
        if native.not_rechecked is not None:  # (a per-case record names it, whatever the verdict)
            self.not_rechecked += 1
            return True
        if verdict == "match" or verdict == "both-raise-same":
            return False
        if verdict == "port-rejects-invalid":
            self.invalid_native[native.status] = self.invalid_native.get(native.status, 0) + 1
        return True

    def record(self, case: Case, port: Outcome, native: Outcome, cmp: Comparison, case_text: str,
               policy: str = DEFAULT_POLICY) -> dict[str, Any]:
        """A case's per-case record without its ``case`` field (the last one; ``case_text`` is its JSON).
        The port answered under ``policy``: a record of another than the default names it (``policy``,
        which ``infer --case-json`` given the record then runs under) and so does its repro line."""
        named = named_policy(policy)
        return {"rule": self.rule, "backend": self.backend, "verdict": cmp.verdict, "id": case.case_id,
                "describe": case.describe(), "port": str(port), "native": str(native),
                "diffs": [str(d) for d in cmp.diffs], "note": cmp.note,
                **({"raw": native.raw} if native.undecodable is not None else {}),
                **({"policy": named} if named else {}),
                "repro": repro_head(self.backend, policy) + case_text + "'"}

    def wants(self, verdict: str) -> bool:
        """Whether a record of this verdict is still kept as an example."""
        kept = self.examples.get(verdict)
        return kept is None or len(kept) < (MISMATCHES_KEPT if verdict == "mismatch" else EXAMPLES_PER_CLASS)

    def keep(self, record: dict[str, Any]) -> None:
        """Keep ``record`` (with its ``case``) among the examples (:meth:`wants` said its class has room)."""
        self.examples.setdefault(record["verdict"], []).append(record)

    def show(self, record: dict[str, Any], case: Case) -> None:
        """Keep ``record`` (without its case) for parity.html while its class has room."""
        kept = self.shown.setdefault(record["verdict"], [])
        if len(kept) < (MISMATCHES_KEPT if record["verdict"] == "mismatch" else HTML_RECORDS):
            kept.append({**record, "cell": map_label(map_key(case))})

    def fold_map(self) -> None:
        """Move :attr:`cells_map` into :attr:`merged_map` under its labels (the map is the same)."""
        for key, counts in self.cells_map.items():
            into = self.merged_map.setdefault(map_label(key), {})
            for verdict, n in counts.items():
                into[verdict] = into.get(verdict, 0) + n
        self.cells_map.clear()

    def verdict_map(self) -> dict[tuple[str, str], dict[str, int]]:
        """(mesh, first input's placement) -> cases per verdict."""
        out: dict[tuple[str, str], dict[str, int]] = {cell: dict(counts) for cell, counts in self.merged_map.items()}
        for key, counts in self.cells_map.items():
            into = out.setdefault(map_label(key), {})
            for verdict, n in counts.items():
                into[verdict] = into.get(verdict, 0) + n
        return out

    @property
    def mismatches(self) -> int:
        return self.verdicts["mismatch"]

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "backend": self.backend, "state": self.state, "cases": self.cases,
                "cells": self.cells, "matching_cells": self.matching_cells, "verdicts": self.verdicts,
                "examples": self.examples, "invalid_native": self.invalid_native, "refusals": self.refusals,
                "not_rechecked": self.not_rechecked,
                "answered": self.answered,
                "map": [[mesh, placement, counts] for (mesh, placement), counts in self.verdict_map().items()],
                "native_seconds": round(self.native_seconds, 3), "port_seconds": round(self.port_seconds, 3)}


def _reason(backend: str, native: Outcome, verdict: str) -> str:
    if verdict == "not-run":
        text = f"not run: {native.not_run}"
    elif verdict == "undecodable":
        text = f"native answer undecodable: {native.undecodable}"
    elif verdict == "unreachable":
        text = f"unreachable: {native.unreachable}"
    else:
        text = str(native)
    return f"{backend}: {' '.join(text.split())[:240]}"


#: The verdict of a route that says this release lacks the rule or what the case needs, as the
#: release's profile declares (compare.py): never compared, and counted apart from the uncompared cases.
LACKS = "release-lacks"
#: The verdict of a route that cannot express the case at all (see :class:`RuleCoverage`).
UNREACHABLE = "unreachable"
#: A case's flags in :attr:`RuleCoverage.flags`: some route compared it; said the release lacks it; gave
#: another reason (neither ``release-lacks`` nor ``unreachable``).
_COMPARED, _LACKS, _OTHER = 1, 2, 4
_COMPARED_BIT = bytes(int(bool(b & _COMPARED)) for b in range(256))


@dataclass
class RuleCoverage:
    """Which of a rule's selected cases some native route compared, which ones the release lacks, and
    why the others were not compared.

    A case is *lacking* (:attr:`lacking`) when no route compared it, some route said
    ``release-lacks`` (the profile declares that this Paddle release does not have the rule, or what
    the case needs, on that route) and every other route that tried could not express the case at
    all (``unreachable``: a co-shard PIR cannot hold, an op PIR cannot build). So the route the
    release lacks was the only one that could have compared it: 3.0.0 has no compiled caller, and
    the cases only it reaches in 3.3.1 are lacking there, not a failure. Such a case is not compared
    and not *uncompared* either: it does not fail the run closed, and the report counts it apart,
    with every route's reason. One route that could not answer for another reason (not run, a
    crash, an undecodable reply) makes it uncompared, as does unreachable on every route.

    Held per case only where a case's routes must be joined (more than one route): a byte of flags
    and its reasons. A rule compared through one route (random mode, ``--backend``) or rebuilt from
    counts (:meth:`counted`, parity --merge) keeps counts only, so its memory does not grow with
    the number of cases."""

    rule: str
    selected: int
    cells_per_case: int
    routes: list[str] = field(default_factory=list)
    flags: bytearray | None = None
    """Per case (more than one route), :data:`_COMPARED` | :data:`_LACKS` | :data:`_OTHER`; None: counted."""
    why: dict[int, list[str]] = field(default_factory=dict)
    """Per case (more than one route): each route's reason for not comparing it."""
    n_compared: int = 0
    lacks_counts: Counter[str] = field(default_factory=Counter)
    """Counted: the lacking cases per reason."""
    other_counts: Counter[str] = field(default_factory=Counter)
    """Counted: the uncompared cases per reason."""
    _next: int = 0
    """Counted: the position after the last case recorded (a case tallied again is not counted again)."""

    def _per_case(self) -> bytearray | None:
        if self.flags is None and len(self.routes) > 1:
            self.flags = bytearray(self.selected)
        return self.flags

    def record(self, index: int, backend: str, native: Outcome, verdict: str, note: str = "") -> None:
        flags = self._per_case()
        if flags is None:  # one route: each case is recorded once, in order
            if index < self._next:
                return
            self._next = index + 1
            if verdict in COMPARED:
                self.n_compared += 1
            elif verdict == LACKS:
                self.lacks_counts[f"{backend}: {note.partition(':')[0]}"] += 1
            else:
                self.other_counts[_reason(backend, native, verdict)] += 1
            return
        if verdict in COMPARED:
            flags[index] |= _COMPARED
        elif not flags[index] & _COMPARED:  # (a compared case's reasons are never read)
            if verdict == LACKS:  # the note's head names the profile's difference ("X lacks it (name): why")
                flags[index] |= _LACKS
                self.why.setdefault(index, []).append(f"{backend}: {note.partition(':')[0]}")
            else:
                if verdict != UNREACHABLE:
                    flags[index] |= _OTHER
                self.why.setdefault(index, []).append(_reason(backend, native, verdict))

    @classmethod
    def counted(cls, rule: str, selected: int, cells_per_case: int, routes: list[str], compared: int,
                reasons: dict[str, int], lacking: dict[str, int] | None = None) -> RuleCoverage:
        """A rule's coverage from counts: ``compared`` cases, those the release lacks per reason, the
        uncompared ones per reason (parity --merge: as each part's report gave them)."""
        cov = cls(rule, selected, cells_per_case, list(routes))
        cov.flags = None
        cov.routes = list(routes)
        cov.n_compared = compared
        cov.lacks_counts = Counter(lacking or {})
        cov.other_counts = Counter(reasons)
        cov._next = selected
        return cov

    def _lacks(self, i: int) -> bool:
        return self.flags is not None and self.flags[i] & (_COMPARED | _LACKS | _OTHER) == _LACKS

    @property
    def compared(self) -> int:
        if self.flags is None:
            return self.n_compared
        return self.flags.translate(_COMPARED_BIT).count(1)

    @property
    def lacking(self) -> int:
        """Cases no route compared because the release lacks what they need (its profile says so)."""
        if self.flags is None:
            return sum(self.lacks_counts.values())
        return sum(1 for i in self.why if self._lacks(i))

    @property
    def uncompared(self) -> int:
        return self.selected - self.compared - self.lacking

    @property
    def cells_compared(self) -> int:
        return self.compared * self.cells_per_case

    def reasons(self, interrupted: str = "") -> Counter[str]:
        """Each uncompared case's reasons (one per route that tried), counted (lacking cases apart:
        :meth:`lacking_reasons`)."""
        counts: Counter[str] = Counter()
        if self.flags is None:
            counts.update(self.other_counts)
            unrecorded = self.selected - self.n_compared - sum(self.lacks_counts.values()) - sum(counts.values())
            if unrecorded > 0:
                counts[interrupted or "no route ran on it"] += unrecorded
            return counts
        for i, flag in enumerate(self.flags):
            if not flag & _COMPARED and not self._lacks(i):
                why = self.why.get(i)
                if why:
                    counts["; ".join(why)] += 1
                else:
                    counts[interrupted or "no route ran on it"] += 1
        return counts

    def lacking_reasons(self) -> Counter[str]:
        """Each lacking case's reasons (the profile's, one per route), counted."""
        if self.flags is None:
            return Counter(self.lacks_counts)
        return Counter("; ".join(self.why[i]) for i in self.why if self._lacks(i))

    def to_json(self, interrupted: str = "") -> dict[str, Any]:
        return {"selected": self.selected, "compared": self.compared, "uncompared": self.uncompared,
                "lacking": self.lacking, "cells_compared": self.cells_compared, "routes": self.routes,
                "uncompared_reasons": dict(self.reasons(interrupted).most_common()),
                "lacking_reasons": dict(self.lacking_reasons().most_common())}


@dataclass
class ParityReport:
    tallies: dict[str, GroupTally] = field(default_factory=dict)
    coverage: dict[str, RuleCoverage] = field(default_factory=dict)
    paddle: dict[str, str] = field(default_factory=dict)
    selection: dict[str, Any] = field(default_factory=dict)
    """What was asked for (rules, backend, sample, ...); ``full`` when it is the whole default sweep."""
    started: float = field(default_factory=time.time)
    finished: float | None = None
    complete: bool = False
    interrupted: str = ""
    """What ended the run early (runctl.signals.stopped_by): a signal's name (``SIGTERM``), or ``an internal
    error (KeyError: ...)`` when a bug of ours did (exit 4); the report is then partial all the same."""
    allow_uncompared: bool = False
    notes: list[str] = field(default_factory=list)
    profile: dict[str, Any] = field(default_factory=dict)
    """The Paddle release profile applied (releases.ReleaseProfile.to_json())."""
    _cases_fh: IO[str] | None = None

    @property
    def policy(self) -> str:
        """The strictness policy the port answered under: the selection's (a report without one: strict)."""
        return str(self.selection.get("policy") or DEFAULT_POLICY)

    # ------------------------------------------------------------------ counting
    def plan(self, rule: str, backend: str, selected: int, cells_per_case: int) -> GroupTally:
        """Announce a group before anything runs, so that an unfinished run still lists it."""
        cov = self.coverage.setdefault(rule, RuleCoverage(rule, selected, cells_per_case))
        cov.routes.append(backend)
        tally = self.tallies[group_key(rule, backend)] = GroupTally(rule, backend)
        return tally

    def add(self, tally: GroupTally, index: int, case: Case, port: Outcome, native: Outcome,
            cmp: Comparison) -> None:
        needs_record = tally.count(native, cmp, case)
        if cmp.verdict == "port-rejects-invalid":
            klass = refusal_class(case.rule, port) or "port-refuses-undeclared"
            tally.refusals[klass] = tally.refusals.get(klass, 0) + 1
            answered = answered_class(case.rule, port, native)
            if answered is not None:
                tally.answered[answered] = tally.answered.get(answered, 0) + 1
        self.coverage[tally.rule].record(index, tally.backend, native, cmp.verdict, cmp.note)
        if not needs_record:
            return
        case_text = case.json_text()
        record = tally.record(case, port, native, cmp, case_text, self.policy)
        tally.show(record, case)
        if self._cases_fh is not None:  # the record's JSON with the case's text spliced in as its last field
            self._cases_fh.write(_dumps(record)[:-1] + ',"case":' + case_text + "}\n")
        if tally.wants(cmp.verdict):
            record["case"] = case.to_json()
            tally.keep(record)

    @property
    def total_cells(self) -> int:
        return sum(t.cells for t in self.tallies.values())

    @property
    def total_mismatches(self) -> int:
        return sum(t.mismatches for t in self.tallies.values())

    def total_answered(self) -> dict[str, int]:
        """Every group's :attr:`GroupTally.answered`, summed: each of ANSWERED_CLASSES, zeros kept."""
        return {k: sum(t.answered.get(k, 0) for t in self.tallies.values()) for k in ANSWERED_CLASSES}

    def answered_text(self) -> str:
        """The strictness gap in one phrase: the port's refusals Paddle's rule answered, split by
        the refusal's declaration ('' when there is none)."""
        undefined, gap = self.total_answered().values()
        if not undefined + gap:
            return ""
        return (f"{undefined + gap:,} port refusals Paddle's rule answered ({undefined:,} from memory it never set, "
                f"{gap:,} not mirrored)")

    @property
    def total_uncompared(self) -> int:
        return sum(c.uncompared for c in self.coverage.values())

    @property
    def total_not_rechecked(self) -> int:
        """Cases answered once whose promised re-run gave no answer: the run fails closed on them."""
        return sum(t.not_rechecked for t in self.tallies.values())

    @property
    def total_compared(self) -> int:
        return sum(c.compared for c in self.coverage.values())

    @property
    def all_lacking(self) -> bool:
        """Every selected case is of what the release lacks: nothing compared and nothing left uncompared."""
        return bool(self.total_lacking) and not self.total_compared and not self.total_uncompared

    @property
    def total_lacking(self) -> int:
        """Cases of rules (or needs) the release lacks, as its profile declares: not compared, not a failure."""
        return sum(c.lacking for c in self.coverage.values())

    @property
    def empty(self) -> bool:
        return not self.coverage or all(c.selected == 0 for c in self.coverage.values())

    def _interrupt_reason(self) -> str:
        return f"not run: interrupted by {self.interrupted}" if self.interrupted else ""

    # ------------------------------------------------------------------ renderings
    def status_line(self) -> str:
        """The first line of every rendering: what this report is worth."""
        unc, sel = self.total_uncompared, sum(c.selected for c in self.coverage.values())
        mism, lack = self.total_mismatches, self.total_lacking
        compared = sel - unc - lack
        if self.interrupted:
            return (f"INTERRUPTED by {self.interrupted}: partial report; {compared:,} of {sel:,} selected cases "
                    f"compared, {mism:,} mismatching; groups marked '{INTERRUPTED}' or '{NOT_STARTED}' did not run "
                    "to the end")
        if not self.complete:
            return f"RUNNING or ABORTED: partial report; {compared:,} of {sel:,} selected cases compared so far"
        if self.empty:
            shard = (self.selection or {}).get("shard")
            if shard:
                return f"NOTHING COMPARED: part {shard[0]} of {shard[1]} holds no case of the selection"
            return "NOTHING COMPARED: the selection is empty"
        # the cases of rules the release lacks (its profile says so) are never counted as compared
        lacks = f"; {lack:,} not compared: this Paddle release lacks them (its profile; see coverage)" if lack else ""
        if mism:
            return f"MISMATCH: {mism:,} mismatching cases; {compared:,} of {sel:,} selected cases compared{lacks}"
        rechk = self.total_not_rechecked
        if rechk:  # answered once, the re-run promised for an invalid input gave no answer (per-case file: why)
            lacks += f"; {rechk:,} cases not re-checked (their re-run gave no answer)"
        if (unc or rechk) and self.allow_uncompared:
            return (f"INCOMPLETE, ACCEPTED (--allow-uncompared): {unc:,} of {sel:,} selected cases compared by no "
                    f"route; 0 mismatching cases among the rest{lacks}")
        if unc or rechk:
            return (f"FAILED CLOSED: {unc:,} of {sel:,} selected cases compared by no route (see coverage); "
                    f"0 mismatching cases among the rest{lacks}")
        if lack:
            if not compared:
                return (f"NOTHING COMPARED: this Paddle release lacks all {sel:,} selected cases (its profile; see "
                        "coverage)")
            return (f"PASS: {compared:,} of {sel:,} selected cases compared, 0 mismatching cases; the other {lack:,} "
                    "are of rules or needs this Paddle release lacks (its profile; see coverage)")
        return f"PASS: all {sel:,} selected cases compared, 0 mismatching cases"

    def coverage_lines(self) -> list[str]:
        """Per rule: cases compared / selected, cells compared, every reason a case went uncompared."""
        lines = []
        interrupted = self._interrupt_reason()
        for cov in self.coverage.values():
            lines.append(f"{cov.rule}: {cov.compared:,} / {cov.selected:,} cases compared, "
                         f"{cov.cells_compared:,} cells compared (routes: {', '.join(cov.routes)})")
            for why, n in cov.lacking_reasons().most_common()[:REASONS_SHOWN]:
                lines.append(f"    {n:,} not compared, the release lacks it: {why}")
            reasons = cov.reasons(interrupted).most_common()
            for why, n in reasons[:REASONS_SHOWN]:
                lines.append(f"    {n:,} uncompared: {why}")
            if len(reasons) > REASONS_SHOWN:
                lines.append(f"    ... {len(reasons) - REASONS_SHOWN} more distinct reasons in parity.json")
        return lines

    def table(self) -> str:
        classes = CLASSES
        head = ("rule", "backend", "state", "cases", "cells", "matching cells",
                *(c.replace("-", " ").replace("both raise same", "both raise") for c in classes))
        rows = [(t.rule, t.backend, t.state if t.state == DONE else f"**{t.state}**", f"{t.cases:,}", f"{t.cells:,}",
                 f"{t.matching_cells:,}", *(f"{t.verdicts[c]:,}" for c in classes)) for t in self.tallies.values()]
        rows.append(("**total**", "", "", f"{sum(t.cases for t in self.tallies.values()):,}", f"{self.total_cells:,}",
                     f"{sum(t.matching_cells for t in self.tallies.values()):,}", *[""] * (len(classes) - 1),
                     f"**{self.total_mismatches:,}**"))
        return markdown_table(head, rows)

    def markdown(self) -> str:
        wall = (self.finished or time.time()) - self.started
        lines = [
            f"**{self.status_line()}**",
            "",
            "# Parity report: paddle_spmd_port vs Paddle",
            "",
            f"Paddle {self.paddle.get('version', '?')} (commit {self.paddle.get('commit', '?')[:12]}); "
            f"port core {CORE}; wall time {wall:.1f} s; selection: {self.selection.get('describe', '?')}.",
            "",
            "## Coverage",
            "",
            "A case is *compared* when at least one native route gave an answer, an error, or a crash the port "
            "predicted; per rule:",
            "",
            "```",
            *self.coverage_lines(),
            "```",
            "",
            *([f"Profile: {self.profile['headline']}.", ""] if self.profile else []),
            self.table(),
            "",
            "Classes: *match* = every cell equal; *both raise* = same error family and message; *port rejects "
            "invalid* = input Paddle does not validate (it returned garbage, crashed or raised something else); "
            "*native crash* = Paddle's process died; *undecodable* = Paddle answered something the harness cannot "
            "read (its raw reply is in the case's record; not compared); *unreachable* = the backend cannot express "
            "the case; "
            "*not run* = no answer was obtained (backend unavailable here, worker timed out, interrupted); "
            "*release lacks* = the route says this Paddle release lacks the rule (or the co-shard the case needs) "
            "and its profile declares so: not compared, counted apart from the uncompared cases, not a failure; "
            "*known difference* = a difference this Paddle release is known to have (releases.py).",
            "",
            f"Every case that is not a match or a same-error is listed, one JSON line each, in `{CASES_FILE}` "
            f"(e.g. `zcat {CASES_FILE} | grep '\"verdict\":\"unreachable\"'`); below are the first few per class.",
        ]
        invalid = [f"{t.key}: " + ", ".join(f"{n} {k}" for k, n in sorted(t.invalid_native.items()))
                   for t in self.tallies.values() if t.invalid_native]
        if invalid:
            lines += ["", "What Paddle did with the input the port rejects as invalid (result = accepted "
                      "silently, crash = process died, error = raised something else):", ""]
            lines += [f"- {line}" for line in invalid]
        refused = [f"{t.key}: " + ", ".join(f"{t.refusals[k]} {k}" for k in REFUSAL_CLASSES if t.refusals.get(k))
                   for t in self.tallies.values() if t.refusals]
        if refused:
            lines += ["", "The same cases by what Paddle's op does with the input, as the port's strictness "
                      "declarations say (docs/strictness.md; `--policy mirror` answers those it models):", ""]
            lines += [f"- {line}" for line in refused]
        gap = [f"{t.key}: {t.answered.get(ANSWERED_CLASSES[0], 0):,} from memory it never set, "
               f"{t.answered.get(ANSWERED_CLASSES[1], 0):,} not mirrored" for t in self.tallies.values() if t.answered]
        if gap:
            undefined, not_mirrored = self.total_answered().values()
            lines += ["", f"Of those, the inputs Paddle's rule answered ({undefined:,} from memory it never set, "
                      f"{not_mirrored:,} not mirrored): "
                      "*from memory it never set* = the refusal's declaration says Paddle's rule reads or writes "
                      "memory it never set there (rule `undefined`: its answer is that memory's content, never "
                      "mirrored); *not mirrored* = an answer the port refuses still (the strictness gap; "
                      "`--policy mirror` closes the ones it models):", ""]
            lines += [f"- {line}" for line in gap]
        for note in self.notes:
            lines += ["", f"> {note}"]
        for t in self.tallies.values():
            for verdict, examples in t.examples.items():
                lines += ["", f"## {t.key}: {verdict} ({t.verdicts[verdict]:,}; first {len(examples)})", ""]
                for ex in examples:
                    lines.append(f"- `{ex['describe']}`")
                    lines.append(f"  - port:   `{ex['port']}`")
                    lines.append(f"  - native: `{ex['native']}`")
                    if ex.get("note"):
                        lines.append(f"  - {ex['note']}")
                    for d in ex["diffs"][:6]:
                        lines.append(f"  - {d}")
                    lines.append(f"  - repro: `{ex['repro']}`")
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, Any]:
        interrupted = self._interrupt_reason()
        return {"status": self.status_line(), "complete": self.complete, "interrupted": self.interrupted or None,
                "allow_uncompared": self.allow_uncompared, "selection": self.selection,
                "paddle": self.paddle, "port_core": CORE, "profile": self.profile, "started": self.started,
                "finished": self.finished,
                "total_cells": self.total_cells, "total_mismatches": self.total_mismatches,
                "total_uncompared": self.total_uncompared, "total_lacking": self.total_lacking,
                "total_not_rechecked": self.total_not_rechecked,
                "total_answered": self.total_answered(),
                "notes": self.notes, "cases_file": CASES_FILE,
                "coverage": {r: c.to_json(interrupted) for r, c in self.coverage.items()},
                "rules": {k: t.to_json() for k, t in self.tallies.items()}}

    def junit(self) -> str:
        from xml.sax.saxutils import escape, quoteattr  # (imports urllib.request & co.: only for --junit)

        suites = []
        for t in self.tallies.values():
            cases = []
            failure = ""
            if t.mismatches:
                detail = "\n".join(f"{ex['describe']}\n  " + "\n  ".join(ex["diffs"])
                                   for ex in t.examples.get("mismatch", [])[:20])
                failure = (f"<failure message={quoteattr(f'{t.mismatches} mismatching cases')}>"
                           f"{escape(detail)}</failure>")
            elif t.state != DONE:
                failure = f"<skipped message={quoteattr(f'group {t.state}')}/>"
            elif t.not_rechecked:  # (fails closed as the exit code does, unless --allow-uncompared)
                why = f"{t.not_rechecked} cases not re-checked (their re-run gave no answer)"
                failure = (f"<skipped message={quoteattr(why + ' (accepted: --allow-uncompared)')}/>"
                           if self.allow_uncompared else f"<failure message={quoteattr(why)}/>")
            cases.append(f'<testcase classname="parity.{t.key}" name="all cells ({t.cells} cells, {t.cases} cases)" '
                         f'time="{t.native_seconds + t.port_seconds:.3f}">{failure}</testcase>')
            for ex in t.examples.get("mismatch", [])[:50]:
                cases.append(f'<testcase classname="parity.{t.key}" name={quoteattr(ex["id"])}>'
                             f'<failure message={quoteattr("; ".join(ex["diffs"][:3]))}>'
                             f'{escape(ex["repro"])}</failure></testcase>')
            failures = int(failure.startswith("<failure")) + len(cases) - 1
            suites.append(f'<testsuite name="parity.{t.key}" tests="{len(cases)}" failures="{failures}">'
                          + "".join(cases) + "</testsuite>")
        cov_cases, cov_failures = [], 0
        interrupted = self._interrupt_reason()
        for cov in self.coverage.values():
            body = ""
            if cov.uncompared:
                reasons = "\n".join(f"{n} uncompared: {why}" for why, n in cov.reasons(interrupted).most_common())
                msg = f"{cov.uncompared} of {cov.selected} cases compared by no route"
                if self.allow_uncompared:
                    body = f"<skipped message={quoteattr(msg + ' (accepted: --allow-uncompared)')}/>"
                else:
                    cov_failures += 1
                    body = f"<failure message={quoteattr(msg)}>{escape(reasons)}</failure>"
            if cov.lacking and not body:
                lacks = f"{cov.lacking} of {cov.selected} cases: the release lacks them"
                body = f"<skipped message={quoteattr(lacks)}/>"
            name = quoteattr(f"{cov.rule}: every case compared")
            cov_cases.append(f'<testcase classname="parity.coverage" name={name}>{body}</testcase>')
        suites.append(f'<testsuite name="parity.coverage" tests="{len(cov_cases)}" failures="{cov_failures}">'
                      + "".join(cov_cases) + "</testsuite>")
        if self.interrupted:  # a run ended early fails here too: its groups may all be done (an error after them)
            suites.append('<testsuite name="parity.run" tests="1" failures="0" errors="1"><testcase '
                          f'classname="parity.run" name="the run ends"><error message={quoteattr(self.status_line())}'
                          "/></testcase></testsuite>")
        return '<?xml version="1.0" encoding="utf-8"?>\n<testsuites>' + "".join(suites) + "</testsuites>\n"

    # ------------------------------------------------------------------ files
    def open_cases_file(self, directory: str | Path, append: bool = False) -> None:
        """Start the per-case file (replacing an earlier run's; ``append``: a gzip member after what it
        holds, which a reader reads as one stream); rows are added as cases are tallied."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        self._cases_fh = gzip.open(out / CASES_FILE, "at" if append else "wt", compresslevel=1)

    def close_cases_file(self) -> None:
        if self._cases_fh is not None:
            self._cases_fh.close()
            self._cases_fh = None

    def flush_cases_file(self) -> None:
        """What the per-case file holds so far reaches the disk (a report written meanwhile names it)."""
        if self._cases_fh is not None:
            self._cases_fh.flush()
