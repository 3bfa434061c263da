"""The ``mirror`` policy of rms_norm, rms_norm_reverse and rms_norm_grad held to Paddle's rules
(crash-isolated native routes) on seeded random inputs the ``strict`` policy refuses: every answer
the mirror gives equals Paddle's, and every input Paddle answers that the mirror still refuses is
declared ``undefined`` (Paddle read or wrote memory it never set there). Mutants of each of the three
raw models (ops/rms_norm/rules.py) are caught."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cache
from typing import Any

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
from paddle_spmd_port.types import DistAttr, SpmdResult

RULES = ("rms_norm", "rms_norm_reverse", "rms_norm_grad")
SEED = int(os.environ.get("MIRROR_SEED", "23"))


@cache
def _pool(rule: str) -> tuple[tuple[Case, ...], tuple[Outcome, ...]]:
    """The seeded random cases of ``rule`` the strict policy refuses as invalid, with Paddle's outcomes."""
    pytest.importorskip("paddle")
    from paddle_spmd_port.native.pool import run_native

    cases = []
    for case in random_cases(rule, 1500, SEED):
        err = port_outcome(case).error
        if err is not None and err.port_invalid:
            cases.append(case)
    outcomes, _ = run_native(cases, backend=DEFAULT_BACKEND[rule], workers=1, timeout=300)
    return tuple(cases), tuple(outcomes)


def _verdicts(rule: str) -> list[str]:
    """Per case: ``match`` / ``mismatch`` where the mirror answers, ``undefined`` where it refuses an
    input Paddle answered under a declaration saying Paddle read memory it never set, ``refused``
    where Paddle answered anything else the mirror refuses, ``other`` where Paddle did not answer."""
    out = []
    cases, natives = _pool(rule)
    for case, native in zip(cases, natives, strict=True):
        mirrored = port_outcome(case, "paddle", "mirror")
        if mirrored.result is not None:
            out.append("match" if compare(case.spec, mirrored, native).verdict == "match" else "mismatch")
        elif native.result is not None and native.varies is None:
            assert mirrored.error is not None
            decl = strictness_of(rule, mirrored.error.kind)
            out.append("undefined" if decl is not None and decl.rule == "undefined" else "refused")
        else:
            out.append("other")
    return out


@pytest.mark.native
@pytest.mark.parametrize("rule", RULES)
def test_mirror_answers_as_paddle_wherever_paddles_answer_is_defined(rule: str) -> None:
    verdicts = _verdicts(rule)
    assert verdicts.count("match") >= 20, verdicts.count("match")
    assert "mismatch" not in verdicts and "refused" not in verdicts, (
        [c.describe() for c, v in zip(_pool(rule)[0], verdicts, strict=True) if v in ("mismatch", "refused")][:5])


def _patched(monkeypatch: pytest.MonkeyPatch, rule: str, checks: tuple[str, ...],
             change: Callable[[Any, SpmdResult], SpmdResult]) -> None:
    """Every mirror of ``rule`` for ``checks`` answering ``change(bound arguments, real answer)``."""
    import inspect

    for check in checks:
        real = registry.MIRRORS[rule, check]

        def wrong(fn: Any, *args: Any, _real: Any = real, **kwargs: Any) -> SpmdResult:
            bound = inspect.signature(fn).bind(*args, **kwargs)
            return change(bound.arguments, _real(fn, *args, **kwargs))

        monkeypatch.setitem(registry.MIRRORS, (rule, check), wrong)


def _checks(rule: str) -> tuple[str, ...]:
    return tuple(check for key, check in registry.MIRRORS if key == rule)


def _on(attr: DistAttr, mapping: Any = None, mesh: Any = None) -> DistAttr:
    return DistAttr.make(tuple(attr.dims_mapping if mapping is None else mapping), attr.partial_dims,
                         attr.mesh if mesh is None else mesh)


@pytest.mark.native
def test_forward_mutants_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """rms_norm: x answered with its unknown mesh dims replicated (as a checked mapping would be);
    out answered as x is (the repeat not dropped by the merge)."""
    def x_checked(args: Any, got: SpmdResult) -> SpmdResult:
        x = got.inputs[0]
        ndim = x.mesh.ndim
        fixed = _on(x, [m if 0 <= m < ndim else -1 for m in x.dims_mapping])
        return SpmdResult.make(inputs=(fixed, *got.inputs[1:]), outputs=tuple(got.outputs))

    def out_as_x(args: Any, got: SpmdResult) -> SpmdResult:
        x = got.inputs[0]
        return SpmdResult.make(inputs=tuple(got.inputs), outputs=(x, _on(got.outputs[1], x.dims_mapping[:-1])))

    for mutant in (x_checked, out_as_x):
        _patched(monkeypatch, "rms_norm", _checks("rms_norm"), mutant)
        assert "mismatch" in _verdicts("rms_norm"), mutant.__name__
        monkeypatch.undo()


