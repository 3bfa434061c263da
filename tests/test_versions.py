"""Release profiles: detection of the release, and explain() on constructed native outcomes.

The outcomes built here are the shapes measured on the real releases (docs/releases/<version>.md,
each difference's evidence); the native tests at the end check the running Paddle against
its own profile.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from paddle_spmd_port import DistAttr, ProcessMesh
from paddle_spmd_port.case import Case
from paddle_spmd_port.compat.probes import compat_api, observe
from paddle_spmd_port.grid import coshard_cases, grid_for, sample
from paddle_spmd_port.ops import RULES
from paddle_spmd_port.outcome import ErrorInfo, Outcome, port_outcome
from paddle_spmd_port.releases import (
    MATCHERS,
    RELEASES,
    KnownDifference,
    detect_release,
    known_versions,
    matrix_versions,
    release_for,
    version_key,
)

from .helpers import MESH_2x3, rep, spec

OLD = "3.0.0"
NEWEST = RELEASES[-1].version
COMMITS = {"3.0.0": "6ed5dd3833c32c3b21e14b1fb1a71f5a535a0fcc", "3.1.1": "0cd8342db88f96ef57398e888b050b5077ae6e73",
           "3.3.1": "7688495538f4d6c1893f084dd238a402e8f68ab6"}


# --------------------------------------------------------------------------- detection
def test_the_table_is_ordered_unique_and_well_formed():
    keys = [version_key(v) for v in known_versions()]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert NEWEST == "3.3.1" and known_versions()[:2] == ("2.6.2", OLD)
    for p in RELEASES:
        assert len(p.commit) >= 10 and int(p.commit, 16) >= 0
        for d in p.differences:
            assert d.kind in MATCHERS
            assert d.rules and d.rules <= set(RULES), d.rules - set(RULES)
            assert d.why and d.evidence
    assert release_for(NEWEST).differences == ()  # the port's default has nothing to explain


@pytest.mark.parametrize("version", ["3.0.0", "3.1.1", "3.3.1"])
def test_known_release_is_exact_and_checks_the_commit(version):
    p = detect_release(version, COMMITS[version])
    assert (p.version, p.is_exact, p.commit_matches) == (version, True, True)
    assert not p.is_newer_than_known and not p.is_older_than_known
    assert p.detected_version == version and p.detected_commit == COMMITS[version]
    custom = detect_release(version, "0123456789abcdef")
    assert custom.version == version and not custom.commit_matches
    assert "commit differs" in custom.headline()


@pytest.mark.parametrize("version", ["3.4.0", "3.3.2", "4.0.0", "3.4.0.dev20251201", "0.0.0", "3.3.1.post1",
                                     "develop", ""])
def test_unknown_newer_version_uses_the_newest_profile_and_explains_nothing(version):
    p = detect_release(version, "f" * 40)
    assert p.version == NEWEST and p.is_newer_than_known and not p.is_exact
    assert "possible regression" in p.headline()
    # even a difference the oldest release is known for is a possible regression here
    case, port, native = _bn_static_missing()
    assert dataclasses.replace(release_for(OLD), is_newer_than_known=True).explain(case, port, native) is None
    assert p.explain(case, port, native) is None


@pytest.mark.parametrize("version", ["2.5.2", "2.6.0rc1", "2.6.2b0", "1.8"])
def test_unknown_older_version_uses_the_oldest_profile_flagged(version):
    p = detect_release(version, "")
    assert p.version == known_versions()[0] and p.is_older_than_known and not p.is_exact
    assert "older than every profile" in p.headline()
    assert p.explain(*_bn_static_missing()) is not None  # the oldest profile's differences still apply


def test_unmeasured_release_between_profiles_takes_the_nearest_older_one():
    p = detect_release("3.2.9", "")
    assert p.version == "3.2.2" and not p.is_exact and not p.is_newer_than_known
    assert "nearest older" in p.headline()


def test_version_key_orders_pre_and_post_releases():
    order = ["2.6.2", "3.0.0.dev1", "3.0.0a1", "3.0.0b2", "3.0.0rc1", "3.0.0", "3.0.0.post1", "3.0.1", "3.1.0",
             "3.10.0"]
    assert sorted(order, key=version_key) == order
    assert version_key("not a version") is None


def test_unknown_matcher_kind_is_rejected():
    with pytest.raises(ValueError, match="unknown kind"):
        KnownDifference("x", frozenset({"batch_norm"}), "no-such-kind", "why", "evidence")


# --------------------------------------------------------------------------- explain()
def _case(rule, inputs, **attrs):
    return Case(rule, MESH_2x3, tuple(inputs), tuple(attrs.items()))


def _bn_static_missing():
    case = _case("batch_norm_static", [spec([8, 6, 4, 4], [0, 1, -1, -1]), rep([6]), rep([6]), rep([6]), rep([6])])
    return case, port_outcome(case), Outcome(unreachable="this Paddle build registers no 'batch_norm' rule")


def _fallback(case: Case) -> Outcome:
    """What a release without the op's rule answers: everything replicated, None inputs empty."""
    x = case.inputs[0]
    ins = tuple(DistAttr((), frozenset(), None) if s is None else DistAttr((-1,) * len(s.shape), frozenset(), s.mesh)
                for s in case.inputs)
    outs = tuple(DistAttr((-1,) * len(a.dims_mapping), frozenset(), x.mesh) for a in port_outcome(case).result.outputs)
    return Outcome(result=dataclasses.replace(port_outcome(case).result, inputs=ins, outputs=outs))


