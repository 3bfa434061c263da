"""Backend: Paddle's exported C++ rule functions, called directly by a small compiled program.

The only route that reaches every C++ rule with every input exactly as given: every rule key
whose family declares Paddle's function (``cpp=`` in ``ops/<family>/__init__.py``; what the other
routes cannot do is said in each family's ``native.py``). A key without one is unreachable here.

``cpp/spmd_caller.cc`` is compiled on first use with ``$CXX`` (default ``g++``) against the
installed wheel's ``paddle/include`` and ``paddle/libs/libphi_core.so`` + ``libcommon.so`` (Paddle
2.6: ``libs/libphi.so`` in GPU wheels, ``base/libpaddle.so`` and libpython in CPU ones; :func:`layout`), into
``$PADDLE_SPMD_PORT_CACHE`` (default ``~/.cache/paddle_spmd_port``), keyed by the source, the
generated dispatch table, the Paddle build and the compiler; nothing is committed. Without a
compiler, or when the build fails, every case is ``unreachable`` with the reason.

Dispatch: before compiling, :func:`generated_sources` writes the program's rule table from the
declared specs (per rule key: the C++ function, its header, its tensor inputs in order and its
attributes with their kinds, :func:`paddle_spmd_port.ops.kit.native.attr_kind`); the source
includes it, so adding an op edits neither the source nor this module. A header this Paddle
lacks leaves its rules out of the table (their cases unreachable); a function declared with
other parameters makes its rule's cases unreachable with the family's reason (``CPP_MISMATCH``).

Paddle itself is never imported here: the program links the wheel's libraries, so it starts in
milliseconds. Requests go over a pipe, one line per case (see the protocol in the C++ source),
written a batch ahead while the replies are read (:func:`exchange`); the program loops over them
in C++. A reply line the protocol does not account for (a mesh of an impossible size, counts that
do not add up, a truncated line) is an ``undecodable`` outcome keeping the line (:func:`outcome_of`),
never an exception. Cases Paddle is known to crash on (:func:`.crash_prone.compiled_may_crash`)
run in a forked child of the C++ program's fork server, a copy of the program taken before any
case ran, so their outcomes do not depend on what ran before them (some corrupt the heap without
dying: whether the child then aborts depended on the program's history before); if the program
still dies, the case in flight gets the crash and a new program takes the rest. The program
builds each distinct input once (by its request text); the requests' text is memoised here per
input and per attrs tuple. The pool (:mod:`.pool`) drives these programs directly, with no Python
worker in between; :class:`CompiledBackend` drives them in this process.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, NamedTuple

from ..case import Case, PerAttrs
from ..ops import FAMILIES, family_part
from ..ops.kit.native import KIND_TOKENS, NativeRoutes, mismatch_reason
from ..outcome import ErrorInfo, Outcome, normalize_message
from ..runctl.signals import signal_text
from ..types import DimsMapping, DistAttr, DistTensorSpec, ProcessMesh, SpmdResult, entry_of, memo_table, mesh_dims_of
from ._paddle import ATTR_KIND, ReduceTypeError, paddle_dir, paddle_version
from .crash_prone import compiled_may_crash as may_crash
from .worker import FIXED_CWD, fixed_environment, fixed_layout_prefix

SOURCE = Path(__file__).with_name("cpp") / "spmd_caller.cc"
#: Where Paddle's wheel keeps the headers declaring the rule functions (under paddle/include).
RULE_HEADERS = "paddle/phi/infermeta/spmd_rules"


def _family_facts() -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """Per rule key with a C++ function: its header and its mismatch reason; and the
    release-marker headers with what their absence means."""
    headers: dict[str, str] = {}
    mismatch: dict[str, str] = {}
    markers: dict[str, str] = {}
    for family in FAMILIES.values():
        native = family_part(family.name, NativeRoutes) or NativeRoutes()
        header = f"{RULE_HEADERS}/{native.cpp_header or family.name + '.h'}"
        reasons = native.cpp_mismatch
        marker = native.cpp_release_marker
        if marker is not None:
            markers[header] = marker
        for spec in family.rules:
            if spec.cpp is not None:
                headers[spec.key] = header
                mismatch[spec.key] = reasons.get(spec.key) or mismatch_reason(spec)
    return headers, mismatch, markers


#: rule key -> the header declaring its C++ function (keys with one only).
HEADER: dict[str, str]
_MISMATCH: dict[str, str]
_RELEASE_MARKERS: dict[str, str]
HEADER, _MISMATCH, _RELEASE_MARKERS = _family_facts()
#: The rule keys whose C++ function the caller calls (each family declares ``cpp=``).
RULES = tuple(HEADER)
_SUM = 0  # phi::ReduceType::kRedSum


def _cpp_string(text: str) -> str:
    """``text`` as a C++ string literal (octal escapes: no hex escape swallows a following digit)."""
    out = []
    for byte in text.encode():
        char = chr(byte)
        out.append(char if 32 <= byte < 127 and char not in '"\\?' else f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


class CppRule(NamedTuple):
    """One entry of the caller's table: a rule key, its C++ function, the header declaring it, its
    tensor inputs in call order, its attributes' kinds in order, and the reason its cases are
    unreachable where this build declares the function with other parameters."""

    key: str
    function: str
    header: str
    inputs: tuple[str, ...]
    kinds: tuple[str, ...]
    mismatch: str


def table_rows() -> list[CppRule]:
    """The table's entries, from the declared specs (every key whose family declares ``cpp=``)."""
    from ..ops import RULES as SPECS

    return [CppRule(key, SPECS[key].cpp or "", HEADER[key], SPECS[key].inputs, ATTR_KIND[key], _MISMATCH[key])
            for key in RULES]


