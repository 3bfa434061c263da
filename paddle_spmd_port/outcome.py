"""What a backend made of a case: a result, an error, a crash, an answer it could not read,
"can't express this", or "not run".

    status        field        meaning
    result        result       the rule answered
    error         error        the rule raised (family + normalised message)
    crash         crash        Paddle's process died on the case (signal or exit code)
    undecodable   undecodable  Paddle answered, but the harness cannot read the answer as one
                               (a mesh of an impossible size, a truncated or malformed reply line,
                               non-numeric fields, ...): why, and the raw reply in ``raw``. Never a
                               finding by itself, never compared (see paddle_spmd_port/compare.py)
    unreachable   unreachable  this route cannot express the case, or this Paddle has no such
                               rule (a fact about Paddle: the PIR op rejects a layout, sizes
                               beyond the int64 it holds, ...)
    not-run       not_run      the run gave no answer, for a reason of this machine or run: Paddle
                               or a compiler missing, a worker that timed out or kept failing, an
                               interrupt. Never a finding about Paddle, never compared.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import InvalidSpecError, SpmdError
from .types import DistAttr, SpmdResult, memo_table

if TYPE_CHECKING:
    from .case import Case

#: Exception families compared between backends, most specific first.
FAMILIES = ("NotImplementedError", "ValueError", "RuntimeError", "TypeError", "IndexError", "OSError")

_PREFIX = re.compile(r"^\s*\((?:InvalidArgument|Unimplemented|NotFound|PreconditionNotMet|InvalidType|OutOfRange)\)\s*")
_SUFFIX = re.compile(r"\s*\(at [^)]*\)\s*$", re.S)


def normalize_message(message: str) -> str:
    """Paddle's message without the ``(InvalidArgument)`` prefix, hints and ``(at file:line)``."""
    text = message.strip()
    for marker in ("\n  [Hint:", "[Hint:", "\n\n---", "\n---"):
        cut = text.find(marker)
        if cut > 0:
            text = text[:cut]
    lines = [ln for ln in text.splitlines() if ln.strip()]
    # Paddle puts the summary last after a C++ traceback; keep the line that carries the error type
    for ln in reversed(lines):
        if _PREFIX.match(ln):
            text = ln
            break
    text = _PREFIX.sub("", text.strip())
    return _SUFFIX.sub("", text).strip()


def family_of(exc: BaseException) -> str:
    for name in FAMILIES:
        if any(cls.__name__ == name for cls in type(exc).__mro__):
            return name
    return type(exc).__name__


@dataclass(frozen=True)
class ErrorInfo:
    family: str
    """``ValueError``, ``NotImplementedError``, ... (see :data:`FAMILIES`)."""
    message: str
    """Normalised message (see :func:`normalize_message`)."""
    port_invalid: bool = False
    """True for the port's own :class:`InvalidSpecError` (input Paddle does not validate)."""
    kind: str = ""

    @classmethod
    def from_exception(cls, exc: BaseException) -> ErrorInfo:
        kind = exc.kind if isinstance(exc, SpmdError) else ""
        return cls(family_of(exc), normalize_message(str(exc)), isinstance(exc, InvalidSpecError), kind)

    def __str__(self) -> str:
        return f"{self.family}: {self.message}"


