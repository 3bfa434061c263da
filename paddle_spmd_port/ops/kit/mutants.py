"""Mutants: realistic one-line bugs planted in a copy of the package, each judged by
``tools/mutants.py`` (can the harness fail?). Op-free: :class:`Mutant` and :class:`MutantSet`, the
part a family declares as ``MUTANTS`` in ``ops/<family>/mutants.py`` (the bugs in the code its
rules run, judged by its rules or by the tests named).

A mutant is ``(file, old text, new text, what)``: ``old`` must occur exactly once in
``paddle_spmd_port/<file>`` (the tool refuses a stale one before any work). A rule mutant names the
rule keys whose sampled parity run judges it; a pytest mutant names the test files whose run does.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..spec import FamilyPart, OpFamily

#: The package's import name: a mutant's file is a path inside it.
PKG = "paddle_spmd_port"


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str
    """Path inside the package, e.g. ``ops/layer_norm/rules.py`` (see :func:`family_file`)."""
    old: str
    new: str
    what: str
    rules: tuple[str, ...] = ()
    """Rule keys whose sampled parity run judges it (rule mutants)."""
    tests: tuple[str, ...] = ()
    """Test files whose run judges it (comparator, kernel and proposed-rule mutants)."""
    equivalent: str = ""
    """Why no input can tell this mutant from the original ("" = it must be killed)."""

    @property
    def kind(self) -> str:
        return "parity" if self.rules else "pytest"

    @property
    def module(self) -> str:
        return f"{PKG}." + self.file[:-3].replace("/", ".")

    @property
    def target(self) -> str:
        return ",".join(self.rules) if self.rules else ",".join(t.rsplit("/", 1)[-1] for t in self.tests)


def mutant(name: str, file: str, old: str, new: str, what: str, *, rules: tuple[str, ...] = (),
           tests: tuple[str, ...] = (), equivalent: str = "") -> Mutant:
    """A :class:`Mutant`, written as the tables write them."""
    return Mutant(name, file, old, new, what, tuple(rules), tuple(tests), equivalent)


def family_file(family: str, part: str = "rules") -> str:
    """The file of one piece of an op family, ``ops/<family>/<part>.py`` (``kit``: the pieces the
    families share), inside the package."""
    return f"ops/{family}/{part}.py"


@dataclass(frozen=True)
class MutantSet(FamilyPart):
    """A family's mutants (``MUTANTS`` in ``ops/<family>/mutants.py``)."""

    MODULE = "mutants"
    ATTRIBUTE = "MUTANTS"

    mutants: tuple[Mutant, ...] = ()

    def problems(self, family: OpFamily) -> list[str]:
        from .. import RULES

        return [f"{m.name} is judged by unknown rule keys {sorted(set(m.rules) - set(RULES))}"
                for m in self.mutants if set(m.rules) - set(RULES)]


__all__ = ["PKG", "Mutant", "MutantSet", "family_file", "mutant"]