def generated_sources(rows: Iterable[CppRule] | None = None) -> dict[str, str]:
    """The files the caller's source includes, by name: ``spmd_caller_headers.inc`` (the rule
    headers, each where this Paddle has it) and ``spmd_caller_rules.inc`` (per rule key: a call of
    its function with the request's tensors and typed attributes, a fallback where this build's
    function takes other parameters, and the table ``kRuleTable`` the program dispatches from).
    ``rows``: the entries (default :func:`table_rows`, from the declared specs)."""
    rows = table_rows() if rows is None else list(rows)
    guard = {header: f"SPMD_CALLER_HEADER_{i}" for i, header in enumerate(dict.fromkeys(r.header for r in rows))}
    heads = ["// Generated by paddle_spmd_port/native/compiled.py from the op families' specs: do not edit."]
    for header, macro in guard.items():
        heads += [f'#if __has_include("{header}")', f'#include "{header}"', f"#define {macro} 1", "#endif"]
    body = ["// Generated by paddle_spmd_port/native/compiled.py from the op families' specs: do not edit.",
            "// Unqualified calls, found by argument-dependent lookup when instantiated: a function this",
            "// build lacks or declares with other parameters selects the fallback (overload on int/long)."]
    entries = []
    for i, row in enumerate(rows):
        args = [f"in[{n}]" for n in range(len(row.inputs))]
        args += [f"a.{KIND_TOKENS[kind][1]}({n})" for n, kind in enumerate(row.kinds)]
        call = f"{row.function}({', '.join(args)})"
        body += [f"// {row.key}: {row.function}({', '.join([*row.inputs, *row.kinds])})",
                 "template <typename I>",
                 f"auto call_{i}(const I& in, const Attrs& a, int) -> decltype({call}) {{",
                 f"  return {call};",
                 "}",
                 "template <typename I>",
                 f"pd::SpmdInfo call_{i}(const I&, const Attrs&, long) {{",
                 f"  throw Unreachable({_cpp_string(row.mismatch)});",
                 "}"]
        entries += [f"#ifdef {guard[row.header]}",
                    f"    {{{_cpp_string(row.key)}, {len(row.inputs)}, {len(row.kinds)}, "
                    f"[](const Inputs& in, const Attrs& a) {{ return call_{i}(in, a, 0); }}}},",
                    "#endif"]
    body += ["const RuleEntry kRuleTable[] = {", *entries, "    {nullptr, 0, 0, nullptr},  // the end", "};"]
    return {"spmd_caller_headers.inc": "\n".join(heads) + "\n", "spmd_caller_rules.inc": "\n".join(body) + "\n"}


