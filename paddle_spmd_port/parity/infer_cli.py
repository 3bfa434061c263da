"""``python -m paddle_spmd_port infer RULE ...``: one rule call, port and native side by side.

    python -m paddle_spmd_port infer RULE --mesh 2x3 --x-shape 64,32,1024 --x-mapping 1,-1,-1 [ATTRS]
    python -m paddle_spmd_port infer RULE --mesh 2 --x-shape 8,6,4,4 --x-mapping -1,0,-1,-1 --scale-none
    python -m paddle_spmd_port infer RULE --mesh 2x2 --x-shape 8,6,4 --x-mapping '(0,1),-1,-1'
    python -m paddle_spmd_port infer --backend pir --case-json '{"rule": ...}'   # a report's repro line
    python -m paddle_spmd_port infer --backend pir --policy mirror --case-json '{"rule": ...}'  # a mirror run's
    python -m paddle_spmd_port infer --case-json @one-record.json     # a case or a per-case record

Every tensor argument NAME of the rule takes ``--NAME-shape``, ``--NAME-mapping``,
``--NAME-partial`` (mesh dims, comma separated) and, where optional, ``--NAME-none``. Shapes not
given are derived from x as the rule's family sizes a real call (its grid module's shapes;
docs/ops/<family>.md has each op's examples); mappings not given are replicated. A mapping is a mesh dim or -1
per axis (``0,-1``); a co-sharded axis, split along several mesh dims in order, is written
``(0,1)`` or ``[0,1]`` (``'(0,1),-1,-1'``); the whole list may be in brackets, as reports print it
(``[(0,1),-1,-1]``, or JSON's ``[[0,1],-1,-1]``), so ``[0,1]`` alone is the two-axis mapping 0,1.
``--profile`` picks the rule profile the port answers with (native Paddle is always Paddle's own
rule); ``--policy`` its strictness, as in ``parity`` (a mirror run's repro lines name it).

``--case-json`` takes one JSON object: a case as reports write it (``{"rule", "mesh", "inputs", "attrs"}``,
``"id"`` optional; every attribute once; a co-shard as a nested list; any other, missing or repeated
key or attribute is refused by name), or a per-case record of a report (a line of ``parity-cases.jsonl.gz``, whose
``backend`` then picks the route unless ``--backend`` is given, and whose ``policy``, present when
not strict, the policy unless ``--policy`` is given). ``--case-json @FILE`` reads it
from FILE (gzip or plain; ``@-``: stdin); FILE must hold exactly one record (a jsonl with more
lines is refused: take one out, e.g. ``zcat F | sed -n 3p > one.json``). The route is printed
(``route: ...``), and the verdict is classed as ``parity`` classes it, the Paddle release's known
differences included, so a report's repro line prints the route and the verdict it recorded.

Exit code (:mod:`paddle_spmd_port.runctl`): the verdict class's, as in ``parity``. 0 agree (match,
both-raise-same, port-rejects-invalid, native-varies, known-difference; --no-native: the port
answered or refused); 1 mismatch; 2 arguments that form no case (one line, nothing run; a case the
port refuses is a case, its answer that refusal); 3 not compared (native-crash, not-run, unreachable,
undecodable, release-lacks: Paddle missing, a backend failing, a timeout, a crash, ...), or not
re-checked (an invalid input Paddle answered once whose re-run gave no answer; a mismatch outranks
it): the reason is one line on stderr. 130/143 interrupted.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import re
import sys
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

from ..case import Case, int_range_problem
from ..compare import COMPARED, compare, input_invalid_for
from ..grid import derived_shapes
from ..native.routes import BACKENDS, DEFAULT_BACKEND, add_backend_argument
from ..ops import RULES, RuleSpec
from ..ops.kit.grid import ShapeNotDerivable
from ..ops.kit.strictness import POLICIES
from ..ops.registry import strictness_of
from ..outcome import Outcome, port_outcome
from ..releases import AGREEING, detect_release
from ..runctl.command import run_command
from ..runctl.exits import EXIT_FINDING, EXIT_INCOMPLETE, EXIT_OK, UsageError, prefix
from ..runctl.grammar import (
    MAX_SECONDS,
    ArgumentParser,
    add_policy_argument,
    add_profile_argument,
    integer,
    mesh_shape,
    policy_of,
    real,
    seconds,
)
from ..types import DimsMapping, DistTensorSpec, ProcessMesh, entry_of
from .repro import RECORD_KEYS

PROG = "python -m paddle_spmd_port infer"
#: infer starts its one native worker for one case, so the wait covers Paddle's import as well (parity's
#: 60 s are per answer of a worker already up)
NATIVE_TIMEOUT = 120.0
DEFAULT_MESH = (2, 3)
#: Every attribute any rule declares -> the type of its declared default: the attribute flags are
#: made from the rule specs, so a new op's attributes get flags without an edit here.
ATTR_TYPES: dict[str, type] = {}
for _spec in RULES.values():
    for _name, _default in _spec.attrs:
        ATTR_TYPES.setdefault(_name, type(_default))
ATTR_FLAGS = tuple(ATTR_TYPES)
TENSOR_NAMES = sorted({n for spec in RULES.values() for n in spec.inputs})
CASE_JSON_EXAMPLE = "give a case as a report's repro line prints it (see --help)"


def _flag(name: str) -> str:
    return name.replace("_", "-")


#: The largest integer Paddle holds (shapes, dims_mappings and integer attributes are int64 there).
INT64_MAX = 2**63 - 1


def _ints(text: str, arg: str, example: str = "0,-1") -> tuple[int, ...]:
    """Comma-separated integers (:func:`~..runctl.grammar.integer`); an empty text is none, an empty
    item among others (``8,,6``: a number left out) is refused."""
    items = text.split(",") if text.strip() else []
    if any(not item.strip() for item in items):
        raise UsageError(arg, f"{text!r} has an empty item (a number left out?)",
                         f"give comma-separated integers like {example}")
    try:
        values = tuple(integer(v) for v in items)
    except ValueError:
        raise UsageError(arg, f"{text!r} is not a list of integers", f"give comma-separated integers like {example}"
                         ) from None
    _int64_range(values, arg)
    return values


def _int64_range(values: Sequence[int], arg: str) -> None:
    big = [v for v in values if not -INT64_MAX - 1 <= v <= INT64_MAX]
    if big:
        raise UsageError(arg, f"{big[0]} is beyond int64, the largest integer Paddle holds",
                         f"give integers of magnitude at most {INT64_MAX}")


def _int64(arg: str) -> Any:
    """An argparse ``type``: an integer Paddle can hold (int64)."""
    def parse(text: str) -> int:
        try:
            value = integer(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not -INT64_MAX - 1 <= value <= INT64_MAX:
            raise argparse.ArgumentTypeError(f"{value} is beyond int64, the largest integer Paddle holds; "
                                             f"give an integer of magnitude at most {INT64_MAX}")
        return value
    return parse


MAPPING_VALID = ("give a mesh dim or -1 per axis, comma-separated, e.g. 0,-1; a co-sharded axis as (0,1) or [0,1], "
                 "e.g. '(0,1),-1,-1' (the whole list may be in [...], as reports print it)")
_ENTRY = re.compile(r"\s*(?:(?P<open>[\[(])(?P<members>[^\[\]()]*)(?P<close>[\])])|(?P<int>[+-]?[0-9]+))\s*")


def _outer_brackets(text: str) -> bool:
    """Whether ``text`` is one bracketed group: its opening ``[`` closes at its last character."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if depth == 0:
            return i == len(text) - 1
    return False


def _mapping(text: str, arg: str) -> DimsMapping:
    """A dims_mapping from the command line (see the module docstring): plain ``0,-1`` as
    before, co-shards in ``(..)`` or ``[..]``, the whole list optionally in ``[..]``."""
    body = text.strip()
    if not any(ch in body for ch in "[]()"):
        return _ints(text, arg)
    if body.startswith("[") and body.endswith("]") and _outer_brackets(body):
        body = body[1:-1]
    bad = UsageError(arg, f"{text!r} is not a dims_mapping", MAPPING_VALID)
    out: list[int | tuple[int, ...]] = []
    pos = 0
    while body.strip():
        m = _ENTRY.match(body, pos)
        if m is None or (m["open"] is not None and "[(".index(m["open"]) != "])".index(m["close"])):
            raise bad
        if m["int"] is not None:
            out.append(int(m["int"]))
        else:
            members = [v.strip() for v in m["members"].split(",")]
            if not all(re.fullmatch(r"[+-]?[0-9]+", v) for v in members):
                raise bad
            out.append(entry_of(_ints(m["members"], arg)))
        pos = m.end()
        if pos == len(body):
            break
        if body[pos] != ",":
            raise bad
        pos += 1
    return tuple(out)


def _float(text: str) -> float:
    """A float attribute: what ``float`` reads (``inf``, ``-inf`` and ``nan`` included: p_norm's porder
    takes infinities), but not ``1_0`` or other scripts' digits, which ``float`` reads as numbers too."""
    try:
        return real(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; give a number like 1e-5 (or inf, -inf)"
                                         ) from None


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes"):
        return True
    if text.lower() in ("0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")


def _rules_help() -> str:
    """``infer --help``'s list of rules: each with its tensors and attributes, one line a rule."""
    lines = ["rules (infer RULE --help lists that rule's flags):"]
    for key, spec in RULES.items():
        tensors = ", ".join(f"{n}?" if n in spec.optional else n for n in spec.inputs)
        attrs = ", ".join(k for k, _ in spec.attrs) or "no attributes"
        lines.append(f"  {key:<22} {tensors}; {attrs}")
    return "\n".join(lines + ["  (? = optional: --NAME-none passes None)"])


def build_parser(rule: str | None = None) -> argparse.ArgumentParser:
    """The parser; ``--help`` shows ``rule``'s tensor and attribute flags only (none without a rule:
    the list of rules instead). Every rule's flags are parsed either way, so that a flag of another
    rule gets the line saying what this rule takes."""
    spec = RULES.get(rule) if rule else None
    shown_tensors = set(spec.inputs) if spec else set()
    shown_attrs = {k for k, _ in spec.attrs} if spec else set()

    def shown(help_text: str, visible: bool) -> str:
        return help_text if visible else argparse.SUPPRESS

    description = __doc__ if spec is None else textwrap.fill(
        f"{rule} (op {spec.op}): tensors {', '.join(spec.inputs)}"
        f"{' (optional: ' + ', '.join(sorted(spec.optional)) + ')' if spec.optional else ''}; attributes "
        f"{', '.join(k for k, _ in spec.attrs) or 'none'}. Shapes not given are derived from x, mappings not "
        "given are replicated (infer --help: every rule and the common flags).", width=100)
    ap = ArgumentParser(prog=PROG, description=description, epilog=_rules_help() if spec is None else None,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rule", nargs="?", choices=list(RULES), metavar="RULE",
                    help="the rule key (listed below; infer RULE --help: its flags), or give --case-json"
                    if spec is None else f"the rule key ({rule} here; infer --help lists every rule)")
    ap.add_argument("--case-json", metavar="JSON|@FILE",
                    help="a case as JSON (what a report's repro line carries), or a report's per-case record (its "
                         "backend is the route unless --backend is given, its policy the policy unless --policy is "
                         "given); @FILE reads one record from FILE (gzip or plain, @- stdin; more than one record is "
                         "refused); replaces RULE and every case flag")
    ap.add_argument("--mesh", type=mesh_shape, default=None,
                    help=f"mesh shape, sizes joined by x, e.g. 2 or 2x3 (default {'x'.join(map(str, DEFAULT_MESH))}); "
                         "process ids 0..n-1")
    add_profile_argument(ap, help="the rule profile the port answers with (default paddle = Paddle 3.3.1; "
                                  "pr72918, proposed: see the README); native Paddle is always Paddle's own rule")
    add_policy_argument(ap)
    ap.add_argument("--no-native", action="store_true",
                    help="the port's answer only (no Paddle needed; not with --backend)")
    add_backend_argument(ap, "the native route to ask (default: the rule's primary route; not with --no-native)")
    ap.add_argument("--timeout", type=seconds, default=None,
                    help=f"seconds a silent native worker is given before it is killed (> 0, at most "
                         f"{MAX_SECONDS:.0f}; default {NATIVE_TIMEOUT:.0f}: its start is part of it; not with "
                         "--no-native)")
    for name in TENSOR_NAMES:
        flag, visible = _flag(name), name in shown_tensors
        ap.add_argument(f"--{flag}-shape", dest=f"{name}_shape", metavar="N,N,...",
                        help=shown(f"shape of {name}, comma-separated sizes (default: derived from x)"
                                   if name != "x" else "shape of x, comma-separated sizes (required unless "
                                   "--case-json)", visible))
        ap.add_argument(f"--{flag}-mapping", dest=f"{name}_mapping", metavar="D,D,...",
                        help=shown(f"dims_mapping of {name}: a mesh dim or -1 per axis, a co-shard as (0,1) "
                                   "(default: replicated)", visible))
        ap.add_argument(f"--{flag}-partial", dest=f"{name}_partial", metavar="D,...",
                        help=shown(f"mesh dims {name} is Partial(SUM) over, comma-separated (default: none)",
                                   visible))
        ap.add_argument(f"--{flag}-none", dest=f"{name}_none", action="store_true",
                        help=shown(f"pass None for {name} (not with the other --{flag}-* flags)",
                                   visible and spec is not None and name in spec.optional))
    defaults = dict(spec.attrs) if spec else {}
    for name, kind in ATTR_TYPES.items():
        flag = f"--{_flag(name)}"
        convert: Callable[[str], Any] = (_bool if kind is bool else _int64(flag) if kind is int
                                          else _float if kind is float else str)
        metavar = {bool: "true|false", int: "N", float: "X"}.get(kind, "TEXT")
        default = f"default: {defaults[name]!r}, the rule's" if name in defaults else "default: the rule's"
        ap.add_argument(flag, dest=name, type=convert, metavar=metavar,
                        help=shown(f"attribute {name} ({default})", name in shown_attrs))
    return ap


def _tensor_flags(args: argparse.Namespace, name: str) -> list[str]:
    """The ``--NAME-*`` flags given for tensor ``name``."""
    return [f"--{_flag(name)}-{part}" for part in ("shape", "mapping", "partial", "none")
            if getattr(args, f"{name}_{part}") not in (None, False)]


def _case_flags(args: argparse.Namespace) -> list[str]:
    """The flags given that describe a case (everything but --case-json, --no-native, --backend)."""
    given = [f"--{_flag(k)}" for k in ATTR_FLAGS if getattr(args, k) is not None]
    given += [flag for name in TENSOR_NAMES for flag in _tensor_flags(args, name)]
    return given + (["--mesh"] if args.mesh is not None else [])


def _derived_shape(rule: str, name: str, x_shape: tuple[int, ...], attrs: dict) -> tuple[int, ...]:
    """The family's shape for ``name`` given x's (a reduction's out is smaller than x); x's own shape
    for an x-shaped tensor the family does not list."""
    if name == "x":
        return x_shape
    try:
        shapes, why = derived_shapes(rule, x_shape, attrs), f"{rule} cannot derive it from x's shape"
    except ShapeNotDerivable as e:
        shapes, why = {}, str(e)
    if name in shapes:
        return shapes[name]
    if name in ("out", "out_grad"):
        return x_shape
    raise UsageError(f"--{_flag(name)}-shape", why, f"give --{_flag(name)}-shape")


def case_from_args(args: argparse.Namespace) -> Case:
    return case_and_record(args)[0]


def case_and_record(args: argparse.Namespace) -> tuple[Case, dict[str, Any]]:
    """The case the arguments describe and, for ``--case-json`` given a report's per-case record,
    that record (its route and verdict)."""
    if args.case_json is not None:
        given = _case_flags(args) + ([args.rule] if args.rule else [])
        if given:
            raise UsageError("--case-json", f"given together with {' '.join(given)}",
                             "give either --case-json or a RULE with its flags")
        return record_from_json(args.case_json)
    return _case_from_flags(args), {}


def _case_from_flags(args: argparse.Namespace) -> Case:
    if args.rule is None:
        raise UsageError("RULE", "missing", "give a rule (one of " + ", ".join(RULES) + ") or --case-json")
    spec = RULES[args.rule]
    foreign = [f"--{_flag(k)}" for k in ATTR_FLAGS if getattr(args, k) is not None and k not in dict(spec.attrs)]
    foreign += [flag for name in TENSOR_NAMES if name not in spec.inputs for flag in _tensor_flags(args, name)]
    if foreign:
        takes = ", ".join([f"--{_flag(n)}-*" for n in spec.inputs] + [f"--{_flag(k)}" for k, _ in spec.attrs])
        raise UsageError(foreign[0], f"{args.rule} takes no such argument", f"{args.rule} takes {takes}")
    for name in spec.inputs:  # None and a placement of the same tensor cannot both hold
        given = [f for f in _tensor_flags(args, name) if not f.endswith("-none")]
        if getattr(args, f"{name}_none") and given and name in spec.optional:
            raise UsageError(f"--{_flag(name)}-none", f"contradicts {' '.join(given)} ({name} is either None or a "
                             "tensor)", f"drop --{_flag(name)}-none or drop {' '.join(given)}")
    mesh = ProcessMesh(DEFAULT_MESH if args.mesh is None else args.mesh)  # checked by runctl.grammar.mesh_shape
    attrs = {k: getattr(args, k) for k, _ in spec.attrs if getattr(args, k, None) is not None}
    if args.x_shape is None:
        raise UsageError("--x-shape", "missing", "give the shape of x, e.g. --x-shape 8,6,4,4")
    inputs: list[DistTensorSpec | None] = []
    x_shape: tuple[int, ...] = ()
    for name in spec.inputs:
        flag = _flag(name)
        if getattr(args, f"{name}_none"):
            if name not in spec.optional:
                raise UsageError(f"--{flag}-none", f"{name} is not optional for {args.rule}",
                                 f"optional: {', '.join(sorted(spec.optional)) or 'none'}")
            inputs.append(None)
            continue
        shape_text = getattr(args, f"{name}_shape")
        if shape_text is not None:
            shape = _ints(shape_text, f"--{flag}-shape", "8,6,4,4")
            if any(s < 0 for s in shape):
                raise UsageError(f"--{flag}-shape", f"{shape_text!r} has a negative size", "give sizes >= 0")
        else:
            shape = _derived_shape(args.rule, name, x_shape, attrs)
        if name == "x":
            x_shape = shape
        mapping_text = getattr(args, f"{name}_mapping")
        mapping = _mapping(mapping_text, f"--{flag}-mapping") if mapping_text is not None else (-1,) * len(shape)
        partial_text = getattr(args, f"{name}_partial")
        partial = frozenset(_ints(partial_text, f"--{flag}-partial", "0 or 0,1")) if partial_text else frozenset()
        inputs.append(DistTensorSpec(shape, mapping, mesh, partial))
    return Case(args.rule, mesh, tuple(inputs), tuple(attrs.items()), "cli")


# --------------------------------------------------------------------------- --case-json
def _json_error(problem: str, valid: str = CASE_JSON_EXAMPLE) -> UsageError:
    return UsageError("--case-json", problem, valid)


def _int_list(value: Any, where: str) -> None:
    if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in value):
        raise _json_error(f"{where} is {json.dumps(value)}, not a list of integers")
    big = [v for v in value if not -INT64_MAX - 1 <= v <= INT64_MAX]
    if big:
        raise _json_error(f"{where} holds {big[0]}, beyond int64 (the largest integer Paddle holds)",
                          f"give integers of magnitude at most {INT64_MAX}")


