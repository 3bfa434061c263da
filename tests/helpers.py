"""Small builders shared by the tests."""

from __future__ import annotations

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