@pytest.mark.native
def test_reverse_mutants_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """rms_norm_reverse: every attr answered on x's mesh (not each tensor's own); invvar answered
    with as many entries as its own rank (not out's leading letters); out's mesh dims the mesh
    lacks dropped from the merge."""
    def on_x_mesh(args: Any, got: SpmdResult) -> SpmdResult:
        mesh = args["x"].mesh
        return SpmdResult.make(inputs=tuple(_on(a, mesh=mesh) for a in got.inputs),
                               outputs=tuple(_on(a, mesh=mesh) for a in got.outputs))

    def invvar_own_rank(args: Any, got: SpmdResult) -> SpmdResult:
        stat = got.outputs[1]
        n = len(args["invvar"].shape)
        mapping = (*stat.dims_mapping[:n], *(-1,) * (n - len(stat.dims_mapping)))
        return SpmdResult.make(inputs=tuple(got.inputs), outputs=(got.outputs[0], _on(stat, mapping)))

    def unknown_dropped(args: Any, got: SpmdResult) -> SpmdResult:
        def keep(a: DistAttr) -> DistAttr:
            return _on(a, [m if -1 <= m < a.mesh.ndim else -1 for m in a.dims_mapping])
        return SpmdResult.make(inputs=tuple(map(keep, got.inputs)), outputs=tuple(map(keep, got.outputs)))

    for mutant in (on_x_mesh, invvar_own_rank, unknown_dropped):
        _patched(monkeypatch, "rms_norm_reverse", _checks("rms_norm_reverse"), mutant)
        assert "mismatch" in _verdicts("rms_norm_reverse"), mutant.__name__
        monkeypatch.undo()


@pytest.mark.native
def test_grad_mutants_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """rms_norm_grad: every attr answered on x's mesh; invvar answered with x's leading rank (not its
    own mapping's length); a repeated mesh dim read as the first axis naming it (Paddle's placements
    keep the last)."""
    from paddle_spmd_port.ops.rms_norm import rules as rms_rules

    def on_x_mesh(args: Any, got: SpmdResult) -> SpmdResult:
        mesh = args["x"].mesh
        ins = list(got.inputs)
        ins[2], ins[3] = _on(ins[2], mesh=mesh), _on(ins[3], mesh=mesh)
        return SpmdResult.make(inputs=tuple(ins), outputs=(ins[3], got.outputs[1]))

    def invvar_x_rank(args: Any, got: SpmdResult) -> SpmdResult:
        ins = list(got.inputs)
        n = len(args["x"].shape) - 1
        ins[2] = _on(ins[2], (*ins[2].dims_mapping[:n], *(-1,) * (n - len(ins[2].dims_mapping))))
        return SpmdResult.make(inputs=tuple(ins), outputs=tuple(got.outputs))

    for mutant in (on_x_mesh, invvar_x_rank):
        _patched(monkeypatch, "rms_norm_grad", _checks("rms_norm_grad"), mutant)
        assert "mismatch" in _verdicts("rms_norm_grad"), mutant.__name__
        monkeypatch.undo()

    real = rms_rules._placements_raw

    def first_kept(name: str, spec: DistTensorSpec) -> list[int | None]:
        flipped = DistTensorSpec(spec.shape[::-1], spec.dims_mapping[::-1], spec.mesh)
        n = len(spec.shape)
        return [None if a is None else n - 1 - a for a in real(name, flipped)]

    monkeypatch.setattr(rms_rules, "_placements_raw", first_kept)
    verdicts = _verdicts("rms_norm_grad")
    assert "mismatch" in verdicts or "refused" in verdicts


def test_the_mirror_names_memory_paddle_never_set_as_undefined() -> None:
    """A grad invvar shorter than x's leading axes whose shape the alignment reads past its end, and
    a negative mesh dim but -1 in x (written before the placements' start): refused with the kind
    ``unset-memory``, whose declaration says ``undefined``."""
    mesh = ProcessMesh((2,))
    x = DistTensorSpec((8, 4, 6), (0, -1, -1), mesh)
    scale = DistTensorSpec((6,), (-1,), mesh)
    short = DistTensorSpec((8,), (-1,), mesh)
    grad = rule_function("rms_norm_grad", policy="mirror")
    for args in ((x, scale, short, DistTensorSpec((8, 4, 6), (-1, 0, -1), mesh)),
                 (DistTensorSpec((8, 4, 6), (-2, -1, -1), mesh), scale, DistTensorSpec((8, 4), (-1, -1), mesh),
                  DistTensorSpec((8, 4, 6), (-1, -1, -1), mesh))):
        with pytest.raises(InvalidSpecError, match=r"never set.*\[mirror policy: not mirrored\]") as err:
            grad(*args)
        decl = strictness_of("rms_norm_grad", err.value.kind)
        assert err.value.kind.endswith(":unset-memory") and decl is not None and decl.rule == "undefined"


def test_the_reverse_reads_its_notation_from_out_alone() -> None:
    """x of rank 0 beside an out of rank 3: answered from out's letters, x's own rank never read."""
    mesh = ProcessMesh((2, 2))
    reverse = rule_function("rms_norm_reverse", policy="mirror")
    got = reverse(DistTensorSpec((), (), mesh), DistTensorSpec((6,), (-1,), mesh),
                  DistTensorSpec((4, 8, 6), (1, 0, -1), mesh), DistTensorSpec((4, 8, 3), (-1, -1, 1), mesh))
    assert [a.dims_mapping for a in got.inputs] == [(1, 0, -1), (-1,)]
    assert [a.dims_mapping for a in got.outputs] == [(1, 0, -1), (1, 0)]  # invvar's third entry under no letter