def test_missing_registry_rule_is_a_known_absence_only_for_3_0_0():
    case, port, native = _bn_static_missing()
    why = release_for(OLD).explain(case, port, native)
    assert why is not None and why.startswith("3.0.0 lacks it (no-batch-norm-rule): ") and "batch_norm" in why
    # a rule the release lacks is never counted as compared (release-lacks: tests/test_release_262.py)
    assert release_for(OLD).classify(case, port, native)[0] == "release-lacks"
    not_found = Outcome(error=ErrorInfo("RuntimeError", "`batch_norm` Kernel's Spmd rules is not registered."))
    assert release_for(OLD).explain(case, port, not_found) is not None
    compiled = Outcome(unreachable="compiled caller unavailable: /x/paddle/include has no "
                                   "phi/infermeta/spmd_rules/batch_norm.h (Paddle < 3.1 or no headers)")
    assert release_for(OLD).explain(case, port, compiled) is not None
    for version in ("3.1.1", "3.2.2", "3.3.1"):
        assert release_for(version).explain(case, port, native) is None
    # an unrelated reason to be unreachable is not explained
    assert release_for(OLD).explain(case, port, Outcome(unreachable="pir cannot express x")) is None


@pytest.mark.parametrize("rule", ["batch_norm", "batch_norm_grad"])
def test_replicated_fallback_is_recognised_on_real_grid_cases(rule):
    explained = 0
    for case in sample(list(grid_for(rule)), 150, seed=3):
        port = port_outcome(case)
        if port.result is None or case.inputs[0] is None or case.inputs[0].mesh is None:
            continue
        native = _fallback(case)
        why = release_for(OLD).explain(case, port, native)
        if native.result == port.result:
            assert why is None  # agreeing outcomes are never "differences"
            continue
        assert why is not None and "falls back to replicating" in why, case.describe()
        assert release_for(NEWEST).explain(case, port, native) is None
        explained += 1
    assert explained > 20


def test_fallback_matcher_rejects_answers_that_are_not_the_fallback():
    case = _case("batch_norm", [spec([8, 6, 4, 4], [0, 1, -1, -1]), rep([6]), rep([6]), None, rep([6])])
    port, fb = port_outcome(case), _fallback(case)
    old = release_for(OLD)
    assert old.explain(case, port, fb) is not None
    res = fb.result
    still_split = dataclasses.replace(res, outputs=(DistAttr((-1, 1, -1, -1), frozenset(), MESH_2x3),
                                                    *res.outputs[1:]))
    assert old.explain(case, port, Outcome(result=still_split)) is None
    other_mesh = dataclasses.replace(res, outputs=tuple(dataclasses.replace(a, mesh=ProcessMesh((6,)))
                                                        for a in res.outputs))
    assert old.explain(case, port, Outcome(result=other_mesh)) is None
    partial = dataclasses.replace(res, outputs=(*res.outputs[:-1], DistAttr((-1,), frozenset({0}), MESH_2x3)))
    assert old.explain(case, port, Outcome(result=partial)) is None
    none_with_mesh = dataclasses.replace(res, inputs=(*res.inputs[:3], DistAttr((-1,), frozenset(), MESH_2x3),
                                                      res.inputs[4]))
    assert old.explain(case, port, Outcome(result=none_with_mesh)) is None
    # a rule the difference is not about is never explained by it
    ln = _case("layer_norm", [spec([8, 6, 4], [0, 1, -1]), rep([4]), rep([4])], begin_norm_axis=2)
    assert old.explain(ln, port_outcome(ln), _fallback(ln)) is None


