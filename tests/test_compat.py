"""paddle_spmd_port.compat: Paddle's static SPMD rule-test API over the port.

* parity, probe by probe, with Paddle 3.3.1 (paddle_spmd_port.compat.probes runs the same calls on both);
* the Paddle-style test file under compat-test with both backends (same result per test);
* behaviour of our own where Paddle crashes, the shim, the CLI's verdicts and the pytest plugin.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from paddle_spmd_port.compat import DistTensorSpec, ProcessMesh, TensorDistAttr, get_phi_spmd_rule
from paddle_spmd_port.compat.probes import compat_api, observe
from paddle_spmd_port.compat.swap import SHIM_MODULES, write_shim

from .helpers import paddle_profile, skip_if_rule_missing

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
PADDLE_STYLE = TESTS / "paddle_style" / "test_norm_rules_paddle_style.py"
MESH = ProcessMesh([[0, 1, 2], [3, 4, 5]])
COMPAT_RULES_USED: dict[str, set[str]] = {}
COMPAT_OBSERVED = observe(compat_api(), COMPAT_RULES_USED)


def env(shim: bool = False) -> dict[str, str]:
    out = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    out.pop("PADDLE_SPMD_COMPAT_SHIM", None)
    if shim:
        out["PADDLE_SPMD_COMPAT_SHIM"] = "1"
    return out


def compat_test(*args: str, tmp_path: Path, shim: bool = False) -> tuple[int, str, dict]:
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "paddle_spmd_port", "compat-test", *args, "--json", str(report)],
                          capture_output=True, text=True, timeout=300, env=env(shim), cwd=tmp_path)
    data = json.loads(report.read_text()) if report.exists() else {}
    return proc.returncode, proc.stdout + proc.stderr, data


def statuses(data: dict, path: Path) -> dict[str, dict[str, str]]:
    [entry] = [f for f in data["files"] if Path(f["path"]).resolve() == path.resolve()]
    return {t["id"]: t["status"] for t in entry["tests"]}


def spec(shape, dims_mapping, mesh=MESH):
    attr = TensorDistAttr()
    attr.process_mesh = mesh
    attr.dims_mapping = dims_mapping
    return DistTensorSpec(shape, attr)


# --- parity with native Paddle ----------------------------------------------------------------


@pytest.fixture(scope="module")
def native_observed() -> dict:
    pytest.importorskip("paddle")
    proc = subprocess.run([sys.executable, "-m", "paddle_spmd_port.compat.probes", "native"], capture_output=True,
                          text=True, timeout=300, env=env(), cwd=TESTS)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


@pytest.mark.native
@pytest.mark.parametrize("probe", sorted(COMPAT_OBSERVED))
def test_probe_matches_native(probe, native_observed):
    profile = paddle_profile()
    missing = sorted(COMPAT_RULES_USED.get(probe, set()) & profile.registry_missing)
    if missing:
        pytest.skip(f"Paddle {profile.detected_version} (profile {profile.version}) registers no "
                    f"{', '.join(map(repr, missing))} SPMD rule")
    why = profile.explain_probe(probe)
    if why and native_observed[probe] == {"not_run": True}:
        pytest.skip(why)
    if why and COMPAT_OBSERVED[probe] != native_observed[probe]:
        pytest.xfail(why)
    assert COMPAT_OBSERVED[probe] == native_observed[probe]


@pytest.mark.native
def test_paddle_style_file_same_result_under_both_backends(tmp_path):
    pytest.importorskip("paddle")
    skip_if_rule_missing("batch_norm")
    rc, out, data = compat_test(str(PADDLE_STYLE), "--against", "both", tmp_path=tmp_path)
    assert rc == 0, out
    assert "compat swapped in" in data["environments"]["port"]
    assert data["environments"]["native"].startswith("paddle ")
    results = statuses(data, PADDLE_STYLE)
    assert len(results) >= 30
    assert all(s == {"port": "pass", "native": "pass"} for s in results.values()), out
    assert "same result" in out and "| OK" in out


#: Paddle-style files for the registry names issue 15 added, and the rule each needs.
NORM_FILES_15 = {"test_group_norm_rule.py": "group_norm", "test_instance_norm_rule.py": "instance_norm_grad",
                 "test_fused_rms_norm_rule.py": "rms_norm"}


@pytest.mark.native
@pytest.mark.parametrize("name", sorted(NORM_FILES_15))
def test_norm_rule_files_same_result_under_both_backends(name, tmp_path):
    pytest.importorskip("paddle")
    skip_if_rule_missing(NORM_FILES_15[name])
    path = PADDLE_STYLE.parent / name
    rc, out, data = compat_test(str(path), "--against", "both", tmp_path=tmp_path)
    assert rc == 0, out
    results = statuses(data, path)
    assert len(results) >= 4
    assert all(s == {"port": "pass", "native": "pass"} for s in results.values()), out


#: Paddle-style files of what a Paddle test may do around the rules (mesh paths, call forms, unread
#: mappings), and a rule each needs. The code before them failed 10 of their 13 tests under the port.
API_FILES = {"test_mesh_paths_rule.py": "layer_norm", "test_call_forms_rule.py": "instance_norm_grad"}


@pytest.mark.native
@pytest.mark.parametrize("name", sorted(API_FILES))
def test_api_files_same_result_under_both_backends(name, tmp_path):
    pytest.importorskip("paddle")
    skip_if_rule_missing(API_FILES[name])
    path = PADDLE_STYLE.parent / name
    rc, out, data = compat_test(str(path), "--against", "both", tmp_path=tmp_path)
    assert rc == 0, out
    results = statuses(data, path)
    assert len(results) >= 3
    assert all(s == {"port": "pass", "native": "pass"} for s in results.values()), out


@pytest.mark.native
def test_compat_test_flags_a_disagreement(tmp_path):
    pytest.importorskip("paddle")
    skip_if_rule_missing("cummax")
    test_file = tmp_path / "test_other_rule.py"
    test_file.write_text(textwrap.dedent("""
        import unittest
        from paddle.framework import core

        class TestOther(unittest.TestCase):
            def test_cummax_is_registered(self):
                self.assertTrue(core.contains_spmd_rule("cummax"))
                core.get_phi_spmd_rule("cummax")
    """))
    rc, out, data = compat_test(str(test_file), tmp_path=tmp_path)
    assert rc == 1
    assert statuses(data, test_file) == {"TestOther.test_cummax_is_registered": {"port": "fail", "native": "pass"}}
    assert "differs" in out


@pytest.mark.native
def test_pytest_plugin_native_backend():
    pytest.importorskip("paddle")
    skip_if_rule_missing("batch_norm")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
                           "-p", "paddle_spmd_port.compat.pytest_plugin", "--spmd-backend=native", str(PADDLE_STYLE)],
                          capture_output=True, text=True, timeout=300, env=env(), cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert " passed" in proc.stdout and "failed" not in proc.stdout


# --- without Paddle -------------------------------------------------------------------------------


def test_compat_imports_and_runs_without_paddle():
    code = textwrap.dedent("""
        import sys
        sys.modules["paddle"] = None
        from paddle_spmd_port.compat import DistTensorSpec, ProcessMesh, TensorDistAttr, get_phi_spmd_rule
        a = TensorDistAttr(); a.process_mesh = ProcessMesh([[0, 1, 2], [3, 4, 5]]); a.dims_mapping = [1, -1, -1]
        x = DistTensorSpec([64, 32, 1024], a)
        w = DistTensorSpec(x); w.shape = [1024]; w.set_dims_mapping([-1])
        r = get_phi_spmd_rule("layer_norm").infer_forward(x, w, DistTensorSpec([0], TensorDistAttr()), 1e-5, 2)
        print([t.dims_mapping for t in r[1]], r[0][2].process_mesh)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[[1, -1, -1], [1, -1], [1, -1]] None"


