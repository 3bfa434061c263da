"""Judging whole grids: per-case verdicts, per-rule tables, distinct bugs and their repros.

Communication is counted per case as the inputs whose wanted dist attr differs from the given
one ("resharded"), and among those the ones that need a collective ("with communication": a
Shard or Partial the answer does not keep; Replicate -> Shard/Partial is a local slice).
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..case import Case
from ..errors import SpmdError
from ..notation import ShardError
from ..ops.registry import PROFILES as RULE_PROFILES
from ..ops.registry import rule_function
from ..outcome import ErrorInfo, Outcome
from ..reporting import REPRO_PYTHON, markdown_table
from ..types import DistAttr, DistTensorSpec, SpmdResult, mesh_dims_of, plain_mapping
from .kernels import MODELS
from .native import NATIVE, NO_ANSWER, native_error
from .simulator import (
    LOCAL_STATS,
    OP_REJECTS,
    RULE_ERROR,
    SOUND,
    UNRUNNABLE,
    UNSOUND,
    Verdict,
    data_key,
    explain,
    kernel_attrs,
    op_rejects,
    simulate,
)

#: every rule profile the oracle judges (the registry's: paddle, pr72918, proposed)
PROFILE_NAMES = tuple(RULE_PROFILES)
PORT_REFUSES = "port refuses (Paddle does not validate this input)"
"""The start of a port profile's error text where the port rejects the input as invalid
(InvalidSpecError): Paddle's rule does not validate it, and answers, crashes or raises instead."""
BUG_LABELS = (UNSOUND, UNRUNNABLE, LOCAL_STATS)
TABLE_COLUMNS = ("cases", SOUND, UNSOUND, UNRUNNABLE, LOCAL_STATS, RULE_ERROR, OP_REJECTS)


def reshard_kind(given: DistTensorSpec, wanted: DistAttr) -> str:
    """``""`` (kept), ``"local"`` (only slicing) or ``"comm"`` (needs a collective)."""
    if tuple(given.dims_mapping) == tuple(wanted.dims_mapping) and given.partial_dims == wanted.partial_dims:
        return ""
    if given.partial_dims - frozenset(wanted.partial_dims):
        return "comm"
    for axis, entry in enumerate(given.dims_mapping):
        held = mesh_dims_of(entry)
        if not held:
            continue
        want = mesh_dims_of(wanted.dims_mapping[axis]) if axis < len(wanted.dims_mapping) else ()
        if want[:len(held)] != held:  # local only when the wanted cut refines the held one (nested cut)
            return "comm"
    return "local"


@dataclass(frozen=True)
class Judged:
    """One case under one profile (``route``: the native route the answer came from, for the
    ``native`` profile)."""

    case: Case
    profile: str
    answer: SpmdResult | None
    error: str
    verdict: Verdict
    resharded: int = 0
    with_comm: int = 0
    route: str = ""


