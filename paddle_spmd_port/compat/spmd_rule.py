"""``get_phi_spmd_rule`` / ``contains_spmd_rule`` and rule objects that take their arguments the
way Paddle 3.3.1's ``core.SpmdRule`` does, backed by the port's pure rules.

Paddle's binding sorts positional arguments by type: a ``DistTensorSpec`` (or a list of them) is
the next tensor, anything else the next attribute. Attributes are typed from the Python value
(bool ``b``, int ``i``, float ``f``, str, lists) and the rule accepts only its declared type.

Each op family's ``ops/<family>/compat.py`` declares the registry names it serves and what each
method reads (its ``RULES``: tensors in order, then typed attributes); the generic rule::

    name        method           tensors (in order)                         attributes
    replicated  infer_forward    [inputs], [outputs]                        (none)
    replicated  infer_backward   [inputs], [outputs]                        (none)

A name with no backward declared raises RuntimeError (NotFound) from ``infer_backward``, like Paddle.
A slot whose dims_mapping Paddle never reads (the family's ``unread``) answers as Paddle does whatever
mapping it holds: the port is handed a replicated one when it would refuse the one given.

Behaviour, as in Paddle: extra trailing tensors and attributes are ignored; a wrongly typed
attribute raises ``ValueError("(InvalidArgument) Attribute cast error in InferSpmd Context, ...")``,
except an int where a bool is read, which is cast to bool;
a value of no supported type raises ``ValueError("(InvalidArgument) infer_spmd(): argument
(position N) must be int, float, bool or Tensor, ...")``; sharding conflicts raise
NotImplementedError, Paddle's own checks ValueError, unknown rules RuntimeError.
Where Paddle crashes the interpreter (too few arguments, a list where one tensor is expected)
these raise TypeError with the expected signature.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidSpecError, PaddleInvalidArgument, RuleNotFoundError, ShardingConflictError, SpmdError
from ..ops.kit.compat import Method, compat_parts
from ..ops.registry import get_spmd_rule
from ..types import DistTensorSpec as PortSpec
from ..types import ProcessMesh as PortMesh
from ..types import SpmdResult
from .dist_attr import DistTensorSpec, TensorDistAttr
from .replicated import replicated_infer_spmd, replicated_infer_spmd_reverse

INT32 = (-(2 ** 31), 2 ** 31 - 1)

#: C++ type names that Paddle's attribute-cast message prints, by the Python value's type.
CPP_TYPE = {
    "b": "b", "i": "i", "f": "f",
    "str": "NSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
    "list[b]": "St6vectorIbSaIbEE", "list[i]": "St6vectorIiSaIiEE", "list[f]": "St6vectorIfSaIfEE",
    "list[]": "St6vectorIlSaIlEE",
}
PY_TYPE = {"f": "float", "i": "int", "b": "bool"}


def _type_name(value: Any) -> str:
    cls = type(value)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _check_int32(value: int) -> None:
    if not INT32[0] <= value <= INT32[1]:
        raise IndexError(f"(OutOfRange) Integer value {value} exceeds int32 range [{INT32[0]}, {INT32[1]}]")


def attribute_kind(value: Any, position: int) -> str:
    """Paddle's classification of one non-tensor argument (a key of :data:`CPP_TYPE`)."""
    if isinstance(value, bool):
        return "b"
    if isinstance(value, int):
        _check_int32(value)
        return "i"
    if isinstance(value, float):
        return "f"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        if not value:
            return "list[]"
        first = attribute_kind(value[0], position) if isinstance(value[0], (bool, int, float)) else None
        if first is None:
            raise ValueError(f"(InvalidArgument) infer_spmd(): argument (position {position}) must be list of int, "
                             f"float, bool or Tensor, but got {_type_name(value[0])}")
        for index, item in enumerate(value[1:], start=1):
            same = isinstance(item, (bool, int, float)) and attribute_kind(item, position) == first
            if not same:
                raise TypeError(f"(InvalidType) infer_spmd(): argument (position {position + 1}) must be list of "
                                f"{PY_TYPE[first]}, but got {_type_name(item)} at pos {index}")
        return f"list[{first}]"
    raise ValueError(f"(InvalidArgument) infer_spmd(): argument (position {position}) must be int, float, bool or "
                     f"Tensor, but got {_type_name(value)}")


@dataclass(frozen=True)
class Signature:
    """One rule method as compat calls it: the port's function, the family's declaration of what
    Paddle's method reads (:class:`~paddle_spmd_port.ops.kit.compat.Method`: tensor slots, typed
    attributes, the slots it never reads, ...), and ``vector``: its tensors are lists of specs."""

    fn: Callable[..., SpmdResult]
    method: Method
    vector: bool = False

    def describe(self, rule: str, method: str) -> str:
        tensors = [f"[{t}]" if self.vector else t for t in self.method.tensors]
        attrs = [f"{name}: {PY_TYPE[kind]}" for name, kind in self.method.attributes]
        return f"{rule}.{method}({', '.join(tensors + attrs)})"


