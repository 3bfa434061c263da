"""The registry's generic ``replicated`` rule (Paddle's ``ReplicatedInferSpmd`` / ``...Reverse``),
which the dist API of ops without a rule of their own falls back to (a family's ``ops/<family>/compat.py``
says when its op is one).

Called as ``rule.infer_forward([inputs...], [outputs...])``; every tensor becomes fully
replicated, keeping its rank (taken from the *shape*, not the dims_mapping), and every partial
status is cleared. Where each answer's mesh comes from:

    call            inputs' answers          outputs' answers
    infer_forward   each input's own mesh    the FIRST input's mesh (whatever the output's own)
    infer_backward  each input's own mesh    each output's own mesh

Worked table, mesh A = 2x3, mesh B = [0,1]::

    call      inputs                              outputs          -> inputs                | outputs
    forward   x[8,16,4] [0,1,-1]@A, y[16] P{1}@A  o[3,3,3,3]@A     -> [-1,-1,-1]@A [-1]@A   | [-1,-1,-1,-1]@A
    forward   none-stand-in [0], x@A              o@A              -> [-1]@-  [-1,-1,-1]@A  | [-1,-1,-1,-1]@-
    backward  x@A, y@A                            o@A, z[4,4]@B    -> [-1,-1,-1]@A [-1]@A   | [-1,-1,-1,-1]@A [-1,-1]@B

The dims_mappings are never read, so nothing is validated.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..types import DistAttr, DistTensorSpec, SpmdResult


def _replicated(spec: DistTensorSpec, mesh_from: DistTensorSpec) -> DistAttr:
    return DistAttr((-1,) * spec.ndim, frozenset(), mesh_from.mesh)


def replicated_infer_spmd(inputs: Sequence[DistTensorSpec], outputs: Sequence[DistTensorSpec]) -> SpmdResult:
    """Forward: every tensor replicated; outputs take the first input's mesh."""
    if not inputs:
        raise TypeError("replicated.infer_forward needs at least one input (Paddle reads inputs[0] for the "
                        "outputs' mesh and crashes without one)")
    return SpmdResult(tuple(_replicated(t, t) for t in inputs), tuple(_replicated(t, inputs[0]) for t in outputs))


def replicated_infer_spmd_reverse(inputs: Sequence[DistTensorSpec],
                                  outputs: Sequence[DistTensorSpec]) -> SpmdResult:
    """Backward: every tensor replicated on its own mesh."""
    return SpmdResult(tuple(_replicated(t, t) for t in inputs), tuple(_replicated(t, t) for t in outputs))
