"""``parity --merge DIR...``: join the reports of a run's ``--shard K/M`` parts into one.

Each part's ``parity.json`` is read back; the merged report counts what the unsplit run would:
per group, every verdict, cell and port-rejects-invalid count summed; per rule, the selected,
compared and uncompared cases and every uncompared reason summed; the per-case records
(``parity-cases.jsonl.gz``) joined in part order. The examples kept are the parts' firsts, up to
the per-class limits of :mod:`.report`.

Refused before anything is written (exit 2, one line): a directory without a readable part
report, a report that is not a ``--shard`` part, parts of different runs (another selection,
seed, number of parts, port policy, Paddle or port core), or one part given twice. Failing closed: a part
that is missing, or that did not finish (interrupted, aborted), or parts whose cases do not add
up to the selection's, make the merged report incomplete -- its first line says which, every
case of a missing part counts as uncompared, and the exit status is 3 (1 if some part found a
mismatch), never 0.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..ops.kit.strictness import DEFAULT_POLICY
from ..runctl.exits import EXIT_FINDING, EXIT_INCOMPLETE, EXIT_OK, UsageError, error_text
from ..runctl.paths import check_output_dir, check_output_file, refuse_other_selection
from .output import write_parity_report
from .report import (
    CASES_FILE,
    DONE,
    INTERRUPTED,
    GroupTally,
    ParityReport,
    RuleCoverage,
)

#: Selection fields that may differ between the parts of one run.
_PER_PART = ("shard", "slug", "describe")


def _read_part(directory: Path) -> dict[str, Any]:
    path = directory / "parity.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError("--merge", f"{directory} holds no readable parity report ({exc})",
                         "give the --report-dir of each --shard K/M run") from None
    selection = data.get("selection") if isinstance(data, dict) else None
    shard = selection.get("shard") if isinstance(selection, dict) else None  # ("selection": 5 was an exit 4)
    if not (isinstance(shard, list) and len(shard) == 2 and all(isinstance(v, int) for v in shard)):
        raise UsageError("--merge", f"{directory}/parity.json is not the report of a --shard K/M run",
                         "give the --report-dir of each part of one sharded run")
    return data


def _whole(selection: dict[str, Any]) -> dict[str, Any]:
    """The selection of the unsplit run a part belongs to."""
    whole = {k: v for k, v in selection.items() if k not in _PER_PART}
    k, m = selection["shard"]
    suffix, words = f"_shard{k}of{m}", f"; part {k} of {m}"
    whole["slug"] = str(selection.get("slug", "")).removesuffix(suffix)
    whole["describe"] = str(selection.get("describe", "")).replace(words, "")
    whole["shard"] = None
    whole["policy"] = selection.get("policy") or DEFAULT_POLICY  # (a part written before the policy: strict)
    return whole


def check_parts(parts: list[tuple[str, list[int], dict[str, Any]]], arg: str = "--merge") -> tuple[int, list[int]]:
    """Of ``(where, [K, M], what was run)`` per part: the number of parts M and the part numbers
    missing, after checking that every part is of one run (the same M and the same ``what``) and
    that none is given twice; else :class:`UsageError` naming ``arg`` (the tools' merges use it too)."""
    first_where, first_shard, first_what = parts[0]
    m = first_shard[1]
    seen: dict[int, str] = {}
    for where, (k, parts_of), what in parts:
        if parts_of != m:
            raise UsageError(arg, f"{where} is part {k} of {parts_of}, {first_where} a part of {m}",
                             "give the parts of one sharded run")
        if what != first_what:
            diff = sorted(key for key in set(what) | set(first_what) if what.get(key) != first_what.get(key))
            raise UsageError(arg, f"{where} is a part of another run than {first_where} "
                             f"({', '.join(diff)} differ)", "give the parts of one sharded run")
        if k in seen:
            raise UsageError(arg, f"part {k} of {m} is given twice ({seen[k]} and {where})",
                             "give each part once")
        seen[k] = where
    return m, [k for k in range(1, m + 1) if k not in seen]


def read_tool_parts(files: Sequence[str], tool: str, check: Callable[[dict[str, Any]], object] | None = None
                    ) -> tuple[list[dict[str, Any]], int, list[int]]:
    """The ``--json`` files of a tool's ``--shard`` parts (tools/fuzz.py, tools/mutants.py), read and
    checked by :func:`check_parts`: their data in part order, the number of parts M, the parts missing.
    ``check(data)`` reads what the tool will (a KeyError or TypeError there: a part of the wrong
    shape, edited or cut). A file that is not such a part is a :class:`UsageError` naming ``--merge``."""
    parts = []
    for name in files:
        try:
            data = json.loads(Path(name).read_text())
            parts.append((name, list(data["shard"]), dict(data["config"]), data))
            if check is not None:
                check(data)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise UsageError("--merge", f"{name} is not the --json file of a {tool} --shard run ({exc})",
                             "give the --json FILE of each part") from None
    m, missing = check_parts([(name, shard, config) for name, shard, config, _ in parts])
    return [data for *_, data in sorted(parts, key=lambda p: p[1][0])], m, missing


def _tally(data: dict[str, Any]) -> GroupTally:
    t = GroupTally(data["rule"], data["backend"], data["state"], data["cases"], data["cells"], data["matching_cells"],
                   dict(data["verdicts"]), {}, float(data["native_seconds"]), float(data["port_seconds"]),
                   dict(data["invalid_native"]))
    for verdict, examples in data["examples"].items():
        for example in examples:
            if t.wants(verdict):
                t.keep(example)
    t.not_rechecked = int(data.get("not_rechecked") or 0)
    t.refusals = dict(data.get("refusals") or {})  # (a part written before the refusal classes: none)
    t.answered = dict(data.get("answered") or {})  # (a part written before the answered classes: none)
    for mesh, placement, counts in data.get("map") or []:  # (a part written before the maps: none)
        t.merged_map[(mesh, placement)] = dict(counts)
    return t


def _add_tally(into: GroupTally, part: GroupTally) -> None:
    into.cases += part.cases
    into.cells += part.cells
    into.matching_cells += part.matching_cells
    for verdict, n in part.verdicts.items():
        into.verdicts[verdict] = into.verdicts.get(verdict, 0) + n
    for cell, counts in part.merged_map.items():
        into_cell = into.merged_map.setdefault(cell, {})
        for verdict, n in counts.items():
            into_cell[verdict] = into_cell.get(verdict, 0) + n
    for status, n in part.invalid_native.items():
        into.invalid_native[status] = into.invalid_native.get(status, 0) + n
    into.not_rechecked += part.not_rechecked
    for klass, n in part.refusals.items():
        into.refusals[klass] = into.refusals.get(klass, 0) + n
    for klass, n in part.answered.items():
        into.answered[klass] = into.answered.get(klass, 0) + n
    for verdict, examples in part.examples.items():
        for example in examples:
            if into.wants(verdict):
                into.keep(example)
    into.native_seconds += part.native_seconds
    into.port_seconds += part.port_seconds
    if part.state != DONE:
        into.state = part.state


def merge_reports(dirs: list[Path]) -> tuple[ParityReport, list[Path], list[int], int]:
    """The merged report of the parts in ``dirs`` (checked to be of one run, each once), their
    directories in part order, the missing part numbers, and the number of parts."""
    parts = [(d, _read_part(d)) for d in dirs]
    m, missing = check_parts([(str(d), data["selection"]["shard"],
                               {**_whole(data["selection"]), "paddle": data.get("paddle"),
                                "port_core": data.get("port_core")}) for d, data in parts])
    whole = _whole(parts[0][1]["selection"])
    parts.sort(key=lambda p: p[1]["selection"]["shard"][0])
    present = [data["selection"]["shard"][0] for _, data in parts]
    first = parts[0][1]
    report = ParityReport(selection=whole, allow_uncompared=bool(first.get("allow_uncompared")))
    report.paddle = dict(first.get("paddle") or {})
    report.profile = dict(first.get("profile") or {})
    report.started = min(float(data["started"]) for _, data in parts)
    report.finished = max(float(data.get("finished") or data["started"]) for _, data in parts)
    per_rule: dict[str, dict[str, Any]] = {}
    for _directory, data in parts:
        for key, tally_json in data["rules"].items():
            tally = _tally(tally_json)
            if key in report.tallies:
                _add_tally(report.tallies[key], tally)
            else:
                report.tallies[key] = tally
        for rule, cov in data["coverage"].items():
            into = per_rule.setdefault(rule, {"selected": 0, "compared": 0, "cells": 0, "routes": cov["routes"],
                                              "reasons": {}, "lacking": {}})
            into["selected"] += cov["selected"]
            into["compared"] += cov["compared"]
            if cov["compared"]:
                into["cells"] = cov["cells_compared"] // cov["compared"]
            for why, n in cov["uncompared_reasons"].items():
                into["reasons"][why] = into["reasons"].get(why, 0) + n
            for why, n in (cov.get("lacking_reasons") or {}).items():  # (a report before release-lacks has none)
                into["lacking"][why] = into["lacking"].get(why, 0) + n
        for note in data.get("notes") or []:
            if note not in report.notes:
                report.notes.append(note)
        if data.get("interrupted") and not report.interrupted:
            report.interrupted = str(data["interrupted"])
    wanted = whole.get("random")
    short: list[str] = []
    over: list[str] = []
    for rule in whole.get("rules") or list(per_rule):
        into = per_rule.setdefault(rule, {"selected": 0, "compared": 0, "cells": 0, "routes": [], "reasons": {},
                                          "lacking": {}})
        if isinstance(wanted, int) and into["selected"] != wanted:  # a missing part's cases count as uncompared
            gap = wanted - into["selected"]
            why = f"not run: parts {', '.join(map(str, missing))} of {m} missing" if missing else \
                f"not run: the parts hold {into['selected']:,} of the selection's {wanted:,} cases"
            if gap > 0:
                into["reasons"][why] = into["reasons"].get(why, 0) + gap
                into["selected"] = wanted
            else:  # more cases than the selection has: not parts of one run as written
                over.append(rule)
            short.append(rule)
        report.coverage[rule] = RuleCoverage.counted(rule, into["selected"], into["cells"], into["routes"],
                                                     into["compared"], into["reasons"], into["lacking"])
    unfinished = [data["selection"]["shard"][0] for _, data in parts if not data.get("complete")]
    # missing cases are uncompared (the status line says FAILED CLOSED); unfinished parts or too many
    # cases leave the report incomplete (RUNNING or ABORTED)
    report.complete = not unfinished and not over
    report.notes.append(f"merged from parts {', '.join(map(str, present))} of {m}: "
                        + ", ".join(str(d) for d, _ in parts))
    if missing:
        report.notes.append(f"INCOMPLETE: parts {', '.join(map(str, missing))} of {m} missing; their cases are "
                            "counted as uncompared")
    if unfinished:
        report.notes.append(f"INCOMPLETE: parts {', '.join(map(str, unfinished))} did not finish")
        for tally in report.tallies.values():
            if tally.state == DONE:
                continue
            tally.state = INTERRUPTED if report.interrupted else tally.state
    if short and not missing:
        report.notes.append(f"INCOMPLETE: the parts' cases do not add up to the selection for {', '.join(short)}")
    return report, [d for d, _ in parts], missing, m


def _join_cases(dirs: list[Path], out: Path) -> None:
    """The parts' per-case files, one after the other (gzip members concatenate into one file)."""
    target = out / CASES_FILE
    tmp = target.with_name(target.name + ".part")
    with open(tmp, "wb") as fh:
        for directory in dirs:
            source = directory / CASES_FILE
            if source.is_file():
                with open(source, "rb") as part:
                    shutil.copyfileobj(part, fh)
            else:  # an empty member keeps the file a valid gzip stream
                fh.write(gzip.compress(b""))
    tmp.replace(target)


def merge_main(args: argparse.Namespace) -> int:
    """The ``--merge`` command: check, merge, write, print; the exit status of the merged report."""
    dirs = [Path(d) for d in args.merge]
    for flag, value in (("--random", args.random), ("--shard", args.shard), ("--sample", args.sample),
                        ("--max-cases", args.max_cases), ("--coshard", args.coshard or None),
                        ("--list", args.list or None), ("--backend", args.backend),
                        ("--policy", args.policy)):  # (the parts' policy is the merge's: they must agree)
        if value is not None:
            raise UsageError("--merge", f"cannot be combined with {flag} (a merge runs nothing)",
                             "give --merge DIR... with --report-dir, --junit or --allow-uncompared only")
    try:
        report, order, missing, m = merge_reports(dirs)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a part's parity.json cut or edited by hand
        raise UsageError("--merge", f"a part's parity.json lacks what a report holds ({error_text(exc)})",
                         "give the --report-dir of each part of one sharded run, unedited") from None
    report.allow_uncompared = report.allow_uncompared or args.allow_uncompared
    slug = report.selection.get("slug") or "merged"
    out = check_output_dir(args.report_dir or Path(f"reports/parity-{slug}"), "--report-dir")
    if out.resolve() in {d.resolve() for d in dirs}:
        raise UsageError("--report-dir", f"{out} is one of the parts merged", "give another directory")
    refuse_other_selection(out / "parity.json", {"describe": "the merged parts", **report.selection, "slug": slug},
                           args.replace_report)
    junit = check_output_file(args.junit, "--junit") if args.junit else None
    out.mkdir(parents=True, exist_ok=True)
    _join_cases(order, out)
    write_parity_report(report, out, junit)
    print(report.table())
    print("\ncoverage (a case is compared when at least one native route answered it):")
    print("\n".join(report.coverage_lines()))
    for note in report.notes:
        print(note)
    print(f"\n{report.status_line()}")
    print(f"merged {len(dirs)} of {m} parts; report in {out}/parity.md")
    if report.total_mismatches:
        return EXIT_FINDING
    if missing or not report.complete or report.empty or report.all_lacking or \
            (report.total_uncompared and not report.allow_uncompared):
        return EXIT_INCOMPLETE
    return EXIT_OK
