"""Communication on real ranks: what reshards Paddle ran in a case's op, read from its own logs,
against what the port's answer implies (:mod:`paddle_spmd_port.reshard`'s plan). Pure: no Paddle.

How it is observed. Paddle's eager dist API logs every reshard it makes through glog's VLOG, off
by default; the ranks turn on the few source files that say it (:data:`VMODULE`, set in
``GLOG_vmodule`` before Paddle is imported; Paddle 3.3.1's CPU wheel honours it, measured:
docs/measurements/2026-12-07-launch-comm.md). The runner sends fd 2 into a file for the span of a
stage (the op's forward call; ``out.backward``), hands the text to :func:`parse_log` and writes it
back to the rank's log. The lines read::

    Running_AD_API: <op> / Finish_AD_API: <op>                 (dygraph_functions.cc, VLOG 3)
    Running_AD_API_GRAD: <op>_grad / Finish_AD_API_GRAD       (nodes.cc, VLOG 3)
    Reshard input: x(...) reshard from {Global Shape: .., DistAttr: {..}} to {DistAttr: {..}}
    Reshard output(bwd): x_grad(...) reshard from {..} to {..}  (data_transform.cc, VLOG 4)
    Choose ReshardFunction: SToRReshard                         (reshard_function_registry.cc, VLOG 4)
    Get Sub Mesh {shape: [2], process_ids: [0,2], dim_names: [d0]}   (nd_mesh_reshard_function.cc, VLOG 3)
    Call SToRReshard                                            (<x>_reshard_function.cc, VLOG 3)

An :class:`Event` is one reshard: the tensor it moved (``input``: an operand the op's rule wants
elsewhere; ``output``: a grad output moved back to its leaf's placement; ``other``: a reshard
with no such header, e.g. ``dist.shard_tensor``), the AD API it ran in, global shape, source and
target mapping and partial dims, the function Paddle chose and the 1-D functions it called, each
with the mesh dim it ran along (a sub-mesh's ``dim_names: [d<k>]``: the runner names mesh dims
``d0``, ``d1`` ...; on a 1-D mesh, 0).

What is predicted (:func:`predict_comm`): the op's rule calls the port makes for the case (the
same calls :mod:`.predict` makes), each tensor operand from the placement the rule is handed to
the placement the port's answer gives it (``input``), and in the backward the grad rule's
``x_grad`` back to x's own placement (``output``: a leaf's ``.grad`` is resharded to the leaf's
placement). Each is :func:`~paddle_spmd_port.reshard.plan`'s steps: on a 1-D mesh the function
itself, on more dims ``SameNdMeshReshard`` and its 1-D calls with their mesh dims.

:func:`compare` matches the reshards of the op's own AD API (forward) and grad node (backward) by
(kind, shape, source, target) and checks the functions; reshards outside them (other ops of a
composite API, ``dist.shard_tensor``) are listed, not compared. A case's communication verdict
(:data:`COMM_VERDICTS`): ``agree``; ``differs`` (a predicted reshard not run, one run but not
predicted, or run with other functions), ``expected`` only where :data:`EXPLAINED` accounts for
every difference; ``not compared`` (the stage did not run, or raised; the ranks did not log).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..outcome import normalize_message
from ..reshard import plan
from ..types import DistAttr, DistTensorSpec, ProcessMesh, SpmdResult
from .cases import LaunchCase

#: ``GLOG_vmodule`` for the ranks: the source files whose VLOG lines :func:`parse_log` reads.
VMODULE = "data_transform=4,reshard_function_registry=4,*reshard_function=3,dygraph_functions=3,nodes=3"

COMM_VERDICTS = ("agree", "differs", "not compared")

#: The function Paddle picks on a mesh of two or more dims (its name as Paddle logs it).
ND = "SameNdMeshReshard"

_GLOG = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+\d+ ([\w.]+):\d+\] ?(.*)$")
_API = re.compile(r"(Running|Finish)_AD_API(_GRAD)?: (\w+)")
_HEAD = re.compile(r"^Reshard (input|output\(bwd\)): (\w+)\(.*?\) reshard from \{(.*)\} to \{(.*)\}$")
_CHOOSE = re.compile(r"^Choose ReshardFunction: (\w+)")
_CALL = re.compile(r"^Call (\w+?)(?:Function)?(?: Eval)?$")
_SUB_MESH = re.compile(r"^Get Sub Mesh \{.*dim_names: \[d(\d+)\]\}")
_SHAPE = re.compile(r"Global Shape: ([\d, ]*?), Local Shape")
_MAPPING = re.compile(r"dim_mappings: \[((?:\[[\d, ]*\] ?)*)\]")  # a co-shard's members: [0,1]
_PARTIAL = re.compile(r"partial: \[(.*?)\], split_factor")
_PARTIAL_DIM = re.compile(r"Partial\(dims:(\d+), (\w+)\)")


def short(function: str) -> str:
    """A reshard function's name as Paddle logs it: ``SToRReshardFunction`` -> ``SToRReshard``."""
    return function.removesuffix("Function")