def cache_dir() -> Path:
    base = os.environ.get("PADDLE_SPMD_PORT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "paddle_spmd_port")
    return Path(base)


class BuildError(RuntimeError):
    """The caller cannot be built here; the message says why. ``paddle_lacks_rules`` tells the two
    kinds apart: this Paddle has no such rules (its headers lack them: every case is unreachable,
    a fact about the release), or this machine lacks something (Paddle, a compiler, the caller's
    source, a working build: every case is not run, and the sweep fails closed)."""

    def __init__(self, message: str, paddle_lacks_rules: bool = False) -> None:
        super().__init__(message)
        self.paddle_lacks_rules = paddle_lacks_rules


#: Paddle 2.6's dist_attr.h and process_mesh.h include this generated protobuf header, which its
#: wheels do not ship; the caller never touches the protos (they appear only in the declarations of
#: from_proto/to_proto), so forward declarations stand in for it (:func:`_shims`).
PROTO_HEADER = "paddle/phi/core/distributed/auto_parallel/auto_parallel.pb.h"
_PROTO_SHIM = """// Written by paddle_spmd_port/native/compiled.py: a stand-in for the generated protobuf header this
// Paddle's wheel includes but does not ship. Only the declarations of from_proto/to_proto name these.
#pragma once
namespace phi { namespace distributed { namespace auto_parallel {
class TensorDistAttrProto;
class ProcessMeshProto;
class DeviceMeshProto;
class DeviceProto;
class DeviceCapabilityProto;
class LinkProto;
class LinkCapabilityProto;
class DistributedMapperProto;
}}}
"""


class Layout(NamedTuple):
    """How a Paddle wheel is laid out for the caller: the libraries to link (with their directories,
    also the program's rpath), the macros the source needs and the shims its headers need."""

    name: str
    link: tuple[str, ...]
    rpath: tuple[Path, ...]
    defines: tuple[str, ...]
    shims: dict[str, str]


def _libpython() -> Path | None:
    """This interpreter's shared libpython (Paddle 2.6's CPU wheel keeps phi in the Python extension
    base/libpaddle.so, whose Python symbols the program must then resolve), or None."""
    import sysconfig

    libdir, name = sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("LDLIBRARY")
    if not libdir or not name or not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        return None
    path = Path(libdir) / name
    return path if path.exists() and path.suffix == ".so" else None


def layout(root: Path) -> Layout:
    """Where this wheel keeps phi and how its headers differ (raises :class:`BuildError`):

    * Paddle 3.x: ``libs/libphi_core.so`` (+ ``libcommon.so``);
    * Paddle 2.6, GPU wheel: ``libs/libphi.so`` (+ ``libcommon.so``);
    * Paddle 2.6, CPU wheel: phi inside ``base/libpaddle.so``, the Python extension (+ libpython).

    2.6's headers include a protobuf header the wheel lacks (:data:`PROTO_HEADER`: a shim) and
    declare Paddle's error type in ``phi::enforce`` (``SPMD_CALLER_PHI_ENFORCE``)."""
    include, libs, base = root / "include", root / "libs", root / "base"
    shims: dict[str, str] = {}
    defines: list[str] = []
    if not (include / PROTO_HEADER).exists() and (include / "paddle/phi/core/distributed/auto_parallel"
                                                   / "dist_attr.h").exists():
        if PROTO_HEADER in (include / "paddle/phi/core/distributed/auto_parallel/dist_attr.h").read_text():
            shims[PROTO_HEADER] = _PROTO_SHIM
    enforce = include / "paddle/common/enforce.h"
    if enforce.exists() and "EnforceNotMet" not in enforce.read_text():
        defines.append("SPMD_CALLER_PHI_ENFORCE")
    if (libs / "libphi_core.so").exists():
        return Layout("libphi_core", ("-lphi_core", "-lcommon"), (libs,), tuple(defines), shims)
    if (libs / "libphi.so").exists():
        return Layout("libphi (Paddle 2.6)", ("-lphi", "-lcommon"), (libs,), tuple(defines), shims)
    if (base / "libpaddle.so").exists() and (libs / "libcommon.so").exists():
        python = _libpython()
        if python is None:
            raise BuildError(f"{root}: phi lives in base/libpaddle.so, a Python extension (Paddle 2.6's CPU "
                             "wheel); linking it needs a shared libpython, which this interpreter lacks "
                             "(built without --enable-shared)")
        return Layout("libpaddle (Paddle 2.6)", (f"-L{base}", "-l:libpaddle.so", "-lcommon", f"-L{python.parent}",
                                                 f"-l:{python.name}"),
                      (libs, base, python.parent), tuple(defines), shims)
    raise BuildError(f"{root} is not a usable Paddle install (no libs/libphi_core.so, libs/libphi.so or "
                     "base/libpaddle.so)")


def compile_caller(generated: dict[str, str] | None = None) -> Path:
    """The caller's binary, compiled first if this source/table/Paddle/compiler has none yet.
    ``generated``: the included files (default :func:`generated_sources`)."""
    root = paddle_dir()
    if root is None:
        raise BuildError("paddlepaddle is not installed (pip install paddlepaddle)")
    include, libs = root / "include", root / "libs"
    wheel = layout(root)
    # The release markers are 3.0's: its profile was measured with the caller refused there
    # (docs/releases/3.0.0.md). A 2.6 wheel (phi outside libphi_core) is built with the rule headers
    # it has: the table leaves the others out, and their cases say so.
    for header, floor in _RELEASE_MARKERS.items() if wheel.name == "libphi_core" else ():
        if not (include / header).exists():
            raise BuildError(f"{include} has no {header.removeprefix('paddle/')} ({floor} or no headers)",
                             paddle_lacks_rules=True)
    if not SOURCE.is_file():
        raise BuildError(f"the caller's source {SOURCE} is missing (an install without the package data)")
    cxx = os.environ.get("CXX") or "g++"
    cxx_path = shutil.which(cxx)
    if cxx_path is None:
        raise BuildError(f"no C++ compiler: {cxx!r} is not on PATH (install g++ or set CXX)")
    version = paddle_version()
    generated = generated_sources() if generated is None else generated
    generated = {**generated, **wheel.shims, "defines": " ".join(wheel.defines)}  # (all part of the key)
    key = hashlib.sha256(b"\0".join([SOURCE.read_bytes(), *(f"{name}\0{text}".encode() for name, text in
                                                            sorted(generated.items())),
                                     repr(sorted(version.items())).encode(), str(root).encode(),
                                     cxx_path.encode()])).hexdigest()[:16]
    binary = cache_dir() / f"spmd_caller-{key}"
    if binary.exists():
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    for stale in binary.parent.glob("spmd_caller-*.*"):  # a build killed mid-way (interrupt) left it
        with contextlib.suppress(OSError):
            if time.time() - stale.stat().st_mtime > 900:
                if stale.is_dir():
                    shutil.rmtree(stale)
                else:
                    stale.unlink()
    fd, tmp = tempfile.mkstemp(prefix=binary.name + ".", dir=binary.parent)
    os.close(fd)
    gen_dir = tempfile.mkdtemp(prefix=binary.name + ".", suffix=".inc", dir=binary.parent)
    for name, text in generated.items():
        if name != "defines":
            Path(gen_dir, name).parent.mkdir(parents=True, exist_ok=True)
            Path(gen_dir, name).write_text(text)
    cmd = [cxx_path, "-std=c++17", "-O2", "-w", *(f"-D{d}" for d in wheel.defines), str(SOURCE), f"-I{gen_dir}",
           f"-I{include}", f"-I{include / 'third_party'}", f"-L{libs}", *wheel.link,
           *(f"-Wl,-rpath,{d}" for d in wheel.rpath), "-o", tmp]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=_build_env(cxx_path))
        if done.returncode != 0:
            raise BuildError(f"building the C++ caller failed ({' '.join(cmd)}):\n{done.stderr[-2000:]}")
        os.replace(tmp, binary)  # atomic: concurrent workers may build at the same time
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
        shutil.rmtree(gen_dir, ignore_errors=True)
    return binary


