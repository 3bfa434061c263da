"""What a family's real-run module (``ops/<family>/launch.py``) builds on: the case type, the
placement notation, the prediction types and :class:`LaunchOp`, the interface the launch room calls.

Pure: no Paddle, no numpy. The in-rank hooks of :class:`LaunchOp` (:meth:`LaunchOp.call` ...)
receive Paddle's modules from the runner as arguments, so a family module never imports them.

A family's ``launch.py`` binds ``LAUNCH``, a :class:`LaunchPlan`: the rule keys no eager call
reaches (and why) and, when eager calls reach it, its :class:`LaunchOp`. A family without one is
not launched (:data:`NO_LAUNCH_PART` says so for each of its keys).
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Protocol

from ...notation import ShardError, local_shape
from ...types import DimsMapping, DistAttr, DistTensorSpec, MeshDims, ProcessMesh, SpmdResult
from ..spec import FamilyPart, OpFamily, foreign_keys
from .layout import DATA_FORMAT_NDIM

_PLACEMENT = re.compile(r"S\((\d+)\)(?:#(\d+))?")


def parse_placement(text: str) -> tuple[int, int | None] | None:
    """One mesh dim's placement of x: ``"R"`` -> None, ``"S(2)"`` -> ``(2, None)``, ``"S(0)#1"`` ->
    ``(0, 1)`` (``Shard(0, shard_order=1)``: this mesh dim is member 1 of a co-shard of axis 0)."""
    text = text.strip()
    if text == "R":
        return None
    m = _PLACEMENT.fullmatch(text)
    if m is None:
        raise ValueError(f"placement {text!r} is not 'R', 'S(<axis>)' or 'S(<axis>)#<shard order>'")
    return int(m.group(1)), None if m.group(2) is None else int(m.group(2))


def placements_to_dims_mapping(placements: Sequence[str], ndim: int) -> DimsMapping:
    """Per-mesh-dim placements of an input -> per-tensor-axis dims_mapping; the one place a case's
    placements are checked.

    ``("S(1)", "R")`` on a rank-3 tensor -> ``(-1, 0, -1)``. An axis on two or more mesh dims is a
    co-shard: every member says its shard order, the orders are 0..n-1 once each, and the entry is
    the tuple of mesh dims in shard order: ``("S(0)#1", "S(0)#0")`` -> ``((1, 0), -1, -1)``. A lone
    member carries no order (``S(0)#0`` alone is ``S(0)``: one spelling per distribution).
    """
    members: dict[int, list[tuple[int | None, int]]] = {}
    for mesh_dim, text in enumerate(placements):
        parsed = parse_placement(text)
        if parsed is None:
            continue
        axis, order = parsed
        if not 0 <= axis < ndim:
            raise ValueError(f"placement {text} names axis {axis} of a rank-{ndim} tensor")
        members.setdefault(axis, []).append((order, mesh_dim))
    mapping: list[MeshDims] = [-1] * ndim
    for axis, held in members.items():
        orders = [order for order, _ in held]
        if len(held) == 1:
            if orders[0] is not None:
                raise ValueError(f"axis {axis} is on one mesh dim only in {list(placements)}: write S({axis}), "
                                 "a shard order (#k) is for an axis split along two or more mesh dims")
            mapping[axis] = held[0][1]
        elif sorted(o if o is not None else -1 for o in orders) != list(range(len(held))):
            raise ValueError(f"axis {axis} is sharded on {len(held)} mesh dims in {list(placements)}: a co-shard "
                             f"gives each member a distinct shard order 0..{len(held) - 1} (S({axis})#k)")
        else:
            by_order = dict(held)
            mapping[axis] = tuple(by_order[k] for k in range(len(held)))
    return tuple(mapping)


@dataclass(frozen=True)
class LaunchCase:
    """One op call on real ranks. ``placements`` are x's, one per mesh dim: ``"R"``, ``"S(k)"``, or
    ``"S(k)#j"`` for member j (shard order) of a co-shard of axis k (:func:`placements_to_dims_mapping`).
    ``op`` is a family name; the family's :class:`LaunchOp` checks the options it reads."""

    case_id: str
    op: str
    shape: tuple[int, ...]
    mesh_shape: tuple[int, ...]
    placements: tuple[str, ...]
    normalized_shape: tuple[int, ...] = ()
    """The trailing axes normalised, for an op that takes them."""
    data_format: str = ""
    """The layout given to the functional API, for an op that takes one."""
    training: bool = True
    """For an op with running statistics."""
    groups: int = 0
    """For an op that normalises groups of channels: their number (>= 1, dividing C)."""
    weight: bool = True
    bias: bool = True
    backward: bool = True
    epsilon: float = 1e-5
    api: str = ""
    """The public call, for an op reached through more than one (its :class:`LaunchOp` names them)."""
    porder: float = 2.0
    """For a norm of order p: p (any number, or +-inf)."""
    axis: int = -1
    """For an op reducing one axis: that axis."""
    keepdims: bool = False
    """For a reducing op: keep the reduced axis as size 1."""
    seed: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        for name in ("shape", "mesh_shape", "placements", "normalized_shape", "notes"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        self._check_types()
        ops = launch_ops()
        if self.op not in ops:
            raise ValueError(f"op must be one of {tuple(ops)}, got {self.op!r}")
        if len(self.placements) != len(self.mesh_shape):
            raise ValueError(f"{self.case_id}: {len(self.placements)} placements for a {len(self.mesh_shape)}-D mesh")
        placements_to_dims_mapping(self.placements, len(self.shape))
        ops[self.op].check(self)

    def _check_types(self) -> None:
        """Field types, so that a hand-written case file fails here, with its line, not in a rank."""
        def whole(value: Any) -> bool:
            return isinstance(value, int) and not isinstance(value, bool)

        if not isinstance(self.case_id, str):
            raise ValueError(f"case_id must be a string, got {self.case_id!r}")
        for name in ("shape", "mesh_shape", "normalized_shape"):
            values = getattr(self, name)
            if not all(whole(v) and v > 0 for v in values):
                raise ValueError(f"{self.case_id}: {name} must hold positive integers, got {list(values)!r}")
        if not self.shape or not self.mesh_shape:
            raise ValueError(f"{self.case_id}: shape and mesh_shape must not be empty")
        if not all(isinstance(p, str) for p in self.placements):
            raise ValueError(f"{self.case_id}: placements must be strings like 'R', 'S(0)' or 'S(0)#1', got "
                             f"{list(self.placements)!r}")
        for name in ("training", "weight", "bias", "backward", "keepdims"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{self.case_id}: {name} must be true or false, got {getattr(self, name)!r}")
        if not isinstance(self.op, str) or not isinstance(self.data_format, str) or not isinstance(self.api, str):
            raise ValueError(f"{self.case_id}: op, data_format and api must be strings")
        if not isinstance(self.porder, (int, float)) or isinstance(self.porder, bool) \
                or isinstance(self.porder, int) and abs(self.porder) > sys.float_info.max \
                or math.isnan(self.porder):  # (the int test first: isnan() converts to a float; Paddle's attr is one)
            raise ValueError(f"{self.case_id}: porder must be a number a float holds (or +-Infinity), got "
                             f"{self.porder!r:.40}")
        if not (isinstance(self.epsilon, (int, float)) and not isinstance(self.epsilon, bool)
                and math.isfinite(self.epsilon) and self.epsilon > 0):
            raise ValueError(f"{self.case_id}: epsilon must be a number > 0, got {self.epsilon!r}")
        if not whole(self.seed) or not whole(self.groups) or not whole(self.axis):
            raise ValueError(f"{self.case_id}: seed, groups and axis must be integers, got {self.seed!r}, "
                             f"{self.groups!r}, {self.axis!r}")

    @property
    def launch_op(self) -> LaunchOp:
        return launch_ops()[self.op]

    @property
    def world_size(self) -> int:
        return math.prod(self.mesh_shape)

    @property
    def dims_mapping(self) -> DimsMapping:
        """x's dims_mapping; a co-sharded axis holds its mesh dims in shard order."""
        return placements_to_dims_mapping(self.placements, len(self.shape))

    @property
    def begin_norm_axis(self) -> int:
        """The first normalised axis when the op takes ``normalized_shape``: ``x.ndim - len(normalized_shape)``."""
        return len(self.shape) - len(self.normalized_shape)

    @property
    def channel_axis(self) -> int:
        """The channel axis of x under the layout the op sees (the op's :meth:`LaunchOp.channel_axis`)."""
        return self.launch_op.channel_axis(self)

    @property
    def param_shape(self) -> tuple[int, ...]:
        """Shape of weight and bias (the op's :meth:`LaunchOp.param_shape`)."""
        return self.launch_op.param_shape(self)

    def describe(self) -> str:
        mesh = "x".join(map(str, self.mesh_shape))
        parts = [self.op, f"x{list(self.shape)}", f"[{','.join(self.placements)}]@{mesh}",
                 *self.launch_op.describe(self)]
        affine = {(True, True): "w+b", (False, False): "no-affine", (True, False): "w-only", (False, True): "b-only"}
        parts.append(affine[(self.weight, self.bias)])
        if not self.backward:
            parts.append("fwd-only")
        return " ".join(parts)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key, value in data.items():
            if isinstance(value, tuple):
                data[key] = list(value)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LaunchCase:
        if not isinstance(data, dict):
            raise ValueError(f"a case is a JSON object of LaunchCase fields, got {type(data).__name__} {data!r:.60}")
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown case fields {sorted(unknown)}; known: {sorted(known)}")
        return cls(**data)


# --------------------------------------------------------------------------- building grids
def placement_grid(ndim: int, mesh_ndim: int) -> list[tuple[str, ...]]:
    """Every x placement on a 1-D or 2-D mesh: each mesh dim ``R`` or ``S(axis)``, no axis on two
    mesh dims. A rank-n tensor has n+1 on a 1-D mesh and (n+1)^2 - n on a 2-D one."""
    if mesh_ndim not in (1, 2):
        raise ValueError("default grids exist for 1-D and 2-D meshes only; pass --cases for others")
    options = ["R"] + [f"S({a})" for a in range(ndim)]
    if mesh_ndim == 1:
        return [(p,) for p in options]
    return [(p0, p1) for p0 in options for p1 in options if p0 == "R" or p0 != p1]


def scaled(shape: Sequence[int], factor: int) -> tuple[int, ...]:
    return tuple(s * factor for s in shape)


def grid_factor(mesh_shape: Sequence[int]) -> int:
    """Shapes are written for mesh dims of size 2; scale so every mesh dim divides every axis."""
    lcm = math.lcm(*mesh_shape)
    return max(1, lcm // math.gcd(lcm, 2))


#: weight and bias both given or both left out: every placement gets these.
AFFINE_MAIN = ((True, True), (False, False))
#: weight alone, bias alone: the rarer variants, given to a few placements (:func:`takes_rare_variants`).
AFFINE_EXTRA = ((True, False), (False, True))


def check_layout(case: LaunchCase) -> None:
    """data_format is one of the channel layouts and fits x's rank (every op with a layout)."""
    if case.data_format not in DATA_FORMAT_NDIM:
        raise ValueError(f"{case.case_id}: data_format must be one of {sorted(DATA_FORMAT_NDIM)}")
    if DATA_FORMAT_NDIM[case.data_format] != len(case.shape):
        raise ValueError(f"{case.case_id}: {case.data_format} needs a rank-{DATA_FORMAT_NDIM[case.data_format]} x")


def takes_rare_variants(placements: tuple[str, ...], axis: int) -> bool:
    """The placements that also get the rarer variants: all R, and ``axis`` alone on mesh dim 0."""
    return set(placements) == {"R"} or (placements[0] == f"S({axis})" and set(placements[1:]) <= {"R"})


def coshard_orders(mesh_ndim: int) -> list[tuple[int, ...]]:
    """The member lists (mesh dims in shard order) of the co-shard set: mesh dims 0 and 1 in both
    orders; on a mesh of 3 or more dims also 1 and 2 in both orders, and every mesh dim in both
    directions."""
    if mesh_ndim < 2:
        raise ValueError("a co-shard needs a mesh of 2 or more dims")
    orders: list[tuple[int, ...]] = [(0, 1), (1, 0)]
    if mesh_ndim >= 3:
        every = tuple(range(mesh_ndim))
        orders += [(1, 2), (2, 1), every, every[::-1]]
    return orders


def coshard_placement_strings(axis: int, members: Sequence[int], mesh_ndim: int) -> tuple[str, ...]:
    """x's placements with ``axis`` co-sharded along ``members`` (in shard order), other mesh dims R:
    ``coshard_placement_strings(0, (1, 0), 2) == ("S(0)#1", "S(0)#0")``."""
    out = ["R"] * mesh_ndim
    for order, mesh_dim in enumerate(members):
        out[mesh_dim] = f"S({axis})#{order}"
    return tuple(out)


class AddCase(Protocol):
    """Appends one case to the grid being built (the grid numbers the ids)."""

    def __call__(self, **fields: Any) -> None: ...


# --------------------------------------------------------------------------- predictions
class RuleErrorInfo(Protocol):
    """What a predicted rule error carries (:class:`paddle_spmd_port.outcome.ErrorInfo`)."""

    @property
    def family(self) -> str: ...
    @property
    def message(self) -> str: ...


@dataclass(frozen=True)
class TensorExpectation:
    """The port's placement and local shape for one observable tensor."""

    name: str
    stage: str
    rule_output: str
    """The rule output it is predicted from; "" for x_grad (the leaf's own placement)."""
    placements: tuple[str, ...]
    local_shape: tuple[int, ...]
    """Rank 0's local shape."""
    rank_local_shapes: tuple[tuple[int, ...] | None, ...] = ()
    """Every rank's (ranks 0..n-1, the mesh's row-major order; None where Paddle cannot lay the
    tensor out): the last shard of an uneven axis is smaller."""

    def local_shape_on(self, rank: int) -> tuple[int, ...] | None:
        return self.rank_local_shapes[rank] if rank < len(self.rank_local_shapes) else self.local_shape


@dataclass(frozen=True)
class StagePrediction:
    stage: str
    """``forward`` or ``backward``."""
    result: SpmdResult | None = None
    rule_error: RuleErrorInfo | None = None
    """The rule raises this (Paddle raises the same before running the kernel)."""
    kernel_error: tuple[str, ...] = ()
    """The rule answers, but the kernel must fail: fragments its message must contain."""
    kernel_reason: str = ""
    crash: str | None = None
    """Paddle's process dies in this stage (the port rejects the input); never executed."""

    @property
    def runs(self) -> bool:
        """True when the port expects the stage to complete."""
        return self.result is not None and not self.kernel_error and self.crash is None

    def describe(self) -> str:
        if self.crash is not None:
            return f"native crash ({self.crash})"
        if self.rule_error is not None:
            return f"rule raises {self.rule_error}"
        if self.kernel_error:
            return f"kernel error: {self.kernel_reason}"
        return "runs"


@dataclass(frozen=True)
class Prediction:
    case_id: str
    forward: StagePrediction
    backward: StagePrediction | None
    """None when the case has no backward or the forward rule raises. Present even when the
    forward kernel is predicted to fail, so that a crash can still be avoided if it runs."""
    tensors: tuple[TensorExpectation, ...] = field(default_factory=tuple)
    numeric_risks: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    """(tensor, why): values the port's placements say cannot match one device."""

    def skip_reason(self, stage: str) -> str | None:
        """Why the runner must not execute ``stage`` (a predicted process crash), else None."""
        pred = self.forward if stage == "forward" else self.backward
        if pred is not None and pred.crash is not None:
            return f"port predicts a native crash: {pred.crash}"
        return None

    def expectation(self, name: str) -> TensorExpectation | None:
        return next((t for t in self.tensors if t.name == name), None)


@dataclass(frozen=True)
class OpPrediction:
    """What a family's :meth:`LaunchOp.predict` works out; the room adds what every op shares
    (an uneven co-shard's abort, x_grad, weight_grad and bias_grad)."""

    forward: StagePrediction
    backward: StagePrediction | None = None
    tensors: tuple[TensorExpectation, ...] = ()
    numeric_risks: tuple[tuple[str, str], ...] = ()


class RuleCall(Protocol):
    """Calls the port's rule ``key`` on ``args`` for one stage (the launch room supplies it): the
    rule's answer, its error, or a predicted crash where the port rejects the input."""

    def __call__(self, stage: str, key: str, *args: Any) -> StagePrediction: ...


@dataclass(frozen=True)
class Inputs:
    """The case's tensors as the rules see them: x as placed, weight and bias Replicate (None when left out)."""

    mesh: ProcessMesh
    x: DistTensorSpec
    scale: DistTensorSpec | None
    bias: DistTensorSpec | None

    @classmethod
    def of(cls, case: LaunchCase) -> Inputs:
        mesh = ProcessMesh(case.mesh_shape)
        pshape = case.param_shape
        return cls(mesh, mapped_spec(case.shape, case.dims_mapping, mesh),
                   replicated(pshape, mesh) if case.weight else None,
                   replicated(pshape, mesh) if case.bias else None)


def mapped_spec(shape: Sequence[int], dims_mapping: DimsMapping, mesh: ProcessMesh) -> DistTensorSpec:
    return DistTensorSpec(tuple(shape), tuple(dims_mapping), mesh)


def replicated(shape: Sequence[int], mesh: ProcessMesh) -> DistTensorSpec:
    return mapped_spec(shape, (-1,) * len(shape), mesh)


def local_shapes(shape: Sequence[int], attr: DistAttr, mesh_shape: Sequence[int]) -> tuple[tuple[int, ...] | None, ...]:
    """Each rank's shape (ranks 0..n-1 in the mesh's row-major order) of a tensor distributed as
    ``attr``: :func:`~paddle_spmd_port.notation.local_shape` (Paddle's cut, a co-sharded axis cut
    along its mesh dims in shard order; Partial keeps the shape), None on a rank where Paddle
    cannot lay the tensor out."""
    out: list[tuple[int, ...] | None] = []
    for coords in itertools.product(*(range(n) for n in mesh_shape)):
        try:
            out.append(local_shape(shape, attr.dims_mapping, coords, mesh_shape))
        except ShardError:
            out.append(None)
    return tuple(out)


def expect(name: str, stage: str, rule_output: str, attr: DistAttr, shape: Sequence[int],
           case: LaunchCase) -> TensorExpectation:
    """The expectation for one observed tensor placed like ``attr``."""
    ranks = local_shapes(shape, attr, case.mesh_shape)
    first = local_shape(shape, attr.dims_mapping, (0,) * len(case.mesh_shape), case.mesh_shape)  # starts at 0
    return TensorExpectation(name, stage, rule_output, attr.placements(), first, ranks)


def kernel_rejects(pred: StagePrediction, reason: str, *fragments: str) -> StagePrediction:
    """``pred`` with a predicted kernel error whose message carries ``fragments``."""
    return StagePrediction(pred.stage, result=pred.result, kernel_reason=reason, kernel_error=tuple(fragments))


# --------------------------------------------------------------------------- the op interface
class LaunchOp:
    """One op's real runs: its cases, its prediction, and how a rank calls it.

    The in-rank hooks get ``api`` (an object with ``np``, ``paddle``, ``dist`` and ``F``, Paddle's
    modules as the runner imported them) and the case's tensors; they never import Paddle."""

    #: The op (its family's name): the ``op`` of its cases.
    name: ClassVar[str] = ""
    #: Where its cases come in the built-in grid and the co-shard set (ids are numbered in that
    #: order, so an id of an older report names the same case).
    order: ClassVar[int] = 0
    #: The rule keys its eager call runs (``--rules`` selects cases by them).
    rules: ClassVar[tuple[str, ...]] = ()
    #: The op takes running statistics: they are given (Replicate), updated in place, compared by value.
    running_stats: ClassVar[bool] = False
    #: device -> why this op's cases cannot run there (they are reported skipped, as expected).
    no_kernel: ClassVar[dict[str, str]] = {}
    #: Markdown bullets for the report's section on what eager mode shows of this op.
    report_notes: ClassVar[tuple[str, ...]] = ()
    #: The op's outputs that the functional call drops but :meth:`extra_outputs` exposes.
    extra_output_names: ClassVar[tuple[str, ...]] = ()

    # -- cases ---------------------------------------------------------------------------------
    def check(self, case: LaunchCase) -> None:
        """Raise ValueError naming what is wrong with the op's options in ``case``."""

    def channel_axis(self, case: LaunchCase) -> int:
        raise ValueError(f"{case.case_id}: {self.name} has no channel axis")

    def param_shape(self, case: LaunchCase) -> tuple[int, ...]:
        """Shape of weight and bias: (C,) unless the op says otherwise."""
        return (case.shape[case.channel_axis],)

    def describe(self, case: LaunchCase) -> list[str]:
        """The op's options in :meth:`LaunchCase.describe`."""
        return [case.data_format]

    def default_cases(self, mesh_shape: tuple[int, ...], backend: str, add: AddCase) -> None:
        """Add the op's cases of the built-in grid for a mesh of 1 or 2 dims."""

    def coshard_cases(self, members: tuple[int, ...], mesh_shape: tuple[int, ...], add: AddCase) -> None:
        """Add the op's cases of the co-shard set with the co-sharded axis on ``members``."""

    # -- prediction ----------------------------------------------------------------------------
    def predict(self, case: LaunchCase, inputs: Inputs, call: RuleCall) -> OpPrediction:
        raise NotImplementedError(f"{self.name} predicts no launch case")

    # -- in the ranks --------------------------------------------------------------------------
    def call(self, api: Any, case: LaunchCase, x: Any, w: Any, b: Any, rm: Any, rv: Any) -> Any:
        """The functional call, on dense tensors (the reference) and on distributed ones; returns out."""
        raise NotImplementedError(f"{self.name} has no eager call")

    def call_distributed(self, api: Any, run: Any, x: Any, w: Any, b: Any, rm: Any,
                         rv: Any) -> tuple[Any, Any, Any, Any, Any]:
        """The distributed call: out, and the weight, bias and running statistics it used (``run``
        is the rank's case run: ``case``, ``mesh``, the numpy arrays ``w``, ``b``, ``rm``, ``rv``)."""
        return self.call(api, run.case, x, w, b, rm, rv), w, b, rm, rv

    def extra_outputs(self, api: Any, case: LaunchCase, x: Any, w: Any, b: Any, rm: Any, rv: Any,
                      reference: bool) -> dict[str, Any]:
        """The outputs of :data:`extra_output_names` (forward only, on fresh running statistics);
        ``reference``: on one device, only those defined there."""
        return {}


def _no_reasons() -> Mapping[str, str]:
    return {}


@dataclass(frozen=True)
class LaunchPlan(FamilyPart):
    """A family's real runs (``LAUNCH`` in ``ops/<family>/launch.py``): its :class:`LaunchOp`, and
    the rule keys no eager call reaches, each with the reason."""

    MODULE = "launch"
    ATTRIBUTE = "LAUNCH"

    op: LaunchOp | None = None
    not_launched: Mapping[str, str] = field(default_factory=_no_reasons)

    def problems(self, family: OpFamily) -> list[str]:
        out = []
        if self.op is not None and self.op.name != family.name:
            out.append(f"the op is {self.op.name!r}; a folder holds its own op")
        if foreign := foreign_keys(family, self.not_launched):
            out.append(f"not_launched names {foreign}, not the family's keys")
        return out


#: Why a family without ``ops/<family>/launch.py`` has no real runs.
NO_LAUNCH_PART = "its family declares no launch part (ops/<family>/launch.py): no real-run case exists"


def _collect() -> tuple[dict[str, LaunchOp], dict[str, str]]:
    from .. import FAMILIES, family_part

    found: list[LaunchOp] = []
    not_launched: dict[str, str] = {}
    for name, family in FAMILIES.items():
        plan = family_part(name, LaunchPlan)
        if plan is None:
            not_launched.update(dict.fromkeys(family.keys, NO_LAUNCH_PART.replace("<family>", name)))
            continue
        not_launched.update(plan.not_launched)
        if plan.op is not None:
            found.append(plan.op)
    return {op.name: op for op in sorted(found, key=lambda o: o.order)}, not_launched


@functools.cache
def _found() -> tuple[dict[str, LaunchOp], dict[str, str]]:
    """Collected once, on first use: a case file names its op before any family module is needed."""
    return _collect()


def launch_ops() -> dict[str, LaunchOp]:
    """op -> its :class:`LaunchOp`, in the order of the built-in grid."""
    return _found()[0]


def not_launched() -> dict[str, str]:
    """Rule keys no launch case reaches, and why, family by family."""
    return _found()[1]


def coverage_problems(rules: dict[str, tuple[str, ...]], reasons: dict[str, str], keys: Sequence[str]) -> list[str]:
    """What is wrong with how the launch room accounts for ``keys``: each must be run by an op
    (``rules``: op -> its keys) or declared not launched with a reason, not both, and nothing else."""
    reached = {k for ks in rules.values() for k in ks}
    problems = [f"{k}: reached by a case and declared not launched" for k in sorted(reached & set(reasons))]
    problems += [f"{k}: no launch case reaches it and no family says why" for k in keys
                 if k not in reached and k not in reasons]
    problems += [f"{k}: not a rule key" for k in sorted((reached | set(reasons)) - set(keys))]
    problems += [f"{k}: the reason is empty" for k, why in reasons.items() if not why.strip()]
    return problems


def each_op() -> Iterator[LaunchOp]:
    return iter(launch_ops().values())


__all__ = ["AFFINE_EXTRA", "AFFINE_MAIN", "AddCase", "Inputs", "LaunchCase", "LaunchOp", "LaunchPlan",
           "NO_LAUNCH_PART", "OpPrediction", "Prediction", "RuleCall", "StagePrediction", "TensorExpectation",
           "check_layout", "coshard_orders", "coshard_placement_strings", "coverage_problems", "each_op", "expect",
           "grid_factor", "kernel_rejects", "launch_ops", "local_shapes", "mapped_spec", "not_launched",
           "parse_placement", "placement_grid", "placements_to_dims_mapping", "replicated", "scaled",
           "takes_rare_variants"]