def test_paddle_style_file_passes_on_the_shim(tmp_path):
    rc, out, data = compat_test(str(PADDLE_STYLE.parent), "--against", "port", "--shim", tmp_path=tmp_path)
    assert rc == 0, out
    assert "compat shim" in data["environments"]["port"]
    results = statuses(data, PADDLE_STYLE)
    assert len(results) >= 30 and all(s == {"port": "pass"} for s in results.values()), out


def test_json_into_a_directory_not_made_yet(tmp_path):
    """--json's directories on the way are made, as the check before any work allowed them (and
    parity's --junit makes them): the run's results are written, not lost to an internal error."""
    report = tmp_path / "new" / "deeper" / "r.json"
    proc = subprocess.run([sys.executable, "-m", "paddle_spmd_port", "compat-test", str(PADDLE_STYLE), "--against",
                           "port", "--shim", "--json", str(report)],
                          capture_output=True, text=True, timeout=300, env=env(shim=True), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(report.read_text())["ok"] is True


def test_compat_test_reports_failures_crashes_and_import_errors(tmp_path):
    failing = tmp_path / "test_wrong.py"
    failing.write_text(textwrap.dedent("""
        import unittest
        from paddle.distributed.auto_parallel.static.dist_attribute import DistTensorSpec, TensorDistAttr
        from paddle.distributed.fleet import auto
        from paddle.framework import core

        class TestWrong(unittest.TestCase):
            def test_expects_the_wrong_mapping(self):
                a = TensorDistAttr(); a.process_mesh = auto.ProcessMesh(mesh=[0, 1]); a.dims_mapping = [0, -1]
                x = DistTensorSpec([8, 16], a)
                w = DistTensorSpec(x); w.shape = [16]; w.set_dims_mapping([-1])
                r = core.get_phi_spmd_rule("layer_norm").infer_forward(x, w, w, 1e-5, 1)
                self.assertEqual(r[1][1].dims_mapping, [-1])

            def test_right(self):
                self.assertTrue(core.contains_spmd_rule("layer_norm"))
    """))
    crashing = tmp_path / "test_crash.py"
    crashing.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    missing = tmp_path / "test_missing_api.py"
    missing.write_text("import paddle.static\n")
    rc, out, data = compat_test(str(failing), str(crashing), str(missing), "--against", "port", "--shim",
                                tmp_path=tmp_path)
    assert rc == 1
    assert statuses(data, failing) == {"TestWrong.test_expects_the_wrong_mapping": {"port": "fail"},
                                       "TestWrong.test_right": {"port": "pass"}}
    assert statuses(data, crashing) == {"(whole file)": {"port": "crash"}}
    assert statuses(data, missing) == {"(whole file)": {"port": "import-error"}}
    assert "killed by signal 11 (SIGSEGV)" in out and "No module named 'paddle.static'" in out
    assert "test_expects_the_wrong_mapping: AssertionError: Lists differ: [0] != [-1]" in out


def test_compat_test_rejects_a_missing_path(tmp_path):
    rc, out, _ = compat_test(str(tmp_path / "nope.py"), tmp_path=tmp_path)
    assert rc == 2 and "no such test file" in out


@pytest.mark.parametrize(("native", "expected"), [
    pytest.param({"status": "unavailable", "message": "paddlepaddle is not installed", "tests": []}, 3,
                 id="native-unavailable-incomplete"),
    pytest.param({"status": "timeout", "message": "no result after 1 s", "tests": []}, 3,
                 id="native-timeout-incomplete"),
    pytest.param({"status": "ran", "message": "", "tests": [{"id": "T.test_a", "status": "fail", "message": "x"}]}, 1,
                 id="native-fails-finding"),
])
def test_compat_test_exit_code_tells_a_backend_not_run_from_a_failure(native, expected, tmp_path, monkeypatch):
    from paddle_spmd_port.compat import cli

    test_file = tmp_path / "test_a.py"
    test_file.write_text("")
    port = {"status": "ran", "message": "", "tests": [{"id": "T.test_a", "status": "pass", "message": ""}]}
    monkeypatch.setattr(cli, "run_backend", lambda path, backend, **kw: {"backend": backend,
                                                                          **(port if backend == "port" else native)})
    assert cli.main([str(test_file), "--against", "both"]) == expected
    # a failing port run stays a finding (1) whatever the other backend did
    failing = {**port, "tests": [{"id": "T.test_a", "status": "fail", "message": "x"}]}
    monkeypatch.setattr(cli, "run_backend", lambda path, backend, **kw: {"backend": backend,
                                                                          **(failing if backend == "port" else native)})
    assert cli.main([str(test_file), "--against", "both"]) == 1


def test_pytest_plugin_port_backend_on_the_shim():
    base = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider"]  # one small file: no workers
    with_plugin = subprocess.run([*base, "-p", "paddle_spmd_port.compat.pytest_plugin", "--spmd-backend=port",
                                  str(PADDLE_STYLE.parent)], capture_output=True, text=True, timeout=300,
                                 env=env(shim=True), cwd=REPO)
    assert with_plugin.returncode == 0, with_plugin.stdout[-2000:]
    assert " passed" in with_plugin.stdout and "failed" not in with_plugin.stdout
    without = subprocess.run([*base, str(PADDLE_STYLE.parent)], capture_output=True, text=True, timeout=300,
                             env=env(shim=True), cwd=REPO)
    assert "no tests ran" in without.stdout  # collected only through the plugin or compat-test


def test_shim_exposes_only_the_rule_test_surface(tmp_path):
    write_shim(tmp_path)
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import paddle
        from paddle.distributed.auto_parallel.static.dist_attribute import DistTensorSpec, TensorDistAttr
        from paddle.distributed.fleet import auto
        from paddle.framework import core
        import paddle.distributed as dist
        from paddle_spmd_port import compat
        assert core.get_phi_spmd_rule is compat.get_phi_spmd_rule and paddle.base.core is core
        assert DistTensorSpec is compat.DistTensorSpec and TensorDistAttr is compat.TensorDistAttr
        assert auto.ProcessMesh is compat.ProcessMesh and dist.ProcessMesh is compat.ProcessMesh
        try:
            core.set_device
        except AttributeError as exc:
            print("attr:", exc)
        try:
            import paddle.static
        except ImportError as exc:
            print("import:", exc)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env())
    assert proc.returncode == 0, proc.stderr
    assert "attr: paddle.base.core.set_device is not part of the paddle_spmd_port compat shim" in proc.stdout
    assert "import: No module named 'paddle.static'" in proc.stdout
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.py")) == sorted(SHIM_MODULES)


