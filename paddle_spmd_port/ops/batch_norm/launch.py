"""batch_norm on real ranks: ``F.batch_norm(x, running_mean, running_var, weight, bias, training,
epsilon=..., data_format=fmt)``.

The eager call runs ``batch_norm`` (forward: ``is_test = use_global_stats = not training``,
momentum 0.9, the kernel layout ``'NCHW' if fmt[1] == 'C' else 'NHWC'``) and ``batch_norm_grad``
(backward: mean_out .. saved_variance with the forward's output mappings, out_grad placed like
``out``). ``F.batch_norm`` returns only ``out``; the rank makes the same ``_C_ops.batch_norm`` call
again, forward only, to see mean_out, variance_out, saved_mean and saved_variance.

What the kernel makes of the rule's placements (:func:`local_checks`): every C-vector input
(mean, variance, scale, bias) is resharded to the rule's input placement before the kernel runs,
and the kernel needs each to hold as many entries as x holds local channels.

Built-in grid, for a mesh whose every dim has size 2::

    layouts             NC [4,6], NCL [4,6,8], NLC [4,8,6], NCHW [4,6,2,4], NHWC [4,2,4,6],
                        NCDHW [2,6,2,2,4], NDHWC [2,2,2,4,6]
    x placements        every R / S(axis) combination
    variants            training x (weight and bias both / none); eval too on a 1-D mesh, and on a
                        2-D mesh where a mesh dim is R; weight-only and bias-only where C is sharded
    C on a size-1 dim   NCHW, NHWC, NC on a 1x2 / 2x1 mesh (2 ranks, 1-D mesh only): the only way
                        the rule's "C stays sharded" path runs in 3.3.1

Co-shard set: NCHW [8,8,2,8] co-sharded on N (eval too), C or W (normalised); NHWC [8,2,8,8] on C.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from ...types import DistAttr
from ..kit.launch import (
    AFFINE_EXTRA,
    AFFINE_MAIN,
    AddCase,
    Inputs,
    LaunchCase,
    LaunchOp,
    LaunchPlan,
    OpPrediction,
    RuleCall,
    StagePrediction,
    TensorExpectation,
    check_layout,
    coshard_placement_strings,
    expect,
    grid_factor,
    kernel_rejects,
    local_shapes,
    mapped_spec,
    placement_grid,
    replicated,
    scaled,
    takes_rare_variants,
)
from ..kit.layout import channel_axis, kernel_layout

NOT_LAUNCHED = {
    "batch_norm_static": "a static-graph rule; eager calls run the forward and grad rules only",
}

#: The forward's statistics outputs, after ``out``.
STAT_OUTPUTS = ("mean_out", "variance_out", "saved_mean", "saved_variance")

CONFIGS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("NC", (4, 6)),
    ("NCL", (4, 6, 8)),
    ("NLC", (4, 8, 6)),
    ("NCHW", (4, 6, 2, 4)),
    ("NHWC", (4, 2, 4, 6)),
    ("NCDHW", (2, 6, 2, 2, 4)),
    ("NDHWC", (2, 2, 2, 4, 6)),
)

#: The co-shard set's x: (shape, data_format, {co-sharded axis: what it is}).
COSHARD_CONFIGS: tuple[tuple[tuple[int, ...], str, dict[int, str]], ...] = (
    ((8, 8, 2, 8), "NCHW", {0: "N", 1: "C", 3: "W (normalised)"}),
    ((8, 2, 8, 8), "NHWC", {3: "C"}),
)


def local_checks(case: LaunchCase, pred: StagePrediction) -> tuple[StagePrediction, tuple[tuple[str, str], ...]]:
    """Consequences of the rule's input placements for the kernel.

    BatchNormInferMeta (3.3.1) checks len(scale) and len(bias) against C only when both are given:
    then a mismatch is a predicted kernel error. Otherwise the kernel runs and reads the first
    local-C entries on every rank: a predicted numeric error. The running statistics keep their
    own (Replicate) placement while the rule places mean_out/variance_out: when the two differ,
    the in-place update is a predicted numeric error as well.
    """
    if pred.result is None:
        return pred, ()
    ins, outs = pred.result.inputs, pred.result.outputs
    c_axis = case.channel_axis
    x_shapes = local_shapes(case.shape, ins[0], case.mesh_shape)
    risks: list[tuple[str, str]] = []
    mismatched: list[tuple[str, DistAttr, int, int]] = []
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
            return kernel_rejects(pred, reason, f"the shape of {name} must equal to [{c_local}]",
                                  f"the shape of {name} is [{p_local}]"), ()
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


class BatchNormLaunch(LaunchOp):
    name = "batch_norm"
    order = 1
    rules = ("batch_norm", "batch_norm_grad")
    running_stats = True
    extra_output_names: ClassVar[tuple[str, ...]] = STAT_OUTPUTS
    report_notes = (
        "compared too: batch_norm's `mean_out`/`variance_out`/`saved_mean`/`saved_variance` placements and "
        "local shapes (seen through the same `_C_ops.batch_norm` call `F.batch_norm` makes, forward only).",)

    def check(self, case: LaunchCase) -> None:
        check_layout(case)

    def channel_axis(self, case: LaunchCase) -> int:
        return channel_axis(case.data_format, len(case.shape))

    def describe(self, case: LaunchCase) -> list[str]:
        return [case.data_format, "train" if case.training else "eval"]

    def default_cases(self, mesh_shape: tuple[int, ...], backend: str, add: AddCase) -> None:
        mesh_ndim, factor = len(mesh_shape), grid_factor(mesh_shape)
        for fmt, shape in CONFIGS:
            shape = scaled(shape, factor)
            c = channel_axis(fmt, len(shape))
            for pl in placement_grid(len(shape), mesh_ndim):
                with_eval = mesh_ndim == 1 or "R" in pl  # the rule ignores is_test: eval on a subset on 2-D meshes
                for training in (True, False) if with_eval else (True,):
                    rare = takes_rare_variants(pl, c) or (mesh_ndim == 1 and f"S({c})" in pl)
                    extra = AFFINE_EXTRA if training and rare else ()
                    for w, b in AFFINE_MAIN + extra:
                        add(op=self.name, shape=shape, mesh_shape=mesh_shape, placements=pl, data_format=fmt,
                            training=training, weight=w, bias=b)
        if math.prod(mesh_shape) == 2 and mesh_ndim == 1:
            # C on a size-1 mesh dim: the rule keeps C sharded and the kernel can run.
            for fmt, shape in (("NCHW", (4, 6, 2, 4)), ("NHWC", (4, 2, 4, 6)), ("NC", (4, 6))):
                c = channel_axis(fmt, len(shape))
                for mesh2, pl in (((1, 2), (f"S({c})", "S(0)")), ((2, 1), ("S(0)", f"S({c})")),
                                  ((1, 2), (f"S({c})", "R"))):
                    for training in (True, False):
                        add(op=self.name, shape=shape, mesh_shape=mesh2, placements=pl, data_format=fmt,
                            training=training)

    def coshard_cases(self, members: tuple[int, ...], mesh_shape: tuple[int, ...], add: AddCase) -> None:
        factor = grid_factor(mesh_shape)
        for shape, fmt, axes in COSHARD_CONFIGS:
            shape = scaled(shape, factor)
            for axis, what in axes.items():
                placements = coshard_placement_strings(axis, members, len(mesh_shape))
                variants = [(True, True, True), (True, False, False)]
                if what == "N":
                    variants.append((False, True, True))
                for training, w, b in variants:
                    add(op=self.name, shape=shape, mesh_shape=mesh_shape, placements=placements, training=training,
                        weight=w, bias=b, notes=(f"x co-sharded on axis {axis}: {what}",), data_format=fmt)

    # -- prediction: the forward and grad calls are what differ from sync_batch_norm ------------
    def forward(self, case: LaunchCase, inputs: Inputs, call: RuleCall, stats: tuple[Any, Any],
                fmt: str) -> tuple[StagePrediction, tuple[tuple[str, str], ...]]:
        use_global = not case.training
        return local_checks(case, call("forward", "batch_norm", inputs.x, *stats, inputs.scale, inputs.bias,
                                       not case.training, 0.9, case.epsilon, fmt, use_global, False))

    def grad(self, case: LaunchCase, inputs: Inputs, call: RuleCall, saved: list[Any], out_grad: Any,
             fmt: str) -> StagePrediction:
        return call("backward", "batch_norm_grad", inputs.x, inputs.scale, inputs.bias, *saved, None, out_grad, 0.9,
                    case.epsilon, fmt, not case.training, not case.training, False)

    def predict(self, case: LaunchCase, inputs: Inputs, call: RuleCall) -> OpPrediction:
        mesh, c = inputs.mesh, case.param_shape
        fmt = kernel_layout(case.data_format)
        forward, risks = self.forward(case, inputs, call, (replicated(c, mesh), replicated(c, mesh)), fmt)
        if forward.result is None:
            return OpPrediction(forward, None, (), risks)
        outs = forward.result.outputs
        tensors: list[TensorExpectation] = [expect("out", "forward", "out", outs[0], case.shape, case)]
        for i, name in enumerate(self.extra_output_names, start=1):
            tensors.append(expect(name, "forward", name, outs[i], c, case))
        backward = None
        if case.backward:
            og = mapped_spec(case.shape, outs[0].dims_mapping, mesh)
            saved = [mapped_spec(c, a.dims_mapping, mesh) for a in outs[1:5]]
            backward = self.grad(case, inputs, call, saved, og, fmt)
        return OpPrediction(forward, backward, tuple(tensors), risks)

    # -- in the ranks -----------------------------------------------------------------------
    def call(self, api: Any, case: LaunchCase, x: Any, w: Any, b: Any, rm: Any, rv: Any) -> Any:
        return api.F.batch_norm(x, rm, rv, weight=w, bias=b, training=case.training, epsilon=case.epsilon,
                                data_format=case.data_format)

    def extra_outputs(self, api: Any, case: LaunchCase, x: Any, w: Any, b: Any, rm: Any, rv: Any,
                      reference: bool) -> dict[str, Any]:
        """The same ``_C_ops.batch_norm`` call ``F.batch_norm`` makes, forward only; saved_mean and
        saved_variance are defined in training mode only (on one device they are left out in eval)."""
        with api.paddle.no_grad():
            outs = api.paddle._C_ops.batch_norm(x, rm, rv, w, b, not case.training, 0.9, case.epsilon,
                                                kernel_layout(case.data_format), not case.training, False)
        if not reference:
            return dict(zip(STAT_OUTPUTS, outs[1:5], strict=True))
        names = STAT_OUTPUTS if case.training else STAT_OUTPUTS[:2]
        return dict(zip(names, outs[1:5], strict=False))


#: The family's real runs, read by the launch room.
LAUNCH = LaunchPlan(BatchNormLaunch(), NOT_LAUNCHED)
