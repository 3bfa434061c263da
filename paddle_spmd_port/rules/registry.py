"""A registry mirroring ``paddle.framework.core.get_phi_spmd_rule``, with rule *profiles*.

Paddle registers these of our rules by name: ``batch_norm`` (the attribute-less static forward,
no infer_backward), ``layer_norm`` (forward + reverse), ``instance_norm`` (forward + the grad rule
as infer_backward) and ``fused_rms_norm`` (rms_norm's forward + reverse; a name for PaddleNLP's
custom kernel); rms_norm's grad and fast_ln are unregistered and get no name here. The names
marked ``port`` are our own, for the rules Paddle keeps unregistered::

    name                   infer_forward (rule key)   infer_backward       source
    batch_norm             batch_norm_static          raises (NotFound)    Paddle
    layer_norm             layer_norm                 layer_norm_reverse   Paddle
    batch_norm_full        batch_norm                 raises               port
    batch_norm_grad        batch_norm_grad            raises               port
    layer_norm_grad        layer_norm_grad            raises               port
    sync_batch_norm        sync_batch_norm            raises               port
    sync_batch_norm_grad   sync_batch_norm_grad       raises               port
    instance_norm          instance_norm              instance_norm_grad   Paddle
    fused_rms_norm         rms_norm                   rms_norm_reverse     Paddle
    group_norm             group_norm                 raises (NotFound)    Paddle (runs the Base rule: the
                                                                           attributes it is given are ignored)

Profiles choose the implementation behind each rule key:

    paddle     what Paddle 3.3.1 does, quirks and bugs included (the default)
    pr72918    paddle, except sync_batch_norm(_grad) as proposed upstream in PR #72918 (19683c03)
    proposed   our corrected rules (rules/proposed.py), sound on the oracle's whole grid
"""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ArgumentTypeError, InvalidSpecError, PaddleInvalidArgument, RuleNotFoundError, UnknownKeyError
from ..ops import REGISTRY_NAMES
from ..ops.batch_norm import OPTIONAL
from ..types import DistTensorSpec, SpmdResult
from . import batch_norm, fast_ln, group_norm, instance_norm, layer_norm, pr72918, proposed, rms_norm, sync_batch_norm

RuleFn = Callable[..., SpmdResult]

PADDLE_RULES: dict[str, RuleFn] = {
    "batch_norm_static": batch_norm.batch_norm_infer_spmd_static,
    "batch_norm": batch_norm.batch_norm_infer_spmd,
    "batch_norm_grad": batch_norm.batch_norm_grad_infer_spmd,
    "sync_batch_norm": sync_batch_norm.sync_batch_norm_infer_spmd,
    "sync_batch_norm_grad": sync_batch_norm.sync_batch_norm_grad_infer_spmd,
    "layer_norm": layer_norm.layer_norm_infer_spmd,
    "layer_norm_reverse": layer_norm.layer_norm_infer_spmd_reverse,
    "layer_norm_grad": layer_norm.layer_norm_grad_infer_spmd,
    "instance_norm": instance_norm.instance_norm_infer_spmd,
    "instance_norm_grad": instance_norm.instance_norm_grad_infer_spmd,
    "rms_norm": rms_norm.rms_norm_infer_spmd,
    "rms_norm_reverse": rms_norm.rms_norm_infer_spmd_reverse,
    "rms_norm_grad": rms_norm.rms_norm_grad_infer_spmd,
    "fast_ln": fast_ln.fast_ln_infer_spmd,
    "fast_ln_grad": fast_ln.fast_ln_grad_infer_spmd,
    "group_norm": group_norm.group_norm_infer_spmd,
    "group_norm_base": group_norm.group_norm_infer_spmd_base,
    "group_norm_grad": group_norm.group_norm_grad_infer_spmd,
    "group_norm_grad_base": group_norm.group_norm_grad_infer_spmd_base,
}

PROFILES: dict[str, dict[str, RuleFn]] = {
    "paddle": PADDLE_RULES,
    "pr72918": {**PADDLE_RULES, **pr72918.RULES},
    "proposed": {**PADDLE_RULES, **proposed.PROPOSED_RULES},  # proposed has every rule key
}