# --- where Paddle crashes, the compat API raises --------------------------------------------------


def test_too_few_arguments_raise_type_error():
    x, w = spec([8, 16], [0, -1]), spec([16], [-1])
    ln, bn, rep = get_phi_spmd_rule("layer_norm"), get_phi_spmd_rule("batch_norm"), get_phi_spmd_rule("replicated")
    with pytest.raises(TypeError, match=r"layer_norm.infer_forward\(x, scale, bias, epsilon: float, "
                                        r"begin_norm_axis: int\) got 3 tensor argument\(s\) and 1 attribute"):
        ln.infer_forward(x, w, w, 1e-5)
    with pytest.raises(TypeError, match="got 2 tensor"):
        ln.infer_forward(x, w)
    with pytest.raises(TypeError, match=r"layer_norm.infer_backward\(x, scale, bias, out, mean, variance"):
        ln.infer_backward(x, w, w, x, w, 1e-5, 1)
    with pytest.raises(TypeError, match=r"batch_norm.infer_forward\(x, mean, variance, scale, bias\) got 4"):
        bn.infer_forward(x, w, w, w)
    # with one list (or none) Paddle reads a list that is not there: it answers, or raises vector::reserve,
    # run by run, forward and reverse alike
    for method in (rep.infer_forward, rep.infer_backward):
        with pytest.raises(TypeError, match="got 1 tensor"):
            method([x, w])
        with pytest.raises(TypeError, match="got 1 tensor"):
            method([x], [])  # Paddle reads [] as an attribute, like any empty list