@dataclass
class Judge:
    """Judges cases, caching verdicts by (shapes, kernel attributes, answer)."""

    sync_group: str = "batch"
    cache: dict[tuple, Verdict] = field(default_factory=dict)
    simulations: int = 0

    def __call__(self, case: Case, profile: str) -> Judged:
        """The port's answer to ``case`` under rule profile ``profile``, judged."""
        try:
            answer: SpmdResult | None = rule_function(case.rule, profile)(*case.inputs, *case.attr_values())
            error = ""
        except (SpmdError, ValueError, NotImplementedError, RuntimeError, TypeError) as exc:
            info = ErrorInfo.from_exception(exc)
            answer, error = None, (PORT_REFUSES + ": " if info.port_invalid else "Paddle raises ") + str(info)
        return self.answered(case, profile, answer, error)

    def answered(self, case: Case, profile: str, answer: SpmdResult | None, error: str, route: str = "",
                 garbage_ok: bool = False) -> Judged:
        """Judge a given answer (``answer``, or None and the ``error`` text, whose kind is the text
        before its first ``:``). ``garbage_ok``: the answer may be anything Paddle returned; one the
        simulator cannot even place is ``unrunnable`` instead of an error of ours."""
        na = op_rejects(case)
        if na is not None:
            return Judged(case, profile, answer, error, na, route=route)
        if answer is None:
            return Judged(case, profile, None, error, Verdict(RULE_ERROR, detail=error, kind=error.split(":")[0]),
                          route=route)
        key = (data_key(case), tuple(case.mesh.shape), tuple(sorted(kernel_attrs(case).items())), str(answer))
        verdict = self.cache.get(key)
        if verdict is None:
            try:
                verdict = simulate(case, answer, sync_group=self.sync_group)
            except (IndexError, KeyError, ValueError, TypeError, ShardError) as exc:
                if not garbage_ok:
                    raise
                verdict = Verdict(UNRUNNABLE, detail=f"{type(exc).__name__}: {exc}",
                                  kind="the answer cannot be laid out on the mesh", symptoms="layout")
            self.cache[key] = verdict
            self.simulations += 1
        try:
            kinds = _reshards(case, answer)
        except (IndexError, KeyError, ValueError, TypeError):
            if not garbage_ok:
                raise
            kinds = []  # (an answer that cannot be placed: nothing to count)
        return Judged(case, profile, answer, "", verdict, sum(1 for k in kinds if k), kinds.count("comm"), route)

    def native(self, case: Case, outcome: Outcome, route: str) -> Judged:
        """Paddle's own outcome of ``case`` on ``route``, judged (the mapping: :mod:`.native`)."""
        if outcome.not_run is not None:
            return Judged(case, NATIVE, None, f"not run: {outcome.not_run}",
                          Verdict(NO_ANSWER, detail=outcome.not_run, kind="no answer from Paddle in this run"),
                          route=route)
        if outcome.not_rechecked is not None and op_rejects(case) is None:  # (the op's refusal needs no answer)
            why = f"not re-checked: {outcome.not_rechecked}"
            return Judged(case, NATIVE, None, why,
                          Verdict(NO_ANSWER, detail=why, kind="an answer not re-checked in this run"), route=route)
        error = native_error(outcome)
        return self.answered(case, NATIVE, None if error else outcome.result, error or "", route, garbage_ok=True)


def _reshards(case: Case, answer: SpmdResult) -> list[str]:
    named = case.named_inputs()
    kinds = []
    for name, attr in zip(case.spec.result_inputs, answer.inputs, strict=False):
        spec = named.get(name)
        if spec is not None:
            kinds.append(reshard_kind(spec, attr))
    return kinds


# --------------------------------------------------------------------------- tables
@dataclass
class RuleTally:
    counts: Counter = field(default_factory=Counter)
    resharded: int = 0
    with_comm: int = 0
    answered: int = 0

    def add(self, j: Judged) -> None:
        self.counts["cases"] += 1
        self.counts[j.verdict.label] += 1
        if j.answer is not None and j.verdict.label != OP_REJECTS:
            self.answered += 1
            self.resharded += j.resharded
            self.with_comm += j.with_comm


def columns(tallies: Iterable[RuleTally]) -> tuple[str, ...]:
    """The verdict columns of a profile's table: :data:`TABLE_COLUMNS`, plus ``no-answer`` where some
    case has it (the ``native`` profile, when Paddle left a case unanswered in this run)."""
    return TABLE_COLUMNS + ((NO_ANSWER,) if any(t.counts[NO_ANSWER] for t in tallies) else ())


