"""Which cases each native route runs crash-isolated, without importing Paddle.

Each backend runs the cases its predicate names in forked children, a child each (:mod:`._fork`
for the registry and PIR workers, the C++ caller's own fork server), so a case's outcome does not
depend on the cases run before it. :mod:`.pool` reads :data:`MAY_CRASH` to tell the workers which
cases those are. A predicate only picks how a case runs, never its outcome.

A predicate is the clauses every op shares (here) or'ed with the family's own
(``compiled_may_crash`` / ``pir_may_crash`` in ``ops/<family>/native.py``, see
:mod:`paddle_spmd_port.ops.kit.native`). How many cases each clause catches on the grid:
docs/measurements/2026-12-01-native-notes.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..case import Case, PerAttrs
from ..ops import FAMILIES, family_part
from ..ops.kit.native import CrashClause, NativeRoutes
from ..types import mesh_dims_of

FamilyClause = Callable[[Case, Mapping[str, object]], bool]


def _clauses(route: Callable[[NativeRoutes], CrashClause | None]) -> dict[str, FamilyClause]:
    """rule key -> its family's clause for one route, for the families that declare one."""
    table: dict[str, FamilyClause] = {}
    for family in FAMILIES.values():
        clause = route(family_part(family.name, NativeRoutes) or NativeRoutes())
        if clause is not None:
            table.update(dict.fromkeys(family.keys, clause))
    return table


_COMPILED = _clauses(lambda native: native.compiled_may_crash)
_PIR = _clauses(lambda native: native.pir_may_crash)


def _named_attrs_of(case: Case) -> dict[str, object]:
    return dict(zip((n for n, _ in case.spec.attrs), case.attr_values(), strict=True))


#: The case's attributes by name, the signature's defaults filled in: once per rule and attrs tuple
#: (the predicates only read the dict).
_named_attrs = PerAttrs(_named_attrs_of)


def _on_meshes_of_other_ndim(case: Case) -> bool:
    """An input on a mesh of another number of dims than x's: the rules then name mesh dims an
    attr's own mesh lacks, and some of those cases segfault (every route)."""
    x = case.inputs[0]
    return x is not None and x.mesh is not None and any(
        s is not None and s.mesh is not None and s.mesh.ndim != x.mesh.ndim for s in case.inputs)


def compiled_may_crash(case: Case) -> bool:
    """Inputs Paddle's rules are known to crash on, run in a forked child of the C++ caller's fork
    server (a fork costs far less than a program restart); the registry backend isolates the same
    cases. Shared by every op: x without a mesh, inputs on meshes of another number of dims, a
    dims_mapping whose length is not the rank or that names a mesh dim its mesh lacks; then the
    family's ``compiled_may_crash``."""
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
    clause = _COMPILED.get(case.rule)
    return clause is not None and clause(case, _named_attrs(case))


def pir_may_crash(case: Case) -> bool:
    """Cases the PIR route builds in a forked child: inputs on meshes of another number of dims
    (shared by every op), then the family's ``pir_may_crash``.

    A crash it misses still becomes a ``native crashed`` outcome through the worker restart of
    :mod:`.pool`, only slower (a fresh worker imports Paddle, where a fork costs milliseconds)."""
    if _on_meshes_of_other_ndim(case):
        return True
    clause = _PIR.get(case.rule)
    return clause is not None and clause(case, _named_attrs(case))


#: backend -> the cases it runs in forked children (the registry isolates what the compiled caller does).
MAY_CRASH: dict[str, Callable[[Case], bool]] = {
    "registry": compiled_may_crash,
    "compiled": compiled_may_crash,
    "pir": pir_may_crash,
}
