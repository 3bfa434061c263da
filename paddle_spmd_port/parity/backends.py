"""The native routes a case can be compared through, and each rule's default ones.

Shared by the ``parity`` and ``infer`` commands (no command module imports another).

    registry  -- core.get_phi_spmd_rule, what Python users call (sync: the ``replicated`` rule)
    compiled  -- Paddle's exported C++ rule functions called directly (reaches every cell)
    pir       -- the op built in PIR static mode; a second, independent route for the hidden rules
"""

from __future__ import annotations

import argparse

#: Every native route, also the order backend groups run in.
BACKENDS: tuple[str, ...] = ("registry", "compiled", "pir")

#: The native backends each rule is compared with by default, the primary one first.
DEFAULT_BACKENDS: dict[str, tuple[str, ...]] = {
    "batch_norm_static": ("registry",),
    "layer_norm": ("registry", "pir"),
    "layer_norm_reverse": ("registry",),
    "sync_batch_norm": ("registry",),
    "sync_batch_norm_grad": ("registry",),
    "batch_norm": ("compiled", "pir"),
    "batch_norm_grad": ("compiled", "pir"),
    "layer_norm_grad": ("compiled", "pir"),
    "instance_norm": ("registry", "compiled"),
    "instance_norm_grad": ("registry", "compiled"),
    "rms_norm": ("registry", "compiled"),
    "rms_norm_reverse": ("registry", "compiled"),
    "rms_norm_grad": ("compiled",),
    "fast_ln": ("compiled",),
    "fast_ln_grad": ("compiled",),
    "group_norm": ("registry", "compiled", "pir"),
    "group_norm_base": ("registry", "compiled"),
    "group_norm_grad": ("compiled", "pir"),
    "group_norm_grad_base": ("compiled",),
}
#: Each rule's primary native backend.
DEFAULT_BACKEND: dict[str, str] = {rule: backends[0] for rule, backends in DEFAULT_BACKENDS.items()}


def routes_reaching(rule: str) -> tuple[str, ...]:
    """Every native route that can compare ``rule``, in :data:`BACKENDS` order: its default routes,
    plus the compiled caller wherever it exports the rule (``native.compiled.RULES``; it also
    reaches rules whose default routes are others). Paddle is not imported. Tested against each
    backend's own table (tests/test_bad_input_parity.py)."""
    from ..native.compiled import RULES as COMPILED_RULES

    routes = set(DEFAULT_BACKENDS[rule]) | ({"compiled"} if rule in COMPILED_RULES else set())
    return tuple(b for b in BACKENDS if b in routes)


def add_backend_argument(parser: argparse.ArgumentParser, help: str) -> None:
    """``--backend registry|compiled|pir``: the native route to compare with (default: per rule)."""
    parser.add_argument("--backend", choices=BACKENDS, default=None,
                        help=f"{help} (registry: core.get_phi_spmd_rule; compiled: Paddle's C++ rule functions "
                             "called directly; pir: the op built in PIR static mode)")
