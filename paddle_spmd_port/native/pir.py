"""Backend: Paddle's PIR static build, which runs the op's InferSpmd rule inside ``Build``.

Reaches the rules that Paddle's Python registry hides, through the ops that call them: each
family's ``native.py`` names, per rule key, the ``paddle._C_ops`` builder of the op whose Build
runs it (``PIR_OPS``), and says why no op reaches its other keys (``PIR_NOT_ROUTED``: their
cases are ``unreachable`` with that reason). An op that builds but fails its dtype check (no
kernel in CPU wheels) answers ``unreachable`` too, with Paddle's message.

Each input is ``dist.shard_tensor(data, mesh, placements)`` (``Partial()`` on the case's partial
dims); the op's ``dist_attr.operands()`` / ``results()`` are the rule's answer (input dst attrs
and output attrs, with partial status and reduce type), read once per distinct attribute
(:func:`outcome_of_op`). Nothing runs, so any mesh works in one process.

Speed: one Program holds many ops, its input values' data and shard_tensor ops included. Input
values are cached per Program by the spec object, then by (shape, mapping, partial, mesh), so
most cases cost one op build; a new Program starts every ``OPS_PER_PROGRAM`` ops to bound memory
(the Program's size does not change the CPU per op:
docs/measurements/2026-12-01-native-notes.md). Each build moves the insertion point to the end
of the Program's block (no ``program_guard`` a case; :func:`_pir_mode` puts the insertion point
back when it ends). The data op is made with ``paddle._pir_ops.data``, the op
``paddle.static.data`` makes, without its walk over every op of the Program to move the
insertion point (that walk makes ``static.data`` O(program size)). Equal outcomes are one object
(answers by :func:`outcome_of_op`, errors and unreachable ones by their value), so a worker
pickles each once.

Outcome mapping:

* the op builds -> ``result`` read back from ``op.dist_attr`` (an attribute that is no
  :class:`DistAttr`, e.g. a mesh of an impossible size -> ``undecodable``, its text kept);
* Build raises from a file under ``phi/infermeta/spmd_rules/`` -> ``error`` (the rule raised);
* Build raises anywhere else (InferMeta shape checks, data layout parsing, the PIR dist
  attribute, dtype/kernel checks) -> ``unreachable`` with that message: the rule's answer, if
  any, cannot be seen this way;
* a size or process id beyond int64, an integer attribute beyond int32 -> ``unreachable`` (Paddle
  segfaults on a size beyond int64 and its bindings refuse the others: measured on 3.3.1);
* input a placement list cannot express (duplicate or out-of-range mesh dims, a mapping whose
  length is not the rank, shard and partial on one mesh dim, a present input without a mesh,
  a missing required input) -> ``unreachable`` with the reason; nothing is dropped.

Cases that may take the process down (:func:`may_crash`: the clauses every op shares and the
family's ``pir_may_crash``) are built in a forked child each (in a worker a child of its fork
server, see :mod:`._fork`, running :func:`build_here`; :func:`prepare_fork_server` sets that server
up), so a crash costs one fork instead of a worker restart with a fresh ``import paddle``
(docs/measurements/2026-12-01-native-notes.md), and a case that corrupts the heap without dying
cannot change another's outcome (docs/measurements/2026-12-02-pir-isolation.md). The crash is
reported as ``native crashed: signal N``, as :mod:`.pool` would.

Imports Paddle and switches it to static PIR mode while building: run it only inside a worker
process (:mod:`.worker`).
"""

from __future__ import annotations

import contextlib
import re
import traceback
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..case import INT64, Case, PerAttrs, int_range_problem
from ..ops import FAMILIES, RULES, family_part
from ..ops.kit.native import NativeRoutes
from ..outcome import ErrorInfo, Outcome, normalize_message
from ..types import DistAttr, DistTensorSpec, ProcessMesh, SpmdResult, format_mapping, memo_table, plain_mapping
from ._fork import run_isolating
from ._paddle import ReduceTypeError, from_paddle_mesh, paddle_version, to_paddle_mesh, typed_attrs
from .crash_prone import pir_may_crash
from .crash_prone import pir_may_crash as may_crash

warnings.filterwarnings("ignore")

import paddle  # noqa: E402
import paddle.distributed as dist  # noqa: E402
from paddle import _C_ops  # noqa: E402
from paddle.framework import core  # noqa: E402

