"""Baselines: every native outcome of a parity run, saved, and a later build's outcomes diffed with them.

``parity --save-baseline FILE`` writes, for every (rule, route, case) the run compared, Paddle's
native outcome: gzip JSON lines, a header first (``format``, Paddle's ``version`` and ``commit``
as the run's report gives them, and the run's ``selection``, the same dict parity.json keeps),
then one row per outcome (``rule``, ``backend``, ``i`` = the case's position among the rule's
selected cases, ``id``, ``case``, ``native``). The file is written whole or not at all (an
interrupted run writes none).

``parity --baseline FILE`` runs the same selection (a baseline of another one is refused, exit 2)
and compares the installed Paddle's native outcome of every (rule, route, case) with the stored one,
cell by cell (the cells of :func:`~paddle_spmd_port.compare.outcome_cells`, plus the status
and what a crash, an undecodable answer or an unreachable route said). Each changed case is
triaged with the oracle on both answers (the mapping of :mod:`paddle_spmd_port.oracle.native`:
an answer is simulated; a raise or an unreachable route is rule-error; a crash or an undecodable
answer is a crash)::

    class             old -> new
    regressed         sound -> unsound, unrunnable or local-stats-only; anything Paddle answered
                      (a result or an error) -> a crash or an undecodable answer
    fixed             unsound, unrunnable or local-stats-only -> sound; a crash -> a sound answer
    newly raises      an answer -> an error (or no rule on the route)
    no longer raises  an error (or no rule on the route) -> an answer
    changed           anything else that changed: both sound, both not (e.g. two different errors,
                      a crash -> an error, a crash -> an answer that is not sound), or a case the
                      op itself rejects on one device (op-rejects: any answer is as good)
    changed (invalid  the input is invalid for the op (paddle_spmd_port/validity.py), both outcomes are
      input)          answers or crashes, and nothing showed this build's outcome to vary: a change
                      all the same (e.g. an older release's statistics of another rank); counted with the
                      changed cases, listed apart, never a regression (the op refuses that input
                      and Paddle's rule does not validate it)
    changed           an invalid input whose outcome under this build was *shown* to vary (as for
      (unstable)      *unstable*) and none of whose outcomes under this build is the baseline's: it
                      varies, but the baseline's answer is gone all the same. A change: counted with
                      the changed cases, triaged by nothing else (never a regression: the op refuses
                      that input), and not explained by its class (crosscheck.py)
    unstable          an invalid input (any two outcomes) whose outcome under this build was *shown*
                      to vary (the sweep's outcome carries another run's, compare.py's
                      *native-varies*, or one of :data:`RERUNS` re-runs of the case, fresh workers
                      after the sweep, came out otherwise than the sweep did) and one of those
                      outcomes is the baseline's. Paddle's rule does not validate that input and
                      reads memory it never set, so its outcome there moves from run to run
                      (measured: docs/measurements/2026-12-01-native-notes.md); nothing shows it
                      changed: listed, not triaged, not counted as changed. It ranks first.

An unreachable route's reason (and an error's message) is compared with its source line numbers
and build-specific paths normalised (:func:`reason_key`): a build that only moved a line or was
built in another directory leaves the case unchanged; the report counts such cases and shows the
first few with their raw texts.

A case is *uncompared* when either side has no outcome (not run in either build, a route or case
the other run lacks, or a case whose JSON differs: the port's grid changed); the diff then fails
closed (exit 3). Exit: 1 on any regression (outranks 3), else 3 on any uncompared case, else 0.
Written to the report dir: ``baseline.md`` (regressions first, a repro line per changed case for
each build, at most :data:`MARKDOWN_PER_CLASS` cases a class), ``baseline-cases.jsonl.gz`` (every
changed case, one JSON line each, regressions first, both outcomes whole: what :mod:`.crosscheck`
reads to hold a release profile to the diff; written line by line), ``baseline.json`` (a summary:
status, summary line, counts, counts per group, and the first :data:`EXAMPLES_PER_CLASS` changed
cases of each class, each with its repro line) and ``baseline.html`` (the same as a page, with a map
per rule of where the changes are: parity/pages.py); the console's last line reads ``baseline OLD ->
NEW: N changed cases (R regressed, F fixed, ..., V changed though unstable); U unstable (invalid input
shown to vary), K uncompared``. An interrupted run writes all of them, of the cases compared so far (its changed cases
on invalid input not re-run, so none unstable, each saying so).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import tempfile
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from ..case import Case
from ..compare import outcome_cells
from ..ops import rule_spec
from ..outcome import Outcome
from ..reporting import _create_temp, markdown_table, write_atomic
from ..runctl.exits import UsageError
from ..validity import input_problem
from .repro import one_line_repro

FORMAT = "paddle_spmd_port native baseline"
FORMAT_VERSION = 1
DIFF_FORMAT = "paddle_spmd_port baseline diff"
DIFF_FORMAT_VERSION = 2
"""baseline.json's format: 2 = a summary naming ``baseline-cases.jsonl.gz`` (1, unnamed: every case inline)."""
CASES_FILE = "baseline-cases.jsonl.gz"
EXAMPLES_PER_CLASS = 20
#: baseline.md lists at most this many changed cases of a class (a full route's diff holds 100,000s)
MARKDOWN_PER_CLASS = 200
"""Changed cases of each class baseline.json keeps (with their repro lines); every one is in CASES_FILE."""