def _bn_grad(scale_none: bool):
    c = spec([6], [-1])
    return _case("batch_norm_grad", [spec([8, 6, 4], [-1, -1, -1]), None if scale_none else c, c, c, c, c, c, c,
                                     spec([8, 6, 4], [-1, -1, -1])])


def test_abort_without_scale_is_known_for_3_0_0_only():
    crash = Outcome(crash="signal 6 (SIGABRT)")
    case = _bn_grad(scale_none=True)
    port = port_outcome(case)
    assert "aborts" in release_for(OLD).explain(case, port, crash)
    assert release_for(NEWEST).explain(case, port, crash) is None
    assert release_for(OLD).explain(case, port, Outcome(crash="signal 11 (SIGSEGV)")) is None
    with_scale = _bn_grad(scale_none=False)
    assert release_for(OLD).explain(with_scale, port_outcome(with_scale), crash) is None


def _ln_grad(x_mapping, bias_none=True, bna=2):
    x = spec([8, 6, 4], x_mapping)
    stats = spec([8, 6][:bna], x_mapping[:bna])
    return _case("layer_norm_grad", [x, rep([4]), None if bias_none else rep([4]), stats, stats, x],
                 begin_norm_axis=bna)


def _with_bias_grad_partial(port: Outcome, dims) -> Outcome:
    res = port.result
    outs = (*res.outputs[:2], dataclasses.replace(res.outputs[2], partial_dims=frozenset(dims)))
    return Outcome(result=dataclasses.replace(res, outputs=outs))


def test_partial_on_absent_grad_is_known_for_3_0_0():
    case = _ln_grad([1, 0, -1])
    port = port_outcome(case)
    assert port.result.outputs[2].mesh is None and not port.result.outputs[2].partial_dims
    native = _with_bias_grad_partial(port, {0, 1})  # what 3.0.0 answers: Partial on x_grad's mesh dims
    why = release_for(OLD).explain(case, port, native)
    assert why is not None and "Partial even when scale/bias is None" in why
    assert release_for("3.1.1").explain(case, port, native) is None
    # a different partial set, or a bias that is present, is not that difference
    assert release_for(OLD).explain(case, port, _with_bias_grad_partial(port, {0})) is None
    present = _ln_grad([1, 0, -1], bias_none=False)
    p2 = port_outcome(present)
    assert release_for(OLD).explain(present, p2, _with_bias_grad_partial(p2, {0, 1, 2})) is None
    # x_grad fully replicated: nothing to be partial over, so no partial is expected
    flat = _ln_grad([-1, -1, -1])
    pf = port_outcome(flat)
    assert release_for(OLD).explain(flat, pf, _with_bias_grad_partial(pf, {0})) is None


def test_layer_norm_grad_segfault_is_known_for_3_1_0_only_when_x_grad_is_split():
    segv = Outcome(crash="signal 11 (SIGSEGV)")
    split, flat, present = _ln_grad([1, 0, -1]), _ln_grad([-1, -1, -1]), _ln_grad([1, 0, -1], bias_none=False)
    p310 = release_for("3.1.0")
    why = p310.explain(split, port_outcome(split), segv)
    assert why is not None and why.startswith("known difference for 3.1.0: ") and "segfaults" in why
    assert p310.explain(flat, port_outcome(flat), segv) is None  # nothing would be marked Partial: no crash known
    assert p310.explain(present, port_outcome(present), segv) is None
    assert p310.explain(split, port_outcome(split), Outcome(crash="signal 6 (SIGABRT)")) is None
    for version in ("3.0.0", "3.1.1", "3.3.1"):
        assert release_for(version).explain(split, port_outcome(split), segv) is None


# What the sweep measured on the co-shard set (grid.coshard_cases): 3.1.x rules raise when they read a
# co-sharded dims_mapping; 3.0.0's registry route cannot set one.
_READS_RAISE = Outcome(error=ErrorInfo("ValueError", 'There are 2 mesh dim sharded on tensor dim 0,you should call '
                                                     '"multi_dims_mapping()"'))
