"""The ``proposed`` reverse rules answer with the cheaper of two sound answers.

A reverse rule is asked: the inputs are given (x and its parameters) and so are the outputs'
wanted distributions; which inputs should the op run on? Two answers are sound wherever the
family's proposed rules are:

* the proposed reverse answer: the inputs follow the asked outputs (the inputs move);
* the proposed forward answer on the given inputs: the inputs stay as given and the outputs are
  resharded to the asked distributions afterwards (the outputs move).

Which moves fewer bytes depends on the shapes of the call: a norm's output is smaller than x
(p_norm reduces an axis) or as large (layer_norm's out) with smaller statistics. Both are priced
with the reshard cost model (:mod:`paddle_spmd_port.reshard`: Paddle's own choice of reshard
functions, bytes per rank) on the call's own shapes, and the cheaper is returned (a tie keeps the
reverse answer). The profile's table holds the chosen function (``rule_function(key, "proposed")``,
``get_spmd_rule(name, profile="proposed")``, ``PROPOSED_RULES``); the family module's own function is
the reverse answer alone. Where an answer cannot be priced (inputs on different meshes, an attr that does
not fit its tensor, the forward rule raising) the reverse answer stands.

Forward and grad rules are not chosen this way: the only sound alternatives the search
(``oracle --search``) finds cheaper there replicate tensors the rule keeps split, which moves fewer
bytes only where the split tensor is small, and costs every rank the memory and compute of the
whole tensor, which the cost model does not price.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from ...errors import SpmdError
from ...reshard import Step, plan, settle, total_bytes
from ...types import DistTensorSpec, SpmdResult
from ..spec import RuleSpec

RuleFn = Callable[..., SpmdResult]


def price(spec: RuleSpec, given: Mapping[str, DistTensorSpec | None], answer: SpmdResult) -> int | None:
    """Bytes per rank of ``answer``: each given input to the answer's attr, each output to its asked
    distribution (or, not asked, its partial sums reduced: then its shape must be a given input's,
    ``<input>_grad``). None where it cannot be priced."""
    meshes = {s.mesh for s in given.values() if s is not None}
    if len(meshes) != 1:
        return None
    steps: list[Step] = []
    try:
        for name, attr in zip(spec.result_inputs, answer.inputs, strict=True):
            src = given.get(name)
            if src is not None:
                steps += plan(src.shape, src, attr, src.mesh)  # type: ignore[arg-type]
        for name, attr in zip(spec.result_outputs, answer.outputs, strict=True):
            asked = given.get(name)
            if asked is not None:
                steps += plan(asked.shape, attr, asked, asked.mesh)  # type: ignore[arg-type]
            elif attr.partial_dims:
                base = given.get(name.removesuffix("_grad")) if name.endswith("_grad") else None
                if base is None:
                    return None
                steps += settle(base.shape, attr, base.mesh)  # type: ignore[arg-type]
    except ValueError:
        return None
    return total_bytes(steps)


def cheaper_reverse(spec: RuleSpec, reverse: RuleFn, forward_spec: RuleSpec, forward: RuleFn) -> RuleFn:
    """``reverse`` answering the cheaper of its own answer and ``forward``'s on the given inputs."""
    signature = inspect.signature(reverse)
    attr_names = [name for name, _ in forward_spec.attrs]

    def chosen(*args: Any, **kwargs: Any) -> SpmdResult:
        answer = reverse(*args, **kwargs)
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return answer
        bound.apply_defaults()
        values = dict(bound.arguments)
        given = {n: values.get(n) for n in spec.inputs}
        if any(s is not None and not isinstance(s, DistTensorSpec) for s in given.values()):
            return answer
        mine = price(spec, given, answer)
        if mine is None:
            return answer
        try:
            other = forward(*(given[n] for n in forward_spec.inputs), *(values[n] for n in attr_names))
        except (SpmdError, ValueError, TypeError, NotImplementedError, RuntimeError):
            return answer  # the forward rule refuses these inputs: the reverse answer stands
        theirs = price(spec, given, other)
        return other if theirs is not None and theirs < mine else answer

    chosen.__name__ = getattr(reverse, "__name__", "reverse")
    chosen.__doc__ = reverse.__doc__
    chosen.__signature__ = signature  # type: ignore[attr-defined]
    for attr in ("rule_key", "__module__", "__qualname__"):
        if hasattr(reverse, attr):
            setattr(chosen, attr, getattr(reverse, attr))
    return chosen


def usable(reverse_spec: RuleSpec, forward_spec: RuleSpec) -> bool:
    """The forward rule answers for the reverse rule's returned attrs, name for name, and takes
    attributes the reverse rule has."""
    reverse_attrs = {name for name, _ in reverse_spec.attrs}
    return (forward_spec.result_inputs == reverse_spec.result_inputs
            and forward_spec.result_outputs == reverse_spec.result_outputs
            and set(forward_spec.inputs) <= set(reverse_spec.inputs)
            and {name for name, _ in forward_spec.attrs} <= reverse_attrs)


__all__ = ["cheaper_reverse", "price", "usable"]
