"""What a family's compat module (``ops/<family>/compat.py``) declares for the drop-in of Paddle's
static SPMD rule-test API (:mod:`paddle_spmd_port.compat`), and the probe kit its probes use.

A family's ``compat.py`` holds:

* ``RULES``: the :class:`CompatRule` s it serves under Paddle's registry names (the compat layer
  takes the functions from ``paddle_spmd_port.ops.registry.get_spmd_rule(name)``);
* ``CONTAINS``: names the ``registry/contains`` probe asks both registries about;
* ``probes(kit)``: registers its probes on a :class:`ProbeKit` (the same calls run on Paddle and
  on the compat layer, and the observations are compared by name).

Pure: the kit's members are handed in by the compat room; nothing here imports Paddle or numpy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..spec import FamilyPart

#: Attribute kinds as Paddle's binding classifies Python values: bool, int, float.
ATTRIBUTE_KINDS = ("b", "i", "f")


@dataclass(frozen=True)
class Method:
    """What one rule method reads: tensor slots in order, then typed attributes ((name, kind) with
    kind one of :data:`ATTRIBUTE_KINDS`). ``optional``: slots where a mesh-less rank-1 spec (Paddle's
    ``DistTensorSpec([0], TensorDistAttr())``) means "no tensor".

    ``unread``: slots whose dims_mapping Paddle's rule never reads (its answer for them comes from
    the other tensors), so Paddle answers whatever mapping they hold: an entry outside the mesh, a
    mesh dim twice, a stale mapping of another rank. ``length_read``: those of them whose mapping
    length Paddle still checks against the rank (its own error, which the port raises too). The
    compat layer hands the port a replicated mapping for such a slot when the one given is one
    the port refuses, so the answer is Paddle's; Paddle's own p_norm test passes the reverse rule
    an x whose mapping names a mesh dim its mesh lacks.

    ``meshless``: those unread slots Paddle also takes without a process mesh (not the rank-1
    stand-in for a missing tensor): its answer for the slot then has no mesh either, nor have the
    outputs ``meshless_outputs`` names for it ((slot, output positions) pairs: the outputs whose
    attr Paddle copies from that input). ``answered``: the slots the answer's inputs list stands
    for, in order, where that is not ``tensors`` (a grad rule may leave one out).

    ``output_sources``: the slot whose attr each output's answer is built from (Paddle copies its
    ``batch_dim``); ``whole``: which answers (``"inputs"``, ``"outputs"``) copy their source's attr
    whole (chunk_id, dynamic_dims, annotated and split factor too), as some reverse rules do."""

    tensors: tuple[str, ...]
    attributes: tuple[tuple[str, str], ...] = ()
    optional: frozenset[str] = frozenset()
    unread: frozenset[str] = frozenset()
    length_read: frozenset[str] = frozenset()
    meshless: frozenset[str] = frozenset()
    meshless_outputs: tuple[tuple[str, tuple[int, ...]], ...] = ()
    answered: tuple[str, ...] | None = None
    output_sources: tuple[str, ...] = ()
    whole: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if bad := [kind for _, kind in self.attributes if kind not in ATTRIBUTE_KINDS]:
            raise ValueError(f"attribute kinds {bad} are not among {ATTRIBUTE_KINDS}")
        for what, slots in (("optional", self.optional), ("unread", self.unread)):
            if not slots <= set(self.tensors):
                raise ValueError(f"{what} {sorted(slots - set(self.tensors))} are not tensor slots")
        for what, slots in (("length_read", self.length_read), ("meshless", self.meshless)):
            if not slots <= self.unread:
                raise ValueError(f"{what} {sorted(slots - self.unread)} are not unread slots")
        if bad := [slot for slot, _ in self.meshless_outputs if slot not in self.meshless]:
            raise ValueError(f"meshless_outputs name {bad}, which are not meshless slots")
        for what, named in (("answered", self.answered or ()), ("output_sources", self.output_sources)):
            if not set(named) <= set(self.tensors):
                raise ValueError(f"{what} {sorted(set(named) - set(self.tensors))} are not tensor slots")
        if not self.whole <= {"inputs", "outputs"}:
            raise ValueError(f"whole {sorted(self.whole)} names other than 'inputs' and 'outputs'")


@dataclass(frozen=True)
class CompatRule:
    """A registry name the compat layer serves: its infer_forward, and its infer_backward (None:
    Paddle registers none, and the call raises NotFound as Paddle's does)."""

    name: str
    forward: Method
    backward: Method | None = None


Probe = Callable[[], Any]


@dataclass(frozen=True)
class ProbeKit:
    """Everything a family's probes call, bound to one API (Paddle's or the compat layer's).

    ``probe(name, message=True)`` registers a probe (a decorator); ``rule(name)`` is the registry
    rule fetched when a probe first uses it; ``fetch`` and ``contains`` ask the registry (and
    record the name); ``spec``/``attr``/``absent``/``coshard`` build inputs on ``mesh`` (2x3) or
    the mesh given; ``result_view`` is what a probe returns of a rule's answer; ``np`` is numpy."""

    probe: Callable[..., Callable[[Probe], Probe]]
    rule: Callable[[str], Any]
    fetch: Callable[[str], Any]
    contains: Callable[[str], Any]
    TensorDistAttr: Any
    DistTensorSpec: Any
    ProcessMesh: Any
    mesh: Any
    mesh1: Any
    mesh22: Any
    mesh32: Any
    attr: Callable[..., Any]
    spec: Callable[..., Any]
    absent: Callable[[], Any]
    coshard: Callable[..., Any]
    result_view: Callable[[Any], Any]
    np: Any


def tagged_specs(kit: ProbeKit, *tensors: tuple[list[int], list[int]]) -> list[Any]:
    """Specs on ``kit.mesh`` whose attrs carry distinct bookkeeping (batch_dim 10 + i, chunk_id
    20 + i, every dim dynamic, process_mesh annotated, a split factor), to see which input each
    answer takes them from."""
    out = []
    for i, (shape, dims_mapping) in enumerate(tensors):
        attr = kit.attr(dims_mapping)
        attr.batch_dim, attr.chunk_id, attr.dynamic_dims = 10 + i, 20 + i, [True] * len(dims_mapping)
        attr.mark_annotated("process_mesh")
        attr._set_split_factor(0, 2)
        out.append(kit.DistTensorSpec(shape, attr))
    return out


def bookkeeping_view(result: Any) -> list[list[list[Any]]]:
    """What each answer of ``result`` keeps of the bookkeeping :func:`tagged_specs` set."""
    return [[[a.batch_dim, a.chunk_id, a.dynamic_dims, a.annotated, str(a).rsplit("split_factor", 1)[1]]
             for a in side] for side in result]


@dataclass(frozen=True)
class CompatEntries(FamilyPart):
    """What a family adds to the compat layer (``COMPAT`` in ``ops/<family>/compat.py``): the
    registry names it serves, the names the ``registry/contains`` probe asks about, and its probes
    (the same calls on Paddle and on the compat layer, compared by name)."""

    MODULE = "compat"
    ATTRIBUTE = "COMPAT"

    rules: tuple[CompatRule, ...] = ()
    contains: tuple[str, ...] = ()
    probes: Callable[[ProbeKit], None] | None = None


def compat_parts() -> Iterator[tuple[str, CompatEntries]]:
    """(family, its compat entries), family by family, for the families that declare them."""
    from .. import FAMILIES, family_part

    for family in FAMILIES:
        part = family_part(family, CompatEntries)
        if part is not None:
            yield family, part


__all__ = ["ATTRIBUTE_KINDS", "CompatEntries", "CompatRule", "Method", "Probe", "ProbeKit", "bookkeeping_view",
           "compat_parts", "tagged_specs"]
