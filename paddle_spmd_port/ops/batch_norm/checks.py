"""batch_norm's checks before any profile answers (sync_batch_norm's grads and the ``pr72918``
profile run them too), in this order after the types (P = Paddle's own check, a PaddleInvalidArgument with
its message; port = InvalidSpecError, where Paddle crashes or accepts garbage)::

    preamble            checks after the types
    bn_forward_inputs   P x rank 2..5; P mean, variance, scale, bias 1-D; port x on a mesh, specs valid
    bn_grad_inputs      P x rank 2..5; P out_grad rank == x's; P 1-D in Paddle's order: mean_out,
                        variance_out, scale, bias, saved_mean, saved_variance (those the rule has);
                        P reserve_space 1-D; port x on a mesh, specs valid

data_format is checked by :func:`~paddle_spmd_port.ops.kit.layout.channel_axis` (the PR #72918
rules do not read it). Messages name ``batch_norm`` also for sync_batch_norm (the proposal's
messages do), and the rank-2 reserve_space message says ``reserve_space_ndim``, as Paddle's does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import PaddleInvalidArgument
from ...types import DistTensorSpec
from ..kit.checks import input_names
from ..kit.layout import check_channel_x_rank
from ..kit.strictness import (
    PLACEMENTS,
    UNREAD_PROBLEMS,
    Strictness,
    StrictnessNotes,
    copied_x_strictness,
    unread_strictness,
)
from ..kit.tensor import (
    RuleInput,
    as_input,
    attrs_exact,
    check_attrs,
    check_specs,
    require_ndim,
    require_x_mesh,
    valid_inputs,
)
from .layout import FORWARD_ATTRS, GRAD_ATTRS

BN = "batch_norm"
#: Where a packed rule's attributes (:data:`~..kit.checks.Attrs`) hold each one: the forward's and
#: the grad's declared orders.
FORWARD_AT = {name: i for i, (name, _) in enumerate(FORWARD_ATTRS)}
GRAD_AT = {name: i for i, (name, _) in enumerate(GRAD_ATTRS)}

#: Paddle's order of the grad rule's 1-D checks (not the signature order).
_BN_GRAD_1D = ("mean_out", "variance_out", "scale", "bias", "saved_mean", "saved_variance")
_BN_FORWARD = input_names("batch_norm")


#: The inputs each rule never reads the mapping of (PADDLE-QUIRK(bn-ignored-stats), PADDLE-QUIRK(bn-grad-og-ignored)):
#: their malformed mappings are mirrored.
UNREAD = {"batch_norm": ("mean", "variance", "scale", "bias"),
          "batch_norm_static": ("mean", "variance", "scale", "bias"),
          "batch_norm_grad": ("scale", "bias", "mean_out", "variance_out", "saved_mean", "saved_variance",
                              "reserve_space", "out_grad")}
_BN_KEYS = tuple(UNREAD)
_SYNC_KEYS = ("sync_batch_norm", "sync_batch_norm_grad")

#: The port's refusals beyond Paddle's batch_norm rules (:mod:`~paddle_spmd_port.ops.kit.strictness`).
STRICTNESS = StrictnessNotes((
    *unread_strictness("batch_norm", UNREAD),
    *copied_x_strictness("batch_norm", _BN_KEYS, "every axis but the channel", "every axis",
                         also=", and read the channel's entry past it where the mapping has one entry"),
    Strictness("invalid-spec:*:missing", "None for a required tensor; Paddle's stand-in for None is a tensor of "
               "shape [0] without a mesh, which batch_norm's rules read as any other (x: rank 1, refused by their "
               "rank check; the others: the attrs copied from it have no mesh)", "varies", "refuses",
               "the op's Python API needs every required tensor", mirror_keys=_BN_KEYS, families=("batch_norm",)),
    Strictness("invalid-spec:*:mixed-mesh", "a tensor on a mesh of another number of dims than x's whose mesh dims "
               "reach the answer; Paddle's rule answers the attr as is (naming mesh dims its mesh lacks), and "
               "crashes (SIGSEGV) where a grad partial names one", "varies", "unmeasured",
               mirror_keys=_BN_KEYS, families=("batch_norm",)),
    Strictness("invalid-spec:data_format", "a data_format outside NC, NCL, NCHW, NCDHW, NLC, NHWC, NDHWC; Paddle's "
               "rule only tests its second character for 'C' (channel axis 1, else the last axis), past the end "
               "of an empty string (invalid-spec:data_format:empty)", "varies", "refuses",
               "paddle.nn.functional.batch_norm raises ValueError for every other format (3.3.1: '', 'N', 'CN', "
               "'NWC', 'nchw', 'NCWH'); _C_ops.batch_norm raises for all but the lowercase 'nchw'",
               mirror_keys=("batch_norm", "batch_norm_grad"), families=("batch_norm",)),
    Strictness("invalid-spec:data_format:empty", "an empty data_format; Paddle's rule tests its second character, "
               "one past the end of the string (a byte the string never set), for 'C'", "undefined", "refuses",
               "paddle.nn.functional.batch_norm raises ValueError for '' (3.3.1), as for every format outside its "
               "list", families=("batch_norm",)),
    *(Strictness(f"invalid-spec:*:{problem}", "a malformed dims_mapping (of the wrong length, a mesh dim the mesh "
                 "lacks or one repeated); the replicated fallback reads only each tensor's shape and mesh", "answers",
                 "inexpressible", PLACEMENTS, mirror_keys=_SYNC_KEYS,
                 families=("sync_batch_norm",))
      for problem in UNREAD_PROBLEMS),
    Strictness("invalid-spec:*:rank", "mean, variance, scale, bias or a saved statistic of rank other than 1; "
               "the replicated fallback answers each replicated, of its own rank, and the outputs of rank 1",
               "answers", "unmeasured", mirror_keys=_SYNC_KEYS, families=("sync_batch_norm",)),
    Strictness("invalid-spec:*:missing", "None for a required tensor; the replicated fallback answers Paddle's "
               "stand-in for it (rank 1, no mesh) replicated, and x's (then the outputs) without a mesh",
               "answers", "refuses", "the op's Python API needs every required tensor", mirror_keys=_SYNC_KEYS,
               families=("sync_batch_norm",)),
    Strictness("invalid-spec:x:mesh", "x without a process mesh; the replicated fallback answers every output "
               "without one", "answers", "inexpressible", "a dist tensor always has a process mesh",
               mirror_keys=_SYNC_KEYS, families=("sync_batch_norm",)),
    Strictness("invalid-spec:*:none-with-sharded-c", "scale or bias None (or meshless) while the channel axis is "
               "split; Paddle marks its grad partial on an attr without a mesh and crashes (SIGSEGV)", "crashes",
               "unmeasured", families=("batch_norm",)),
))

#: Per rule key, the refusals its mirror function answers (``rules.MIRRORS``).
MIRRORED = {key: tuple(d.check for d in STRICTNESS.declared if key in d.mirror_keys) for key in _BN_KEYS}
#: The same for sync_batch_norm's replicated fallback (``ops/sync_batch_norm/rules.py``).
SYNC_MIRRORED = {key: tuple(d.check for d in STRICTNESS.declared if key in d.mirror_keys) for key in _SYNC_KEYS}


def bn_forward_inputs(specs: Sequence[DistTensorSpec | None], attrs: Sequence[tuple[str, Any]]
                      ) -> tuple[RuleInput, RuleInput, RuleInput, RuleInput, RuleInput]:
    """The forward rules' checks: ``specs`` (x, mean, variance, scale, bias) and ``attrs`` in
    signature order. Returns (x, mean, variance, scale, bias)."""
    ready = valid_inputs(specs, _BN_FORWARD)
    if ready is not None and attrs_exact(attrs) and 2 <= ready[0].ndim <= 5 \
            and ready[1].ndim == ready[2].ndim == ready[3].ndim == ready[4].ndim == 1:
        tx, tm, tv, ts, tb = ready
        return tx, tm, tv, ts, tb
    x, mean, variance, scale, bias = specs
    tx, tm, tv = as_input(x, "x"), as_input(mean, "mean"), as_input(variance, "variance")
    ts, tb = as_input(scale, "scale", optional=True), as_input(bias, "bias", optional=True)
    check_attrs(*attrs)
    check_channel_x_rank(tx, BN)
    for t in (tm, tv, ts, tb):
        require_ndim(t, 1, BN)
    require_x_mesh(tx)
    check_specs(("x", x), ("mean", mean), ("variance", variance), ("scale", scale), ("bias", bias))
    return tx, tm, tv, ts, tb


def bn_grad_inputs(names: Sequence[tuple[str, bool]], specs: Sequence[DistTensorSpec | None],
                   attrs: Sequence[tuple[str, Any]]) -> dict[str, RuleInput]:
    """The grad rules' checks (batch_norm_grad and sync_batch_norm_grad): ``specs`` are the tensors
    in signature order, ``names`` their (name, optional) pairs (:func:`~..kit.checks.input_names`),
    ``attrs`` the attributes. Returns the wrapped tensors by name."""
    ready = valid_inputs(specs, names)
    if ready is not None and attrs_exact(attrs) and 2 <= ready[0].ndim <= 5:
        by_name = {t.name: t for t in ready}
        if by_name["out_grad"].ndim == ready[0].ndim and \
                all(t.ndim == 1 for t in ready if t.name != "x" and t.name != "out_grad"):
            return by_name
    named = [(name, spec) for (name, _), spec in zip(names, specs, strict=True)]
    t = {name: as_input(spec, name, optional=optional) for (name, optional), spec in zip(names, specs, strict=True)}
    check_attrs(*attrs)
    tx, tg = t["x"], t["out_grad"]
    check_channel_x_rank(tx, BN)
    if tg.ndim != tx.ndim:
        raise PaddleInvalidArgument(
            "The ndim of out_grad in batch_norm should be equal with x, "
            f"but got out_grad:[{tg.ndim}] and x:[{tx.ndim}].",
            kind="ndim:out_grad")
    for name in _BN_GRAD_1D:
        if name in t:
            require_ndim(t[name], 1, BN)
    if t["reserve_space"].ndim != 1:  # Paddle's message names it "reserve_space_ndim"
        raise PaddleInvalidArgument(
            f"The ndim of reserve_space_ndim in batch_norm should be 1, but got [{t['reserve_space'].ndim}].",
            kind="ndim:reserve_space")
    require_x_mesh(tx)
    check_specs(*named)
    return t