_PREFIX = {ShardingConflictError: "(Unimplemented) ", PaddleInvalidArgument: "(InvalidArgument) ",
           RuleNotFoundError: "(NotFound) "}


def _paddle_worded(exc: SpmdError) -> SpmdError:
    """The same exception class, its message led by Paddle's error-type tag."""
    message = str(exc)
    if isinstance(exc, InvalidSpecError):
        message = f"(InvalidArgument) paddle_spmd_port rejects this input (Paddle does not check it): {message}"
    else:
        prefix = next((p for cls, p in _PREFIX.items() if isinstance(exc, cls)), "")
        message = message if message.startswith("(") else prefix + message
    return type(exc)(message, kind=exc.kind)


def _is_absent(spec: DistTensorSpec) -> bool:
    return spec.process_mesh().empty() and len(spec.shape) == 1


def _unread_to_port(spec: DistTensorSpec, slot: str, length_read: bool, lend: PortMesh | None) -> PortSpec:
    """The port's spec for a slot whose dims_mapping Paddle never reads: as given when the port
    takes it, else replicated (same shape, mesh and partial dims), which leaves Paddle's answer as
    it is. A length Paddle checks stays wrong, so the port raises Paddle's error for it. A slot
    without a mesh gets ``lend`` (None: the slot may not go mesh-less, and the refusal stands)."""
    port = spec.to_port()
    if length_read and len(port.dims_mapping) != len(port.shape):
        return port  # Paddle's own length check: the port raises it
    try:
        port.check(slot)
    except InvalidSpecError:
        mesh = port.mesh if port.mesh is not None else lend
        if mesh is None:
            return port
        return PortSpec(port.shape, (-1,) * len(port.shape), mesh, port.partial_dims)
    if port.mesh is None and lend is not None:  # a mesh-less 0-D or mapping-less spec: still lent the mesh
        return PortSpec(port.shape, (-1,) * len(port.shape), lend, port.partial_dims)
    return port


class SpmdRule:
    """A registered rule: ``infer_forward(*args)`` / ``infer_backward(*args)`` return
    ``(list_of_input_attrs, list_of_output_attrs)`` of :class:`TensorDistAttr`."""

    def __init__(self, name: str, forward: Signature, backward: Signature | None) -> None:
        self.name, self._forward, self._backward = name, forward, backward

    def __repr__(self) -> str:
        return f"<paddle_spmd_port.compat.SpmdRule {self.name!r}>"

    def infer_forward(self, *args: Any) -> tuple[list[TensorDistAttr], list[TensorDistAttr]]:
        return self._call("infer_forward", self._forward, args)

    def infer_backward(self, *args: Any) -> tuple[list[TensorDistAttr], list[TensorDistAttr]]:
        if self._backward is None:
            raise RuleNotFoundError("(NotFound) Current SpmdRule's backward function is not found, Please make sure "
                                    "that you have registered the rule correctly.")
        return self._call("infer_backward", self._backward, args)

    def _call(self, method: str, sig: Signature, args: tuple[Any, ...]) -> tuple[list[TensorDistAttr],
                                                                                  list[TensorDistAttr]]:
        tensors: list[DistTensorSpec | list[DistTensorSpec]] = []
        attributes: list[tuple[Any, str]] = []
        for position, arg in enumerate(args):
            if isinstance(arg, DistTensorSpec):
                tensors.append(arg)
            elif isinstance(arg, list) and arg and all(isinstance(a, DistTensorSpec) for a in arg):
                tensors.append(list(arg))
            else:
                attributes.append((arg, attribute_kind(arg, position)))
        if len(tensors) < len(sig.method.tensors) or len(attributes) < len(sig.method.attributes):
            raise TypeError(
                f"{sig.describe(self.name, method)} got {len(tensors)} tensor argument(s) and {len(attributes)} "
                f"attribute(s); pass every tensor (DistTensorSpec([0], TensorDistAttr()) for a missing optional one) "
                "and every attribute positionally (Paddle 3.3.1 crashes on too few arguments)")
        tensors = tensors[:len(sig.method.tensors)]
        for slot, tensor in zip(sig.method.tensors, tensors, strict=True):
            if isinstance(tensor, list) and not sig.vector:
                raise TypeError(f"{sig.describe(self.name, method)}: {slot} must be one DistTensorSpec, "
                                "not a list (Paddle 3.3.1 crashes on this)")
        values = []
        for (_, want), (value, kind) in zip(sig.method.attributes, attributes, strict=False):
            if want == "b" and kind == "i":  # Paddle's bool read of the context casts an int attribute
                value = bool(value)
            elif kind != want:
                expected = "bool" if want == "b" else CPP_TYPE[want]  # the bool read words its own message
                raise ValueError(f"(InvalidArgument) Attribute cast error in InferSpmd Context, the input attr type "
                                 f"is `{CPP_TYPE[kind]}`, but the expected attribute type is `{expected}`.")
            values.append(value)
        if sig.vector:
            port_args: list[Any] = [[s.to_port() for s in (t if isinstance(t, list) else [t])] for t in tensors]
        else:
            # a single-tensor slot holds one spec; a list there fails with AttributeError as it always did
            # (not narrowed here, so no new error class appears for that misuse)
            lend = next((m for t in tensors if (m := t.process_mesh().to_port()) is not None), None)  # type: ignore[union-attr]
            meshless = {slot for slot, t in zip(sig.method.tensors, tensors, strict=True)
                        if slot in sig.method.meshless and t.process_mesh().empty()  # type: ignore[union-attr]
                        and not (slot in sig.method.optional and _is_absent(t))}  # type: ignore[arg-type]
            port_args = [None if slot in sig.method.optional and _is_absent(t)  # type: ignore[arg-type]
                         else _unread_to_port(t, slot, slot in sig.method.length_read,  # type: ignore[arg-type]
                                              lend if slot in meshless else None)
                         if slot in sig.method.unread else t.to_port()  # type: ignore[union-attr]
                         for slot, t in zip(sig.method.tensors, tensors, strict=True)]
        try:
            result = sig.fn(*port_args, *values)
        except SpmdError as exc:
            raise _paddle_worded(exc) from None
        inputs = [TensorDistAttr.from_port(a) for a in result.inputs]
        outputs = [TensorDistAttr.from_port(a) for a in result.outputs]
        if sig.vector:
            return inputs, outputs
        answered = sig.method.tensors if sig.method.answered is None else sig.method.answered
        given = dict(zip(sig.method.tensors, tensors, strict=True))
        for side, slots, answers in (("inputs", answered, inputs), ("outputs", sig.method.output_sources, outputs)):
            for attr, slot in zip(answers, slots, strict=False):
                _carry(attr, given[slot]._attr, whole=side in sig.method.whole)  # type: ignore[union-attr]
        if meshless:  # the lent mesh goes back: these answers carry the slot's none
            carried = dict(sig.method.meshless_outputs)
            for slot in meshless:
                if slot in answered:
                    inputs[answered.index(slot)]._mesh = None
                for position in carried.get(slot, ()):
                    outputs[position]._mesh = None
        return inputs, outputs