REGRESSED, FIXED, CHANGED, NEWLY_RAISES, NO_LONGER_RAISES, CHANGED_INVALID, CHANGED_UNSTABLE, UNSTABLE = (
    "regressed", "fixed", "changed", "newly raises", "no longer raises", "changed (invalid input)",
    "changed (unstable)", "unstable")
#: Report order: regressions first (unstable, not a change, after them all).
CLASSES = (REGRESSED, NEWLY_RAISES, FIXED, NO_LONGER_RAISES, CHANGED, CHANGED_INVALID, CHANGED_UNSTABLE)
#: Re-runs (each a fresh set of workers) of every changed case on invalid input, after the sweep: the evidence
#: that its outcome varies (see :meth:`Diff.recheck`).
RERUNS = 2
#: Cases unchanged only after :func:`reason_key` that baseline.json and baseline.md show with their raw texts.
NORMALISED_SHOWN = 20
NOT_SOUND = ("unsound", "unrunnable", "local-stats-only")

_dumps = json.JSONEncoder(separators=(",", ":"), sort_keys=True).encode


def outcome_text(outcome: Outcome) -> str:
    """An outcome's canonical JSON text: equal texts are equal outcomes, cell for cell."""
    return str(_dumps(outcome.to_json()))


# A reason's source line (``layout.h:101``), the directory Paddle was built in (``/paddle/paddle/common/...``,
# ``/home/me/Paddle/paddle/phi/...``) and the environment it is installed in (``/work/venvs/x/lib/python3.11/
# site-packages/``) say where a build was made, not what it does: two builds of one source compare equal
# without them. The source-relative file name stays (a reason that moved to another file has changed).
_SOURCE_LINE = re.compile(r"(\.(?:cc|cpp|cxx|cu|h|hpp|hh|c|py)):\d+")
_SOURCE_ROOT = re.compile(r"/(?:[^\s/\[\]():'\"]+/)*?(?=paddle/(?:phi|common|fluid|pir|utils|cinn)/)")
_INSTALL_ROOT = re.compile(r"/(?:[^\s/\[\]():'\"]+/)*(?:site|dist)-packages/")


def reason_key(text: str) -> str:
    """``text`` (an unreachable reason or an error message) with source line numbers and build-specific
    paths normalised: what the diff compares (the raw text is kept and shown)."""
    text = _SOURCE_LINE.sub(r"\1:<line>", text)
    text = _SOURCE_ROOT.sub("", text)
    return _INSTALL_ROOT.sub("<site-packages>/", text)


def _comparable(data: dict[str, Any]) -> dict[str, Any]:
    """An outcome's JSON with its reasons normalised (:func:`reason_key`)."""
    out = dict(data)
    if isinstance(out.get("unreachable"), str):
        out["unreachable"] = reason_key(out["unreachable"])
    err = out.get("error")
    if isinstance(err, dict) and isinstance(err.get("message"), str):
        out["error"] = {**err, "message": reason_key(err["message"])}
    return out


def same_outcome(old_text: str, new_text: str) -> bool:
    """Two outcome texts (:func:`outcome_text`) that are equal, or equal once their reasons are normalised."""
    if old_text == new_text:
        return True
    if '"unreachable"' not in old_text and '"error"' not in old_text:
        return False  # (nothing to normalise: the common case of a changed answer, decided without parsing)
    return bool(_comparable(json.loads(old_text)) == _comparable(json.loads(new_text)))


