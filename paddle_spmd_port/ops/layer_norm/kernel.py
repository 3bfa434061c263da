"""layer_norm's numpy kernels and the oracle's models of its rules (checked against Paddle 3.3.1's
CPU kernels by ``tests/test_oracle.py::test_kernels_match_paddle_dense``)::

    op                    statistics                             outputs
    layer_norm            mean/var over axes >= b per row        out, mean, variance (shape x.shape[:b])
    layer_norm_grad       the given mean/variance                x_grad, scale_grad, bias_grad

b is ``begin_norm_axis``; scale and bias are flat, one entry per element of a row. Paddle's CPU
kernels reject a scale/bias of the wrong size ("Expected scale.dims()[0] == right") and
mean/variance of fewer entries than rows (a memory size check); more entries than rows run, reading
the first ones.

On real Paddle: ``F.layer_norm`` forward and backward run as launch cases (x placed, the rest
replicated); a Partial x reaches ``layer_norm_grad`` through the dygraph backward, which
:data:`PARTIAL_X_SCRIPT` shows on 2 ranks.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..kit.kernel import (
    Array,
    Arrays,
    Attrs,
    Facts,
    KernelModels,
    KernelRejects,
    OpModel,
    Shape,
    f32,
    model,
    per_rank,
    required,
    row_sizes,
)


def _ln_rows(x: Array, b: int, op: str) -> tuple[int, int]:
    if not 1 <= b < max(x.ndim, 1):
        raise KernelRejects("x", f"{op}: begin_norm_axis must be in 1..{x.ndim - 1}, got {b}", checked=True)
    if x.size == 0:
        raise KernelRejects("x", f"{op}: a rank holds an empty x {list(x.shape)}", checked=False)
    return math.prod(x.shape[:b]), math.prod(x.shape[b:])


def _ln_params(ins: Arrays, right: int, op: str) -> None:
    for name in ("scale", "bias"):
        t = ins.get(name)
        if t is not None and t.size != right:
            raise KernelRejects(name, f"{op}: local {name} has {t.size} entries but a local row of x has "
                                f"{right} (Paddle: Expected {name}.dims()[0] == right)", checked=True)


def layer_norm(ins: Arrays, attrs: Attrs) -> Arrays:
    x, b = required(ins, "x"), attrs["begin_norm_axis"]
    left, right = _ln_rows(x, b, "layer_norm")
    _ln_params(ins, right, "layer_norm")
    rows = x.reshape(left, right)
    mean = rows.mean(axis=1)
    var = ((rows - mean[:, None]) ** 2).mean(axis=1)
    out = (rows - mean[:, None]) / np.sqrt(var[:, None] + f32(attrs["epsilon"]))
    scale, bias = ins.get("scale"), ins.get("bias")
    if scale is not None:
        out = out * scale.reshape(1, right)
    if bias is not None:
        out = out + bias.reshape(1, right)
    lead = x.shape[:b]
    return {"out": out.reshape(x.shape), "mean": mean.reshape(lead), "variance": var.reshape(lead)}


def layer_norm_grad(ins: Arrays, attrs: Attrs) -> Arrays:
    x, dy, b = required(ins, "x"), required(ins, "out_grad"), attrs["begin_norm_axis"]
    left, right = _ln_rows(x, b, "layer_norm_grad")
    if dy.shape != x.shape:
        raise KernelRejects("out_grad", f"layer_norm_grad: local out_grad {list(dy.shape)} != local x "
                            f"{list(x.shape)}", checked=False)
    _ln_params(ins, right, "layer_norm_grad")
    stats = {name: required(ins, name) for name in ("mean", "variance")}
    for name, t in stats.items():
        if t.size != left:
            raise KernelRejects(name, f"layer_norm_grad: local {name} has {t.size} entries for {left} local "
                                "rows of x" + (" (Paddle: memory size check)" if t.size < left else
                                               " (Paddle does not check: it reads the first rows)"),
                                checked=t.size < left)
    rows, drows = x.reshape(left, right), dy.reshape(left, right)
    inv = 1.0 / np.sqrt(stats["variance"].reshape(left, 1) + f32(attrs["epsilon"]))
    x_hat = (rows - stats["mean"].reshape(left, 1)) * inv
    scale = ins.get("scale")
    d_xhat = drows * (scale.reshape(1, right) if scale is not None else 1.0)
    dx = inv * (d_xhat - d_xhat.mean(axis=1, keepdims=True) - x_hat * (d_xhat * x_hat).mean(axis=1, keepdims=True))
    return {"x_grad": dx.reshape(x.shape),
            "scale_grad": (drows * x_hat).sum(axis=0) if scale is not None else None,
            "bias_grad": drows.sum(axis=0) if ins.get("bias") is not None else None}


# --------------------------------------------------------------------------- what the oracle needs besides
def sizes(old: Shape, new: Shape, attrs: Attrs) -> list[tuple[Shape, Shape]]:
    return row_sizes(old, new, attrs.get("begin_norm_axis", 1))


def saved_statistics(arrays: Arrays, attrs: Attrs) -> None:
    """The grad's mean/variance as the forward saves them from x (where the entry counts fit)."""
    x = required(arrays, "x")
    b = attrs["begin_norm_axis"]
    if 0 <= b <= x.ndim:
        rows = x.reshape(math.prod(x.shape[:b]), -1) if x.size else x.reshape(0, 0)
        for name, value in (("mean", rows.mean(axis=1)), ("variance", rows.var(axis=1))):
            if (given := arrays.get(name)) is not None and given.size == value.size:
                arrays[name] = value.reshape(given.shape)


