"""rules/preconditions.py: every profile runs the same checks, so an invalid input raises the same
error (class and message) in ``paddle``, ``pr72918`` and ``proposed``.

The ``paddle`` profile's errors are the ones compared against Paddle 3.3.1; the others must say the
same. Two drifts this pins: a rank-2 reserve_space is "reserve_space_ndim" (Paddle's wording) in
every profile, and with both scale and mean_out of the wrong rank every profile names mean_out
(Paddle's check order, not the signature order).
"""

from __future__ import annotations

import pytest

from paddle_spmd_port.errors import InvalidSpecError, PaddleInvalidArgument
from paddle_spmd_port.ops import RULES
from paddle_spmd_port.rules import rule_function

from .helpers import rep, spec

X, C = (8, 6, 4, 4), (6,)


def _error(rule: str, profile: str, tensors: dict, **attrs) -> tuple[type, str]:
    fn = rule_function(rule, profile)
    with pytest.raises((PaddleInvalidArgument, InvalidSpecError)) as info:
        fn(*(tensors[n] for n in RULES[rule].inputs), **attrs)
    return type(info.value), str(info.value)


def _bn_grad_tensors(rule: str, **changed) -> dict:
    base = {n: rep(C) for n in RULES[rule].inputs}
    base.update(x=rep(X), out_grad=rep(X), reserve_space=None)
    base.update(changed)
    return base


BN_GRAD_INVALID = {
    "x-rank-1": {"x": rep((8,)), "out_grad": rep((8,))},
    "x-rank-6": {"x": rep((8, 6, 4, 4, 2, 2)), "out_grad": rep((8, 6, 4, 4, 2, 2))},
    "out_grad-rank": {"out_grad": rep((8, 6, 4))},
    "scale-rank-2": {"scale": rep((6, 1))},
    "saved_variance-rank-2": {"saved_variance": rep((6, 2))},
    "reserve_space-rank-2": {"reserve_space": rep((5, 2))},
    "scale-and-mean_out-rank-2": {"scale": rep((6, 1)), "mean_out": rep((6, 1))},
    "scale-and-saved_mean-rank-2": {"scale": rep((6, 1)), "saved_mean": rep((6, 1))},
    "x-no-mesh": {"x": spec(X, (), mesh=None)},
    "x-mesh-dim-twice": {"x": spec(X, (0, 0, -1, -1))},
}


@pytest.mark.parametrize("name", BN_GRAD_INVALID)
def test_batch_norm_grad_errors_are_paddles_in_every_profile(name):
    tensors = _bn_grad_tensors("batch_norm_grad", **BN_GRAD_INVALID[name])
    want = _error("batch_norm_grad", "paddle", tensors)
    assert _error("batch_norm_grad", "proposed", tensors) == want
    assert _error("batch_norm_grad", "pr72918", tensors) == want


@pytest.mark.parametrize("name", [n for n in BN_GRAD_INVALID if "mean_out" not in n])
def test_sync_grad_proposals_raise_what_batch_norm_grad_raises(name):
    """pr72918 and proposed check sync_batch_norm_grad as batch_norm_grad (messages name batch_norm)."""
    changed = BN_GRAD_INVALID[name]
    want = _error("batch_norm_grad", "paddle", _bn_grad_tensors("batch_norm_grad", **changed))
    tensors = _bn_grad_tensors("sync_batch_norm_grad", **changed)
    assert _error("sync_batch_norm_grad", "pr72918", tensors) == want
    assert _error("sync_batch_norm_grad", "proposed", tensors) == want


def test_the_two_known_drifts_are_gone():
    reserve = _error("batch_norm_grad", "proposed", _bn_grad_tensors("batch_norm_grad", reserve_space=rep((5, 2))))
    assert reserve == (PaddleInvalidArgument,
                       "The ndim of reserve_space_ndim in batch_norm should be 1, but got [2].")
    both = _error("batch_norm_grad", "proposed",
                  _bn_grad_tensors("batch_norm_grad", scale=rep((6, 1)), mean_out=rep((6, 1))))
    assert both == (PaddleInvalidArgument, "The ndim of mean_out in batch_norm should be 1, but got [2].")


