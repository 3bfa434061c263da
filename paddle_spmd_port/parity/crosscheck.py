"""Hold a release profile's hand-written known differences to a measured baseline diff.

A release profile (:mod:`paddle_spmd_port.releases`) lists how an older Paddle release answers differently from
3.3.1, the release the port reproduces. A baseline diff (:mod:`.baseline`) measures exactly that:
a baseline saved under the older release, diffed under 3.3.1 (or the other way round), lists every
(rule, route, case) whose native outcome changed. This module reads the diff's ``baseline.json``
(and the ``baseline-cases.jsonl.gz`` next to it: every changed case) and holds each changed
case's release-side outcome to the port's answer, as the release's own sweep would (the port
equals 3.3.1 cell by cell): the first known difference whose matcher recognises it explains it
(:meth:`ReleaseProfile.explain`'s order). Three kinds of changed case
are outside any profile, counted apart and not findings:

    unstable          an invalid input Paddle answers from memory it never set, shown to vary by a
                      re-run (the diff's class)
    port-rejects      an invalid input the port refuses, and the release's outcome is no answer the
                      sweep holds against it (a crash, an error, an unreachable route, a malformed
                      answer): nothing to explain, so no profile lists them
    unreachable both  the route cannot express the case in either build (the reason's words moved,
                      e.g. a typo fixed in the op's build error; a moved source line alone is no
                      changed case: the diff compares reasons without line numbers): never compared

The diff's *changed (invalid input)* (an invalid input answered or crashed on by both builds, not
shown to vary) is held to the profile like any change: port-rejects where the port refuses the
input, else explained by a listed difference or a finding, as the release's sweep would judge it.

What is left is a finding::

    unexplained   a changed case none of the above accounts for
    unobserved    a (known difference, rule) pair no changed case of the diff shows, for a rule
                  the diff's selection ran (a co-shard-only difference needs the co-shard set)

Exit: 1 on any unexplained case or unobserved pair (a profile that lists a difference the
release does not have, or misses one it has); 3 when the diff itself was incomplete (cases it
could not compare are not cross-checked) and nothing else was found; 0 when the diff is complete
and the profile accounts for it exactly; 2 for bad input (one line, before any work). The release
is the diff's side that is not 3.3.1 (``--profile`` names another profile to hold to it).

    python tools/release_crosscheck.py reports/diff-3.1.0/baseline.json

Several diffs of one release pair (say one per route, each run as its own selection) are checked
as one: a difference is observed when any of them shows it.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..case import Case
from ..compare import compare, input_invalid_for
from ..outcome import Outcome, port_outcome
from ..releases import AGREEING, MATCHERS, KnownDifference, ReleaseProfile, known_versions, release_for
from ..reporting import markdown_table, write_atomic
from ..runctl.command import run_command
from ..runctl.exits import EXIT_FINDING, EXIT_INCOMPLETE, EXIT_OK, UsageError
from ..runctl.grammar import ArgumentParser, count, path_text
from ..runctl.paths import check_output_file

#: The release the profiles are written against (the port's default).
REFERENCE = "3.3.1"
PORT_REJECTS, UNREACHABLE_BOTH = "port-rejects", "unreachable both"
PROG = "tools/release_crosscheck.py"


@dataclass
class Result:
    """One cross-check: which changed cases each difference explains, and what is left over."""

    profile: ReleaseProfile
    release_side: str
    """``old`` or ``new``: the side of the diff that is the release (the other is 3.3.1)."""
    explained: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    """(difference name, rule, route) -> changed cases it explains."""
    unstable: Counter[str] = field(default_factory=Counter)
    """rule@route -> unstable cases (explained by their class)."""
    outside: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(``port-rejects`` or ``unreachable both``, rule@route) -> changed cases no profile lists."""
    unexplained: list[dict[str, Any]] = field(default_factory=list)
    unobserved: list[tuple[str, str]] = field(default_factory=list)
    """(difference name, rule) pairs with no changed case."""
    not_checked: list[tuple[str, str]] = field(default_factory=list)
    """(difference name, rule) pairs the diff's selection cannot show (rule not run, no co-shard set)."""
    uncompared: int = 0
    first: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    """(difference name or ``unstable``, rule, route) -> the first changed case it explains (:func:`sample`)."""

    @property
    def code(self) -> int:
        if self.unexplained or self.unobserved:
            return EXIT_FINDING
        return EXIT_INCOMPLETE if self.uncompared else EXIT_OK