def _mapping_list(value: Any, where: str) -> None:
    """A dims_mapping: integers, a co-sharded axis as a list of integers (``[[0, 1], -1, -1]``)."""
    def entry_ok(v: Any) -> bool:
        if isinstance(v, list):
            return all(isinstance(m, int) and not isinstance(m, bool) for m in v)
        return isinstance(v, int) and not isinstance(v, bool)

    if not isinstance(value, list) or not all(entry_ok(v) for v in value):
        raise _json_error(f"{where} is {json.dumps(value)}, not a list of integers (or of lists of integers for a "
                          "co-sharded axis)")
    # as --NAME-mapping refuses them: an integer Paddle cannot hold forms no case (not an unreachable one)
    _int_list([m for v in value for m in (v if isinstance(v, list) else [v])], where)


#: the keys of a case's JSON object (``Case.to_json``), of its mesh's and of each input's; no other key
#: is read, so any other is refused (a misspelt key would otherwise be dropped unread)
CASE_KEYS = ("rule", "mesh", "inputs", "attrs", "id")
MESH_KEYS = ("shape", "process_ids", "dim_names")
INPUT_KEYS = ("shape", "dims_mapping", "partial_dims", "mesh")


def _check_keys(data: dict[str, Any], keys: tuple[str, ...], where: str, required: tuple[str, ...]) -> None:
    """Refuses a key of ``data`` not among ``keys`` and a missing one of ``required``, naming it."""
    unknown = [k for k in data if k not in keys]
    if unknown:
        raise _json_error(f"{where} has the unknown key {json.dumps(unknown[0])}",
                          f"{where} has the keys {', '.join(keys)}")
    missing = [k for k in required if k not in data]
    if missing:
        raise _json_error(f"{where} has no {', '.join(repr(k) for k in missing)}",
                          f"{where} has the keys {', '.join(keys)}")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict; a key given twice is refused (json.loads would keep the
    last one silently)."""
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise _json_error(f"the key {json.dumps(key)} is given twice in one object", "give each key once")
        data[key] = value
    return data


def _check_mesh_json(mesh: Any, where: str) -> None:
    if not isinstance(mesh, dict):
        raise _json_error(f"{where} is {json.dumps(mesh)}, not an object with shape, process_ids, dim_names")
    _check_keys(mesh, MESH_KEYS, where, MESH_KEYS)
    _int_list(mesh["shape"], f"{where}.shape")
    _int_list(mesh["process_ids"], f"{where}.process_ids")
    if not isinstance(mesh["dim_names"], list) or not all(isinstance(n, str) for n in mesh["dim_names"]):
        raise _json_error(f"{where}.dim_names is {json.dumps(mesh['dim_names'])}, not a list of strings")


def _check_attr_type(rule: str, name: str, value: Any, default: Any) -> None:
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, type(default))
    if not ok:
        raise _json_error(f"attribute {name}={json.dumps(value)} of {rule} is not a {type(default).__name__}")
    if isinstance(value, int) and not isinstance(value, bool):  # as the attribute's flag refuses it
        _int_list([value], f"attribute {name}")


def _record_text(arg: str) -> str:
    """The JSON text ``--case-json`` was given: itself, or ``@FILE``'s one record."""
    if not arg.startswith("@"):
        return arg
    name = arg[1:]
    if not name:
        raise _json_error("@ names no file", "give @FILE (a file holding one record) or @- (stdin)")
    try:
        if name == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(name, "rb") as fh:
                raw = fh.read()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        text = raw.decode()
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise _json_error(f"cannot read {name}: {getattr(exc, 'strerror', None) or exc}",
                          "give @FILE naming a readable file with one record") from None
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) > 1:
        try:  # one object spread over lines (pretty-printed JSON) is one record
            json.loads(text)
            return text
        except ValueError:
            pass
        raise _json_error(f"{name} holds {len(lines):,} lines, not one record",
                          f"take one out first, e.g. zcat -f {name} | sed -n 1p > one.json")
    if not lines:
        raise _json_error(f"{name} is empty", "give a file holding one record")
    return lines[0]


