"""p_norm on real ranks: ``paddle.linalg.norm(x, p, axis, keepdim)`` and ``F.normalize(x, p, axis)``.

Both reach the p_norm op with an int axis: ``paddle.linalg.norm`` passes porder, axis and keepdim
as given (epsilon 1e-12, asvector off); ``F.normalize`` runs p_norm with keepdim on, then divides
x by ``maximum(norm, epsilon)``, and its backward runs ``p_norm_grad``.

What is compared::

    api                  forward                          backward
    paddle.linalg.norm   out: placements, local shape,    not run (the runner's upstream gradient
                         values                           has x's shape, out has not)
    F.normalize          out: values (its placement is    x_grad: placement (the leaf's), values
                         the divide's rule's, not p_norm's)

Values: 3.3.1's forward marks out Partial(SUM) where a reduced axis is split, which sums the
shards' norms: exact for porder 0 and 1 only. The prediction says so (a numeric risk on out, and on
F.normalize's x_grad, computed from that norm).

Built-in grid, x [4,8] (scaled for bigger meshes), every R / S(axis) placement of x::

    paddle.linalg.norm   p 2, 1, inf, 0 along axis -1; p 2 along axis 0 with keepdim
    F.normalize          p 2 and 1, along axis -1 and 0
"""

from __future__ import annotations

import math
from typing import Any

from ..kit.launch import (
    AddCase,
    Inputs,
    LaunchCase,
    LaunchOp,
    LaunchPlan,
    OpPrediction,
    RuleCall,
    StagePrediction,
    expect,
    grid_factor,
    mapped_spec,
    placement_grid,
    scaled,
)

NOT_LAUNCHED = {
    "p_norm_reverse": "a reverse rule; eager calls run the forward and grad rules only",
}

APIS = ("paddle.linalg.norm", "F.normalize")
#: F.normalize's default epsilon, which it passes to p_norm.
NORMALIZE_EPSILON = 1e-12
#: porders whose norm is a sum of per-element terms: Partial(SUM) of the shards' norms is exact.
SUMMABLE = frozenset({0.0, 1.0})

#: (api, porder, axis, keepdims) of the built-in grid.
CONFIGS: tuple[tuple[str, float, int, bool], ...] = (
    ("paddle.linalg.norm", 2.0, -1, False),
    ("paddle.linalg.norm", 1.0, -1, False),
    ("paddle.linalg.norm", math.inf, -1, False),
    ("paddle.linalg.norm", 0.0, -1, False),
    ("paddle.linalg.norm", 2.0, 0, True),
    ("F.normalize", 2.0, -1, False),
    ("F.normalize", 1.0, -1, False),
    ("F.normalize", 2.0, 0, False),
    ("F.normalize", 1.0, 0, False),
)


def _unsound_why(case: LaunchCase, x_mapping: tuple[Any, ...]) -> str | None:
    """Why the forward's Partial(SUM) out is not the norm, or None where it is."""
    axis = case.axis % len(case.shape)
    if x_mapping[axis] == -1 or case.porder in SUMMABLE:
        return None
    return (f"axis {axis} is split and out is Partial(SUM): the sum of the shards' {case.porder:g}-norms is not "
            "the norm (exact for porder 0 and 1 only)")


class PNormLaunch(LaunchOp):
    name = "p_norm"
    order = 7
    rules = ("p_norm", "p_norm_grad")
    report_notes = ("F.normalize's `out` is placed by the divide after p_norm: its placement is not compared, "
                    "its values are.",
                    "paddle.linalg.norm cases run forward only (out has another shape than x).")

    def check(self, case: LaunchCase) -> None:
        if case.api not in APIS:
            raise ValueError(f"{case.case_id}: api must be one of {APIS}, got {case.api!r}")
        if case.weight or case.bias:
            raise ValueError(f"{case.case_id}: p_norm takes no weight or bias (set both false)")
        if not -len(case.shape) <= case.axis < len(case.shape):
            raise ValueError(f"{case.case_id}: axis {case.axis} is outside {-len(case.shape)}..{len(case.shape) - 1}")
        if case.api == "paddle.linalg.norm" and case.backward:
            raise ValueError(f"{case.case_id}: paddle.linalg.norm cases run forward only (backward false): the "
                             "runner's upstream gradient has x's shape")
        if case.api == "F.normalize" and case.keepdims:
            raise ValueError(f"{case.case_id}: F.normalize takes no keepdim (it always keeps the axis)")

    def param_shape(self, case: LaunchCase) -> tuple[int, ...]:
        return (1,)  # no weight or bias: the runner's unused arrays

    def describe(self, case: LaunchCase) -> list[str]:
        return [case.api, f"p={case.porder:g}", f"axis={case.axis}", *(["keepdim"] if case.keepdims else [])]

    def default_cases(self, mesh_shape: tuple[int, ...], backend: str, add: AddCase) -> None:
        factor = grid_factor(mesh_shape)
        shape = scaled((4, 8), factor)
        for api, porder, axis, keepdims in CONFIGS:
            for pl in placement_grid(len(shape), len(mesh_shape)):
                add(op=self.name, shape=shape, mesh_shape=mesh_shape, placements=pl, api=api, porder=porder,
                    axis=axis, keepdims=keepdims, weight=False, bias=False, backward=api == "F.normalize",
                    epsilon=NORMALIZE_EPSILON)

    def predict(self, case: LaunchCase, inputs: Inputs, call: RuleCall) -> OpPrediction:
        x, mesh = inputs.x, inputs.mesh
        keep = case.keepdims if case.api == "paddle.linalg.norm" else True
        forward = call("forward", "p_norm", x, float(case.porder), case.axis, case.epsilon, keep, False)
        if forward.result is None:
            return OpPrediction(forward)
        (out,) = forward.result.outputs
        axis = case.axis % len(case.shape)
        out_shape = tuple(1 if a == axis else s for a, s in enumerate(case.shape) if keep or a != axis)
        why = _unsound_why(case, forward.result.inputs[0].dims_mapping)
        if case.api == "paddle.linalg.norm":
            return OpPrediction(forward, None, (expect("out", "forward", "out", out, out_shape, case),),
                                (("out", why),) if why else ())
        backward: StagePrediction | None = None
        if case.backward:
            norm = mapped_spec(out_shape, out.dims_mapping, mesh)
            backward = call("backward", "p_norm_grad", x, norm, norm, float(case.porder), case.axis, case.epsilon,
                            True, False)
        return OpPrediction(forward, backward, (), (("out", why), ("x_grad", why)) if why else ())

    def call(self, api: Any, case: LaunchCase, x: Any, w: Any, b: Any, rm: Any, rv: Any) -> Any:
        if case.api == "F.normalize":
            return api.F.normalize(x, p=case.porder, axis=case.axis, epsilon=case.epsilon)
        return api.paddle.linalg.norm(x, p=case.porder, axis=case.axis, keepdim=case.keepdims)


#: The family's real runs, read by the launch room.
LAUNCH = LaunchPlan(PNormLaunch(), NOT_LAUNCHED)