_NO_MULTI = Outcome(error=ErrorInfo("AttributeError", "'paddle.base.libpaddle.TensorDistAttr' object has no "
                                                      "attribute 'multi_dims_mapping'"))


def _ln(x_mapping):
    return _case("layer_norm", [spec([8, 6, 4], x_mapping), rep([4]), rep([4])], begin_norm_axis=2)


def _first_coshard(rule):
    return next(iter(coshard_cases(rule)))


def test_coshard_read_raising_is_known_for_3_1_x_on_cases_with_a_coshard_only():
    cosharded, plain = _ln([(0, 1), -1, -1]), _ln([1, -1, -1])
    assert cosharded.inputs[0].coshard and not plain.inputs[0].coshard
    port = port_outcome(cosharded)
    for version in ("3.1.0", "3.1.1"):
        why = release_for(version).explain(cosharded, port, _READS_RAISE)
        assert why is not None and why.startswith(f"known difference for {version}: ") and "dims_mapping" in why
    for version in ("3.0.0", "3.2.0", "3.3.1"):
        assert release_for(version).explain(cosharded, port, _READS_RAISE) is None
    p311 = release_for("3.1.1")
    # near misses: the same error without a co-shard, an answer, another family, another message, another rule
    assert p311.explain(plain, port_outcome(plain), _READS_RAISE) is None
    assert p311.explain(cosharded, port, _fallback(cosharded)) is None
    assert p311.explain(cosharded, port, Outcome(error=dataclasses.replace(_READS_RAISE.error,
                                                                           family="RuntimeError"))) is None
    other = ErrorInfo("ValueError", "Tensor Axis[0] is Sharded by two different mesh dimension [1] and [0].")
    assert p311.explain(cosharded, port, Outcome(error=other)) is None
    sync = _first_coshard("sync_batch_norm")  # the replicated rule reads no mapping: 3.1.x answers like 3.3.1
    assert p311.explain(sync, port_outcome(sync), _READS_RAISE) is None


def test_no_multi_dims_mapping_is_known_for_3_0_0_registry_rules_on_cases_with_a_coshard_only():
    cosharded, plain = _ln([-1, (1, 0), -1]), _ln([-1, 1, -1])
    why = release_for(OLD).explain(cosharded, port_outcome(cosharded), _NO_MULTI)
    assert why is not None and "multi_dims_mapping" in why
    sync = _first_coshard("sync_batch_norm_grad")
    assert release_for(OLD).explain(sync, port_outcome(sync), _NO_MULTI) is not None
    assert release_for(OLD).explain(plain, port_outcome(plain), _NO_MULTI) is None
    assert release_for(OLD).explain(cosharded, port_outcome(cosharded), _READS_RAISE) is None
    compiled = _first_coshard("batch_norm")  # not a registry rule: its route is the (missing) compiled caller
    assert release_for(OLD).explain(compiled, port_outcome(compiled), _NO_MULTI) is None
    for version in ("3.1.1", "3.3.1"):
        assert release_for(version).explain(cosharded, port_outcome(cosharded), _NO_MULTI) is None


def test_coshard_only_differences_leave_the_rule_s_other_cases_alone():
    """differences_for (what tests use to skip a rule on an older release) names a co-shard-only
    difference only when asked for co-shard cases."""
    assert release_for("3.1.1").differences_for("layer_norm") == ()
    assert [d.name for d in release_for("3.1.1").differences_for("layer_norm", coshard=True)] == [
        "coshard-dims-mapping-read-raises"]
    assert [d.name for d in release_for(OLD).differences_for("sync_batch_norm", coshard=True)] == [
        "no-multi-dims-mapping"]
    assert release_for(OLD).differences_for("sync_batch_norm") == ()
    names = [d.name for d in release_for("3.1.0").differences_for("layer_norm_grad")]
    assert names == ["layer-norm-grad-segfault-without-scale"]


