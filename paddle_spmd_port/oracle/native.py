"""``--profile native``: the installed Paddle's own answers, judged like a rule profile's.

The answers come from the native routes the parity sweep uses (each rule's primary route,
:data:`paddle_spmd_port.native.routes.DEFAULT_BACKEND`), run through the same worker pool
(:func:`paddle_spmd_port.native.pool.run_native`: crash-isolated workers, a timeout per silent
worker, every worker group ended on a signal). What each native outcome becomes (the oracle
classes a profile that raises as ``rule-error``, and any case the op itself rejects on one device as
``op-rejects``, whatever the answer)::

    native outcome   verdict        why
    result           simulated      Paddle's answer runs on the virtual mesh like a profile's
    error            rule-error     Paddle's rule raises (kind ``Paddle raises <family>``)
    crash            rule-error     Paddle's process died on the case: no answer a user could use
                                    (kind ``Paddle crashes``)
    undecodable      rule-error     Paddle answered something that is not an answer (kind
                                    ``Paddle's answer is undecodable``)
    unreachable      rule-error     a fact about this Paddle: the route has no such rule, or its op
                                    rejects the case (kind ``Paddle has no answer on this route``)
    varies           rule-error     two runs in fresh processes answered differently: Paddle read
                                    memory it never set, and neither answer is one a user could rely
                                    on (kind ``Paddle answers from memory it never set``; both shown)
    not-run          no-answer      no answer for a reason of this run (a worker timed out or kept
                                    failing, the backend unavailable): never a verdict on Paddle;
                                    its own column, and the command exits 3 (fails closed)
    not re-checked   no-answer      an input invalid for its op answered once, its promised second
                                    run none: whether that answer is Paddle's every time is not
                                    known, so it is not judged (exit 3, as parity)

An answer the simulator cannot place at all (garbage mesh dims) is ``unrunnable``, as a
profile's would be (:meth:`~paddle_spmd_port.oracle.report.Judge.answered`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence

from ..case import Case
from ..installed import NOT_INSTALLED, paddle_version
from ..native.routes import DEFAULT_BACKEND
from ..outcome import Outcome

NATIVE = "native"
"""The profile name of the installed Paddle's own answers."""

NO_ANSWER = "no-answer"
"""The label of a case Paddle gave no answer for, for a reason of this run (see the module doc)."""


def paddle_installed() -> bool:
    """Whether a Paddle is installed (read from its files: Paddle is not imported)."""
    return paddle_version()["version"] != NOT_INSTALLED


def native_error(outcome: Outcome) -> str | None:
    """The error text the oracle records for a native outcome that is not an answer (its kind is
    the text before the first ``:``), or None for an answer (a result) and for a case not run."""
    if outcome.not_run is not None:
        return None
    if outcome.varies is not None:
        return (f"Paddle answers from memory it never set: one run {outcome.answer_text()}; another "
                f"{outcome.varies.answer_text()}")
    if outcome.status == "result":
        return None
    if outcome.crash is not None:
        return f"Paddle crashes: {outcome.crash}"
    if outcome.undecodable is not None:
        return f"Paddle's answer is undecodable: {outcome.undecodable}"
    if outcome.unreachable is not None:
        return f"Paddle has no answer on this route: {outcome.unreachable}"
    assert outcome.error is not None
    return f"Paddle raises {outcome.error}"


def collect(cases: Mapping[str, Sequence[Case]], workers: int, timeout: float, quiet: bool = False
            ) -> tuple[dict[str, list[Outcome]], dict[str, str], dict[str, str]]:
    """Every case's native outcome on its rule's primary route: (rule -> outcomes in the cases'
    order, rule -> the route, Paddle's version info). One pool run per route, over all the rules
    it is primary for (a worker start imports Paddle: seconds each). An interrupt ends every
    worker group (the pool's ``finally``) and propagates."""
    from ..native.pool import BackendUnavailable, run_native

    routes = {rule: DEFAULT_BACKEND[rule] for rule in cases}
    out: dict[str, list[Outcome]] = {}
    info: dict[str, str] = {}
    for route in dict.fromkeys(routes.values()):
        rules = [r for r in cases if routes[r] == route]
        flat = [c for r in rules for c in cases[r]]
        t0 = time.perf_counter()
        try:
            outcomes, found = run_native(flat, backend=route, workers=workers, timeout=timeout)
        except (ImportError, BackendUnavailable) as exc:  # the backend cannot start here: every case unanswered
            # (any other exception is a bug of ours: exit 4, not an unanswered case)
            why = " ".join(str(exc).split())[-300:]
            outcomes, found = [Outcome(not_run=f"{route} backend unavailable: {why}")] * len(flat), {}
        info.update(found)
        pos = 0
        for r in rules:
            out[r] = outcomes[pos:pos + len(cases[r])]
            pos += len(cases[r])
        if not quiet:
            print(f"[oracle] native {route}: {len(flat)} cases of {len(rules)} rule(s) in "
                  f"{time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
    return out, routes, info


__all__ = ["NATIVE", "NO_ANSWER", "collect", "native_error", "paddle_installed"]
