"""Baselines: every native outcome of a parity run, saved, and a later build's outcomes diffed with them.

``parity --save-baseline FILE`` writes, for every (rule, route, case) the run compared, Paddle's
native outcome: gzip JSON lines, a header first (``format``, Paddle's ``version`` and ``commit``
as the run's report gives them, and the run's ``selection``, the dict parity.json keeps, with the
default ``policy`` whatever the run's),
then one row per outcome (``rule``, ``backend``, ``i`` = the case's position among the rule's
selected cases, ``id``, ``case``, ``native``). The file is written whole or not at all (an
interrupted run writes none). It is written in format 2 (a row's ``case`` names every attribute of its
rule); formats 1 (``case`` naming the attributes the case was built with) and 2 are read, with the
same diff (:data:`FORMATS_READ`).

``parity --baseline FILE`` runs the same selection (a baseline of another one is refused, exit 2;
the port's ``--policy`` is no part of it there: a baseline holds native outcomes only, so one saved
under either policy serves a run under the other, whose repro lines name the diffing run's policy)
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
NEW: N changed cases (R regressed, F fixed, ..., V changed though unstable); U unstable (invalid
input shown to vary), K uncompared``. An interrupted run writes all of them, of the cases compared so
far (its changed cases on invalid input not re-run, so none unstable, each saying so).

Memory: a baseline's rows, the changed cases awaiting triage, their re-runs and the triaged changes
are held on disk, in private SQLite files (:func:`_spill_db`); a :class:`Diff` holds counts and the
first :data:`MARKDOWN_PER_CLASS` changes of each class, whatever the run's size.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import sqlite3
import tempfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from ..case import Case
from ..compare import outcome_cells
from ..ops import rule_spec
from ..ops.kit.strictness import DEFAULT_POLICY
from ..outcome import Outcome
from ..pages import map_key, map_label
from ..reporting import _create_temp, markdown_table
from ..runctl.exits import UsageError
from ..validity import input_problem
from .repro import named_policy, one_line_repro

FORMAT = "paddle_spmd_port native baseline"
#: The format written: a row's case text names every attribute of its rule (Case holds them all), the
#: text whose CRC the diff compares with the run's case's.
FORMAT_VERSION = 2
#: The formats read. A format-1 row's case text names only the attributes its case was built with: its
#: case is read back (which fills in the others at their defaults) and written again for its CRC, so
#: it keys its row as format 2 does. A baseline records a build its user may no longer have: it
#: cannot always be saved again.
FORMATS_READ = (1, 2)
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
_ORDER = (*CLASSES, UNSTABLE)
#: Re-runs (each a fresh set of workers) of every changed case on invalid input, after the sweep: the evidence
#: that its outcome varies (see :meth:`Diff.recheck`).
RERUNS = 2
#: Cases unchanged only after :func:`reason_key` that baseline.json and baseline.md show with their raw texts.
NORMALISED_SHOWN = 20
#: Changed cases read back from disk at a time (re-runs and triage): what a diff holds of them in memory at once.
RERUN_CHUNK = 10_000
#: Rows a baseline's load writes to disk at a time.
_BATCH = 10_000
#: SQLite's page cache per spill file, KiB (its default is 2,000).
SPILL_CACHE_KIB = 16_000
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
def row_line(rule: str, backend: str, index: int, case: Case, native: Outcome) -> str:
    """One native outcome as a baseline row (a line of JSON, the case's text spliced in last)."""
    head = _dumps({"rule": rule, "backend": backend, "i": index, "id": case.case_id, "native": native.to_json()})
    return str(head[:-1] + ',"case":' + case.json_text() + "}\n")


class Spool:
    """The outcomes a round run in a forked copy of the sweep tallied (parity/cli.py), as baseline rows
    in a file: its observers live in the sweep itself (a diff's SQLite file must not be written by
    two processes), which :func:`replay` hands them to once the round is over."""

    def __init__(self, path: str | Path) -> None:
        self.body: IO[str] = gzip.open(path, "at", compresslevel=1)

    def record(self, rule: str, backend: str, index: int, case: Case, native: Outcome) -> None:
        self.body.write(row_line(rule, backend, index, case, native))

    def close(self) -> None:
        self.body.close()


def replay(path: str | Path, observers: Sequence[Any]) -> None:
    """Hand every row of a :class:`Spool`'s file, in order, to each of ``observers`` (``record``)."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            data = json.loads(line)
            case, native = Case.from_json(data["case"]), Outcome.from_json(data["native"])
            for observer in observers:
                observer.record(data["rule"], data["backend"], data["i"], case, native)


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
        self.body.write(row_line(rule, backend, index, case, native))
        self.rows += 1

    def finish(self, paddle: dict[str, Any], selection: dict[str, Any]) -> None:
        assert self.body is not None
        self.body.close()
        self.body = None
        header = {"format": FORMAT, "format_version": FORMAT_VERSION, "paddle": paddle,
                  "selection": selection, "rows": self.rows}
        # two gzip members, one stream: the header, then the rows as they were written, copied through a
        # temp file next to the baseline (never whole in memory: a million rows' file is ~60 MB)
        fd, tmp = _create_temp(self.path)
        try:
            with os.fdopen(fd, "wb") as out, open(self.body_path, "rb") as body:
                out.write(gzip.compress((json.dumps(header, separators=(",", ":")) + "\n").encode(), mtime=0))
                shutil.copyfileobj(body, out, 1 << 20)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.discard()

    def discard(self) -> None:
        if self.body is not None:
            self.body.close()
            self.body = None
        Path(self.body_path).unlink(missing_ok=True)


# --------------------------------------------------------------------------- loading
def _spill_db() -> sqlite3.Connection:
    """A private SQLite database on disk (SQLite removes its file when it opens it: nothing is left
    behind by any ending, SIGKILL included), for what a diff would otherwise hold in memory per case."""
    db = sqlite3.connect("")
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    db.execute(f"PRAGMA cache_size=-{SPILL_CACHE_KIB}")
    return db


class Stored:
    """A loaded baseline: its header, and per (rule, backend, position) the case id, the case JSON's CRC
    and the native outcome's canonical text, spilled to disk (:func:`_spill_db`): a baseline's rows are
    never all in memory, so a diff's memory does not grow with the baseline's size."""

    def __init__(self, path: Path, header: dict[str, Any], db: sqlite3.Connection) -> None:
        self.path, self.header, self.db = path, header, db
        self._dirty = False  # some row is marked seen (a Diff has run on it)

    @property
    def paddle(self) -> dict[str, Any]:
        return dict(self.header.get("paddle") or {})

    def __len__(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM rows").fetchone()[0])

    def reset(self) -> None:
        """Every row unseen again (a new :class:`Diff` on the same baseline)."""
        if self._dirty:
            self.db.execute("UPDATE rows SET seen=0 WHERE seen=1")
            self._dirty = False

    def take(self, key: tuple[str, str, int]) -> tuple[str, int, str] | None:
        """The row at ``key`` (case id, case CRC, outcome text), marked seen; None where there is none."""
        self._dirty = True
        row = self.db.execute("UPDATE rows SET seen=1 WHERE rule=? AND backend=? AND i=? RETURNING id, crc, native",
                              key).fetchone()
        return None if row is None else (str(row[0]), int(row[1]), str(row[2]))

    def unseen(self) -> Counter[str]:
        """Rows no :meth:`take` reached, counted per ``rule@backend``."""
        out: Counter[str] = Counter()
        for rule, backend, n in self.db.execute("SELECT rule, backend, COUNT(*) FROM rows WHERE seen=0 "
                                                "GROUP BY rule, backend ORDER BY rule, backend"):
            out[f"{rule}@{backend}"] = int(n)
        return out


def load(path: Path, selection: dict[str, Any], arg: str = "--baseline") -> Stored:
    """Read and check a baseline before any work: one :class:`UsageError` naming ``arg`` for a missing
    file, a file that is not a gzip stream or is corrupt, one that is not a baseline, and a baseline of
    another selection (by name), or of a format not in :data:`FORMATS_READ`. Its rows go to disk as
    they are read (:class:`Stored`), a format-1 row keyed as format 2 keys it."""
    if not path.exists():
        raise UsageError(arg, f"{path} does not exist", "give a file written by parity --save-baseline")
    if not path.is_file():
        raise UsageError(arg, f"{path} is not a file", "give a file written by parity --save-baseline")
    db = _spill_db()
    db.execute("CREATE TABLE rows (rule TEXT, backend TEXT, i INTEGER, id TEXT, crc INTEGER, native TEXT, "
               "seen INTEGER DEFAULT 0, PRIMARY KEY (rule, backend, i)) WITHOUT ROWID")
    header: dict[str, Any] | None = None
    refill = False  # a format-1 baseline: each row's case text is read back as a Case and written again
    number = 0
    batch: list[tuple[str, str, int, str, int, str]] = []
    insert = "INSERT OR REPLACE INTO rows (rule, backend, i, id, crc, native) VALUES (?, ?, ?, ?, ?, ?)"
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                number += 1  # (named in the error line)
                data = json.loads(line)
                if header is None:
                    if not isinstance(data, dict) or data.get("format") != FORMAT:
                        raise UsageError(arg, f"{path} is not a baseline (its first line is not a "
                                         f"{FORMAT!r} header)", "give a file written by parity --save-baseline")
                    version = data.get("format_version")
                    if type(version) is not int or version not in FORMATS_READ:
                        raise UsageError(arg, f"{path} is a baseline of format {version!r}", "this version reads "
                                         f"formats {', '.join(map(str, FORMATS_READ))}: save the baseline again")
                    header = data
                    refill = version == 1
                    continue
                native, case = data["native"], data["case"]
                # (format 2's text is already the full case's; a format-1 text is completed through Case)
                case_text = Case.from_json(case).json_text() if refill else json.dumps(case, separators=(",", ":"))
                batch.append((str(data["rule"]), str(data["backend"]), int(data["i"]), str(data["id"]),
                              zlib.crc32(case_text.encode()), str(_dumps(native))))
                if len(batch) >= _BATCH:
                    db.executemany(insert, batch)
                    batch.clear()
        db.executemany(insert, batch)
    except UsageError:
        db.close()
        raise
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        db.close()
        raise UsageError(arg, f"{path} is not a readable gzip file ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())[:120]})",
                         "give a file written by parity --save-baseline") from None
    except (ValueError, KeyError, TypeError) as exc:  # (UnicodeDecodeError and JSONDecodeError are ValueErrors)
        db.close()
        raise UsageError(arg, f"{path}: line {number} is not a baseline row ({type(exc).__name__})",
                         "give a file written by parity --save-baseline, unedited") from None
    stored = Stored(path, header or {}, db)
    if header is None:
        db.close()
        raise UsageError(arg, f"{path} is empty: not a baseline", "give a file written by parity --save-baseline")
    held = len(stored)
    if header.get("rows") != held:
        db.close()
        raise UsageError(arg, f"{path} holds {held} rows where its header says {header.get('rows')!r} "
                         "(a truncated or edited file)", "save the baseline again")
    old = header.get("selection") or {}
    if not isinstance(old, dict) or old.get("slug") != selection["slug"]:
        db.close()
        what = old.get("describe", "an unknown selection") if isinstance(old, dict) else "an unknown selection"
        raise UsageError(arg, f"{path} is a baseline of another selection ({what}); this run: "
                         f"{selection['describe']}", "run with the baseline's selection, or save one of this selection")
    return stored


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
    policy: str = DEFAULT_POLICY
    """The port's strictness policy in the run: what the repro line's ``infer`` answers under."""

    @property
    def repro(self) -> str:
        """The line that runs the case on its route, the port under the run's policy."""
        return one_line_repro(self.case, self.backend, self.policy)

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

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Change:
        """A change back from :meth:`to_json` (or a line of :data:`CASES_FILE`)."""
        reruns = data.get("rerun_outcomes")
        return cls(str(data["class"]), str(data["rule"]), str(data["backend"]), Case.from_json(data["case"]),
                   Outcome.from_json(data["old_outcome"]), Outcome.from_json(data["new_outcome"]),
                   str(data["old_verdict"]), str(data["new_verdict"]), [str(d) for d in data["diffs"]],
                   None if reruns is None else [Outcome.from_json(o) for o in reruns],
                   str(data.get("policy") or DEFAULT_POLICY))

    def json_line(self) -> str:
        """``to_json()`` as one line of JSON, the case's text spliced in last (:meth:`Case.json_text`)."""
        return str(_dumps(self._fields()))[:-1] + ',"case":' + self.case.json_text() + "}"

    def example(self) -> dict[str, Any]:
        """What baseline.json shows of the case: the whole outcomes and the case's JSON are in the
        cases file (and the repro line holds the case)."""
        return {k: v for k, v in self._fields().items() if k not in ("old_outcome", "new_outcome", "rerun_outcomes")}

    def _fields(self) -> dict[str, Any]:
        named = named_policy(self.policy)  # (named as parity's per-case records name it: not the default)
        return {"class": self.klass, "rule": self.rule, "backend": self.backend, "id": self.case.case_id,
                "describe": self.case.describe(), "old": str(self.old), "new": str(self.new),
                "old_verdict": self.old_verdict, "new_verdict": self.new_verdict, "diffs": self.diffs,
                **({"policy": named} if named else {}), "repro": self.repro, "reruns": self.rerun_note,
                # both outcomes whole, for a reader that re-judges them (parity/crosscheck.py)
                "old_outcome": self.old.to_json(), "new_outcome": self.new.to_json(),
                "rerun_outcomes": None if self.reruns is None else [o.to_json() for o in self.reruns]}


class Diff:
    """The comparison of a run's native outcomes with a stored baseline, filled as the run tallies.

    Its memory does not grow with the run: the changed cases wait for their triage on disk (in a
    private SQLite file, :func:`_spill_db`), their re-runs' outcomes and the triaged changes too; in
    memory are counts (per class, per group, per map cell) and the first :data:`MARKDOWN_PER_CLASS`
    changes of each class (:attr:`kept`), what the summaries show. :meth:`ordered` reads every change
    back, one at a time."""

    def __init__(self, stored: Stored, policy: str = DEFAULT_POLICY) -> None:
        self.stored = stored
        self.policy = policy
        """The run's port policy: the changes' repro lines name it (the diff itself is native against native)."""
        stored.reset()
        self.unchanged = 0
        self.normalised = 0
        """Of the unchanged cases, those whose raw texts differ (a reason's source line or build path)."""
        self.normalised_shown: list[dict[str, str]] = []
        """The first :data:`NORMALISED_SHOWN` of them, with both raw texts."""
        self.uncompared: Counter[str] = Counter()
        self.kept: dict[str, list[Change]] = {}
        """Per class, its first :data:`MARKDOWN_PER_CLASS` changes in triage order (every one: :meth:`ordered`)."""
        self.groups: dict[str, Counter[str]] = {}
        """``rule@backend`` -> its changes per class."""
        self.cells: dict[str, dict[tuple[str, str], dict[str, int]]] = {}
        """rule -> map cell (mesh, first input's placement: pages.map_label) -> its changes per class."""
        self._counts: Counter[str] = Counter()
        self._pending = 0
        self._judged = -1
        """The last changed case triaged (:meth:`judge`)."""
        self._missing: Counter[str] | None = None
        self.db = _spill_db()
        self.db.execute('CREATE TABLE pending (k INTEGER PRIMARY KEY, rule TEXT, backend TEXT, invalid INTEGER, '
                        'old TEXT, new TEXT, "case" TEXT)')
        self.db.execute("CREATE TABLE reruns (k INTEGER, outcome TEXT)")
        self.db.execute("CREATE INDEX reruns_k ON reruns (k)")
        self.db.execute("CREATE TABLE changes (seq INTEGER PRIMARY KEY, rank INTEGER, line TEXT)")
        self.db.execute("CREATE INDEX changes_rank ON changes (rank, seq)")

    def record(self, rule: str, backend: str, index: int, case: Case, native: Outcome) -> None:
        self._missing = None
        row = self.stored.take((rule, backend, index))
        if row is None:
            self.uncompared[f"{rule}@{backend}: not in the baseline"] += 1
            return
        case_id, crc, old_text = row
        case_text = case.json_text()
        if case_id != case.case_id or crc != zlib.crc32(case_text.encode()):
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
        self.db.execute('INSERT INTO pending (k, rule, backend, invalid, old, new, "case") '
                        "VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (self._pending, rule, backend, int(input_problem(case) is not None), old_text, new_text,
                         case_text))
        self._pending += 1

    @property
    def pending(self) -> int:
        """Changed cases recorded and not triaged yet (:meth:`judge`)."""
        return self._pending

    def missing(self) -> Counter[str]:
        """Baseline rows this run did not reach (a group it did not run, an interrupt)."""
        if self._missing is None:
            self._missing = Counter({f"{group}: in the baseline, not in this run": n
                                     for group, n in self.stored.unseen().items()})
        return Counter(self._missing)

    def _candidates(self, backend: str, after: int) -> list[tuple[int, Case]]:
        rows = self.db.execute('SELECT k, "case" FROM pending WHERE invalid=1 AND backend=? AND k>? ORDER BY k '
                               'LIMIT ?', (backend, after, RERUN_CHUNK)).fetchall()
        return [(int(k), Case.from_json(json.loads(text))) for k, text in rows]

    def recheck(self, rerun: Callable[[str, list[Case]], Sequence[Outcome]], times: int = RERUNS) -> None:
        """Run each candidate -- a changed case on invalid input (where Paddle may read memory it never set):
        a valid input's outcome is not re-run, noise there would be a bug of Paddle's, for the table to show,
        not for this class to absorb -- ``times`` more under this build, a backend's candidates together
        through ``rerun(backend, cases)`` (fresh workers each time; at most :data:`RERUN_CHUNK` cases a
        call), and keep the outcomes: a candidate is unstable when one of them differs from the sweep's
        (:meth:`judge`).

        Why re-runs: the measured noise moves with the process's memory layout (a new worker pool, an
        allocation before the fork server: 2026-12-01-native-notes.md), which a fresh pool changes; the
        baseline's build cannot be re-run from here, so the evidence is this build's. A case whose noise
        the re-runs miss is *changed (invalid input)*: listed and counted, not failed."""
        backends = [str(b) for (b,) in self.db.execute(
            "SELECT DISTINCT backend FROM pending WHERE invalid=1 ORDER BY backend")]
        for backend in backends:
            after = -1
            while chunk := self._candidates(backend, after):
                positions, cases = [k for k, _ in chunk], [c for _, c in chunk]
                for _ in range(times):
                    outcomes = rerun(backend, cases)
                    self.db.executemany("INSERT INTO reruns (k, outcome) VALUES (?, ?)",
                                        [(k, outcome_text(o)) for k, o in zip(positions, outcomes, strict=True)])
                after = positions[-1]

    def judge(self) -> None:
        """Triage every changed case with the oracle (both answers judged on the case as run), a chunk
        of them at a time read back from disk; each triaged change is counted and written back."""
        from ..oracle.kernels import MODELS
        from ..oracle.report import Judge

        judge = Judge()
        while rows := self.db.execute('SELECT k, rule, backend, invalid, old, new, "case" FROM pending WHERE k>? '
                                      "ORDER BY k LIMIT ?", (self._judged, RERUN_CHUNK)).fetchall():
            for k, rule, backend, invalid, old_text, new_text, case_text in rows:
                case = Case.from_json(json.loads(case_text))
                old, new = Outcome.from_json(json.loads(old_text)), Outcome.from_json(json.loads(new_text))
                rerun_texts = [str(t) for (t,) in self.db.execute("SELECT outcome FROM reruns WHERE k=? ORDER BY "
                                                                  "rowid", (k,))]
                reruns = [Outcome.from_json(json.loads(t)) for t in rerun_texts] if rerun_texts else None
                # the sweep's (or the baseline's) outcome carrying two runs' answers is evidence as well
                varies = new.varies is not None or old.varies is not None or any(
                    o.not_run is None and not same_outcome(new_text, outcome_text(o)) for o in reruns or ())
                mine = [t for o in (new, *(reruns or ())) if o.not_run is None for t in outcome_texts(o)]
                old_seen = any(same_outcome(x, y) for x in outcome_texts(old) for y in mine)
                if rule in MODELS:
                    a = judge.native(case, old, backend).verdict.label
                    b = judge.native(case, new, backend).verdict.label
                else:
                    a = b = "not judged (no numpy kernel)"
                klass = triage(old, new, a, b, bool(invalid), varies, old_seen)
                self._add(Change(klass, rule, backend, case, old, new, a, b, cell_diffs(case, old, new), reruns,
                                 self.policy))
                self._judged = k  # (a triage that failed half-way goes on from here when called again)
        self.db.execute("DELETE FROM pending")
        self.db.execute("DELETE FROM reruns")
        self._pending = 0
        self._judged = -1

    def _add(self, change: Change) -> None:
        """Count a triaged change, keep it while its class has room, and write it to disk."""
        klass = change.klass
        self._counts[klass] += 1
        self.groups.setdefault(f"{change.rule}@{change.backend}", Counter())[klass] += 1
        cell = self.cells.setdefault(change.rule, {}).setdefault(map_label(map_key(change.case)), {})
        cell[klass] = cell.get(klass, 0) + 1
        kept = self.kept.setdefault(klass, [])
        if len(kept) < MARKDOWN_PER_CLASS:
            kept.append(change)
        self.db.execute("INSERT INTO changes (rank, line) VALUES (?, ?)", (_ORDER.index(klass), change.json_line()))

    @property
    def counts(self) -> Counter[str]:
        return Counter(self._counts)

    @property
    def total(self) -> int:
        """Every triaged change, unstable ones included."""
        return sum(self._counts.values())

    @property
    def changes(self) -> list[Change]:
        """Every triaged change in triage order, read back from disk: for a small diff (a test's); a
        report reads :meth:`ordered` one at a time, or :attr:`kept`."""
        return [Change.from_json(json.loads(line)) for (line,) in
                self.db.execute("SELECT line FROM changes ORDER BY seq").fetchall()]

    def changed(self) -> int:
        return sum(n for k, n in self._counts.items() if k != UNSTABLE)

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
        head = ("group", *CLASSES, UNSTABLE)
        rows = [(g, *(n[k] for k in (*CLASSES, UNSTABLE))) for g, n in self.groups.items()]
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
                 "(shown to vary: answered from memory it never set; not counted as changed), with the baseline's "
                 "answer among this build's; *changed (unstable)* = shown to vary, and none of this build's "
                 "answers is the baseline's: counted as changed. Verdicts: the oracle's, "
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
        for klass in _ORDER:
            total, items = c[klass], self.kept.get(klass, [])
            if not total:
                continue
            lines += ["", f"## {klass} ({total})", ""]
            if total > len(items):
                lines += [f"The first {len(items)} of {total}; every one is in `{CASES_FILE}`.", ""]
            for ch in items:
                repro = ch.repro
                lines += [f"* `{ch.rule}@{ch.backend}` `{ch.case.case_id}`: `{ch.case.describe()}`",
                          f"  - old ({old_name}): `{_one_line(str(ch.old))}` — {ch.old_verdict}",
                          f"  - new ({new_name}): `{_one_line(str(ch.new))}` — {ch.new_verdict}",
                          *(f"  - {d}" for d in ch.diffs[:6]),
                          *([f"  - re-runs under {new_name}: {ch.rerun_note}"] if ch.rerun_note else []),
                          f"  - repro under {old_name}: `{repro}`",
                          f"  - repro under {new_name}: `{repro}`"]
        return "\n".join(lines) + "\n"

    def ordered(self) -> Iterator[Change]:
        """Every changed case in report order, regressions first, unstable last, read from disk one at a time."""
        cursor = self.db.cursor()  # (its own: the caller may ask for counts meanwhile)
        for (line,) in cursor.execute("SELECT line FROM changes ORDER BY rank, seq"):
            yield Change.from_json(json.loads(line))

    def to_json(self, new_paddle: dict[str, Any], selection: dict[str, Any], interrupted: str = "") -> dict[str, Any]:
        """baseline.json: the summary; the changed cases themselves are in :data:`CASES_FILE`."""
        examples = {klass: [ch.example() for ch in self.kept[klass][:EXAMPLES_PER_CLASS]]
                    for klass in _ORDER if self.kept.get(klass)}
        groups = {g: {k: n[k] for k in _ORDER if n[k]} for g, n in self.groups.items()}
        return {"format": DIFF_FORMAT, "format_version": DIFF_FORMAT_VERSION,
                "status": self.status(interrupted), "summary": self.summary_line(new_paddle),
                "old": {"paddle": self.stored.paddle, "selection": self.stored.header.get("selection"),
                        "file": str(self.stored.path)},
                "new": {"paddle": new_paddle, "selection": selection},
                "counts": {k: self._counts[k] for k in _ORDER}, "unchanged": self.unchanged,
                "unchanged_normalised": self.normalised, "normalised_examples": self.normalised_shown,
                "uncompared": dict((self.uncompared + self.missing()).most_common()),
                "groups": groups, "cases_file": CASES_FILE, "cases_total": self.total,
                "examples_per_class": EXAMPLES_PER_CLASS, "examples": examples}

    def write_cases(self, path: Path) -> None:
        """Every changed case, one JSON line each in report order, gzip, written line by line through a
        temp file next to ``path`` (removed on any way out but the rename: a signal, a full disk)."""
        fd, tmp = _create_temp(path)
        try:
            with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0) as gz:
                cursor = self.db.cursor()
                for (line,) in cursor.execute("SELECT line FROM changes ORDER BY rank, seq"):
                    gz.write((line + "\n").encode("utf-8"))  # (each line is Change.json_line)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @property
    def regressed(self) -> int:
        return self._counts[REGRESSED]

    @property
    def incomplete(self) -> bool:
        return bool(self.uncompared) or bool(self.missing())


__all__ = ["CASES_FILE", "CHANGED_INVALID", "CHANGED_UNSTABLE", "CLASSES", "DIFF_FORMAT", "EXAMPLES_PER_CLASS",
           "FORMAT", "FORMATS_READ", "FORMAT_VERSION", "MARKDOWN_PER_CLASS", "RERUNS", "Diff", "Saver", "Stored",
           "build_text", "cell_diffs", "load", "outcome_text", "outcome_texts", "reason_key", "same_outcome", "triage",
           "unvalidated"]