@dataclass(frozen=True)
class Outcome:
    result: SpmdResult | None = None
    error: ErrorInfo | None = None
    crash: str | None = None
    """How the native process died, e.g. ``signal 11 (SIGSEGV)``."""
    unreachable: str | None = None
    """Why this backend cannot express the case (not a failure of the rule)."""
    not_run: str | None = None
    """Why no answer was obtained (backend unavailable, timeout, interrupt)."""
    undecodable: str | None = None
    """Why Paddle's answer could not be read (the decoder's complaint)."""
    raw: str | None = None
    """The raw answer that could not be read (a reply line, or the text of Paddle's objects), at
    most :data:`RAW_KEPT` characters."""
    varies: Outcome | None = None
    """Another run's outcome of the same case, in a fresh process, that differs from this one: Paddle
    answered from memory it never set (set by the native pool's re-run, :func:`native.pool.run_native`;
    both answers are kept, the first run's in the other fields)."""
    not_rechecked: str | None = None
    """Why the second run promised for an input invalid for its op gave no answer (the native pool's
    re-run timed out, its workers kept failing, ...): this answer was not checked for stability. A fact
    of this run, not of Paddle's answer: shown by ``str``, counted by the parity report, never written
    by :meth:`to_json` (equal answers stay equal texts)."""

    @property
    def status(self) -> str:
        if self.not_run is not None:
            return "not-run"
        if self.crash is not None:
            return "crash"
        if self.undecodable is not None:
            return "undecodable"
        if self.unreachable is not None:
            return "unreachable"
        if self.error is not None:
            return "error"
        return "result"

    def answer_text(self) -> str:
        """This run's answer alone, as words (:meth:`__str__` adds the marks of its re-run)."""
        if self.not_run is not None:
            return f"not run: {self.not_run}"
        if self.crash is not None:
            return f"native crashed: {self.crash}"
        if self.undecodable is not None:
            return f"native answer undecodable: {self.undecodable}; raw reply {(self.raw or '')[:200]!r}"
        if self.unreachable is not None:
            return f"unreachable: {self.unreachable}"
        if self.error is not None:
            return f"raises {self.error}"
        return _result_text(self.result)

    def __str__(self) -> str:
        text = self.answer_text()
        if self.not_rechecked is not None:
            text += f" || not re-checked: {self.not_rechecked}"
        return text if self.varies is None else f"{text} || another run: {self.varies.answer_text()}"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"status": self.status}
        if self.result is not None:
            data["result"] = self.result.to_json()
        if self.error is not None:
            data["error"] = {"family": self.error.family, "message": self.error.message,
                             "port_invalid": self.error.port_invalid, "kind": self.error.kind}
        if self.crash is not None:
            data["crash"] = self.crash
        if self.unreachable is not None:
            data["unreachable"] = self.unreachable
        if self.not_run is not None:
            data["not_run"] = self.not_run
        if self.undecodable is not None:
            data["undecodable"] = self.undecodable
            data["raw"] = self.raw
        if self.varies is not None:
            data["varies"] = self.varies.to_json()
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Outcome:
        err = data.get("error")
        return cls(
            result=SpmdResult.from_json(data["result"]) if "result" in data else None,
            error=ErrorInfo(err["family"], err["message"], err.get("port_invalid", False), err.get("kind", ""))
            if err else None,
            crash=data.get("crash"),
            unreachable=data.get("unreachable"),
            not_run=data.get("not_run"),
            undecodable=data.get("undecodable"),
            raw=data.get("raw"),
            varies=cls.from_json(data["varies"]) if "varies" in data else None,
        )

    @classmethod
    def unreadable(cls, why: BaseException | str, raw: object) -> Outcome:
        """The outcome of an answer the decoder could not read: ``why`` (its exception, or a
        sentence) and the raw answer (text, bytes, or objects whose text is kept)."""
        if isinstance(why, BaseException):
            why = f"{type(why).__name__}: {' '.join(str(why).split())[:300]}"
        return cls(undecodable=why, raw=raw_text(raw))


RAW_KEPT = 4000
"""Characters of an undecodable raw answer kept in the outcome (a garbage reply can be long)."""


def raw_text(raw: object) -> str:
    """The text of a raw answer, never raising (its objects may be as broken as the answer):
    bytes decoded (undecodable bytes escaped), anything else through ``str`` (``repr`` if that
    fails), cut to :data:`RAW_KEPT` characters with the length said."""
    try:
        text = raw.decode("utf-8", "backslashreplace") if isinstance(raw, (bytes, bytearray)) else \
            raw if isinstance(raw, str) else str(raw)
    except Exception as exc:  # a broken object's text: say so, keep going
        try:
            text = repr(raw)
        except Exception:  # (its repr too)
            text = f"<{type(raw).__name__} whose text raised {type(exc).__name__}>"
    if len(text) > RAW_KEPT:
        text = text[:RAW_KEPT] + f"... ({len(text):,} characters)"
    return text


def _result_text(result: SpmdResult | None) -> str:
    """``str(result)``, each attr's text kept per attr (the rules' answers share interned attrs)."""
    if type(result) is not SpmdResult:
        return str(result)
    return ("in: " + " ".join([_attr_text(a) for a in result.inputs]) + " | out: "
            + " ".join([_attr_text(a) for a in result.outputs]))


def _attr_text(attr: DistAttr) -> str:
    hit = _ATTR_TEXTS.get(id(attr))
    if hit is not None and hit[0] is attr:
        return hit[1]
    if len(_ATTR_TEXTS) > 50_000:
        _ATTR_TEXTS.clear()
    text = str(attr)
    _ATTR_TEXTS[id(attr)] = (attr, text)
    return text


_ATTR_TEXTS: dict[int, tuple[DistAttr, str]] = memo_table({})
"""id(attr) -> (it, its text); holding it keeps the id its own."""


def port_outcome(case: Case, profile: str = "paddle", policy: str = "strict") -> Outcome:
    """The port backend: call the pure rule (under the strictness ``policy``), turn any exception into
    an Outcome."""
    try:
        return Outcome(result=case.call_port(profile, policy))
    except (SpmdError, ValueError, NotImplementedError, RuntimeError, TypeError) as exc:
        return Outcome(error=ErrorInfo.from_exception(exc))
