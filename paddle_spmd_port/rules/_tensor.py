"""What a rule sees of one input: Paddle's ``DistMetaTensor``, with ``None`` made explicit.

Paddle stands a missing optional input (``scale=None``) in with an empty dist attr on a
tensor of shape ``[0]``: rank 1, no mesh, an empty dims_mapping. :func:`as_input` builds the
same thing, so the rules treat it exactly as Paddle does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from ..errors import InvalidSpecError, PaddleInvalidArgument
from ..types import DistAttr, DistTensorSpec, ProcessMesh

_NO_PARTIAL: frozenset[int] = frozenset()


class RuleInput(NamedTuple):
    """One input as the rule sees it (a NamedTuple: rules build several per call)."""

    name: str
    ndim: int
    dims_mapping: tuple[int, ...]
    partial_dims: frozenset[int]
    mesh: ProcessMesh | None
    missing: bool

    def attr(self, dims_mapping: Iterable[int], *, keep_partial: bool = False) -> DistAttr:
        """A copy of this input's attr with a new dims_mapping.

        ``keep_partial=False`` is Paddle's ``CopyTensorDistAttrForOutput`` (partial cleared);
        ``True`` is a plain copy of the incoming attr followed by ``set_dims_mapping``.
        """
        return DistAttr.make(tuple(dims_mapping), self.partial_dims if keep_partial else _NO_PARTIAL, self.mesh)

    def replicated(self) -> DistAttr:
        """Paddle's ``GetReplicatedDistAttr``: all -1 with the length of the *incoming*
        dims_mapping (empty for a missing input), partial cleared, same mesh."""
        return DistAttr.make((-1,) * len(self.dims_mapping), _NO_PARTIAL, self.mesh)


def _new_input(fields: tuple) -> RuleInput:
    return tuple.__new__(RuleInput, fields)  # skips NamedTuple's Python-level __new__ (hot path)


def as_input(spec: DistTensorSpec | None, name: str, *, optional: bool = False) -> RuleInput:
    """Validate ``spec`` (see :meth:`DistTensorSpec.check`) and wrap it for a rule."""
    if spec is None:
        if not optional:
            raise InvalidSpecError(f"{name} is required; pass a DistTensorSpec for it, not None",
                                   kind=f"invalid-spec:{name}:missing")
        return _new_input((name, 1, (), _NO_PARTIAL, None, True))
    if type(spec) is not DistTensorSpec and not isinstance(spec, DistTensorSpec):
        raise TypeError(f"{name} must be a DistTensorSpec or None, got {type(spec).__name__}")
    return _new_input((name, len(spec.shape), spec.dims_mapping, spec.partial_dims, spec.mesh, False))


def check_specs(*named: tuple[str, DistTensorSpec | None]) -> None:
    """Run the port's validation on every present spec, in argument order."""
    for name, spec in named:
        if spec is not None:
            spec.check(name)


def require_x_mesh(x: RuleInput) -> None:
    if x.mesh is None:
        raise InvalidSpecError("x has no process mesh (Paddle crashes on this); give x a ProcessMesh",
                               kind="invalid-spec:x:mesh")


def require_ndim(t: RuleInput, want: int, op: str) -> None:
    """Paddle's ``The ndim of <name> in <op> should be <want>, but got [n].`` check."""
    if t.ndim != want:
        raise PaddleInvalidArgument(f"The ndim of {t.name} in {op} should be {want}, but got [{t.ndim}].",
                                    kind=f"ndim:{t.name}")