@dataclass(frozen=True)
class Event:
    """One reshard seen in a rank's log (or predicted: :func:`predict_comm`)."""

    kind: str
    """``input``, ``output`` or ``other`` (no header: its tensor and attrs are unknown)."""
    tensor: str = ""
    op: str = ""
    """The AD API or grad node it ran in ("" outside any)."""
    shape: tuple[int, ...] | None = None
    src: tuple[Any, ...] | None = None
    """Source dims_mapping (an entry: -1, a mesh dim, or a tuple of mesh dims for a co-shard)."""
    src_partial: tuple[int, ...] = ()
    dst: tuple[Any, ...] | None = None
    dst_partial: tuple[int, ...] = ()
    function: str = ""
    """The function Paddle chose (``Choose ReshardFunction``)."""
    calls: tuple[tuple[str, int], ...] = ()
    """The 1-D functions that ran, each with its mesh dim."""
    nbytes: int | None = None
    """Predicted bytes each rank receives (None: observed)."""
    collectives: tuple[str, ...] = ()
    """Predicted: the collective of each step that moves data (``reshard.COLLECTIVES`` but none)."""

    @property
    def key(self) -> tuple[Any, ...]:
        return (self.kind, self.shape, self.src, self.src_partial, self.dst, self.dst_partial)

    def steps_text(self) -> str:
        calls = ", ".join(f"{name}@{dim}" for name, dim in self.calls)
        return f"{self.function or '?'}[{calls}]"

    def describe(self) -> str:
        if self.kind == "other":
            return f"{self.op or 'outside any op'}: {self.steps_text()}"
        where = f"{self.tensor} " if self.tensor else ""
        return (f"{self.kind} {where}{list(self.shape or ())} {_attr_text(self.src, self.src_partial)}"
                f"->{_attr_text(self.dst, self.dst_partial)}: {self.steps_text()}")

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "tensor": self.tensor, "op": self.op,
                "shape": None if self.shape is None else list(self.shape),
                "src": _mapping_json(self.src), "src_partial": list(self.src_partial),
                "dst": _mapping_json(self.dst), "dst_partial": list(self.dst_partial),
                "function": self.function, "calls": [list(c) for c in self.calls], "bytes": self.nbytes,
                "collectives": list(self.collectives)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Event:
        return cls(data["kind"], data.get("tensor", ""), data.get("op", ""),
                   None if data.get("shape") is None else tuple(data["shape"]), _mapping_tuple(data.get("src")),
                   tuple(data.get("src_partial", ())), _mapping_tuple(data.get("dst")),
                   tuple(data.get("dst_partial", ())), data.get("function", ""),
                   tuple((str(n), int(d)) for n, d in data.get("calls", ())), data.get("bytes"),
                   tuple(data.get("collectives", ())))


def _attr_text(mapping: tuple[Any, ...] | None, partial: tuple[int, ...]) -> str:
    if mapping is None:
        return "?"
    text = "[" + ",".join(str(list(e)) if isinstance(e, tuple) else str(e) for e in mapping) + "]"
    return text + (f"P{list(partial)}" if partial else "")


def _mapping_json(mapping: tuple[Any, ...] | None) -> list[Any] | None:
    return None if mapping is None else [list(e) if isinstance(e, tuple) else e for e in mapping]


def _mapping_tuple(mapping: Sequence[Any] | None) -> tuple[Any, ...] | None:
    return None if mapping is None else tuple(tuple(e) if isinstance(e, list) else e for e in mapping)