#: registry name -> (forward rule key, backward rule key or None, registered in Paddle), from the
#: families' declarations (``ops/<family>/__init__.py``).
NAMES: dict[str, tuple[str, str | None, bool]] = {
    name: (reg.forward, reg.backward, reg.in_paddle) for name, reg in REGISTRY_NAMES.items()}


def rule_function(rule_key: str, profile: str = "paddle") -> RuleFn:
    """The function behind a rule key (see :mod:`paddle_spmd_port.rules.signatures`) in a profile.

    Unknown key or profile: :class:`UnknownKeyError` (a RuleNotFoundError and a ValueError)."""
    _require_str(rule_key, "rule_key")
    _require_str(profile, "profile")
    if profile not in PROFILES:
        raise UnknownKeyError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    try:
        return PROFILES[profile][rule_key]
    except KeyError:
        raise UnknownKeyError(f"unknown rule key {rule_key!r}; choose one of {', '.join(PADDLE_RULES)}") from None


def _require_str(value: object, name: str) -> None:
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{name} must be a str, got {type(value).__name__} {value!r:.60}",
                                kind=f"invalid-spec:{name}:type")


#: Registry names whose Paddle objects read epsilon unchecked: left out, SIGSEGV; an int, Paddle's
#: attribute cast error (measured on 3.3.1). The port's objects for them refuse both the same way.
EPSILON_READ_UNCHECKED = frozenset({"instance_norm", "fused_rms_norm"})
_CAST_ERROR = ("Attribute cast error in InferSpmd Context, the input attr type is `i`, but the expected attribute "
               "type is `f`.")


@dataclass(frozen=True)
class SpmdRule:
    name: str
    forward: RuleFn
    backward: RuleFn | None = None
    registered_in_paddle: bool = False

    def infer_forward(self, *args: Any, **kwargs: Any) -> SpmdResult:
        self._check_epsilon(self.forward, args, kwargs)
        return self.forward(*args, **kwargs)

    def infer_backward(self, *args: Any, **kwargs: Any) -> SpmdResult:
        if self.backward is None:
            raise RuleNotFoundError(f"Current SpmdRule's backward function is not found (rule {self.name!r}).")
        self._check_epsilon(self.backward, args, kwargs)
        return self.backward(*args, **kwargs)

    def _check_epsilon(self, fn: RuleFn, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """For :data:`EPSILON_READ_UNCHECKED`: epsilon must be given (InvalidSpecError) and, once every
        tensor argument is a spec or None, not an int (Paddle's cast error, raised before its rule runs)."""
        if self.name not in EPSILON_READ_UNCHECKED:
            return
        params = list(inspect.signature(fn).parameters)
        at = params.index("epsilon")
        if len(args) <= at and "epsilon" not in kwargs:
            raise InvalidSpecError(f"epsilon is missing: Paddle's {self.name!r} registry object reads it unchecked "
                                   "(SIGSEGV); pass epsilon", kind="invalid-spec:epsilon:missing")
        eps = args[at] if len(args) > at else kwargs["epsilon"]
        given = dict(zip(params, args[:at], strict=False)) | {n: kwargs[n] for n in params[:at] if n in kwargs}
        if isinstance(eps, numbers.Integral) and not isinstance(eps, bool) and len(given) == at and all(
                isinstance(t, DistTensorSpec) or (t is None and n in OPTIONAL) for n, t in given.items()):
            raise PaddleInvalidArgument(_CAST_ERROR, kind="attr-cast:epsilon")


def contains_spmd_rule(name: str) -> bool:
    _require_str(name, "name")
    return name in NAMES


def get_spmd_rule(name: str, profile: str = "paddle") -> SpmdRule:
    """Like ``core.get_phi_spmd_rule(name)``; ``profile`` picks paddle / pr72918 / proposed."""
    _require_str(name, "name")
    try:
        fwd, bwd, registered = NAMES[name]
    except KeyError:
        known = ", ".join(NAMES)
        raise RuleNotFoundError(f"`{name}` Kernel's Spmd rules is not registered; known rules: {known}") from None
    return SpmdRule(name, rule_function(fwd, profile), rule_function(bwd, profile) if bwd else None, registered)


def rule_names() -> tuple[str, ...]:
    return tuple(NAMES)
