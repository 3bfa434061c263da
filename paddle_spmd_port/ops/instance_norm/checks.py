"""instance_norm's checks before any profile answers: Paddle's in its order, then the port's
(each preamble's docstring says which)."""

from __future__ import annotations

from ...errors import InvalidSpecError, PaddleInvalidArgument
from ...types import DistTensorSpec
from ..kit.checks import REAL, input_names, require_buildable
from ..kit.layout import check_channel_x_rank
from ..kit.strictness import Strictness, StrictnessNotes, copied_x_strictness, unread_strictness
from ..kit.tensor import (
    RuleInput,
    as_input,
    check_attrs,
    check_specs,
    require_ndim,
    require_x_mesh,
    valid_inputs,
)

IN = "instance_norm"
_IN_FORWARD, _IN_GRAD = input_names("instance_norm"), input_names("instance_norm_grad")


#: The inputs each rule never reads the mapping of (PADDLE-QUIRK(in-grad-ignores)): their malformed
#: mappings are mirrored.
UNREAD = {"instance_norm": ("scale", "bias"),
          "instance_norm_grad": ("scale", "bias", "saved_mean", "saved_variance", "y_grad")}
_IN_KEYS = tuple(UNREAD)

#: The port's refusals beyond Paddle's instance_norm rules (:mod:`~paddle_spmd_port.ops.kit.strictness`).
STRICTNESS = StrictnessNotes((
    *unread_strictness("instance_norm", UNREAD),
    *copied_x_strictness("instance_norm", _IN_KEYS, "axes 2 and 3", "axes 2 and 3", short="of fewer than 4 entries",
                         duplicate_note=" (the merge keeps it on the first)",
                         length_note="fewer than 4 entries are written past their end: invalid-spec:x:length-short; "
                                     "4 for a 5-D x leave axis 4 unmerged, out of the answer"),
    Strictness("invalid-spec:*:missing", "None for a required tensor; Paddle's stand-in for None is a tensor of "
               "shape [0] without a mesh, which instance_norm's rules read as any other (x: rank 1, refused by "
               "their rank check; the others: refused by theirs)", "varies", "refuses",
               "the op's Python API needs every required tensor", mirror_keys=_IN_KEYS, families=("instance_norm",)),
    Strictness("invalid-spec:*:mixed-mesh", "a tensor on a mesh of another number of dims than x's whose mesh dims "
               "reach the answer; Paddle's rule answers the attr as is (naming mesh dims its mesh lacks), and "
               "crashes (SIGSEGV) where a grad partial names one", "varies", "unmeasured",
               mirror_keys=_IN_KEYS, families=("instance_norm",)),
    Strictness("invalid-spec:x:rank", "x of rank 2 or 3; Paddle's rule clears axes 2 and 3 by index, writing past "
               "the end of the mapping (SIGABRT, heap corruption; now and then an answer read from memory it "
               "never set, which differs by run: never mirrored)", "undefined", "unmeasured",
               families=("instance_norm",)),
    Strictness("invalid-spec:scale:none-with-sharded-nc", "scale None (or meshless) while x's N or C axis is split; "
               "Paddle marks scale_grad partial on an attr without a mesh and crashes (SIGSEGV)", "crashes",
               "unmeasured", families=("instance_norm",)),
))

#: Per rule key, the refusals its mirror function answers (``rules.MIRRORS``).
MIRRORED = {key: tuple(d.check for d in STRICTNESS.declared if key in d.mirror_keys) for key in _IN_KEYS}


def in_forward_inputs(x: DistTensorSpec, scale: DistTensorSpec | None, bias: DistTensorSpec | None,
                      epsilon: float) -> tuple[RuleInput, RuleInput, RuleInput]:
    """instance_norm's forward checks: P x rank 2..5, scale and bias 1-D; port x on a mesh, specs
    valid, x rank 4 or 5. Returns (x, scale, bias)."""
    ready = valid_inputs((x, scale, bias), _IN_FORWARD)
    if ready is not None and type(epsilon) in REAL:
        tx, ts, tb = ready
        if 4 <= tx.ndim <= 5 and ts.ndim == tb.ndim == 1:
            return tx, ts, tb
    tx, ts, tb = as_input(x, "x"), as_input(scale, "scale", optional=True), as_input(bias, "bias", optional=True)
    check_attrs(("epsilon", epsilon))
    require_buildable(("x", x), ("scale", scale), ("bias", bias))
    check_channel_x_rank(tx, IN)
    require_ndim(ts, 1, IN)
    require_ndim(tb, 1, IN)
    require_x_mesh(tx)
    check_specs(("x", x), ("scale", scale), ("bias", bias))
    require_in_spatial_axes(tx)
    return tx, ts, tb