def _parse_attr(text: str) -> tuple[tuple[int, ...] | None, tuple[Any, ...] | None, tuple[int, ...]]:
    """(global shape or None, dims_mapping, partial dims) of one side of a ``Reshard`` line."""
    shape_m = _SHAPE.search(text)
    shape = None if shape_m is None else tuple(int(v) for v in shape_m.group(1).replace(" ", "").split(",") if v)
    mapping_m = _MAPPING.search(text)
    mapping: tuple[Any, ...] | None = None
    if mapping_m is not None:
        entries = []
        for inner in re.findall(r"\[([\d, ]*)\]", mapping_m.group(1)):
            dims = tuple(int(v) for v in re.split(r"[ ,]+", inner.strip()) if v)
            entries.append(-1 if not dims else dims[0] if len(dims) == 1 else dims)
        mapping = tuple(entries)
    partial_m = _PARTIAL.search(text)
    partial = () if partial_m is None else tuple(sorted(int(d) for d, _ in _PARTIAL_DIM.findall(partial_m.group(1))))
    return shape, mapping, partial


def kept_lines(text: str) -> str:
    """The lines of ``text`` worth keeping in a rank's log: those :func:`parse_log` reads and every
    line that is not an INFO line of glog (warnings, errors, Python's own output). The N-D
    function's step-by-step INFO lines, most of the bytes, are dropped."""
    kept = []
    for raw in text.splitlines(keepends=True):
        m = _GLOG.match(raw.rstrip("\n"))
        if m is None or not raw.startswith("I") or _API.search(raw):
            kept.append(raw)
            continue
        message = m.group(2).strip()
        if (_HEAD.match(message) or _CHOOSE.match(message) or _SUB_MESH.match(message)
                or (_CALL.match(message) and m.group(1).endswith("reshard_function.cc"))):
            kept.append(raw)
    return "".join(kept)


def parse_log(text: str) -> list[Event]:
    """The reshards in a stage's captured log, in the order they ran."""
    events: list[Event] = []
    ops: list[str] = []
    current: dict[str, Any] | None = None
    sub_dim: int | None = None

    def close() -> None:
        nonlocal current
        if current is not None:
            events.append(Event(**current))
            current = None

    for raw in text.splitlines():
        api = _API.search(raw)
        if api is not None:
            name = api.group(3).rstrip("_")
            if api.group(1) == "Running":
                ops.append(name)
            elif name in ops:
                del ops[len(ops) - 1 - ops[::-1].index(name):]
            continue
        m = _GLOG.match(raw)
        if m is None:
            continue
        source, message = m.group(1), m.group(2).strip()
        op = ops[-1] if ops else ""
        head = _HEAD.match(message)
        if head is not None:
            close()
            shape, src, src_p = _parse_attr(head.group(3))
            _, dst, dst_p = _parse_attr(head.group(4))
            current = {"kind": "input" if head.group(1) == "input" else "output", "tensor": head.group(2),
                       "op": op, "shape": shape, "src": src, "src_partial": src_p, "dst": dst,
                       "dst_partial": dst_p, "function": "", "calls": ()}
            continue
        choose = _CHOOSE.match(message)
        if choose is not None:
            if current is None or current["function"]:
                close()
                current = {"kind": "other", "op": op, "function": "", "calls": ()}
            current["function"] = choose.group(1)
            sub_dim = None
            continue
        sub = _SUB_MESH.match(message)
        if sub is not None:
            sub_dim = int(sub.group(1))
            continue
        call = _CALL.match(message)
        if call is not None and source.endswith("reshard_function.cc"):
            if current is None:
                current = {"kind": "other", "op": op, "function": "", "calls": ()}
            current["calls"] = (*current["calls"], (call.group(1), 0 if sub_dim is None else sub_dim))
            sub_dim = None
    close()
    return events


# --------------------------------------------------------------------------- prediction
@dataclass(frozen=True)
class RuleCallSeen:
    stage: str
    key: str
    args: tuple[Any, ...]
    result: SpmdResult | None


def rule_calls(case: LaunchCase) -> list[RuleCallSeen]:
    """The port's rule calls :mod:`.predict` makes for ``case``, with their arguments and answers."""
    from ..ops.kit.launch import Inputs
    from .predict import call_rule

    seen: list[RuleCallSeen] = []

    def recording(stage: str, key: str, *args: Any) -> Any:
        pred = call_rule(stage, key, *args)
        seen.append(RuleCallSeen(stage, key, args, pred.result))
        return pred

    case.launch_op.predict(case, Inputs.of(case), recording)
    return seen


