"""The ``mirror`` policy of batch_norm, sync_batch_norm, group_norm and instance_norm held to Paddle's
rules (crash-isolated native routes) on seeded random inputs the ``strict`` policy refuses, and a
wrong mirror shown caught (ops/kit/raw_mapping.py says what Paddle's steps do with such input)."""

from __future__ import annotations

import os

import pytest

from paddle_spmd_port import DistTensorSpec, ProcessMesh
from paddle_spmd_port.case import Case
from paddle_spmd_port.compare import compare
from paddle_spmd_port.errors import InvalidSpecError
from paddle_spmd_port.native.routes import DEFAULT_BACKEND
from paddle_spmd_port.ops import registry
from paddle_spmd_port.ops.registry import rule_function, strictness_of
from paddle_spmd_port.outcome import Outcome, port_outcome
from paddle_spmd_port.parity.random_cases import random_cases

RULES = ("batch_norm", "batch_norm_grad", "batch_norm_static", "sync_batch_norm", "sync_batch_norm_grad",
         "group_norm", "group_norm_base", "group_norm_grad", "group_norm_grad_base", "instance_norm",
         "instance_norm_grad")

#: The reasons a mirror may give for refusing an input Paddle's rule answered: that answer is read
#: from memory Paddle never set (a mapping written or read past its end, an empty data_format).
UNSET_MEMORY = ("past its end", "past the end", "corrupts its heap")


def _refused(rule: str, n: int, seed: int) -> list[Case]:
    """The seeded random cases of ``rule`` the strict policy refuses as invalid."""
    out = []
    for case in random_cases(rule, n, seed):
        err = port_outcome(case).error
        if err is not None and err.port_invalid:
            out.append(case)
    return out


def _native(cases: list[Case], backend: str) -> list[Outcome]:
    from paddle_spmd_port.native.pool import run_native

    outcomes, _ = run_native(cases, backend=backend, workers=1, timeout=300)
    return outcomes


@pytest.fixture(scope="module")
def natives() -> dict[str, tuple[list[Case], list[Outcome]]]:
    """Per rule (and ``"one-more-entry"``: :func:`_one_more_entry`'s cases), its cases and Paddle's
    outcomes, every route's cases run in one pool: a rule each would pay a worker start (Paddle's
    import) and a re-run worker's per rule; a case's outcome does not depend on the cases run beside
    it (tests/test_determinism.py)."""
    pytest.importorskip("paddle")
    seed = int(os.environ.get("MIRROR_SEED", "23"))
    groups = {rule: _refused(rule, 600, seed) for rule in RULES}
    groups["one-more-entry"] = _one_more_entry()
    by_backend: dict[str, list[tuple[str, int]]] = {}
    for name, cases in groups.items():
        backend = DEFAULT_BACKEND["group_norm_base" if name == "one-more-entry" else name]
        by_backend.setdefault(backend, []).extend((name, i) for i in range(len(cases)))
    outcomes: dict[str, list[Outcome | None]] = {name: [None] * len(cases) for name, cases in groups.items()}
    for backend, keys in by_backend.items():
        for (name, i), outcome in zip(keys, _native([groups[n][j] for n, j in keys], backend), strict=True):
            outcomes[name][i] = outcome
    return {name: (groups[name], outcomes[name]) for name in groups}


@pytest.mark.native
@pytest.mark.parametrize("rule", RULES)
def test_mirror_agrees_with_paddle_wherever_its_answer_is_deterministic(
        rule: str, natives: dict[str, tuple[list[Case], list[Outcome]]]) -> None:
    cases, outcomes = natives[rule]
    assert len(cases) > 20  # the sample holds refusals to judge
    answered = 0
    for case, native in zip(cases, outcomes, strict=True):
        mirrored = port_outcome(case, "paddle", "mirror")
        if mirrored.result is not None:
            answered += 1
            assert compare(case.spec, mirrored, native).verdict == "match", (case.describe(), mirrored, native)
        elif native.result is not None:  # Paddle answered what the mirror refuses: only from unset memory
            assert mirrored.error is not None and "not mirrored" in mirrored.error.message, case.describe()
            assert any(why in mirrored.error.message for why in UNSET_MEMORY), (case.describe(), mirrored.error)
            decl = strictness_of(rule, mirrored.error.kind)  # the declaration says so: parity counts it apart
            assert decl is not None and decl.rule == "undefined", (case.describe(), mirrored.error.kind)
    assert answered > 0


def _one_more_entry() -> list[Case]:
    """group_norm_base with x's mapping one entry longer than its rank (Paddle merges that entry
    under no letter and answers it back on x)."""
    mesh = ProcessMesh((2, 2))
    v = DistTensorSpec((6,), (-1,), mesh)
    return [Case("group_norm_base", mesh, (DistTensorSpec((4, 6, 8), m, mesh), v, v), (), case_id=f"gn-long-{i}")
            for i, m in enumerate([(0, -1, -1, 1), (1, -1, -1, 1), (-1, 0, 1, 0), (0, 1, -1, -1)])]