#: Why this Paddle's PIR cannot answer any case (None: it can). Paddle 2.6's PIR has no distributed
#: dialect: its Operation has no ``dist_attr`` (no rule's answer to read) and ``paddle.pir.core`` no
#: insertion-point API; every case is then ``unreachable`` with this reason, a fact about the release
#: (its profile declares it), rather than a worker that cannot start.
NO_DIST_PIR: str | None = None
_missing = [f"paddle.pir.core has no {name}" for name in
            ("get_current_insertion_point", "set_insertion_point", "set_insertion_point_to_block_end")
            if not hasattr(paddle.pir.core, name)]
if not hasattr(paddle.pir.Operation, "dist_attr"):
    _missing.append("paddle.pir.Operation has no dist_attr")
if not _missing:
    from paddle.pir.core import get_current_insertion_point as _insertion_point
    from paddle.pir.core import set_insertion_point as _restore_insertion_point
    from paddle.pir.core import set_insertion_point_to_block_end as _insert_at_end
if _missing:
    NO_DIST_PIR = (f"Paddle {paddle.__version__}'s PIR has no distributed dialect (no op dist_attr to read a rule's "
                   f"answer from): {'; '.join(_missing)}")

#: Ops per Program before a fresh one is started (bounds memory; input values are cached per Program).
OPS_PER_PROGRAM = 20_000

_RULE_SOURCE = "infermeta/spmd_rules/"
_SOURCE_PATH = re.compile(r"(/paddle/[\w./-]+?\.(?:cc|h|cpp|cu))")


@dataclass(frozen=True)
class OpRoute:
    """How a rule key is reached: the ``_C_ops`` builder, the op's input names in call order,
    and which of them may be None."""

    builder: str
    inputs: tuple[str, ...]
    optional: frozenset[str]


def _declared(entry: Callable[[NativeRoutes], Mapping[str, str]]) -> dict[str, str]:
    """rule key -> its family's entry (builder or reason), family by family."""
    table: dict[str, str] = {}
    for family in FAMILIES.values():
        table.update(entry(family_part(family.name, NativeRoutes) or NativeRoutes()))
    return table


#: rule key -> the ``_C_ops`` builder; inputs and optional inputs from the declared spec.
ROUTES: dict[str, OpRoute] = {
    key: OpRoute(builder, RULES[key].inputs, RULES[key].optional)
    for key, builder in _declared(lambda native: native.pir_ops).items()}

#: rule key -> why no PIR op reaches it.
NOT_ROUTED: dict[str, str] = _declared(lambda native: native.pir_not_routed)


class _Unreachable(Exception):
    """The case cannot be expressed on this route; the message says why."""


# --------------------------------------------------------------------------- input side
def placements_of(spec: DistTensorSpec, name: str) -> list[Any]:
    """The placement list of ``spec`` (one per mesh dim), or :class:`_Unreachable` with why not."""
    mesh = spec.mesh
    if mesh is None:
        raise _Unreachable(f"{name} is present but has no process mesh; the PIR route passes either a dist value "
                           "(with a mesh) or None")
    if len(spec.dims_mapping) != len(spec.shape):
        raise _Unreachable(f"{name}: dims_mapping {list(spec.dims_mapping)} does not have one entry per axis of "
                           f"shape {list(spec.shape)}; placements cannot express it")
    if spec.coshard:
        raise _Unreachable(f"{name}: co-sharded dims_mapping {format_mapping(spec.dims_mapping)}; a PIR value holds "
                           "one mesh dim per axis (shard_tensor keeps the highest-numbered one: docs/coshard-3.3.1.md)")
    out: list[Any] = [dist.Replicate() for _ in range(mesh.ndim)]
    for axis, m in enumerate(plain_mapping(spec.dims_mapping, "the PIR route")):
        if m == -1:
            continue
        if not 0 <= m < mesh.ndim:
            raise _Unreachable(f"{name}: mesh dim {m} is outside the {mesh} mesh; placements cannot express it")
        if isinstance(out[m], dist.Shard):
            raise _Unreachable(f"{name}: mesh dim {m} shards two axes; placements cannot express it")
        out[m] = dist.Shard(axis)
    for p in sorted(spec.partial_dims):
        if not 0 <= p < mesh.ndim:
            raise _Unreachable(f"{name}: partial mesh dim {p} is outside the {mesh} mesh")
        if isinstance(out[p], dist.Shard):
            raise _Unreachable(f"{name}: mesh dim {p} is both Shard and Partial; placements cannot express it")
        out[p] = dist.Partial()
    return out


