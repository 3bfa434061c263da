"""Check two parity reports for equal per-case rows: the same command must give the same verdicts.

    .venv/bin/python tools/same_cases.py REPORT_A REPORT_B [--limit N] [--json FILE] [--quiet]

A report is a ``parity --report-dir`` directory (a run, or ``parity --merge``'s of shards). Compared:
every row of its per-case file (``parity-cases.jsonl.gz``: each case that is not a match or a same
error, keyed by rule, route and case id, every field whole: verdict, both outcomes, the diffs, the
case) and, per group (rule@route), its state, case count and verdict counts from ``parity.json`` (the
rows leave the matching cases out; the counts hold them). Nothing else: not the timings, the start
and end times, the report's paths or its selection's shard (a merge of shards has the same rows as
the whole run). The rows may come in any order (workers and shards write them in theirs).

Exit 0 equal; 1 a difference (each listed, the first ``--limit`` in full: the key, the field, both
values); 2 bad usage (a path that is not a parity report); 3 not compared: either report is partial
(interrupted, a group not done), so equal rows would prove nothing; 4 an internal error. How the
determinism of the native routes is checked with it: docs/measurements/2026-12-07-determinism.md.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from paddle_spmd_port.reporting import write_atomic
from paddle_spmd_port.runctl.command import run_command
from paddle_spmd_port.runctl.exits import EXIT_FINDING, EXIT_INCOMPLETE, EXIT_OK, UsageError
from paddle_spmd_port.runctl.grammar import ArgumentParser, count, path_text
from paddle_spmd_port.runctl.paths import check_output_file

PROG = "same_cases"
CASES_FILE = "parity-cases.jsonl.gz"
SUMMARY_FILE = "parity.json"
#: A group's fields compared (the rest are timings, examples kept, the verdict map: rows and counts say it all).
GROUP_FIELDS = ("state", "cases", "verdicts")

Key = tuple[str, str, str]


def _report(path: Path, arg: str) -> tuple[dict[str, Any], Path]:
    """A report directory's parity.json and its per-case file; a usage error naming ``arg`` otherwise."""
    summary, cases = path / SUMMARY_FILE, path / CASES_FILE
    if not path.is_dir() or not summary.is_file() or not cases.is_file():
        raise UsageError(arg, f"{path} is not a parity report", f"give a --report-dir holding {SUMMARY_FILE} "
                         f"and {CASES_FILE}")
    try:
        data = json.loads(summary.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(arg, f"{summary} is not readable JSON ({' '.join(str(exc).split())[:120]})",
                         "give a parity report") from None
    if not isinstance(data, dict) or not isinstance(data.get("rules"), dict):
        raise UsageError(arg, f"{summary} has no groups", "give a parity report")
    return data, cases


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def _keyed(path: Path) -> dict[Key, list[str]]:
    """(rule, route, case id) -> the row's JSON texts (sorted keys), more than one if the key repeats."""
    out: dict[Key, list[str]] = {}
    for row in _rows(path):
        key = (str(row.get("rule")), str(row.get("backend")), str(row.get("id")))
        out.setdefault(key, []).append(json.dumps(row, sort_keys=True))
    for texts in out.values():
        texts.sort()
    return out


def partial(data: dict[str, Any]) -> str:
    """Why a report is partial ("" if complete)."""
    if data.get("interrupted"):
        return f"interrupted by {data['interrupted']}"
    undone = [k for k, g in data["rules"].items() if g.get("state") != "done"]
    if undone:
        return f"groups not done: {', '.join(undone[:5])}"
    return ""


def _field_diffs(a: str, b: str) -> list[str]:
    """The fields of two rows that differ, ``field: A != B`` (values cut to 300 characters)."""
    ra, rb = json.loads(a), json.loads(b)
    return [f"{k}: {json.dumps(ra.get(k))[:300]} != {json.dumps(rb.get(k))[:300]}"
            for k in sorted(set(ra) | set(rb)) if ra.get(k) != rb.get(k)]


def differences(a: dict[str, Any], rows_a: dict[Key, list[str]], b: dict[str, Any],
                rows_b: dict[Key, list[str]]) -> list[tuple[str, list[str]]]:
    """Every difference: (what, its details), groups first, then rows in key order."""
    out: list[tuple[str, list[str]]] = []
    for group in sorted(set(a["rules"]) | set(b["rules"])):
        ga, gb = a["rules"].get(group), b["rules"].get(group)
        if ga is None or gb is None:
            out.append((f"group {group}", [f"only in report {'A' if gb is None else 'B'}"]))
            continue
        details = [f"{f}: {json.dumps(ga.get(f), sort_keys=True)} != {json.dumps(gb.get(f), sort_keys=True)}"
                   for f in GROUP_FIELDS if ga.get(f) != gb.get(f)]
        if details:
            out.append((f"group {group}", details))
    for key in sorted(set(rows_a) | set(rows_b)):
        ta, tb = rows_a.get(key, []), rows_b.get(key, [])
        if ta == tb:
            continue
        what = f"case {key[0]}@{key[1]} {key[2]}"
        if not ta or not tb:
            verdict = json.loads((ta or tb)[0]).get("verdict")
            out.append((what, [f"a row ({verdict}) only in report {'A' if ta else 'B'} (the other: a match, a "
                               "same error, or not run)"]))
        elif len(ta) != len(tb):
            out.append((what, [f"{len(ta)} rows in A, {len(tb)} in B"]))
        else:
            out.append((what, [d for x, y in zip(ta, tb, strict=True) if x != y for d in _field_diffs(x, y)]))
    return out


def _main(argv: Sequence[str] | None) -> int:
    ap = ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0] if __doc__ else None,
                        epilog="Exit 0 equal, 1 a difference (listed), 3 either report partial.")
    ap.add_argument("reports", type=path_text, nargs=2, metavar=("REPORT_A", "REPORT_B"),
                    help="two parity report directories (--report-dir of a run, or of parity --merge)")
    ap.add_argument("--limit", type=count, default=20, help="differences printed in full (default 20)")
    ap.add_argument("--json", type=path_text, default=None, metavar="FILE",
                    help="also write every difference as JSON to FILE")
    ap.add_argument("--quiet", action="store_true", help="print only the last line")
    args = ap.parse_args(argv)
    if args.json is not None:
        args.json = check_output_file(args.json, "--json")
    (a, cases_a), (b, cases_b) = _report(args.reports[0], "REPORT_A"), _report(args.reports[1], "REPORT_B")
    why = [f"{name}: {p}" for name, p in (("A", partial(a)), ("B", partial(b))) if p]
    if why:
        print(f"same_cases: NOT COMPARED: a partial report ({'; '.join(why)})")
        return EXIT_INCOMPLETE
    rows_a, rows_b = _keyed(cases_a), _keyed(cases_b)
    found = differences(a, rows_a, b, rows_b)
    if not args.quiet:
        for what, details in found[:args.limit]:
            print(what)
            for d in details:
                print(f"    {d}")
        if len(found) > args.limit:
            print(f"... {len(found) - args.limit} more differences")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(args.json, json.dumps({"equal": not found, "differences": [
            {"what": w, "details": d} for w, d in found]}, indent=1) + "\n")
    rows = sum(len(v) for v in rows_a.values())
    groups = len(a["rules"])
    if found:
        print(f"same_cases: DIFFERENT: {len(found)} differences ({groups} groups, {rows:,} rows in A)")
        return EXIT_FINDING
    print(f"same_cases: EQUAL: {groups} groups, {sum(g.get('cases', 0) for g in a['rules'].values()):,} cases, "
          f"{rows:,} per-case rows")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(PROG, lambda: _main(argv))


if __name__ == "__main__":
    sys.exit(main())