def profile_table(tallies: dict[str, RuleTally], first: str = "rule", total_row: bool = True) -> str:
    """A profile's table, a row per rule (``first``: what a row is) and the total row."""
    cols = columns(tallies.values())
    header = (first, *cols, "resharded inputs", "with communication")
    rows = []
    total = RuleTally()
    for rule, t in tallies.items():
        rows.append((rule, *(t.counts[c] for c in cols), t.resharded, t.with_comm))
        total.counts.update(t.counts)
        total.resharded += t.resharded
        total.with_comm += t.with_comm
    if total_row:
        rows.append(("total", *(total.counts[c] for c in cols), total.resharded, total.with_comm))
    return markdown_table(header, rows, aligned=True)


def totals(tallies: dict[str, RuleTally]) -> dict[str, int]:
    """The total row of a profile's table, by column (what ``--profile native`` is held to on 3.3.1:
    the ``paddle`` profile's)."""
    total = RuleTally()
    for t in tallies.values():
        total.counts.update(t.counts)
        total.resharded += t.resharded
        total.with_comm += t.with_comm
    return {**{c: total.counts[c] for c in columns(tallies.values())}, "resharded": total.resharded,
            "with_communication": total.with_comm}


def comparison_table(paddle: dict[str, list[Judged]], proposed: dict[str, list[Judged]]) -> str:
    """Over the cases the op can run. Communication is summed over the cases both profiles answer,
    and separately over those where both answers are sound (the pure efficiency comparison)."""
    header = ("rule", "applicable", "sound", "resharded inputs", "with communication", "with comm., both sound")
    rows = []

    def arrow(a: int, b: int) -> str:
        return f"{a} -> {b}"

    for rule in paddle:
        pairs = [(a, b) for a, b in zip(paddle[rule], proposed[rule], strict=True) if a.verdict.label != OP_REJECTS]
        both = [(a, b) for a, b in pairs if a.answer is not None and b.answer is not None]
        sound = [(a, b) for a, b in both if a.verdict.label == SOUND and b.verdict.label == SOUND]
        sound_a = sum(a.verdict.label == SOUND for a, _ in pairs)
        rows.append((rule, len(pairs), arrow(sound_a, sum(b.verdict.label == SOUND for _, b in pairs)),
                     arrow(sum(a.resharded for a, _ in both), sum(b.resharded for _, b in both)),
                     arrow(sum(a.with_comm for a, _ in both), sum(b.with_comm for _, b in both)),
                     arrow(sum(a.with_comm for a, _ in sound), sum(b.with_comm for _, b in sound))))
    return markdown_table(header, rows, aligned=True)


def rule_error_groups(paddle: dict[str, list[Judged]], proposed: dict[str, list[Judged]] | None) -> str:
    """Paddle's rule raising on cases the op can run, grouped by error; what proposed does there."""
    groups: dict[tuple[str, str], list[tuple[Judged, Judged | None]]] = {}
    for rule, rows in paddle.items():
        others = proposed[rule] if proposed is not None else [None] * len(rows)
        for a, b in zip(rows, others, strict=True):
            if a.verdict.label == RULE_ERROR:
                pattern = re.sub(r"\d+", "#", a.error)[:160]
                groups.setdefault((rule, pattern), []).append((a, b))
    if not groups:
        return "none\n"
    lines = []
    for (rule, pattern), items in sorted(groups.items(), key=lambda kv: (kv[0][0], -len(kv[1]))):
        a, _ = items[0]
        line = f"* {rule}: {len(items)} cases: `{pattern}` (e.g. `{a.case.describe()}`)"
        if proposed is not None:
            verdicts = Counter(b.verdict.label for _, b in items if b is not None)
            line += "; proposed: " + ", ".join(f"{label} {n}" for label, n in verdicts.most_common())
        lines.append(line)
    return "\n".join(lines) + "\n"


def first_profile(rows: dict[str, list[Judged]]) -> str:
    return next((js[0].profile for js in rows.values() if js), "?")