@pytest.mark.parametrize("rule", ["layer_norm_reverse", "batch_norm_grad"])
def test_coshard_refused_explains_grid_cases_exactly_when_an_input_is_cosharded(rule):
    cases = list(coshard_cases(rule))[::40] + [c for c in sample(list(grid_for(rule)), 60, seed=11)]
    explained = 0
    for case in cases:
        port = port_outcome(case)
        why = release_for("3.1.1").explain(case, port, _READS_RAISE)
        has_coshard = any(s is not None and s.coshard for s in case.inputs)
        assert why is None or has_coshard, case.describe()
        if has_coshard and port.result is not None:
            assert why is not None, case.describe()
            explained += 1
    assert explained > 20


def test_agreeing_outcomes_and_invalid_input_are_never_explained():
    old = release_for(OLD)
    for rule in ("batch_norm_static", "batch_norm", "batch_norm_grad", "layer_norm_grad"):
        for case in sample(list(grid_for(rule)), 40, seed=5):
            port = port_outcome(case)
            for profile in RELEASES:
                assert profile.explain(case, port, port) is None
            if port.error is not None and port.error.port_invalid:
                assert old.explain(case, port, Outcome(crash="signal 6 (SIGABRT)")) is None


def test_profile_json_is_serialisable():
    p = detect_release("3.0.0", COMMITS["3.0.0"])
    data = json.loads(json.dumps(p.to_json()))
    assert data["profile"] == "3.0.0" and data["headline"].startswith("Paddle 3.0.0 (6ed5dd3833)")
    assert {d["name"] for d in data["differences"]} >= {"no-batch-norm-rule", "batch-norm-replicated-fallback"}


# --------------------------------------------------------------------------- the running Paddle
_PROBE = """
import json, warnings; warnings.filterwarnings("ignore")
import paddle
from paddle.framework import core
names = ["batch_norm", "layer_norm", "instance_norm", "group_norm", "fused_rms_norm", "sync_batch_norm",
         "batch_norm_grad"]
print(json.dumps({"version": paddle.__version__, "commit": paddle.version.commit,
                  "registered": {n: bool(core.contains_spmd_rule(n)) for n in names}}))
"""


#: Names no measured release registers (the port reaches those rules by other routes).
NEVER_REGISTERED = {"sync_batch_norm", "batch_norm_grad"}


@pytest.mark.native
def test_installed_paddle_matches_its_profile():
    pytest.importorskip("paddle")
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    info = json.loads(out.stdout.strip().splitlines()[-1])
    profile = detect_release(info["version"], info["commit"])
    if not profile.is_exact:
        pytest.skip(f"no profile of its own: {profile.headline()}")
    assert profile.commit_matches, profile.headline()
    for name, registered in info["registered"].items():
        expected = name not in profile.registry_missing and name not in NEVER_REGISTERED
        assert registered == expected, f"{name}: registered={registered}, profile {profile.version} says {expected}"


def test_probe_differences_are_explained_per_release():
    probe = "ln/attribute-big-axis"
    for version in ("3.1.0", "3.1.1", "3.2.0", "3.2.1", "3.2.2"):
        why = release_for(version).explain_probe(probe)
        assert why is not None and why.startswith(f"known difference for {version}: ") and "int32" in why
    for version in ("3.3.0", "3.3.1"):
        assert release_for(version).explain_probe(probe) is None
    assert release_for("3.2.2").explain_probe("ln/forward") is None
    assert detect_release("3.4.0").explain_probe(probe) is None


def test_norm_probe_differences_per_release():
    """The in/rms/gn probes: x-rank wording 3.1.0-3.2.2, co-shard reads 3.1.x, 3.1.0's group_norm statistics and
    instance_norm grad only there, fused_rms_norm's str format only in 3.0.0 (which lacks instance/group_norm)."""
    wording = ("3.1.0", "3.1.1", "3.2.0", "3.2.1", "3.2.2")
    for version in known_versions():
        profile = release_for(version)
        for name in ("in/x-rank-1", "gn/x-rank-2"):
            assert (profile.explain_probe(name) is not None) == (version in wording), (version, name)
        for name in ("in/forward-coshard", "rms/forward-coshard", "gn/forward-coshard"):
            assert (profile.explain_probe(name) is not None) == (version in ("3.1.0", "3.1.1")
                                                               or (version == "3.0.0" and name.startswith("rms"))), \
                (version, name)
        for name in ("gn/forward", "in/grad"):
            assert (profile.explain_probe(name) is not None) == (version == "3.1.0"), (version, name)
        assert (profile.explain_probe("rms/reverse") is not None) == (version == "3.0.0"), version
    assert {"instance_norm", "group_norm"} <= release_for("3.0.0").registry_missing


