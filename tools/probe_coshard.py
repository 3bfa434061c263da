"""Measure how the installed Paddle answers co-sharded inputs (one tensor axis split over several mesh dims).

    .venv/bin/python tools/probe_coshard.py                       # every family, report in reports/coshard/
    .venv/bin/python tools/probe_coshard.py --families collapse,pir --out /tmp/cs

Measurement only, for issue 14 ("Co-sharded inputs"): nothing here changes the port. Families:

    collapse   TensorDistAttr.multi_dims_mapping -> dims_mapping on many meshes (which mesh dim survives)
    registry   core.get_phi_spmd_rule: each rule key a family's co-shard probe names for the registry
               (``NativeRoutes.coshard_probe`` in ops/<family>/native.py: x's rank, attributes, keys),
               through the registry name the family declares, with x co-sharded on every axis, every
               order of 2 (and 3 on 2x2x2) mesh dims, on meshes 2x2, 2x3, 3x2, 2x2x2
    other      the same rules with another input co-sharded (each input after x)
    edges      a partial dim on a co-shard member, a mesh dim listed twice, empty lists, size-1 mesh dims,
               out-of-range mesh dims, a list shorter than the rank (x, or out for a reverse rule)
    pir        PIR static build: shard_tensor with Shard(d, shard_order=k) placements, then the ops the
               probes name (their builders: ``NativeRoutes.pir_ops``); whether a PIR dist attribute can
               hold a co-shard at all
    dynamic    dygraph on one process: shard_tensor on a 2x2 mesh, then each probe's functional call

The tensors' other shapes come from each family's grid plan (``input_shapes``), every axis 12 long.

Paddle is imported only in child processes (``--child FAMILY``, hidden). Each child runs its family's probes
in order and prints one JSON line per finished probe; Paddle's log lines (glog, on fd 2) are attributed to the
probe whose marker preceded them. A child that dies (Paddle may abort) loses only the probe in flight, which is
recorded with the signal; the parent restarts the child after it. Output: ``OUT/coshard.json`` (every probe)
and ``OUT/coshard.md`` (tables). Exit 0 when every family ran, 3 when a child timed out, 2 on bad usage.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from paddle_spmd_port.grid import input_shapes
from paddle_spmd_port.ops import FAMILIES as OP_FAMILIES
from paddle_spmd_port.ops import REGISTRY_NAMES, RULES, family_part
from paddle_spmd_port.ops.kit.native import PROBE_SIZE, CoshardProbe, NativeRoutes
from paddle_spmd_port.runctl.command import run_command
from paddle_spmd_port.runctl.exits import EXIT_INCOMPLETE, EXIT_OK, UsageError
from paddle_spmd_port.runctl.grammar import ArgumentParser, path_text, seconds
from paddle_spmd_port.runctl.paths import check_output_dir
from paddle_spmd_port.runctl.signals import Interrupted, add_detail, write_partial

FAMILIES = ("collapse", "registry", "other", "edges", "pir", "dynamic")
MARK = "@@PROBE "
Probe = tuple[str, Callable[[], dict[str, Any]]]


# --------------------------------------------------------------------------- pure helpers (no Paddle)
def orders(ndim: int) -> list[tuple[int, ...]]:
    """Every ordered list of 2 distinct mesh dims, and of 3 on a mesh of 3 dims or more."""
    out: list[tuple[int, ...]] = list(itertools.permutations(range(ndim), 2))
    if ndim >= 3:
        out += list(itertools.permutations(range(ndim), 3))
    return out


def predicted_survivor(shape: tuple[int, ...], members: tuple[int, ...]) -> int:
    """The issue's claim: the largest mesh dim wins; among equal sizes the first listed."""
    best = members[0]
    for m in members[1:]:
        if shape[m] > shape[best]:
            best = m
    return best