def _build_env(cxx_path: str) -> dict[str, str]:
    """The compiler's environment: this one's, with a PATH where it had none. g++ runs its assembler and
    linker by name, so a process started with no PATH (``env -i``, as a pasted repro line may be) found
    the compiler through Python's default path and then failed at the link ("cannot find 'ld'")."""
    env = dict(os.environ)
    if not env.get("PATH"):
        env["PATH"] = os.pathsep.join(dict.fromkeys([os.path.dirname(cxx_path), "/usr/local/bin", "/usr/bin", "/bin"]))
    return env


# --------------------------------------------------------------------------- request / reply
def _hex(text: str) -> str:
    return text.encode().hex() or "-"


def _unhex(token: str) -> str:
    return "" if token == "-" else bytes.fromhex(token).decode(errors="replace")


def _mesh_tokens(mesh: ProcessMesh | None) -> list[str]:
    if mesh is None:
        return ["-"]
    return [str(mesh.ndim), *map(str, mesh.shape), str(len(mesh.process_ids or ())),
            *map(str, mesh.process_ids or ()), *(_hex(n) for n in mesh.dim_names or ())]


def _tensor_tokens(spec: DistTensorSpec | None) -> str:
    if spec is None:
        return "-"
    mesh = spec.mesh
    # looked up by value (a grid builds a spec object per case, over a few thousand values), with
    # the fields themselves as the key: cheaper than the dataclass's hash and equality in Python
    key = (spec.shape, spec.dims_mapping, spec.partial_dims,
           None if mesh is None else (mesh.shape, mesh.process_ids, mesh.dim_names))
    text = _spec_text.get(key)
    if text is None:
        if len(_spec_text) > _MEMO_LIMIT:
            _spec_text.clear()
        if spec.coshard:  # per axis: how many mesh dims, then those dims in order
            mapping = [str(len(spec.dims_mapping))]
            for entry in spec.dims_mapping:
                members = mesh_dims_of(entry)
                mapping += [str(len(members)), *map(str, members)]
        else:
            mapping = [str(len(spec.dims_mapping)), *map(str, spec.dims_mapping)]
        text = _spec_text[key] = " ".join([
            "M" if spec.coshard else "T", str(len(spec.shape)), *map(str, spec.shape), *mapping,
            str(len(spec.partial_dims)), *map(str, sorted(spec.partial_dims)), *_mesh_tokens(mesh)])
    return text