def without_refused(paddle: dict[str, list[Judged]], *others: dict[str, list[Judged]]
                    ) -> list[dict[str, list[Judged]]]:
    """``paddle`` and ``others`` (the same cases in the same order) without the cases whose input
    the port refuses as invalid under ``paddle`` (:data:`PORT_REFUSES`): where the port validates an
    input Paddle's rule does not, Paddle answers (or crashes) and the two cannot be held equal."""
    keep = {rule: [i for i, j in enumerate(rows) if not j.error.startswith(PORT_REFUSES)]
            for rule, rows in paddle.items()}
    return [{rule: [rows[rule][i] for i in idx] for rule, idx in keep.items()} for rows in (paddle, *others)]


def verdict_differences(first: dict[str, list[Judged]], second: dict[str, list[Judged]], shown: int = 10) -> str:
    """The cases judged differently under two profiles (the same cases in the same order): how many
    per pair of labels, and the first few with the repro of the second's answer."""
    pairs: Counter[tuple[str, str, str]] = Counter()
    examples: list[tuple[Judged, Judged]] = []
    cases = 0
    for rule, rows in first.items():
        for a, b in zip(rows, second.get(rule, ()), strict=False):
            cases += 1
            if a.verdict.label != b.verdict.label:
                pairs[(rule, a.verdict.label, b.verdict.label)] += 1
                if len(examples) < shown:
                    examples.append((a, b))
    if not pairs:
        return f"every one of the {cases} cases has the same verdict under both\n"
    refused = sum(1 for rows in first.values() for a in rows if a.error.startswith(PORT_REFUSES))
    lines = [f"{sum(pairs.values())} of {cases} cases judged differently ({first_profile(first)} refuses the input "
             f"of {refused} cases as invalid):", ""]
    lines += [f"* {rule}: {n} cases {la} -> {lb}" for (rule, la, lb), n in pairs.most_common()]
    lines.append("")
    for a, b in examples:
        route = f"--backend {b.route} " if b.route else ""
        lines += [f"* `{a.case.case_id}`: {a.profile} {a.verdict.label} (`{a.answer if a.answer else a.error}`), "
                  f"{b.profile} {b.verdict.label} (`{b.answer if b.answer else b.error}`)",
                  f"  `{REPRO_PYTHON} -m paddle_spmd_port infer {route}--case-json '{a.case.json_text()}'`"]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- distinct bugs
@dataclass
class Bug:
    key: tuple[str, str, str, str]
    cases: list[Judged] = field(default_factory=list)

    @property
    def rule(self) -> str:
        return self.key[1]

    @property
    def label(self) -> str:
        return self.key[2]

    @property
    def kind(self) -> str:
        return self.key[3]


def bug_key(j: Judged) -> tuple[str, str, str, str]:
    v = j.verdict
    kind = v.kind
    if v.repaired is not None:
        kind += f"; once the per-channel inputs follow C: {v.repaired.label}"
        if v.repaired.kind:
            kind += f" ({v.repaired.kind})"
    return (j.profile, j.case.rule, v.label, kind)


def _size(case: Case) -> tuple:
    x = case.named_inputs().get("x")
    numel = math.prod(x.shape) if x is not None else 0
    given = sum(1 for s in case.inputs if s is not None and (any(m != -1 for m in s.dims_mapping) or s.partial_dims))
    return (math.prod(case.mesh.shape), len(case.mesh.shape), given, numel)


def repro_route(case: Case) -> int:
    """How the case can be shown on real Paddle: 0 a launch case, 1 a plain 2-rank script,
    2 Paddle's answer from the registry, 3 not from Python."""
    if _launch_case(case) is not None:
        return 0
    if _partial_x_script_fits(case):
        return 1
    if MODELS[case.rule].registry_repro:
        return 2
    return 3


def _partial_x_script_fits(case: Case) -> bool:
    """A rule with a Partial-x script (its model's ``partial_x_script``), as the dygraph backward
    reaches it from a Partial x on 2 ranks: x Partial, everything else replicated (the forward
    rule replicates the rest)."""
    named = case.named_inputs()
    x = named["x"]
    if MODELS[case.rule].partial_x_script is None or x is None or tuple(case.mesh.shape) != (2,) \
            or x.partial_dims != {0}:
        return False
    if any(m != -1 for m in x.dims_mapping):
        return False
    return all(not s.partial_dims and all(m == -1 for m in s.dims_mapping)
               for n, s in named.items() if n != "x" and s is not None)


