"""sync_batch_norm's numpy kernels and the oracle's models of its rules.

3.3.1 has no CPU sync_batch_norm kernel; these follow the arithmetic of Paddle's GPU kernel
(``sync_batch_norm_utils.h``)::

    op                    statistics                             outputs
    sync_batch_norm       per-rank mean of x and x^2, summed     as batch_norm; test mode as global stats;
                          over the group and divided by the      use_global_stats=True is rejected
                          number of ranks (mean of means!)
    sync_batch_norm_grad  per-rank sum(dy), sum(dy*(x-mean))     x_grad from the all-reduced sums;
                          summed over the group; the flags are   scale_grad/bias_grad from the *local* sums
                          ignored (always saved stats)

These are the only kernels that talk across ranks: the statistics are all-reduced within
``groups`` (for each rank, the ranks it sums with; the oracle's ``--sync-group``: by default the
mesh dims that shard x's batch axis, or the whole mesh as the GPU kernel does with the world
communicator). Because the mean is a mean of per-rank means, uneven batch shards are wrong on
their own account. Layouts, modes and per-channel facts are batch_norm's.
"""

from __future__ import annotations

import numpy as np

from ..batch_norm.kernel import FACTS as BATCH_NORM_FACTS
from ..batch_norm.kernel import MODES, affine, bn_outputs, saved_statistics
from ..kit.kernel import (
    Array,
    Arrays,
    Attrs,
    Facts,
    Groups,
    KernelModels,
    KernelRejects,
    OpModel,
    Shape,
    channel_shape,
    check_per_channel,
    check_x,
    f32,
    model,
    required,
)
from ..kit.layout import channel_axis


def _all_reduce(values: list[Array], groups: Groups) -> list[Array]:
    """Per rank, the sum over its group. Shapes must agree inside a group (else the collective
    would mix buffers of different lengths)."""
    out = []
    for rank, group in enumerate(groups):
        shapes = {values[r].shape for r in group}
        if len(shapes) != 1:
            raise KernelRejects("x", f"sync_batch_norm: the all-reduce group {list(group)} of rank {rank} holds "
                                f"statistics of different lengths {sorted(shapes)}", checked=False, rank=rank)
        out.append(sum((values[r] for r in group), np.zeros_like(values[group[0]])))
    return out


def _sync_prepare(ins: Arrays, attrs: Attrs) -> tuple[Array, tuple[int, ...], tuple[int, ...]]:
    x = required(ins, "x")
    check_x(x, "sync_batch_norm")
    c = channel_axis(attrs["data_format"], x.ndim)
    c_len = x.shape[c]
    check_per_channel(ins, ("scale", "bias"), c_len, checked=lambda _: True, op="sync_batch_norm")
    check_per_channel(ins, ("mean", "variance"), c_len, checked=lambda _: False, op="sync_batch_norm")
    return x, tuple(a for a in range(x.ndim) if a != c), channel_shape(x.ndim, c, c_len)


def sync_batch_norm(per_rank: list[Arrays], attrs: Attrs, groups: Groups) -> list[Arrays]:
    if attrs.get("use_global_stats"):
        raise KernelRejects("x", "sync_batch_norm doesn't support use_global_stats=True", checked=True)
    locals_ = []
    for rank, ins in enumerate(per_rank):
        try:
            locals_.append(_sync_prepare(ins, attrs))
        except KernelRejects as exc:
            exc.rank = rank
            raise
    eps, mom = f32(attrs["epsilon"]), f32(attrs["momentum"])
    if attrs.get("is_test") and not attrs.get("trainable_statistics"):
        return [{"out": affine(x, required(ins, "mean"), required(ins, "variance"), ins["scale"], ins["bias"], eps,
                                bs),
                 "mean_out": required(ins, "mean").copy(), "variance_out": required(ins, "variance").copy(),
                 "saved_mean": None, "saved_variance": None, "reserve_space": None}
                for ins, (x, _a, bs) in zip(per_rank, locals_, strict=True)]
    # per rank: [mean(x), mean(x^2), 1]; summed over the group; divided by the count of ranks
    stats = [np.concatenate([x.mean(axis=axes), (x * x).mean(axis=axes), [1.0]]) for x, axes, _b in locals_]
    summed = _all_reduce(stats, groups)
    outs = []
    for ins, (x, _axes, bs), s in zip(per_rank, locals_, summed, strict=True):
        c_len = (len(s) - 1) // 2
        n_dev = s[-1]
        mean = s[:c_len] / n_dev
        var = s[c_len:2 * c_len] / n_dev - mean * mean
        outs.append(bn_outputs(x, ins, mean, var, eps, mom, bs))
    return outs