def record_from_json(arg: str) -> tuple[Case, dict[str, Any]]:
    """The case of ``--case-json``'s argument (JSON text or ``@FILE``) and, when it is a report's
    per-case record, the record (else an empty dict); anything else is a usage error."""
    text = _record_text(arg)
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except ValueError as exc:
        raise _json_error(f"not JSON ({getattr(exc, 'msg', exc)}, at character {getattr(exc, 'pos', '?')})"
                          ) from None
    if isinstance(data, dict) and "case" in data and "rule" in data and "mesh" not in data:
        record = data
        unknown = [k for k in record if k not in RECORD_KEYS]
        if unknown:
            raise _json_error(f"the record has the unknown key {json.dumps(unknown[0])}",
                              "give a record as a report wrote it (a line of a cases file), or its case alone")
        if record.get("backend") not in (None, *BACKENDS):
            raise _json_error(f"the record's backend is {json.dumps(record.get('backend'))}",
                              f"a route is one of {', '.join(BACKENDS)}")
        if record.get("policy") not in (None, *POLICIES):
            raise _json_error(f"the record's policy is {json.dumps(record.get('policy'))}",
                              f"a policy is one of {', '.join(POLICIES)}")
        case = _case_of(record["case"])
        if record["rule"] != case.rule:  # (a record is one case's: its rule is the case's)
            raise _json_error(f"the record's rule is {json.dumps(record['rule'])} but its case's is "
                              f"{json.dumps(case.rule)}", "give a record as a report wrote it, or its case alone")
        return case, record
    return _case_of(data), {}