def distinct_bugs(judged: Iterable[Judged]) -> list[Bug]:
    groups: dict[tuple[str, str, str, str], Bug] = {}
    for j in judged:
        if j.verdict.label in BUG_LABELS:
            groups.setdefault(bug_key(j), Bug(bug_key(j))).cases.append(j)
    bugs = list(groups.values())
    for bug in bugs:
        bug.cases.sort(key=lambda j: (repro_route(j.case), _size(j.case)))
    return sorted(bugs, key=lambda b: (b.key[0], b.rule, b.label, -len(b.cases)))


# --------------------------------------------------------------------------- real-Paddle repros
def _launch_case(case: Case) -> dict[str, Any] | None:
    """The case as a ``launch`` case (x placed, everything else replicated), when one exists (the
    op-specific fields: the rule's model's ``launch``)."""
    launch_fields = MODELS[case.rule].launch
    if launch_fields is None:
        return None
    named = case.named_inputs()
    x = named["x"]
    if x is None or x.partial_dims or x.coshard or len(case.mesh.shape) > 2:  # (launch writes no co-shard here yet)
        return None
    for name, spec in named.items():
        if name in ("x", "out_grad", "y_grad", "reserve_space") or spec is None:
            continue
        if any(m != -1 for m in spec.dims_mapping) or spec.partial_dims:
            return None
    attrs = dict(zip((n for n, _ in case.spec.attrs), case.attr_values(), strict=True))
    placements = ["R"] * len(case.mesh.shape)
    mapping = plain_mapping(x.dims_mapping, "the launch repro")
    used = [m for m in mapping if m != -1]
    if len(mapping) != len(x.shape) or any(not 0 <= m < len(placements) for m in used) or len(set(used)) < len(used):
        return None  # an x placement no tensor can have (an invalid input only Paddle's answer gets this far with)
    for axis, m in enumerate(mapping):
        if m >= 0:
            placements[m] = f"S({axis})"
    data: dict[str, Any] = {"case_id": f"oracle-{case.case_id}", "shape": list(x.shape),
                            "mesh_shape": list(case.mesh.shape), "placements": placements,
                            "weight": named.get("scale") is not None, "bias": named.get("bias") is not None}
    fields = launch_fields(attrs, tuple(x.shape))
    if fields is None:
        return None
    data.update(fields)
    return data


def real_paddle_repro(bug: Bug, index: str, report_dir: str | Path = "") -> tuple[str, dict[str, str]]:
    """Markdown telling how to see the bug on real Paddle, and files to write next to the report
    (into ``report_dir``: the commands name each file by that path, so they run as pasted from the
    directory the report was written from)."""

    def where(name: str) -> str:
        return shlex.quote(str(Path(report_dir) / name))

    j = bug.cases[0]
    case = j.case
    files: dict[str, str] = {}
    case_json = json.dumps(case.to_json(), separators=(",", ":"))
    route = f"--backend {j.route} " if j.route else ""
    infer = (f"Paddle's own answer for this case (native {'route ' + j.route if j.route else 'backends'}, one "
             f"process):\n\n    {REPRO_PYTHON} -m paddle_spmd_port infer {route}--case-json '{case_json}'\n")
    launch = _launch_case(case)
    if launch is not None and j.profile in ("paddle", NATIVE):
        name = f"repro-{index}.jsonl"
        files[name] = json.dumps(launch, separators=(",", ":")) + "\n"
        ranks = math.prod(case.mesh.shape)
        note = ""
        if case.rule.endswith("_grad"):
            note = " (the launch runs the forward and then this backward; the grad rule is reached only if the " \
                   "forward runs)"
        return (f"On real Paddle ({ranks} ranks){note}:\n\n    {REPRO_PYTHON} -m paddle_spmd_port launch "
                f"--nproc {ranks} --cases {where(name)}\n\n{infer}"), files
    x = case.named_inputs()["x"]
    script = MODELS[case.rule].partial_x_script
    if x is not None and script is not None and _partial_x_script_fits(case):  # (it fits only with an x)
        attrs = dict(zip((n for n, _ in case.spec.attrs), case.attr_values(), strict=True))
        name = f"repro-{index}.py"
        named = case.named_inputs()
        files[name] = script(tuple(x.shape), attrs, named.get("scale") is not None, named.get("bias") is not None)
        return (f"On real Paddle (2 ranks; a Partial x reaches {case.rule} through the dygraph backward; the "
                "launch package's cases place x as Shard/Replicate only, so this is a plain script):\n\n"
                f"    python -m paddle.distributed.launch --nproc_per_node 2 {where(name)}\n\n{infer}"), files
    why = MODELS[case.rule].not_on_ranks or "no launch case expresses these placements"
    return f"Not shown on real ranks ({why}). {infer}", files


