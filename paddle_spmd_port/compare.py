"""Cell-by-cell comparison of two outcomes of one case, and the class of each case.

Cells: for every returned input and output attr, its dims_mapping, its partial dims and its
mesh; plus one cell for the error (family and normalised message, or "no error").

Classes::

    match                 every cell equal, neither raised
    both-raise-same       both raised the same error family with the same message
    port-rejects-invalid  the port raised InvalidSpecError: Paddle does not validate this input
                          (it crashed, raised something unrelated, or returned a malformed answer:
                          mesh dims its mesh lacks or uses twice; a well-formed answer from Paddle
                          makes the case a mismatch instead)
    native-crash          Paddle's process died (the port answered or raised)
    undecodable           Paddle answered, but the harness could not read the answer (a garbage
                          mesh, a malformed reply: the outcome keeps the raw reply). Not compared,
                          and not a finding: nothing of Paddle's can be held against the port. Where
                          the port rejects the input as invalid (and the input is not known to be
                          valid) the case is port-rejects-invalid instead: unreadable garbage is
                          what Paddle does with input it does not validate, as a malformed answer is
    unreachable           the native backend cannot express this case (or this Paddle has no such rule)
    native-varies         Paddle answered an input invalid for its op differently in two fresh processes
                          (the outcome's ``varies``: it read memory it never set); both answers are kept.
                          Neither is held against the port, so it is no mismatch and no flip between runs:
                          compared (no answer is owed to an input the op refuses), never a finding
    not-run               the native backend gave no answer: unavailable here, timed out, interrupted
    release-lacks         the route says this Paddle release lacks the rule (or what the case needs, e.g.
                          co-shards) and the release's profile declares exactly that (releases.py; set by
                          the sweep, never by :func:`compare`). Not compared: nothing of Paddle's was held
                          against the port; counted apart from the uncompared cases (not a failure)
    known-difference      a difference the Paddle release's profile expects (see releases.py;
                          set by the sweep, never by :func:`compare`)
    mismatch              anything else: at least one cell differs
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .case import Case
from .ops import RuleSpec
from .ops.registry import strictness_of
from .outcome import Outcome
from .types import DistAttr, SpmdResult, mesh_dims_of
from .validity import input_problem

CLASSES = ("match", "both-raise-same", "port-rejects-invalid", "native-crash", "undecodable", "unreachable",
           "not-run", "release-lacks", "known-difference", "native-varies", "mismatch")

#: The classes in which Paddle's side was actually held against the port's: an answer, an error,
#: or a crash the port predicted (it rejects the input as invalid), or a difference the release
#: profile explains. A case is *compared* when at least one native route gave one of these
#: (``release-lacks`` is not among them: a rule the release does not have is never counted as compared).
COMPARED = frozenset({"match", "both-raise-same", "port-rejects-invalid", "known-difference", "native-varies",
                      "mismatch"})

#: The ``port-rejects-invalid`` cases counted apart by what Paddle's *op* does with the input, as the
#: refusal's strictness declaration says (docs/strictness.md): the op refuses it too, no program can
#: hold it, the op accepts it, not measured; or no declaration (a check the port has not declared).
REFUSAL_CLASSES = ("port-refuses-op-refuses", "port-refuses-op-inexpressible", "port-refuses-op-accepts",
                   "port-refuses-op-unmeasured", "port-refuses-undeclared")


#: The ``port-rejects-invalid`` cases whose input Paddle's *rule* answered (its native outcome a
#: result), counted apart by the rule verdict of the refusal's declaration: ``undefined`` (Paddle's
#: answer there is memory it never set, which no port can or should agree with) or anything else
#: (an answer the ``mirror`` policy does not give yet: the strictness gap).
ANSWERED_CLASSES = ("paddle-answered-undefined", "paddle-answered-not-mirrored")


def answered_class(rule_key: str, port: Outcome, native: Outcome) -> str | None:
    """The :data:`ANSWERED_CLASSES` member of a case the port refused and Paddle's rule answered
    (None: the port did not refuse it, or Paddle gave no answer)."""
    err = port.error
    if err is None or not err.port_invalid or native.status != "result":
        return None
    decl = strictness_of(rule_key, err.kind)
    return "paddle-answered-undefined" if decl is not None and decl.rule == "undefined" \
        else "paddle-answered-not-mirrored"


def refusal_class(rule_key: str, port: Outcome) -> str | None:
    """The :data:`REFUSAL_CLASSES` member of the port's refusal in ``port`` (None: not a refusal)."""
    err = port.error
    if err is None or not err.port_invalid:
        return None
    decl = strictness_of(rule_key, err.kind)
    return "port-refuses-undeclared" if decl is None else f"port-refuses-op-{decl.op}"


@dataclass(frozen=True)
class CellDiff:
    cell: str
    port: str
    native: str

    def __str__(self) -> str:
        return f"{self.cell}: port {self.port} != native {self.native}"


@dataclass(frozen=True)
class Comparison:
    verdict: str
    cells: int
    matching_cells: int
    diffs: tuple[CellDiff, ...] = field(default_factory=tuple)
    note: str = ""
    """Why a difference is known (for ``known-difference``)."""


_PLAIN: dict[tuple[str, int, int], Comparison] = {}


def _plain(verdict: str, cells: int, matching: int) -> Comparison:
    """A comparison without diffs or note; one object per value (comparisons are immutable)."""
    key = (verdict, cells, matching)
    cmp = _PLAIN.get(key)
    if cmp is None:
        cmp = _PLAIN[key] = Comparison(verdict, cells, matching)
    return cmp