@pytest.mark.native
def test_installed_paddle_differs_from_the_compat_layer_exactly_in_the_profiles_probes():
    """paddle_spmd_port.compat.probes on this Paddle vs the compat layer (which follows 3.3.1): the probes
    that differ are exactly the ones the release's profile names."""
    pytest.importorskip("paddle")
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120)
    info = json.loads(out.stdout.strip().splitlines()[-1])
    profile = detect_release(info["version"], info["commit"])
    if not profile.is_exact:
        pytest.skip(f"no profile of its own: {profile.headline()}")
    if "batch_norm" in profile.registry_missing:
        pytest.skip(f"Paddle {profile.version} has no batch_norm registry rule, which the probe script needs")
    probes = subprocess.run([sys.executable, "-m", "paddle_spmd_port.compat.probes", "native"],
                            capture_output=True, text=True, timeout=300, cwd=Path(__file__).parent)
    assert probes.returncode == 0, probes.stderr[-2000:]
    native = json.loads(probes.stdout)
    ours = observe(compat_api())
    differing = {name for name in ours if native.get(name) != ours[name]}
    assert differing == {name for name, _ in profile.probe_differences}


def test_matrix_versions_are_the_newest_patch_of_each_minor_line():
    lines: dict[tuple, list[str]] = {}
    for v in known_versions():
        lines.setdefault(version_key(v)[:2], []).append(v)
    assert list(matrix_versions()) == [max(vs, key=version_key) for vs in lines.values()]
    assert matrix_versions()[-1] == NEWEST and matrix_versions()[:2] == ("2.6.2", OLD)


# --------------------------------------------------------------------------- the issue-15 rules on older releases
# Shapes of what the sweep measured (docs/releases-norms.md): outcomes built from the port's answer the way each
# release was seen to differ, and near misses that must stay unexplained.
_OLD_WORDING = ("3.1.0", "3.1.1", "3.2.0", "3.2.1", "3.2.2")


def _raises(message: str, family: str = "ValueError") -> Outcome:
    return Outcome(error=ErrorInfo(family, message))


def _with_outputs(case: Case, port: Outcome, **mappings) -> Outcome:
    """The port's answer with the named outputs' dims_mappings replaced."""
    res = port.result
    outs = tuple(dataclasses.replace(a, dims_mapping=tuple(mappings[n])) if n in mappings else a
                 for n, a in zip(case.spec.result_outputs, res.outputs, strict=True))
    return Outcome(result=dataclasses.replace(res, outputs=outs))


def _group_norm(x_mapping, x_shape=(8, 6, 4, 4)):
    return _case("group_norm", [spec(list(x_shape), x_mapping), rep([6]), rep([6])], epsilon=1e-5, groups=2,
                 data_format="NCHW")


def test_x_rank_wording_is_known_from_3_1_0_to_3_2_2():
    inorm = _case("instance_norm", [spec([8], [-1]), rep([8]), rep([8])], epsilon=1e-5)
    port = port_outcome(inorm)
    assert port.error is not None and "should be greater than 1" in port.error.message
    old = _raises(port.error.message.replace("should be greater", "should greater"))
    for version in _OLD_WORDING:
        why = release_for(version).explain(inorm, port, old)
        assert why is not None and "should greater than" in why
    for version in ("3.0.0", "3.3.0", "3.3.1"):
        assert release_for(version).explain(inorm, port, old) is None
    gnorm = _group_norm([-1, -1], x_shape=(8, 6))
    gport = port_outcome(gnorm)
    assert release_for("3.2.2").explain(gnorm, gport, _raises(
        gport.error.message.replace("should be greater", "should grater"))) is not None
    p = release_for("3.2.2")
    # near misses: another family, another number, the port's own words (agreeing), a rule it is not about
    assert p.explain(inorm, port, _raises(old.error.message, "RuntimeError")) is None
    assert p.explain(inorm, port, _raises(old.error.message.replace("[1]", "[2]"))) is None
    assert p.explain(inorm, port, _raises("The ndim of x in instance_norm should be greater than 2, but got [1].")) \
        is None
    grad = _case("instance_norm_grad", [spec([8], [-1]), rep([8]), rep([8]), rep([8]), rep([8]), spec([8], [-1])],
                 epsilon=1e-5)
    gp = port_outcome(grad)
    assert gp.error is not None
    assert p.explain(grad, gp, _raises(gp.error.message.replace("should greater", "should gr8er"))) is None


