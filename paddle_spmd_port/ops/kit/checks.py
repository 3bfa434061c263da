"""The checks shared by several op families, and the one copy of the checks on an answer.

Before it answers, every profile of a rule key runs its family's preamble
(``ops/<family>/checks.py``): one copy per family, so ``paddle``, ``pr72918`` and ``proposed``
raise the same error, with the same message, for the same input. Each preamble wraps the tensors
(:func:`~.tensor.as_input`), checks the argument types (tensors, then attributes, in signature
order), then Paddle's checks in Paddle's order (a PaddleInvalidArgument with its message), then
the port's own (InvalidSpecError, where Paddle crashes or accepts garbage).

Each preamble first tries the common case in one pass: every tensor a spec of the class itself,
on a mesh and valid by its own check (co-shards read as Paddle's getter does), or None where the
signature allows it, every attribute of its usual exact type, and every rank what the op needs.
None of the full checks can raise on such input, so the inputs are built at once. Anything else
takes the full checks in their order: every error, its message and which error comes first are
the full path's by construction (tests/test_preconditions.py: both paths give equal inputs).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ...types import DistTensorSpec, SpmdResult
from .. import RULES
from .tensor import EXACT_ATTR_TYPES, as_input, require_mesh_dims_exist


def input_names(rule_key: str) -> tuple[tuple[str, bool], ...]:
    """(name, optional) per tensor of ``rule_key``, from its declared spec."""
    sig = RULES[rule_key]
    return tuple((name, name in sig.optional) for name in sig.inputs)


#: The exact types an epsilon may have on the fast path.
REAL = EXACT_ATTR_TYPES["epsilon"]


def require_buildable(*named: tuple[str, DistTensorSpec | None]) -> None:
    """Port-only, before Paddle's own checks: a partial dim outside a spec's mesh (or on a spec
    without one) crashes Paddle while it builds the input's dist attr (SIGSEGV), before any rule
    check runs; the spec's own check names it."""
    for name, spec in named:
        if spec is not None and spec.partial_dims and (
                spec.mesh is None or any(not 0 <= p < spec.mesh.ndim for p in spec.partial_dims)):
            spec.check(name)


# --------------------------------------------------------------------------- declaring a rule
RuleFn = Callable[..., SpmdResult]
#: A packed rule's arguments: the tensors in the key's input order (as the caller gave them: the
#: rule's preamble checks them), and the attributes as (name, value) pairs in its attribute order
#: (what the families' preambles take).
Specs = tuple[Any, ...]
Attrs = tuple[tuple[str, Any], ...]
PackedFn = Callable[[Specs, Attrs], SpmdResult]


def rule(key: str, *, packed: bool = False, mesh_of: Sequence[str] = (),
         others: Sequence[str] = ()) -> Callable[[Callable[..., SpmdResult]], RuleFn]:
    """Declare the decorated function as rule ``key`` of its module's profile (``ops/<family>/rules.py``
    is the ``paddle`` profile, ``ops/<family>/<profile>.py`` the others; :mod:`paddle_spmd_port.ops.registry`
    collects them).

    Its parameters are the key's inputs then its attributes, in the declared order; or, ``packed``,
    the function takes ``(specs, attrs)`` (:data:`Specs`, :data:`Attrs`) and the rule's signature,
    defaults included, is built from the key's declaration (:class:`~paddle_spmd_port.ops.spec.RuleSpec`),
    so profiles that share a signature do not write it again.

    With ``others``, the answer is checked once it is built, here and not in each rule: when one of
    ``others`` (inputs besides x) lies on a mesh with another number of dims than x's, or is a spec
    without a mesh, no returned attr may name a mesh dim its own mesh lacks
    (:func:`~.tensor.require_mesh_dims_exist`; ``others`` in the order that error looks for the input
    to blame). ``mesh_of`` names, per returned attr (the key's result inputs, then its outputs), the
    input whose mesh it carries."""
    spec = RULES[key]
    labels = spec.result_inputs + spec.result_outputs
    declared = spec.inputs + tuple(n for n, _ in spec.attrs)
    if others and (len(mesh_of) != len(labels) or not set(mesh_of) | set(others) <= set(spec.inputs)
                   or "x" in others):
        raise TypeError(f"rule {key!r}: mesh_of names one input per returned attr {labels}, others the inputs "
                        "besides x")
    if mesh_of and not others:
        raise TypeError(f"rule {key!r}: mesh_of without others checks nothing")

    def register(fn: Callable[..., SpmdResult]) -> RuleFn:
        names = tuple(inspect.signature(fn).parameters)
        want = ("specs", "attrs") if packed else declared
        if names != want:
            raise TypeError(f"{fn.__qualname__} takes {names}; rule {key!r} wants {want}")
        if not packed and not others:
            fn.rule_key = key  # type: ignore[attr-defined]
            return fn
        owners = tuple(zip(labels, mesh_of, strict=True)) if others else ()
        wrapped = _compiled(fn, key, packed, owners, tuple(others))
        wrapped.rule_key = key  # type: ignore[attr-defined]
        return wrapped

    return register