_MEMO_LIMIT = 50_000  # entries per memo (the grid has ~31,000 distinct specs; random runs more: bounded)
_spec_text: dict[tuple, str] = memo_table({})  # request tokens per input spec (by its field values)
_reply_outcome: dict[bytes, Outcome] = memo_table({})  # parsed replies (many cases share an answer)


def _attr_tokens(kind: str, value: float | str) -> list[str]:
    """An attribute's request tokens, for its kind (:data:`._paddle.ATTR_KIND`)."""
    if kind == "float":
        return ["f", repr(float(value))]
    if kind == "int":
        return ["i", str(int(value))]
    if kind == "str":
        return ["s", _hex(str(value))]
    return ["b", "1" if value else "0"]


def _attr_tokens_of(case: Case) -> str:
    """The request's attribute tokens (kept per attrs tuple: :data:`_attrs_text`)."""
    kinds = ATTR_KIND[case.rule]
    tokens = [str(len(kinds))]
    for kind, value in zip(kinds, case.attr_values(), strict=True):
        tokens += _attr_tokens(kind, value)
    return " ".join(tokens)


_attrs_text = PerAttrs(_attr_tokens_of)


def request_line(case: Case, isolate: bool | None = None) -> str:
    """The request for ``case`` (see the protocol in the C++ source); ``isolate`` is
    ``may_crash(case)``, worked out here when not given."""
    if isolate is None:
        isolate = may_crash(case)
    inputs = case.inputs
    return " ".join([case.rule, "1" if isolate else "0", str(len(inputs)), *map(_tensor_tokens, inputs),
                     _attrs_text(case)])


class _Reply:
    def __init__(self, line: str) -> None:
        self.tokens = line.split()
        self.pos = 0

    def word(self) -> str:
        self.pos += 1
        return self.tokens[self.pos - 1]

    def end(self) -> None:
        """Raise unless every token was read (a reply with words left over is not one the
        protocol writes: its counts do not add up)."""
        if self.pos != len(self.tokens):
            raise ValueError(f"{len(self.tokens) - self.pos} tokens left over after the answer")

    def count(self) -> int:
        """A count (of attrs, axes, mesh dims, ids, ...): an int >= 0 the tokens left can hold."""
        return _count(self.word(), len(self.tokens) - self.pos)

    def ints(self, n: int) -> tuple[int, ...]:
        return tuple(int(self.word()) for _ in range(n))

    def attrs(self) -> list[DistAttr]:
        out: list[DistAttr] = []
        for _ in range(self.count()):
            kind = self.word()
            if kind == "V":
                out += [self.attr() for _ in range(self.count())]
            else:
                out.append(self.attr(kind))
        return out

    def attr(self, kind: str | None = None) -> DistAttr:
        kind = kind or self.word()
        if kind not in ("A", "Q"):
            raise ValueError("malformed reply from the C++ caller")
        head = self.word()
        mesh = None
        if head != "-":
            ndim = _count(head, len(self.tokens) - self.pos)
            start = self.pos
            n_ids = _count(self.tokens[start + ndim], len(self.tokens) - start - ndim - 1)
            self.pos = start + ndim + 1 + n_ids + ndim
            words = self.tokens[start:self.pos]  # shape, n_ids, ids, names
            key: tuple[int | str, ...] = (ndim, *words)
            mesh = _meshes.get(key)
            if mesh is None:
                shape = tuple(int(v) for v in words[:ndim])
                ids = tuple(int(v) for v in words[ndim + 1:ndim + 1 + n_ids])
                mesh = _meshes[key] = ProcessMesh(shape, ids, tuple(_unhex(v) for v in words[ndim + 1 + n_ids:]))
        dims_mapping: DimsMapping
        if kind == "A":
            dims_mapping = self.ints(self.count())
        else:  # an answer holding a co-shard
            axes = [self.ints(self.count()) for _ in range(self.count())]
            dims_mapping = tuple(entry_of(a) for a in axes)
        partial = {}
        for _ in range(self.count()):
            dim, reduce_type = int(self.word()), int(self.word())
            partial[dim] = reduce_type
        odd = {d: r for d, r in partial.items() if r != _SUM}
        if odd:
            raise ReduceTypeError(f"partial reduce type other than SUM (phi::ReduceType values): {odd}")
        return DistAttr.make(dims_mapping, frozenset(partial), mesh)


