"""tools/bench.py: the benchmark's own guarantees (never its numbers: no timed asserts).

Every timed loop starts cold (the port's tables emptied before it), both sides run from the same
plain data, the registry list is every rule the registry answers with a rule of its own, and bad
input ends in one line and exit 2.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from paddle_spmd_port import types
from tests.cli_checks import REPO
from tests.helpers import load_tool, skip_if_compiled_unreachable

bench = load_tool("bench")


def _run(*argv: str, timeout: float = 300.0) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, str(REPO / "tools" / "bench.py"), *argv], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=REPO, stdin=subprocess.DEVNULL)


def test_every_timed_loop_starts_with_the_port_tables_empty():
    seen: list[int] = []

    def loop() -> None:  # sees the table as the timed loop starts, then fills it as a rule call would
        seen.append(len(types._INTERNED))
        mesh = types.ProcessMesh((2, 3))
        types.DistTensorSpec((4, 6), (0, -1), mesh)
        types.DistAttr.make((0, -1), frozenset(), mesh)

    bench.best_of({"a": loop, "b": loop}, repeat=2)
    assert seen == [0] * 4


def test_a_benchmark_that_keeps_the_tables_warm_is_caught(monkeypatch):
    """Planted defect: best_of without the reset. The check above must see the filled tables."""
    monkeypatch.setattr(bench, "clear_caches", lambda: None)
    seen: list[int] = []

    def loop() -> None:
        seen.append(len(types._INTERNED))
        types.DistAttr.make((0,), frozenset(), types.ProcessMesh((2,)))

    bench.best_of({"a": loop}, repeat=2)
    assert seen[1] > 0


def test_both_sides_take_the_same_plain_data():
    cases = bench.cases_for("layer_norm", 40, seed=3)
    mesh_keys, data = bench.plain(cases)
    for key in mesh_keys:  # plain Python values only: nothing either library built
        assert type(key) is tuple and all(type(part) is tuple for part in key)
    for case, (inputs, attrs) in zip(cases, data, strict=True):
        for item in inputs:
            assert item is None or all(type(part) is tuple for part in item[:3])
            assert item is None or item[3] is None or type(item[3]) is int
        meshes = [bench.PortSide.mesh(key) for key in mesh_keys]
        built = [bench.PortSide.spec(item, meshes) for item in inputs]
        # the same values, on meshes of the same shape and ids (both sides name mesh dims by default)
        assert [None if s is None else (s.shape, s.dims_mapping, s.partial_dims, bench._mesh_key(s.mesh))
                for s in built] == [None if s is None else (s.shape, s.dims_mapping, s.partial_dims,
                                                            bench._mesh_key(s.mesh)) for s in case.inputs]
        assert attrs == tuple(case.attr_values())


def test_the_sample_leaves_out_the_cases_paddle_may_crash_on():
    from paddle_spmd_port.native.crash_prone import compiled_may_crash

    cases = bench.cases_for("instance_norm_grad", 400, seed=3)
    assert cases and not any(compiled_may_crash(c) for c in cases)


@pytest.mark.native
def test_registry_rules_are_the_registry_routes_with_a_rule_of_their_own():
    from paddle_spmd_port.native.registry import ROUTES

    own = {rule for rule, (name, _) in ROUTES.items() if name != "replicated"}
    assert set(bench.REGISTRY_RULES) == own


@pytest.mark.native
def test_a_short_run_prints_both_sides_and_their_ratio():
    skip_if_compiled_unreachable()  # batch_norm is timed against the compiled caller
    proc = _run("--rules", "layer_norm,batch_norm", "--sample", "40", "--repeat", "1")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith(f"port core: {types.CORE} ")  # which port was timed
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| layer_norm |")
            or line.startswith("| batch_norm |")]
    assert len(rows) == 3  # the tuple form's registry row, the mixed form's, the hidden rule's
    assert "## Call forms" in proc.stdout and "## Mixed form" in proc.stdout
    forms = [line for line in proc.stdout.splitlines() if line.startswith("| ") and " ns | **" in line]
    for form in ("tuple", "list", "keywords", "partial_dims=", "numpy ints", "invalid"):
        assert any(line.startswith(f"| {form}") for line in forms), form
    for row in rows:
        assert row.count("µs") >= 2 and row.count("x** |") >= 1


@pytest.mark.parametrize("argv, names", [
    (("--rules", "nope"), "--rules"),
    (("--rules", ""), "--rules"),
    (("--sample", "0"), "--sample"),
    (("--repeat", "-1"), "--repeat"),
    (("--routes", "gpu"), "--routes"),
])
def test_bad_input_is_one_line_and_exit_2(argv, names):
    proc = _run(*argv, timeout=120)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2
    assert len(lines) == 1 and names in lines[0] and "Traceback" not in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("route", ["compiled", "pir"])
def test_the_group_row_is_what_the_default_sweep_sends_to_the_route(route):
    from paddle_spmd_port.parity.cli import _plan_groups, parse_args

    label, cases = bench.sweep_group(route)
    planned = _plan_groups(parse_args([]))[route]
    assert {c.rule for c in cases} == set(planned) and f"({len(planned)} rules)" in label
    assert len(cases) == sum(len(list(bench.grid_for(rule))) for rule in planned)


def test_a_route_that_runs_nothing_is_not_measured(monkeypatch):
    """Broken input: the compiled caller unavailable, every case *not run*. The throughput would time
    nothing; the bench refuses it instead of printing a figure."""
    from paddle_spmd_port.native import compiled, pool
    from paddle_spmd_port.outcome import Outcome

    unavailable = Outcome(not_run="backend unavailable: compiled caller: no compiler")
    monkeypatch.setattr(compiled, "run_many", lambda cases: iter([unavailable for _ in cases]))
    monkeypatch.setattr(pool, "run_native", lambda cases, **_: ([unavailable] * len(cases), {}))
    with pytest.raises(bench.NotMeasured, match="not run"):
        bench.bench_throughput("compiled", 20, seed=3)
    with pytest.raises(bench.NotMeasured, match="not run"):
        bench.bench_hidden(["batch_norm"], 20, seed=3, repeat=1)


def test_require_run_takes_every_kind_of_answer():
    from paddle_spmd_port.outcome import ErrorInfo, Outcome

    bench.require_run("pir", "layer_norm", [Outcome(unreachable="x"), Outcome(crash="signal 11"),
                                            Outcome(error=ErrorInfo("ValueError", "m"))])
    with pytest.raises(bench.NotMeasured):
        bench.require_run("pir", "layer_norm", [Outcome(unreachable="x"), None])
    # a route that reached no case (the compiled caller on Paddle 3.0.0) ran nothing to time
    with pytest.raises(bench.NotMeasured, match="every one of 3 batch_norm cases is unreachable"):
        bench.require_run("compiled", "batch_norm", [Outcome(unreachable="no rules")] * 3)


@pytest.mark.native
def test_the_registry_table_runs_on_the_installed_release():
    """Registry rules only (no compiled caller): on every release, co-shards left out where Paddle
    cannot set them (3.0.0 has no multi_dims_mapping)."""
    proc = _run("--rules", "layer_norm", "--sample", "40", "--repeat", "1")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sum(line.startswith("| layer_norm |") for line in proc.stdout.splitlines()) == 2  # tuple, mixed form


@pytest.mark.native
def test_without_the_compiled_caller_the_bench_exits_3(tmp_path):
    env_cache = {"PADDLE_SPMD_PORT_CACHE": str(tmp_path), "CXX": str(tmp_path / "no-such-compiler")}
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "bench.py"), "--rules", "batch_norm", "--sample",
                           "20", "--repeat", "1"], capture_output=True, text=True, timeout=300, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO), **env_cache), stdin=subprocess.DEVNULL)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert lines[-1].startswith("bench: not measured: compiled:") and "Traceback" not in proc.stderr


# --------------------------------------------------------------------------- call forms, mixed form
def test_every_call_form_builds_the_tuple_forms_specs():
    valid, invalid = bench.form_specs(["layer_norm"], 60, seed=3)
    assert valid and invalid and all(s._problem is None for s in valid) and all(s._problem for s in invalid)
    assert {s._problem for s in invalid} >= {"length", "mesh-dim", "duplicate", "partial-shard", "partial-range"}
    assert any(s.coshard for s in valid) and any(s.partial_dims for s in valid)
    bench.same_specs(valid, invalid)  # passes: every form builds the very values
    names = list(bench.form_loops(valid, invalid))
    for form in ("tuple", "list", "keywords", "partial_dims=", "numpy ints", "invalid"):
        assert any(name.startswith(form) for name in names), form


def test_a_form_that_builds_other_specs_is_caught(monkeypatch):
    """Planted defect: the list form loses its co-shards (a form doing less work than the tuple form)."""
    valid, invalid = bench.form_specs(["layer_norm"], 60, seed=3)
    monkeypatch.setattr(bench, "_listed", lambda dm: [-1 if type(e) is tuple else e for e in dm])
    with pytest.raises(bench.NotMeasured, match="'list' built other specs"):
        bench.same_specs(valid, invalid)


def test_a_form_over_the_target_is_marked():
    rows = bench.form_rows([("tuple", 10, 100e-9), ("list", 10, 150e-9), ("keywords (lists)", 10, 201e-9)])
    assert "over 2x" not in rows[0] + rows[1] and rows[2].endswith("**2.01x** (over 2x) |")
    assert rows[1] == "| list | 10 | 150 ns | **1.50x** |"


def test_the_mixed_form_reads_lists_as_from_json_and_measures_the_grid_shares():
    cases, shares = bench.mixed_cases("layer_norm", 300, seed=3)
    mesh_keys, data = bench.as_json(*bench.plain(cases))
    assert all(type(part) is list for item in data for spec in item[0] if spec is not None for part in spec[:3])
    meshes = [bench.MixedPortSide.mesh(key) for key in mesh_keys]
    for case, (inputs, _) in zip(cases, data, strict=True):  # the same values as the grid's cases
        built = [bench.MixedPortSide.spec(item, meshes) for item in inputs]
        # the same values, on meshes of the same shape and ids (both sides name mesh dims by default)
        assert [None if s is None else (s.shape, s.dims_mapping, s.partial_dims, bench._mesh_key(s.mesh))
                for s in built] == [None if s is None else (s.shape, s.dims_mapping, s.partial_dims,
                                                            bench._mesh_key(s.mesh)) for s in case.inputs]
    grid = list(bench.grid_for("layer_norm"))
    assert shares["grid invalid"] == sum(map(bench.refused, grid)) / len(grid) > 0
    assert shares["grid coshard"] == sum(map(bench.has_coshard, grid)) / len(grid) > 0
    assert not any(bench.may_crash(c) for c in cases)


def test_a_side_that_skips_cases_is_caught():
    """Planted defect: a side that does not call its rule on co-sharded cases would time less work."""
    class Skipping(bench.MixedPortSide):
        def call(self, specs, attrs):
            if not any(s is not None and s.coshard for s in specs):
                super().call(specs, attrs)

    cases, _ = bench.mixed_cases("layer_norm", 300, seed=3)
    mesh_keys, data = bench.as_json(*bench.plain(cases))
    bench.same_work([bench.MixedPortSide("layer_norm")], mesh_keys, data)  # the honest side passes
    with pytest.raises(bench.NotMeasured, match="Skipping trip called its rule"):
        bench.same_work([Skipping("layer_norm")], mesh_keys, data)