def bug_section(bug: Bug, index: str, sync_group: str, report_dir: str | Path = "") -> tuple[str, dict[str, str]]:
    """The markdown of one distinct bug, and its repro files (named relative to ``report_dir``)."""
    j = bug.cases[0]
    v = j.verdict
    modes = Counter(c.case.case_id.rsplit("/", 1)[-1] if "/" in c.case.case_id else "-" for c in bug.cases)
    symptoms = Counter(c.verdict.symptoms for c in bug.cases)
    seen = "; ".join(f"`{s}` {n}" for s, n in symptoms.most_common(4)) + (" ..." if len(symptoms) > 4 else "")
    lines = [f"### {index}. {bug.rule}: {bug.label} — {bug.kind or 'n/a'}", "",
             f"{len(bug.cases)} cases" + (f" (modes: {', '.join(f'{m} {n}' for m, n in sorted(modes.items()))})"
                                          if len(modes) > 1 or "-" not in modes else "") + f"; symptoms: {seen}.",
             "",
             f"* minimal case: `{j.case.case_id}`: `{j.case.describe()}`",
             f"* {j.profile}'s answer: `{j.answer}`",
             f"* what goes wrong: {v.summary()}"]
    if v.repaired is not None:
        lines.append(f"* with the per-channel inputs resharded to follow x's channel axis: {v.repaired.summary()}")
    if j.answer is not None:
        right = explain(j.case, j.answer, sync_group=sync_group)
        for tensor, claims in right.items():
            lines.append(f"* `{tensor}`: the values the ranks hold would be right under "
                         + (", ".join(f"`{c}`" for c in claims[:6]) if claims else "no claim at all (the values "
                            "themselves are wrong)"))
    text, files = real_paddle_repro(bug, index, report_dir)
    lines += ["", text]
    return "\n".join(lines), files


def summary_json(tallies: dict[str, dict[str, RuleTally]], bugs: Sequence[Bug], seconds: float,
                 simulations: int) -> dict[str, Any]:
    return {
        "seconds": round(seconds, 2),
        "simulations": simulations,
        "profiles": {p: {rule: {**{c: t.counts[c] for c in columns(ts.values())}, "resharded": t.resharded,
                                "with_communication": t.with_comm} for rule, t in ts.items()}
                     for p, ts in tallies.items()},
        "totals": {p: totals(ts) for p, ts in tallies.items()},
        "bugs": [{"profile": b.key[0], "rule": b.rule, "label": b.label, "kind": b.kind, "cases": len(b.cases),
                  "example": b.cases[0].case.to_json(), "answer": str(b.cases[0].answer),
                  "verdict": b.cases[0].verdict.to_json()} for b in bugs],
    }