def _operands(args: Iterable[Any]) -> list[DistTensorSpec | None]:
    """The tensor operands of a rule call, in order (None: an optional input left out)."""
    return [a for a in args if a is None or isinstance(a, DistTensorSpec)]


def planned(kind: str, tensor: str, op: str, shape: Sequence[int], src: DistTensorSpec | DistAttr,
            dst: DistTensorSpec | DistAttr, mesh: ProcessMesh) -> Event | None:
    """The predicted reshard of one tensor (None: equal source and target, no reshard)."""
    steps = plan(shape, src, dst, mesh)
    if not steps:
        return None
    function = ND if len(mesh.shape) > 1 else short(steps[0].function)
    return Event(kind, tensor, op, tuple(shape), _mapping_tuple(src.dims_mapping), tuple(sorted(src.partial_dims)),
                 _mapping_tuple(dst.dims_mapping), tuple(sorted(dst.partial_dims)), function,
                 tuple((short(s.function), s.mesh_dim) for s in steps), sum(s.bytes for s in steps),
                 tuple(s.collective for s in steps if s.collective != "none"))


@dataclass(frozen=True)
class StageComm:
    """The predicted reshards of one stage, or why there is no prediction."""

    events: tuple[Event, ...] = ()
    unpredicted: str = ""


def predict_comm(case: LaunchCase, stage_results: dict[str, SpmdResult | None]) -> dict[str, StageComm]:
    """stage -> the reshards the port's answers imply. ``stage_results``: the answers the case's
    prediction holds (:class:`~paddle_spmd_port.ops.kit.launch.Prediction`'s stages), so that a
    rule the family calls more than once per stage is read at the call whose answer it kept."""
    mesh = ProcessMesh(case.mesh_shape)
    out: dict[str, StageComm] = {}
    calls = rule_calls(case)
    for stage, result in stage_results.items():
        call = next((c for c in reversed(calls) if c.stage == stage and result is not None and c.result == result),
                    None)
        if call is None or result is None:
            out[stage] = StageComm(unpredicted="the port's rule gives no answer for this stage")
            continue
        operands = _operands(call.args)
        if len(operands) != len(result.inputs):
            out[stage] = StageComm(unpredicted=f"{call.key}: {len(operands)} tensor operands, {len(result.inputs)} "
                                               "input attrs in the answer")
            continue
        op = call.key.removesuffix("_base")
        events = [planned("input", f"#{i}", op, spec.shape, spec, attr, mesh)
                  for i, (spec, attr) in enumerate(zip(operands, result.inputs, strict=True)) if spec is not None]
        if stage == "backward" and result.outputs:
            x = DistTensorSpec(case.shape, case.dims_mapping, mesh)
            events.append(planned("output", "x_grad", op, case.shape, result.outputs[0], x, mesh))
        out[stage] = StageComm(tuple(e for e in events if e is not None))
    return out


# --------------------------------------------------------------------------- comparison
@dataclass(frozen=True)
class Difference:
    what: str
    """``missing`` (predicted, not run), ``extra`` (run, not predicted), ``steps`` (other functions),
    ``ranks`` (the ranks logged different reshards); in the PIR route also ``collectives`` (other
    collective ops), ``build`` (Paddle refused to build a program the port expects to run) and
    ``input`` (PIR holds x otherwise than the case places it)."""
    stage: str
    predicted: Event | None
    observed: Event | None
    explained: str = ""
    text: str = ""
    """The description, where the events do not give it (``collectives``)."""

    def describe(self) -> str:
        if self.text:
            text = f"{self.stage}: {self.text}"
        elif self.what == "ranks":
            text = f"{self.stage}: the ranks logged different reshards"
        elif self.what == "missing":
            text = f"{self.stage}: predicted {self.predicted.describe() if self.predicted else '?'}, not run"
        elif self.what == "extra":
            text = f"{self.stage}: ran {self.observed.describe() if self.observed else '?'}, not predicted"
        else:
            text = (f"{self.stage}: {self.observed.describe() if self.observed else '?'} ran, predicted "
                    f"{self.predicted.steps_text() if self.predicted else '?'}")
        return text + (f" [explained: {self.explained}]" if self.explained else "")


