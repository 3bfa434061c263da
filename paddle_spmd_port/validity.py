"""Is a case's *input* invalid for its op? Decided from the op's signature, never by the rules.

The comparator needs this to tell two port errors apart that look the same: the port rejecting an
input that is invalid for the op (Paddle's rule does not validate it: it answers garbage, crashes
or answers something plausible -- the class *port rejects invalid*), and the port wrongly
rejecting a valid input that Paddle answers (a *mismatch*). So the checks here are written from
the op's contract, independently of ``rules/``::

    check                      invalid when
    spec                       dims_mapping length != rank, a mesh dim out of range or used
                               twice (co-shard members included), a partial dim out of range or
                               also sharding, no mesh
    meshes                     an input's mesh has another number of dims than x's
    attributes                 epsilon / momentum not a number
    the op's own               its family's ``input_problem`` (``ops/<family>/grid.py``): x's ranks,
                               the other tensors' ranks, its attributes' values
"""

from __future__ import annotations

from numbers import Real

from .case import Case
from .grid import grid_plan
from .types import DistTensorSpec


def _spec_problem(name: str, spec: DistTensorSpec) -> str | None:
    if spec.mesh is None:
        return f"{name} has no mesh"
    ndim, dm = spec.mesh.ndim, list(spec.dims_mapping)
    if len(dm) != len(spec.shape):
        return f"{name}: dims_mapping length {len(dm)} != rank {len(spec.shape)}"
    used = [m for entry in dm for m in (entry if isinstance(entry, tuple) else (entry,)) if m != -1 or
            isinstance(entry, tuple)]  # a co-shard lists mesh dims only: a -1 in it is out of range
    if any(not 0 <= m < ndim for m in used) or len(used) != len(set(used)):
        return f"{name}: mesh dims {dm} out of range or repeated"
    if any(not 0 <= p < ndim for p in spec.partial_dims) or set(used) & set(spec.partial_dims):
        return f"{name}: partial dims {sorted(spec.partial_dims)} out of range or also sharding"
    return None


def input_problem(case: Case) -> str | None:
    """Why ``case``'s input is invalid for its op, or None when it is a valid input."""
    named = case.named_inputs()
    attrs = dict(zip((n for n, _ in case.spec.attrs), case.attr_values(), strict=True))
    x = named.get("x")
    if not isinstance(x, DistTensorSpec):
        return "x is missing"
    for name, spec in named.items():
        if spec is None:
            if name not in case.spec.optional:
                return f"{name} is required"
            continue
        if not isinstance(spec, DistTensorSpec):
            return f"{name} is not a tensor spec"
        why = _spec_problem(name, spec)
        if why:
            return why
        if spec.mesh.ndim != x.mesh.ndim:  # type: ignore[union-attr]
            return f"{name} is on a mesh of {spec.mesh.ndim} dims, x on one of {x.mesh.ndim}"  # type: ignore[union-attr]
    for key in ("epsilon", "momentum"):
        if key in attrs and (isinstance(attrs[key], bool) or not isinstance(attrs[key], Real)):
            return f"{key} is not a number"
    problem: str | None = grid_plan(case.rule).input_problem(case.rule, named, attrs, len(x.shape))
    return problem
