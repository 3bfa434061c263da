"""The declared spec of an op family: the one place its rule keys, signatures, Paddle registry
names and native routes are written. Pure data (nothing here imports Paddle, numpy or a room).

Every room reads these declarations through :mod:`paddle_spmd_port.ops` and names no op itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

#: The native routes, in the order backend groups run: the static-API registry
#: (``core.get_phi_spmd_rule``), Paddle's exported C++ functions called by a compiled program,
#: and the op built in a PIR static program.
ROUTES: tuple[str, ...] = ("registry", "compiled", "pir")


@dataclass(frozen=True)
class RuleSpec:
    """One rule key: the inputs in call order (``optional`` may be None), the attributes with their
    defaults in signature order, and the names of the attrs the rule returns."""

    key: str
    op: str
    direction: str  # forward | reverse | grad
    inputs: tuple[str, ...]
    optional: frozenset[str]
    attrs: tuple[tuple[str, Any], ...]
    result_inputs: tuple[str, ...]
    result_outputs: tuple[str, ...]
    #: Paddle's C++ function behind the key; None where Paddle exports none.
    cpp: str | None = None
    #: The native routes compared by default, the primary first; () where no route reaches the key.
    routes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.direction not in ("forward", "reverse", "grad"):
            raise ValueError(f"{self.key}: direction {self.direction!r} is not forward, reverse or grad")
        if not self.optional <= set(self.inputs):
            raise ValueError(f"{self.key}: optional {sorted(self.optional - set(self.inputs))} are not inputs")
        if unknown := [r for r in self.routes if r not in ROUTES]:
            raise ValueError(f"{self.key}: unknown routes {unknown}; routes are {', '.join(ROUTES)}")
        if "compiled" in self.routes and self.cpp is None:
            raise ValueError(f"{self.key}: the compiled route needs the C++ function's name (cpp=)")

    @property
    def n_cells(self) -> int:
        """Cells per case: (dims_mapping, partial, mesh) of every returned attr, plus the error."""
        return 3 * (len(self.result_inputs) + len(self.result_outputs)) + 1


@dataclass(frozen=True)
class RegistryName:
    """A name ``get_spmd_rule`` answers to: the rule keys behind its infer_forward and
    infer_backward, and whether Paddle's own registry has the name (else it is the port's own)."""

    name: str
    forward: str
    backward: str | None = None
    in_paddle: bool = False
    #: Paddle's object for the name reads epsilon unchecked: left out, the process dies (SIGSEGV);
    #: an int, Paddle raises its attribute cast error. The port's object refuses both the same way.
    epsilon_unchecked: bool = False


@dataclass(frozen=True)
class OpFamily:
    """An op family as every room sees it."""

    name: str
    rules: tuple[RuleSpec, ...]
    registry_names: tuple[RegistryName, ...] = ()
    #: One-line summary for listings and the docs.
    summary: str = ""
    keys: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", tuple(r.key for r in self.rules))
        if wrong := [r.key for r in self.rules if r.op != self.name]:
            raise ValueError(f"family {self.name}: rules {wrong} declare another op")
        for reg in self.registry_names:
            for key in (reg.forward, reg.backward):
                if key is not None and key not in self.keys:
                    raise ValueError(f"family {self.name}: registry name {reg.name!r} names unknown key {key!r}")


class FamilyPart:
    """The base of a family's typed parts (the grid plan, the native routes, the release notes, ...).

    A part kind names the module of ``ops/<family>/`` that holds it (:attr:`MODULE`) and the one
    name that module binds it to (:attr:`ATTRIBUTE`); :func:`paddle_spmd_port.ops.family_part` reads
    it there, checks its type and runs :meth:`check`, so a room reads typed fields (mypy sees them)
    and a wrong declaration fails on import, naming the file. Every part is optional: a family
    without the module has none (the room uses the kind's defaults, or skips the family)."""

    MODULE: ClassVar[str]
    ATTRIBUTE: ClassVar[str]

    def problems(self, family: OpFamily) -> list[str]:
        """What is wrong with this part as ``family``'s (empty: nothing)."""
        return []


def foreign_keys(family: OpFamily, keys: Any) -> list[str]:
    """The keys of ``keys`` (rule keys) that ``family`` does not declare, sorted."""
    return sorted(set(keys) - set(family.keys))
