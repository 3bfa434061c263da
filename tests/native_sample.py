"""A seeded sample of one rule's grid (its corner sets included) run through one native route and
held against the port: no mismatch, nothing uncompared (shared by the issue-15 rule tests). On an
older release a difference its profile explains (paddle_spmd_port/releases.py) counts as compared, as in the
sweep."""

from __future__ import annotations

from paddle_spmd_port.outcome import port_outcome

from .helpers import known_difference


def assert_sample_matches(rule: str, backend: str, n: int = 150, seed: int = 15) -> None:
    from paddle_spmd_port.compare import COMPARED, compare
    from paddle_spmd_port.grid import grid_for, sample
    from paddle_spmd_port.native.pool import run_native
    from paddle_spmd_port.validity import input_problem

    cases = sample(list(grid_for(rule)), n, seed=seed)
    outcomes, _info = run_native(cases, backend=backend, workers=2)
    verdicts = []
    for c, o in zip(cases, outcomes, strict=True):
        port = port_outcome(c)
        verdict = compare(c.spec, port, o, input_problem(c) is not None).verdict
        if verdict not in ("match", "both-raise-same") and known_difference(c, port, o):
            verdict = "known-difference"
        verdicts.append(verdict)
    bad = [(c.case_id, v) for c, v in zip(cases, verdicts, strict=True) if v == "mismatch" or v not in COMPARED]
    assert not bad, bad[:5]
    assert verdicts.count("match") + verdicts.count("known-difference") >= n // 2
