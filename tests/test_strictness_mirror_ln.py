"""The ``mirror`` policy of layer_norm's and fast_ln's rules held to Paddle's (crash-isolated native
routes) on seeded random inputs the ``strict`` policy refuses: every answer and every error equal to
Paddle's, and every refusal of an input Paddle answered declared ``undefined`` (Paddle's answer is
read from memory it never set); mutants of the raw model (ops/layer_norm/raw.py) are caught."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from paddle_spmd_port import DistTensorSpec
from paddle_spmd_port.case import Case
from paddle_spmd_port.compare import compare
from paddle_spmd_port.native.routes import DEFAULT_BACKEND
from paddle_spmd_port.ops.fast_ln import rules as fast_ln_rules
from paddle_spmd_port.ops.kit import raw_mapping
from paddle_spmd_port.ops.layer_norm import raw
from paddle_spmd_port.ops.registry import strictness_of
from paddle_spmd_port.outcome import Outcome, port_outcome
from paddle_spmd_port.parity.random_cases import random_cases
from paddle_spmd_port.types import DistAttr, SpmdResult

RULES = ("layer_norm", "layer_norm_reverse", "layer_norm_grad", "fast_ln", "fast_ln_grad")


def _refused(seed: int, n: int = 700) -> list[Case]:
    """The seeded random cases of RULES the strict policy refuses as invalid."""
    out = []
    for rule in RULES:
        for case in random_cases(rule, n, seed):
            err = port_outcome(case).error
            if err is not None and err.port_invalid:
                out.append(case)
    return out


@pytest.fixture(scope="module")
def sample() -> list[tuple[Case, Outcome]]:
    pytest.importorskip("paddle")
    from paddle_spmd_port.native.pool import run_native

    cases = _refused(int(os.environ.get("MIRROR_SEED", "29")))
    out = []
    for backend in dict.fromkeys(DEFAULT_BACKEND[rule] for rule in RULES):
        mine = [c for c in cases if DEFAULT_BACKEND[c.rule] == backend]
        outcomes, _ = run_native(mine, backend=backend, workers=1, timeout=600)
        out.extend(zip(mine, outcomes, strict=True))
    return out


def _disagreements(sample: list[tuple[Case, Outcome]]) -> list[str]:
    """The cases where the mirror does not do what Paddle's rule does: an answer or a Paddle error
    that differs from Paddle's outcome, or a refusal of an input Paddle answered that is not
    declared ``undefined``."""
    bad = []
    for case, native in sample:
        mirrored = port_outcome(case, "paddle", "mirror")
        if mirrored.error is not None and mirrored.error.port_invalid:
            decl = strictness_of(case.rule, mirrored.error.kind)
            if native.result is not None and (decl is None or decl.rule != "undefined"):
                bad.append(f"refused, Paddle answered: {case.describe()}: {mirrored.error.message}")
            continue
        verdict = compare(case.spec, mirrored, native).verdict
        if verdict not in ("match", "both-raise-same"):
            bad.append(f"{verdict}: {case.describe()}")
    return bad


@pytest.mark.native
def test_mirror_does_what_paddles_rule_does_on_every_refused_draw(sample: list[tuple[Case, Outcome]]) -> None:
    assert _disagreements(sample) == []
    answered = {case.rule for case, _ in sample if port_outcome(case, "paddle", "mirror").result is not None}
    assert answered == set(RULES)  # each rule's mirror answers some of the sample
    assert sum(native.result is not None for _, native in sample) > 100  # Paddle answered many of them


#: The real steps the mutants below wrap.
_real_merge, _real_reverse, _real_forward = raw_mapping.merge_raw_tensors, raw.reverse, raw.forward


def _patched_grad_replicated(t: Any) -> DistAttr:  # GetReplicatedDistAttr of the rank, not the mapping's length
    return DistAttr.make((-1,) * t.ndim, frozenset(), t.mesh)


def _last_claim_kept(pairs: Any) -> dict[str, int]:
    """A repeated mesh dim kept on the last letter claiming it: every entry merged in reverse order
    (each with its own letter; the one past the notation under a stand-in for the empty letter)."""
    flipped = []
    for owner, notation, mapping in reversed(pairs):
        if len(mapping) > len(notation) + 1:
            return _real_merge(pairs)
        letters = (notation + "\x01")[:len(mapping)]
        flipped.append((owner, letters[::-1], tuple(mapping)[::-1]))
    return _real_merge(tuple(flipped))


def _reverse_partial_cleared(*args: Any) -> SpmdResult:
    got = _real_reverse(*args)
    return SpmdResult.make(inputs=tuple(DistAttr.make(a.dims_mapping, frozenset(), a.mesh) for a in got.inputs),
                           outputs=tuple(got.outputs))


def _forward_x_merged(*args: Any, **kwargs: Any) -> SpmdResult:  # x answered as out (merged), not as filled
    got = _real_forward(*args, **kwargs)
    return SpmdResult.make(inputs=(got.outputs[0], *got.inputs[1:]), outputs=tuple(got.outputs))


def _one_more_refused(pairs: Any) -> dict[str, int]:
    for owner, notation, mapping in pairs:
        if len(mapping) > len(notation):
            raw_mapping.not_mirrored(f"{owner}: one entry more", f"invalid-spec:{owner}:length")
    return _real_merge(pairs)


#: name -> (module, attribute, replacement): each a wrong reading of Paddle's steps.
MUTANTS: dict[str, tuple[Any, str, Callable[..., Any]]] = {
    # a letter no mapping reached read as -1 instead of left out of the answer
    "missing letters padded": (raw, "read_back_raw", lambda letters, merged: tuple(
        -1 if letter == "1" else merged.get(letter, -1) for letter in letters)),
    # the grad's replicated attrs as long as the tensor's rank, not its given mapping
    "replicated of the rank": (raw, "_replicated", _patched_grad_replicated),
    # a repeated mesh dim kept on the last letter claiming it
    "last claim kept": (raw, "merge_raw_tensors", _last_claim_kept),
    # the reverse rule's attrs copied without their partial status
    "reverse partial cleared": (raw, "reverse", _reverse_partial_cleared),
    # the forward's x answered from the merge (its repeat dropped) instead of its filled copy
    "forward x merged": (raw, "forward", _forward_x_merged),
    # no conflict raised: the merge keeps the mesh dim it met first
    "no conflict": (raw_mapping, "merge_axis", lambda letter, new, known: known if known != -1 else new),
    # the entry one past the notation refused instead of merged under the empty letter
    "one entry more refused": (raw, "merge_raw_tensors", _one_more_refused),
    # fast_ln's rules normalising from the second-last axis, not the last
    "fast_ln from the second-last axis": (fast_ln_rules, "_begin", lambda x: max(len(x.shape) - 2, 0)
                                          if isinstance(x, DistTensorSpec) else 0),
}


@pytest.mark.native
@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_a_wrong_reading_of_paddles_steps_is_caught(name: str, sample: list[tuple[Case, Outcome]],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    module, attribute, replacement = MUTANTS[name]
    monkeypatch.setattr(module, attribute, replacement)
    assert _disagreements(sample), name