def _carry(answer: TensorDistAttr, source: TensorDistAttr, whole: bool) -> None:
    """What Paddle's answer keeps of the attr it is built from: the batch_dim, or everything but
    the layout (a whole copy, whose dynamic_dims are filled anew only if the source had none)."""
    answer._batch_dim = source._batch_dim
    if whole:
        answer._chunk_id, answer._annotated, answer._split = source._chunk_id, dict(source._annotated), source._split
        answer._dynamic = list(source._dynamic) or answer._dynamic


def _signature(fn: Callable[..., SpmdResult] | None, method: Method, where: str) -> Signature:
    if fn is None:
        raise ImportError(f"{where}: the port's registry object has no such method")
    return Signature(fn, method)


def _registry() -> dict[str, SpmdRule]:
    """Every family's declared rules (``ops/<family>/compat.py``), then ``replicated``; each takes
    its functions from the port's registry object of the same name."""
    out: dict[str, SpmdRule] = {}
    for family, part in compat_parts():
        for declared in part.rules:
            if declared.name in out:
                raise ImportError(f"ops/{family}/compat.py serves {declared.name!r}, which another family serves")
            rule = get_spmd_rule(declared.name)
            where = f"ops/{family}/compat.py: {declared.name}"
            out[declared.name] = SpmdRule(
                declared.name, _signature(rule.forward, declared.forward, f"{where}.infer_forward"),
                None if declared.backward is None
                else _signature(rule.backward, declared.backward, f"{where}.infer_backward"))
    out["replicated"] = SpmdRule(
        "replicated",
        Signature(replicated_infer_spmd, Method(("inputs", "outputs")), vector=True),
        Signature(replicated_infer_spmd_reverse, Method(("inputs", "outputs")), vector=True))
    return out


RULES: dict[str, SpmdRule] = _registry()


def contains_spmd_rule(name: str) -> bool:
    """True for the rule names this package serves (those Paddle 3.3.1 registers for these ops)."""
    return name in RULES


def get_phi_spmd_rule(name: str) -> SpmdRule:
    try:
        return RULES[name]
    except KeyError:
        raise RuleNotFoundError(
            f"(NotFound) `{name}` Kernel's Spmd rules is not registered.\n  [Hint: paddle_spmd_port.compat "
            f"serves only {', '.join(sorted(RULES))}.]") from None


def rule_names() -> Sequence[str]:
    return tuple(RULES)