BN_FWD_INVALID = {
    "x-rank-1": {"x": rep((8,))},
    "x-rank-6": {"x": rep((8, 6, 4, 4, 2, 2))},
    "mean-rank-2": {"mean": rep((6, 1))},
    "bias-rank-2": {"bias": rep((6, 1))},
    "x-no-mesh": {"x": spec(X, (), mesh=None)},
    "scale-mesh-dim-out-of-range": {"scale": spec(C, (2,))},
}


@pytest.mark.parametrize("name", BN_FWD_INVALID)
def test_batch_norm_forward_errors_agree(name):
    tensors = {n: rep(C) for n in RULES["batch_norm"].inputs} | {"x": rep(X)} | BN_FWD_INVALID[name]
    want = _error("batch_norm", "paddle", tensors)
    for rule, profile in (("batch_norm", "proposed"), ("sync_batch_norm", "pr72918"), ("sync_batch_norm", "proposed")):
        assert _error(rule, profile, tensors) == want, (rule, profile)


def test_unknown_data_format_is_refused_alike():
    tensors = {n: rep(C) for n in RULES["batch_norm"].inputs} | {"x": rep(X)}
    want = _error("batch_norm", "paddle", tensors, data_format="CHWN")
    assert _error("batch_norm", "proposed", tensors, data_format="CHWN") == want
    assert want[0] is InvalidSpecError


LN_REVERSE = {"x": rep((8, 6, 4)), "scale": rep((4,)), "bias": rep((4,)), "out": rep((8, 6, 4)),
              "mean": rep((8, 6)), "variance": rep((8, 6))}
LN_REVERSE_INVALID = {
    "out-mapping-length": ({"out": spec((8, 6, 4), (-1, -1))}, 2),
    "mean-mapping-length": ({"mean": spec((8, 6), (-1,))}, 2),
    "b-too-large": ({}, 4),
    "b-negative": ({}, -1),
    "mean-rank": ({"mean": rep((8,))}, 2),
    "out-rank": ({"out": rep((8, 6))}, 2),
    "scale-2d": ({"scale": rep((4, 1))}, 2),
    "x-no-mesh": ({"x": spec((8, 6, 4), (), mesh=None)}, 2),
}


@pytest.mark.parametrize("name", LN_REVERSE_INVALID)
def test_layer_norm_reverse_errors_agree(name):
    changed, b = LN_REVERSE_INVALID[name]
    tensors = LN_REVERSE | changed
    want = _error("layer_norm_reverse", "paddle", tensors, begin_norm_axis=b)
    assert _error("layer_norm_reverse", "proposed", tensors, begin_norm_axis=b) == want


LN_GRAD = {"x": rep((8, 6, 4)), "scale": rep((4,)), "bias": rep((4,)), "mean": rep((8, 6)),
           "variance": rep((8, 6)), "out_grad": rep((8, 6, 4))}
LN_GRAD_INVALID = {
    "b-too-large": ({}, 4),
    "b-negative": ({}, -1),
    "out_grad-rank": ({"out_grad": rep((8, 6))}, 2),
    "scale-vs-bias": ({"bias": rep((4, 1))}, 2),
    "mean-vs-variance": ({"variance": rep((8,))}, 2),
    "mean-rank": ({"mean": rep((8,)), "variance": rep((8,))}, 2),
    "mean-no-mesh": ({"mean": spec((8, 6), (), mesh=None)}, 2),
}


@pytest.mark.parametrize("name", LN_GRAD_INVALID)
def test_layer_norm_grad_errors_agree(name):
    changed, b = LN_GRAD_INVALID[name]
    tensors = LN_GRAD | changed
    want = _error("layer_norm_grad", "paddle", tensors, begin_norm_axis=b)
    assert _error("layer_norm_grad", "proposed", tensors, begin_norm_axis=b) == want


def test_layer_norm_forward_errors_agree():
    tensors = {"x": rep((8, 6, 4)), "scale": rep((4, 1)), "bias": rep((4,))}
    for b in (1, 2):
        assert _error("layer_norm", "proposed", tensors, begin_norm_axis=b) == \
            _error("layer_norm", "paddle", tensors, begin_norm_axis=b)
