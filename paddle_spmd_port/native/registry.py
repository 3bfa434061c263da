"""Backend: Paddle's Python rule registry (``core.get_phi_spmd_rule``).

Reaches the rule keys behind each registry name a family declares as Paddle's
(``RegistryName(..., in_paddle=True)`` in ``ops/<family>/__init__.py``: its infer_forward and
infer_backward), plus the routes a family's ``native.py`` adds (``REGISTRY_ROUTES``: a name that
runs another key's function, or Paddle's generic ``replicated`` rule that an op's dist API falls
back to, applied to the op's signature: ``infer_forward([inputs...], [outputs...])`` with the
family's ``replicated_outputs``). Every attribute is passed, typed as :func:`._paddle.typed_attrs`
says. Paddle raising is an ``error`` outcome (``unreachable`` where the case holds an int Paddle
cannot hold: :func:`~paddle_spmd_port.case.int_range_problem`); an answer that is no
:class:`DistAttr` (a mesh of an impossible size, ...) is ``undecodable``, its text kept. Imports
Paddle: run it only inside a worker process.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..case import Case, int_range_problem
from ..ops import FAMILIES, family_part
from ..ops.kit.native import NativeRoutes
from ..outcome import ErrorInfo, Outcome
from ..types import DistAttr, DistTensorSpec, SpmdResult, entry_of, memo_table, mesh_dims_of
from ._fork import run_isolating
from ._paddle import ReduceTypeError, from_paddle_mesh, to_paddle_mesh, typed_attrs
from .crash_prone import MAY_CRASH

warnings.filterwarnings("ignore")

from paddle.distributed.auto_parallel.static.dist_attribute import (  # noqa: E402
    DistTensorSpec as PaddleSpec,
)
from paddle.distributed.auto_parallel.static.dist_attribute import (  # noqa: E402
    TensorDistAttr,
)
from paddle.framework import core  # noqa: E402


def _routes() -> tuple[dict[str, tuple[str, str]], dict[str, Callable[[Case], list[DistTensorSpec]]]]:
    routes: dict[str, tuple[str, str]] = {}
    outputs: dict[str, Callable[[Case], list[DistTensorSpec]]] = {}
    for family in FAMILIES.values():
        for reg in family.registry_names:
            if reg.in_paddle:
                routes[reg.forward] = (reg.name, "infer_forward")
                if reg.backward is not None:
                    routes[reg.backward] = (reg.name, "infer_backward")
        native = family_part(family.name, NativeRoutes) or NativeRoutes()
        for key, route in native.registry_routes.items():
            routes[key] = route
            if route[1] == "replicated" and native.replicated_outputs is not None:
                outputs[key] = native.replicated_outputs
    return routes, outputs


#: rule key -> (registry name, method); method "replicated": Paddle's generic rule.
ROUTES: dict[str, tuple[str, str]]
#: rule key -> the output specs its replicated rule is handed.
_REPLICATED_OUTPUTS: dict[str, Callable[[Case], list[DistTensorSpec]]]
ROUTES, _REPLICATED_OUTPUTS = _routes()

_rules: dict[str, Any] = {}


#: port spec -> Paddle's spec. The rules take their inputs by value (the C++ side copies them into
#: DistMetaTensors), so one Paddle spec serves every case that has an equal input; the sweep's
#: cell-by-cell comparison would show any answer that depended on sharing it.
_specs: dict[DistTensorSpec | None, Any] = memo_table({})


def to_paddle_spec(spec: DistTensorSpec | None) -> Any:
    found = _specs.get(spec)
    if found is None:
        if len(_specs) > 20_000:  # (random cases rarely repeat an x: a bigger table only holds memory)
            _specs.clear()
        found = _specs[spec] = _new_paddle_spec(spec)
    return found


def _new_paddle_spec(spec: DistTensorSpec | None) -> Any:
    attr = TensorDistAttr()
    if spec is None:  # Paddle's own stand-in for a missing optional tensor
        return PaddleSpec([0], attr)
    if spec.mesh is not None:
        attr.process_mesh = to_paddle_mesh(spec.mesh)
    if spec.coshard:  # Paddle's static attr takes one list of mesh dims per axis (3.2.0 and later)
        attr.multi_dims_mapping = [list(mesh_dims_of(e)) for e in spec.dims_mapping]
    else:
        attr.dims_mapping = list(spec.dims_mapping)
    if spec.partial_dims:
        attr._set_partial_dims(sorted(spec.partial_dims))
    return PaddleSpec(list(spec.shape), attr)


def from_paddle_attr(attr: Any, multi: bool = False) -> DistAttr:
    """The port's attr for one of Paddle's answers. ``multi``: read ``multi_dims_mapping`` (so a
    co-shard in the answer shows as one) instead of ``dims_mapping`` (which collapses it)."""
    pm = attr.process_mesh
    mesh = None if pm is None else from_paddle_mesh(pm)
    partial: frozenset[int] = frozenset()
    if attr._is_partial():
        partial = frozenset(attr._partial_dims())
        text = str(attr)
        if text.count("SUM)") != len(partial):  # the rules here only ever mean SUM
            raise ReduceTypeError(f"partial reduce type other than SUM in {text}")
    if multi:
        mapping = tuple(entry_of(axis) for axis in attr.multi_dims_mapping)
        return DistAttr.make(mapping, partial, mesh)
    return DistAttr.make(tuple(attr.dims_mapping), partial, mesh)


def _flatten(items: list) -> list:
    out = []
    for item in items:
        out.extend(item if isinstance(item, list) else [item])
    return out


def run(case: Case) -> Outcome:
    route = ROUTES.get(case.rule)
    if route is None:
        return Outcome(unreachable=f"the registry has no rule for {case.rule} (use the pir backend)")
    name, method = route
    rule = _rules.get(name)
    if rule is None:
        if not core.contains_spmd_rule(name):
            return Outcome(unreachable=f"this Paddle build registers no {name!r} rule")
        rule = _rules[name] = core.get_phi_spmd_rule(name)
    try:  # building the inputs can raise too (Paddle refuses a dim both sharded and partial)
        specs = [to_paddle_spec(s) for s in case.inputs]
        if method == "replicated":
            raw = rule.infer_forward(specs, [to_paddle_spec(s) for s in _REPLICATED_OUTPUTS[case.rule](case)])
        else:
            raw = getattr(rule, method)(*specs, *typed_attrs(case, exact=False))
    except Exception as exc:  # every native error is a recorded outcome
        why = int_range_problem(case)  # (looked for only here: Paddle's bindings refuse such ints)
        if why is not None:
            return Outcome(unreachable=why)
        return Outcome(error=ErrorInfo.from_exception(exc))
    multi = any(s is not None and s.coshard for s in case.inputs)  # only then can an answer hold a co-shard
    try:
        return Outcome(result=SpmdResult(tuple(from_paddle_attr(a, multi) for a in _flatten(raw[0])),
                                         tuple(from_paddle_attr(a, multi) for a in _flatten(raw[1]))))
    except ReduceTypeError as exc:
        return Outcome(error=ErrorInfo("ReduceTypeError", str(exc)))
    except Exception as exc:  # an answer that is no DistAttr (a garbage mesh, ...): recorded, with its text
        return Outcome.unreadable(exc, _LazyText(raw))


class _LazyText:
    """The text of Paddle's raw answer, made only when an undecodable outcome keeps it."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def __str__(self) -> str:
        return " | ".join("[" + ", ".join(str(a) for a in _flatten(list(side))) + "]" for side in self.raw)



def run_many(cases: Iterable[Case], may_crash: Callable[[Case], bool] | None = None) -> Iterator[Outcome]:
    """Outcomes in order; the ``may_crash`` cases (default: the compiled caller's
    :func:`~.crash_prone.compiled_may_crash`; a worker is handed the pool's :func:`~.pool.isolates`)
    run in forked children (see :mod:`._fork`), so that a crash costs a fork instead of a worker
    restart."""
    return run_isolating(cases, run, may_crash or MAY_CRASH["registry"], isolated=run)