def outcome_texts(outcome: Outcome) -> list[str]:
    """The texts of every answer an outcome holds: itself, and the other run's it carries
    (:attr:`Outcome.varies`), each without the other."""
    texts = [outcome_text(outcome if outcome.varies is None else replace(outcome, varies=None))]
    if outcome.varies is not None:
        texts += outcome_texts(outcome.varies)
    return texts


def _one_line(text: str) -> str:
    """``text`` for a markdown list item: a reason's newline (Paddle's ``\\n  [file:line]``) would end it."""
    return text.replace("\n", "\\n")


def build_text(paddle: dict[str, Any]) -> str:
    """How the console and the report name a build: ``3.3.1 (commit 1a2b3c4d5e6f)``."""
    return f"{paddle.get('version', '?')} (commit {str(paddle.get('commit', '?'))[:12]})"


# --------------------------------------------------------------------------- saving
class Saver:
    """Collects a run's native outcomes into a temp file next to ``path``; :meth:`finish` writes the
    header and moves the whole file into place, :meth:`discard` removes it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, self.body_path = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".rows", dir=path.parent)
        os.close(fd)
        self.body: IO[str] | None = gzip.open(self.body_path, "wt", compresslevel=6)
        self.rows = 0

    def record(self, rule: str, backend: str, index: int, case: Case, native: Outcome) -> None:
        assert self.body is not None
        head = _dumps({"rule": rule, "backend": backend, "i": index, "id": case.case_id,
                       "native": native.to_json()})
        self.body.write(head[:-1] + ',"case":' + case.json_text() + "}\n")
        self.rows += 1

    def finish(self, paddle: dict[str, Any], selection: dict[str, Any]) -> None:
        assert self.body is not None
        self.body.close()
        self.body = None
        header = {"format": FORMAT, "format_version": FORMAT_VERSION, "paddle": paddle,
                  "selection": selection, "rows": self.rows}
        # two gzip members, one stream: the header, then the rows as they were written
        data = gzip.compress((json.dumps(header, separators=(",", ":")) + "\n").encode(), mtime=0)
        data += Path(self.body_path).read_bytes()
        write_atomic(self.path, data)
        self.discard()

    def discard(self) -> None:
        if self.body is not None:
            self.body.close()
            self.body = None
        Path(self.body_path).unlink(missing_ok=True)


# --------------------------------------------------------------------------- loading
@dataclass
class Stored:
    """A loaded baseline: its header and, per (rule, backend, position), (case id, the case JSON's
    CRC, the native outcome's canonical text)."""

    path: Path
    header: dict[str, Any]
    rows: dict[tuple[str, str, int], tuple[str, int, str]]

    @property
    def paddle(self) -> dict[str, Any]:
        return dict(self.header.get("paddle") or {})


def load(path: Path, selection: dict[str, Any], arg: str = "--baseline") -> Stored:
    """Read and check a baseline before any work: one :class:`UsageError` naming ``arg`` for a missing
    file, a file that is not a gzip stream or is corrupt, one that is not a baseline, and a baseline of
    another selection (by name)."""
    if not path.exists():
        raise UsageError(arg, f"{path} does not exist", "give a file written by parity --save-baseline")
    if not path.is_file():
        raise UsageError(arg, f"{path} is not a file", "give a file written by parity --save-baseline")
    rows: dict[tuple[str, str, int], tuple[str, int, str]] = {}
    header: dict[str, Any] | None = None
    number = 0
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                number += 1  # (named in the error line)
                data = json.loads(line)
                if header is None:
                    if not isinstance(data, dict) or data.get("format") != FORMAT:
                        raise UsageError(arg, f"{path} is not a baseline (its first line is not a "
                                         f"{FORMAT!r} header)", "give a file written by parity --save-baseline")
                    if data.get("format_version") != FORMAT_VERSION:
                        raise UsageError(arg, f"{path} is a baseline of format {data.get('format_version')!r}",
                                         f"this version reads format {FORMAT_VERSION}: save the baseline again")
                    header = data
                    continue
                native, case = data["native"], data["case"]
                key = (str(data["rule"]), str(data["backend"]), int(data["i"]))
                case_text = json.dumps(case, separators=(",", ":"))
                rows[key] = (str(data["id"]), zlib.crc32(case_text.encode()), str(_dumps(native)))
    except UsageError:
        raise
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        raise UsageError(arg, f"{path} is not a readable gzip file ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())[:120]})",
                         "give a file written by parity --save-baseline") from None
    except (ValueError, KeyError, TypeError) as exc:  # (UnicodeDecodeError and JSONDecodeError are ValueErrors)
        raise UsageError(arg, f"{path}: line {number} is not a baseline row ({type(exc).__name__})",
                         "give a file written by parity --save-baseline, unedited") from None
    if header is None:
        raise UsageError(arg, f"{path} is empty: not a baseline", "give a file written by parity --save-baseline")
    if header.get("rows") != len(rows):
        raise UsageError(arg, f"{path} holds {len(rows)} rows where its header says {header.get('rows')!r} "
                         "(a truncated or edited file)", "save the baseline again")
    old = header.get("selection") or {}
    if not isinstance(old, dict) or old.get("slug") != selection["slug"]:
        what = old.get("describe", "an unknown selection") if isinstance(old, dict) else "an unknown selection"
        raise UsageError(arg, f"{path} is a baseline of another selection ({what}); this run: "
                         f"{selection['describe']}", "run with the baseline's selection, or save one of this selection")
    return Stored(path, header, rows)


# --------------------------------------------------------------------------- triage
def _kind(outcome: Outcome) -> str:
    if outcome.result is not None and outcome.status == "result":
        return "answer"
    if outcome.crash is not None or outcome.undecodable is not None:
        return "crash"
    return "raises"  # an error, or no rule on the route (unreachable)


def unvalidated(old: Outcome, new: Outcome, invalid: bool) -> bool:
    """An invalid input answered (or crashed on) by both builds: no validation of the input in either,
    so no error that would make the change a new check or a check removed."""
    return invalid and _kind(old) in ("answer", "crash") and _kind(new) in ("answer", "crash")


def triage(old: Outcome, new: Outcome, old_label: str, new_label: str, invalid: bool, varies: bool = False,
           old_seen: bool = True) -> str:
    """The class of a changed case (the table in the module doc). ``*_label``: the oracle's verdict
    on each side; ``invalid``: the case's input is invalid for the op; ``varies``: a re-run showed
    the case's outcome to vary (:meth:`Diff.recheck`); ``old_seen``: the old outcome is one of this
    build's outcomes of the case (the sweep's, its other run's, a re-run's: :func:`outcome_texts`)."""
    a, b = _kind(old), _kind(new)
    # Unstable only on evidence. Calling every invalid input answered or crashed on by both builds unstable
    # (as this did) hid deterministic changes: most of 3.1.0 -> 3.3.1's "unstable" cases were one op's
    # statistics of another rank, the same answer every run (docs/measurements/2026-12-02-baseline-classes.md).
    # And the noise is not confined to those: an invalid co-shard
    # read past its mapping raises in one run and crashes in the next, which the table below would call a
    # regression. So a re-run's outcome that differs is what makes a case on invalid input unstable,
    # whatever its two outcomes; without one, an invalid input answered or crashed on by both is a change in
    # a class of its own (never a regression: the op refuses the input, so no answer to it is owed; never
    # hidden either), and any other goes through the table as a valid one does.
    # And varying is no licence to hide a change: an outcome the baseline never gave among this build's
    # answers, and the baseline's gone from them, is a change whatever else moves.
    if invalid and varies:
        return UNSTABLE if old_seen else CHANGED_UNSTABLE
    if unvalidated(old, new, invalid):
        return CHANGED_INVALID
    if b == "crash":
        return CHANGED if a == "crash" else REGRESSED
    if a == "crash":
        return FIXED if b == "answer" and new_label == "sound" else CHANGED
    if a == "answer" and b == "raises":
        return NEWLY_RAISES
    if a == "raises" and b == "answer":
        return NO_LONGER_RAISES
    if a == "raises":
        return CHANGED
    if old_label == "sound" and new_label in NOT_SOUND:
        return REGRESSED
    if old_label in NOT_SOUND and new_label == "sound":
        return FIXED
    return CHANGED


def _status_cells(outcome: Outcome) -> list[tuple[str, str]]:
    text = outcome.crash or outcome.undecodable or outcome.unreachable or outcome.not_run or ""
    return [("status", outcome.status + (f": {text}" if text else ""))]


def cell_diffs(case: Case, old: Outcome, new: Outcome) -> list[str]:
    """The cells that differ, ``cell: old X != new Y``."""
    spec = rule_spec(case.rule)
    a = dict(_status_cells(old) + outcome_cells(spec, old))
    b = dict(_status_cells(new) + outcome_cells(spec, new))
    names = list(dict.fromkeys([*a, *b]))
    return [f"{k}: old {a.get(k, 'absent')} != new {b.get(k, 'absent')}" for k in names
            if a.get(k, "absent") != b.get(k, "absent")]


@dataclass
class Change:
    klass: str
    rule: str
    backend: str
    case: Case
    old: Outcome
    new: Outcome
    old_verdict: str
    new_verdict: str
    diffs: list[str]
    reruns: list[Outcome] | None = None
    """This build's outcomes of the case's re-runs (:meth:`Diff.recheck`); None: not re-run (not a
    candidate, or the run ended first)."""

    @property
    def rerun_note(self) -> str:
        """What the re-runs showed, for the report ("" for a case that is no candidate)."""
        if self.reruns is None:
            return "not re-run (the run ended first)" if self.klass == CHANGED_INVALID else ""
        now = outcome_text(self.new)
        texts = [str(o) for o in self.reruns]
        shown = sum(not same_outcome(now, outcome_text(o)) for o in self.reruns if o.not_run is None)
        answered = sum(o.not_run is None for o in self.reruns)
        return (f"{answered} of {len(self.reruns)} re-runs answered, {shown} otherwise than the sweep"
                + (f": {'; '.join(dict.fromkeys(texts))[:300]}" if shown else ""))

    def to_json(self) -> dict[str, Any]:
        return {**self._fields(), "case": self.case.to_json()}

    def json_line(self) -> str:
        """``to_json()`` as one line of JSON, the case's text spliced in last (:meth:`Case.json_text`)."""
        return str(_dumps(self._fields()))[:-1] + ',"case":' + self.case.json_text() + "}"

    def example(self) -> dict[str, Any]:
        """What baseline.json shows of the case: the whole outcomes and the case's JSON are in the
        cases file (and the repro line holds the case)."""
        return {k: v for k, v in self._fields().items() if k not in ("old_outcome", "new_outcome", "rerun_outcomes")}

    def _fields(self) -> dict[str, Any]:
        return {"class": self.klass, "rule": self.rule, "backend": self.backend, "id": self.case.case_id,
                "describe": self.case.describe(), "old": str(self.old), "new": str(self.new),
                "old_verdict": self.old_verdict, "new_verdict": self.new_verdict, "diffs": self.diffs,
                "repro": one_line_repro(self.case, self.backend), "reruns": self.rerun_note,
                # both outcomes whole, for a reader that re-judges them (parity/crosscheck.py)
                "old_outcome": self.old.to_json(), "new_outcome": self.new.to_json(),
                "rerun_outcomes": None if self.reruns is None else [o.to_json() for o in self.reruns]}


@dataclass
class Diff:
    """The comparison of a run's native outcomes with a stored baseline, filled as the run tallies."""

    stored: Stored
    seen: set[tuple[str, str, int]] = field(default_factory=set)
    pending: list[tuple[str, str, Case, Outcome, Outcome]] = field(default_factory=list)
    unchanged: int = 0
    normalised: int = 0
    """Of the unchanged cases, those whose raw texts differ (a reason's source line or build path)."""
    normalised_shown: list[dict[str, str]] = field(default_factory=list)
    """The first :data:`NORMALISED_SHOWN` of them, with both raw texts."""
    uncompared: Counter[str] = field(default_factory=Counter)
    changes: list[Change] = field(default_factory=list)
    reruns: dict[int, list[Outcome]] = field(default_factory=dict)
    """Position in ``pending`` -> this build's outcomes of the case's re-runs (:meth:`recheck`)."""

    def record(self, rule: str, backend: str, index: int, case: Case, native: Outcome) -> None:
        key = (rule, backend, index)
        self.seen.add(key)
        row = self.stored.rows.get(key)
        if row is None:
            self.uncompared[f"{rule}@{backend}: not in the baseline"] += 1
            return
        case_id, crc, old_text = row
        if case_id != case.case_id or crc != zlib.crc32(case.json_text().encode()):
            self.uncompared[f"{rule}@{backend}: the case differs from the baseline's (the grid changed)"] += 1
            return
        new_text = outcome_text(native)
        if same_outcome(old_text, new_text):
            if native.not_run is not None:  # the same reason for no answer twice: still no comparison
                self.uncompared[f"{rule}@{backend}: not run in either build"] += 1
                return
            self.unchanged += 1
            if new_text != old_text:
                self.normalised += 1
                if len(self.normalised_shown) < NORMALISED_SHOWN:
                    self.normalised_shown.append({
                        "group": f"{rule}@{backend}", "id": case.case_id,
                        "old": str(Outcome.from_json(json.loads(old_text))), "new": str(native)})
            return
        old = Outcome.from_json(json.loads(old_text))
        if old.not_run is not None or native.not_run is not None:
            side = "the baseline's build" if old.not_run is not None else "this build"
            self.uncompared[f"{rule}@{backend}: not run in {side}"] += 1
            return
        self.pending.append((rule, backend, case, old, native))

    def missing(self) -> Counter[str]:
        """Baseline rows this run did not reach (a group it did not run, an interrupt)."""
        out: Counter[str] = Counter()
        for rule, backend, index in self.stored.rows:
            if (rule, backend, index) not in self.seen:
                out[f"{rule}@{backend}: in the baseline, not in this run"] += 1
        return out

    def candidates(self) -> list[int]:
        """Positions in ``pending`` of the changed cases whose outcome may vary: those on invalid input (where
        Paddle may read memory it never set). A valid input's outcome is not re-run: noise there would be a
        bug of Paddle's, for the table to show, not for this class to absorb."""
        return [k for k, item in enumerate(self.pending) if input_problem(item[2]) is not None]

    def recheck(self, rerun: Callable[[str, list[Case]], Sequence[Outcome]], times: int = RERUNS) -> None:
        """Run each candidate (:meth:`candidates`) ``times`` more under this build, a backend's candidates
        together through ``rerun(backend, cases)`` (fresh workers each time), and keep the outcomes: a
        candidate is unstable when one of them differs from the sweep's (:meth:`judge`).

        Why re-runs: the measured noise moves with the process's memory layout (a new worker pool, an
        allocation before the fork server: 2026-12-01-native-notes.md), which a fresh pool changes; the
        baseline's build cannot be re-run from here, so the evidence is this build's. A case whose noise
        the re-runs miss is *changed (invalid input)*: listed and counted, not failed."""
        by_backend: dict[str, list[int]] = {}
        for k in self.candidates():
            by_backend.setdefault(self.pending[k][1], []).append(k)
        for backend, positions in by_backend.items():
            cases = [self.pending[k][2] for k in positions]
            for _ in range(times):
                outcomes = rerun(backend, cases)
                for k, outcome in zip(positions, outcomes, strict=True):
                    self.reruns.setdefault(k, []).append(outcome)

    def _varies(self, k: int) -> bool:
        new = self.pending[k][4]
        new_text = outcome_text(new)
        # the baseline's own outcome carrying two runs' answers is evidence as well (of the same input's noise)
        return new.varies is not None or self.pending[k][3].varies is not None or any(
            o.not_run is None and not same_outcome(new_text, outcome_text(o)) for o in self.reruns.get(k, ()))

    def _old_seen(self, k: int) -> bool:
        """The baseline's outcome (any answer it holds) is one of this build's for the case."""
        _, _, _, old, new = self.pending[k]
        mine = [t for o in (new, *self.reruns.get(k, ())) if o.not_run is None for t in outcome_texts(o)]
        return any(same_outcome(a, b) for a in outcome_texts(old) for b in mine)

    def judge(self) -> None:
        """Triage every changed case with the oracle (both answers judged on the case as run)."""
        from ..oracle.kernels import MODELS
        from ..oracle.report import Judge

        judge = Judge()
        for k, (rule, backend, case, old, new) in enumerate(self.pending):
            if rule in MODELS:
                a = judge.native(case, old, backend).verdict.label
                b = judge.native(case, new, backend).verdict.label
            else:
                a = b = "not judged (no numpy kernel)"
            klass = triage(old, new, a, b, input_problem(case) is not None, self._varies(k), self._old_seen(k))
            self.changes.append(Change(klass, rule, backend, case, old, new, a, b, cell_diffs(case, old, new),
                                       self.reruns.get(k)))
        self.pending = []
        self.reruns = {}

    @property
    def counts(self) -> Counter[str]:
        return Counter(c.klass for c in self.changes)

    def changed(self) -> int:
        return sum(n for k, n in self.counts.items() if k != UNSTABLE)

    def summary_line(self, new_paddle: dict[str, Any]) -> str:
        c = self.counts
        parts = ", ".join(f"{c[k]} {k}" for k in (REGRESSED, FIXED, CHANGED, NEWLY_RAISES, NO_LONGER_RAISES))
        uncompared = sum(self.uncompared.values()) + sum(self.missing().values())
        return (f"baseline {build_text(self.stored.paddle)} -> {build_text(new_paddle)}: {self.changed()} changed "
                f"cases ({parts}, {c[CHANGED_INVALID]} changed on invalid input, {c[CHANGED_UNSTABLE]} changed though "
                f"unstable); {c[UNSTABLE]} unstable (invalid "
                f"input shown to vary), {uncompared} uncompared")

    def status(self, interrupted: str = "") -> str:
        c = self.counts
        uncompared = sum(self.uncompared.values()) + sum(self.missing().values())
        if interrupted:
            return f"INTERRUPTED by {interrupted}: partial baseline diff of the cases compared so far"
        if c[REGRESSED]:
            return f"REGRESSED: {c[REGRESSED]} of {self.changed()} changed cases regressed"
        if uncompared:
            return f"INCOMPLETE: {uncompared} cases could not be compared with the baseline (see below)"
        if self.changed():
            invalid = f" ({c[CHANGED_INVALID]} on invalid input)" if c[CHANGED_INVALID] else ""
            return f"CHANGED, NONE REGRESSED: {self.changed()} changed cases{invalid}"
        return "UNCHANGED: 0 changed cases"

    def markdown(self, new_paddle: dict[str, Any], selection: dict[str, Any], interrupted: str = "") -> str:
        old_name, new_name = build_text(self.stored.paddle), build_text(new_paddle)
        c = self.counts
        per_group: dict[str, Counter[str]] = {}
        for ch in self.changes:
            per_group.setdefault(f"{ch.rule}@{ch.backend}", Counter())[ch.klass] += 1
        head = ("group", *CLASSES, UNSTABLE)
        rows = [(g, *(n[k] for k in (*CLASSES, UNSTABLE))) for g, n in per_group.items()]
        rows.append(("total", *(c[k] for k in (*CLASSES, UNSTABLE))))
        lines = [f"**{self.status(interrupted)}**", "", f"# Baseline diff: Paddle {old_name} -> {new_name}", "",
                 f"Baseline `{self.stored.path}`; selection: {selection.get('describe', '?')}. Native against native, "
                 f"cell by cell: {self.unchanged} cases unchanged ({self.normalised} of them only once source line "
                 f"numbers and build paths in their reasons are normalised), {self.changed()} changed "
                 f"({c[CHANGED_INVALID]} of them on invalid input), {c[UNSTABLE]} unstable.",
                 "", markdown_table(head, rows), "",
                 "Classes (parity/baseline.py): *regressed* = sound -> not sound, or an answer -> a crash; *newly "
                 "raises* = an answer -> an error; *fixed* = not sound (or a crash) -> sound; *no longer raises* = an "
                 "error -> an answer; *changed* = both sound or both not; *changed (invalid input)* = an invalid input "
                 "Paddle does not validate, answered (or crashed on) by both, the same on each re-run: a change, never "
                 "a regression; *unstable* = the same, but a re-run of the case under this build answered otherwise "
                 "(shown to vary: answered from memory it never set; not counted as changed). Verdicts: the oracle's, "
                 "on each answer to the case as run. Each repro line runs the case on its route under whichever build "
                 "is installed: run it under each."]
        uncompared = self.uncompared + self.missing()
        if uncompared:
            lines += ["", "## Uncompared", ""] + [f"* {n} cases: {why}" for why, n in uncompared.most_common()]
        if self.normalised:
            lines += ["", f"## Unchanged once normalised ({self.normalised})", "",
                      "Raw texts differ only in a source line number or a build-specific path (compared without them"
                      + (f"; the first {len(self.normalised_shown)}" if self.normalised > len(self.normalised_shown)
                         else "") + "):", ""]
            lines += [f"* `{n['group']}` `{n['id']}`: old `{_one_line(n['old'])}` / new `{_one_line(n['new'])}`"
                      for n in self.normalised_shown]
        for klass in (*CLASSES, UNSTABLE):
            items = [ch for ch in self.changes if ch.klass == klass]
            if not items:
                continue
            lines += ["", f"## {klass} ({len(items)})", ""]
            if len(items) > MARKDOWN_PER_CLASS:
                lines += [f"The first {MARKDOWN_PER_CLASS} of {len(items)}; every one is in `{CASES_FILE}`.", ""]
            for ch in items[:MARKDOWN_PER_CLASS]:
                repro = one_line_repro(ch.case, ch.backend)
                lines += [f"* `{ch.rule}@{ch.backend}` `{ch.case.case_id}`: `{ch.case.describe()}`",
                          f"  - old ({old_name}): `{_one_line(str(ch.old))}` — {ch.old_verdict}",
                          f"  - new ({new_name}): `{_one_line(str(ch.new))}` — {ch.new_verdict}",
                          *(f"  - {d}" for d in ch.diffs[:6]),
                          *([f"  - re-runs under {new_name}: {ch.rerun_note}"] if ch.rerun_note else []),
                          f"  - repro under {old_name}: `{repro}`",
                          f"  - repro under {new_name}: `{repro}`"]
        return "\n".join(lines) + "\n"

    def ordered(self) -> list[Change]:
        """The changed cases in report order: regressions first, unstable last."""
        order = (*CLASSES, UNSTABLE)
        return sorted(self.changes, key=lambda ch: order.index(ch.klass))

    def to_json(self, new_paddle: dict[str, Any], selection: dict[str, Any], interrupted: str = "") -> dict[str, Any]:
        """baseline.json: the summary; the changed cases themselves are in :data:`CASES_FILE`."""
        per_group: dict[str, Counter[str]] = {}
        examples: dict[str, list[dict[str, Any]]] = {}
        for ch in self.ordered():
            per_group.setdefault(f"{ch.rule}@{ch.backend}", Counter())[ch.klass] += 1
            shown = examples.setdefault(ch.klass, [])
            if len(shown) < EXAMPLES_PER_CLASS:
                shown.append(ch.example())
        return {"format": DIFF_FORMAT, "format_version": DIFF_FORMAT_VERSION,
                "status": self.status(interrupted), "summary": self.summary_line(new_paddle),
                "old": {"paddle": self.stored.paddle, "selection": self.stored.header.get("selection"),
                        "file": str(self.stored.path)},
                "new": {"paddle": new_paddle, "selection": selection},
                "counts": {k: self.counts[k] for k in (*CLASSES, UNSTABLE)}, "unchanged": self.unchanged,
                "unchanged_normalised": self.normalised, "normalised_examples": self.normalised_shown,
                "uncompared": dict((self.uncompared + self.missing()).most_common()),
                "groups": {g: {k: n[k] for k in (*CLASSES, UNSTABLE) if n[k]} for g, n in per_group.items()},
                "cases_file": CASES_FILE, "cases_total": len(self.changes),
                "examples_per_class": EXAMPLES_PER_CLASS, "examples": examples}

    def write_cases(self, path: Path) -> None:
        """Every changed case, one JSON line each in report order, gzip, written line by line through a
        temp file next to ``path`` (removed on any way out but the rename: a signal, a full disk)."""
        fd, tmp = _create_temp(path)
        try:
            with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0) as gz:
                for ch in self.ordered():
                    gz.write((ch.json_line() + "\n").encode("utf-8"))
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @property
    def regressed(self) -> int:
        return self.counts[REGRESSED]

    @property
    def incomplete(self) -> bool:
        return bool(self.uncompared) or bool(self.missing())


__all__ = ["CASES_FILE", "CHANGED_INVALID", "CHANGED_UNSTABLE", "CLASSES", "DIFF_FORMAT", "EXAMPLES_PER_CLASS",
           "FORMAT",
           "MARKDOWN_PER_CLASS", "RERUNS", "Diff", "Saver", "Stored", "build_text", "cell_diffs", "load",
           "outcome_text", "outcome_texts", "reason_key", "same_outcome", "triage", "unvalidated"]