def test_a_list_where_one_tensor_belongs_raises_type_error():
    x, w = spec([8, 16], [0, -1]), spec([16], [-1])
    with pytest.raises(TypeError, match="x must be one DistTensorSpec, not a list"):
        get_phi_spmd_rule("layer_norm").infer_forward([x, w, w], w, w, 1e-5, 1)


def test_any_object_shaped_like_a_mesh_is_accepted():
    from types import SimpleNamespace

    foreign = SimpleNamespace(shape=[2], process_ids=[4, 5], dim_names=["dp"])
    x = spec([8, 16], [0, -1], mesh=foreign)
    w = spec([16], [-1], mesh=foreign)
    result = get_phi_spmd_rule("layer_norm").infer_forward(x, w, w, 1e-5, 1)
    assert [a.dims_mapping for a in result[1]] == [[0, -1], [0], [0]]
    assert result[1][1].process_mesh == foreign and result[1][1].process_mesh == ProcessMesh([4, 5])
    assert str(result[1][1].process_mesh) == "{shape: [2], process_ids: [4,5], dim_names: [dp]}"


def test_partial_needs_a_mesh_dim():
    attr = TensorDistAttr()
    with pytest.raises(ValueError, match="has no process_mesh"):
        attr._set_partial_dims([0])
    attr.process_mesh = MESH
    with pytest.raises(ValueError, match=r"the mesh has dims 0..1"):
        attr._set_partial_dims([2])
    attr._set_partial_dims([1])
    assert attr._partial_dims() == {1}