@dataclass(frozen=True)
class CommCheck:
    """A case's communication verdict."""

    verdict: str
    expected: bool
    predicted: dict[str, tuple[Event, ...]] = field(default_factory=dict)
    observed: dict[str, tuple[Event, ...]] = field(default_factory=dict)
    outside: dict[str, tuple[Event, ...]] = field(default_factory=dict)
    """Reshards in the stage outside the op's own API/grad node (not compared)."""
    differences: tuple[Difference, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def reasons(self) -> list[str]:
        return [d.describe() for d in self.differences if not d.explained]

    def summary(self) -> str:
        """One line: the predicted and observed reshards of each compared stage."""
        parts = []
        for stage in dict.fromkeys([*self.predicted, *self.observed]):
            parts.append(f"{stage} {len(self.predicted.get(stage, ()))}/{len(self.observed.get(stage, ()))}")
        return ", ".join(parts) if parts else "-"

    def cell(self) -> str:
        """The verdict with the reshard counts per stage (predicted/observed), ``(!)`` where the
        port does not account for it."""
        if self.verdict == "not compared":
            return self.verdict
        return f"{self.verdict}{'' if self.expected else ' (!)'}: {self.summary()}"

    def predicted_bytes(self) -> int:
        return sum(e.nbytes or 0 for events in self.predicted.values() for e in events)

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "expected": self.expected,
                "predicted": {s: [e.to_json() for e in es] for s, es in self.predicted.items()},
                "observed": {s: [e.to_json() for e in es] for s, es in self.observed.items()},
                "outside": {s: [e.to_json() for e in es] for s, es in self.outside.items()},
                "differences": [{"what": d.what, "stage": d.stage, "text": d.describe(), "explained": d.explained}
                                for d in self.differences],
                "notes": list(self.notes)}


#: A test of :data:`EXPLAINED`: the case, the difference, and the stage's reshards outside the op.
Explains = Callable[[LaunchCase, "Difference", Sequence[Event]], bool]


def settles_a_composites_partial_operand(case: LaunchCase, diff: Difference, outside: Sequence[Event]) -> bool:
    """A grad node of a composite API (other ops' grad nodes resharded in the same backward)
    settling a Partial operand before its kernel: an input reshard, not predicted, from a partial
    source to the same mapping without partial, by P->R functions only."""
    o = diff.observed
    return (diff.what == "extra" and diff.stage == "backward" and bool(outside) and o is not None
            and o.kind == "input" and bool(o.src_partial) and not o.dst_partial and o.src == o.dst
            and bool(o.calls) and all(name == "PToRReshard" for name, _ in o.calls))


def pir_refuses_a_mapping_longer_than_the_output(case: LaunchCase, diff: Difference, outside: Sequence[Event]) -> bool:
    """The PIR build fails in Paddle's dist type check: the rule answers an output a dims_mapping
    of another length than the rank InferMeta gives that output."""
    return diff.what == "build" and "global ddim size must equal to dim_mapping's size" in diff.text


#: Differences the port accounts for: (name, test, why). A difference every test rejects is a finding.
EXPLAINED: tuple[tuple[str, Explains, str], ...] = (
    ("paddle:pir-output-rank", pir_refuses_a_mapping_longer_than_the_output,
     "a Paddle finding, known (docs/instance-rms-fastln-3.3.1.md, PIR): the op's InferMeta gives an output "
     "fewer axes than the mapping its SPMD rule answers for it, and PIR's dist type refuses the pair, so the "
     "program cannot be built on any mesh; eager mode does not check it"),
    ("composite-grad-operand", settles_a_composites_partial_operand,
     "in a composite API the op's grad node gets its out_grad from the next op's grad node, not the "
     "upstream gradient the prediction assumes, and the prediction hands the grad rule the forward's outputs "
     "without their Partial status; Paddle's rule wants the Partial forward output replicated, so it is "
     "all-reduced first (the placements and values are compared as usual)"),
)


def explain(case: LaunchCase, diff: Difference, outside: Sequence[Event] = (),
            explained: Sequence[tuple[str, Explains, str]] | None = None) -> Difference:
    """``diff`` with the first explanation of ``explained`` (default :data:`EXPLAINED`) whose test
    holds, else unchanged."""
    for name, test, why in EXPLAINED if explained is None else explained:
        if test(case, diff, outside):
            return dataclasses.replace(diff, explained=f"{name}: {why}")
    return diff


