"""The compiled backend (Paddle's exported C++ rules called directly) against the port."""

from __future__ import annotations

import os
import shutil

import pytest

from paddle_spmd_port.compare import compare
from paddle_spmd_port.grid import grid_for, sample
from paddle_spmd_port.native import compiled
from paddle_spmd_port.native.pool import run_native
from paddle_spmd_port.outcome import port_outcome

from .helpers import known_difference, paddle_profile
from .native_cases import curated, curated_cases

pytestmark = pytest.mark.native

_PROFILE = paddle_profile()
if _PROFILE is not None and _PROFILE.cpp_rules_missing:
    pytest.skip(f"Paddle {_PROFILE.detected_version} (profile {_PROFILE.version}) lacks "
                f"{', '.join(sorted(_PROFILE.cpp_rules_missing))} and phi/infermeta/spmd_rules/batch_norm.h, "
                "so the compiled caller cannot be built", allow_module_level=True)

RULES = compiled.RULES
HAVE_CXX = shutil.which(os.environ.get("CXX") or "g++") is not None
needs_cxx = pytest.mark.skipif(not HAVE_CXX, reason="no C++ compiler (install g++ or set CXX)")


@pytest.fixture(scope="module")
def compiled_run():
    cases = [case for _, case in curated_cases()]
    for rule in RULES:
        grid = list(grid_for(rule))
        picked = sample(grid, 200, seed=5)
        # and every invalid input, once: a sample keeps the corner sets, which hold them, and an invalid
        # input given twice runs twice, each time in a forked child and again in the re-run
        ids = {c.case_id for c in picked}
        cases += picked + [c for c in grid if "-invalid-" in c.case_id and c.case_id not in ids]
    cases += sample(list(grid_for("sync_batch_norm")), 3, seed=5)
    outcomes, info = run_native(cases, backend="compiled", workers=1)
    return [(case, port_outcome(case), native) for case, native in zip(cases, outcomes, strict=True)], info


def _by_label(run, label):
    wanted = curated(label).case_id
    return next((c, p, n) for c, p, n in run[0] if c.case_id == wanted)


@needs_cxx
def test_version_read_without_importing_paddle(compiled_run):
    assert compiled_run[1]["version"] and compiled_run[1]["commit"]


@needs_cxx
@pytest.mark.parametrize("rule", RULES)
def test_no_cell_differs_and_every_case_is_reached(compiled_run, rule):
    compared = 0
    for case, port, native in compiled_run[0]:
        if case.rule != rule:
            continue
        if known_difference(case, port, native):  # an older release's explained difference (releases.py)
            compared += 1
            continue
        cmp = compare(case.spec, port, native)
        assert cmp.verdict != "mismatch", f"{case.describe()}\nport   {port}\nnative {native}\n" + \
            "\n".join(map(str, cmp.diffs))
        assert native.unreachable is None, (case.describe(), native.unreachable)
        compared += cmp.verdict in ("match", "both-raise-same")
    assert compared >= 150


@needs_cxx
@pytest.mark.parametrize("label", ["bn-ncl-layout", "ln-b0", "lng-shard-and-partial", "bn-nchw-c-split-2d",
                                   "bng-og-partial", "lng-no-scale-bias"])
def test_reaches_what_pir_cannot(compiled_run, label):
    case, port, native = _by_label(compiled_run, label)
    why = known_difference(case, port, native)
    if why:
        pytest.skip(why)
    assert compare(case.spec, port, native).verdict == "match", f"port {port}\nnative {native}"


@needs_cxx
def test_crash_costs_one_case(compiled_run):
    case, port, native = _by_label(compiled_run, "bng-no-scale-c-split")
    assert native.crash == "signal 11 (SIGSEGV)"
    after, port_after, native_after = _by_label(compiled_run, "bng-after-crash")
    assert compare(after.spec, port_after, native_after).verdict == "match"


@needs_cxx
def test_rule_errors_keep_paddles_family_and_message(compiled_run):
    for label, family in (("bn-mean-2d", "ValueError"), ("lng-conflict", "NotImplementedError")):
        case, port, native = _by_label(compiled_run, label)
        assert (native.error.family, native.error.message) == (family, port.error.message)


@needs_cxx
def test_sync_batch_norm_has_no_exported_rule(compiled_run):
    sync = [n for c, _, n in compiled_run[0] if c.rule == "sync_batch_norm"]
    assert sync and all("no C++ SPMD rule for sync_batch_norm" in n.unreachable for n in sync)


def test_without_a_compiler_every_case_is_not_run(monkeypatch, tmp_path):
    """No compiler is this machine's lack, not Paddle's: not run (never compared), not unreachable."""
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    monkeypatch.setenv("PADDLE_SPMD_PORT_CACHE", str(tmp_path))
    outcomes = list(compiled.CompiledBackend().run_many([curated("ln-b2-2d"), curated("lng-b2-2d")]))
    assert [o.status for o in outcomes] == ["not-run", "not-run"]
    assert outcomes[0].not_run.startswith("backend unavailable: compiled caller: no C++ compiler")
    assert not list(tmp_path.glob("spmd_caller-*"))


def test_without_the_callers_source_every_case_is_not_run(monkeypatch, tmp_path):
    """A wheel built without the package data: the backend is unavailable, never a native crash."""
    monkeypatch.setattr(compiled, "SOURCE", tmp_path / "missing" / "spmd_caller.cc")
    monkeypatch.setenv("PADDLE_SPMD_PORT_CACHE", str(tmp_path))
    outcomes = list(compiled.CompiledBackend().run_many([curated("ln-b2-2d")]))
    assert [o.status for o in outcomes] == ["not-run"]
    assert "source" in outcomes[0].not_run and "missing" in outcomes[0].not_run


def test_request_line_round_trip_of_a_reply():
    reply = "R 2 A 2 2 3 6 0 1 2 3 4 5 6430 6431 2 0 -1 1 1 0 A - 1 -1 0 1 V 1 A 1 4 4 0 1 2 3 7864 1 0 0"
    outcome = compiled.outcome_of(reply)
    assert str(outcome.result) == "in: [0,-1] P{1} [-1] @- | out: [0]"
    assert outcome.result.inputs[0].mesh.dim_names == ("d0", "d1")
    assert compiled.outcome_of("R 1 A - 1 -1 1 0 3 0").status == "error"  # a MAX partial is not a DistAttr


@needs_cxx
def test_the_caller_builds_in_a_process_started_without_path(monkeypatch, tmp_path):
    """A pasted repro line run by ``env -i`` (no PATH): the compiler is found through Python's default
    path, and the link it runs must be found too (native/compiled.py's _build_env); without it the
    build failed and every case of the compiled route was not run."""
    cxx = shutil.which(os.environ.get("CXX") or "g++")
    assert cxx
    monkeypatch.delenv("PATH")
    monkeypatch.setenv("CXX", cxx)  # (found by its path, as Python's default path finds /bin/g++ then)
    monkeypatch.setenv("PADDLE_SPMD_PORT_CACHE", str(tmp_path))  # (a build of its own, not the cached one)
    outcomes = list(compiled.CompiledBackend().run_many([curated("ln-b2-2d")]))
    assert [o.status for o in outcomes] == ["result"], outcomes[0]
