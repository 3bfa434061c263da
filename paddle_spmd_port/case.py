"""A case: one rule call, with everything needed to repeat it anywhere (JSON lines)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from .errors import ArgumentTypeError
from .ops import RuleSpec, rule_spec
from .ops.registry import PADDLE_RULES, rule_function
from .types import DistTensorSpec, ProcessMesh, SpmdResult, memo_table, mesh_dims_of


@dataclass(frozen=True, init=False)
class Case:
    """``rule`` is a rule key (see :mod:`paddle_spmd_port.ops`); ``inputs`` hold one spec (or None) per
    tensor argument in signature order; ``attrs`` every attribute, in signature order.

    ``attrs`` may be given in any order and without some attributes: the case holds them all, in
    signature order, each one not given at its signature default. So its JSON (every report's
    record and repro line) names every attribute the rule was called with, and a case read back
    needs none filled in. An unknown or repeated name raises ValueError. ``inputs`` may be any
    sequence and ``attrs`` a dict; a mesh that is not a :class:`ProcessMesh`, an input neither a
    :class:`DistTensorSpec` nor None, or an attribute not a (name, value) pair raises
    :class:`~.errors.ArgumentTypeError` naming it."""

    rule: str
    mesh: ProcessMesh
    inputs: tuple[DistTensorSpec | None, ...]
    attrs: tuple[tuple[str, Any], ...]
    case_id: str = ""

    def __init__(self, rule: str, mesh: ProcessMesh, inputs: Sequence[DistTensorSpec | None],
                 attrs: Iterable[tuple[str, Any]] | Mapping[str, Any], case_id: str = "") -> None:
        # written out (a sweep builds hundreds of thousands): the rule's input count and attribute
        # signature are looked up once per rule, the full attrs once per attrs tuple
        shape = _RULE_SHAPES.get(rule)
        if shape is None:
            spec = rule_spec(rule)
            shape = _RULE_SHAPES[rule] = (len(spec.inputs), tuple(spec.attrs))
        if type(inputs) is not tuple:  # a list (or other sequence) of inputs is held as a tuple
            inputs = _sequence(inputs, "Case.inputs", "a tuple of DistTensorSpec or None")
        if len(inputs) != shape[0]:
            spec = rule_spec(rule)
            raise ValueError(f"case for {rule} needs {len(spec.inputs)} inputs {spec.inputs}, got {len(inputs)}")
        if type(mesh) is not ProcessMesh and not isinstance(mesh, ProcessMesh):
            raise ArgumentTypeError(f"Case.mesh must be a ProcessMesh, got {type(mesh).__name__} {mesh!r:.40}",
                                    kind="invalid-spec:Case.mesh:type")
        for item in inputs:
            if item is not None and type(item) is not DistTensorSpec:
                _check_inputs(rule, inputs)
        if type(attrs) is not tuple and isinstance(attrs, Mapping):  # {"epsilon": 1e-5} as (("epsilon", 1e-5),)
            attrs = tuple(attrs.items())
        hit = _FULL_ATTRS.get((rule, id(attrs)))
        if hit is not None and hit[0] is attrs:
            full = hit[1]
        else:
            full = _full_attrs(rule, attrs, shape[1])
        _set(self, "rule", rule)  # (field by field: the instances then share their dict's keys)
        _set(self, "mesh", mesh)
        _set(self, "inputs", inputs)
        _set(self, "attrs", full)
        _set(self, "case_id", case_id)

    @property
    def spec(self) -> RuleSpec:
        return rule_spec(self.rule)

    def attr_values(self) -> tuple[Any, ...]:
        """All attributes' values, in signature order."""
        return _attr_values(self)

    def named_inputs(self) -> dict[str, DistTensorSpec | None]:
        return dict(zip(self.spec.inputs, self.inputs, strict=True))

    def call_port(self, profile: str = "paddle", policy: str = "strict") -> SpmdResult:
        """The port's answer under ``profile`` and the strictness ``policy`` (see
        :func:`paddle_spmd_port.ops.registry.rule_function`)."""
        fn = PADDLE_RULES.get(self.rule) if profile == "paddle" and policy == "strict" else None  # the common call
        if fn is None:
            fn = rule_function(self.rule, profile, policy)
        return fn(*self.inputs, *self.attr_values())

    def describe(self) -> str:
        parts = [f"{n}={'None' if s is None else _spec_str(s)}"
                 for n, s in zip(self.spec.inputs, self.inputs, strict=True)]
        if self.attrs:
            parts.append(_shared_text(self.attrs, _attrs_str))
        return f"{self.rule} mesh={self.mesh} " + " ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.case_id, "rule": self.rule, "mesh": self.mesh.to_json(),
                "inputs": [None if s is None else s.to_json() for s in self.inputs],
                "attrs": [[k, v] for k, v in self.attrs]}

    def json_text(self) -> str:
        """The text of ``json.dumps(self.to_json(), separators=(",", ":"))``, put together from the
        texts of its parts: a sweep's cases share a few thousand meshes and attribute tuples, whose
        texts are kept (tests/test_case_json_text.py holds it to :meth:`to_json` on every grid)."""
        inputs = ",".join(["null" if s is None else _spec_text(s) for s in self.inputs])
        mesh = _shared_text(self.mesh, _mesh_text)
        return (f'{{"id":{_dumps(self.case_id)},"rule":{_dumps(self.rule)},"mesh":{mesh},"inputs":[{inputs}],'
                f'"attrs":{_shared_text(self.attrs, _attrs_text)}}}')

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Case:
        return cls(data["rule"], ProcessMesh.from_json(data["mesh"]),
                   tuple(DistTensorSpec.from_json(s) for s in data["inputs"]),
                   tuple((k, v) for k, v in data["attrs"]), data.get("id", ""))