@pytest.mark.native
def test_a_wrong_mirror_is_caught(natives: dict[str, tuple[list[Case], list[Outcome]]]) -> None:
    """Mutant: x's extra entry dropped (the rank's entries answered alone) instead of kept on x."""
    cases, natives_of = natives["one-more-entry"]
    key = ("group_norm_base", "invalid-spec:x:length")
    assert all(compare(c.spec, port_outcome(c, "paddle", "mirror"), n).verdict == "match"
               for c, n in zip(cases, natives_of, strict=True))
    real = registry.MIRRORS[key]

    def dropped(fn, x, *rest):  # type: ignore[no-untyped-def]
        return real(fn, DistTensorSpec(x.shape, x.dims_mapping[:len(x.shape)], x.mesh, x.partial_dims), *rest)

    registry.MIRRORS[key] = dropped
    try:
        verdicts = {compare(c.spec, port_outcome(c, "paddle", "mirror"), n).verdict
                    for c, n in zip(cases, natives_of, strict=True)}
    finally:
        registry.MIRRORS[key] = real
    assert "mismatch" in verdicts


def test_the_mirror_refuses_memory_paddle_never_set_naming_why() -> None:
    mesh = ProcessMesh((2, 2))
    v = DistTensorSpec((6,), (-1,), mesh)
    short = DistTensorSpec((4, 6, 8), (0, -1), mesh)  # Paddle writes axis 2 past the copy's end
    with pytest.raises(InvalidSpecError, match=r"past its end.*\[mirror policy: not mirrored\]"):
        rule_function("group_norm_base", policy="mirror")(short, v, v)
    far = DistTensorSpec((4, 6, 8), (0, -1, -1, -1, -1), mesh)  # Paddle's merge raises IndexError
    with pytest.raises(InvalidSpecError, match=r"IndexError"):
        rule_function("group_norm_base", policy="mirror")(far, v, v)
    flat = DistTensorSpec((4, 6), (0, 1), mesh)  # a 2-D x: instance_norm writes axes 2 and 3 past the end
    with pytest.raises(InvalidSpecError, match=r"corrupts its heap.*mirror policy: not mirrored"):
        rule_function("instance_norm", policy="mirror")(flat, v, v)


def test_the_mirror_answers_for_paddles_rule_only() -> None:
    """Another profile's function keeps its strict refusal (saying why); Paddle's is answered."""
    mesh = ProcessMesh((2, 2))
    x = DistTensorSpec((4, 6, 8), (-1, -1, -1), mesh)
    v, bad = DistTensorSpec((6,), (-1,), mesh), DistTensorSpec((6,), (0, 1), mesh)
    attrs = dict(is_test=False, momentum=0.9, epsilon=1e-5, data_format="NCHW", use_global_stats=False,
                 trainable_statistics=False)
    answer = rule_function("sync_batch_norm", "paddle", "mirror")(x, v, v, bad, v, **attrs)
    assert [a.dims_mapping for a in answer.inputs] == [(-1, -1, -1), (-1,), (-1,), (-1,), (-1,)]
    with pytest.raises(InvalidSpecError, match=r"paddle profile, only.*\[mirror policy: not mirrored\]"):
        rule_function("sync_batch_norm", "pr72918", "mirror")(x, v, v, bad, v, **attrs)


@pytest.mark.native
def test_a_repeated_partial_dim_raises_paddles_error_unless_paddle_crashes_first() -> None:
    """instance_norm_grad with x's N and C on one mesh dim: Paddle lists it twice in the grads'
    partial status and raises; with scale None, or the dim outside the mesh, it crashes first."""
    pytest.importorskip("paddle")
    mesh = ProcessMesh((2, 2))
    stat = DistTensorSpec((4, 6), (-1, -1), mesh)
    cases = []
    for i, (mapping, scale) in enumerate([((1, 1, -1, -1), DistTensorSpec((6,), (-1,), mesh)),
                                          ((1, 1, -1, -1), None), ((3, 3, -1, -1), DistTensorSpec((6,), (-1,), mesh))]):
        x = DistTensorSpec((4, 6, 8, 8), mapping, mesh)
        cases.append(Case("instance_norm_grad", mesh, (x, scale, None, stat, stat, DistTensorSpec((4, 6, 8, 8),
                          (-1,) * 4, mesh)), (("epsilon", 1e-5),), case_id=f"in-grad-repeat-{i}"))
    natives = _native(cases, DEFAULT_BACKEND["instance_norm_grad"])
    verdicts = [compare(c.spec, port_outcome(c, "paddle", "mirror"), n).verdict
                for c, n in zip(cases, natives, strict=True)]
    assert verdicts == ["both-raise-same", "port-rejects-invalid", "port-rejects-invalid"], verdicts