def test_group_norm_statistics_1d_is_known_for_3_1_0_only():
    case = _group_norm([1, -1, -1, -1])
    port = port_outcome(case)
    assert port.result.outputs[1].dims_mapping == (1, -1)
    native = _with_outputs(case, port, mean=(1,), variance=(1,))
    why = release_for("3.1.0").explain(case, port, native)
    assert why is not None and "1-D" in why
    for version in ("3.0.0", "3.1.1", "3.3.1"):
        assert release_for(version).explain(case, port, native) is None
    p310 = release_for("3.1.0")
    assert p310.explain(case, port, _with_outputs(case, port, mean=(1,))) is None  # variance still 2-D
    assert p310.explain(case, port, _with_outputs(case, port, mean=(0,), variance=(0,))) is None  # not the port's dim
    assert p310.explain(case, port, _with_outputs(case, port, y=(-1, -1, -1, -1), mean=(1,), variance=(1,))) is None


def _group_norm_grad(mean_shape):
    x = spec([8, 6, 4, 4], [0, -1, -1, -1])
    stats = spec(list(mean_shape), [-1] * len(mean_shape))
    return _case("group_norm_grad", [x, rep([6]), rep([6]), x, stats, stats, x], epsilon=1e-5, groups=2,
                 data_format="NCHW")


def test_group_norm_grad_refusing_2d_statistics_is_known_for_3_1_0_only():
    case = _group_norm_grad([8, 2])
    port = port_outcome(case)
    assert port.result is not None
    native = _raises("The ndim of mean in group_norm should be 1, but got [2].")
    why = release_for("3.1.0").explain(case, port, native)
    assert why is not None and "1-D mean and variance" in why
    assert release_for("3.1.1").explain(case, port, native) is None
    p310 = release_for("3.1.0")
    assert p310.explain(case, port, _raises("The ndim of mean in group_norm should be 1, but got [3].")) is None
    assert p310.explain(case, port, _raises(native.error.message, "RuntimeError")) is None
    one_d = _group_norm_grad([8])  # a rank-1 mean is what 3.1.0 wants: its refusal would be something else
    assert p310.explain(one_d, port_outcome(one_d), native) is None


def _instance_norm_grad(x_shape, x_mapping):
    x = spec(list(x_shape), x_mapping)
    stats = rep([8, 6])
    return _case("instance_norm_grad", [x, rep([6]), rep([6]), stats, stats, x], epsilon=1e-5)


def test_instance_norm_grad_without_bias_is_known_for_3_1_0_only():
    message = "The ndim of y_grad in instance_norm should be equal with x, but got [0]."
    case = _instance_norm_grad([8, 6, 4, 4], [0, -1, -1, -1])
    port = port_outcome(case)
    why = release_for("3.1.0").explain(case, port, _raises(message))
    assert why is not None and "no bias" in why
    assert release_for("3.1.1").explain(case, port, _raises(message)) is None
    # saved_variance (read as y_grad) has x's rank: 3.1.0 would not raise this, so it is not explained
    flat = _case("instance_norm_grad", [spec([8, 6], [0, -1]), rep([6]), rep([6]), rep([8, 6]), rep([8, 6]),
                                        spec([8, 6], [0, -1])], epsilon=1e-5)
    assert release_for("3.1.0").explain(flat, port_outcome(flat), _raises(message)) is None
    no_bias = Outcome(unreachable="this Paddle build's InstanceNormGradInferSpmd takes no bias (x, scale, "
                                  "saved_mean, saved_variance, y_grad, epsilon: Paddle 3.1.0)")
    assert release_for("3.1.0").explain(case, port, no_bias) is not None
    assert release_for("3.1.1").explain(case, port, no_bias) is None


