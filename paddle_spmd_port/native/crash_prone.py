"""Which cases each native route runs crash-isolated, without importing Paddle.

Each backend runs the cases its predicate names in forked children (:mod:`._fork`: consecutive
ones sharing a child; the C++ caller: a child each, forked by its fork server). :mod:`.pool` reads
:data:`MAY_CRASH` to put them next to each other within every worker's slice (a fork per run of
them instead of one per scattered case). A predicate only picks how a case runs, never its outcome.
"""

from __future__ import annotations

from collections.abc import Callable

from ..case import Case, PerAttrs
from ..types import mesh_dims_of


def _on_meshes_of_other_ndim(case: Case) -> bool:
    """An input on a mesh of another number of dims than x's: the rules then name mesh dims an
    attr's own mesh lacks, and some of those cases segfault (every route)."""
    x = case.inputs[0]
    return x is not None and x.mesh is not None and any(
        s is not None and s.mesh is not None and s.mesh.ndim != x.mesh.ndim for s in case.inputs)


def _grad_partial_without_mesh(case: Case) -> bool:
    """batch_norm_grad with scale or bias None while x is split anywhere, group_norm_grad with
    scale or bias None (or meshless) while x's axis 0 is split: the rule marks Partial on an attr
    without a mesh, and Paddle 3.3.1 segfaults (every route)."""
    x = case.inputs[0]
    if x is None:
        return False
    if case.rule == "batch_norm_grad":
        return (case.inputs[1] is None or case.inputs[2] is None) and any(m != -1 for m in x.dims_mapping)
    if case.spec.op == "group_norm" and case.spec.direction == "grad" and x.dims_mapping[:1] != (-1,):
        return any(t is None or t.mesh is None for t in case.inputs[1:3])
    return False


def _attrs(case: Case) -> dict[str, object]:
    """The case's attributes by name, the signature's defaults filled in."""
    return dict(zip((n for n, _ in case.spec.attrs), case.attr_values(), strict=True))


def _short_format(fmt: object) -> bool:
    return not isinstance(fmt, str) or len(fmt) < 2


def _short_data_format(case: Case) -> bool:
    """A data_format too short for the rules' ``data_format[1]`` read."""
    return _short_format(_attrs(case).get("data_format", "NCHW"))


def _attr_facts_of(case: Case) -> tuple[bool, object]:
    """What the compiled predicate reads of the attributes: a short data_format, begin_norm_axis
    (None without one)."""
    named = _attrs(case)
    return _short_format(named.get("data_format", "NCHW")), named.get("begin_norm_axis")


_attr_facts = PerAttrs(_attr_facts_of)  # once per rule and attrs tuple


def compiled_may_crash(case: Case) -> bool:
    """Inputs Paddle's rules are known to crash on, run in a forked child of the C++ caller's fork
    server (a fork costs ~1 ms of CPU, a program restart ~50 ms); the registry backend isolates the
    same cases. Besides
    the shared clauses above (on the grid 28 of 352 other-mesh cases segfault): x without a mesh,
    a dims_mapping whose length is not the rank or that names a mesh dim its mesh lacks
    (instance_norm_grad segfaults on it), begin_norm_axis out of range, rms_norm_grad with an
    invvar of another rank (the alignment writes past its dims_mapping), instance_norm with a 2-D
    or 3-D x (heap corruption) and its grad with scale None or meshless while N or C is split."""
    inputs = case.inputs
    x = inputs[0]
    if x is None or x.mesh is None:
        return True
    x_ndim = len(x.mesh.shape)
    for s in inputs:  # one pass over the inputs: the mesh-ndim, length and mesh-dim clauses
        if s is None:
            continue
        mesh = s.mesh
        if mesh is not None:
            n = len(mesh.shape)
            if n != x_ndim:
                return True
            if s.valid_on_mesh:  # checked at construction: one entry per axis, each -1 or a dim < n
                continue
            if any(m >= n for e in s.dims_mapping for m in mesh_dims_of(e)):
                return True
        if len(s.dims_mapping) != len(s.shape):
            return True
    short_format, begin_norm_axis = _attr_facts(case)
    if short_format or _grad_partial_without_mesh(case):
        return True
    if isinstance(begin_norm_axis, int) and not 0 <= begin_norm_axis <= len(x.shape):
        return True
    if case.rule == "rms_norm_grad":
        invvar = inputs[2]
        return invvar is not None and len(invvar.shape) != len(x.shape) - 1
    if case.spec.op == "instance_norm":
        scale = inputs[1]
        return len(x.shape) < 4 or (case.rule == "instance_norm_grad" and (scale is None or scale.mesh is None)
                                    and any(m != -1 for m in x.dims_mapping[:2]))
    return False


def pir_may_crash(case: Case) -> bool:
    """Cases the PIR route builds in a forked child: the shared clauses above (on the grid 44 of
    416 other-mesh cases segfault; all 29 group_norm_grad cases with scale or bias None and axis 0
    split), and a batch_norm / batch_norm_grad data_format too short for ``data_format[1]``.

    A crash it misses still becomes a ``native crashed`` outcome through the worker restart of
    :mod:`.pool`, only slower (a fresh worker imports Paddle: 1.5-3 s, against ~25 ms for a fork)."""
    if _on_meshes_of_other_ndim(case) or _grad_partial_without_mesh(case):
        return True
    return case.rule in ("batch_norm", "batch_norm_grad") and _short_data_format(case)


#: backend -> the cases it runs in forked children (the registry isolates what the compiled caller does).
MAY_CRASH: dict[str, Callable[[Case], bool]] = {
    "registry": compiled_may_crash,
    "compiled": compiled_may_crash,
    "pir": pir_may_crash,
}