def test_port_checks_surface_as_value_error():
    no_mesh = DistTensorSpec([8, 16], TensorDistAttr())
    no_mesh.set_dims_mapping([0, -1])
    w = spec([16], [-1])
    with pytest.raises(ValueError, match=r"^\(InvalidArgument\) paddle_spmd_port rejects this input .*x has no "
                                         r"process mesh"):
        get_phi_spmd_rule("layer_norm").infer_forward(no_mesh, w, w, 1e-5, 1)
    with pytest.raises(ValueError, match="begin_norm_axis=3 is outside 0..2"):
        get_phi_spmd_rule("layer_norm").infer_forward(spec([8, 16], [0, -1]), w, w, 1e-5, 3)


def test_errors_keep_the_port_classes_and_paddle_tags():
    from paddle_spmd_port.errors import PaddleInvalidArgument, RuleNotFoundError, ShardingConflictError

    x, w = spec([64, 32, 1024], [-1, -1, -1]), spec([1024], [-1])
    with pytest.raises(ShardingConflictError, match=r"^\(Unimplemented\) Tensor Axis\[i\] is Sharded by two"):
        get_phi_spmd_rule("layer_norm").infer_backward(x, w, w, spec([64, 32, 1024], [1, -1, -1]),
                                                       spec([64, 32], [0, -1]), spec([64, 32], [-1, -1]), 1e-5, 2)
    with pytest.raises(PaddleInvalidArgument, match=r"^\(InvalidArgument\) The ndim of x in batch_norm"):
        get_phi_spmd_rule("batch_norm").infer_forward(spec([8], [0]), w, w, w, w)
    from paddle_spmd_port.ops.kit.compat import compat_parts

    served = sorted({r.name for _, part in compat_parts() for r in part.rules} | {"replicated"})
    assert {"batch_norm", "fused_rms_norm", "group_norm", "instance_norm", "layer_norm", "p_norm"} <= set(served)
    with pytest.raises(RuleNotFoundError, match=rf"serves only {', '.join(served)}\.\]$"):
        get_phi_spmd_rule("cummax")


