"""The release kit: how a family declares what an older Paddle release answers differently
(op-free): :class:`ReleaseNotes`, bound to ``RELEASES`` in ``ops/<family>/releases.py``.

paddle_spmd_port/releases.py assembles every family's notes into one profile per release: entries of the same
name from several families become one difference over all their rules (they must agree on kind, why
and params). Each difference's evidence (what was measured, with the command) is written up in
docs/releases/<version>.md under its name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..spec import FamilyPart, OpFamily, foreign_keys

#: How a native outcome is recognised (paddle_spmd_port/releases.py has one matcher per kind):
#: ``rule-missing`` (unreachable or NotFound, by param ``patterns``), ``replicated-fallback`` (the
#: dist API's answer for an op without a rule), ``crash-with-none`` (a signal while a named optional
#: input is None), ``partial-on-absent-grad``, ``coshard-refused`` (an error on a co-sharded input),
#: ``error-text-differs`` (the same error in older words), ``outputs-truncated`` (lower-rank outputs),
#: ``native-raises`` (an error family and message), ``coshard-unreachable`` (the route cannot build a
#: co-sharded input on that release: unreachable, by param ``patterns``), ``rule-not-modelled`` (the
#: release's function is another algorithm than the one the port models: a case it answers otherwise,
#: or crashes on, by param ``verdicts``).
KINDS = ("rule-missing", "replicated-fallback", "crash-with-none", "partial-on-absent-grad", "coshard-refused",
         "error-text-differs", "outputs-truncated", "native-raises", "coshard-unreachable", "rule-not-modelled")
#: The kinds that only ever explain a case with a co-sharded input (the rule's other cases are not affected).
COSHARD_ONLY_KINDS = frozenset({"coshard-refused", "coshard-unreachable"})
#: The kinds that say the release *lacks* something (the rule, on that route; the co-shard the case
#: needs; the rule as the port models it, where the release has another algorithm under its name): the
#: sweep classes such a case ``release-lacks``, never compared, and counts it apart from the uncompared
#: cases. The other kinds are answers Paddle gave that the profile predicts (``known-difference``: compared).
ABSENCE_KINDS = frozenset({"rule-missing", "coshard-unreachable", "rule-not-modelled"})


@dataclass(frozen=True)
class KnownDifference:
    """One way a release's native answer differs from the port, for some rules."""

    name: str
    rules: frozenset[str]
    kind: str
    """One of :data:`KINDS`: how the native outcome is recognised."""
    why: str
    """Short reason, shown in reports as ``known difference for X.Y.Z: <why>``."""
    evidence: str = ""
    """Where the measurement is written up (paddle_spmd_port/releases.py fills in docs/releases/<version>.md#<name>)."""
    params: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"known difference {self.name!r}: unknown kind {self.kind!r}; "
                             f"choose one of {', '.join(KINDS)}")

    def param(self, key: str, default: Any = KeyError) -> Any:
        params = dict(self.params)
        if default is KeyError:
            return params[key]
        return params.get(key, default)

    def for_rules(self, *rules: str) -> KnownDifference:
        """The same difference, concerning ``rules`` (a family joining one declared elsewhere)."""
        return dataclasses.replace(self, rules=frozenset(rules))

    @property
    def coshard_only(self) -> bool:
        """It explains only cases with a co-sharded input (see its kind)."""
        return self.kind in COSHARD_ONLY_KINDS

    @property
    def absence(self) -> bool:
        """It says the release lacks what the case needs (see :data:`ABSENCE_KINDS`): not compared."""
        return self.kind in ABSENCE_KINDS


#: 3.1.x sets a co-shard (compiled caller and registry alike), but a rule reading dims_mapping raises.
COSHARD_READ_RAISES = KnownDifference(
    name="coshard-dims-mapping-read-raises",
    rules=frozenset(),
    kind="coshard-refused",
    why="a rule reading a co-sharded input's dims_mapping raises ValueError 'There are <n> mesh dim sharded on tensor "
        "dim <k>,you should call \"multi_dims_mapping()\"' (3.2.0+ falls back to one mesh dim)",
    params=(("family", "ValueError"),
            ("message", r'^There are \d+ mesh dim sharded on tensor dim \d+, ?you should call '
                        r'"multi_dims_mapping\(\)"')),
)

#: 3.0.0's TensorDistAttr cannot hold a co-shard: the registry route cannot build such an input.
NO_MULTI_DIMS_MAPPING = KnownDifference(
    name="no-multi-dims-mapping",
    rules=frozenset(),
    kind="coshard-refused",
    why="TensorDistAttr has no multi_dims_mapping, so the registry route cannot set a co-sharded input "
        "(AttributeError)",
    params=(("family", "AttributeError"), ("message", r"has no attribute 'multi_dims_mapping'")),
)