class _Program:
    """One PIR Program and the dist input values already made in it (its data and shard_tensor
    ops live in it, ahead of the ops that read them)."""

    def __init__(self) -> None:
        self.program = paddle.static.Program()
        self.block = self.program.global_block()
        self.values: dict[tuple, Any] = {}
        self.by_spec: dict[int, tuple[DistTensorSpec, Any]] = {}
        self.args: dict[tuple, tuple[tuple, list[Any] | Outcome]] = {}
        self.ops = 0
        self.dtype = paddle.pir.core.convert_np_dtype_to_dtype_("float32")
        self.place = core.Place()

    def args_of(self, case: Case, route: OpRoute) -> list[Any] | Outcome:
        """The op's input values for ``case``, or its unreachable outcome; once per tuple of input
        spec objects (cases share them; the entry holds them, so their ids are not reused)."""
        inputs = case.inputs
        key = (case.rule, *map(id, inputs))
        hit = self.args.get(key)
        if hit is not None:
            return hit[1]
        result: list[Any] | Outcome
        try:
            if inputs[0] is None or inputs[0].mesh is None:
                raise _Unreachable("x has no process mesh (Paddle's rules segfault on that); the PIR route needs "
                                   "x as a dist value")
            result = []
            for name, s in zip(route.inputs, inputs, strict=True):
                if s is None:
                    if name not in route.optional:
                        raise _Unreachable(f"{name} is None, but the {route.builder} op requires it")
                    result.append(None)
                else:
                    result.append(self.value(s, name))
        except _Unreachable as why:
            result = _one_of(Outcome(unreachable=str(why)))
        self.args[key] = (inputs, result)
        return result

    def value(self, spec: DistTensorSpec, name: str) -> Any:
        # first by the spec object (a sweep's cases share their specs: one object per equal spec; the
        # entry holds the spec, so its id is not reused while the entry lives), then by content
        hit = self.by_spec.get(id(spec))
        if hit is not None and hit[0] is spec:
            return hit[1]
        key = (spec.shape, spec.dims_mapping, spec.partial_dims, spec.mesh)
        v = self.values.get(key)
        if v is None:
            lo, hi = INT64  # (once per distinct input: Paddle segfaults on a size beyond int64)
            if any(not lo <= n <= hi for n in (*spec.shape, *(spec.mesh.shape + (spec.mesh.process_ids or ())
                                                                if spec.mesh is not None else ()))):
                raise _Unreachable(f"{name}: a size or process id beyond the int64 Paddle holds it in ({lo}..{hi})")
            placements = placements_of(spec, name)
            assert spec.mesh is not None  # placements_of raises _Unreachable for a spec without a mesh
            data = paddle._pir_ops.data(f"in{len(self.values)}", list(spec.shape), self.dtype, self.place)
            data.stop_gradient = True
            v = self.values[key] = dist.shard_tensor(data, to_paddle_mesh(spec.mesh), placements)
        self.by_spec[id(spec)] = (spec, v)
        return v


# --------------------------------------------------------------------------- output side
_SUM = None  # paddle's ReduceType.kRedSum, looked up lazily


def _mesh_back(pm: Any) -> ProcessMesh | None:
    return None if pm is None or pm.empty() else from_paddle_mesh(pm)


def dist_attr_of(attr: Any) -> DistAttr:
    """A PIR ``TensorDistAttribute`` (as held by ``op.dist_attr``) as a :class:`DistAttr`."""
    global _SUM
    t = attr.as_tensor_dist_attr()
    status = t.partial_status
    if status:
        if _SUM is None:
            _SUM = paddle.base.core.ReduceType.kRedSum
        odd = {d: str(r) for d, r in status.items() if r != _SUM}
        if odd:
            raise ReduceTypeError(f"partial reduce type other than SUM: {odd}")
    return DistAttr.make(tuple(t.dims_mapping), frozenset(status), _mesh_back(t.process_mesh))


def _read_op(op: Any) -> SpmdResult:
    da = op.dist_attr
    return SpmdResult(tuple(dist_attr_of(a) for a in da.operands()),
                      tuple(dist_attr_of(a) for a in da.results()))


#: Outcomes of the op dist attributes read so far, bucketed by a key the caller picks (the
#: :func:`_answer_key` of the case). PIR interns attributes (one storage per content, dim names and
#: reduce types included) and ``==`` compares that storage, so an equal attribute is the same
#: answer; the bucket only narrows what is compared (3 answers a bucket on average on the grid).
#: Many cases share an answer: reading every field of one costs far more than a compare.
_answers: dict[tuple, list[tuple[Any, Outcome]]] = {}


