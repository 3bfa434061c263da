"""What the port says a real run of a :class:`~.cases.LaunchCase` will do (pure Python).

The case is mapped onto the rule the op's dist API calls, with the arguments the functional API
really passes, and the rule's answer is turned into per-mesh-dim placements and local shapes::

    functional call                     forward rule                grad rule
    F.layer_norm(x, ns, w, b)           layer_norm_infer_spmd       layer_norm_grad_infer_spmd
                                        begin_norm_axis = x.ndim - len(ns)
    F.batch_norm(x, rm, rv, w, b, fmt)  batch_norm_infer_spmd       batch_norm_grad_infer_spmd
                                        data_format = 'NCHW' if fmt[1] == 'C' else 'NHWC'
    nn.SyncBatchNorm (GPU only)         sync_batch_norm_infer_spmd  sync_batch_norm_grad_infer_spmd
    F.group_norm(x, g, eps, w, b, fmt)  group_norm_infer_spmd       group_norm_grad_infer_spmd
                                        data_format = 'NCHW' if fmt[1] == 'C' else 'NHWC'
    F.instance_norm(x, w=w, b=b)        instance_norm_infer_spmd    instance_norm_grad_infer_spmd
                                        saved_mean / saved_variance reach the grad rule 1-D [N*C]
                                        (InstanceNormInferMeta's shape), so it always raises

The grad rule gets x as placed by the case, mean/variance (or mean_out, saved_* ...) with the
forward rule's output mappings, and out_grad with the forward rule's ``out`` mapping (the runner
feeds the upstream gradient with exactly the placement ``out`` came out with).

What eager mode lets one observe, and so what is compared::

    tensor                     predicted from                       compared
    out                        forward outputs[0]                   placements, local shape, values
    mean_out .. saved_variance forward outputs[1..4] (batch_norm)    placements, local shape
                               (group_norm's mean / variance and instance_norm's saved_* are
                               not returned by the functional API: not compared)
    weight_grad, bias_grad     grad outputs[1], [2]                 placements (Partial too), local shape, values
    x_grad                     x's own placement (a leaf's .grad    placements (co-shard members with their
                               is resharded back to the leaf's)     shard order), local shape, values
    running_mean / _var        -                                    values only: updated in place, they keep
                                                                    the placement they were given

Three ways a stage can be predicted to fail:

* the rule raises (e.g. layer_norm with a 2-D weight: "The ndim of scale in layer_norm should be 1");
* the rule answers, but the placements it picks give the kernel inputs whose local shapes disagree
  (batch_norm with C sharded over >1 rank keeps x split on C but replicates scale: the kernel
  rejects a scale of C entries against C/n local channels; instance_norm alike);
* the port rejects the input because Paddle crashes on it (batch_norm_grad with weight or bias
  None while C is sharded: SIGSEGV). The runner never executes such a stage;
* x is co-sharded and its pieces differ in size across ranks (10 rows over a 2x2 co-shard: 3,2,3,2):
  the forward's reshard of x to the rule's single-mesh-dim placement aborts the ranks
  (:data:`UNEVEN_COSHARD`, a forward crash; the runner never executes it).

A predicted numeric error (``numeric_risks``): batch_norm's C-vector inputs with other local sizes
than x's channels (:func:`_bn_local_checks`); instance_norm keeping a split of a spatial axis the op
reduces over (a 5-D x's axis 4: :func:`_in_local_checks`).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import InvalidSpecError, SpmdError
from ..notation import ShardError, local_shape
from ..outcome import ErrorInfo
from ..rules import (
    batch_norm_grad_infer_spmd,
    batch_norm_infer_spmd,
    group_norm_grad_infer_spmd,
    group_norm_infer_spmd,
    instance_norm_grad_infer_spmd,
    instance_norm_infer_spmd,
    layer_norm_grad_infer_spmd,
    layer_norm_infer_spmd,
    sync_batch_norm_grad_infer_spmd,
    sync_batch_norm_infer_spmd,
)
from ..rules.signatures import kernel_layout
from ..types import DistAttr, DistTensorSpec, Mapping, ProcessMesh, SpmdResult
from .cases import LaunchCase

BN_STAT_OUTPUTS = ("mean_out", "variance_out", "saved_mean", "saved_variance")

#: The forward crash predicted for an unevenly co-sharded x. Measured on 4 CPU ranks (gloo, Paddle
#: 3.3.1, 2x2 mesh, x [10,4,8] co-sharded on axis 0 along (0, 1): pieces 3,2,3,2): ``F.layer_norm``,
#: ``dist.reshard`` to [S(0),R] and to [R,R] each end with gloo's ``op.preamble.length <= op.nbytes.
#: 192 vs 128`` (SIGABRT / SIGTERM on the ranks; the ranks holding 3 rows first return 6 rows, gathered
#: 12 of 10); the same x with 8 rows (even pieces) and a plain uneven shard (7 rows over 2 ranks)
#: reshard correctly. On 8 ranks (2x2x2), ``F.layer_norm`` on the same x co-sharded along (0, 1, 2)
#: or (1, 2) aborts the same way. The port predicts it for every co-sharded axis of x whose pieces differ.
UNEVEN_COSHARD = "coshard:uneven-reshard"

#: Observed tensors whose placement eager mode does not take from the rule, and why.
NOT_RULE_PLACED = {
    "running_mean": "updated in place; keeps the placement it was given",
    "running_var": "updated in place; keeps the placement it was given",
}


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
    rule_error: ErrorInfo | None = None
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


def case_mesh(case: LaunchCase) -> ProcessMesh:
    return ProcessMesh(case.mesh_shape)


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


def _spec(shape: Sequence[int], dims_mapping: Mapping, mesh: ProcessMesh) -> DistTensorSpec:
    return DistTensorSpec(tuple(shape), tuple(dims_mapping), mesh)


def _replicated(shape: Sequence[int], mesh: ProcessMesh) -> DistTensorSpec:
    return _spec(shape, (-1,) * len(shape), mesh)


def _call(stage: str, fn, *args) -> StagePrediction:  # a port rule function
    try:
        return StagePrediction(stage, result=fn(*args))
    except InvalidSpecError as exc:
        return StagePrediction(stage, crash=f"{exc.kind}: {exc}")
    except (SpmdError, ValueError, NotImplementedError) as exc:
        return StagePrediction(stage, rule_error=ErrorInfo.from_exception(exc))


def _bn_local_checks(case: LaunchCase, pred: StagePrediction) -> tuple[StagePrediction, tuple[tuple[str, str], ...]]:
    """Consequences of the rule's input placements for batch_norm's kernel.

    Every C-vector input (mean, variance, scale, bias) is resharded to the rule's input placement
    before the kernel runs; the kernel needs each of them to hold as many entries as x holds local
    channels. BatchNormInferMeta (3.3.1) checks len(scale) and len(bias) against C only when both
    are given: then a mismatch is a predicted kernel error. Otherwise the kernel runs and reads
    the first local-C entries on every rank: a predicted numeric error. The running statistics
    keep their own (Replicate) placement while the rule places mean_out/variance_out: when the
    two differ, the in-place update is a predicted numeric error as well.
    """
    if pred.result is None:
        return pred, ()
    ins, outs = pred.result.inputs, pred.result.outputs
    c_axis = case.channel_axis
    x_shapes = local_shapes(case.shape, ins[0], case.mesh_shape)
    risks: list[tuple[str, str]] = []
    mismatched = []
    for name, present, attr in (("mean", True, ins[1]), ("variance", True, ins[2]), ("scale", case.weight, ins[3]),
                                ("bias", case.bias, ins[4])):
        # the first rank whose local channels and entries differ (every rank's count, uneven shards included)
        p_shapes = local_shapes(case.param_shape, attr, case.mesh_shape)
        differ = next(((xs[c_axis], ps[0]) for xs, ps in zip(x_shapes, p_shapes, strict=True)
                       if xs is not None and ps is not None and xs[c_axis] != ps[0]), None)
        if present and differ is not None:
            mismatched.append((name, attr, *differ))
    both = case.weight and case.bias
    for name, attr, c_local, p_local in mismatched:
        if name in ("scale", "bias") and both:
            reason = (f"x keeps C (axis {c_axis}) split to {c_local} local channels, but {name} is placed "
                      f"{list(attr.placements())} with {p_local} entries")
            return StagePrediction(pred.stage, result=pred.result, kernel_reason=reason,
                                   kernel_error=(f"the shape of {name} must equal to [{c_local}]",
                                                 f"the shape of {name} is [{p_local}]")), ()
    for name, attr, c_local, p_local in mismatched:
        if name in ("mean", "variance") and case.training:
            continue  # training mode computes the batch statistics; the running ones are only updated
        why = (f"{name} placed {list(attr.placements())} has {p_local} entries for {c_local} local channels; "
               f"unchecked, the kernel uses the first {c_local} on every rank")
        risks += [(t, why) for t in ("out", "x_grad", "weight_grad", "bias_grad")]
    running = tuple("R" for _ in case.mesh_shape)
    for name, attr in (("running_mean", outs[1]), ("running_var", outs[2])):
        if attr.placements() != running:
            risks.append((name, f"updated in place: the tensor stays {list(running)} while the rule places "
                                f"{'mean_out' if name == 'running_mean' else 'variance_out'} "
                                f"{list(attr.placements())}"))
    return pred, tuple(risks)


def _in_local_checks(case: LaunchCase, pred: StagePrediction) -> tuple[StagePrediction, tuple[tuple[str, str], ...]]:
    """What instance_norm's kernel makes of the rule's input placements.

    scale and bias are replicated ([-1]) whatever x's C does; the kernel's shape check runs on the
    local tensors, each given input on its own (scale first): with x's C split to fewer local
    channels than scale or bias holds, a predicted kernel error. The kernel normalises each (n, c)
    slice over every spatial axis of its local x: a spatial axis the rule leaves split
    (PADDLE-QUIRK(in-5d-last-axis)) gives each rank the statistics of its own piece, a predicted
    numeric error.
    """
    if pred.result is None:
        return pred, ()
    x_attr = pred.result.inputs[0]
    channels = case.shape[1]
    local_c = next((xs[1] for xs in local_shapes(case.shape, x_attr, case.mesh_shape)
                    if xs is not None and xs[1] != channels), None)
    for name, present in (("scale", case.weight), ("bias", case.bias)):
        if present and local_c is not None:
            reason = (f"x keeps C (axis 1) split to {local_c} local channels ({list(x_attr.placements())}), but "
                      f"{name} is replicated with {channels} entries")
            return StagePrediction(pred.stage, result=pred.result, kernel_reason=reason,
                                   kernel_error=(f"the shape of {name} must equal to [{local_c}]",
                                                 f"the shape of {name} is [{channels}]")), ()
    split_spatial = [a for a in range(2, len(case.shape)) if x_attr.dims_mapping[a] != -1]
    if not split_spatial:
        return pred, ()
    why = (f"x keeps spatial axis {split_spatial} split ({list(x_attr.placements())}); instance norm reduces "
           "over every spatial axis: each rank normalises its own piece")
    return pred, tuple((t, why) for t in ("out", "x_grad", "weight_grad", "bias_grad"))


def uneven_coshard(case: LaunchCase) -> str | None:
    """Why resharding x aborts the ranks (:data:`UNEVEN_COSHARD`), or None: the first co-sharded
    axis of x whose pieces differ in size across ranks (an empty piece or a piece Paddle cannot lay
    out counts as differing)."""
    for axis, entry in enumerate(case.dims_mapping):
        if type(entry) is not tuple:
            continue
        x_axis = tuple(-1 if a != axis else entry for a in range(len(case.shape)))
        sizes = {None if s is None else s[axis]
                 for s in local_shapes(case.shape, DistAttr.make(x_axis, frozenset(), case_mesh(case)),
                                       case.mesh_shape)}
        if len(sizes) > 1:
            pieces = sorted(sizes, key=lambda v: -1 if v is None else v, reverse=True)
            return (f"{UNEVEN_COSHARD}: x axis {axis} ({case.shape[axis]}) co-sharded along mesh dims {list(entry)} "
                    f"has pieces of {', '.join('?' if v is None else str(v) for v in pieces)} rows; Paddle 3.3.1's "
                    "reshard of an uneven co-shard aborts the ranks (gloo: op.preamble.length <= op.nbytes)")
    return None


def _expect(name: str, stage: str, rule_output: str, attr: DistAttr, shape: Sequence[int],
            case: LaunchCase) -> TensorExpectation:
    ranks = local_shapes(shape, attr, case.mesh_shape)
    first = local_shape(shape, attr.dims_mapping, (0,) * len(case.mesh_shape), case.mesh_shape)  # starts at 0
    return TensorExpectation(name, stage, rule_output, attr.placements(), first, ranks)


def predict(case: LaunchCase) -> Prediction:
    """The port's expectation for every observable tensor of ``case``."""
    mesh = case_mesh(case)
    x = _spec(case.shape, case.dims_mapping, mesh)
    pshape = case.param_shape
    scale = _replicated(pshape, mesh) if case.weight else None
    bias = _replicated(pshape, mesh) if case.bias else None
    tensors: list[TensorExpectation] = []
    backward: StagePrediction | None = None
    risks: tuple[tuple[str, str], ...] = ()

    if case.op == "layer_norm":
        bna = case.begin_norm_axis
        forward = _call("forward", layer_norm_infer_spmd, x, scale, bias, case.epsilon, bna)
        if forward.result is not None:
            out, mean, var = forward.result.outputs
            tensors.append(_expect("out", "forward", "out", out, case.shape, case))
            if case.backward:
                stat_shape = case.shape[:bna]
                backward = _call("backward", layer_norm_grad_infer_spmd, x, scale, bias,
                                 _spec(stat_shape, mean.dims_mapping, mesh), _spec(stat_shape, var.dims_mapping, mesh),
                                 _spec(case.shape, out.dims_mapping, mesh), case.epsilon, bna)
    elif case.op == "group_norm":
        fmt = kernel_layout(case.data_format)  # what F.group_norm passes to the op
        forward = _call("forward", group_norm_infer_spmd, x, scale, bias, case.epsilon, case.groups, fmt)
        if forward.result is not None:
            out, mean, var = forward.result.outputs
            tensors.append(_expect("out", "forward", "out", out, case.shape, case))
            if case.backward:
                stat_shape = (case.shape[0], case.groups)
                y = _spec(case.shape, out.dims_mapping, mesh)
                backward = _call("backward", group_norm_grad_infer_spmd, x, scale, bias, y,
                                 _spec(stat_shape, mean.dims_mapping, mesh), _spec(stat_shape, var.dims_mapping, mesh),
                                 y, case.epsilon, case.groups, fmt)
    elif case.op == "instance_norm":
        forward, risks = _in_local_checks(case, _call("forward", instance_norm_infer_spmd, x, scale, bias,
                                                      case.epsilon))
        if forward.result is not None:
            out = forward.result.outputs[0]
            tensors.append(_expect("out", "forward", "out", out, case.shape, case))
            if case.backward:
                # InstanceNormInferMeta makes saved_mean / saved_variance 1-D [N*C]; the forward rule's
                # 2-D mapping is not what the grad rule's rank check reads (it reads the shape)
                stat = _replicated((case.shape[0] * case.shape[1],), mesh)
                backward = _call("backward", instance_norm_grad_infer_spmd, x, scale, bias, stat, stat,
                                 _spec(case.shape, out.dims_mapping, mesh), case.epsilon)
    else:
        c = pshape
        fmt = kernel_layout(case.data_format)
        stats = (_replicated(c, mesh), _replicated(c, mesh))
        if case.op == "batch_norm":
            use_global = not case.training
            forward, risks = _bn_local_checks(case, _call(
                "forward", batch_norm_infer_spmd, x, *stats, scale, bias, not case.training, 0.9, case.epsilon, fmt,
                use_global, False))
        else:
            forward = _call("forward", sync_batch_norm_infer_spmd, x, *stats, scale, bias, not case.training, 0.9,
                            case.epsilon, fmt, False, False)
        if forward.result is not None:
            outs = forward.result.outputs
            tensors.append(_expect("out", "forward", "out", outs[0], case.shape, case))
            if case.op == "batch_norm":
                for i, name in enumerate(BN_STAT_OUTPUTS, start=1):
                    tensors.append(_expect(name, "forward", name, outs[i], c, case))
            if case.backward:
                og = _spec(case.shape, outs[0].dims_mapping, mesh)
                saved = [_spec(c, a.dims_mapping, mesh) for a in outs[1:5]]
                if case.op == "batch_norm":
                    backward = _call("backward", batch_norm_grad_infer_spmd, x, scale, bias, *saved, None, og,
                                     0.9, case.epsilon, fmt, not case.training, not case.training, False)
                else:
                    backward = _call("backward", sync_batch_norm_grad_infer_spmd, x, scale, bias, saved[2], saved[3],
                                     None, og, 0.9, case.epsilon, fmt, not case.training, False, False)

    abort = uneven_coshard(case)
    if abort is not None:
        forward = dataclasses.replace(forward, crash=abort)
    if backward is not None and backward.result is not None:
        grads = backward.result.outputs
        tensors.append(_expect("x_grad", "backward", "", DistAttr.make(case.dims_mapping, frozenset(), mesh),
                               case.shape, case))  # the leaf's own placement, not the rule's x_grad
        for name, present, attr in (("weight_grad", case.weight, grads[1]), ("bias_grad", case.bias, grads[2])):
            if present:
                rule_name = "scale_grad" if name == "weight_grad" else "bias_grad"
                tensors.append(_expect(name, "backward", rule_name, attr, pshape, case))
    return Prediction(case.case_id, forward, backward, tuple(tensors), risks)