# --- slots whose dims_mapping Paddle never reads ----------------------------------------------------


def _mappings(result) -> list[list[list[int]]]:
    return [[a.dims_mapping for a in side] for side in result]


MESH4 = ProcessMesh(mesh=[0, 1, 2, 3])


def test_p_norm_reverse_answers_whatever_x_maps_like_paddle():
    # Paddle's own test_p_norm_rule.py leaves x at setUp's [1, 0] on this 1-D mesh for the reverse rule;
    # Paddle 3.3.1 answers x [-1, -1], out [-1] (the old compat code refused x: mesh dim 1 outside the mesh)
    rule = get_phi_spmd_rule("p_norm")
    for dm in ([1, 0], [0], [0, 0, -1]):
        result = rule.infer_backward(spec([64, 32], dm, MESH4), spec([32], [-1], MESH4), 2.0, 0, 1e-12, False, False)
        assert _mappings(result) == [[[-1, -1]], [[-1]]], dm
        assert result[0][0].process_mesh == MESH4


@pytest.mark.parametrize(("name", "method", "tensors", "attrs", "slot", "bad"), [
    ("layer_norm", "infer_forward", [([8, 4, 16], [1, -1, -1]), ([16], [-1]), ([16], [-1])], (1e-5, 2), 1,
     [1, -1, -1]),
    ("layer_norm", "infer_forward", [([8, 4, 16], [1, -1, -1]), ([16], [-1]), ([16], [-1])], (1e-5, 2), 2, [5]),
    ("layer_norm", "infer_backward", [([8, 4, 16], [1, -1, -1]), ([16], [-1]), ([16], [-1]), ([8, 4, 16], [1, -1, -1]),
                                      ([8, 4], [1, -1]), ([8, 4], [1, -1])], (1e-5, 2), 0, [0, 0, 0]),
    ("batch_norm", "infer_forward", [([8, 16, 4, 4], [0, 1, -1, -1])] + [([16], [-1])] * 4, (), 1, [5]),
    ("batch_norm", "infer_forward", [([8, 16, 4, 4], [0, 1, -1, -1])] + [([16], [-1])] * 4, (), 4, []),
    ("instance_norm", "infer_backward", [([8, 6, 4, 4], [0, 1, -1, -1]), ([6], [-1]), ([6], [-1]), ([8, 6], [0, 1]),
                                         ([8, 6], [0, 1]), ([8, 6, 4, 4], [0, 1, -1, -1])], (1e-5,), 5, [0, 0, 0, 0]),
    ("group_norm", "infer_forward", [([8, 6, 4, 4], [0, 1, -1, -1]), ([6], [-1]), ([6], [-1])], (), 1, [-1, -1]),
    ("fused_rms_norm", "infer_backward", [([8, 4, 16], [1, -1, -1]), ([16], [-1]), ([8, 4, 16], [1, -1, -1]),
                                          ([8, 4], [1, -1])], (1e-6,), 0, [3, 0, -1]),
    ("p_norm", "infer_backward", [([4, 6, 8], [0, 1, -1]), ([4, 8], [1, 0])], (2.0, 1, 1e-12, False, False), 0,
     [0, 1, 2]),
], ids=["ln-scale-stale", "ln-bias-outside-mesh", "ln-reverse-x-twice", "bn-mean-outside-mesh", "bn-bias-empty",
        "in-grad-y-grad-twice", "gn-scale-long", "rms-reverse-x-outside-mesh", "pn-reverse-x-outside-mesh"])
def test_an_unread_mapping_answers_as_a_valid_one(name, method, tensors, attrs, slot, bad):
    """Paddle 3.3.1 answers these calls exactly as it answers the same call with the slot's valid mapping
    (measured cell by cell: the compat probes ``*unread*``); the port's own checks refuse the bad mapping, so
    the compat layer hands it a replicated one."""
    call = getattr(get_phi_spmd_rule(name), method)
    good = call(*[spec(s, dm) for s, dm in tensors], *attrs)
    odd = call(*[spec(s, bad if i == slot else dm) for i, (s, dm) in enumerate(tensors)], *attrs)
    assert _mappings(odd) == _mappings(good)


