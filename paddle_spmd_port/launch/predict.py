"""What the port says a real run of a :class:`~.cases.LaunchCase` will do (pure Python).

The case's op (its family's :meth:`~paddle_spmd_port.ops.kit.launch.LaunchOp.predict`) maps the
case onto the rules its dist API calls, with the arguments the functional API really passes; this
module calls the port's rules for it (:func:`call_rule`) and adds what every op shares. The grad
rule gets x as placed by the case, the statistics with the forward rule's output mappings, and
out_grad with the forward rule's ``out`` mapping (the runner feeds the upstream gradient with
exactly the placement ``out`` came out with).

What eager mode lets one observe, and so what is compared::

    tensor                 predicted from                       compared
    out                    forward outputs[0]                   placements, local shape, values
    the op's extra outputs forward outputs (the op's            placements, local shape
                           ``extra_output_names``)
    weight_grad, bias_grad grad outputs[1], [2]                 placements (Partial too), local shape, values
    x_grad                 x's own placement (a leaf's .grad    placements (co-shard members with their
                           is resharded back to the leaf's)     shard order), local shape, values
    running_mean / _var    -                                    values only: updated in place, they keep
                                                                the placement they were given

Ways a stage can be predicted to fail:

* the rule raises;
* the rule answers, but the placements it picks give the kernel inputs whose local shapes disagree
  (the op's checks: a kernel error whose message carries those shapes);
* the port rejects the input because Paddle crashes on it: the runner never executes such a stage;
* x is co-sharded and its pieces differ in size across ranks (10 rows over a 2x2 co-shard: 3,2,3,2):
  the forward's reshard of x to the rule's single-mesh-dim placement aborts the ranks
  (:data:`UNEVEN_COSHARD`, a forward crash; the runner never executes it).

A predicted numeric error (``numeric_risks``) comes from the op's checks: values its placements
say cannot match one device.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import InvalidSpecError, SpmdError
from ..ops.kit.launch import (
    Inputs,
    Prediction,
    StagePrediction,
    TensorExpectation,
    expect,
    local_shapes,
)
from ..ops.registry import rule_function
from ..outcome import ErrorInfo
from ..types import DistAttr, ProcessMesh
from .cases import LaunchCase

#: The forward crash predicted for an unevenly co-sharded x. Paddle 3.3.1's reshard of such an x
#: ends every rank with gloo's ``op.preamble.length <= op.nbytes`` (measured: see
#: docs/measurements/2026-12-01-launch-notes.md); the port predicts it for every co-sharded axis of x
#: whose pieces differ.
UNEVEN_COSHARD = "coshard:uneven-reshard"

#: Observed tensors whose placement eager mode does not take from the rule, and why.
NOT_RULE_PLACED = {
    "running_mean": "updated in place; keeps the placement it was given",
    "running_var": "updated in place; keeps the placement it was given",
}

__all__ = ["NOT_RULE_PLACED", "UNEVEN_COSHARD", "Prediction", "StagePrediction", "TensorExpectation", "call_rule",
           "case_mesh", "local_shapes", "predict", "uneven_coshard"]


def case_mesh(case: LaunchCase) -> ProcessMesh:
    return ProcessMesh(case.mesh_shape)


def call_rule(stage: str, key: str, *args: Any) -> StagePrediction:
    """The port's rule ``key`` (paddle profile) on ``args``: its answer, its error, or a predicted
    crash where the port rejects the input (:class:`InvalidSpecError`)."""
    fn = rule_function(key)
    try:
        return StagePrediction(stage, result=fn(*args))
    except InvalidSpecError as exc:
        return StagePrediction(stage, crash=f"{exc.kind}: {exc}")
    except (SpmdError, ValueError, NotImplementedError) as exc:
        return StagePrediction(stage, rule_error=ErrorInfo.from_exception(exc))


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


def predict(case: LaunchCase) -> Prediction:
    """The port's expectation for every observable tensor of ``case``."""
    inputs = Inputs.of(case)
    op = case.launch_op.predict(case, inputs, lambda stage, key, *args: call_rule(stage, key, *args))
    forward, backward = op.forward, op.backward
    tensors: list[TensorExpectation] = list(op.tensors)
    abort = uneven_coshard(case)
    if abort is not None:
        forward = dataclasses.replace(forward, crash=abort)
    if backward is not None and backward.result is not None:
        grads = backward.result.outputs
        tensors.append(expect("x_grad", "backward", "", DistAttr.make(case.dims_mapping, frozenset(), inputs.mesh),
                              case.shape, case))  # the leaf's own placement, not the rule's x_grad
        # weight_grad and bias_grad are the grad's outputs after x_grad, where the op has them
        for name, present, attr in zip(("weight_grad", "bias_grad"), (case.weight, case.bias), grads[1:],
                                       strict=False):
            if present:
                rule_name = "scale_grad" if name == "weight_grad" else "bias_grad"
                tensors.append(expect(name, "backward", rule_name, attr, case.param_shape, case))
    return Prediction(case.case_id, forward, backward, tuple(tensors), op.numeric_risks)