_meshes: dict[tuple[int | str, ...], ProcessMesh] = {}  # reply tokens of a mesh -> the mesh


def _count(token: str, room: int) -> int:
    """``token`` as a count of items that follow it, each at least one token: a garbage count
    (negative, or more than the ``room`` tokens left) is refused before anything is read by it."""
    n = int(token)
    if not 0 <= n <= room:
        raise ValueError(f"a count of {n} where {room} tokens are left")
    return n


def _joined_attrs(words: list[str], pos: int) -> tuple[tuple[DistAttr, ...], int]:
    """The attrs of a reply's input or output list starting at ``words[pos]``, each attr one word
    (its tokens joined by ","), and the position after them. Attrs are memoised by their word:
    replies are mostly distinct combinations of a few distinct attrs."""
    out: list[DistAttr] = []
    memo = _attr_words
    count = _count(words[pos], len(words) - pos - 1)
    pos += 1
    for _ in range(count):
        word = words[pos]
        pos += 1
        if word == "V":
            members = words[pos + 1:pos + 1 + _count(words[pos], len(words) - pos - 1)]
            pos += 1 + len(members)
        else:
            members = [word]
        for member in members:
            attr = memo.get(member)
            if attr is None:
                if len(memo) > _MEMO_LIMIT:
                    memo.clear()
                reply = _Reply(member.replace(",", " "))
                attr = reply.attr()
                reply.end()
                memo[member] = attr
            out.append(attr)
    return tuple(out), pos


_attr_words: dict[str, DistAttr] = memo_table({})  # an attr's reply word -> the attr


class _Message(Exception):
    """Carries a C++ exception's text so that ErrorInfo sees Paddle's family and message."""


def outcome_of(line: str | bytes) -> Outcome:
    """The outcome a reply line stands for (memoised: outcomes are immutable)."""
    key = line if isinstance(line, bytes) else line.encode()
    outcome = _reply_outcome.get(key)
    if outcome is None:
        if len(_reply_outcome) > _MEMO_LIMIT:
            _reply_outcome.clear()
        outcome = _reply_outcome[key] = _parse_reply(key)
    return outcome


def outcomes_of(lines: list[bytes]) -> list[Outcome]:
    """:func:`outcome_of` of each reply line, in order."""
    memo = _reply_outcome
    out = [memo.get(line) for line in lines]
    if None in out:
        out = [outcome_of(line) if o is None else o for line, o in zip(lines, out, strict=True)]
    return out  # type: ignore[return-value]


def _parse_reply(line: str | bytes) -> Outcome:
    """The outcome of one reply line; a line the protocol does not account for (a garbage mesh,
    a truncated line, counts that do not add up, non-numeric fields, an unknown kind) is an
    ``undecodable`` outcome that keeps the line, never an exception: the run goes on."""
    text = line.decode(errors="replace") if isinstance(line, bytes) else line
    try:
        return _decode_reply(text)
    except Exception as exc:  # whatever the reply made the decoder raise: recorded, with the reply
        return Outcome.unreadable(exc, line)


