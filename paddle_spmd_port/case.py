"""A case: one rule call, with everything needed to repeat it anywhere (JSON lines)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .rules.registry import rule_function
from .rules.signatures import RuleSpec, rule_spec
from .types import DistTensorSpec, ProcessMesh, SpmdResult


@dataclass(frozen=True)
class Case:
    """``rule`` is a rule key (see :mod:`paddle_spmd_port.rules.signatures`); ``inputs`` hold one spec (or None) per
    tensor argument in signature order; ``attrs`` every attribute, in signature order."""

    rule: str
    mesh: ProcessMesh
    inputs: tuple[DistTensorSpec | None, ...]
    attrs: tuple[tuple[str, Any], ...]
    case_id: str = ""

    def __post_init__(self) -> None:
        spec = rule_spec(self.rule)
        if len(self.inputs) != len(spec.inputs):
            raise ValueError(f"case for {self.rule} needs {len(spec.inputs)} inputs {spec.inputs}, "
                             f"got {len(self.inputs)}")
        known = {name for name, _ in spec.attrs}
        for name, _ in self.attrs:
            if name not in known:
                raise ValueError(f"{self.rule} has no attribute {name!r}; it takes {sorted(known) or 'none'}")

    @property
    def spec(self) -> RuleSpec:
        return rule_spec(self.rule)

    def attr_values(self) -> tuple[Any, ...]:
        """All attributes in signature order, defaults filled in."""
        given = dict(self.attrs)
        return tuple(given.get(name, default) for name, default in self.spec.attrs)

    def named_inputs(self) -> dict[str, DistTensorSpec | None]:
        return dict(zip(self.spec.inputs, self.inputs, strict=True))

    def call_port(self, profile: str = "paddle") -> SpmdResult:
        """The port's answer under ``profile`` (see :func:`paddle_spmd_port.rules.rule_function`)."""
        return rule_function(self.rule, profile)(*self.inputs, *self.attr_values())

    def describe(self) -> str:
        parts = [f"{n}={'None' if s is None else s}" for n, s in zip(self.spec.inputs, self.inputs, strict=True)]
        parts += [f"{k}={v!r}" for k, v in self.attrs]
        return f"{self.rule} mesh={self.mesh} " + " ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.case_id, "rule": self.rule, "mesh": self.mesh.to_json(),
                "inputs": [None if s is None else s.to_json() for s in self.inputs],
                "attrs": [[k, v] for k, v in self.attrs]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Case:
        return cls(data["rule"], ProcessMesh.from_json(data["mesh"]),
                   tuple(DistTensorSpec.from_json(s) for s in data["inputs"]),
                   tuple((k, v) for k, v in data["attrs"]), data.get("id", ""))


class JsonRecord(Protocol):
    def to_json(self) -> dict[str, Any]: ...


def write_jsonl(records: Iterable[JsonRecord], path: str | Path) -> int:
    """One compact JSON object per line (cases, launch cases, ...); returns the count."""
    n = 0
    with open(path, "w") as fh:
        for record in records:
            fh.write(json.dumps(record.to_json(), separators=(",", ":")) + "\n")
            n += 1
    return n


def read_jsonl(path: str | Path) -> Iterator[Case]:
    with open(path) as fh:
        for line in fh:
            if line.strip():
                yield Case.from_json(json.loads(line))
