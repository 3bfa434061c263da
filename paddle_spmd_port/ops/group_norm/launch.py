"""group_norm on real ranks: ``F.group_norm(x, num_groups, epsilon, weight, bias, data_format)``.

The eager call runs ``group_norm`` (GroupNormInferSpmd calls GroupNormInferSpmdBase, so both keys)
with the kernel layout ``'NCHW' if fmt[1] == 'C' else 'NHWC'``, and ``group_norm_grad`` (and its
Base): y and y_grad placed like the forward's ``out``, mean and variance [N, groups] with the
forward's output mappings. Only ``out`` is returned: mean and variance are not compared.

Built-in grid, for a mesh whose every dim has size 2: NCHW [4,6,2,4] groups 3, NHWC [4,2,4,6]
groups 3, NCL [4,6,8] groups 2, NDHWC [2,2,2,4,6] groups 2; every R / S(axis) placement; weight
and bias both / none, weight-only and bias-only for x all R or S(0) alone.
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
    check_layout,
    expect,
    grid_factor,
    mapped_spec,
    placement_grid,
    scaled,
    takes_rare_variants,
)
from ..kit.layout import channel_axis, kernel_layout

NOT_LAUNCHED: dict[str, str] = {}

#: (data_format, shape, groups) for a mesh whose dims all have size 2.
CONFIGS: tuple[tuple[str, tuple[int, ...], int], ...] = (
    ("NCHW", (4, 6, 2, 4), 3),
    ("NHWC", (4, 2, 4, 6), 3),
    ("NCL", (4, 6, 8), 2),
    ("NDHWC", (2, 2, 2, 4, 6), 2),
)


class GroupNormLaunch(LaunchOp):
    name = "group_norm"
    order = 3
    rules = ("group_norm", "group_norm_base", "group_norm_grad", "group_norm_grad_base")
    report_notes = ("not compared: group_norm's `mean`/`variance` (intermediate outputs the functional API "
                    "does not return).",)

    def check(self, case: LaunchCase) -> None:
        check_layout(case)
        if len(case.shape) < 3:
            raise ValueError(f"{case.case_id}: F.group_norm takes a rank 3 to 5 x (NCL, NLC, NCHW, NHWC, NCDHW, NDHWC)")
        if case.groups < 1 or case.shape[case.channel_axis] % case.groups:
            raise ValueError(f"{case.case_id}: groups must be >= 1 and divide C ({case.shape[case.channel_axis]}), "
                             f"got {case.groups}")

    def channel_axis(self, case: LaunchCase) -> int:
        return channel_axis(case.data_format, len(case.shape))

    def describe(self, case: LaunchCase) -> list[str]:
        return [case.data_format, f"groups={case.groups}"]

    def default_cases(self, mesh_shape: tuple[int, ...], backend: str, add: AddCase) -> None:
        factor = grid_factor(mesh_shape)
        for fmt, shape, groups in CONFIGS:
            shape = scaled(shape, factor)
            for pl in placement_grid(len(shape), len(mesh_shape)):
                for w, b in AFFINE_MAIN + (AFFINE_EXTRA if takes_rare_variants(pl, 0) else ()):
                    add(op=self.name, shape=shape, mesh_shape=mesh_shape, placements=pl, data_format=fmt,
                        groups=groups, weight=w, bias=b)

    def predict(self, case: LaunchCase, inputs: Inputs, call: RuleCall) -> OpPrediction:
        x, scale, bias, mesh = inputs.x, inputs.scale, inputs.bias, inputs.mesh
        fmt = kernel_layout(case.data_format)  # what F.group_norm passes to the op
        forward = call("forward", "group_norm", x, scale, bias, case.epsilon, case.groups, fmt)
        if forward.result is None:
            return OpPrediction(forward)
        out, mean, var = forward.result.outputs
        backward = None
        if case.backward:
            stat_shape = (case.shape[0], case.groups)
            y = mapped_spec(case.shape, out.dims_mapping, mesh)
            backward = call("backward", "group_norm_grad", x, scale, bias, y,
                            mapped_spec(stat_shape, mean.dims_mapping, mesh),
                            mapped_spec(stat_shape, var.dims_mapping, mesh), y, case.epsilon, case.groups, fmt)
        return OpPrediction(forward, backward, (expect("out", "forward", "out", out, case.shape, case),))

    def call(self, api: Any, case: LaunchCase, x: Any, w: Any, b: Any, rm: Any, rv: Any) -> Any:
        return api.F.group_norm(x, case.groups, epsilon=case.epsilon, weight=w, bias=b, data_format=case.data_format)


#: The family's real runs, read by the launch room.
LAUNCH = LaunchPlan(GroupNormLaunch(), NOT_LAUNCHED)
