"""fast_ln: ``FastLnInferSpmd``, ``FastLnGradInferSpmd`` (Paddle 3.3.1, declared in layer_norm.h;
unregistered: only the compiled caller reaches them).

Both are layer_norm's rules with ``begin_norm_axis = rank(x) - 1`` (the last axis normalised;
see :mod:`.layer_norm` for the notation)::

    forward   ij1, 1, 1  ->  ij1, ij, ij              x, scale, bias -> out, mean, invvar
    grad      ijk, -, ij, ij, ijk  ->  ijk, -, -      x, scale, mean, invvar, y_grad
                                                      -> x_grad, scale_grad, bias_grad

Worked table, 2x3 mesh, x [8,6,4]::

    rule     input mappings                           returned inputs                    outputs
    forward  x [1,-1,0]                               [1,-1,-1] [-1] [-1]                [1,-1,-1] [1,-1] [1,-1]
    grad     x [0,1,-1] mean/invvar [-1,-1] og [-1..] x [0,1,-1] [-1] [0,1] [0,1] og    x_grad [0,1,-1],
                                                                                       scale/bias_grad [-1] P{0,1}

Quirks kept on purpose (Paddle 3.3.1 does this), besides layer_norm's (ln-partial, ln-grad-partial):

* PADDLE-QUIRK(fast-ln-grad-bias): the grad rule has no bias; it passes scale as layer_norm_grad's
  bias, so bias_grad is scale_grad's twin (scale's mesh and rank), and it drops that bias from the
  returned inputs (five: x, scale, mean, invvar, y_grad).
* PADDLE-QUIRK(fast-ln-messages): Paddle's errors are layer_norm's, naming layer_norm and its
  arguments (variance for invvar, out_grad for y_grad); the port's own InvalidSpecErrors name
  fast_ln_grad's arguments.

Port-only checks: layer_norm's (:mod:`paddle_spmd_port.ops.layer_norm.checks`), with begin_norm_axis =
rank - 1: x of rank 0 (Paddle: a bare ``basic_string::_M_create`` in the forward) is rejected; in
the grad, mean and invvar of rank ndim - 1. Under the ``mirror`` policy those refusals are answered
by layer_norm's model of the rules on the raw input (:mod:`..layer_norm.raw`).
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from ...errors import InvalidSpecError
from ...types import DistTensorSpec, SpmdResult
from ..kit.checks import RuleFn, rule
from ..kit.raw_mapping import require_paddle_profile
from ..kit.strictness import mirror_via
from ..layer_norm import raw
from ..layer_norm.rules import layer_norm_grad_infer_spmd, layer_norm_infer_spmd
from .checks import STRICTNESS


def _last_axis(x: object) -> int:
    """``rank(x) - 1`` for a spec; any other value passes ``1`` so that layer_norm's checks name it."""
    if isinstance(x, DistTensorSpec):
        return len(x.shape) - 1
    return 1


@rule("fast_ln")
def fast_ln_infer_spmd(
    x: DistTensorSpec,
    scale: DistTensorSpec | None,
    bias: DistTensorSpec | None,
    epsilon: float = 1e-5,
) -> SpmdResult:
    """Forward rule: ``LayerNormInferSpmd`` with begin_norm_axis = rank(x) - 1. Inputs (x, scale,
    bias); outputs (out, mean, invvar). (Paddle's header gives epsilon no default; the port's is 1e-5.)"""
    return layer_norm_infer_spmd(x, scale, bias, epsilon, _last_axis(x))  # rank 0: layer_norm rejects x


@rule("fast_ln_grad")
def fast_ln_grad_infer_spmd(
    x: DistTensorSpec,
    scale: DistTensorSpec | None,
    mean: DistTensorSpec,
    invvar: DistTensorSpec,
    y_grad: DistTensorSpec,
    epsilon: float = 1e-5,
) -> SpmdResult:
    """Grad rule: ``LayerNormGradInferSpmd`` with scale passed as bias too and begin_norm_axis =
    rank(x) - 1 (PADDLE-QUIRK(fast-ln-grad-bias)). Inputs (x, scale, mean, invvar, y_grad);
    outputs (x_grad, scale_grad, bias_grad)."""
    try:
        full = layer_norm_grad_infer_spmd(x, scale, scale, mean, invvar, y_grad, epsilon, _last_axis(x))
    except InvalidSpecError as exc:  # the port's own errors name fast_ln_grad's arguments
        raise _renamed(exc) from None
    return SpmdResult.make(inputs=full.inputs[:2] + full.inputs[3:], outputs=full.outputs)


#: layer_norm_grad's argument names in the port's own messages -> fast_ln_grad's.
_GRAD_NAMES = ((re.compile(r"\bvariance\b"), "invvar"), (re.compile(r"\bout_grad\b"), "y_grad"),
               (re.compile(r"x\.shape\[:begin_norm_axis\]"), "x.shape[:-1]"))


def _renamed(exc: InvalidSpecError) -> InvalidSpecError:
    """``exc`` (an InvalidSpecError or ArgumentTypeError raised by layer_norm_grad's checks) with
    fast_ln_grad's argument names in its message and kind; Paddle's own errors keep their text."""
    message, kind = str(exc), exc.kind
    for pattern, name in _GRAD_NAMES:
        message, kind = pattern.sub(name, message), pattern.sub(name, kind)
    return type(exc)(message, kind=kind)


def _begin(x: object) -> int:
    """FastLn's begin_norm_axis, ``rank(x) - 1``, as Paddle reads x (None: its stand-in of rank 1)."""
    return len(x.shape) - 1 if isinstance(x, DistTensorSpec) else 0


def _raw_forward(fn: RuleFn, *args: Any, **kwargs: Any) -> SpmdResult:
    """``FastLnInferSpmd`` on the raw arguments: layer_norm's model (:mod:`..layer_norm.raw`)."""
    require_paddle_profile(fn, args, kwargs)
    x, scale, bias, epsilon = _bound(fn, args, kwargs)
    return raw.forward(x, scale, bias, epsilon, _begin(x), check_begin=False)


def _raw_grad(fn: RuleFn, *args: Any, **kwargs: Any) -> SpmdResult:
    """``FastLnGradInferSpmd`` on the raw arguments: layer_norm's model with scale passed as bias,
    the bias dropped from the returned inputs (PADDLE-QUIRK(fast-ln-grad-bias))."""
    require_paddle_profile(fn, args, kwargs)
    x, scale, mean, invvar, y_grad, epsilon = _bound(fn, args, kwargs)
    full = raw.grad(x, scale, scale, mean, invvar, y_grad, epsilon, _begin(x),
                    names=("x", "scale", "scale", "mean", "invvar", "y_grad"), check_begin=False)
    return SpmdResult.make(inputs=full.inputs[:2] + full.inputs[3:], outputs=full.outputs)


def _bound(fn: RuleFn, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    return list(bound.arguments.values())


#: The mirror policy's answers: every declared check of the family (:data:`.checks.STRICTNESS`) that
#: names a rule key among its ``mirror_keys``, answered by layer_norm's model of the rule.
MIRRORED_RAW = tuple(
    mirror_via(key, decl.check, {"fast_ln": _raw_forward, "fast_ln_grad": _raw_grad}[key],
               f"{key}: Paddle's rule on the raw input; :mod:`..layer_norm.raw`.", __name__)
    for decl in STRICTNESS.declared for key in decl.mirror_keys)