def case_from_json(text: str) -> Case:
    """A case from a report's repro JSON (or a per-case record, or ``@FILE``); anything that does
    not form a case is a usage error."""
    return record_from_json(text)[0]


def _case_of(data: Any) -> Case:
    if not isinstance(data, dict):
        raise _json_error(f"a JSON {type(data).__name__}, not an object")
    _check_keys(data, CASE_KEYS, "the case", CASE_KEYS[:4])
    rule = data["rule"]
    if not isinstance(rule, str) or rule not in RULES:
        raise _json_error(f"unknown rule {json.dumps(rule)}", f"choose from {', '.join(RULES)}")
    spec: RuleSpec = RULES[rule]
    _check_mesh_json(data["mesh"], "mesh")
    inputs = data["inputs"]
    if not isinstance(inputs, list) or len(inputs) != len(spec.inputs):
        raise _json_error(f"inputs is {json.dumps(inputs)[:80]}", f"{rule} takes a list of {len(spec.inputs)} "
                          f"inputs ({', '.join(spec.inputs)}), null for an absent one")
    for name, item in zip(spec.inputs, inputs, strict=True):
        if item is None:
            continue
        where = f"inputs[{spec.inputs.index(name)}] ({name})"
        if not isinstance(item, dict):
            raise _json_error(f"{where} is {json.dumps(item)[:80]}, not an object or null")
        _check_keys(item, INPUT_KEYS, where, INPUT_KEYS)
        for key in ("shape", "partial_dims"):
            _int_list(item[key], f"{where}.{key}")
        if any(size < 0 for size in item["shape"]):  # as --NAME-shape: a case's sizes are real ones
            raise _json_error(f"{where}.shape is {json.dumps(item['shape'])}, with a negative size",
                              "give sizes >= 0")
        _mapping_list(item["dims_mapping"], f"{where}.dims_mapping")
        if item["mesh"] is not None:
            _check_mesh_json(item["mesh"], f"{where}.mesh")
    attrs = data["attrs"]
    defaults = dict(spec.attrs)
    if not isinstance(attrs, list) or not all(isinstance(kv, list) and len(kv) == 2 for kv in attrs):
        raise _json_error(f"attrs is {json.dumps(attrs)[:80]}", "give a list of [name, value] pairs")
    seen: set[Any] = set()
    for name, value in attrs:
        if not isinstance(name, str) or name not in defaults:
            raise _json_error(f"{rule} has no attribute {json.dumps(name)}",
                              f"its attributes: {', '.join(defaults) or 'none'}")
        if name in seen:
            raise _json_error(f"attribute {name} is given twice", "give each attribute once")
        seen.add(name)
        _check_attr_type(rule, name, value, defaults[name])
    # every attribute, as every case's JSON carries them (Case holds them all): one left out is
    # refused rather than taken at a default the writer may not have meant
    missing = [name for name in defaults if name not in seen]
    if missing:
        raise _json_error(f"attrs has no {', '.join(missing)} (of {rule})",
                          f"give every attribute of {rule}: {', '.join(defaults)}")
    if not isinstance(data.get("id", ""), str):
        raise _json_error(f"id is {json.dumps(data['id'])}, not a string")
    try:
        return Case.from_json(data)
    except (TypeError, ValueError, KeyError) as exc:  # sizes < 1, negative shapes, process ids, ...
        raise _json_error(" ".join(str(exc).split())[:300]) from None