def mesh_text(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


# --------------------------------------------------------------------------- child side (imports Paddle)
def _child(family: str, start: int) -> int:
    import warnings

    warnings.filterwarnings("ignore")
    probes = _probes(family)
    for i, (pid, fn) in enumerate(probes):
        if i < start:
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        os.write(2, f"\n{MARK}{i} {pid}\n".encode())
        try:
            rec = fn()
        except Exception as exc:  # a probe's Python-level error is a finding, recorded as such
            rec = {"probe_error": f"{type(exc).__name__}: {str(exc).strip()[:600]}"}
        sys.stderr.flush()
        os.write(2, f"\n{MARK}end\n".encode())
        rec.update(index=i, id=pid)
        print(json.dumps(rec), flush=True)
    return 0


def _paddle() -> Any:
    import paddle

    return paddle


def _mesh(shape: tuple[int, ...]) -> Any:
    import numpy as np
    import paddle.distributed as dist

    ids = np.arange(int(np.prod(shape))).reshape(shape).tolist()
    return dist.ProcessMesh(ids, dim_names=[f"d{i}" for i in range(len(shape))])


def _attr(shape: tuple[int, ...], rank: int, multi: Any = None, partial: list[int] | None = None,
          partial_first: bool = False) -> Any:
    """A static-API TensorDistAttr on a mesh of ``shape``; ``multi`` None means replicated."""
    from paddle.distributed.auto_parallel.static.dist_attribute import TensorDistAttr

    a = TensorDistAttr()
    a.process_mesh = _mesh(shape)
    a.dims_mapping = [-1] * rank
    if partial and partial_first:
        a._set_partial_dims(partial)
    if multi is not None:
        a.multi_dims_mapping = multi
    if partial and not partial_first:
        a._set_partial_dims(partial)
    return a


def _attr_json(a: Any) -> dict[str, Any]:
    return {"dm": list(a.dims_mapping), "multi": [list(x) for x in a.multi_dims_mapping],
            "partial": sorted(a._partial_dims()) if a._is_partial() else []}


def _spec(shape: tuple[int, ...], attr: Any) -> Any:
    from paddle.distributed.auto_parallel.static.dist_attribute import DistTensorSpec

    return DistTensorSpec(list(shape), attr)


def _flat(items: Any) -> list[Any]:
    out: list[Any] = []
    for item in items:
        out.extend(item if isinstance(item, list) else [item])
    return out


N = PROBE_SIZE


class Probed(NamedTuple):
    """One rule key a family's :class:`CoshardProbe` names: its inputs in call order with their
    shapes, and the attribute values passed after them (the signature's, with the probe's overrides)."""

    names: tuple[str, ...]
    shapes: dict[str, tuple[int, ...]]
    attrs: tuple[Any, ...]


def _probed(family: str, key: str) -> Probed:
    probe = _coshard_probe(family)
    assert probe is not None
    spec = RULES[key]
    attrs = {name: probe.attrs.get(name, default) for name, default in spec.attrs}
    shapes = input_shapes(key, (N,) * probe.x_rank, attrs)
    return Probed(spec.inputs, shapes, tuple(attrs.values()))


def _coshard_probe(family: str) -> CoshardProbe | None:
    native = family_part(family, NativeRoutes)
    return native.coshard_probe if native is not None else None


def _probed_families() -> dict[str, CoshardProbe]:
    """family -> its co-shard probe, for the families that declare one (ops/<family>/native.py)."""
    return {f: probe for f in OP_FAMILIES if (probe := _coshard_probe(f)) is not None}


def _registry_route(key: str) -> tuple[str, str]:
    """(registry name, method) Paddle's registry reaches ``key`` by, from the declared names."""
    for reg in REGISTRY_NAMES.values():
        if reg.in_paddle and key in (reg.forward, reg.backward):
            return reg.name, "infer_forward" if reg.forward == key else "infer_backward"
    raise ValueError(f"{key}: no registry name of Paddle's reaches it")


#: registry rule key -> (input names, shapes, attributes), from each family's co-shard probe.
REGISTRY_RULES: dict[str, Probed] = {key: _probed(f, key) for f, probe in _probed_families().items()
                                     for key in probe.registry}
MESHES = ((2, 2), (2, 3), (3, 2), (2, 2, 2))


def _registry_call(rule: str, mesh: tuple[int, ...], name: str, multi: Any, partial: list[int] | None = None,
                   partial_first: bool = False) -> dict[str, Any]:
    """Call one registry rule with input ``name`` carrying ``multi`` (and ``partial``), the rest replicated."""
    from paddle.framework import core

    names, shapes, attrs = REGISTRY_RULES[rule]
    registry_name, method = _registry_route(rule)
    rec: dict[str, Any] = {"rule": rule, "mesh": mesh_text(mesh), "input": name, "multi_in": multi,
                           "partial_in": partial or []}
    try:
        attr = _attr(mesh, len(shapes[name]), multi, partial, partial_first)
        rec["built"] = _attr_json(attr)
    except Exception as exc:
        rec["build_error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
        return rec
    def call(given: Any) -> Any:
        specs = [_spec(shapes[n], given if n == name else _attr(mesh, len(shapes[n]))) for n in names]
        return getattr(core.get_phi_spmd_rule(registry_name), method)(*specs, *attrs)

    try:
        raw = call(attr)
    except Exception as exc:
        rec["rule_error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
        return rec
    rec["inputs"] = [_attr_json(a) for a in _flat(raw[0])]
    rec["outputs"] = [_attr_json(a) for a in _flat(raw[1])]
    # the same call with the collapsed mapping set as a plain dims_mapping: is the answer the same?
    try:
        plain = _attr(mesh, len(shapes[name]))
        plain.dims_mapping = rec["built"]["dm"]
        if rec["built"]["partial"]:
            plain._set_partial_dims(rec["built"]["partial"])
        ref = call(plain)
        cells = [(a["dm"], a["partial"]) for a in rec["inputs"] + rec["outputs"]]
        ref_cells = [(a["dm"], a["partial"]) for a in (_attr_json(b) for b in _flat(ref[0]) + _flat(ref[1]))]
        rec["same_as_collapsed"] = cells == ref_cells
    except Exception as exc:
        rec["same_as_collapsed"] = f"reference call failed: {type(exc).__name__}"
    return rec


def _collapse(mesh: tuple[int, ...], members: tuple[int, ...]) -> dict[str, Any]:
    a = _attr(mesh, 3, [list(members), [], []])
    got = list(a.dims_mapping)[0]
    pred = predicted_survivor(mesh, members)
    return {"mesh": mesh_text(mesh), "members": list(members), "survivor": got,
            "predicted": pred, "agrees": got == pred, "multi_after": [list(x) for x in a.multi_dims_mapping]}


def _edge(label: str, rule: str, mesh: tuple[int, ...], name: str, multi: Any, partial: list[int] | None,
          partial_first: bool) -> dict[str, Any]:
    return dict(_registry_call(rule, mesh, name, multi, partial, partial_first), label=label)


def _probes(family: str) -> list[Probe]:
    out: list[Probe] = []
    if family == "collapse":
        meshes: tuple[tuple[int, ...], ...] = (
            (2, 2), (2, 3), (3, 2), (2, 4), (4, 2), (3, 3), (2, 2, 2), (2, 3, 2), (3, 2, 2), (2, 2, 3),
            (4, 3, 2), (2, 3, 4), (3, 3, 2), (2, 3, 3), (2, 2, 2, 2), (2, 3, 4, 5))
        for mesh in meshes:
            for members in orders(len(mesh)):
                out.append((f"collapse {mesh_text(mesh)} {list(members)}",
                            functools.partial(_collapse, mesh, members)))
    elif family == "registry":
        for rule, (_, shapes, _) in REGISTRY_RULES.items():
            rank = len(shapes["x"])
            for mesh in MESHES:
                for members in orders(len(mesh)):
                    for axis in range(rank):
                        multi = [list(members) if a == axis else [] for a in range(rank)]
                        out.append((f"{rule} {mesh_text(mesh)} x axis {axis} {list(members)}",
                                    functools.partial(_registry_call, rule, mesh, "x", multi)))
    elif family == "other":
        for rule, (names, shapes, _) in REGISTRY_RULES.items():
            for name in names[1:]:
                rank = len(shapes[name])
                for mesh in MESHES:
                    for members in orders(len(mesh)):
                        for axis in range(rank):
                            multi = [list(members) if a == axis else [] for a in range(rank)]
                            out.append((f"{rule} {mesh_text(mesh)} {name} axis {axis} {list(members)}",
                                        functools.partial(_registry_call, rule, mesh, name, multi)))
    elif family == "edges":
        cases: list[tuple[str, tuple[int, ...], Any, list[int] | None, bool]] = [
            ("partial on a co-shard member (partial set after)", (2, 2), [[0, 1], [], []], [1], False),
            ("partial on a co-shard member (partial set first)", (2, 2), [[0, 1], [], []], [1], True),
            ("partial on the surviving member (partial set after)", (2, 3), [[0, 1], [], []], [1], False),
            ("partial on the dropped member (partial set after)", (2, 3), [[0, 1], [], []], [0], False),
            ("partial on a non-member mesh dim", (2, 2, 2), [[0, 1], [], []], [2], False),
            ("mesh dim listed twice in one axis", (2, 2), [[0, 0], [], []], None, False),
            ("mesh dim listed twice in one axis (3 entries)", (2, 2, 2), [[0, 1, 0], [], []], None, False),
            ("mesh dim in a co-shard and on another axis", (2, 2), [[0, 1], [1], []], None, False),
            ("mesh dim on two axes (no co-shard)", (2, 2), [[0], [0], []], None, False),
            ("empty list for the whole mapping", (2, 2), [], None, False),
            ("empty list on every axis", (2, 2), [[], [], []], None, False),
            ("list shorter than the rank", (2, 2), [[0, 1]], None, False),
            ("size-1 mesh dim listed first", (1, 2), [[0, 1], [], []], None, False),
            ("size-1 mesh dim listed second", (1, 2), [[1, 0], [], []], None, False),
            ("size-1 mesh dim listed first (2x1)", (2, 1), [[1, 0], [], []], None, False),
            ("size-1 mesh dim listed second (2x1)", (2, 1), [[0, 1], [], []], None, False),
            ("two size-1 mesh dims", (1, 1), [[0, 1], [], []], None, False),
            ("size-1 among three", (2, 1, 2), [[1, 0, 2], [], []], None, False),
            ("mesh dim out of range", (2, 2), [[0, 2], [], []], None, False),
            ("negative mesh dim in a co-shard", (2, 2), [[-1, 0], [], []], None, False),
            ("-1 alone in an axis list", (2, 2), [[-1], [], []], None, False),
        ]
        for label, mesh, multi, partial, first in cases:
            for rule in REGISTRY_RULES:
                rank = len(REGISTRY_RULES[rule].shapes["x"])
                mu = multi if not multi or len(multi) != 3 else multi + [[]] * (rank - 3)
                # a reverse rule's own tensor is the forward's output
                name = "out" if RULES[rule].direction == "reverse" and "out" in RULES[rule].inputs else "x"
                out.append((f"edge [{label}] {rule} {name} {mesh_text(mesh)} {mu} partial={partial}",
                            functools.partial(_edge, label, rule, mesh, name, mu, partial, first)))
    elif family == "pir":
        out += _pir_probes()
    elif family == "dynamic":
        out += _dynamic_probes()
    return out


# --------------------------------------------------------------------------- PIR
def _placements(mesh: tuple[int, ...], axis: int, members: tuple[int, ...]) -> list[Any]:
    """Shard(axis, shard_order=k) on the k-th listed mesh dim, Replicate elsewhere."""
    import paddle.distributed as dist

    pl: list[Any] = [dist.Replicate() for _ in mesh]
    for k, m in enumerate(members):
        pl[m] = dist.Shard(axis, shard_order=k)
    return pl


def _pir_ops() -> dict[str, Probed]:
    """PIR builder -> (input names, shapes, attributes), from each family's co-shard probe."""
    out: dict[str, Probed] = {}
    for family, probe in _probed_families().items():
        native = family_part(family, NativeRoutes)
        assert native is not None
        out.update({native.pir_ops[key]: _probed(family, key) for key in probe.pir})
    return out


PIR_OPS = _pir_ops()


def _pir_value(prog_state: dict[str, Any], shape: tuple[int, ...], mesh: tuple[int, ...],
               placements: list[Any] | None) -> Any:
    import paddle.distributed as dist

    paddle = _paddle()
    k = prog_state["n"] = prog_state["n"] + 1
    dtype = paddle.pir.core.convert_np_dtype_to_dtype_("float32")
    d = paddle._pir_ops.data(f"in{k}", list(shape), dtype, paddle.framework.core.Place())
    d.stop_gradient = True
    if placements is None:
        placements = [dist.Replicate() for _ in mesh]
    return dist.shard_tensor(d, _mesh(mesh), placements)


def _pir_attr_json(attr: Any) -> dict[str, Any]:
    t = attr.as_tensor_dist_attr()
    return {"dm": list(t.dims_mapping), "partial": sorted(t.partial_dims), "placements": str(t.placements)}


def _in_pir(fn: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    paddle = _paddle()
    with paddle.pir_utils.IrGuard():
        prog = paddle.static.Program()
        with paddle.static.program_guard(prog):
            return fn({"n": 0})


def _pir_value_probe(mesh: tuple[int, ...], axis: int, members: tuple[int, ...]) -> dict[str, Any]:
    def body(st: dict[str, Any]) -> dict[str, Any]:
        v = _pir_value(st, (N, N, N), mesh, _placements(mesh, axis, members))
        t = v.dist_attr()
        return {"mesh": mesh_text(mesh), "axis": axis, "members": list(members),
                "value_dm": list(t.dims_mapping), "value_placements": str(t.placements),
                "last_listed_mesh_dim": max(members), "survivor": list(t.dims_mapping)[axis]}
    return _in_pir(body)


def _pir_op_probe(op: str, mesh: tuple[int, ...], name: str, axis: int, members: tuple[int, ...]) -> dict[str, Any]:
    def body(st: dict[str, Any]) -> dict[str, Any]:
        from paddle import _C_ops

        names, shapes, attrs = PIR_OPS[op]
        args = [_pir_value(st, shapes[n], mesh, _placements(mesh, axis, members) if n == name else None)
                for n in names]
        rec: dict[str, Any] = {"op": op, "mesh": mesh_text(mesh), "input": name, "axis": axis,
                               "members": list(members), "value_dm": list(args[names.index(name)].dist_attr()
                                                                           .dims_mapping)}
        try:
            built = getattr(_C_ops, op)(*args, *attrs)
        except Exception as exc:
            rec["build_error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
            return rec
        first = built[0] if isinstance(built, (tuple, list)) else built
        o = first.get_defining_op()
        rec["op_name"] = o.name()
        rec["inputs"] = [_pir_attr_json(a) for a in o.dist_attr.operands()]
        rec["outputs"] = [_pir_attr_json(a) for a in o.dist_attr.results()]
        return rec
    return _in_pir(body)


def _pir_attribute_probe() -> dict[str, Any]:
    """Can a PIR TensorDistAttribute hold a co-shard? Try a nested dims_mapping."""
    from paddle.base.libpaddle import pir

    rec: dict[str, Any] = {}
    pm = _mesh((2, 2))
    dm: Any
    for label, dm in (("nested [[0,1],[],[]]", [[0, 1], [], []]), ("flat [0,-1,-1]", [0, -1, -1])):
        try:
            a = pir.create_tensor_dist_attribute(pm, dm, {})
            rec[label] = f"created: dims_mapping {list(a.dims_mapping)}"
        except Exception as exc:
            rec[label] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}"
    rec["signature"] = (pir.create_tensor_dist_attribute.__doc__ or "").strip().splitlines()[0]
    return rec


def _pir_probes() -> list[Probe]:
    out: list[Probe] = [("pir create_tensor_dist_attribute with a nested mapping", _pir_attribute_probe)]
    for mesh in MESHES:
        for members in orders(len(mesh)):
            for axis in range(3):
                out.append((f"pir value {mesh_text(mesh)} axis {axis} {list(members)}",
                            functools.partial(_pir_value_probe, mesh, axis, members)))
    for op, (names, shapes, _) in PIR_OPS.items():
        for name in names:
            if name != "x" and name != "out_grad" and len(shapes[name]) > 1:
                continue
            for mesh in ((2, 2), (2, 3), (3, 2), (2, 2, 2)):
                for members in ([(0, 1), (1, 0)] if len(mesh) == 2 else [(0, 1), (2, 0), (0, 1, 2), (2, 1, 0)]):
                    for axis in range(len(shapes[name])):
                        out.append((f"pir {op} {mesh_text(mesh)} {name} axis {axis} {list(members)}",
                                    functools.partial(_pir_op_probe, op, mesh, name, axis, members)))
    return out


# --------------------------------------------------------------------------- dynamic (dygraph, one process)
def _dyn(kind: str, members: tuple[int, ...], axis: int) -> dict[str, Any]:
    from types import SimpleNamespace

    import paddle.distributed as dist

    paddle = _paddle()
    api = SimpleNamespace(paddle=paddle, dist=dist, F=paddle.nn.functional)
    probe = _probed_families()[kind]
    assert probe.dynamic is not None
    mesh = _mesh((2, 2))
    rec: dict[str, Any] = {"kind": kind, "members": list(members), "axis": axis,
                           "world_size": dist.get_world_size(), "rank": dist.get_rank()}
    shape = [N] * probe.x_rank
    x = paddle.randn(shape)
    try:
        dx = dist.shard_tensor(x, mesh, _placements((2, 2), axis, members))
    except Exception as exc:
        rec["shard_error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
        return rec
    rec["x_placements"] = str(dx.placements)
    rec["x_local_shape"] = list(dx._local_value().shape)
    try:
        y = probe.dynamic(api, mesh, dx)
    except Exception as exc:
        text = " ".join(ln.strip() for ln in str(exc).strip().splitlines()[:3])
        rec["op_error"] = f"{type(exc).__name__}: {text[:400]}"
        return rec
    rec["out_placements"] = str(y.placements)
    rec["out_local_shape"] = list(y._local_value().shape)
    return rec
    rec["out_placements"] = str(y.placements)
    rec["out_dims_mapping"] = list(y.dist_attr.dims_mapping)
    rec["out_multi"] = [list(v) for v in y.dist_attr.multi_dims_mapping]
    rec["out_local_shape"] = list(y._local_value().shape)
    return rec


def _dynamic_probes() -> list[Probe]:
    out: list[Probe] = []
    for kind, probe in _probed_families().items():
        if probe.dynamic is None:
            continue
        for members in ((0, 1), (1, 0)):
            for axis in (0, 1):
                out.append((f"dynamic {kind} 2x2 x axis {axis} {list(members)}",
                            functools.partial(_dyn, kind, members, axis)))
    return out


# --------------------------------------------------------------------------- parent side
def _split_logs(stderr: str) -> dict[int, list[str]]:
    """Paddle's log lines per probe index (W/E/F glog lines and Python warnings)."""
    logs: dict[int, list[str]] = {}
    cur: int | None = None
    for line in stderr.splitlines():
        if line.startswith(MARK):
            rest = line[len(MARK):]
            cur = None if rest == "end" else int(rest.split(" ", 1)[0])
            continue
        if cur is not None and line.strip():
            text = line.strip()
            if text[:1] in "WEF" and "] " in text:
                text = text.split("] ", 1)[1]
            logs.setdefault(cur, []).append(text[:300])
    return logs


def run_family(family: str, timeout: float) -> tuple[list[dict[str, Any]], bool]:
    """Every probe of ``family``, restarting the child after a crash; (records, complete)."""
    records: list[dict[str, Any]] = []
    start, complete = 0, True
    env = dict(os.environ, GLOG_v="0", FLAGS_call_stack_level="0")
    while True:
        try:
            proc = subprocess.run([sys.executable, __file__, "--child", family, "--start", str(start)],
                                  capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired as exc:
            records.append({"family": family, "index": start, "child_timeout": timeout,
                            "stdout_tail": (exc.stdout or b"")[-300:].decode(errors="replace")
                            if isinstance(exc.stdout, bytes) else str(exc.stdout or "")[-300:]})
            return records, False
        logs = _split_logs(proc.stderr)
        last = start - 1
        for line in proc.stdout.splitlines():
            if not line.startswith("{"):
                continue
            rec = json.loads(line)
            rec["family"] = family
            rec["log"] = logs.get(rec["index"], [])
            records.append(rec)
            last = rec["index"]
        if proc.returncode == 0:
            return records, complete
        crashed = last + 1
        marks = [ln for ln in proc.stderr.splitlines() if ln.startswith(f"{MARK}{crashed} ")]
        if not marks:  # died before any probe started: give up on the family
            records.append({"family": family, "index": crashed, "child_failed": proc.returncode,
                            "stderr_tail": proc.stderr[-800:]})
            return records, False
        records.append({"family": family, "index": crashed, "id": marks[0].split(" ", 2)[2],
                        "crash": proc.returncode, "log": logs.get(crashed, [])[-6:]})
        start = crashed + 1


def _dm(r: dict[str, Any], side: str) -> str:
    return " ".join(str(a["dm"]).replace(" ", "") + (f"P{a['partial']}" if a["partial"] else "")
                    for a in r.get(side, []))


def render(records: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [f"# Co-shard probes: Paddle {meta['paddle']}", "",
             f"Command: `{meta['command']}`; {len(records)} probes in {meta['seconds']:.0f} s.", ""]
    by = {f: [r for r in records if r.get("family") == f] for f in FAMILIES}
    crashes = [r for r in records if "crash" in r or "child_failed" in r or "child_timeout" in r]
    lines += [f"Crashed/failed probes: {len(crashes)}", ""]
    for r in crashes:
        lines.append(f"- {r.get('id', r.get('index'))}: exit {r.get('crash', r.get('child_failed'))} "
                     f"{'; '.join(r.get('log', []))[:300]}")
    if by["collapse"]:
        agree = sum(1 for r in by["collapse"] if r.get("agrees"))
        lines += ["", "## collapse: multi_dims_mapping [[members],[],[]] -> dims_mapping[0]", "",
                  f"Issue's claim (largest mesh dim wins, ties to the first listed) agrees on {agree} of "
                  f"{len(by['collapse'])}.", "", "| mesh | members | survivor | claim | multi after |",
                  "|---|---|---|---|---|"]
        for r in by["collapse"]:
            if "survivor" in r:
                lines.append(f"| {r['mesh']} | {r['members']} | {r['survivor']} | {r['predicted']} | "
                             f"{r['multi_after']} |")
    for fam in ("registry", "other", "edges"):
        if not by[fam]:
            continue
        same = sum(1 for r in by[fam] if r.get("same_as_collapsed") is True)
        lines += ["", f"## {fam}", "", f"Answer equals the answer for the collapsed plain dims_mapping: {same} of "
                  f"{len(by[fam])} probes.", "", "| probe | built dm / multi | answer inputs | answer outputs | "
                  "multi in answers | same as collapsed | log |", "|---|---|---|---|---|---|---|"]
        for r in by[fam]:
            if "crash" in r:
                lines.append(f"| {r.get('id')} | CRASH exit {r['crash']} | | | | | {'; '.join(r['log'])[:200]} |")
                continue
            built = r.get("built")
            bt = f"{built['dm']} / {built['multi']}" if built else r.get("build_error", r.get("probe_error", ""))
            multi = sorted({str(a["multi"]) for a in r.get("inputs", []) + r.get("outputs", [])
                            if any(len(v) > 1 for v in a["multi"])})
            lines.append(f"| {r.get('id')} | {bt} | {_dm(r, 'inputs') or r.get('rule_error', '')} | "
                         f"{_dm(r, 'outputs')} | {', '.join(multi) or 'none co-sharded'} | "
                         f"{r.get('same_as_collapsed', '')} | {'; '.join(sorted(set(r.get('log', []))))[:200]} |")
    if by["pir"]:
        lines += ["", "## pir", "", "| probe | value dims_mapping | answer inputs | answer outputs | log |",
                  "|---|---|---|---|---|"]
        for r in by["pir"]:
            if "value_dm" not in r:
                shown = {k: v for k, v in r.items() if k not in ("family", "index", "id", "log")}
                lines.append(f"| {r.get('id')} | {json.dumps(shown)[:400]} | | | |")
                continue
            lines.append(f"| {r.get('id')} | {r['value_dm']} | {_dm(r, 'inputs') or r.get('build_error', '')} | "
                         f"{_dm(r, 'outputs')} | {'; '.join(sorted(set(r.get('log', []))))[:200]} |")
    if by["dynamic"]:
        lines += ["", "## dynamic (one process)", ""]
        for r in by["dynamic"]:
            shown = {k: v for k, v in r.items() if k not in ("family", "index", "id")}
            lines.append(f"- {r.get('id')}: `{json.dumps(shown)[:900]}`")
    return "\n".join(lines) + "\n"


def _main(argv: list[str] | None) -> int:
    parser = ArgumentParser(prog="probe_coshard.py",
                            description="Measure Paddle's answers to co-sharded inputs (issue 14).")
    parser.add_argument("--report-dir", "--out", dest="out", type=path_text, default=Path("reports/coshard"),
                        help="report directory (default reports/coshard; --out is the same flag)")
    parser.add_argument("--families", default=",".join(FAMILIES),
                        help=f"comma-separated subset of {','.join(FAMILIES)} (default: all)")
    parser.add_argument("--timeout", type=seconds, default=600.0, help="seconds per child process (default 600)")
    parser.add_argument("--child", help=argparse_suppress())
    parser.add_argument("--start", type=int, default=0, help=argparse_suppress())
    args = parser.parse_args(argv)
    if args.child:
        return _child(args.child, args.start)
    families = [f for f in args.families.split(",") if f]
    bad = [f for f in families if f not in FAMILIES]
    if bad or not families:
        raise UsageError("--families", f"unknown family {','.join(bad) or '(empty)'}",
                         f"choose from {','.join(FAMILIES)}")
    out = check_output_dir(args.out, "--report-dir/--out")  # (checked, not made: nothing is written before the probes)
    t0 = time.monotonic()
    records: list[dict[str, Any]] = []
    complete = True
    from paddle_spmd_port.installed import paddle_version

    def write(stopped: str = "") -> None:
        meta = {"paddle": paddle_version()["version"], "seconds": time.monotonic() - t0,
                "command": " ".join(["tools/probe_coshard.py", *(argv if argv is not None else sys.argv[1:])])}
        if stopped:
            meta["interrupted"] = stopped
        out.mkdir(parents=True, exist_ok=True)
        (out / "coshard.json").write_text(json.dumps({"meta": meta, "records": records}, indent=1))
        head = f"INTERRUPTED by {stopped}: partial report, the probes run so far\n\n" if stopped else ""
        (out / "coshard.md").write_text(head + render(records, meta))

    try:
        for fam in families:
            recs, ok = run_family(fam, args.timeout)
            records += recs
            complete &= ok
            print(f"{fam}: {len(recs)} probes{'' if ok else ' (incomplete)'}", file=sys.stderr)
    except Interrupted as exc:  # the child was ended by subprocess.run on the way out
        stopped = exc.name
        add_detail(exc, write_partial(lambda: write(stopped), str(out / "coshard.md")))
        raise
    write()
    print(f"wrote {out / 'coshard.md'} and {out / 'coshard.json'}", file=sys.stderr)
    return EXIT_OK if complete else EXIT_INCOMPLETE


def main(argv: list[str] | None = None) -> int:
    """Usage errors, signals (partial report) and internal errors as every command has them."""
    return run_command("probe_coshard", lambda: _main(argv))


def argparse_suppress() -> str:
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    sys.exit(main())
