"""Paddle's side of the in-rank runner, kept apart from ours.

The runner and the op families' in-rank hooks (``LaunchOp.call`` ...) reach Paddle only through
:class:`PaddleProxy` objects: Paddle's modules as the runner hands them out, and everything a call
into them returns (a tensor, a placement, a layer, a context manager). A proxy forwards each call,
attribute read or write, item, iteration and ``with`` to the object it holds, with every argument
unwrapped, and marks an exception raised inside it with the call's name (:func:`raised_by_paddle`).
So a case's exception is Paddle's exactly when it came out of one of those calls; any other
exception that escapes a case (the runner's own bookkeeping, a hook's own code, the log parser) is
an error of ours, which ends the run as an internal error instead of becoming the case's result.

The exception itself is left as it is (type, message, traceback): a hook that catches Paddle's
``ValueError`` still catches it, and the case's record names the type Paddle raised. Plain values
(``None``, numbers, strings, bytes, numpy's arrays and scalars) come back as they are, lists, tuples
and dicts as containers of proxies. An ``AttributeError`` for the very attribute asked is not
marked: the attribute is absent, which ``hasattr`` asks and a misspelt name of ours is.

Not an import of Paddle: the runner imports it and wraps what it imported (:func:`proxy`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

#: The attribute a marked exception carries: the name of the Paddle call it came out of.
MARK = "_paddle_spmd_port_paddle_call"

_PLAIN = (type(None), bool, int, float, complex, str, bytes)


class PaddleRaised(Exception):
    """Stands in for an exception of Paddle's that cannot carry the mark (no attribute may be set on
    it); its ``__cause__`` is Paddle's exception."""


def raised_by_paddle(exc: BaseException) -> str | None:
    """The name of the Paddle call ``exc`` came out of (``dist.shard_tensor``, ``dist.reshard().numpy``), or None
    when it did not come out of one: then it is an error of ours."""
    name = getattr(exc, MARK, None)
    return name if isinstance(name, str) else None


def _mark(exc: Exception, name: str) -> None:
    """Mark ``exc`` as raised inside the Paddle call ``name`` (a mark already there stays: the innermost
    call is the one that raised); one that cannot carry the mark is raised as a :class:`PaddleRaised`."""
    if raised_by_paddle(exc) is None:
        try:
            setattr(exc, MARK, name)
        except (AttributeError, TypeError):
            stand_in = PaddleRaised(f"{type(exc).__name__}: {exc}")
            setattr(stand_in, MARK, name)
            raise stand_in from exc


def unwrap(value: Any) -> Any:
    """``value`` with every proxy replaced by the object it holds (in lists, tuples and dicts too)."""
    kind = type(value)
    if kind is PaddleProxy:
        return object.__getattribute__(value, "_psp_target")
    if kind is list or kind is tuple:
        return kind(unwrap(v) for v in value)
    if kind is dict:
        return {k: unwrap(v) for k, v in value.items()}
    return value


def proxy(value: Any, name: str) -> Any:
    """What a Paddle call returned, as the runner may hold it: plain values as they are, containers
    of proxies, any other object in a :class:`PaddleProxy` named ``name``."""
    kind = type(value)
    if kind in _PLAIN or kind.__module__.partition(".")[0] == "numpy":
        return value
    if kind is list or kind is tuple:
        return kind(proxy(v, f"{name}[{i}]") for i, v in enumerate(value))
    if kind is dict:
        return {k: proxy(v, f"{name}[{k!r}]") for k, v in value.items()}
    return PaddleProxy(value, name)


def _call(name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` (arguments unwrapped), an exception marked as raised inside ``name``."""
    args, kwargs = unwrap(args), unwrap(kwargs)
    try:
        result = fn(*args, **kwargs)
    except Exception as exc:
        _mark(exc, name)
        raise
    return proxy(result, f"{name}()")


class PaddleProxy:
    """One object of Paddle's (a module, a tensor, a placement, a layer, a bound method, ...) as the
    runner holds it: see the module docstring."""

    __slots__ = ("_psp_name", "_psp_target")

    def __init__(self, target: Any, name: str) -> None:
        object.__setattr__(self, "_psp_target", target)
        object.__setattr__(self, "_psp_name", name)

    def __getattr__(self, attr: str) -> Any:
        name = f"{self._psp_name}.{attr}"
        try:
            value = getattr(self._psp_target, attr)
        except AttributeError as exc:
            if getattr(exc, "name", None) == attr:  # absent (hasattr asks this; a misspelt name of ours)
                raise
            _mark(exc, name)
            raise
        except Exception as exc:
            _mark(exc, name)
            raise
        return proxy(value, name)

    def __setattr__(self, attr: str, value: Any) -> None:
        _call(f"{self._psp_name}.{attr} =", setattr, self._psp_target, attr, value)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _call(self._psp_name, self._psp_target, *args, **kwargs)

    def __getitem__(self, key: Any) -> Any:
        return _call(f"{self._psp_name}[]", lambda t, k: t[k], self._psp_target, key)

    def __iter__(self) -> Iterator[Any]:
        it = _call(f"iter({self._psp_name})", iter, self._psp_target)
        while True:
            try:
                value = _call(f"next({self._psp_name})", next, it)
            except StopIteration:
                return
            yield value

    def __len__(self) -> int:
        return int(_call(f"len({self._psp_name})", len, self._psp_target))

    def __bool__(self) -> bool:
        return bool(_call(f"bool({self._psp_name})", bool, self._psp_target))

    def __enter__(self) -> Any:
        return _call(f"{self._psp_name}.__enter__", type(self._psp_target).__enter__, self._psp_target)

    def __exit__(self, *exc: Any) -> Any:
        return _call(f"{self._psp_name}.__exit__", type(self._psp_target).__exit__, self._psp_target, *exc)

    def __str__(self) -> str:
        return str(_call(f"str({self._psp_name})", str, self._psp_target))

    def __repr__(self) -> str:
        return f"<Paddle's {self._psp_name}: {_call(f'repr({self._psp_name})', repr, self._psp_target)}>"