def in_grad_inputs(x: DistTensorSpec, scale: DistTensorSpec | None, bias: DistTensorSpec | None,
                   saved_mean: DistTensorSpec, saved_variance: DistTensorSpec, y_grad: DistTensorSpec,
                   epsilon: float) -> tuple[RuleInput, ...]:
    """instance_norm's grad checks, Paddle's in its order: x rank 2..5 (the grad's own wording),
    y_grad's rank == x's (the message prints ``[0]`` whatever the rank: PADDLE-QUIRK(in-grad-message)),
    scale 1-D, saved_mean and saved_variance 2-D; bias is never read. Then the port's: x on a mesh,
    specs valid, x rank 4 or 5. Returns (x, scale, bias, saved_mean, saved_variance, y_grad)."""
    ready = valid_inputs((x, scale, bias, saved_mean, saved_variance, y_grad), _IN_GRAD)
    if ready is not None and type(epsilon) in REAL:
        tx, ts, tb, tm, tv, tg = ready  # bias is never read: any rank passes
        if 4 <= tx.ndim <= 5 and tg.ndim == tx.ndim and ts.ndim == 1 and tm.ndim == tv.ndim == 2:
            return tx, ts, tb, tm, tv, tg
    tx, ts, tb = as_input(x, "x"), as_input(scale, "scale", optional=True), as_input(bias, "bias", optional=True)
    tm, tv = as_input(saved_mean, "saved_mean"), as_input(saved_variance, "saved_variance")
    tg = as_input(y_grad, "y_grad")
    check_attrs(("epsilon", epsilon))
    require_buildable(("x", x), ("scale", scale), ("bias", bias), ("saved_mean", saved_mean),
                      ("saved_variance", saved_variance), ("y_grad", y_grad))
    if tx.ndim < 2:
        raise PaddleInvalidArgument(f"The ndim of x in {IN} should greater than 1, but got [{tx.ndim}].",
                                    kind="ndim:x:min")
    if tx.ndim > 5:
        raise PaddleInvalidArgument(f"The ndim of x in {IN} should less than 6, but got [{tx.ndim}].",
                                    kind="ndim:x:max")
    if tg.ndim != tx.ndim:
        raise PaddleInvalidArgument(f"The ndim of y_grad in {IN} should be equal with x, but got [0].",
                                    kind="ndim:y_grad")
    require_ndim(ts, 1, IN)
    require_ndim(tm, 2, IN)
    require_ndim(tv, 2, IN)
    require_x_mesh(tx)
    check_specs(("x", x), ("scale", scale), ("bias", bias), ("saved_mean", saved_mean),
                ("saved_variance", saved_variance), ("y_grad", y_grad))
    require_in_spatial_axes(tx)
    return tx, ts, tb, tm, tv, tg


def require_in_spatial_axes(x: RuleInput) -> None:
    """Port-only: Paddle clears x's axes 2 and 3 (the spatial axes of NCHW) by index, so a 2-D or
    3-D x makes it write past the end of the dims_mapping (SIGABRT, heap corruption; a few runs
    answer garbage)."""
    if x.ndim < 4:
        raise InvalidSpecError(
            f"x has rank {x.ndim}; Paddle's instance_norm rule clears axes 2 and 3 by index and corrupts "
            "its heap (SIGABRT) for a 2-D or 3-D x, or answers from memory it never set; pass x as [N, C, H, W] "
            "or [N, C, D, H, W] "
            "(reshape an [N, C, L] input to [N, C, L, 1])", kind="invalid-spec:x:rank")