INT64 = (-(1 << 63), (1 << 63) - 1)
"""The range of the int64 Paddle holds sizes, mesh dims and process ids in."""
INT32 = (-(1 << 31), (1 << 31) - 1)
"""The range of the C++ ``int`` Paddle holds integer attributes (begin_norm_axis, groups) in."""


def int_range_problem(case: Case) -> str | None:
    """Which of the case's integers Paddle cannot hold, as a sentence, or None: a size, mesh dim
    or process id beyond :data:`INT64`, an integer attribute beyond :data:`INT32`. A native route
    cannot express such a case (Paddle's bindings raise TypeError or IndexError on it, or its C++
    side misreads it): its outcome is ``unreachable`` with this reason, never a Paddle error held
    against the port."""
    fields: list[tuple[str, Iterable[Any], tuple[int, int]]] = [
        ("the mesh's shape", case.mesh.shape, INT64), ("the mesh's process ids", case.mesh.process_ids or (), INT64)]
    for name, spec in zip(case.spec.inputs, case.inputs, strict=True):
        if spec is None:
            continue
        fields += [(f"{name}.shape", spec.shape, INT64),
                   (f"{name}.dims_mapping", [m for e in spec.dims_mapping for m in mesh_dims_of(e)], INT64),
                   (f"{name}.partial_dims", spec.partial_dims, INT64)]
        if spec.mesh is not None:
            fields += [(f"{name}'s mesh shape", spec.mesh.shape, INT64),
                       (f"{name}'s process ids", spec.mesh.process_ids or (), INT64)]
    fields += [(f"attribute {k}", [v], INT32) for k, v in case.attrs if type(v) is int]
    for where, values, (lo, hi) in fields:
        bad = next((v for v in values if isinstance(v, int) and not lo <= v <= hi), None)
        if bad is not None:
            kind = "int64" if hi == INT64[1] else "int32 (C++ int)"
            return f"{where}: {bad} is beyond the {kind} Paddle holds it in ({lo}..{hi})"
    return None


_set = object.__setattr__
_RULE_SHAPES: dict[str, tuple[int, tuple[tuple[str, Any], ...]]] = {}
"""rule -> (its number of inputs, its attributes with their defaults, in signature order)."""
_FULL_ATTRS: dict[tuple[str, int], tuple[Any, tuple[tuple[str, Any], ...]]] = memo_table({})
"""(rule, id(attrs as given)) -> (them, the full attrs): a grid's cases share a few attrs tuples."""


def _check_inputs(rule: str, inputs: tuple[Any, ...]) -> None:
    """Refuses an input that is neither a DistTensorSpec (a subclass too) nor None, naming it."""
    for i, item in enumerate(inputs):
        if item is not None and not isinstance(item, DistTensorSpec):
            raise ArgumentTypeError(f"Case.inputs[{i}] ({rule_spec(rule).inputs[i]}) must be a DistTensorSpec or "
                                    f"None, got {type(item).__name__} {item!r:.40}",
                                    kind="invalid-spec:Case.inputs:type")


