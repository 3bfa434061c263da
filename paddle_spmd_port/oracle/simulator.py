"""The virtual mesh: run a rule's answer on simulated ranks in numpy and judge it.

Given a case (global shapes, mesh, attributes) and a rule's answer (:class:`SpmdResult`):

1. make global inputs that cannot pass by accident (random signs and magnitudes, no zeros, no
   symmetry; statistics inputs consistent with x, as the forward op would have saved them);
2. give every rank its local piece according to the answer's *input* dist attrs: a Shard takes
   the rank's slice, a Partial(SUM) mesh dim splits the value into unequal random addends (their
   sum over the partial ranks is the value);
3. run the op's local kernel on every rank (:mod:`.kernels`, gathered from the families'
   ``kernel.py``; a kernel that all-reduces its statistics does so, by default, over the mesh dims
   that shard x's batch axis);
4. check every output against the single-device result the way the answer's *output* attrs
   claim: for each rank, sum the locals over its Partial mesh dims, and compare with the rank's
   slice of the global result. That covers "shards equal slices", "partial outputs sum to the
   global value" and "replicated outputs are the same on every rank".

Sharding convention (measured on Paddle 3.3.1 with ``dist.shard_tensor``; *not* numpy's
``array_split``): an axis of size ``n`` over ``k`` ranks is cut in chunks of ``ceil(n/k)``; rank
``i`` holds ``[i*ceil, min((i+1)*ceil, n))``. So 7 over 4 is 2,2,2,1 and 6 over 4 is 2,2,2,0
(an empty shard); 5 over 4 fails in Paddle (rank 3 would start at 6 > 5). array_split would give
2,2,2,1 / 2,2,1,1 / 2,1,1,1 instead.

Verdicts::

    sound             every checked output is right on every rank
    unsound           some output is wrong: the first tensor, its max error, what the claim was
    unrunnable        a rank's local shapes do not fit the kernel (Paddle rejects them, or
                      reads the wrong entries / past the end without checking), or a shard
                      cannot be laid out
    local-stats-only  rules whose model normalises with batch statistics: wrong against the
                      global result, but right if every group of ranks holding one batch shard
                      normalises with its own statistics (per-rank "local batch statistics",
                      i.e. plain data parallelism)
    op-rejects        the op itself rejects the case on one device (not the rule's fault)

Outputs not checked: those a kernel returns as None (e.g. a buffer that is empty on CPU, or
statistics Paddle leaves uninitialised in some mode: each family's ``kernel.py`` says which).
"""

from __future__ import annotations

import itertools
import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..case import Case
from ..notation import ShardError, axis_range, local_shape, shard_range
from ..types import DimsMapping, DistAttr, DistTensorSpec, SpmdResult, mesh_dims_of
from . import kernels
from .kernels import MODELS, KernelRejects, OpModel, required

SOUND, UNSOUND, UNRUNNABLE, LOCAL_STATS, RULE_ERROR, OP_REJECTS = (
    "sound", "unsound", "unrunnable", "local-stats-only", "rule-error", "op-rejects")
LABELS = (SOUND, UNSOUND, UNRUNNABLE, LOCAL_STATS, RULE_ERROR, OP_REJECTS)

RTOL, ATOL = 1e-8, 1e-10
"""float64 everywhere: right answers agree to ~1e-13, wrong ones are off by O(0.1)."""

SYNC_GROUPS = ("batch", "mesh")


@dataclass(frozen=True)
class VirtualMesh:
    shape: tuple[int, ...]

    @cached_property
    def coords(self) -> tuple[tuple[int, ...], ...]:
        """Mesh coordinates of every rank, row-major (rank ``r`` is ``coords[r]``)."""
        return tuple(itertools.product(*(range(s) for s in self.shape)))

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def group(self, rank: int, dims: frozenset[int] | set[int]) -> tuple[int, ...]:
        """The ranks that agree with ``rank`` on every mesh dim outside ``dims``."""
        mine = self.coords[rank]
        return tuple(r for r, c in enumerate(self.coords)
                     if all(c[d] == mine[d] for d in range(len(self.shape)) if d not in dims))