def _attr_cells(prefix: str, a: DistAttr | None) -> list[tuple[str, str]]:
    if a is None:
        return [(f"{prefix}.dims_mapping", "absent"), (f"{prefix}.partial", "absent"), (f"{prefix}.mesh", "absent")]
    m = a.mesh  # (a built mesh always has its process ids and dim names)
    mesh = "none" if m is None else f"{list(m.shape)}{list(m.process_ids or ())}{list(m.dim_names or ())}"
    return [(f"{prefix}.dims_mapping", str(list(a.dims_mapping))),
            (f"{prefix}.partial", str(sorted(a.partial_dims))), (f"{prefix}.mesh", mesh)]


def well_formed(result: SpmdResult) -> bool:
    """Every attr names only mesh dims its own mesh has, each at most once, none both sharding and
    partial; an attr without a mesh is replicated. (Paddle returns malformed answers for some input
    it does not validate: those are garbage, and the port rejecting that input is right.)"""
    for a in (*result.inputs, *result.outputs):
        used = [m for e in a.dims_mapping for m in mesh_dims_of(e)]
        ndim = 0 if a.mesh is None else a.mesh.ndim
        if any(not 0 <= m < ndim for m in used) or len(used) != len(set(used)):
            return False
        if any(not 0 <= m < ndim for m in a.partial_dims) or set(used) & set(a.partial_dims):
            return False
    return True


def outcome_cells(spec: RuleSpec, outcome: Outcome) -> list[tuple[str, str]]:
    """Every cell of an outcome as (name, value) — the unit of comparison."""
    cells: list[tuple[str, str]] = []
    res = outcome.result
    for side, names, attrs in (("in", spec.result_inputs, res.inputs if res else ()),
                               ("out", spec.result_outputs, res.outputs if res else ())):
        for i, name in enumerate(names):
            a = attrs[i] if i < len(attrs) else None
            cells += _attr_cells(f"{side}.{name}", a)
        for extra in range(len(names), len(attrs)):  # more attrs than Paddle's signature: every one differs
            cells += _attr_cells(f"{side}.#{extra}", attrs[extra])
    cells.append(("error", "none" if outcome.error is None else f"{outcome.error.family}: {outcome.error.message}"))
    return cells


def input_invalid_for(case: Case, port: Outcome, native: Outcome) -> bool | None:
    """The ``input_invalid`` :func:`compare` is given for ``case``: whether its input is invalid
    (:mod:`.validity`), asked only where it decides the verdict (the port rejects the input as
    invalid and Paddle answered), else None. ``infer`` and a repro snippet use it, and the sweep's
    ``tally_group`` (parity/cli.py) makes the same test inline, so a case replayed is classed as the
    sweep classed it."""
    err = port.error
    return input_problem(case) is not None if err and err.port_invalid and native.result is not None else None


def compare(spec: RuleSpec, port: Outcome, native: Outcome, input_invalid: bool | None = None) -> Comparison:
    """The verdict and cells of one case. ``input_invalid`` (from :mod:`.validity`) says
    whether the case's input is invalid for the op; when it is False, the port rejecting the input
    while Paddle gives a well-formed answer is a mismatch (None: not known, the port is believed)."""
    n = spec.n_cells
    if native.not_run is not None:
        return _plain("not-run", n, 0)
    if native.unreachable is not None:
        return _plain("unreachable", n, 0)
    if native.varies is not None:
        return _plain("native-varies", n, 0)
    if native.undecodable is not None:
        if port.error is not None and port.error.port_invalid and input_invalid is not False:
            return _plain("port-rejects-invalid", n, 0)
        return _plain("undecodable", n, 0)
    if port.error is not None and port.error.port_invalid:
        if input_invalid is False and native.result is not None and well_formed(native.result):
            # Paddle answered this input with a well-formed answer: the port may not call it invalid
            # (else a port that rejects valid input would pass the sweep unseen)
            return Comparison("mismatch", n, n - 1, (CellDiff("error", str(port.error), "a well-formed answer: "
                                                              f"{native.result}"),))
        return _plain("port-rejects-invalid", n, 0)
    if native.crash is not None:
        return Comparison("native-crash", n, 0)
    # Equal values give equal cells (a cell is the text of one field), so two equal answers, or
    # two errors of one family and message, need no cell-by-cell walk; any difference takes it.
    if port.error is None and native.error is None and port.result is not None and port.result == native.result:
        return _plain("match", n, n)
    if port.result is None and native.result is None and port.error is not None and native.error is not None \
            and (port.error.family, port.error.message) == (native.error.family, native.error.message):
        return _plain("both-raise-same", n, n)
    pc, nc = outcome_cells(spec, port), outcome_cells(spec, native)
    native_by_name = dict(nc)
    names = list(dict.fromkeys([k for k, _ in pc] + [k for k, _ in nc]))
    port_by_name = dict(pc)
    diffs = tuple(CellDiff(k, port_by_name.get(k, "absent"), native_by_name.get(k, "absent"))
                  for k in names if port_by_name.get(k, "absent") != native_by_name.get(k, "absent"))
    matching = len(names) - len(diffs)
    if diffs:
        return Comparison("mismatch", max(n, len(names)), matching, diffs)
    if port.error is not None:
        return Comparison("both-raise-same", n, n)
    return Comparison("match", n, n)