def _sequence(value: Any, what: str, valid: str) -> tuple[Any, ...]:
    """``value`` as a tuple when it is a sequence (not a str, bytes or mapping); else
    :class:`ArgumentTypeError` naming ``what``."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise ArgumentTypeError(f"{what} must be {valid}, got {type(value).__name__} {value!r:.40}",
                                kind=f"invalid-spec:{what}:type")
    return tuple(value)


def _is_pair(kv: Any) -> bool:
    """A (name, value) pair: a tuple or list of two whose first is a str."""
    return isinstance(kv, (tuple, list)) and len(kv) == 2 and isinstance(kv[0], str)


def _full_attrs(rule: str, attrs: Any, signature: tuple[tuple[str, Any], ...]) -> tuple[tuple[str, Any], ...]:
    """``attrs`` (pairs of name and value) as every attribute of ``rule`` in signature order, each
    one not given at its default; the very tuple when it is that already. Kept in :data:`_FULL_ATTRS`."""
    items = _sequence(attrs, f"{rule}'s attrs", "(name, value) pairs or a dict")
    for kv in items:
        if not _is_pair(kv):
            raise ArgumentTypeError(f"{rule}'s attrs must be (name, value) pairs (or a dict of them), got {kv!r:.60} "
                                    f"in {attrs!r:.60}", kind="invalid-spec:Case.attrs:type")
    pairs = tuple(tuple(kv) for kv in items)
    given: dict[str, Any] = {}
    for kv in pairs:
        name = kv[0]
        if name in given:
            raise ValueError(f"{rule}'s attribute {name!r} is given twice")
        given[name] = kv[1]
    known = [name for name, _ in signature]
    for name in given:
        if name not in known:
            raise ValueError(f"{rule} has no attribute {name!r}; it takes {sorted(known) or 'none'}")
    if [name for name, _ in pairs] == known and type(attrs) is tuple and all(type(kv) is tuple for kv in attrs):
        full = attrs  # complete and in order: kept, so equal cases share it
    else:
        full = tuple((name, given[name]) if name in given else (name, default) for name, default in signature)
    if type(attrs) is tuple:
        if len(_FULL_ATTRS) >= 20_000:
            _FULL_ATTRS.clear()
        _FULL_ATTRS[rule, id(attrs)] = (attrs, full)
    return full


T = TypeVar("T")


class PerAttrs(dict[tuple[str, int], tuple[Any, T]], Generic[T]):
    """``compute(case)`` for a value that depends on the case's rule and attributes only, worked out
    once per rule and attrs tuple (a sweep's cases share a few hundred attrs tuples).

    Looked up by the tuple's identity, as ``(rule, id(attrs)) -> (attrs, value)``: the entry holds
    the tuple, so its id is not reused while the entry lives, and an equal tuple of another identity
    (``1`` against ``True``, ``0.0`` against ``-0.0``: equal, but typed or written differently) gets
    an entry of its own. Only tuples are kept (other attrs could change); the table empties itself
    when it holds ``limit`` entries."""

    def __init__(self, compute: Callable[[Case], T], limit: int = 20_000) -> None:
        super().__init__()
        self.compute = compute
        self.limit = limit
        memo_table(self)

    def __call__(self, case: Case) -> T:
        attrs = case.attrs
        key = (case.rule, id(attrs))
        hit = self.get(key)
        if hit is not None and hit[0] is attrs:
            return hit[1]
        value = self.compute(case)
        if type(attrs) is tuple:
            if len(self) >= self.limit:
                self.clear()
            self[key] = (attrs, value)
        return value


def _attr_values_of(case: Case) -> tuple[Any, ...]:
    given = dict(case.attrs)
    return tuple(given.get(name, default) for name, default in case.spec.attrs)


_attr_values = PerAttrs(_attr_values_of)
_dumps = json.JSONEncoder(separators=(",", ":")).encode
_TEXTS: dict[tuple[int, Callable[[Any], str]], tuple[Any, str]] = memo_table({})
"""(id(mesh or attrs tuple), how it is written) -> (it, its text); holding it keeps the id its own."""


def _shared_text(obj: Any, render: Callable[[Any], str]) -> str:
    key = (id(obj), render)
    hit = _TEXTS.get(key)
    if hit is not None and hit[0] is obj:
        return hit[1]
    if len(_TEXTS) > 20_000:
        _TEXTS.clear()
    text = render(obj)
    _TEXTS[key] = (obj, text)
    return text


def _mesh_text(mesh: ProcessMesh) -> str:
    return _dumps(mesh.to_json())


def _attrs_text(attrs: tuple[tuple[str, Any], ...]) -> str:
    return _dumps([[k, v] for k, v in attrs])


def _spec_text(spec: DistTensorSpec) -> str:
    """The text of ``spec.to_json()``: its fields but the mesh (the last one) kept per value, the
    mesh's text per mesh."""
    key = (spec.shape, spec.dims_mapping, spec.partial_dims, spec.mesh is None)
    head = _SPEC_HEADS.get(key)
    if head is None:
        data = spec.to_json()
        if spec.mesh is None or len(data) < 2 or next(reversed(data)) != "mesh":
            return _dumps(data)
        del data["mesh"]
        if len(_SPEC_HEADS) > 50_000:
            _SPEC_HEADS.clear()
        head = _SPEC_HEADS[key] = _dumps(data)[:-1] + ',"mesh":'
    return head + _shared_text(spec.mesh, _mesh_text) + "}"


def _spec_str(spec: DistTensorSpec) -> str:
    """``str(spec)``, kept per value (it shows the shape, the mapping, the partial dims and whether
    there is a mesh)."""
    key = (spec.shape, spec.dims_mapping, spec.partial_dims, spec.mesh is None)
    text = _SPEC_STRS.get(key)
    if text is None:
        if len(_SPEC_STRS) > 50_000:
            _SPEC_STRS.clear()
        text = _SPEC_STRS[key] = str(spec)
    return text


def _attrs_str(attrs: tuple[tuple[str, Any], ...]) -> str:
    return " ".join([f"{k}={v!r}" for k, v in attrs])


_SPEC_STRS: dict[tuple[Any, ...], str] = memo_table({})
_SPEC_HEADS: dict[tuple[Any, ...], str] = memo_table({})
"""(shape, dims_mapping, partial dims, no mesh) -> the text of a spec's JSON up to its mesh's."""


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