def test_fast_ln_grad_segfault_is_known_for_3_1_0_only_when_scale_is_none_and_x_split():
    segv = Outcome(crash="signal 11 (SIGSEGV)")

    def fast_ln_grad(scale, x_mapping):
        x = spec([8, 6, 4], x_mapping)
        return _case("fast_ln_grad", [x, scale, rep([8, 6]), rep([8, 6]), x], epsilon=1e-5)

    split, flat, present = fast_ln_grad(None, [0, -1, -1]), fast_ln_grad(None, [-1, -1, -1]), \
        fast_ln_grad(rep([4]), [0, -1, -1])
    why = release_for("3.1.0").explain(split, port_outcome(split), segv)
    assert why is not None and "FastLnGradInferSpmd segfaults" in why
    assert release_for("3.1.0").explain(flat, port_outcome(flat), segv) is None
    assert release_for("3.1.0").explain(present, port_outcome(present), segv) is None
    assert release_for("3.1.1").explain(split, port_outcome(split), segv) is None


def test_3_0_0_lacks_instance_and_group_norm_and_a_compiled_caller_for_rms_and_fast_ln():
    old = release_for(OLD)
    inorm = _case("instance_norm", [spec([8, 6, 4, 4], [0, -1, -1, -1]), rep([6]), rep([6])], epsilon=1e-5)
    port = port_outcome(inorm)
    missing = Outcome(unreachable="this Paddle build registers no 'instance_norm' rule")
    assert "no instance_norm or group_norm" in old.explain(inorm, port, missing)
    no_caller = Outcome(unreachable="compiled caller unavailable: /x/paddle/include has no "
                                    "phi/infermeta/spmd_rules/batch_norm.h (Paddle < 3.1 or no headers)")
    fast_ln = _case("fast_ln", [spec([8, 6, 4], [0, -1, -1]), rep([4]), rep([4])], epsilon=1e-5)
    why = old.explain(fast_ln, port_outcome(fast_ln), no_caller)
    assert why is not None and "reached by no route" in why
    for version in ("3.1.0", "3.3.1"):
        assert release_for(version).explain(inorm, port, missing) is None
        assert release_for(version).explain(fast_ln, port_outcome(fast_ln), no_caller) is None
    # the registry's fused_rms_norm is there in 3.0.0: a missing rms_norm registry rule is not explained
    rms = _case("rms_norm", [spec([8, 6], [0, -1]), rep([6])], epsilon=1e-5)
    assert old.explain(rms, port_outcome(rms), Outcome(unreachable="this Paddle build registers no "
                                                                   "'fused_rms_norm' rule")) is None


@pytest.mark.parametrize("rule", ["group_norm", "group_norm_grad"])
def test_group_norm_pir_replicated_fallback_is_known_for_3_0_0_only(rule):
    """3.0.0's PIR group_norm ops have no rule: they replicate everything (measured: every mismatching
    PIR case of the grid); a fallback answer that still splits or marks Partial is not explained."""
    explained = 0
    for case in sample(list(grid_for(rule)), 150, seed=3, corners=False):
        port = port_outcome(case)
        if port.result is None or case.inputs[0] is None or case.inputs[0].mesh is None:
            continue
        native = _fallback(case)
        if native.result == port.result:
            continue
        why = release_for(OLD).explain(case, port, native)
        assert why is not None and "PIR group_norm / group_norm_grad ops fall back" in why, case.describe()
        assert release_for("3.1.0").explain(case, port, native) is None
        assert release_for(NEWEST).explain(case, port, native) is None
        res = native.result
        partial = dataclasses.replace(res, outputs=(*res.outputs[:-1],
                                                    dataclasses.replace(res.outputs[-1], partial_dims=frozenset({0}))))
        assert release_for(OLD).explain(case, port, Outcome(result=partial)) is None
        explained += 1
    assert explained > 20


def test_group_norm_grad_pir_abort_is_known_for_3_0_0_only_with_scale_or_bias_none():
    stat = spec([8, 2], [-1, -1])
    x = spec([8, 6, 4, 4], [-1, -1, -1, -1])

    def grad(scale_none: bool) -> Case:
        return _case("group_norm_grad", [x, None if scale_none else rep([6]), rep([6]), x, stat, stat, x],
                     epsilon=1e-5, groups=2, data_format="NCHW")

    abort = Outcome(crash="signal 6 (SIGABRT)")
    case = grad(scale_none=True)
    assert "aborts" in release_for(OLD).explain(case, port_outcome(case), abort)
    assert release_for(NEWEST).explain(case, port_outcome(case), abort) is None
    assert release_for(OLD).explain(case, port_outcome(case), Outcome(crash="signal 11 (SIGSEGV)")) is None
    with_scale = grad(scale_none=False)
    assert release_for(OLD).explain(with_scale, port_outcome(with_scale), abort) is None