def _explaining(differences: Sequence[KnownDifference], case: Case, port: Outcome,
                release: Outcome) -> KnownDifference | str | None:
    """The first difference whose matcher recognises ``release``'s outcome against the port's, as
    :meth:`ReleaseProfile.explain` picks it; ``"port-rejects"`` when the sweep would not hold the
    outcome against the port at all (port-rejects-invalid); None when nothing accounts for it."""
    if port.error is not None and port.error.port_invalid and release.result is None:
        return PORT_REJECTS  # (a crash, an error, no route: nothing the sweep holds against a refusal)
    cmp = compare(case.spec, port, release, input_invalid_for(case, port, release))  # as the sweep compares
    if cmp.verdict == "port-rejects-invalid":
        return PORT_REJECTS
    if cmp.verdict in AGREEING:
        return None  # the release agrees with the port: then 3.3.1 is the side that moved
    for d in differences:
        if case.rule in d.rules and MATCHERS[d.kind](d, case, port, release, cmp):
            return d
    return None


def load_diff(path: Path) -> dict[str, Any]:
    """A ``baseline.json`` written by ``parity --baseline``, checked before any work (one UsageError),
    with ``cases``: every changed case, read from the ``baseline-cases.jsonl.gz`` it names (next to it).
    A file that holds its cases inline (a :func:`sample`, or a diff of format 1) is read as it is."""
    valid = "give the baseline.json a parity --baseline run wrote"
    if not path.is_file():
        raise UsageError("BASELINE_JSON", f"{path} is not a file", valid)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError("BASELINE_JSON", f"{path} is not readable JSON ({type(exc).__name__})", valid) from None
    if not isinstance(data, dict) or not {"old", "new", "counts"} <= set(data) \
            or not ({"cases", "cases_file"} & set(data)):
        raise UsageError("BASELINE_JSON", f"{path} is not a baseline diff (no old/new/counts/cases_file)", valid)
    if "cases_file" in data:
        data["cases"] = _read_cases(path, data)
    cases = data["cases"]
    if not isinstance(cases, list) or any(not isinstance(c, dict) or "old_outcome" not in c or "new_outcome" not in c
                                          or "case" not in c for c in cases):
        raise UsageError("BASELINE_JSON", f"{path}'s cases do not carry both outcomes whole (an older diff)",
                         "run the parity --baseline diff again with this version")
    return data


def _read_cases(path: Path, data: dict[str, Any]) -> list[dict[str, Any]]:
    """The changed cases of the diff ``path`` summarises, from the cases file it names (one JSON line each)."""
    name = data["cases_file"]
    if not isinstance(name, str) or Path(name).name != name:
        raise UsageError("BASELINE_JSON", f"{path} names no cases file next to it ({name!r})",
                         "give the baseline.json a parity --baseline run wrote")
    cases_path = path.parent / name
    valid = f"keep {name} next to {path.name}, as parity --baseline wrote them"
    cases: list[dict[str, Any]] = []
    try:
        with gzip.open(cases_path, "rt", encoding="utf-8") as fh:
            cases.extend(json.loads(line) for line in fh)
    except FileNotFoundError:
        raise UsageError("BASELINE_JSON", f"{cases_path} (the changed cases of {path}) does not exist",
                         valid) from None
    except (OSError, EOFError, zlib.error, ValueError) as exc:  # (a truncated gzip: EOFError; bad JSON: ValueError)
        raise UsageError("BASELINE_JSON", f"{cases_path} is not a readable cases file ({type(exc).__name__})",
                         valid) from None
    if data.get("cases_total") != len(cases):
        raise UsageError("BASELINE_JSON", f"{cases_path} holds {len(cases)} cases where {path.name} says "
                         f"{data.get('cases_total')!r} (a truncated or edited file)", valid)
    return cases