def test_a_length_paddle_checks_still_fails_and_a_mesh_less_unread_slot_answers_without_one():
    rms = get_phi_spmd_rule("fused_rms_norm")
    out, invvar = spec([8, 4, 16], [1, -1, -1]), spec([8, 4], [1, -1])
    with pytest.raises(ValueError, match=r"The Tensor \[x\]'s rank \[3\] and dims_mapping size \[1\] are not matched"):
        rms.infer_backward(spec([8, 4, 16], [0]), spec([16], [-1]), out, invvar, 1e-6)
    loose = DistTensorSpec([64, 32], TensorDistAttr())
    loose.set_dims_mapping([0, -1])
    # Paddle 3.3.1 answers x's attr without a mesh (probe pn/reverse-x-without-mesh); the old code refused x
    inputs, outputs = get_phi_spmd_rule("p_norm").infer_backward(loose, spec([64], [0], MESH4), 2.0, 1, 1e-12, False,
                                                                 False)
    assert (inputs[0].dims_mapping, inputs[0].process_mesh) == ([0, -1], None)
    assert outputs[0].process_mesh == MESH4
    # batch_norm's mean_out and saved_mean copy mean's attr: none of them has a mesh
    stat, lone = spec([16], [-1]), DistTensorSpec([16], TensorDistAttr())
    inputs, outputs = get_phi_spmd_rule("batch_norm").infer_forward(spec([8, 16, 4, 4], [0, 1, -1, -1]), lone, stat,
                                                                   stat, stat)
    assert [a.process_mesh is None for a in inputs] == [False, True, False, False, False]
    assert [a.process_mesh is None for a in outputs] == [False, True, False, True, False, False]


def test_unread_slots_are_tensor_slots():
    from paddle_spmd_port.ops.kit.compat import Method

    with pytest.raises(ValueError, match=r"unread \['y'\] are not tensor slots"):
        Method(("x",), unread=frozenset({"y"}))
    with pytest.raises(ValueError, match=r"length_read \['x'\] are not unread slots"):
        Method(("x",), length_read=frozenset({"x"}))
    with pytest.raises(ValueError, match=r"meshless_outputs name \['x'\], which are not meshless slots"):
        Method(("x",), unread=frozenset({"x"}), meshless_outputs=(("x", (0,)),))


# --- TensorDistAttr's bookkeeping fields (Paddle 3.3.1's answers; the attr/* probes compare them) ------------


def test_bookkeeping_fields_read_set_print_and_compare_as_in_paddle():
    a = TensorDistAttr()
    assert (a.batch_dim, a.chunk_id, a.dynamic_dims, a.annotated, a.verify()) == (0, 0, [], {}, True)
    a.process_mesh = MESH
    a.dims_mapping = [0, -1]
    assert a.dynamic_dims == [False, False] and a.verify() is False  # no tensor: only a 0-D attr verifies
    a.batch_dim, a.chunk_id, a.dynamic_dims = 1, 2, [1, 0]
    a.mark_annotated("process_mesh")
    a.mark_annotated("partial")  # not an annotatable field: ignored
    assert a.annotated == {"process_mesh": True} and a.is_annotated("process_mesh") and not a.is_annotated("x")
    assert "batch_dim: 1, chunk_id: 2, skip_check_mesh: 0, dynamic_dims: [1,0], annotated: [process_mesh: 1]" in str(a)
    b = a.copy()
    b.clear_annotated()
    assert b == a and b.annotated == {} and a.annotated  # annotated is not compared; the copy is its own
    b.batch_dim = 0
    assert b != a
    a._set_split_factor(0, 2)
    assert str(a).endswith("split_factor: mesh dim: 0, split factor: 2.}")
    with pytest.raises(ValueError, match="only support to rearrange at one mesh dim"):
        a._set_split_factor(1, 3)
    a._set_partial_dims([1])
    a.reset()
    assert (a.dims_mapping, a.process_mesh, a._partial_dims(), a.batch_dim, a.annotated) == ([-1, -1], None, {1}, 1, {})
    with pytest.raises(TypeError, match="batch_dim"):
        a.batch_dim = 1.5