def outcome_of_op(op: Any, key: tuple) -> Outcome:
    """The outcome ``op``'s dist attribute stands for (read once per distinct attribute)."""
    da = op.dist_attr
    bucket = _answers.setdefault(key, [])
    for known, outcome in bucket:
        if known == da:
            return outcome
    try:
        outcome = Outcome(result=_read_op(op))
    except ReduceTypeError as exc:
        outcome = Outcome(error=ErrorInfo("ReduceTypeError", str(exc)))
    except Exception as exc:  # an attribute that is no DistAttr (a garbage mesh, ...): recorded, with its text
        outcome = Outcome.unreadable(exc, _LazyText(da))
    bucket.append((da, outcome))
    return outcome


class _LazyText:
    """The text of an op's dist attribute, made only when an undecodable outcome keeps it."""

    def __init__(self, da: Any) -> None:
        self.da = da

    def __str__(self) -> str:
        da = self.da
        return ("operands: [" + ", ".join(map(str, da.operands())) + "] | results: ["
                + ", ".join(map(str, da.results())) + "]")


_outcomes: dict[Outcome, Outcome] = memo_table({})


def _one_of(outcome: Outcome) -> Outcome:
    """One object for equal error and unreachable outcomes, as :func:`outcome_of_op` has for
    answers (a worker then pickles each once: :mod:`.worker`)."""
    known = _outcomes.get(outcome)
    if known is None:
        if len(_outcomes) > 50_000:
            _outcomes.clear()
        known = _outcomes[outcome] = outcome
    return known


def _answer_key(case: Case) -> tuple:
    x = case.inputs[0]
    return (case.rule,) if x is None else (case.rule, x.mesh, x.dims_mapping, x.partial_dims)


# --------------------------------------------------------------------------- building
def raised_by_rule(message: str) -> bool:
    """True when Paddle's error names a source file of the SPMD rules (or names no file at all,
    e.g. a bare ``std::length_error`` thrown by a rule)."""
    paths = _SOURCE_PATH.findall(message)
    return not paths or _RULE_SOURCE in paths[-1]


def _where(message: str) -> str:
    paths = _SOURCE_PATH.findall(message)
    return paths[-1].split("/paddle/", 1)[-1] if paths else "?"


_checked_names: set[str] = set()

def _exact_attrs(case: Case) -> list[Any]:
    return typed_attrs(case, exact=True)


_typed_attrs = PerAttrs(_exact_attrs)  # :func:`typed_attrs` (exact), once per rule and attrs tuple


def _check_names(case: Case, op: Any) -> None:
    """Once per op: its operand/result names must be the rulebook's result order."""
    if case.rule in _checked_names:
        return
    spec = case.spec
    got_in, got_out = tuple(op.get_input_names()), tuple(op.get_output_names())
    if got_in != spec.result_inputs or got_out != spec.result_outputs:
        raise RuntimeError(f"{op.name()} has inputs {got_in} and outputs {got_out}, but the rulebook orders "
                           f"{case.rule}'s result as {spec.result_inputs} / {spec.result_outputs}")
    _checked_names.add(case.rule)


