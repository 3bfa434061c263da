"""sync_batch_norm: what Paddle 3.0.0-3.3.1 actually do — no rule, the replicated fallback.

No shipped release has a ``SyncBatchNorm*InferSpmd``: the generated dist API of
``sync_batch_norm_`` / ``sync_batch_norm_grad`` has no ``spmd_rule`` and calls the generic
replicated rule, which reshards every input to Replicate and makes every output Replicate.
(Measured against the registry's ``replicated`` rule applied to this signature: see
``paddle_spmd_port.native``.)

Notation: none — every axis of every tensor is forced to replicated::

    forward  x, mean, variance, scale, bias -> out, mean_out, variance_out, saved_mean,
             saved_variance, reserve_space
    grad     x, scale, bias, saved_mean, saved_variance, reserve_space, out_grad
             -> x_grad, scale_grad, bias_grad

Worked table, 2x3 mesh, x [8,6,4,4] NCHW::

    x                 inputs                                   outputs
    [0,1,-1,-1] P{}   [-1,-1,-1,-1] [-1] [-1] [-1] [-1]        [-1,-1,-1,-1] [-1] x5
    [-1,-1,-1,-1] P{0} partial dropped, same as above

* PADDLE-QUIRK(sync-replicated): each input keeps its own mesh and rank, partial cleared; a
  None input answers ``[-1]`` without a mesh (the rank of Paddle's ``[0]``-shaped stand-in);
  every output takes x's mesh.

Port-only checks (the replicated rule reads nothing, so Paddle answers anything): x needs a mesh;
the specs must pass :meth:`DistTensorSpec.check`; the per-channel tensors (mean, variance, scale,
bias, saved_mean, saved_variance) must be 1-D, as the op's outputs of their shape are (an answer
of rank 1 for a tensor of another rank would not fit it).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ...errors import InvalidSpecError
from ...types import DistAttr, DistTensorSpec, SpmdResult
from .. import RULES
from ..batch_norm.checks import SYNC_MIRRORED
from ..batch_norm.layout import PER_CHANNEL as BN_PER_CHANNEL
from ..kit.checks import Attrs, Specs, rule
from ..kit.raw_mapping import not_mirrored, require_buildable_raw, require_paddle_profile
from ..kit.strictness import mirror_via
from ..kit.tensor import RuleInput, as_input, check_attrs, check_specs, require_x_mesh


def _named(key: str, specs: Specs) -> tuple[tuple[str, DistTensorSpec | None, bool], ...]:
    """(name, spec, optional) per input of ``key``, from its declared spec."""
    sig = RULES[key]
    return tuple((name, spec, name in sig.optional) for name, spec in zip(sig.inputs, specs, strict=True))


def _replicated_fallback(named: Sequence[tuple[str, DistTensorSpec | None, bool]],
                         attrs: Sequence[tuple[str, object]], output_ranks: Sequence[int | None]) -> SpmdResult:
    """``output_ranks``: the rank of each output, ``None`` for x's rank."""
    inputs = [as_input(spec, name, optional=optional) for name, spec, optional in named]
    check_attrs(*attrs)
    x: RuleInput = inputs[0]
    require_x_mesh(x)
    check_specs(*((name, spec) for name, spec, _ in named))
    for t in inputs[1:]:
        if t.name in BN_PER_CHANNEL and not t.missing and t.ndim != 1:
            raise InvalidSpecError(
                f"{t.name} has rank {t.ndim}; sync_batch_norm's {t.name} is 1-D (one entry per channel), and "
                f"its answer (and its output's) would be rank 1", kind=f"invalid-spec:{t.name}:rank")
    return _replicated(inputs, x, output_ranks)


def _replicated(inputs: Sequence[RuleInput], x: RuleInput, output_ranks: Sequence[int | None]) -> SpmdResult:
    """Every input and output replicated: each input on its own mesh, the outputs on x's."""
    return SpmdResult.make(
        inputs=tuple(DistAttr.make((-1,) * t.ndim, frozenset(), t.mesh) for t in inputs),
        outputs=tuple(DistAttr.make((-1,) * (x.ndim if rank is None else rank), frozenset(), x.mesh)
                      for rank in output_ranks),
    )


@rule("sync_batch_norm", packed=True)
def sync_batch_norm_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Shipped behaviour of ``sync_batch_norm_``: everything replicated."""
    return _replicated_fallback(_named("sync_batch_norm", specs), attrs, (None, 1, 1, 1, 1, 1))


@rule("sync_batch_norm_grad", packed=True)
def sync_batch_norm_grad_infer_spmd(specs: Specs, attrs: Attrs) -> SpmdResult:
    """Shipped behaviour of ``sync_batch_norm_grad``: everything replicated."""
    return _replicated_fallback(_named("sync_batch_norm_grad", specs), attrs, (None, 1, 1))


# --------------------------------------------------------------------------- the mirror policy
def _fallback_raw(fn: Callable[..., SpmdResult], *args: Any, **kwargs: Any) -> SpmdResult:
    """The replicated fallback as Paddle runs it: it reads each tensor's rank and mesh only, so a
    malformed mapping, a per-channel tensor of another rank, a required tensor left None (Paddle's
    stand-in: rank 1, no mesh) and an x without a mesh (its outputs then have none) are answered.
    Refused: a partial dim outside its mesh (Paddle crashes building the attr), a mesh dim both
    sharding and partial (Paddle raises), a mapping or partial dims without a mesh (not measured)."""
    key: str = fn.rule_key  # type: ignore[attr-defined]
    require_paddle_profile(fn, args, kwargs)
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    sig = RULES[key]
    inputs = [as_input(bound.arguments[name], name, optional=True) for name in sig.inputs]
    check_attrs(*((name, bound.arguments[name]) for name, _ in sig.attrs))
    require_buildable_raw((name, bound.arguments[name]) for name in sig.inputs)
    for t in inputs:
        if t.mesh is None and (t.dims_mapping or t.partial_dims):
            not_mirrored(f"{t.name}: a dims_mapping or partial dims without a mesh (not measured)",
                         f"invalid-spec:{t.name}:mesh")
    x = inputs[0]
    ranks = (None, 1, 1, 1, 1, 1) if key == "sync_batch_norm" else (None, 1, 1)
    return _replicated(inputs, x, ranks)


#: The mirror policy: one answer per rule for every refusal :data:`..batch_norm.checks.SYNC_MIRRORED` names.
MIRRORED = tuple(mirror_via(key, check, _fallback_raw,
                            f"{key}: the replicated fallback on the raw input (:func:`_fallback_raw`).", __name__)
                 for key, checks in SYNC_MIRRORED.items() for check in checks)