@pytest.mark.parametrize("value", [{0, -1}, (i for i in [0, -1]), {0: 1}, "0"], ids=["set", "generator", "dict", "str"])
def test_list_arguments_take_sequences_only(value):
    # Paddle's binding takes a list, tuple, range or numpy array for a list[int], nothing else
    a = TensorDistAttr()
    a.process_mesh = MESH
    with pytest.raises(TypeError, match="incompatible function arguments"):
        a.dims_mapping = value
    with pytest.raises(TypeError, match="incompatible function arguments"):
        a._set_partial_dims(value)
    with pytest.raises(TypeError, match="incompatible"):
        DistTensorSpec(value, a)
    a.dims_mapping = range(-1, 1)
    assert a.dims_mapping == [-1, 0]


def test_copies_are_independent_and_sub_meshes_are_paddles():
    import copy

    a = spec([4, 6], [0, -1])._attr  # the attr a spec holds
    twin = copy.copy(a)
    twin._set_partial_dims([1])  # the old copy.copy shared the partial set: a turned partial too
    assert a._partial_dims() == set() and twin._partial_dims() == {1} and copy.deepcopy(twin) == twin
    named = ProcessMesh([[0, 1, 2], [3, 4, 5]], dim_names=["x", "y"])
    # Paddle 3.3.1's answers (probe mesh/sub-meshes)
    assert str(named.get_mesh_with_dim("y")) == "shape [3, 2], process_ids [0, 3, 1, 4, 2, 5], dim_names ['y', 'x']"
    assert str(named.get_mesh_with_dim("y", 2)) == "shape [2], process_ids [2, 5], dim_names ['x']"
    assert str(named[:, 1]) == "shape [2], process_ids [1, 4], dim_names ['x']"
    assert str(named[1, 2]) == "shape [1], process_ids [5], dim_names ['d0']"
    with pytest.raises(AssertionError, match="z is not a valid dim name"):
        named.get_mesh_with_dim("z")


def test_answers_keep_the_bookkeeping_of_the_input_they_are_built_from():
    # Paddle 3.3.1 (probes */answers-keep-source-fields): batch_dim from the source input; the layer_norm
    # reverse rule copies each attr whole. The old code answered every field at its default.
    def tagged(shape, dm, batch_dim):
        attr = TensorDistAttr()
        attr.process_mesh = MESH
        attr.dims_mapping = dm
        attr.batch_dim, attr.chunk_id = batch_dim, batch_dim + 10
        attr.mark_annotated("process_mesh")
        return DistTensorSpec(shape, attr)

    x, w, b = tagged([8, 4, 16], [1, -1, -1], 1), tagged([16], [-1], 2), tagged([16], [-1], 3)
    inputs, outputs = get_phi_spmd_rule("layer_norm").infer_forward(x, w, b, 1e-5, 2)
    assert [a.batch_dim for a in inputs + outputs] == [1, 2, 3, 1, 1, 1]
    assert {a.chunk_id for a in inputs + outputs} == {0} and not any(a.annotated for a in outputs)
    out, mean, var = tagged([8, 4, 16], [1, -1, -1], 4), tagged([8, 4], [1, -1], 5), tagged([8, 4], [1, -1], 6)
    inputs, outputs = get_phi_spmd_rule("layer_norm").infer_backward(x, w, b, out, mean, var, 1e-5, 2)
    assert [(a.batch_dim, a.chunk_id, a.annotated) for a in outputs] == [(4, 14, {"process_mesh": True}),
                                                                        (5, 15, {"process_mesh": True}),
                                                                        (6, 16, {"process_mesh": True})]