class PirBackend:
    """Builds cases' ops into a long-lived Program; see the module docstring."""

    def __init__(self, ops_per_program: int = OPS_PER_PROGRAM, isolate_risky: bool = True) -> None:
        self.ops_per_program = ops_per_program
        self.isolate_risky = isolate_risky
        self._prog: _Program | None = None

    def _program(self) -> _Program:
        if self._prog is None or self._prog.ops >= self.ops_per_program:
            self._prog = _Program()
        return self._prog

    def _build(self, case: Case) -> Outcome:
        route = ROUTES[case.rule]
        prog = self._program()
        spec = case.spec
        if spec.inputs != route.inputs:
            raise RuntimeError(f"{case.rule}: rulebook inputs {spec.inputs} differ from the op's {route.inputs}")
        # every op of this case goes to the end of this Program's block (cheaper than a program_guard a case)
        _insert_at_end(prog.block)
        args = prog.args_of(case, route)
        if isinstance(args, Outcome):
            return args
        attrs = _typed_attrs(case)
        builder = getattr(_C_ops, route.builder)
        try:
            built = builder(*args, *attrs)
        except Exception as exc:  # every Paddle error becomes an outcome
            why = int_range_problem(case)  # (looked for only here: Paddle's bindings refuse such ints)
            if why is not None:
                return _one_of(Outcome(unreachable=why))
            message = str(exc)
            if raised_by_rule(message):
                return _one_of(Outcome(error=ErrorInfo.from_exception(exc)))
            reason = normalize_message(message)
            if re.search(r"expected_dtype:\s*$", reason):
                reason += " (an empty list: no kernel of this op is registered in this build)"
            return _one_of(Outcome(unreachable=f"{route.builder} cannot be built here ({type(exc).__name__} in "
                                               f"{_where(message)}): {reason}"))
        finally:
            prog.ops += 1
        first = built[0] if isinstance(built, (tuple, list)) else built
        op = first.get_defining_op()
        _check_names(case, op)
        return outcome_of_op(op, _answer_key(case))

    def run(self, case: Case) -> Outcome:
        """One case, built in this process (no crash isolation: see :meth:`run_many`)."""
        if NO_DIST_PIR is not None:
            return Outcome(unreachable=NO_DIST_PIR)
        with _pir_mode():
            return self._run_one(case)

    def _run_one(self, case: Case) -> Outcome:
        if case.rule in NOT_ROUTED:
            return Outcome(unreachable=NOT_ROUTED[case.rule])
        if case.rule not in ROUTES:
            return Outcome(unreachable=f"the pir backend has no op for rule {case.rule!r}")
        return self._build(case)

    def run_many(self, cases: Iterable[Case], may_crash: Callable[[Case], bool] | None = None) -> Iterator[Outcome]:
        """Outcomes in order; ``may_crash`` cases (default :func:`may_crash`; a worker is handed the
        pool's) are built in forked children (see :mod:`._fork`), everything else here."""
        if NO_DIST_PIR is not None:  # nothing can be built: every case says why
            no_pir = Outcome(unreachable=NO_DIST_PIR)
            yield from (no_pir for _ in cases)
            return
        crashy = may_crash or pir_may_crash

        def risky(case: Case) -> bool:
            return self.isolate_risky and case.rule in ROUTES and crashy(case)

        with _pir_mode():  # a risky case is routed: _run_one builds it (build_here in a fork server's child)
            yield from run_isolating(cases, self._run_one, risky, isolated=build_here)


@contextlib.contextmanager
def _pir_mode() -> Iterator[None]:
    """Static mode with the PIR API on, for as long as the block runs.

    Also skips the Python call stack Paddle records on every op it builds (its C++ calls
    ``traceback.extract_stack()`` for the ``op_callstack`` attribute, which only error messages
    of a later execution read): ``traceback.extract_stack`` returns an empty stack inside the
    block and is restored after it (a sizeable share of the CPU per case: the notes in docs/measurements)."""
    real_extract_stack = traceback.extract_stack
    traceback.extract_stack = _no_stack
    try:
        with paddle.pir_utils.IrGuard():
            where = _insertion_point()  # _build moves it into its own Program: put it back after
            try:
                yield
            finally:
                _restore_insertion_point(where)
    finally:
        traceback.extract_stack = real_extract_stack


def _no_stack(*_args: Any, **_kwargs: Any) -> traceback.StackSummary:
    return traceback.StackSummary()


_backend = PirBackend()
_zygote_mode = contextlib.ExitStack()


def prepare_fork_server() -> None:
    """In the worker's zygote (:func:`._fork.start_fork_server`), before it serves: enter PIR mode
    for good and start the Program, which every child would otherwise do for its one case. Each
    child still starts from this same state, whatever the cases (docs/measurements/2026-12-02-pir-isolation.md:
    a child's CPU and wall with and without it)."""
    if NO_DIST_PIR is not None:  # nothing is built (run_many isolates nothing)
        return
    _zygote_mode.enter_context(_pir_mode())
    _backend._program()


def build_here(case: Case) -> Outcome:
    """One case, built in this process without isolation: what a forked child runs (module-level,
    so that the worker's fork server can be handed it; see :mod:`._fork`)."""
    return _backend.run(case)


def run(case: Case) -> Outcome:
    """One case; a crash-prone one is built in a forked child (prefer :func:`run_many` for many)."""
    (outcome,) = run_many([case])
    return outcome


def run_many(cases: Iterable[Case], may_crash: Callable[[Case], bool] | None = None) -> Iterator[Outcome]:
    """Outcomes of ``cases`` in order, one yielded as soon as it is known (a crash of the process
    loses only the case in flight); ``may_crash``: as :meth:`PirBackend.run_many`."""
    return _backend.run_many(cases, may_crash)


__all__ = ["NOT_ROUTED", "NO_DIST_PIR", "OPS_PER_PROGRAM", "ROUTES", "PirBackend", "build_here", "dist_attr_of",
           "may_crash", "outcome_of_op", "paddle_version", "placements_of", "prepare_fork_server", "raised_by_rule",
           "run", "run_many"]