# --------------------------------------------------------------------------- running
def _show(label: str, case: Case, outcome: Outcome, indent: str = "  ") -> None:
    print(f"{indent[2:]}{label}:")
    if outcome.result is None:
        print(f"{indent}{outcome.answer_text()}")
    else:
        for side, names, attrs in (("in ", case.spec.result_inputs, outcome.result.inputs),
                                   ("out", case.spec.result_outputs, outcome.result.outputs)):
            for name, attr in zip(names, attrs, strict=False):
                print(f"{indent}{side} {name:<15} {str(attr):<22} {' '.join(attr.placements())}")
    if outcome.not_rechecked is not None:  # (an answer's text is its cells above: the mark goes below them)
        print(f"{indent}not re-checked: {outcome.not_rechecked}")
    if outcome.varies is not None:  # Paddle answered from memory it never set: the other run's answer too
        _show("another run of the case, in a fresh process", case, outcome.varies, indent + "  ")


def _glue_negative_values(argv: Sequence[str]) -> list[str]:
    """``--x-mapping -1,0`` -> ``--x-mapping=-1,0`` (argparse would read -1,0 as an option)."""
    out: list[str] = []
    items = list(argv)
    i = 0
    while i < len(items):
        item = items[i]
        nxt = items[i + 1] if i + 1 < len(items) else ""
        if item.startswith("--") and "=" not in item and nxt[:2].lstrip("-")[:1].isdigit() and nxt.startswith("-"):
            out.append(f"{item}={nxt}")
            i += 2
            continue
        out.append(item)
        i += 1
    return out