def own_op(case: LaunchCase, event: Event) -> bool:
    """True when ``event`` ran inside the case's op (its AD API or its grad node)."""
    names = {k.removesuffix("_base") for k in case.launch_op.rules}
    return event.op in names or event.op in {f"{n}_grad" for n in names}


def compare_stage(case: LaunchCase, stage: str, predicted: Sequence[Event],
                  observed: Sequence[Event]) -> list[Difference]:
    """The differences between the predicted reshards and those that ran in the op, matched by
    (kind, shape, source, target) in order."""
    left = list(observed)
    diffs: list[Difference] = []
    for p in predicted:
        match = next((o for o in left if o.key == p.key), None)
        if match is None:
            diffs.append(Difference("missing", stage, p, None))
            continue
        left.remove(match)
        if (match.function, match.calls) != (p.function, p.calls):
            diffs.append(Difference("steps", stage, p, match))
    diffs += [Difference("extra", stage, None, o) for o in left]
    return diffs


def compare(case: LaunchCase, predicted: dict[str, StageComm], by_rank: dict[int, dict[str, Any]],
            logging_ok: bool, explained: Sequence[tuple[str, Explains, str]] | None = None) -> CommCheck:
    """The communication verdict of one case from every rank's record (``comm``: stage -> the
    events the rank parsed) and the stages that ran without error."""
    if not logging_ok:
        return CommCheck("not compared", True, notes=("no rank saw its reshard log lines (VLOG off?): the run's "
                                                       "communication is not compared",))
    first = by_rank[min(by_rank)]
    stages = first.get("stages", {})
    error = first.get("error") or {}
    comm = first.get("comm") or {}
    pred_out: dict[str, tuple[Event, ...]] = {}
    obs_out: dict[str, tuple[Event, ...]] = {}
    outside: dict[str, tuple[Event, ...]] = {}
    diffs: list[Difference] = []
    notes: list[str] = []
    for stage in ("forward", "backward"):
        if stages.get(stage) != "ok" or error.get("stage") == stage or stage not in comm:
            continue
        if stage not in predicted:
            notes.append(f"{stage}: no prediction")
            continue
        if predicted[stage].unpredicted:
            notes.append(f"{stage}: not predicted: {predicted[stage].unpredicted}")
            continue
        events = [Event.from_json(e) for e in comm[stage]]
        others = {r: [Event.from_json(e) for e in rec.get("comm", {}).get(stage, [])]
                  for r, rec in by_rank.items() if r != min(by_rank)}
        for rank, theirs in others.items():
            if theirs != events:
                notes.append(f"{stage}: rank {rank} logged other reshards than rank {min(by_rank)}")
                diffs.append(Difference("ranks", stage, None, None, ""))
                break
        mine = tuple(e for e in events if own_op(case, e))
        pred_out[stage] = predicted[stage].events
        obs_out[stage] = mine
        outside[stage] = tuple(e for e in events if not own_op(case, e))
        diffs += [explain(case, d, outside[stage], explained)
                  for d in compare_stage(case, stage, predicted[stage].events, mine)]
    if not pred_out:
        return CommCheck("not compared", True, notes=tuple(notes) or ("no stage ran without error",))
    verdict = "differs" if diffs else "agree"
    expected = all(d.explained for d in diffs)
    return CommCheck(verdict, expected, pred_out, obs_out, outside, tuple(diffs), tuple(notes))


#: The collective a PIR op name stands for (``pd_op.`` and a trailing ``_`` dropped); a name not
#: here is kept as it is, so it differs from every prediction.
PIR_COLLECTIVES = {"all_gather": "all_gather", "c_allgather": "all_gather", "all_reduce": "all_reduce",
                   "c_allreduce_sum": "all_reduce", "reduce_scatter": "reduce_scatter",
                   "c_reducescatter": "reduce_scatter", "all_to_all": "all_to_all", "alltoall": "all_to_all"}


def pir_collective(name: str) -> str:
    short_name = name.removeprefix("pd_op.").rstrip("_")
    return PIR_COLLECTIVES.get(short_name, short_name)