def launch_fields(attrs: Attrs, x_shape: Shape) -> dict[str, Any] | None:
    """``F.layer_norm`` as a launch case: normalized_shape is x's shape from begin_norm_axis on."""
    b = attrs["begin_norm_axis"]
    if not 1 <= b < len(x_shape):
        return None
    return {"op": "layer_norm", "normalized_shape": list(x_shape[b:])}


PARTIAL_X_SCRIPT = '''# layer_norm on 2 ranks with a Partial(SUM) x: the forward is right, the backward is not
import numpy as np, paddle, paddle.distributed as dist, paddle.nn.functional as F
paddle.set_device("cpu")
mesh = dist.ProcessMesh([0, 1], dim_names=["x"])
rs = np.random.RandomState(0)
shape, norm, has_weight, has_bias = {shape}, {norm}, {weight}, {bias}
xn, gy = rs.randn(*shape).astype("float32"), rs.randn(*shape).astype("float32")
n = int(np.prod(norm))  # weight and bias are flat: prod(normalized_shape) entries
wn, bn = rs.rand(n).astype("float32") + 0.5, rs.rand(n).astype("float32")
a0 = rs.randn(*shape).astype("float32") * 3
rx, rw, rb = (paddle.to_tensor(a, stop_gradient=False) for a in (xn, wn, bn))
ry = F.layer_norm(rx, norm, weight=rw if has_weight else None, bias=rb if has_bias else None)
ry.backward(paddle.to_tensor(gy))  # single-device reference
local = a0 if dist.get_rank() == 0 else xn - a0  # rank r holds addend r; they sum to x
x = dist.auto_parallel.api.dtensor_from_local(paddle.to_tensor(local), mesh, [dist.Partial()])
x.stop_gradient = False
w, b = (dist.shard_tensor(paddle.to_tensor(a), mesh, [dist.Replicate()]) for a in (wn, bn))
w.stop_gradient = b.stop_gradient = False
y = F.layer_norm(x, norm, weight=w if has_weight else None, bias=b if has_bias else None)
y.backward(dist.shard_tensor(paddle.to_tensor(gy), mesh, y.placements))
def full(t):
    return dist.reshard(t, mesh, [dist.Replicate()]).numpy()
print(f"rank {{dist.get_rank()}}: y err {{abs(full(y) - ry.numpy()).max():.2e}}, "
      f"x.grad err {{abs(full(x.grad) - rx.grad.numpy()).max():.2e}}"
      + (f", weight.grad err {{abs(full(w.grad) - rw.grad.numpy()).max():.2e}}" if has_weight else ""), flush=True)
'''


def partial_x_script(x_shape: Shape, attrs: Attrs, weight: bool, bias: bool) -> str:
    """:data:`PARTIAL_X_SCRIPT` for one case."""
    b = attrs["begin_norm_axis"]
    return PARTIAL_X_SCRIPT.format(shape=list(x_shape), norm=list(x_shape[b:]), weight=weight, bias=bias)


FACTS = Facts(sizes=sizes)

MODELS: dict[str, OpModel] = {
    "layer_norm": model("layer_norm", per_rank(layer_norm), FACTS, launch=launch_fields, registry_repro=True),
    "layer_norm_reverse": model("layer_norm_reverse", per_rank(layer_norm), FACTS, registry_repro=True,
                                not_on_ranks="the reverse rule is only used by static completion"),
    "layer_norm_grad": model("layer_norm_grad", per_rank(layer_norm_grad), FACTS, saved_inputs=saved_statistics,
                             launch=launch_fields, partial_x_script=partial_x_script,
                             not_on_ranks="a dygraph backward feeds the grad rule the forward's own placements, "
                                          "which never combine like this"),
}

#: The family's oracle part, read by paddle_spmd_port.oracle.kernels.
KERNEL = KernelModels(MODELS)
