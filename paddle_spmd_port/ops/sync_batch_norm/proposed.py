"""sync_batch_norm in the ``proposed`` profile: rules for what the kernel computes, where Paddle
ships none.

Same signatures, same checks and error classes as the ``paddle`` profile (both run the family's
:mod:`.checks`); only the answers differ (see :mod:`paddle_spmd_port.ops.kit.proposed`).

What changes, and why (N = batch axis 0)::

    rule                  Paddle 3.3.1                            proposed
    sync_batch_norm       no rule: everything replicated          N kept when it splits evenly (the kernel
                                                                  all-reduces its statistics as a *mean of
                                                                  per-rank means*, which is wrong for uneven
                                                                  shards); C and the rest replicated: Paddle's
                                                                  kernel all-reduces over its whole
                                                                  communicator, which would add up different
                                                                  channel blocks (running-statistics mode:
                                                                  every axis kept, nothing is all-reduced)
    sync_batch_norm_grad  everything replicated                   N kept (even); scale_grad/bias_grad Partial
                                                                  {N's mesh dim}: the kernel sums them locally,
                                                                  only the x_grad terms are all-reduced

Worked table, 2x3 mesh, x [8,7,10,12] NCHW::

    rule / mode               given                          proposed inputs                 proposed outputs
    sync_batch_norm train     x [0,1,-1,-1] (8 % 2 == 0)     x [0,-1,-1,-1], per-ch. [-1]     out [0,-1,-1,-1]
    sync_batch_norm train     x [1,0,-1,-1] (8 % 3 != 0)     x [-1,-1,-1,-1]                  out [-1,-1,-1,-1]
    sync_batch_norm_grad      x [0,1,-1,-1], og same         x/og [0,-1,-1,-1]                scale/bias_grad [-1] P{0}
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...types import MeshDims, SpmdResult, mesh_dims_of
from .. import RULES
from ..batch_norm.checks import bn_grad_inputs
from ..batch_norm.proposed import (
    FORWARD_MESH_OF,
    FORWARD_OTHERS,
    GRAD_FORMAT,
    bn_forward,
    grad_result,
    per_channel,
    running_statistics,
    vote,
)
from ..kit.checks import Attrs, Specs, input_names, rule
from ..kit.layout import channel_axis
from ..kit.proposed import with_coshards
from ..kit.tensor import RuleInput

_GRAD_ORDER = RULES["sync_batch_norm_grad"].inputs
_GRAD_NAMES = input_names("sync_batch_norm_grad")


def _even_batch(tx: RuleInput, shape: Sequence[int], mapping: Sequence[MeshDims]) -> int:
    """N's mesh dim when it splits N evenly (the sync kernel averages per-rank means), else -1;
    for a co-shard on N, its first member when N splits evenly over all of them."""
    dims = mesh_dims_of(mapping[0])
    if not dims or tx.mesh is None or shape[0] % math.prod(tx.mesh.shape[m] for m in dims):
        return -1
    return dims[0]


@rule("sync_batch_norm", packed=True, others=FORWARD_OTHERS, mesh_of=FORWARD_MESH_OF)
def sync_batch_norm_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Forward: N stays split (statistics are all-reduced) when even; C with its per-channel tensors."""
    running = running_statistics(attrs)

    def axes(tx: RuleInput, c: int) -> Sequence[int]:
        if running:
            return range(tx.ndim)
        x = specs[0]
        even = _even_batch(tx, x.shape, x.dims_mapping) >= 0 and _even_batch(tx, x.shape, tx.dims_mapping) >= 0
        return (0,) if even else ()

    return bn_forward(specs, attrs, axes)


@rule("sync_batch_norm_grad", packed=True, others=RULES["sync_batch_norm_grad"].inputs[1:],
      mesh_of=RULES["sync_batch_norm_grad"].inputs + ("x", "scale", "bias"))
def sync_batch_norm_grad_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Grad: the kernel always uses the saved statistics and all-reduces the x_grad sums, so N
    (even) and C stay split; scale_grad/bias_grad are local sums, Partial over N's mesh dim."""
    t = bn_grad_inputs(_GRAD_NAMES, specs, attrs)
    tx = t["x"]
    c = channel_axis(attrs[GRAD_FORMAT][1], tx.ndim)
    x = specs[0]
    kept = list(with_coshards(vote(tx, c, (0,), (t["out_grad"],), per_channel(t)), x, specs[-1]))
    if c != 0 and kept[0] != -1 and _even_batch(tx, x.shape, kept) < 0:
        kept[0] = -1
    partial = frozenset(mesh_dims_of(kept[0])) if c != 0 else frozenset()
    return grad_result(t, _GRAD_ORDER, tuple(kept), c, partial)

