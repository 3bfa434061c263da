"""sync_batch_norm on real ranks: ``paddle.nn.SyncBatchNorm`` (GPU only: Paddle 3.3.1 registers no
CPU kernel for it), its weight, bias and running statistics replicated with ``dist.shard_layer``.

The eager call runs ``sync_batch_norm`` (forward: ``is_test = not training``, momentum 0.9, the
kernel layout) and ``sync_batch_norm_grad`` (saved_mean and saved_variance with the forward's
output mappings, out_grad placed like ``out``). On one device the layer is batch_norm, so the
reference is ``F.batch_norm``. Its statistics outputs are not observed.

Built-in grid (``--device gpu`` only): NCHW [4,6,2,4], NHWC [4,2,4,6], NCL [4,6,8], the first
2 * rank + 1 placements of the grid, training, weight and bias given.
"""

from __future__ import annotations

from typing import Any

from ..batch_norm.launch import BatchNormLaunch
from ..kit.launch import (
    AddCase,
    Inputs,
    LaunchCase,
    LaunchPlan,
    RuleCall,
    StagePrediction,
    grid_factor,
    placement_grid,
    scaled,
)

NOT_LAUNCHED: dict[str, str] = {}

#: (data_format, shape) for a mesh whose dims all have size 2.
CONFIGS: tuple[tuple[str, tuple[int, ...]], ...] = (("NCHW", (4, 6, 2, 4)), ("NHWC", (4, 2, 4, 6)),
                                                    ("NCL", (4, 6, 8)))


class SyncBatchNormLaunch(BatchNormLaunch):
    name = "sync_batch_norm"
    order = 2
    rules = ("sync_batch_norm", "sync_batch_norm_grad")
    extra_output_names = ()
    no_kernel = {"cpu": "sync_batch_norm has no CPU kernel: run with --device gpu"}
    report_notes = ("`paddle.nn.SyncBatchNorm` has no CPU kernel in Paddle 3.3.1 (`(NotFound) The kernel "
                    "'sync_batch_norm' is not registered`), so sync_batch_norm cases run only with `--device gpu`.",)

    def default_cases(self, mesh_shape: tuple[int, ...], backend: str, add: AddCase) -> None:
        if backend != "gpu":
            return
        factor = grid_factor(mesh_shape)
        for fmt, shape in CONFIGS:
            shape = scaled(shape, factor)
            for pl in placement_grid(len(shape), len(mesh_shape))[: 2 * len(shape) + 1]:
                add(op=self.name, shape=shape, mesh_shape=mesh_shape, placements=pl, data_format=fmt)

    def coshard_cases(self, members: tuple[int, ...], mesh_shape: tuple[int, ...], add: AddCase) -> None:
        pass  # no co-shard case of its own

    def forward(self, case: LaunchCase, inputs: Inputs, call: RuleCall, stats: tuple[Any, Any],
                fmt: str) -> tuple[StagePrediction, tuple[tuple[str, str], ...]]:
        return call("forward", "sync_batch_norm", inputs.x, *stats, inputs.scale, inputs.bias, not case.training,
                    0.9, case.epsilon, fmt, False, False), ()

    def grad(self, case: LaunchCase, inputs: Inputs, call: RuleCall, saved: list[Any], out_grad: Any,
             fmt: str) -> StagePrediction:
        return call("backward", "sync_batch_norm_grad", inputs.x, inputs.scale, inputs.bias, saved[2], saved[3], None,
                    out_grad, 0.9, case.epsilon, fmt, not case.training, False, False)

    def call_distributed(self, api: Any, run: Any, x: Any, w: Any, b: Any, rm: Any,
                         rv: Any) -> tuple[Any, Any, Any, Any, Any]:
        """``paddle.nn.SyncBatchNorm`` with the case's weight, bias and running statistics, its
        parameters and buffers replicated on the mesh (``dist.shard_layer``)."""
        case = run.case
        layer = api.paddle.nn.SyncBatchNorm(case.param_shape[0], epsilon=case.epsilon, data_format=case.data_format)
        layer.weight.set_value(run.w)
        layer.bias.set_value(run.b)
        layer._mean.set_value(run.rm)
        layer._variance.set_value(run.rv)
        layer.train() if case.training else layer.eval()
        layer = api.dist.shard_layer(layer, run.mesh)
        return layer(x), layer.weight, layer.bias, layer._mean, layer._variance


#: The family's real runs, read by the launch room.
LAUNCH = LaunchPlan(SyncBatchNormLaunch(), NOT_LAUNCHED)