# Paddle 2.6.2 (docs/releases/2.6.2.md): of the ported rules it has only LayerNorm{,Grad}InferSpmd and
# LayerNormInferSpmdReverse (registry layer_norm, forward and infer_backward) and the replicated rule.
#: 2.6.2 has no rule of the family at all (registry, library and headers alike).
NO_RULE_262 = KnownDifference(
    name="no-rule-2.6.2",
    rules=frozenset(),
    kind="rule-missing",
    why="no such SPMD rule: no registry entry, no InferSpmd function in the library, no header (of the norm ops' "
        "rules 2.6.2 has layer_norm.h and the replicated rule only; FastLn*InferSpmd, declared in layer_norm.h "
        "since, is absent from it)",
    params=(("patterns", (r"registers no '\w+' rule", r"Paddle exports no C\+\+ rule for ",
                          r"this Paddle build's FastLn\w*InferSpmd does not take ")),),
)
#: 2.6.2's PIR has no distributed dialect (native/pir.py NO_DIST_PIR): no case is answered through it.
NO_DIST_PIR_262 = KnownDifference(
    name="no-pir-dist-dialect",
    rules=frozenset(),
    kind="rule-missing",
    why="its PIR has no distributed dialect (paddle.pir.Operation has no dist_attr, paddle.pir.core no insertion-point "
        "API): no rule's answer can be read through PIR (its other routes still compare the rule)",
    params=(("patterns", (r"PIR has no distributed dialect",)),),
)
#: 2.6.2's TensorDistAttr has no nested dims_mapping: the compiled caller cannot build a co-sharded input.
NO_COSHARD_CALLER_262 = KnownDifference(
    name="compiled-caller-no-coshard",
    rules=frozenset(),
    kind="coshard-unreachable",
    why="TensorDistAttr holds one mesh dim per axis (no multi_dims_mapping), so the compiled caller cannot build a "
        "co-sharded input",
    params=(("patterns", (r"holds one mesh dim per axis \(no co-shard\)",)),),
)

Differences = dict[str, tuple[KnownDifference, ...]]
Probes = dict[str, tuple[tuple[str, str], ...]]

# Why-texts of compat-probe differences every family's probes share (measured with
# ``python -m paddle_spmd_port.compat.probes native`` in each release's venv: docs/releases/).
#: 3.0.0 prints a TensorDistAttr in an older format.
STR_FORMAT_300 = ("TensorDistAttr's str prints 'dims_mappings: [0,-1]' and no split_factor (3.3.1: "
                  "'dim_mappings: [[0] [] ]' and 'split_factor')")
#: 3.0.0's infer_spmd takes no str argument.
STR_ARGS_300 = "infer_spmd() rejects str arguments ('must be int, float, bool or Tensor, but got str')"
#: 3.0.0 cannot set a co-shard at all.
NO_COSHARD_300 = "no co-sharding: TensorDistAttr has no multi_dims_mapping attribute (AttributeError)"
#: 3.1.x sets a co-shard, but reading a co-sharded attr's dims_mapping raises.
COSHARD_READ_RAISES_31 = ("reading dims_mapping of a co-sharded attr raises ValueError (InvalidArgument) 'There are 2 "
                          "mesh dim sharded on tensor dim 0,you should call \"multi_dims_mapping()\"'; 3.2.0+ falls "
                          "back to one mesh dim")


#: The unreachable reason of every compiled-caller case on a build without the caller's release
#: marker header (native/compiled.py: a family's ``NativeRoutes.cpp_release_marker``).
NO_CALLER_PATTERN = r"compiled caller unavailable: .*has no phi/infermeta/spmd_rules/\w+\.h"


def _no_entries() -> Mapping[str, Any]:
    return {}


@dataclass(frozen=True)
class ReleaseNotes(FamilyPart):
    """What older releases answer differently for a family, per release version ``"X.Y.Z"``
    (``RELEASES`` in ``ops/<family>/releases.py``). Declare only what was measured: an undeclared
    difference shows as a mismatch, the fail-closed reading."""

    MODULE = "releases"
    ATTRIBUTE = "RELEASES"

    differences: Mapping[str, tuple[KnownDifference, ...]] = dataclasses.field(default_factory=_no_entries)
    """version -> the family's :class:`KnownDifference` entries, rules = its own keys, in the order
    they are tried (the first that matches a case explains it)."""
    registry_missing: Mapping[str, frozenset[str]] = dataclasses.field(default_factory=_no_entries)
    """version -> registry names 3.3.1 has and that release lacks."""
    cpp_missing: Mapping[str, frozenset[str]] = dataclasses.field(default_factory=_no_entries)
    """version -> C++ InferSpmd functions absent from that release's libraries."""
    probe_differences: Mapping[str, tuple[tuple[str, str], ...]] = dataclasses.field(default_factory=_no_entries)
    """version -> (compat probe name, why) for the family's probes (``<prefix>/...`` of
    paddle_spmd_port.compat.probes) that release answers differently."""
    probe_crashes: Mapping[str, tuple[tuple[str, str], ...]] = dataclasses.field(default_factory=_no_entries)
    """version -> (probe name, why) for the family's probes that kill that release's process."""

    def problems(self, family: OpFamily) -> list[str]:
        return [f"{version}: {d.name} names rules of other families {foreign}"
                for version, diffs in self.differences.items() for d in diffs
                if (foreign := foreign_keys(family, d.rules))]


def probes(why: str, *names: str) -> tuple[tuple[str, str], ...]:
    """(name, why) for each probe name."""
    return tuple((name, why) for name in names)

__all__ = ["ABSENCE_KINDS", "COSHARD_ONLY_KINDS", "COSHARD_READ_RAISES", "KINDS", "NO_COSHARD_CALLER_262",
           "NO_DIST_PIR_262", "NO_MULTI_DIMS_MAPPING", "NO_RULE_262",
           "COSHARD_READ_RAISES_31", "NO_COSHARD_300", "STR_ARGS_300", "STR_FORMAT_300", "Differences",
           "KnownDifference", "NO_CALLER_PATTERN", "Probes", "ReleaseNotes", "probes"]
