"""Exceptions raised by the port.

Paddle's rules raise two kinds of Python exceptions on input they reject:

* ``NotImplementedError`` for ``(Unimplemented)`` errors, i.e. one tensor axis that two
  inputs shard along different mesh dimensions (:class:`ShardingConflictError`);
* ``ValueError`` for ``(InvalidArgument)`` checks, e.g. a wrong tensor rank
  (:class:`PaddleInvalidArgument`).

The port raises exactly those classes, carrying a short machine-readable ``kind`` so that the
parity comparator can match *what* went wrong, not the wording.

Input that Paddle accepts silently, or that crashes Paddle's process (duplicate mesh dims,
a dims_mapping whose length is not the tensor rank, begin_norm_axis beyond the rank, x without a
mesh, ...), raises :class:`InvalidSpecError`, a ``ValueError`` whose message names the argument
and says what would be valid. The comparator reports those cases in their own class
(``port-rejects-invalid``) and never as a match. With the C module in use,
``DistTensorSpec.check`` raises it as a C subclass of the same name that words its message when
first read and is from then on a plain :class:`InvalidSpecError`; until something reads it,
``type(exc) is InvalidSpecError`` is false (test with ``isinstance``; see ``_speedups.c``).

An argument of the wrong Python type (a list where a ``DistTensorSpec`` belongs, ``None`` or
``"1"`` for ``begin_norm_axis``, ``"abc"`` for ``epsilon``, ...) raises
:class:`ArgumentTypeError`, an :class:`InvalidSpecError` that is also a ``TypeError``, naming the
argument (``kind`` = ``invalid-spec:<argument>:type``). Every rule checks the types of all its
arguments, in signature order, before anything else, so the error names the first wrong one.

An unknown rule key or profile given to ``rule_function`` / ``get_spmd_rule(..., profile=)``
raises :class:`UnknownKeyError`, a :class:`RuleNotFoundError` that is also a ``ValueError``.

These six classes are the only exceptions the rule functions raise (the fuzz test,
``tests/test_fuzz_rules.py`` and ``tools/fuzz.py``, holds them to that).
"""

from __future__ import annotations


class SpmdError(Exception):
    """Base of the port's errors; ``kind`` is a stable short identifier of the failure."""

    kind: str = "error"

    def __init__(self, message: str, *, kind: str | None = None) -> None:
        super().__init__(message)
        if kind is not None:
            self.kind = kind


class ShardingConflictError(SpmdError, NotImplementedError):
    """One tensor axis is sharded along two different mesh dimensions (Paddle: Unimplemented)."""

    kind = "sharding-conflict"


class PaddleInvalidArgument(SpmdError, ValueError):
    """A check that Paddle itself performs failed (Paddle: InvalidArgument -> ValueError)."""

    kind = "invalid-argument"


class InvalidSpecError(SpmdError, ValueError):
    """Input Paddle would accept silently or crash on; the message names the argument and the fix."""

    kind = "invalid-spec"


class RuleNotFoundError(SpmdError, RuntimeError):
    """Mirrors Paddle's ``RuntimeError: (NotFound)`` for unknown rules or a missing infer_backward."""

    kind = "not-found"


class ArgumentTypeError(InvalidSpecError, TypeError):
    """An argument of the wrong Python type; the message names the argument and the type it needs.

    Also a ``TypeError``, so ``except TypeError`` keeps working for callers that expect Python's
    convention."""

    kind = "invalid-spec:type"


class UnknownKeyError(RuleNotFoundError, ValueError):
    """An unknown rule key or profile name (``rule_function``, ``get_spmd_rule(profile=...)``)."""

    kind = "not-found:key"