def _decode_reply(line: str) -> Outcome:
    kind, _, rest = line.partition(" ")
    if kind == "R":
        try:
            if "," in rest:  # one word per attr (the caller's replies)
                words = rest.split()
                inputs, pos = _joined_attrs(words, 0)
                outputs, pos = _joined_attrs(words, pos)
                if pos != len(words):
                    raise ValueError(f"{len(words) - pos} words left over after the answer")
                return Outcome(result=SpmdResult(inputs, outputs))
            reply = _Reply(rest)  # an attr's tokens spaced out, as the protocol allows too
            result = SpmdResult(tuple(reply.attrs()), tuple(reply.attrs()))
            reply.end()
            return Outcome(result=result)
        except ReduceTypeError as exc:
            return Outcome(error=ErrorInfo("ReduceTypeError", str(exc)))
    if kind == "E":
        family, _, message = rest.partition(" ")
        return Outcome(error=ErrorInfo(family, normalize_message(_unhex(message.strip()))))
    if kind == "U":
        return Outcome(unreachable=_unhex(rest.strip()))
    if kind == "C":
        return Outcome(crash=_signal_text(int(rest)))
    raise ValueError(f"unknown reply kind {kind[:20]!r}")


def _signal_text(sig: int) -> str:
    return "exit without an answer" if sig <= 0 else signal_text(sig)


# --------------------------------------------------------------------------- the program
#: Requests handed to the program per write: a batch it loops over without a round trip.
BATCH = 1024
#: Batches encoded ahead of the writes, in the parent's idle moments (the program's start-up).
AHEAD = 16
#: A read shorter than this many bytes is followed by a pause of GATHER_SECONDS before the next one.
GATHER = 1 << 14
GATHER_SECONDS = 0.0005
#: glibc malloc settings for the program: a deep per-thread cache of freed blocks. Paddle's rules
#: allocate and free many small vectors per call; the replies stay the same byte for byte
#: (docs/measurements/2026-12-01-native-notes.md).
MALLOC_TUNABLES = "glibc.malloc.tcache_count=1000"
# (glibc.malloc.hugetlb=1 would move the heap's blocks, and some isolated cases corrupt the heap
# without dying: whether the child then aborts depends on that layout, so it would change outcomes.
# The caller's fork server puts its heap in huge pages itself, with the layout unchanged.)
NO_RULE = "Paddle exports no C++ SPMD rule for {rule} (its dist API falls back to the replicated rule)"


def unavailable(why: BuildError) -> Outcome:
    """Every case's outcome when the caller cannot be built here (see :class:`BuildError`)."""
    if why.paddle_lacks_rules:
        return Outcome(unreachable=f"compiled caller unavailable: {why}")
    return Outcome(not_run=f"backend unavailable: compiled caller: {why}")


def start_program(binary: Path, stderr: int | IO[bytes] = subprocess.DEVNULL,
                  new_session: bool = False, isolating: bool = False, layout: int = 0) -> subprocess.Popen[bytes]:
    """A running ``spmd_caller`` with binary pipes (``layout``: its memory layout, .worker.LAYOUT_ENV;
    ``new_session``: in a process group of its own,
    so that its forked children can be ended with it). ``isolating``: isolated cases will come, so
    the program forks its fork server at start-up (and binds its symbols then, once, instead of in
    every child); without it a server is started when the first one comes."""
    env = dict(os.environ, GLOG_minloglevel="3", FLAGS_call_stack_level="0")
    env["GLIBC_TUNABLES"] = ":".join(t for t in (env.get("GLIBC_TUNABLES"), MALLOC_TUNABLES) if t)
    if isolating:
        env["LD_BIND_NOW"] = "1"
    # started without randomised addresses (.worker.fixed_layout_prefix), its stack where the padded
    # environment puts it; another ``layout`` moves it (.worker.fixed_environment)
    return subprocess.Popen([*fixed_layout_prefix(), str(binary), *(["--isolating"] if isolating else [])],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                            env=fixed_environment(env, layout), cwd=FIXED_CWD, bufsize=0,
                            start_new_session=new_session)


class Silent(Exception):
    """The program gave no reply within the timeout."""