def _sync_grad_prepare(ins: Arrays, attrs: Attrs) -> tuple[Array, Array, Shape, Shape, Array, int]:
    x, dy = required(ins, "x"), required(ins, "out_grad")
    check_x(x, "sync_batch_norm_grad")
    if dy.shape != x.shape:
        raise KernelRejects("out_grad", f"sync_batch_norm_grad: local out_grad {list(dy.shape)} != local x "
                            f"{list(x.shape)}", checked=False)
    c = channel_axis(attrs["data_format"], x.ndim)
    c_len = x.shape[c]
    check_per_channel(ins, ("scale",), c_len, checked=lambda _: True, op="sync_batch_norm_grad")
    check_per_channel(ins, ("saved_mean", "saved_variance"), c_len, checked=lambda _: False, op="sync_batch_norm_grad")
    bs = channel_shape(x.ndim, c, c_len)
    return x, dy, bs, tuple(a for a in range(x.ndim) if a != c), x - required(ins, "saved_mean").reshape(bs), c_len


def sync_batch_norm_grad(per_rank: list[Arrays], attrs: Attrs, groups: Groups) -> list[Arrays]:
    """``ins``: x, scale, bias, saved_mean, saved_variance, reserve_space, out_grad."""
    prepared = []
    for rank, ins in enumerate(per_rank):
        try:
            prepared.append(_sync_grad_prepare(ins, attrs))
        except KernelRejects as exc:
            exc.rank = rank
            raise
    stats = [np.concatenate([dy.sum(axis=axes), (dy * x_mu).sum(axis=axes), [1.0]])
             for _x, dy, _bs, axes, x_mu, _c in prepared]
    summed = _all_reduce(stats, groups)
    outs = []
    for ins, (x, dy, bs, axes, x_mu, c_len), s in zip(per_rank, prepared, summed, strict=True):
        inv = required(ins, "saved_variance")
        given_scale = ins["scale"]
        scale = given_scale if given_scale is not None else np.ones(c_len)
        n_dev = s[-1]
        inv_n = 1.0 / (x.size // c_len)  # local count, as the GPU kernel does
        g_sum_dy, g_sum_dy_prod = s[:c_len] / n_dev, s[c_len:2 * c_len] / n_dev
        g_mean = -g_sum_dy * scale * inv
        g_var = -g_sum_dy_prod * scale * inv ** 3
        dx = dy * (scale * inv).reshape(bs) + (g_mean * inv_n).reshape(bs) + (g_var * inv_n).reshape(bs) * x_mu
        outs.append({"x_grad": dx,
                     "scale_grad": (dy * x_mu).sum(axis=axes) * inv if ins["scale"] is not None else None,
                     "bias_grad": dy.sum(axis=axes) if ins["bias"] is not None else None})
    return outs


FACTS = Facts(sizes=BATCH_NORM_FACTS.sizes, layout=BATCH_NORM_FACTS.layout, per_channel=BATCH_NORM_FACTS.per_channel,
              channel_axis=BATCH_NORM_FACTS.channel_axis, all_reduces=True, mean_of_rank_means=True)
_NO_CPU = "3.3.1 has no CPU sync_batch_norm kernel"

MODELS: dict[str, OpModel] = {
    "sync_batch_norm": model("sync_batch_norm", sync_batch_norm, FACTS, batch_axis_outputs=("out",), modes=MODES,
                             not_on_ranks=_NO_CPU),
    "sync_batch_norm_grad": model("sync_batch_norm_grad", sync_batch_norm_grad, FACTS, batch_axis_outputs=("x_grad",),
                                  modes=MODES, saved_inputs=saved_statistics, not_on_ranks=_NO_CPU),
}

#: The family's oracle part, read by paddle_spmd_port.oracle.kernels.
KERNEL = KernelModels(MODELS)