def _one_line(text: str) -> str:
    """The first line of an exception's text and, when it has more, its last line (the cause)."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return "no reason given"
    return lines[0] if len(lines) == 1 else f"{lines[0].rstrip(':')}: {lines[-1]}"[:400]


def _rule_named(argv: Sequence[str]) -> str | None:
    """The RULE of a command line, for ``--help`` (the first word that is a rule key)."""
    return next((a for a in argv if a in RULES), None)


def _main(argv: Sequence[str]) -> int:
    argv = _glue_negative_values(argv)
    args = build_parser(_rule_named(argv) if {"-h", "--help"} & set(argv) else None).parse_args(argv)
    for given, flag in ((args.backend, "--backend"), (args.timeout, "--timeout")):
        if args.no_native and given is not None:
            raise UsageError(flag, "contradicts --no-native (no native route is asked)",
                             f"drop {flag} for the port alone, or drop --no-native")
    case, record = case_and_record(args)
    policy = policy_of(args.policy or record.get("policy"))
    print(case.describe())
    port = port_outcome(case, args.profile, policy)  # (parity answers with the same call: parity/cli.py tally_group)
    under = [f"{args.profile} profile"] * (args.profile != "paddle") + [f"{policy} policy"] * (policy != "strict")
    _show(f"port ({', '.join(under)})" if under else "port", case, port)
    if port.error is not None and port.error.port_invalid:  # why the port refuses, and what Paddle's op does
        decl = strictness_of(case.rule, port.error.kind)
        print(f"  {decl.text() if decl is not None else f'strict refusal ({port.error.kind}): undeclared'}")
    if args.no_native:
        return EXIT_OK
    backend = args.backend or record.get("backend") or DEFAULT_BACKEND.get(case.rule)
    if backend is None:  # a rule whose family declares no route: nothing to compare with
        sys.stdout.flush()
        print(f"{prefix(PROG)}: no native route reaches {case.rule} (its rule spec declares none; "
              "--no-native shows the port's answer alone)", file=sys.stderr)
        return EXIT_INCOMPLETE
    print(f"route: {backend}" + ("" if args.backend or not record.get("backend") else " (the record's)"))
    beyond = int_range_problem(case)
    info: dict[str, Any] = {}
    if beyond is not None:  # no route can hand Paddle such a case: not asked
        native = Outcome(unreachable=beyond)
    else:
        from ..native.pool import BackendUnavailable, run_native

        try:
            (native,), info = run_native([case], backend=backend, workers=1, timeout=args.timeout or NATIVE_TIMEOUT)
        except (ImportError, BackendUnavailable) as exc:  # (any other error is ours: exit 4)
            sys.stdout.flush()
            print(f"{prefix(PROG)}: native backend {backend} unavailable: {_one_line(str(exc))} "
                  "(--no-native shows the port's answer alone)", file=sys.stderr)
            return EXIT_INCOMPLETE
    _show(f"native ({backend}, Paddle {info.get('version', '?')})", case, native)
    cmp = compare(case.spec, port, native, input_invalid_for(case, port, native))
    if args.profile == "paddle" and cmp.verdict not in AGREEING and info.get("version") not in (None, "not installed"):
        known = detect_release(info["version"], info.get("commit", "")).classify(case, port, native, cmp)
        if known:  # as the sweep classes it (parity/cli.py tally_group): release-lacks is not compared (exit 3)
            cmp = dataclasses.replace(cmp, verdict=known[0], note=known[1])
    recorded = record.get("verdict")
    print(f"verdict: {cmp.verdict} ({cmp.matching_cells}/{cmp.cells} cells equal)"
          + (f"; recorded: {recorded}" if recorded else ""))
    recorded_policy = policy_of(record.get("policy"))
    if recorded and recorded != cmp.verdict and recorded_policy != policy:
        print(f"  not the recorded verdict: the record's run answered under policy {recorded_policy}, this one "
              f"under {policy}")
    elif recorded and recorded != cmp.verdict:
        print("  not the recorded verdict: this run's answers differ from the sweep's (Paddle answers some inputs "
              "from memory it never set, differently from run to run; another port or Paddle would differ too)")
    if cmp.note:
        print(f"  {cmp.note}")
    for diff in cmp.diffs:
        print(f"  {diff}")
    if cmp.verdict == "mismatch":  # (outranks "not re-checked", as in parity)
        return EXIT_FINDING
    if cmp.verdict not in COMPARED:
        sys.stdout.flush()
        print(f"{prefix(PROG)}: not compared ({cmp.verdict}): {_one_line(str(native))}", file=sys.stderr)
        return EXIT_INCOMPLETE
    if native.not_rechecked is not None:  # an answer once, its promised second run none: fails closed as parity
        sys.stdout.flush()
        print(f"{prefix(PROG)}: not re-checked ({cmp.verdict} on one run): the invalid input's re-run gave no "
              f"answer ({_one_line(native.not_rechecked)}), so whether Paddle answers it the same every time is "
              "not known", file=sys.stderr)
        return EXIT_INCOMPLETE
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(PROG, lambda: _main(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
