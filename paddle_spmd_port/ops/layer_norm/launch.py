"""layer_norm on real ranks: ``F.layer_norm(x, normalized_shape, weight, bias, epsilon)``.

The eager call runs ``layer_norm`` (forward) with ``begin_norm_axis = x.ndim - len(normalized_shape)``
and ``layer_norm_grad`` (backward) with x as placed, mean/variance with the forward's output
mappings and out_grad placed like the forward's ``out``. Only ``out`` is returned: mean and
variance are not compared.

Built-in grid, for a mesh whose every dim has size 2 (scaled for bigger meshes)::

    shape / normalized_shape                    x placements             variants
    [4,8]/[8]  [4,6,8]/[8],[6,8]                every R / S(axis)        weight and bias both / none;
    [2,4,6,4]/[4],[6,4],[4,6,4]                 combination              weight-only and bias-only for
                                                                          x all R or S(0) alone

Co-shard set: x [8,4,8] / [8] co-sharded on axis 0 (not normalised) or 2 (normalised); [10,4,8]
on axis 0 with uneven pieces (predicted to abort, not run); [4,8,8] / [8,8] on axis 1 (normalised,
not the last: without weight and bias only, as the rule refuses a 2-D weight).
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
    coshard_placement_strings,
    expect,
    grid_factor,
    mapped_spec,
    placement_grid,
    scaled,
    takes_rare_variants,
)

NOT_LAUNCHED = {
    "layer_norm_reverse": "a reverse rule; eager calls run the forward and grad rules only",
}

#: (shape, normalized_shape) for a mesh whose dims all have size 2.
CONFIGS: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = (
    ((4, 8), (8,)),
    ((4, 6, 8), (8,)),
    ((4, 6, 8), (6, 8)),
    ((2, 4, 6, 4), (4,)),
    ((2, 4, 6, 4), (6, 4)),
    ((2, 4, 6, 4), (4, 6, 4)),
)

#: The co-shard set's x: (shape, normalized_shape, {co-sharded axis: what it is}).
COSHARD_CONFIGS: tuple[tuple[tuple[int, ...], tuple[int, ...], dict[int, str]], ...] = (
    ((8, 4, 8), (8,), {0: "not normalised", 2: "normalised"}),
    ((10, 4, 8), (8,), {0: "not normalised, uneven pieces: predicted to abort, not run"}),
    ((4, 8, 8), (8, 8), {1: "normalised, not the last"}),
)


class LayerNormLaunch(LaunchOp):
    name = "layer_norm"
    order = 0
    rules = ("layer_norm", "layer_norm_grad")
    report_notes = ("not compared: layer_norm's `mean`/`variance` (intermediate outputs the functional API "
                    "does not return).",)

    def check(self, case: LaunchCase) -> None:
        k = len(case.normalized_shape)
        if not 1 <= k <= len(case.shape) or tuple(case.shape[-k:]) != case.normalized_shape:
            raise ValueError(f"{case.case_id}: normalized_shape {list(case.normalized_shape)} is not a "
                             f"trailing part of {list(case.shape)}")

    def param_shape(self, case: LaunchCase) -> tuple[int, ...]:
        return case.normalized_shape

    def describe(self, case: LaunchCase) -> list[str]:
        return [f"ns={list(case.normalized_shape)}"]

    def default_cases(self, mesh_shape: tuple[int, ...], backend: str, add: AddCase) -> None:
        factor = grid_factor(mesh_shape)
        for shape, ns in CONFIGS:
            shape, ns = scaled(shape, factor), scaled(ns, factor)
            for pl in placement_grid(len(shape), len(mesh_shape)):
                for w, b in AFFINE_MAIN + (AFFINE_EXTRA if takes_rare_variants(pl, 0) else ()):
                    add(op=self.name, shape=shape, mesh_shape=mesh_shape, placements=pl, normalized_shape=ns,
                        weight=w, bias=b)

    def coshard_cases(self, members: tuple[int, ...], mesh_shape: tuple[int, ...], add: AddCase) -> None:
        factor = grid_factor(mesh_shape)
        for shape, ns, axes in COSHARD_CONFIGS:
            shape = scaled(shape, factor)
            for axis, what in axes.items():
                placements = coshard_placement_strings(axis, members, len(mesh_shape))
                # a 2-D weight is refused by the rule whatever x's placement: no affine there
                variants = [(True, True), (False, False)] if len(ns) == 1 else [(False, False)]
                for w, b in variants:
                    add(op=self.name, shape=shape, mesh_shape=mesh_shape, placements=placements, training=True,
                        weight=w, bias=b, notes=(f"x co-sharded on axis {axis}: {what}",),
                        normalized_shape=scaled(ns, factor))

    def predict(self, case: LaunchCase, inputs: Inputs, call: RuleCall) -> OpPrediction:
        x, scale, bias, mesh = inputs.x, inputs.scale, inputs.bias, inputs.mesh
        bna = case.begin_norm_axis
        forward = call("forward", "layer_norm", x, scale, bias, case.epsilon, bna)
        backward: StagePrediction | None = None
        if forward.result is None:
            return OpPrediction(forward)
        out, mean, var = forward.result.outputs
        if case.backward:
            stat_shape = case.shape[:bna]
            backward = call("backward", "layer_norm_grad", x, scale, bias,
                            mapped_spec(stat_shape, mean.dims_mapping, mesh),
                            mapped_spec(stat_shape, var.dims_mapping, mesh),
                            mapped_spec(case.shape, out.dims_mapping, mesh), case.epsilon, bna)
        return OpPrediction(forward, backward, (expect("out", "forward", "out", out, case.shape, case),))

    def call(self, api: Any, case: LaunchCase, x: Any, w: Any, b: Any, rm: Any, rv: Any) -> Any:
        return api.F.layer_norm(x, list(case.normalized_shape), weight=w, bias=b, epsilon=case.epsilon)


#: The family's real runs, read by the launch room.
LAUNCH = LaunchPlan(LayerNormLaunch(), NOT_LAUNCHED)