def _declared_signature(key: str) -> inspect.Signature:
    """The signature of rule ``key`` as declared (:class:`~paddle_spmd_port.ops.spec.RuleSpec`): its
    inputs, then its attributes with their defaults."""
    spec = RULES[key]
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    return inspect.Signature(
        [inspect.Parameter(name, kind, annotation="DistTensorSpec | None" if name in spec.optional
                           else "DistTensorSpec") for name in spec.inputs]
        + [inspect.Parameter(name, kind, default=default, annotation=type(default).__name__)
           for name, default in spec.attrs],
        return_annotation="SpmdResult")


def _compiled(fn: Callable[..., SpmdResult], key: str, packed: bool, owners: tuple[tuple[str, str], ...],
              others: tuple[str, ...]) -> RuleFn:
    """The rule's function: a call of ``fn`` (``packed``: with ``(specs, attrs)``), then the test of
    :func:`rule` when ``others`` is given. It takes what a function with the rule's signature takes
    (``fn``'s own, or the key's declared one when ``packed``, defaults included), and
    ``inspect.signature`` reads that signature."""
    spec = RULES[key]
    signature = _declared_signature(key) if packed else inspect.signature(fn)
    n_inputs, n_params = len(spec.inputs), len(signature.parameters)
    defaults = tuple(p.default for p in signature.parameters.values())
    n_required = defaults.count(inspect.Parameter.empty)  # (they come first)
    attr_names = tuple(name for name, _ in spec.attrs)
    x_at = spec.inputs.index("x") if others else 0
    others_at = tuple(spec.inputs.index(name) for name in others)
    after = _answer_check(spec.inputs, spec.optional, owners, others)

    def complete(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """Every argument's value in signature order: the defaults of those not given, keywords bound."""
        if not kwargs and n_required <= len(args) < n_params:
            return args + defaults[len(args):]
        try:
            arguments = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{fn.__qualname__}() {exc}") from None
        arguments.apply_defaults()
        return arguments.args

    @functools.wraps(fn)
    def rule_fn(*args: Any, **kwargs: Any) -> SpmdResult:
        if kwargs or len(args) != n_params:  # (the usual call gives every argument by position)
            args = complete(args, kwargs)
        result = fn(args[:n_inputs], tuple(zip(attr_names, args[n_inputs:], strict=True))) if packed else fn(*args)
        if others:  # (the inputs come first: an input's place in args is its place among the inputs)
            x_mesh = args[x_at].mesh
            for i in others_at:
                # another input on a mesh of another rank than x's, or on none: the answer is checked
                mesh = x_mesh if args[i] is None else args[i].mesh
                if mesh is None or (mesh is not x_mesh and len(mesh.shape) != len(x_mesh.shape)):
                    return after(result, args[:n_inputs])
        return result

    rule_fn.__signature__ = signature  # type: ignore[attr-defined]
    if packed:
        del rule_fn.__wrapped__  # the signature is the key's, not fn's
        rule_fn.__annotations__ = {name: p.annotation for name, p in signature.parameters.items()}
        rule_fn.__annotations__["return"] = "SpmdResult"
    return rule_fn


def _answer_check(inputs: tuple[str, ...], optional: frozenset[str], owners: tuple[tuple[str, str], ...],
                  others: tuple[str, ...]) -> Callable[[SpmdResult, Specs], SpmdResult]:
    """The rare path: the inputs wrapped again as the rule wrapped them (they passed its checks), then
    :func:`~.tensor.require_mesh_dims_exist`."""

    def after(result: SpmdResult, specs: Specs) -> SpmdResult:
        t = {name: as_input(s, name, optional=name in optional) for name, s in zip(inputs, specs, strict=True)}
        return require_mesh_dims_exist(result, [(label, t[owner]) for label, owner in owners], t["x"],
                                       [t[name] for name in others])

    return after
