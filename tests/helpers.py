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
