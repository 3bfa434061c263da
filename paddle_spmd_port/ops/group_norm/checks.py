"""group_norm's checks before any profile answers (the attributed rules and the Base ones):
Paddle's in its order, then the port's (each preamble's docstring says which)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import PaddleInvalidArgument
from ...types import DistTensorSpec
from ..kit.checks import input_names, require_buildable
from ..kit.strictness import Strictness, StrictnessNotes, copied_x_strictness, unread_strictness
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

_GN_FORWARD, _GN_GRAD = input_names("group_norm"), input_names("group_norm_grad")

GN = "group_norm"


_GN_KEYS = ("group_norm", "group_norm_base", "group_norm_grad", "group_norm_grad_base")

#: The inputs each rule never reads the mapping of (PADDLE-QUIRK(gn-grad-ignores)): their malformed
#: mappings are mirrored.
UNREAD = {"group_norm": ("scale", "bias"), "group_norm_base": ("scale", "bias"),
          **{key: ("scale", "bias", "y", "mean", "variance", "y_grad") for key in ("group_norm_grad",
                                                                                  "group_norm_grad_base")}}

#: The port's refusals beyond Paddle's group_norm rules (:mod:`~paddle_spmd_port.ops.kit.strictness`).
STRICTNESS = StrictnessNotes((
    *unread_strictness("group_norm", UNREAD),
    *copied_x_strictness("group_norm", _GN_KEYS, "every axis but 0", "axes 1 to rank-1"),
    Strictness("invalid-spec:*:missing", "None for a required tensor; Paddle's stand-in for None is a tensor of "
               "shape [0] without a mesh, which group_norm's rules read as any other (x: rank 1, refused by their "
               "rank check; y, y_grad, mean, variance: refused by theirs)", "varies", "refuses",
               "the op's Python API needs every required tensor", mirror_keys=_GN_KEYS, families=("group_norm",)),
    Strictness("invalid-spec:*:mixed-mesh", "a tensor on a mesh of another number of dims than x's whose mesh dims "
               "reach the answer; Paddle's rule answers the attr as is (naming mesh dims its mesh lacks), and "
               "crashes (SIGSEGV) where a grad partial names one", "varies", "unmeasured",
               mirror_keys=_GN_KEYS, families=("group_norm",)),
    Strictness("invalid-spec:*:none-with-sharded-n", "scale or bias None (or meshless) while x's axis 0 is split; "
               "Paddle marks its grad partial on an attr without a mesh and crashes (SIGSEGV)", "crashes",
               "unmeasured", families=("group_norm",)),
))

#: Per rule key, the refusals its mirror function answers (``rules.MIRRORS``).
MIRRORED = {key: tuple(d.check for d in STRICTNESS.declared if key in d.mirror_keys) for key in _GN_KEYS}


def _gn_x_rank(x: RuleInput, low_message: str) -> None:
    """Paddle's x-rank check of group_norm: 3 <= rank <= 5 (the grad words the lower bound its own
    way: PADDLE-QUIRK(gn-grad-messages))."""
    if x.ndim < 3:
        raise PaddleInvalidArgument(f"The ndim of x in {GN} {low_message} than 2, but got [{x.ndim}].",
                                    kind="ndim:x:min")
    if x.ndim > 5:
        raise PaddleInvalidArgument(f"The ndim of x in {GN} should be less than 6 , but got [{x.ndim}].",
                                    kind="ndim:x:max")


def gn_forward_inputs(x: DistTensorSpec, scale: DistTensorSpec | None, bias: DistTensorSpec | None,
                      attrs: Sequence[tuple[str, Any]]) -> tuple[RuleInput, RuleInput, RuleInput]:
    """group_norm's forward checks (``attrs``: epsilon, groups, data_format, or none for the Base
    rule; types only): port every partial dim on its spec's mesh (:func:`require_buildable`); P x
    rank: Paddle aborts). Returns (x, scale, bias)."""
    ready = valid_inputs((x, scale, bias), _GN_FORWARD)
    if ready is not None and attrs_exact(attrs):
        tx, ts, tb = ready
        if 3 <= tx.ndim <= 5 and ts.ndim == tb.ndim == 1:
            return tx, ts, tb
    tx, ts, tb = as_input(x, "x"), as_input(scale, "scale", optional=True), as_input(bias, "bias", optional=True)
    check_attrs(*attrs)
    require_buildable(("x", x), ("scale", scale), ("bias", bias))
    _gn_x_rank(tx, "should be greater")
    require_ndim(ts, 1, GN)
    require_ndim(tb, 1, GN)
    require_x_mesh(tx)
    check_specs(("x", x), ("scale", scale), ("bias", bias))
    return tx, ts, tb


def gn_grad_inputs(x: DistTensorSpec, scale: DistTensorSpec | None, bias: DistTensorSpec | None, y: DistTensorSpec,
                   mean: DistTensorSpec, variance: DistTensorSpec, y_grad: DistTensorSpec,
                   attrs: Sequence[tuple[str, Any]]) -> tuple[RuleInput, ...]:
    """group_norm's grad checks: :func:`require_buildable`, then Paddle's in its order: x rank 3..5,
    y's and y_grad's rank == x's,
    scale and bias 1-D, mean and variance 2-D (reported under bias's name:
    PADDLE-QUIRK(gn-grad-messages)); then the port's: x on a mesh, specs valid. Returns (x, scale,
    bias, y, mean, variance, y_grad)."""
    ready = valid_inputs((x, scale, bias, y, mean, variance, y_grad), _GN_GRAD)
    if ready is not None and attrs_exact(attrs):
        tx, ts, tb, ty, tm, tv, tg = ready
        if 3 <= tx.ndim <= 5 and ty.ndim == tg.ndim == tx.ndim and ts.ndim == tb.ndim == 1 \
                and tm.ndim == tv.ndim == 2:
            return tx, ts, tb, ty, tm, tv, tg
    tx, ts, tb = as_input(x, "x"), as_input(scale, "scale", optional=True), as_input(bias, "bias", optional=True)
    ty, tm, tv = as_input(y, "y"), as_input(mean, "mean"), as_input(variance, "variance")
    tg = as_input(y_grad, "y_grad")
    check_attrs(*attrs)
    require_buildable(("x", x), ("scale", scale), ("bias", bias), ("y", y), ("mean", mean), ("variance", variance),
                      ("y_grad", y_grad))
    _gn_x_rank(tx, "should grater")
    for t in (ty, tg):
        if t.ndim != tx.ndim:
            raise PaddleInvalidArgument(f"The ndim of x and {t.name} in {GN} should be equal, but got x:[{tx.ndim}] "
                                        f"and {t.name}[{t.ndim}] .", kind=f"ndim:{t.name}")
    require_ndim(ts, 1, GN)
    require_ndim(tb, 1, GN)
    for t in (tm, tv):
        if t.ndim != 2:  # Paddle names bias and prints its rank (1 by now)
            raise PaddleInvalidArgument(f"The ndim of bias in {GN} should be 2, but got [{tb.ndim}].",
                                        kind=f"ndim:{t.name}")
    require_x_mesh(tx)
    check_specs(("x", x), ("scale", scale), ("bias", bias), ("y", y), ("mean", mean), ("variance", variance),
                ("y_grad", y_grad))
    return tx, ts, tb, ty, tm, tv, tg