def _pir_event(data: dict[str, Any]) -> Event:
    ops = [o for o in data.get("ops", ())]
    return Event("input", "", ops[0] if len(ops) == 1 else ",".join(ops), tuple(data["shape"]),
                 _mapping_tuple(data["src"]), tuple(data.get("src_partial", ())), _mapping_tuple(data["dst"]),
                 tuple(data.get("dst_partial", ())))


def compare_pir(case: LaunchCase, predicted: StageComm | None, record: dict[str, Any] | None,
                runs: bool = True) -> CommCheck:
    """The PIR route's verdict for one case: the ``dist_op.reshard`` ops the partition pass put
    before the case's op, matched with the predicted forward input reshards by (shape, source,
    target); then, where every reshard of the program feeds the op, the collective ops the reshard
    pass left against the collectives of the predicted steps (as multisets: the pass may order them
    otherwise). ``record``: the PIR run's record for the case (None: not reached). ``runs``: the
    port expects the forward to run; then Paddle refusing to build the program is a difference."""
    stage = "pir"
    if record is None:
        return CommCheck("not compared", False, notes=("the PIR route did not reach this case",))
    if record.get("skipped"):
        return CommCheck("not compared", True, notes=(f"not built: {record['skipped']}",))
    if record.get("error"):
        raised = f"{record['error'].get('type')}: {normalize_message(record['error'].get('message', ''))[:300]}"
        if runs:
            diff = explain(case, Difference("build", stage, None, None, text=f"Paddle raised building the program "
                                                                         f"({raised}); the port predicts the "
                                                                         "forward to run"))
            return CommCheck("differs", bool(diff.explained), differences=(diff,))
        return CommCheck("not compared", True, notes=(f"Paddle raised building the program, as the port predicts "
                                                     f"the forward to fail: {raised}",))
    if predicted is None or predicted.unpredicted:
        why = predicted.unpredicted if predicted is not None else "no forward answer"
        return CommCheck("not compared", True, notes=(f"not predicted: {why}",))
    held = _mapping_tuple(record.get("x"))
    if held is not None and held != tuple(case.dims_mapping):
        placed = _attr_text(tuple(case.dims_mapping), ())
        text = f"PIR holds x as {_attr_text(held, ())}, the case places it {placed}: the program is not the case's"
        if any(type(e) is tuple for e in case.dims_mapping):
            return CommCheck("not compared", True, notes=(
                f"{text} (a Paddle finding: dist.shard_tensor on a static value keeps a co-shard's last mesh dim "
                "only, silently; docs/measurements/2026-12-07-launch-comm.md)",))
        return CommCheck("differs", False, differences=(Difference("input", stage, None, None, text=text),))
    events = [_pir_event(r) for r in record.get("reshards", ())]
    mine = [e for e in events if own_op(case, e)]
    outside = tuple(e for e in events if not own_op(case, e))
    want = [dataclasses.replace(e, tensor="", function="", calls=(), nbytes=None, collectives=())
            for e in predicted.events if e.kind == "input"]
    diffs = [d for d in compare_stage(case, stage, want, mine) if d.what != "steps"]
    notes: list[str] = []
    if outside:
        notes.append(f"{len(outside)} reshard(s) feed other ops: the program's collectives not compared")
    else:
        predicted_coll = sorted(step for e in predicted.events if e.kind == "input"
                                for step in e.collectives)
        seen = sorted(pir_collective(n) for n in record.get("collectives", ()))
        if predicted_coll != seen:
            diffs.append(Difference("collectives", stage, None, None,
                                    text=f"collective ops {seen} after the reshard pass, predicted {predicted_coll}"))
    diffs = [explain(case, d, outside) for d in diffs]
    predicted_events = tuple(e for e in predicted.events if e.kind == "input")
    return CommCheck("differs" if diffs else "agree", all(d.explained for d in diffs), {stage: predicted_events},
                     {stage: tuple(mine)}, {stage: outside}, tuple(diffs), tuple(notes))




__all__ = ["COMM_VERDICTS", "EXPLAINED", "ND", "PIR_COLLECTIVES", "VMODULE", "CommCheck", "Difference", "Event",
           "Explains", "StageComm", "compare", "compare_pir", "compare_stage", "explain", "kept_lines", "own_op",
           "parse_log", "pir_collective", "pir_refuses_a_mapping_longer_than_the_output", "planned", "predict_comm",
           "rule_calls", "settles_a_composites_partial_operand", "short"]