def exchange(proc: subprocess.Popen[bytes], requests: Iterator[str], timeout: float | None = None
             ) -> Iterator[list[bytes]]:
    """Reply lines of ``proc``, in order, a list per read (each line without its newline), while
    its stdin is fed ``requests`` (full duplex: batches of ``BATCH`` requests are written as fast
    as the program takes them, replies read as they come, so neither side waits for the other;
    stdin is closed after the last request). While there is nothing to read or write (the
    program starting up, or busy), up to ``AHEAD`` batches are encoded ahead. Ends when the
    program's stdout does: every request answered, or the program died on the first unanswered
    one. Raises :class:`Silent` when no reply came for ``timeout`` seconds."""
    assert proc.stdin is not None and proc.stdout is not None
    out_fd, in_fd = proc.stdout.fileno(), proc.stdin.fileno()
    os.set_blocking(in_fd, False)
    pending, sent = memoryview(b""), 0
    ahead: deque[bytes] = deque()  # encoded batches not written yet
    exhausted = closed = False

    def encode() -> None:
        nonlocal exhausted
        block = list(itertools.islice(requests, BATCH))
        if block:
            block.append("")  # the last request's newline
            ahead.append("\n".join(block).encode())
        else:
            exhausted = True

    buf = b""
    last = time.monotonic()
    while True:
        if sent == len(pending) and not closed:
            if not ahead and not exhausted:
                encode()
            if ahead:
                pending, sent = memoryview(ahead.popleft()), 0
            elif exhausted:
                closed = True
                proc.stdin.close()
        writing = [in_fd] if sent < len(pending) else []
        spare = not exhausted and len(ahead) < AHEAD  # work for a moment with nothing to read or write
        wait = None if timeout is None else max(0.0, last + timeout - time.monotonic())
        readable, writable, _ = select.select([out_fd], writing, [], 0.0 if spare else wait)
        if not readable and not writable:
            if spare:
                encode()
                continue
            raise Silent(f"no reply within {timeout:g} s")
        if writable:
            try:
                sent += os.write(in_fd, pending[sent:])
            except BlockingIOError:
                pass
            except BrokenPipeError:  # the program died: its stdout ends next
                sent, pending, exhausted, closed = 0, memoryview(b""), True, True
                ahead.clear()
        if readable:
            data = os.read(out_fd, 1 << 18)
            if not data:
                return
            last = time.monotonic()
            lines = (buf + data).split(b"\n") if buf else data.split(b"\n")
            buf = lines.pop()
            if lines:
                yield lines
            if len(data) < GATHER and sent < len(pending):
                # a few replies only: let more gather before the next wake-up (the program has
                # requests in hand meanwhile, so it does not wait)
                time.sleep(GATHER_SECONDS)


def death_text(code: int) -> str:
    """How a program that ended before answering died (its exit status)."""
    return _signal_text(-code) if code < 0 else f"exit code {code}"


class CompiledBackend:
    """Drives ``spmd_caller`` programs in this process; a new one resumes after a crash."""

    def __init__(self) -> None:
        self._binary: Path | None = None
        self._build_error: BuildError | None = None

    def _ready(self) -> BuildError | None:
        """None when the caller can run, else why it cannot."""
        if self._binary is None and self._build_error is None:
            try:
                self._binary = compile_caller()
            except BuildError as exc:
                self._build_error = exc
        return self._build_error

    def run_many(self, cases: Iterable[Case], may_crash: Callable[[Case], bool] | None = None) -> Iterator[Outcome]:
        """Outcomes in order, each yielded as soon as it is known; requests are read from
        ``cases`` a batch ahead of the replies. ``may_crash``: which cases the program runs in a
        forked child (default :func:`may_crash`)."""
        why = self._ready()
        if why is not None:
            for _ in cases:
                yield unavailable(why)
            return
        assert self._binary is not None
        source = iter(cases)
        in_flight: deque[Case] = deque()  # taken from ``source``, not yet answered, in order
        resend: list[Case] = []  # the unanswered cases of a program that died, minus its crash

        def requests() -> Iterator[str]:
            for case in itertools.chain(resend, source):
                in_flight.append(case)
                if case.rule in RULES:
                    yield request_line(case, None if may_crash is None else may_crash(case))

        while True:
            proc = start_program(self._binary)
            try:
                for replies in exchange(proc, requests()):
                    for outcome in outcomes_of(replies):
                        while in_flight[0].rule not in RULES:
                            yield Outcome(unreachable=NO_RULE.format(rule=in_flight.popleft().rule))
                        in_flight.popleft()
                        yield outcome
                code = proc.wait()
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            while in_flight and in_flight[0].rule not in RULES:
                yield Outcome(unreachable=NO_RULE.format(rule=in_flight.popleft().rule))
            if not in_flight:
                return
            in_flight.popleft()  # the program died on it
            yield Outcome(crash=death_text(code))
            resend = list(in_flight)
            in_flight.clear()

    def run(self, case: Case) -> Outcome:
        (outcome,) = self.run_many([case])
        return outcome


_backend = CompiledBackend()


def run(case: Case) -> Outcome:
    return _backend.run(case)


def run_many(cases: Iterable[Case], may_crash: Callable[[Case], bool] | None = None) -> Iterator[Outcome]:
    return _backend.run_many(cases, may_crash)
