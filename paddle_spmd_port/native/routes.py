"""The native routes a case can be compared through, and each rule's default ones.

Read from the families' declared specs (Paddle is not imported); used by the ``parity`` and ``infer``
commands and by the oracle's ``--profile native`` (each rule's primary route).

    registry  -- core.get_phi_spmd_rule, what Python users call (or the ``replicated`` rule an
                 op's dist API falls back to)
    compiled  -- Paddle's exported C++ rule functions called directly (reaches every cell)
    pir       -- the op built in PIR static mode; a second, independent route for the rules the
                 registry hides
"""

from __future__ import annotations

import argparse

from ..ops import ROUTES, RULES

#: Every native route, also the order backend groups run in.
BACKENDS: tuple[str, ...] = ROUTES

#: The native backends each rule is compared with by default, the primary one first (declared by
#: each family: ``ops/<family>/__init__.py``).
DEFAULT_BACKENDS: dict[str, tuple[str, ...]] = {key: spec.routes for key, spec in RULES.items()}
#: Each rule's primary native backend (a rule no route reaches has none).
DEFAULT_BACKEND: dict[str, str] = {rule: backends[0] for rule, backends in DEFAULT_BACKENDS.items() if backends}


def routes_reaching(rule: str) -> tuple[str, ...]:
    """Every native route that can compare ``rule``, in :data:`BACKENDS` order: its default routes,
    plus the compiled caller wherever Paddle exports the rule's C++ function (the family declares
    ``cpp=``; the caller then reaches it even where its default routes are others). Read from the
    declared specs: Paddle is not imported. Tested against each backend's own table
    (tests/test_bad_input_runctl.py)."""
    spec = RULES[rule]
    routes = set(spec.routes) | ({"compiled"} if spec.cpp is not None else set())
    return tuple(b for b in BACKENDS if b in routes)


def add_backend_argument(parser: argparse.ArgumentParser, help: str) -> None:
    """``--backend registry|compiled|pir``: the native route to compare with (default: per rule)."""
    parser.add_argument("--backend", choices=BACKENDS, default=None,
                        help=f"{help} (registry: core.get_phi_spmd_rule; compiled: Paddle's C++ rule functions "
                             "called directly; pir: the op built in PIR static mode)")