def _ranges(shape: Sequence[int], dims_mapping: DimsMapping, coords: Sequence[int],
            mesh_shape: Sequence[int]) -> tuple[slice, ...]:
    """Per axis, the slice the rank at ``coords`` holds (co-shards: :func:`~paddle_spmd_port.notation.axis_range`)."""
    return tuple(slice(*axis_range(size, entry, coords, mesh_shape)) for size, entry in zip(shape, dims_mapping,
                                                                                           strict=True))


def _local_shape(shape: Sequence[int], dims_mapping: DimsMapping, coords: Sequence[int],
                 mesh_shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(hi - lo for lo, hi in (axis_range(size, entry, coords, mesh_shape)
                                         for size, entry in zip(shape, dims_mapping, strict=True)))


def local_slice(value: np.ndarray, dims_mapping: DimsMapping, coords: Sequence[int],
                mesh_shape: Sequence[int]) -> np.ndarray:
    return value[_ranges(value.shape, dims_mapping, coords, mesh_shape)]


def distribute(value: np.ndarray, attr: DistAttr, mesh: VirtualMesh, rng: np.random.Generator) -> list[np.ndarray]:
    """Every rank's local piece of ``value`` under ``attr`` (Partial dims: unequal random addends)."""
    partial = sorted(attr.partial_dims)
    if partial:
        count = math.prod(mesh.shape[p] for p in partial)
        magnitude = 1.0 + float(np.abs(value).mean()) if value.size else 1.0
        addends = [rng.standard_normal(value.shape) * magnitude * rng.uniform(0.5, 3.0) for _ in range(count - 1)]
        addends.append(value - sum(addends, np.zeros_like(value)))
    pieces = []
    for coords in mesh.coords:
        base = value
        if partial:
            base = addends[int(np.ravel_multi_index([coords[p] for p in partial], [mesh.shape[p] for p in partial]))]
        pieces.append(local_slice(base, attr.dims_mapping, coords, mesh.shape))
    return pieces


# --------------------------------------------------------------------------- verdicts
@dataclass(frozen=True)
class TensorFailure:
    tensor: str
    claim: str
    """The output attr the rule claimed, e.g. ``[-1] P{1}``."""
    problem: str
    """``values`` | ``shape`` | ``claim-rank``."""
    max_error: float
    rank: int
    detail: str

    def __str__(self) -> str:
        return f"{self.tensor} {self.claim}: {self.detail}"


@dataclass(frozen=True)
class Verdict:
    label: str
    tensor: str = ""
    max_error: float | None = None
    detail: str = ""
    kind: str = ""
    """The cause, in a few stable words; verdicts with the same rule, label and kind are one
    distinct bug."""
    symptoms: str = ""
    """Which tensors failed and how, e.g. ``x_grad:values | scale_grad:values``."""
    failures: tuple[TensorFailure, ...] = ()
    repaired: Verdict | None = None
    """For an unrunnable answer of a family with a channel axis to repair on (its facts'
    ``channel_axis``): the verdict once the per-channel inputs are resharded to follow x's channel
    axis (what else would be wrong)."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"label": self.label}
        for key in ("tensor", "detail", "kind", "symptoms"):
            if getattr(self, key):
                data[key] = getattr(self, key)
        if self.max_error is not None:
            data["max_error"] = self.max_error if math.isfinite(self.max_error) else str(self.max_error)
        if self.repaired is not None:
            data["repaired"] = self.repaired.to_json()
        return data

    def summary(self) -> str:
        text = self.label
        if self.tensor:
            text += f" [{self.tensor}]"
        if self.max_error is not None and math.isfinite(self.max_error):
            text += f" max error {self.max_error:.3g}"
        return text + (f": {self.detail}" if self.detail else "")


# --------------------------------------------------------------------------- global inputs
def kernel_attrs(case: Case) -> dict[str, Any]:
    """The op's attributes as the kernel sees them: the rule's model may set its own (a rule that
    reads none, a flag derived from the inputs present), and the family may reduce data_format to
    what the functional API hands the op."""
    model = MODELS[case.rule]
    attrs = dict(zip((n for n, _ in case.spec.attrs), case.attr_values(), strict=True))
    if model.attrs is not None:
        attrs = model.attrs(attrs, frozenset(n for n, s in case.named_inputs().items() if s is not None))
    if model.facts.layout is not None and "data_format" in attrs:
        attrs["data_format"] = model.facts.layout(str(attrs["data_format"]))
    return attrs


def _stable_seed(*parts: object) -> int:
    return zlib.crc32(repr(parts).encode())


def _data(rng: np.random.Generator, shape: Sequence[int]) -> np.ndarray:
    """Signed values spread over two orders of magnitude, with a random offset."""
    shape = tuple(shape)
    return rng.standard_normal(shape) * np.exp(rng.uniform(-1.5, 1.0, shape)) + rng.uniform(-1.5, 1.5)


def _param(rng: np.random.Generator, shape: Sequence[int], kind: str) -> np.ndarray:
    shape = tuple(shape)
    if kind == "scale":
        return rng.choice([-1.0, 1.0], shape) * rng.uniform(0.4, 2.5, shape)
    if kind == "variance":
        return rng.uniform(0.3, 2.5, shape)
    return rng.uniform(-2.0, 2.0, shape)


@dataclass(frozen=True)
class CaseData:
    """Global inputs of a case and the single-device result (``reference`` is None when the op
    rejects the case on one device; ``rejected`` says why)."""

    inputs: dict[str, np.ndarray | None]
    reference: dict[str, np.ndarray | None] | None
    rejected: str = ""


def data_key(case: Case) -> tuple:
    return (case.rule, tuple(None if s is None else s.shape for s in case.inputs),
            tuple(sorted(kernel_attrs(case).items())))


def make_case_data(case: Case) -> CaseData:
    model = MODELS[case.rule]
    attrs = kernel_attrs(case)
    rng = np.random.default_rng(_stable_seed("data", *data_key(case)))
    specs = case.named_inputs()
    x_spec = specs["x"]
    arrays: dict[str, np.ndarray | None] = {}
    for name in model.inputs:
        spec = specs.get(name)
        if spec is None or name == "reserve_space":
            arrays[name] = None
        elif name in ("x", "out_grad", "y_grad"):
            arrays[name] = _data(rng, spec.shape)
        elif name in ("scale",):
            arrays[name] = _param(rng, spec.shape, "scale")
        elif name in ("variance", "variance_out"):
            arrays[name] = _param(rng, spec.shape, "variance")
        elif name == "saved_variance":
            arrays[name] = 1.0 / np.sqrt(_param(rng, spec.shape, "variance"))
        else:
            arrays[name] = _param(rng, spec.shape, "other")
    _consistent_statistics(case, attrs, arrays, x_spec)
    try:
        reference = model.run([arrays], attrs, [[0]])[0]
    except KernelRejects as exc:
        return CaseData(arrays, None, str(exc))
    return CaseData(arrays, reference)


def _consistent_statistics(case: Case, attrs: dict[str, Any], arrays: dict[str, np.ndarray | None],
                           x_spec: DistTensorSpec | None) -> None:
    """Grad inputs that the forward op saved are computed from x (when their shapes fit), as the
    rule's model says."""
    fill = MODELS[case.rule].saved_inputs
    if arrays.get("x") is None or x_spec is None or fill is None:
        return
    fill(arrays, attrs)


# --------------------------------------------------------------------------- simulation
@dataclass
class _Run:
    """One simulation: inputs laid out on the ranks and the per-rank outputs."""

    case: Case
    model: OpModel
    mesh: VirtualMesh
    attrs: dict[str, Any]
    data: CaseData
    in_attrs: dict[str, DistAttr]
    out_attrs: dict[str, DistAttr]
    sync_group: str
    per_rank: list[dict[str, np.ndarray | None]] = field(default_factory=list)

    @property
    def x_attr(self) -> DistAttr:
        return self.in_attrs["x"]

    def batch_mesh_dims(self) -> tuple[int, ...]:
        """The mesh dims that split x's batch axis, in shard order (several for a co-shard)."""
        dm = self.x_attr.dims_mapping
        return mesh_dims_of(dm[0]) if dm else ()

    def groups(self) -> list[tuple[int, ...]]:
        if self.sync_group == "mesh":
            return [tuple(range(self.mesh.size))] * self.mesh.size
        dims = frozenset(self.batch_mesh_dims())
        return [self.mesh.group(r, dims) for r in range(self.mesh.size)]


CAUSE_LAYOUT_BOTH = "an input attr is Shard and Partial on the same mesh dim"
CAUSE_LAYOUT_RANK = "an input attr does not fit its tensor"
CAUSE_LAYOUT_SHARD = "a shard cannot be laid out"
CAUSE_PARTIAL_IN = "a Partial input is fed to the non-linear kernel"
CAUSE_UNEVEN_SYNC = "uneven batch shards: the sync kernel averages per-rank means"
CAUSE_CLAIM_BOTH = "an output claim is Shard and Partial on the same mesh dim"
CAUSE_PARTIAL_SHAPE = "an output claimed Partial holds a different slice on each rank (Shard would be right)"
CAUSE_PARTIAL_SUM = "an output claimed Partial does not sum to the value"
CAUSE_SHAPE = "an output's local shape differs from its claim"
CAUSE_VALUES = "an output's values differ from its claim"


def _layout_cause(reason: str) -> str:
    if "both shards" in reason:
        return CAUSE_LAYOUT_BOTH
    if "cannot" in reason or "start" in reason:
        return CAUSE_LAYOUT_SHARD
    return CAUSE_LAYOUT_RANK


def _how_checked(checked: bool | None) -> str:
    if checked is None:
        return "not measured on Paddle"
    return "Paddle rejects it" if checked else "Paddle does not check it"


def _kernel_cause(exc: KernelRejects, model: OpModel) -> str:
    how = _how_checked(exc.checked)
    if exc.tensor in model.facts.statistics:
        return f"statistics do not match the local x ({how})"
    if exc.tensor in model.facts.per_channel:
        return f"a per-channel input does not match the local channel count ({how})"
    if exc.tensor in ("scale", "bias"):
        return f"scale/bias do not match a local row ({how})"
    if exc.tensor in ("mean", "variance"):
        return f"mean/variance do not match the local rows ({how})"
    if exc.tensor in ("out_grad", "y_grad", "y"):
        return f"{exc.tensor}'s local shape differs from x's ({how})"
    return f"{exc.tensor}: local shape the kernel cannot use ({how})"


def _layout(run: _Run, rng: np.random.Generator) -> str:
    """Fill ``run.per_rank``; returns a reason when the answer cannot be laid out."""
    run.per_rank = [{} for _ in range(run.mesh.size)]
    for name in run.model.inputs:
        value = run.data.inputs[name]
        if value is None:
            for ins in run.per_rank:
                ins[name] = None
            continue
        attr = run.in_attrs[name]
        if len(attr.dims_mapping) != value.ndim:
            return (f"the answer gives {name} the dist attr {attr} (rank {len(attr.dims_mapping)}) for a "
                    f"rank-{value.ndim} tensor")
        used = [m for e in attr.dims_mapping for m in mesh_dims_of(e)]
        bad = [m for m in used + sorted(attr.partial_dims) if not 0 <= m < len(run.mesh.shape)]
        if bad:
            return f"the answer gives {name} the dist attr {attr}, which uses mesh dims outside the mesh"
        both = set(used) & set(attr.partial_dims)
        if both:
            return f"the answer gives {name} the dist attr {attr}: mesh dim {min(both)} both shards an axis and is " \
                   "Partial, which no tensor can be"
        try:
            pieces = distribute(value, attr, run.mesh, rng)
        except ShardError as exc:
            return f"{name} {attr}: {exc}"
        for ins, piece in zip(run.per_rank, pieces, strict=True):
            ins[name] = piece
    return ""


def _check(run: _Run, outs: list[dict[str, np.ndarray | None]],
           expected: Callable[[str, int], np.ndarray], names: Sequence[str] | None = None) -> list[TensorFailure]:
    failures: list[TensorFailure] = []
    assert run.data.reference is not None
    for name in run.model.outputs if names is None else names:
        ref = run.data.reference.get(name)
        if ref is None or name not in run.out_attrs:
            continue
        attr = run.out_attrs[name]
        claim = str(attr)
        dm, partial = attr.dims_mapping, frozenset(attr.partial_dims)
        used = {m for e in dm for m in mesh_dims_of(e)}
        got = [o.get(name) for o in outs]
        locs = [v for v in got if v is not None]
        if len(locs) != len(got):
            continue
        if len(dm) != ref.ndim or any(m >= len(run.mesh.shape) for m in sorted(used) + sorted(partial)):
            failures.append(TensorFailure(name, claim, "claim-rank", math.inf, 0,
                                          f"a rank-{len(dm)} claim for a rank-{ref.ndim} tensor"))
            continue
        if used & partial:
            failures.append(TensorFailure(name, claim, "claim-invalid", math.inf, 0,
                                          f"mesh dim {min(used & partial)} both shards an axis and is Partial"))
            continue
        shape_problem = None
        for r, coords in enumerate(run.mesh.coords):
            try:
                want = _local_shape(ref.shape, dm, coords, run.mesh.shape)
            except ShardError as exc:
                shape_problem = TensorFailure(name, claim, "shape", math.inf, r, str(exc))
                break
            if locs[r].shape != want:
                shape_problem = TensorFailure(
                    name, claim, "shape", math.inf, r,
                    f"rank {r} holds shape {list(locs[r].shape)}; the claim means {list(want)} of the global "
                    f"{list(ref.shape)}")
                break
        if shape_problem is not None:
            failures.append(shape_problem)
            continue
        worst: tuple[float, int, float] | None = None
        seen: set[tuple[int, ...]] = set()
        for r, coords in enumerate(run.mesh.coords):
            grp = run.mesh.group(r, partial) if partial else (r,)
            if grp in seen:
                continue
            seen.add(grp)
            total = locs[grp[0]] if len(grp) == 1 else sum(locs[q] for q in grp)
            want_values = local_slice(expected(name, r), dm, coords, run.mesh.shape)
            if want_values.size == 0:
                continue
            err = float(np.max(np.abs(total - want_values)))
            scale = float(np.max(np.abs(want_values)))
            if not err <= ATOL + RTOL * scale and (worst is None or err > worst[0]):
                worst = (err, r, scale)
        if worst is not None:
            err, r, scale = worst
            how = "the sum over its Partial ranks" if partial else "its local value"
            failures.append(TensorFailure(name, claim, "values", err, r,
                                          f"on rank {r}, {how} is off by {err:.3g} (values up to {scale:.3g})"))
    return failures


def _partial_inputs(run: _Run) -> list[str]:
    return [n for n in run.model.inputs if run.data.inputs[n] is not None and run.in_attrs[n].partial_dims]


def _unsound(run: _Run, failures: list[TensorFailure]) -> Verdict:
    first = failures[0]
    symptoms = [f"{f.tensor}:{f.problem}" for f in failures]
    partial_in = _partial_inputs(run)
    uneven = False
    if partial_in:
        symptoms.append("partial inputs: " + ",".join(partial_in))
    if run.model.facts.mean_of_rank_means:
        split = math.prod(run.mesh.shape[m] for m in run.batch_mesh_dims())
        uneven = split > 1 and bool(required(run.data.inputs, "x").shape[0] % split)
    claimed_partial = [f for f in failures if "P{" in f.claim]
    if partial_in:
        cause = CAUSE_PARTIAL_IN
    elif uneven:
        cause = CAUSE_UNEVEN_SYNC
    elif any(f.problem == "claim-invalid" for f in failures):
        cause = CAUSE_CLAIM_BOTH
    elif any(f.problem == "shape" for f in claimed_partial):
        cause = CAUSE_PARTIAL_SHAPE
    elif claimed_partial:
        cause = CAUSE_PARTIAL_SUM
    elif any(f.problem != "values" for f in failures):
        cause = CAUSE_SHAPE
    else:
        cause = CAUSE_VALUES
    detail = "; ".join(str(f) for f in failures)
    return Verdict(UNSOUND, first.tensor, first.max_error, detail, cause, " | ".join(symptoms), tuple(failures))


def _batch_stats(run: _Run) -> bool:
    batch_statistics = run.model.batch_statistics
    return batch_statistics is not None and batch_statistics(run.attrs)


def _local_stats_expected(run: _Run) -> Callable[[str, int], np.ndarray] | None:
    """Expected values if each batch shard were normalised on its own (None if not applicable)."""
    dims = run.batch_mesh_dims()
    if not dims or not _batch_stats(run):
        return None
    n = required(run.data.inputs, "x").shape[0]
    blocks = []
    block_coords = list(itertools.product(*(range(run.mesh.shape[m]) for m in dims)))  # one block per batch shard
    for j in block_coords:
        coords = [0] * len(run.mesh.shape)
        for m, c in zip(dims, j, strict=True):
            coords[m] = c
        lo, hi = axis_range(n, dims if len(dims) > 1 else dims[0], coords, run.mesh.shape)
        ins = {k: (v[lo:hi] if k in run.model.batch_axis_inputs and v is not None else v)
               for k, v in run.data.inputs.items()}
        try:
            blocks.append(run.model.run([ins], run.attrs, [[0]])[0])
        except KernelRejects:
            return None

    def expected(name: str, rank: int) -> np.ndarray:
        if name in run.model.batch_axis_outputs:
            return np.concatenate([required(blk, name) for blk in blocks], axis=0)
        if set(dims) & run.out_attrs[name].partial_dims:
            return sum((required(blk, name) for blk in blocks), np.zeros_like(required(blocks[0], name)))
        return required(blocks[block_coords.index(tuple(run.mesh.coords[rank][m] for m in dims))], name)

    return expected


def _execute(run: _Run, rng: np.random.Generator, *, allow_repair: bool) -> Verdict:
    problem = _layout(run, rng)
    if problem:
        return Verdict(UNRUNNABLE, detail=problem, kind=_layout_cause(problem), symptoms="layout")
    try:
        outs = run.model.run(run.per_rank, run.attrs, run.groups())
    except KernelRejects as exc:
        how = "unmeasured" if exc.checked is None else "rejected" if exc.checked else "unchecked"
        repaired = _repair(run, rng) if allow_repair else None
        return Verdict(UNRUNNABLE, exc.tensor, None, f"rank {exc.rank}: {exc}", _kernel_cause(exc, run.model),
                       f"{how}:{exc.tensor}", (), repaired)
    reference = run.data.reference
    assert reference is not None
    failures = _check(run, outs, lambda name, _r: required(reference, name))
    if not failures:
        return Verdict(SOUND)
    local = _local_stats_expected(run)
    if local is not None and not _check(run, outs, local):
        v = _unsound(run, failures)
        return Verdict(LOCAL_STATS, v.tensor, v.max_error, v.detail,
                       "batch axis sharded: right only with per-rank (local batch) statistics", v.symptoms, v.failures)
    return _unsound(run, failures)


def _repair(run: _Run, rng: np.random.Generator) -> Verdict | None:
    """Reshard the per-channel inputs to follow x's channel axis and run again (families with a
    channel axis to repair on)."""
    fixed = _repaired_attrs(run)
    if fixed is None:
        return None
    again = _Run(run.case, run.model, run.mesh, run.attrs, run.data, fixed, run.out_attrs, run.sync_group)
    return _execute(again, rng, allow_repair=False)


def _repaired_attrs(run: _Run) -> dict[str, DistAttr] | None:
    """The per-channel inputs on x's channel mesh dim; None for a family without a channel axis to
    repair on (its facts' ``channel_axis``)."""
    x = required(run.data.inputs, "x")
    facts = run.model.facts
    if facts.channel_axis is None:
        return None
    c, channel_inputs = facts.channel_axis(run.attrs, x.ndim), facts.per_channel
    d = run.x_attr.dims_mapping[c] if len(run.x_attr.dims_mapping) == x.ndim else -1
    fixed = dict(run.in_attrs)
    changed = False
    for name in run.model.inputs:
        attr = fixed[name]
        if name in channel_inputs and run.data.inputs[name] is not None and attr.dims_mapping != (d,):
            fixed[name] = DistAttr((d,), frozenset(attr.partial_dims) - {d}, attr.mesh)
            changed = True
    return fixed if changed else None


_DATA_CACHE: dict[tuple, CaseData] = {}


def case_data(case: Case) -> CaseData:
    key = data_key(case)
    data = _DATA_CACHE.get(key)
    if data is None:
        if len(_DATA_CACHE) > 4096:
            _DATA_CACHE.clear()
        data = _DATA_CACHE[key] = make_case_data(case)
    return data


def simulate(case: Case, result: SpmdResult, *, sync_group: str = "batch") -> Verdict:
    """The verdict on ``result`` (a rule's answer to ``case``); see the module doc."""
    if sync_group not in SYNC_GROUPS:
        raise ValueError(f"sync_group must be one of {SYNC_GROUPS}, got {sync_group!r}")
    applicable = op_rejects(case)
    if applicable is not None:
        return applicable
    spec = case.spec
    if len(result.inputs) != len(spec.result_inputs) or len(result.outputs) != len(spec.result_outputs):
        return Verdict(UNSOUND, detail=f"the answer has {len(result.inputs)} inputs / {len(result.outputs)} outputs, "
                       f"expected {len(spec.result_inputs)} / {len(spec.result_outputs)}",
                       kind="the answer has the wrong number of attrs")
    run, rng = _new_run(case, result, sync_group)
    with np.errstate(all="ignore"):  # partial statistics can go negative under a sqrt: that is a finding, not noise
        return _execute(run, rng, allow_repair=True)


def op_rejects(case: Case) -> Verdict | None:
    """An ``op-rejects`` verdict when the op cannot run ``case`` even on one device, else None."""
    data = case_data(case)
    if data.reference is None:
        return Verdict(OP_REJECTS, detail=data.rejected, kind="the op rejects this case on one device")
    return None


def _new_run(case: Case, result: SpmdResult, sync_group: str) -> tuple[_Run, np.random.Generator]:
    spec = case.spec
    run = _Run(case, MODELS[case.rule], VirtualMesh(tuple(case.mesh.shape)), kernel_attrs(case), case_data(case),
               dict(zip(spec.result_inputs, result.inputs, strict=True)),
               dict(zip(spec.result_outputs, result.outputs, strict=True)), sync_group)
    return run, np.random.default_rng(_stable_seed("addends", case.rule, case.mesh.shape, str(result)))


def explain(case: Case, result: SpmdResult, *, sync_group: str = "batch") -> dict[str, list[str]]:
    """For each output that ``result`` claims wrongly: the claims (``[dims_mapping] P{..}``) under
    which the values the ranks actually hold would be right. Runs the repaired layout when the
    answer itself cannot run (see :attr:`Verdict.repaired`)."""
    from ..grid import placements  # the same enumeration as the grid's

    run, rng = _new_run(case, result, sync_group)
    if run.data.reference is None or _layout(run, rng):
        return {}
    with np.errstate(all="ignore"):
        try:
            outs = run.model.run(run.per_rank, run.attrs, run.groups())
        except KernelRejects:
            fixed = _repaired_attrs(run)
            if fixed is None:
                return {}
            run = _Run(run.case, run.model, run.mesh, run.attrs, run.data, fixed, run.out_attrs, run.sync_group)
            if _layout(run, rng):
                return {}
            try:
                outs = run.model.run(run.per_rank, run.attrs, run.groups())
            except KernelRejects:
                return {}
        reference = run.data.reference
        assert reference is not None  # checked above; a repaired run keeps the same data
        answer: dict[str, list[str]] = {}
        for failure in _check(run, outs, lambda name, _r: required(reference, name)):
            name = failure.tensor
            ok = []
            for dm, partial in placements(required(reference, name).ndim, len(run.mesh.shape)):
                trial = DistAttr(dm, partial, case.mesh)
                probe = _Run(run.case, run.model, run.mesh, run.attrs, run.data, run.in_attrs,
                             {**run.out_attrs, name: trial}, run.sync_group)
                if not _check(probe, outs, lambda n, _r: required(reference, n), names=(name,)):
                    ok.append(str(trial))
            answer[name] = ok
    return answer


def resharded_inputs(case: Case, result: SpmdResult) -> int:
    """How many present inputs the answer wants in a different distribution than given."""
    named = case.named_inputs()
    count = 0
    for name, attr in zip(case.spec.result_inputs, result.inputs, strict=False):
        spec = named.get(name)
        if spec is None:
            continue
        if tuple(attr.dims_mapping) != tuple(spec.dims_mapping) or frozenset(attr.partial_dims) != spec.partial_dims:
            count += 1
    return count


__all__ = ["LABELS", "Verdict", "TensorFailure", "VirtualMesh", "simulate", "resharded_inputs", "shard_range",
           "local_shape", "local_slice", "distribute", "kernels"]
