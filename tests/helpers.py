"""Small builders shared by the tests."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from paddle_spmd_port import DistTensorSpec, ProcessMesh

MESH_2x3 = ProcessMesh((2, 3))
MESH_2 = ProcessMesh((2,))


def spec(shape, dims_mapping, mesh=MESH_2x3, partial=()):
    return DistTensorSpec(tuple(shape), tuple(dims_mapping), mesh, frozenset(partial))


def rep(shape, mesh=MESH_2x3):
    return spec(shape, [-1] * len(shape), mesh)


def show(result):
    """Inputs and outputs as the short strings used in the worked tables."""
    return [str(a) for a in result.inputs], [str(a) for a in result.outputs]


def load_tool(name: str):
    """``tools/<name>.py`` as a module, imported once from its path (tools/ is not a package)."""
    import importlib.util
    import sys
    from pathlib import Path

    key = f"_tool_{name}_under_test"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, Path(__file__).resolve().parents[1] / "tools" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module  # dataclasses look their module up while the file runs
        spec.loader.exec_module(module)
    return sys.modules[key]


@functools.cache
def paddle_profile():
    """The release profile (paddle_spmd_port.releases) of the installed Paddle, or None without Paddle."""
    from paddle_spmd_port.releases import installed_release

    return installed_release()  # read from paddle/version/__init__.py, without importing paddle


def skip_if_rule_missing(rule: str) -> None:
    """Skip when the installed release's profile lists ``rule`` as missing from its registry or as
    known to differ (the profile's reason goes into the skip message)."""
    profile = paddle_profile()
    if profile is None:
        return
    if rule in profile.registry_missing:
        pytest.skip(f"Paddle {profile.detected_version} (profile {profile.version}) registers no {rule!r} SPMD rule")
    diffs = profile.differences_for(rule)
    if diffs:
        pytest.skip("; ".join(f"known difference for {profile.version}: {d.why}" for d in diffs))


@functools.cache
def compiled_unreachable() -> str | None:
    """Why the installed Paddle has no rules for the compiled caller to call (its headers lack them:
    Paddle < 3.1, so every compiled case is *unreachable*), or None when the caller can be built here
    (or cannot for a reason of this machine, which the tests must still see as a failure)."""
    from paddle_spmd_port.native import compiled

    try:
        compiled.compile_caller()
    except compiled.BuildError as exc:
        return str(exc) if exc.paddle_lacks_rules else None
    return None


def skip_if_compiled_unreachable() -> None:
    """Skip a test that needs the compiled route to answer, on a release it cannot reach."""
    why = compiled_unreachable()
    if why is not None:
        pytest.skip(f"the compiled caller has no rules to call in this Paddle: {why}")


def known_difference(case, port, native) -> str | None:
    """``"known difference for X.Y.Z: <why>"`` when the installed release's profile explains how
    ``native`` differs from ``port`` for ``case`` (None on 3.3.1, without Paddle, or when they agree)."""
    profile = paddle_profile()
    return None if profile is None else profile.explain(case, port, native)


def processes_with(token: str) -> list[int]:
    """Live, non-zombie processes whose environment carries ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if token.encode() not in (entry / "environ").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found