def release_side(data: dict[str, Any]) -> str:
    """The side of the diff that is not 3.3.1 (``old`` or ``new``)."""
    versions = {side: str((data[side].get("paddle") or {}).get("version", "?")) for side in ("old", "new")}
    others = [side for side, v in versions.items() if v != REFERENCE]
    if len(others) != 1:
        raise UsageError("BASELINE_JSON", f"the diff is {versions['old']} -> {versions['new']}",
                         f"cross-check a diff of one release with {REFERENCE} (either way round)")
    return others[0]


def merge(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Several diffs of one release pair (e.g. one per route, each its own selection) as one: their
    changed cases, counts and uncompared cases added up, the rules of every part's selection."""
    if len(parts) == 1:
        return parts[0]
    builds = {(str(p["old"]["paddle"].get("version")), str(p["new"]["paddle"].get("version"))) for p in parts}
    if len(builds) != 1:
        pairs = ", ".join(f"{a} -> {b}" for a, b in sorted(builds))
        raise UsageError("BASELINE_JSON", f"the diffs are of different release pairs ({pairs})",
                         "give diffs of one release pair")
    first = parts[0]
    rules = list(dict.fromkeys(r for p in parts for r in (p["old"].get("selection") or {}).get("rules") or ()))
    uncompared: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    for p in parts:
        uncompared.update({k: int(n) for k, n in (p.get("uncompared") or {}).items()})
        counts.update({k: int(n) for k, n in p["counts"].items()})
    selection = {**(first["old"].get("selection") or {}), "rules": rules,
                 "random": any((p["old"].get("selection") or {}).get("random") for p in parts),
                 "describe": " + ".join(str((p["old"].get("selection") or {}).get("describe")) for p in parts)}
    return {**first, "summary": " + ".join(str(p.get("summary", "")) for p in parts),
            "old": {**first["old"], "selection": selection}, "counts": dict(counts),
            "uncompared": dict(uncompared), "cases": [c for p in parts for c in p["cases"]],
            "parts": [str(p.get("summary", "")) for p in parts]}


def check(data: dict[str, Any], profile: ReleaseProfile, side: str) -> Result:
    """Cross-check a loaded diff with ``profile``; ``side`` is the release's side of the diff."""
    result = Result(profile, side)
    result.uncompared = sum(int(n) for n in (data.get("uncompared") or {}).values())
    for item in data["cases"]:
        case = Case.from_json(item["case"])
        rule, route = case.rule, str(item["backend"])
        if item["class"] == "unstable":
            result.unstable[f"{rule}@{route}"] += 1
            result.first.setdefault(("unstable", rule, route), item)
            continue
        old, new = Outcome.from_json(item["old_outcome"]), Outcome.from_json(item["new_outcome"])
        release = old if side == "old" else new
        if old.unreachable is not None and new.unreachable is not None:
            found: KnownDifference | str | None = UNREACHABLE_BOTH
        else:
            found = _explaining(profile.differences, case, port_outcome(case), release)
        if found is None:
            result.unexplained.append(item)
        elif isinstance(found, str):
            result.outside[(found, f"{rule}@{route}")] += 1
            result.first.setdefault((found, rule, route), item)
        else:
            result.explained[(found.name, rule, route)] += 1
            result.first.setdefault((found.name, rule, route), item)
    selection = data["old"].get("selection") or {}
    ran = set(selection.get("rules") or ())
    coshard_run = not selection.get("random")  # the grid (or a sample of it) holds the co-shard set
    seen = {(name, rule) for name, rule, _ in result.explained}
    for d in profile.differences:
        for rule in sorted(d.rules):
            if rule not in ran or (d.coshard_only and not coshard_run):
                result.not_checked.append((d.name, rule))
            elif (d.name, rule) not in seen:
                result.unobserved.append((d.name, rule))
    return result


#: What a sample keeps of each changed case: what :func:`check` and :func:`render` read (the repro line is
#: the case again, so it goes).
_SAMPLE_KEYS = ("class", "rule", "backend", "id", "case", "old", "new", "old_outcome", "new_outcome", "diffs")


def sample(data: dict[str, Any], result: Result) -> dict[str, Any]:
    """The diff cut to the first changed case each (difference or unstable, rule, route) explains, and
    every unexplained one: small enough to commit (tests/data/crosscheck/), the same cross-check result."""
    keep = [{k: item[k] for k in _SAMPLE_KEYS if k in item} for item in (*result.first.values(), *result.unexplained)]
    for item in keep:
        item["diffs"] = item.get("diffs", [])[:3]
    # one file, its cases inline (what load_diff reads as it is): no cases file named, no examples
    summary = {k: v for k, v in data.items() if k not in ("cases_file", "cases_total", "examples")}
    return {**summary, "cases": keep, "sample_of": {"cases": len(data["cases"]), "kept": len(keep)}}


def render(result: Result, data: dict[str, Any], limit: int = 20) -> str:
    """The cross-check as text: per difference and rule the cases explained (by route), then what is left."""
    side = result.release_side
    lines = [f"profile {result.profile.version} ({len(result.profile.differences)} known differences) held to the "
             f"diff {data['summary'] if 'summary' in data else ''}".rstrip(),
             f"release side: {side} ({data[side]['paddle'].get('version')}), each outcome held to the port's answer "
             f"(= {REFERENCE}'s)", ""]
    per: dict[tuple[str, str], Counter[str]] = {}
    for (name, rule, route), n in result.explained.items():
        per.setdefault((name, rule), Counter())[route] += n
    rows: list[tuple[Any, ...]] = []
    for d in result.profile.differences:
        for rule in sorted(d.rules):
            routes = per.get((d.name, rule), Counter())
            state = ("not checked" if (d.name, rule) in result.not_checked else
                     "UNOBSERVED" if (d.name, rule) in result.unobserved else "observed")
            rows.append((d.name, rule, sum(routes.values()),
                         ", ".join(f"{r} {n:,}" for r, n in sorted(routes.items())) or "-", state))
    lines += [markdown_table(("difference", "rule", "cases", "per route", "state"), rows), ""]
    if result.unstable:
        lines.append(f"unstable (invalid input, explained by its class): {sum(result.unstable.values())} "
                     f"({', '.join(f'{k} {n}' for k, n in sorted(result.unstable.items()))})")
    for bucket in (PORT_REJECTS, UNREACHABLE_BOTH):
        groups = {g: n for (b, g), n in result.outside.items() if b == bucket}
        if groups:
            lines.append(f"{bucket} (outside any profile): {sum(groups.values())} "
                         f"({', '.join(f'{k} {n}' for k, n in sorted(groups.items()))})")
    lines.append(f"explained: {sum(result.explained.values()):,} changed cases; unexplained: "
                 f"{len(result.unexplained):,}; unobserved (difference, rule) pairs: {len(result.unobserved)}")
    if result.unexplained:
        groups = Counter(f"{c['rule']}@{c['backend']} {c['class']}" for c in result.unexplained)
        lines += ["", "unexplained changed cases, by rule@route and class:"]
        lines += [f"  {n:6,}  {g}" for g, n in groups.most_common()]
        lines += ["", f"first {min(limit, len(result.unexplained))}:"]
        for c in result.unexplained[:limit]:
            lines += [f"  {c['rule']}@{c['backend']} {c['id']} ({c['class']}): old {c['old']} / new {c['new']}",
                      *(f"      {d}" for d in c.get("diffs", [])[:3]),
                      f"      {c.get('repro', '(repro: the case above, through infer --case-json)')}"]
    if result.unobserved:
        lines += ["", "unobserved: listed in the profile, shown by no changed case of the diff:"]
        lines += [f"  {name} on {rule}" for name, rule in result.unobserved]
    if result.uncompared:
        lines += ["", f"the diff left {result.uncompared:,} cases uncompared: not cross-checked"]
    verdict = {EXIT_OK: "AGREE", EXIT_FINDING: "DISAGREE", EXIT_INCOMPLETE: "INCOMPLETE"}[result.code]
    lines += ["", f"crosscheck {result.profile.version}: {verdict}: {sum(result.explained.values()):,} explained, "
                  f"{sum(result.unstable.values())} unstable, {sum(result.outside.values())} outside, "
                  f"{len(result.unexplained):,} unexplained, "
                  f"{len(result.unobserved)} unobserved"]
    return "\n".join(lines) + "\n"


def _main(argv: Sequence[str] | None) -> int:
    ap = ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("diffs", type=path_text, nargs="+", metavar="BASELINE_JSON",
                    help="the baseline.json of a parity --baseline run: one release against 3.3.1, either way round "
                         "(several: diffs of one release pair, e.g. one per route, checked as one)")
    # --release: elsewhere --profile names a rule profile (paddle, pr72918, proposed); --profile, its
    # first name here, still accepted
    ap.add_argument("--release", "--profile", dest="release", default=None, choices=known_versions(),
                    metavar="VERSION",
                    help="the release profile to hold to the diff (default: the release side's version); "
                         f"one of {', '.join(known_versions())} (--profile is the same flag)")
    ap.add_argument("--json", type=path_text, default=None, metavar="FILE",
                    help="also write the result as JSON to FILE")
    ap.add_argument("--sample-out", type=path_text, default=None, metavar="FILE",
                    help="also write the diff cut to one changed case per difference, rule and route (and every "
                         "unexplained one) to FILE: a fixture small enough to commit")
    ap.add_argument("--limit", type=count, default=20, help="unexplained cases printed in full (default 20)")
    args = ap.parse_args(argv)
    for flag in ("json", "sample_out"):
        if getattr(args, flag) is not None:
            setattr(args, flag, check_output_file(getattr(args, flag), "--" + flag.replace("_", "-")))
    data = merge([load_diff(path) for path in args.diffs])
    side = release_side(data)
    version = args.release or str(data[side]["paddle"].get("version"))
    try:
        profile = release_for(version)
    except ValueError:
        raise UsageError("--release", f"the release side is Paddle {version}, which has no profile",
                         f"name one with --release: {', '.join(known_versions())}") from None
    result = check(data, profile, side)
    print(render(result, data, args.limit), end="")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(args.json, json.dumps({
            "profile": profile.version, "code": result.code,
            "explained": [{"difference": n, "rule": r, "route": b, "cases": c}
                          for (n, r, b), c in sorted(result.explained.items())],
            "unstable": dict(result.unstable),
            "outside": [{"bucket": b, "group": g, "cases": n} for (b, g), n in sorted(result.outside.items())],
            "unobserved": [list(p) for p in result.unobserved],
            "not_checked": [list(p) for p in result.not_checked], "uncompared": result.uncompared,
            "unexplained": [{k: c.get(k) for k in ("class", "rule", "backend", "id", "old", "new", "diffs", "repro")}
                            for c in result.unexplained]}, indent=1) + "\n")
    if args.sample_out is not None:
        args.sample_out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(args.sample_out, json.dumps(sample(data, result), separators=(",", ":"), sort_keys=True) + "\n")
    return result.code


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(PROG, lambda: _main(argv))


__all__ = ["REFERENCE", "Result", "check", "load_diff", "main", "merge", "release_side", "render", "sample"]
