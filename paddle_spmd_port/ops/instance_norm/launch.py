"""instance_norm on real ranks: ``F.instance_norm(x, weight=w, bias=b, eps=epsilon, data_format=fmt)``.

The eager call runs ``instance_norm`` and ``instance_norm_grad``. ``F.instance_norm`` passes no
layout to the op, so the cases are channel-first only. saved_mean / saved_variance reach the grad
rule 1-D [N*C] (InstanceNormInferMeta's shape), so the grad rule always raises ("The ndim of
saved_mean in instance_norm should be 2") and no backward reaches a kernel; the forward is still
compared. What the kernel makes of the rule's placements: :func:`local_checks`.

Built-in grid, for a mesh whose every dim has size 2::

    NCHW [4,6,2,4], NCDHW [2,6,2,2,4]   every R / S(axis) placement; weight and bias both / none,
                                        weight-only and bias-only for x all R, S(0) or S(1) alone;
                                        and forward-only where the rule keeps a spatial axis split
    NC [4,6], NCL [4,6,8]               x all R or S(0) alone, weight and bias: the rule aborts
                                        Paddle on a 2-D / 3-D x (never run; a crash probe confirms it)
"""

from __future__ import annotations

from typing import Any

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
    check_layout,
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
from ..kit.layout import channel_axis

NOT_LAUNCHED: dict[str, str] = {}

#: (data_format, shape) of the cases that run; :data:`CRASH_CONFIGS` abort Paddle.
CONFIGS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("NCHW", (4, 6, 2, 4)),
    ("NCDHW", (2, 6, 2, 2, 4)),
)
CRASH_CONFIGS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("NC", (4, 6)),
    ("NCL", (4, 6, 8)),
)


def local_checks(case: LaunchCase, pred: StagePrediction) -> tuple[StagePrediction, tuple[tuple[str, str], ...]]:
    """What the kernel makes of the rule's input placements.

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
            return kernel_rejects(pred, reason, f"the shape of {name} must equal to [{local_c}]",
                                  f"the shape of {name} is [{channels}]"), ()
    split_spatial = [a for a in range(2, len(case.shape)) if x_attr.dims_mapping[a] != -1]
    if not split_spatial:
        return pred, ()
    why = (f"x keeps spatial axis {split_spatial} split ({list(x_attr.placements())}); instance norm reduces "
           "over every spatial axis: each rank normalises its own piece")
    return pred, tuple((t, why) for t in ("out", "x_grad", "weight_grad", "bias_grad"))


class InstanceNormLaunch(LaunchOp):
    name = "instance_norm"
    order = 4
    rules = ("instance_norm", "instance_norm_grad")
    report_notes = (
        "not compared: instance_norm's `saved_mean`/`saved_variance` (intermediate outputs the functional API "
        "does not return).",
        "instance_norm's backward never reaches a kernel: the grad rule gets saved_mean 1-D `[N*C]` "
        "(InstanceNormInferMeta's shape) and raises \"The ndim of saved_mean in instance_norm should be 2\"; "
        "its forward is still compared (a backward error hides no forward difference).")

    def check(self, case: LaunchCase) -> None:
        check_layout(case)
        if case.channel_axis != 1:
            raise ValueError(f"{case.case_id}: F.instance_norm passes no layout to the op: give NC, NCL, NCHW or NCDHW")

    def channel_axis(self, case: LaunchCase) -> int:
        return channel_axis(case.data_format, len(case.shape))

    def default_cases(self, mesh_shape: tuple[int, ...], backend: str, add: AddCase) -> None:
        mesh_ndim, factor = len(mesh_shape), grid_factor(mesh_shape)
        for fmt, shape in CONFIGS:
            shape = scaled(shape, factor)
            for pl in placement_grid(len(shape), mesh_ndim):
                # PADDLE-QUIRK(in-5d-last-axis): the rule clears axes 2 and 3 only; a split of axis 4 stays
                keeps_spatial = any(p == f"S({a})" for p in pl for a in range(4, len(shape)))
                rare = takes_rare_variants(pl, 0) or takes_rare_variants(pl, 1)
                for w, b in AFFINE_MAIN + (AFFINE_EXTRA if rare else ()):
                    add(op=self.name, shape=shape, mesh_shape=mesh_shape, placements=pl, data_format=fmt,
                        weight=w, bias=b)
                if keeps_spatial:  # the backward always raises (1-D saved_mean): the forward values alone too
                    add(op=self.name, shape=shape, mesh_shape=mesh_shape, placements=pl, data_format=fmt,
                        backward=False)
        for alone in ("R", "S(0)"):  # config inner: `--crash-probes 2` probes a 2-D and a 3-D x
            pl = (alone,) + ("R",) * (mesh_ndim - 1)
            for fmt, shape in CRASH_CONFIGS:
                add(op=self.name, shape=scaled(shape, factor), mesh_shape=mesh_shape, placements=pl,
                    data_format=fmt)

    def predict(self, case: LaunchCase, inputs: Inputs, call: RuleCall) -> OpPrediction:
        x, scale, bias, mesh = inputs.x, inputs.scale, inputs.bias, inputs.mesh
        forward, risks = local_checks(case, call("forward", "instance_norm", x, scale, bias, case.epsilon))
        if forward.result is None:
            return OpPrediction(forward, None, (), risks)
        out = forward.result.outputs[0]
        backward = None
        if case.backward:
            # InstanceNormInferMeta makes saved_mean / saved_variance 1-D [N*C]; the forward rule's
            # 2-D mapping is not what the grad rule's rank check reads (it reads the shape)
            stat = replicated((case.shape[0] * case.shape[1],), mesh)
            backward = call("backward", "instance_norm_grad", x, scale, bias, stat, stat,
                            mapped_spec(case.shape, out.dims_mapping, mesh), case.epsilon)
        return OpPrediction(forward, backward, (expect("out", "forward", "out", out, case.shape, case),), risks)

    def call(self, api: Any, case: LaunchCase, x: Any, w: Any, b: Any, rm: Any, rv: Any) -> Any:
        return api.F.instance_norm(x, weight=w, bias=b, eps=case.epsilon, data_format=case.data_format)


#: The family's real runs, read by the launch room.
LAUNCH = LaunchPlan(InstanceNormLaunch(), NOT_LAUNCHED)
