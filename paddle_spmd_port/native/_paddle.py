"""What every native backend needs from Paddle, once: where it is installed and which release it is
(read from its files, without importing it), the case's attributes as Paddle's calls want them,
process meshes to and from Paddle's, and the error for a Partial status other than SUM.

Importing this module does not import Paddle: :mod:`.compiled` and :mod:`.pool`
use it where Paddle is not (or must not be) imported; the mesh conversions import Paddle on first use.
"""

from __future__ import annotations

from typing import Any

from ..case import Case
from ..installed import paddle_dir, paddle_version
from ..ops import FAMILIES, family_part
from ..ops.kit.native import NativeRoutes, attr_kinds
from ..types import ProcessMesh


class ReduceTypeError(Exception):
    """Paddle answered a Partial status with a reduce type other than SUM (a DistAttr only holds SUM);
    the backends report it as an error outcome of that name."""


def _attr_kinds() -> dict[str, tuple[str, ...]]:
    table: dict[str, tuple[str, ...]] = {}
    for family in FAMILIES.values():
        declared = (family_part(family.name, NativeRoutes) or NativeRoutes()).attr_kinds
        for spec in family.rules:
            table[spec.key] = attr_kinds(spec, declared)
    return table


#: rule key -> how Paddle takes each of its attributes ("bool", "int", "float", "str"), in
#: signature order: the kind of the default's type, or the family's ``NATIVE.attr_kinds``.
ATTR_KIND: dict[str, tuple[str, ...]] = _attr_kinds()


def typed_attrs(case: Case, *, exact: bool) -> list[Any]:
    """The case's attributes in signature order, typed for Paddle (:data:`ATTR_KIND`): a float
    attribute always ``float`` (a Python int would reach the C++ rule as an int attribute).
    ``exact`` (the PIR op builders, whose arguments are typed): also the int, str and bool ones
    made so; without it (the registry's rule call) those pass as given."""
    values = []
    for kind, value in zip(ATTR_KIND[case.rule], case.attr_values(), strict=True):
        if kind == "float":
            value = float(value)
        elif not exact:
            pass
        elif kind == "int":
            value = int(value)
        elif kind == "str":
            value = str(value)
        else:
            value = bool(value)
        values.append(value)
    return values


_to_paddle: dict[ProcessMesh, Any] = {}
_from_paddle: dict[tuple[tuple[int, ...], tuple[int, ...], tuple[str, ...]], ProcessMesh] = {}


def to_paddle_mesh(mesh: ProcessMesh) -> Any:
    """Paddle's ``paddle.distributed.ProcessMesh`` for ``mesh`` (one per mesh, cached)."""
    pm = _to_paddle.get(mesh)
    if pm is None:
        import paddle.distributed as dist

        pm = _to_paddle[mesh] = dist.ProcessMesh(mesh.nested_ids(), dim_names=list(mesh.dim_names or ()))
    return pm


def from_paddle_mesh(pm: Any) -> ProcessMesh:
    """The port's mesh for a Paddle process mesh (anything with shape, process_ids and dim_names;
    cached by those)."""
    key = (tuple(pm.shape), tuple(pm.process_ids), tuple(pm.dim_names))
    mesh = _from_paddle.get(key)
    if mesh is None:
        mesh = _from_paddle[key] = ProcessMesh(*key)
    return mesh


__all__ = ["ATTR_KIND", "ReduceTypeError", "from_paddle_mesh", "paddle_dir", "paddle_version", "to_paddle_mesh",
           "typed_attrs"]
