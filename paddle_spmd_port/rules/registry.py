"""A registry mirroring ``paddle.framework.core.get_phi_spmd_rule``.

Paddle registers two of our rules by name: ``batch_norm`` (the attribute-less static forward,
no infer_backward) and ``layer_norm`` (forward + reverse). The names marked ``port`` below are
our own, for the rules Paddle keeps unregistered.

    name                   infer_forward                     infer_backward         source
    batch_norm             batch_norm_infer_spmd_static      raises (NotFound)      Paddle
    layer_norm             layer_norm_infer_spmd             ..._reverse            Paddle
    batch_norm_full        batch_norm_infer_spmd             raises                 port
    batch_norm_grad        batch_norm_grad_infer_spmd        raises                 port
    layer_norm_grad        layer_norm_grad_infer_spmd        raises                 port
    sync_batch_norm        sync_batch_norm_infer_spmd        raises                 port
    sync_batch_norm_grad   sync_batch_norm_grad_infer_spmd   raises                 port
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import RuleNotFoundError
from ..types import SpmdResult
from . import batch_norm, layer_norm, sync_batch_norm

RuleFn = Callable[..., SpmdResult]


@dataclass(frozen=True)
class SpmdRule:
    name: str
    forward: RuleFn
    backward: RuleFn | None = None
    registered_in_paddle: bool = False

    def infer_forward(self, *args, **kwargs) -> SpmdResult:
        return self.forward(*args, **kwargs)

    def infer_backward(self, *args, **kwargs) -> SpmdResult:
        if self.backward is None:
            raise RuleNotFoundError(f"Current SpmdRule's backward function is not found (rule {self.name!r}).")
        return self.backward(*args, **kwargs)


_RULES = {
    rule.name: rule
    for rule in (
        SpmdRule("batch_norm", batch_norm.batch_norm_infer_spmd_static, registered_in_paddle=True),
        SpmdRule("layer_norm", layer_norm.layer_norm_infer_spmd, layer_norm.layer_norm_infer_spmd_reverse,
                 registered_in_paddle=True),
        SpmdRule("batch_norm_full", batch_norm.batch_norm_infer_spmd),
        SpmdRule("batch_norm_grad", batch_norm.batch_norm_grad_infer_spmd),
        SpmdRule("layer_norm_grad", layer_norm.layer_norm_grad_infer_spmd),
        SpmdRule("sync_batch_norm", sync_batch_norm.sync_batch_norm_infer_spmd),
        SpmdRule("sync_batch_norm_grad", sync_batch_norm.sync_batch_norm_grad_infer_spmd),
    )
}


def contains_spmd_rule(name: str) -> bool:
    return name in _RULES


def get_spmd_rule(name: str) -> SpmdRule:
    try:
        return _RULES[name]
    except KeyError:
        known = ", ".join(sorted(_RULES))
        raise RuleNotFoundError(f"`{name}` Kernel's Spmd rules is not registered; known rules: {known}") from None


def rule_names() -> tuple[str, ...]:
    return tuple(_RULES)
