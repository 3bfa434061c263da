#!/usr/bin/env python
"""Benchmarks: the port against native Paddle, both sides measured in one run, as ratios.

    python tools/bench.py [--rules a,b] [--sample N] [--seed S] [--repeat R] [--routes compiled,pir] [--sweep]

Every figure starts from the same *plain data* on both sides: a list of meshes (each a mesh shape
and its process ids) and per case each input as ``None`` or ``(shape, dims_mapping, partial dims,
mesh number)`` -- the number indexes that list, as a user's code names the mesh variable it keeps
-- and the attribute values: Python tuples and numbers, no object of either library. Drawn from the parity grid
(``--sample`` cases per rule, seeded; corner sets left out, since half of them are inputs one side
refuses before the call, and so are the cases Paddle may crash on, ``crash_prone.compiled_may_crash``).

0. Call forms: ``DistTensorSpec`` built from the grid's own specs (a uniform draw of ``--sample``
   cases per rule, each value once), each form from the same values put into it before the loop:
   tuples by position (the reference row), tuples then ``.check``, lists (co-shards as nested
   lists), keywords with lists, ``partial_dims=`` always given, numpy int64 scalars in lists; and
   invalid specs (every one the rules' grids hold, and each valid spec made invalid in one of the
   five ways a check names), built, built then refused (``check`` raising), and refused with the
   error read (its ``str`` and ``kind``, as a report records it). An untimed pass
   checks every form built the tuple form's very specs; a form over 2x the tuple form is marked.
   Last, a reference row that is no form: the tuple form followed by a ``ValueError`` raised and
   caught in Python, the least a refusal (a build and an exception) costs in CPython.

1. Registry rules (Paddle answers them from ``core.get_phi_spmd_rule``), three trips per side:

   trip         build the input specs (one mesh object per mesh shape, built before the timed
                loop on both sides, as a user keeps their mesh), call the rule, read every field
                (dims_mapping, partial dims, mesh) of every returned attr;
   fresh mesh   the same, but every case builds its mesh objects anew inside the loop (port
                ``ProcessMesh`` vs ``dist.ProcessMesh``);
   bare call    the rule call alone, on specs both sides built before the timed loop.

   Errors count as answers on both sides (the exception is caught and the loop goes on). The
   grid's co-sharded cases are in the sample: the native side sets them through
   ``multi_dims_mapping``; Paddle's per-call warning for them is silenced (GLOG_minloglevel=2).
   Each loop runs ``--repeat`` times, port and native alternating; the best run counts. Every
   timed loop starts cold: the port's table of interned attrs
   is emptied before it, outside the timing, so no round reuses an earlier round's work. (The
   compiled caller's memos of request text and decoded replies, section 2, are left warm: that
   favours Paddle.)

   Then the *mixed form*, a user's data: the same three trips on a uniform draw from each rule's
   whole grid (corner sets at their share, not added on top; less the cases Paddle may crash this
   process on), the plain data written to JSON and read back (lists, co-shards as nested lists),
   partial dims by keyword. The shares of invalid inputs (the port refuses them) and of co-shards
   are measured on the grid and on the draw, and printed. An input a side refuses to build
   (Paddle refuses a partial dim that also shards when its attr is set) is that case's answer; the
   bare calls are timed on the cases both sides built. An untimed pass counts each side's rule
   calls in every loop: a side that skips a case it built is not measured (exit 3).

2. Hidden rules (no registry entry): both sides build the same Case objects from the plain data
   (the compiled caller writes its requests from Cases), then the port calls the rule and the
   compiled caller (``native.compiled.run_many``, in this process) sends the requests to Paddle's
   C++ rule and reads the replies back into attrs; both read every field of every answer.

3. ``--routes compiled,pir``: native throughput, cases/s, in this process and through the
   2-worker crash-isolating pool (start-up included), next to the port on the same cases; with
   ``--group`` also on every case the default sweep sends to that route (compiled: 130,801 cases),
   where the programs' start-up (~50 ms each) no longer dominates as it does on a 2,000-case sample.

4. ``--sweep``: wall time and peak resident memory of the default ``parity`` sweep (run as a
   child; the peak is the largest single process among every child this run started, from
   getrusage: run it alone, without --routes, for the sweep's own figure).

The first line says which port core was timed: ``c`` (the C module ``_speedups`` standing in for the
hot constructors, see ``paddle_spmd_port/_speedups.c``) or ``python`` (not built, or
``PADDLE_SPMD_PORT_PURE=1``).

Exit 0 when every figure asked for was measured; 3 when a native side did not run what it was
asked to (Paddle missing, the compiled caller unavailable, cases *not run*, the sweep not green),
with one line saying what; 2 on bad usage.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import resource
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any, cast

from paddle_spmd_port.case import Case
from paddle_spmd_port.errors import ArgumentTypeError, InvalidSpecError
from paddle_spmd_port.grid import GRIDS, grid_for, is_corner, sample
from paddle_spmd_port.native.crash_prone import compiled_may_crash as may_crash
from paddle_spmd_port.ops import RULES, rule_spec
from paddle_spmd_port.outcome import Outcome
from paddle_spmd_port.rules import rule_function
from paddle_spmd_port.runctl.command import run_command
from paddle_spmd_port.runctl.exits import EXIT_INCOMPLETE, UsageError
from paddle_spmd_port.runctl.grammar import ArgumentParser
from paddle_spmd_port.types import CORE, DistTensorSpec, ProcessMesh, clear_caches

#: every rule key Paddle answers from a registry rule of its own: a registry route and a C++ rule behind it
#: (a key without one, cpp None, is answered by Paddle's generic replicated rule)
REGISTRY_RULES = tuple(key for key, spec in RULES.items() if "registry" in spec.routes and spec.cpp is not None)
HIDDEN_RULES = ("batch_norm", "batch_norm_grad", "layer_norm_grad")
ROUTES = ("compiled", "pir")

MeshKey = tuple[tuple[int, ...], tuple[int, ...]]
PlainInput = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], int | None] | None
PlainCase = tuple[tuple[PlainInput, ...], tuple[Any, ...]]
Meshes = Sequence[Any] | dict[int, Any]  # mesh number -> one side's mesh object


# --- plain data -------------------------------------------------------------------------------
def _mesh_key(mesh: ProcessMesh | None) -> MeshKey | None:
    return None if mesh is None else (tuple(mesh.shape), tuple(mesh.process_ids or ()))


def plain(cases: Sequence[Case]) -> tuple[list[MeshKey], list[PlainCase]]:
    """The plain data of ``cases``: the distinct meshes (shape, process ids) and per case its inputs,
    each naming its mesh by its number in that list, and its attribute values."""
    keys: dict[MeshKey, int] = {}

    def number(mesh: ProcessMesh | None) -> int | None:
        key = _mesh_key(mesh)
        return None if key is None else keys.setdefault(key, len(keys))

    data = [(tuple(None if s is None else (tuple(s.shape), tuple(s.dims_mapping), tuple(sorted(s.partial_dims)),
                                           number(s.mesh)) for s in case.inputs), tuple(case.attr_values()))
            for case in cases]
    return list(keys), data


def cases_for(rule: str, n: int, seed: int) -> list[Case]:
    """The seeded sample, less the corner sets and the cases Paddle may crash on in-process
    (:func:`~paddle_spmd_port.native.crash_prone.compiled_may_crash`: both sides call the same C++
    rules, and a crash would end the benchmark)."""
    return [c for c in sample(list(grid_for(rule)), n, seed=seed) if not is_corner(c) and not may_crash(c)]


def _native_attrs(rule: str, attrs: tuple[Any, ...]) -> tuple[Any, ...]:
    """What Paddle's registry call takes: no attribute where the rule declares none, else the
    values in signature order (already of the types Paddle takes, in the grid)."""
    return () if not RULES[rule].attrs else attrs


# --- the two sides ----------------------------------------------------------------------------
class PortSide:
    def __init__(self, rule: str) -> None:
        self.fn = rule_function(rule)

    @staticmethod
    def mesh(key: MeshKey) -> ProcessMesh:
        return ProcessMesh(key[0], key[1])

    @staticmethod
    def spec(item: PlainInput, meshes: Meshes) -> DistTensorSpec | None:
        if item is None:
            return None
        shape, dm, partial, key = item
        mesh = None if key is None else meshes[key]
        if partial:  # as the native side: partial dims set only where there are some
            return DistTensorSpec(shape, dm, mesh, frozenset(partial))
        return DistTensorSpec(shape, dm, mesh)

    def call(self, specs: Sequence[Any], attrs: tuple[Any, ...]) -> None:
        try:
            res = self.fn(*specs, *attrs)
        except (ValueError, NotImplementedError, TypeError):
            return
        for a in res.inputs + res.outputs:
            a.dims_mapping, a.partial_dims, a.mesh  # noqa: B018 - reading every field is the point

    def bare(self, specs: Sequence[Any], attrs: tuple[Any, ...]) -> None:
        try:
            self.fn(*specs, *attrs)
        except (ValueError, NotImplementedError, TypeError):
            pass


class NativeSide:
    def __init__(self, rule: str) -> None:
        import paddle.distributed as dist

        from paddle_spmd_port.native import registry as reg  # imports Paddle

        self.dist = dist
        self.spec_cls = reg.PaddleSpec
        self.attr_cls = reg.TensorDistAttr
        name, method = reg.ROUTES[rule]
        self.fn = getattr(reg.core.get_phi_spmd_rule(name), method)
        self.rule = rule
        #: whether this Paddle can set a co-shard (``multi_dims_mapping``, 3.1.0+); without it the
        #: registry table leaves the sample's co-sharded cases out
        self.coshards = hasattr(self.attr_cls(), "multi_dims_mapping")

    def mesh(self, key: MeshKey) -> Any:
        shape, ids = key
        nested: Any = list(ids)
        for size in reversed(shape[1:]):
            nested = [nested[i:i + size] for i in range(0, len(nested), size)]
        return self.dist.ProcessMesh(nested)

    def spec(self, item: PlainInput, meshes: Meshes) -> Any:
        attr = self.attr_cls()
        if item is None:
            return self.spec_cls([0], attr)
        shape, dm, partial, key = item
        if key is not None:
            attr.process_mesh = meshes[key]
        kinds = {*map(type, dm)}
        if tuple in kinds or list in kinds:  # a co-shard: one list of mesh dims per axis (as the registry backend)
            attr.multi_dims_mapping = [list(e) if type(e) in (tuple, list) else [] if e == -1 else [e] for e in dm]
        else:  # a list as it is (the mixed form's data already holds lists): no copy Paddle does not need
            attr.dims_mapping = dm if type(dm) is list else list(dm)
        if partial:
            attr._set_partial_dims(partial if type(partial) is list else list(partial))
        return self.spec_cls(shape if type(shape) is list else list(shape), attr)

    def call(self, specs: Sequence[Any], attrs: tuple[Any, ...]) -> None:
        try:
            raw = self.fn(*specs, *_native_attrs(self.rule, attrs))
        except (ValueError, NotImplementedError, TypeError, RuntimeError):
            return
        for group in raw:
            for item in group:
                for a in item if isinstance(item, list) else (item,):
                    a.dims_mapping, a._partial_dims() if a._is_partial() else (), a.process_mesh

    def bare(self, specs: Sequence[Any], attrs: tuple[Any, ...]) -> None:
        try:
            self.fn(*specs, *_native_attrs(self.rule, attrs))
        except (ValueError, NotImplementedError, TypeError, RuntimeError):
            pass


#: what building an input may raise on either side (Paddle refuses some invalid inputs when its
#: TensorDistAttr is set, a partial dim that also shards, say): the case's answer, as a rule's error is
BUILD_ERRORS = (ValueError, NotImplementedError, TypeError, RuntimeError)


def _built(side: PortSide | NativeSide, inputs: Sequence[PlainInput], meshes: Meshes) -> list[Any] | None:
    """The side's specs of one case, or None when the side refuses to build one."""
    try:
        return [side.spec(item, meshes) for item in inputs]
    except BUILD_ERRORS:
        return None


def loops(side: PortSide | NativeSide, mesh_keys: list[MeshKey],
          data: list[PlainCase]) -> dict[str, Callable[[], None]]:
    """The three timed loops of one side, over the same plain data. A case whose input the side
    refuses to build ends there (that refusal is its answer); the bare loop calls the rule on the
    cases it could build."""
    shared = [side.mesh(key) for key in mesh_keys]
    prebuilt = [(specs, attrs) for inputs, attrs in data if (specs := _built(side, inputs, shared)) is not None]
    spec, call, bare, mesh = side.spec, side.call, side.bare, side.mesh

    def trip() -> None:
        for inputs, attrs in data:
            try:
                specs = [spec(item, shared) for item in inputs]
            except BUILD_ERRORS:
                continue
            call(specs, attrs)

    def fresh() -> None:
        for inputs, attrs in data:
            meshes = {i: mesh(mesh_keys[i]) for i in {item[3] for item in inputs if item is not None
                                                      and item[3] is not None}}
            try:
                specs = [spec(item, meshes) for item in inputs]
            except BUILD_ERRORS:
                continue
            call(specs, attrs)

    def bare_call() -> None:
        for specs, attrs in prebuilt:
            bare(specs, attrs)

    return {"trip": trip, "fresh": fresh, "bare": bare_call}


def best_of(fns: dict[str, Callable[[], None]], repeat: int) -> dict[str, float]:
    """Best wall time of each loop over ``repeat`` rounds (the loops alternate within a round).
    Every loop starts cold: the port's table of interned attrs is emptied before it (untimed), so
    no loop gains from work an earlier round or loop did."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            clear_caches()
            gc.collect()
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def bench_registry(rules: Sequence[str], n: int, seed: int, repeat: int) -> list[dict[str, Any]]:
    rows = []
    for rule in rules:
        native_side = NativeSide(rule)
        cases = cases_for(rule, n, seed)
        drawn = len(cases)
        if not native_side.coshards:  # Paddle 3.0.0: co-sharded inputs cannot be set
            cases = [c for c in cases if not any(s is not None and s.coshard for s in c.inputs)]
        mesh_keys, data = plain(cases)
        port, native = loops(PortSide(rule), mesh_keys, data), loops(native_side, mesh_keys, data)
        fns = {f"port {k}": v for k, v in port.items()} | {f"native {k}": v for k, v in native.items()}
        best = best_of(fns, repeat)
        rows.append({"rule": rule, "cases": len(data), "coshards_left_out": drawn - len(cases),
                     **{k: v / len(data) for k, v in best.items()}})
    return rows


# --- a user's data: the mixed form -------------------------------------------------------------
class MixedPortSide(PortSide):
    """The port side of the mixed form: the plain data as JSON gives it back (lists, co-shards as
    nested lists, meshes as lists), partial dims by keyword where there are some."""

    @staticmethod
    def spec(item: PlainInput, meshes: Meshes) -> DistTensorSpec | None:
        if item is None:
            return None
        shape, dm, partial, key = item
        mesh = None if key is None else meshes[key]
        if partial:
            return DistTensorSpec(shape, dm, mesh, partial_dims=partial)
        return DistTensorSpec(shape, dm, mesh)


def as_json(mesh_keys: list[MeshKey], data: list[PlainCase]) -> tuple[list[Any], list[Any]]:
    """The plain data written to JSON and read back: every tuple a list, as a user's file gives it."""
    back = json.loads(json.dumps([mesh_keys, data]))
    return back[0], back[1]


def refused(case: Case) -> bool:
    """True when the port refuses the case's input as invalid (InvalidSpecError: input Paddle
    accepts silently or crashes on)."""
    try:
        case.call_port()
    except InvalidSpecError as exc:
        return not isinstance(exc, ArgumentTypeError)
    except (ValueError, NotImplementedError, TypeError):
        return False
    return False


def has_coshard(case: Case) -> bool:
    return any(s is not None and s.coshard for s in case.inputs)


def mixed_cases(rule: str, n: int, seed: int) -> tuple[list[Case], dict[str, float]]:
    """A uniform draw of ``n`` cases from the rule's whole grid (corner sets at their share, not
    added on top), less the cases Paddle may crash this process on; and the shares measured on the
    grid and on the draw: invalid inputs (the port refuses them) and co-shards."""
    grid = list(grid_for(rule))
    drawn = [c for c in sample(grid, n, seed=seed, corners=False) if not may_crash(c)]
    runnable = [c for c in grid if not may_crash(c)]
    shares = {"grid invalid": sum(map(refused, grid)) / len(grid),
              "grid runnable invalid": sum(map(refused, runnable)) / max(len(runnable), 1),
              "grid coshard": sum(map(has_coshard, grid)) / len(grid),
              "invalid": sum(map(refused, drawn)) / max(len(drawn), 1),
              "coshard": sum(map(has_coshard, drawn)) / max(len(drawn), 1),
              "crash-prone left out": 1 - len(runnable) / len(grid)}
    return drawn, shares


def same_work(sides: Sequence[PortSide | NativeSide], mesh_keys: list[Any], data: list[Any]) -> dict[str, int]:
    """Each side calls its rule once per case it can build the input of, in every loop (errors
    count): checked on one untimed pass of each loop, counting the calls; a side that skipped some
    case would time less work (NotMeasured). Returns per side how many cases it refused to build."""
    refused_at_build = {}
    for side in sides:
        shared = [side.mesh(key) for key in mesh_keys]
        buildable = sum(_built(side, inputs, shared) is not None for inputs, _ in data)
        refused_at_build[type(side).__name__] = len(data) - buildable
        real = side.fn
        counted = 0

        def counting(*args: Any, real: Any = real) -> Any:
            nonlocal counted
            counted += 1
            return real(*args)

        side.fn = counting
        try:
            for name, loop in loops(side, mesh_keys, data).items():
                counted = 0
                loop()
                if counted != buildable:
                    raise NotMeasured(f"{type(side).__name__} {name} called its rule {counted} times for "
                                      f"{buildable} cases")
        finally:
            side.fn = real
    return refused_at_build


def bench_mixed(rules: Sequence[str], n: int, seed: int, repeat: int) -> list[dict[str, Any]]:
    """The registry trips on the mixed form: both sides build from the same JSON-read plain data."""
    rows = []
    for rule in rules:
        native_side = NativeSide(rule)
        cases, shares = mixed_cases(rule, n, seed)
        if not native_side.coshards:  # Paddle 3.0.0: co-sharded inputs cannot be set
            cases = [c for c in cases if not has_coshard(c)]
        mesh_keys, data = as_json(*plain(cases))
        port_side = MixedPortSide(rule)
        refused_at_build = same_work([port_side, native_side], mesh_keys, data)
        port, native = loops(port_side, mesh_keys, data), loops(native_side, mesh_keys, data)
        # the bare calls on the cases both sides could build (Paddle refuses a few at build: no call)
        native_mesh = [native_side.mesh(key) for key in mesh_keys]
        common = [case for case in data if _built(native_side, case[0], native_mesh) is not None]
        port["bare"] = loops(port_side, mesh_keys, common)["bare"]
        native["bare"] = loops(native_side, mesh_keys, common)["bare"]
        fns = {f"port {k}": v for k, v in port.items()} | {f"native {k}": v for k, v in native.items()}
        best = best_of(fns, repeat)
        best = {k: v * len(data) / len(common) if k.endswith("bare") else v for k, v in best.items()}
        rows.append({"rule": rule, "cases": len(data), "native refused at build": refused_at_build["NativeSide"],
                     "port refused at build": refused_at_build["MixedPortSide"], **shares,
                     **{k: v / len(data) for k, v in best.items()}})
    return rows


# --- call forms -------------------------------------------------------------------------------
#: The call forms of DistTensorSpec timed against the tuple form (each builds the same specs).
FORM_TARGET = 2.0
#: The reference row beside the forms (not a form: no target): a valid tuple-form build followed by a
#: ValueError raised and caught in Python, the least a refusal can cost in CPython
FLOOR = "floor: tuple form + a Python raise and catch"


def _listed(dm: Sequence[Any]) -> list[Any]:
    return [list(e) if type(e) is tuple else e for e in dm]


def _invalid_variant(s: DistTensorSpec, k: int) -> DistTensorSpec:
    """Spec ``s`` made invalid in the ``k % 5``-th way a check names: a dims_mapping one entry too
    long, a mesh dim the mesh lacks, a mesh dim twice, a partial dim that also shards, a partial dim
    the mesh lacks."""
    mesh = cast(ProcessMesh, s.mesh)
    dm, n, kind = s.dims_mapping, mesh.ndim, k % 5
    if kind == 0 or not dm:
        return DistTensorSpec(s.shape, dm + (-1,), mesh, s.partial_dims)
    if kind == 1:
        return DistTensorSpec(s.shape, (n,) + dm[1:], mesh, s.partial_dims)
    if kind == 2 and len(dm) >= 2:
        return DistTensorSpec(s.shape, (0, 0) + dm[2:], mesh)
    if kind == 3:
        return DistTensorSpec(s.shape, (0,) + (-1,) * (len(dm) - 1), mesh, frozenset({0}))
    return DistTensorSpec(s.shape, dm, mesh, frozenset({n}))


def form_specs(rules: Sequence[str], n: int, seed: int) -> tuple[list[DistTensorSpec], list[DistTensorSpec]]:
    """The specs the call forms build, each value once: the valid inputs on a mesh of ``n`` cases
    per rule (a uniform draw, corner sets at their share); and the invalid ones (their check
    fails): every one the rules' grids hold, and each valid spec made invalid in one of the ways a
    check names (:func:`_invalid_variant`, the ways in turn), as a user's mistakes come."""
    valid: dict[Any, DistTensorSpec] = {}
    invalid: dict[Any, DistTensorSpec] = {}

    def key(s: DistTensorSpec) -> Any:
        return (s.shape, s.dims_mapping, s.partial_dims, _mesh_key(s.mesh))

    for rule in rules:
        grid = list(grid_for(rule))
        drawn = {id(c) for c in sample(grid, n, seed=seed, corners=False)}
        for case in grid:
            for s in case.inputs:
                if s is not None and s.mesh is not None:
                    if s._problem is not None:
                        invalid.setdefault(key(s), s)
                    elif id(case) in drawn:
                        valid.setdefault(key(s), s)
    for k, s in enumerate(list(valid.values())):
        bad = _invalid_variant(s, k)
        invalid.setdefault(key(bad), bad)
    return list(valid.values()), list(invalid.values())


def form_loops(valid: Sequence[DistTensorSpec], invalid: Sequence[DistTensorSpec],
               spec: Callable[..., DistTensorSpec] = DistTensorSpec) -> dict[str, Callable[[], None]]:
    """One timed loop per call form over the same specs' values, each written as a user's code
    calls it (no ``*args`` / ``**kwargs`` unpacking of the harness's own); the values are put into
    each form before the loop. ``spec`` is the constructor called (:func:`same_specs` passes one
    that records what each form built)."""
    import numpy as np

    def mesh(s: DistTensorSpec) -> ProcessMesh:
        return cast(ProcessMesh, s.mesh)

    tuples = [(s.shape, s.dims_mapping, mesh(s), s.partial_dims or None) for s in valid]
    lists = [(list(s.shape), _listed(s.dims_mapping), mesh(s), sorted(s.partial_dims) or None) for s in valid]
    given = [(s.shape, s.dims_mapping, mesh(s), tuple(sorted(s.partial_dims))) for s in valid]
    numpy_ints = [(list(np.array(s.shape, dtype=np.int64)),
                   [list(np.array(e, dtype=np.int64)) if type(e) is tuple else np.int64(e) for e in s.dims_mapping],
                   mesh(s), list(np.array(sorted(s.partial_dims), dtype=np.int64)) or None) for s in valid]
    bad = [(s.shape, s.dims_mapping, mesh(s), s.partial_dims or None) for s in invalid]
    bad_lists = [(list(s.shape), _listed(s.dims_mapping), mesh(s), sorted(s.partial_dims) or None) for s in invalid]

    def tuple_form() -> None:
        for shape, dm, m, p in tuples:
            spec(shape, dm, m) if p is None else spec(shape, dm, m, p)

    def tuple_checked() -> None:
        for shape, dm, m, p in tuples:
            (spec(shape, dm, m) if p is None else spec(shape, dm, m, p)).check("x")

    def list_form() -> None:
        for shape, dm, m, p in lists:
            spec(shape, dm, m) if p is None else spec(shape, dm, m, p)

    def keywords() -> None:
        for shape, dm, m, p in lists:
            spec(shape=shape, dims_mapping=dm, mesh=m) if p is None else \
                spec(shape=shape, dims_mapping=dm, mesh=m, partial_dims=p)

    def partial_given() -> None:
        for shape, dm, m, p in given:
            spec(shape, dm, m, partial_dims=p)

    def numpy_form() -> None:
        for shape, dm, m, p in numpy_ints:
            spec(shape, dm, m) if p is None else spec(shape, dm, m, p)

    def invalid_built() -> None:
        for shape, dm, m, p in bad:
            spec(shape, dm, m) if p is None else spec(shape, dm, m, p)

    def refuse(items: list[Any]) -> Callable[[], None]:
        def loop() -> None:
            for shape, dm, m, p in items:
                try:
                    (spec(shape, dm, m) if p is None else spec(shape, dm, m, p)).check("x")
                except InvalidSpecError:
                    pass
        return loop

    def refuse_and_read() -> None:  # what a caller that reports the error pays (parity records str and kind)
        for shape, dm, m, p in bad:
            try:
                (spec(shape, dm, m) if p is None else spec(shape, dm, m, p)).check("x")
            except InvalidSpecError as error:
                str(error), error.kind  # reading the error is the point

    def floor() -> None:  # what any refusal costs at least: a build, then CPython's own raise and catch
        for shape, dm, m, p in tuples:
            try:
                spec(shape, dm, m) if p is None else spec(shape, dm, m, p)
                raise ValueError("x")
            except ValueError:
                pass

    return {"tuple": tuple_form, "tuple, checked": tuple_checked, "list": list_form,
            "keywords (lists)": keywords, "partial_dims= (always given)": partial_given,
            "numpy ints (lists)": numpy_form, "invalid, built": invalid_built,
            "invalid, refused (built + check)": refuse(bad), "invalid lists, refused": refuse(bad_lists),
            "invalid, refused and read (str, kind)": refuse_and_read, FLOOR: floor}


def same_specs(valid: Sequence[DistTensorSpec], invalid: Sequence[DistTensorSpec]) -> None:
    """Every form builds the very values of the tuple form, and checks them where it says so
    (NotMeasured otherwise: a form that dropped its partial dims, say, would time less work): one
    untimed pass of every loop through a constructor that records each spec it builds."""
    built: list[DistTensorSpec] = []

    def record(*args: Any, **kwargs: Any) -> DistTensorSpec:
        built.append(DistTensorSpec(*args, **kwargs))
        return built[-1]

    for name, fn in form_loops(valid, invalid, record).items():
        built.clear()
        fn()
        want = list(invalid if "invalid" in name else valid)
        if built != want or [s._problem for s in built] != [s._problem for s in want]:
            raise NotMeasured(f"the call form {name!r} built other specs than the tuple form")


def bench_forms(rules: Sequence[str], n: int, seed: int, repeat: int) -> list[tuple[str, int, float]]:
    """Per call form: (form, specs built, seconds per spec), best of ``repeat``, the forms alternating."""
    valid, invalid = form_specs(rules, n, seed)
    same_specs(valid, invalid)
    best = best_of(form_loops(valid, invalid), repeat)
    return [(name, len(invalid if "invalid" in name else valid), t / len(invalid if "invalid" in name else valid))
            for name, t in best.items()]


def _cases_from(rule: str, mesh_keys: list[MeshKey], data: list[PlainCase]) -> list[Case]:
    """The Case objects of plain data (one mesh object per mesh shape): what both sides of the
    hidden-rule benchmark build, since the compiled caller writes its requests from Cases."""
    names = [name for name, _ in rule_spec(rule).attrs]
    shared = [PortSide.mesh(key) for key in mesh_keys]
    cases = []
    for inputs, attrs in data:
        specs = tuple(PortSide.spec(item, shared) for item in inputs)
        x_mesh = specs[0].mesh if specs[0] is not None and specs[0].mesh is not None else ProcessMesh((1,))
        cases.append(Case(rule, x_mesh, specs, tuple(zip(names, attrs, strict=True))))
    return cases


class NotMeasured(Exception):
    """A native side that did not run what it was asked to (Paddle missing, the compiled caller
    unavailable, cases not run): its figure would time nothing, so none is printed (exit 3)."""


def require_run(route: str, rule: str, outcomes: Sequence[Outcome | None]) -> None:
    """Raise :class:`NotMeasured` unless every case got an outcome from ``route`` (an answer, an
    error, a crash or an unreachable verdict all count; *not run* does not), and unless at least one
    was more than unreachable (a route that reaches no case, Paddle < 3.1 for the compiled caller,
    ran no rule: its time would be a figure of nothing)."""
    missing = [o for o in outcomes if o is None or o.not_run is not None]
    if missing:
        why = missing[0].not_run if missing[0] is not None else "no outcome"
        raise NotMeasured(f"{route}: {len(missing)} of {len(outcomes)} {rule} cases not run ({why})")
    if outcomes and all(o is not None and o.unreachable is not None for o in outcomes):
        raise NotMeasured(f"{route}: every one of {len(outcomes)} {rule} cases is unreachable "
                          f"({outcomes[0].unreachable})")


def _read(attrs: Sequence[Any]) -> None:
    for a in attrs:
        a.dims_mapping, a.partial_dims, a.mesh  # noqa: B018 - reading every field is the point


def bench_hidden(rules: Sequence[str], n: int, seed: int, repeat: int) -> list[dict[str, Any]]:
    from paddle_spmd_port.native import compiled

    rows = []
    for rule in rules:
        mesh_keys, data = plain(cases_for(rule, n, seed))

        def port(rule: str = rule, mesh_keys: list[MeshKey] = mesh_keys, data: list[PlainCase] = data) -> None:
            for case in _cases_from(rule, mesh_keys, data):
                try:
                    res = case.call_port()
                except (ValueError, NotImplementedError, TypeError):
                    continue
                _read(res.inputs + res.outputs)

        require_run("compiled", rule, list(compiled.run_many(_cases_from(rule, mesh_keys, data))))

        def native(rule: str = rule, mesh_keys: list[MeshKey] = mesh_keys, data: list[PlainCase] = data) -> None:
            for outcome in compiled.run_many(_cases_from(rule, mesh_keys, data)):
                if outcome.result is not None:
                    _read(outcome.result.inputs + outcome.result.outputs)

        best = best_of({"port trip": port, "compiled trip": native}, repeat)
        rows.append({"rule": rule, "cases": len(data), **{k: v / len(data) for k, v in best.items()}})
    return rows


def sweep_group(route: str) -> tuple[str, list[Case]]:
    """Every case the default ``parity`` sweep sends to ``route``: each rule's grid and co-shard set,
    for the rules whose default backends include it (a label and the cases)."""
    from paddle_spmd_port.native.routes import DEFAULT_BACKENDS
    from paddle_spmd_port.parity.cli import select_cases

    rules = [rule for rule in GRIDS if route in DEFAULT_BACKENDS.get(rule, ())]
    cases = [c for rule in rules for c in select_cases(rule, None, None, 0, None, False)]
    return f"the sweep's {route} group ({len(rules)} rules)", cases


def bench_throughput(route: str, n: int, seed: int, group: bool = False) -> list[tuple[str, int, float, float, float]]:
    from paddle_spmd_port.native.pool import run_native
    from paddle_spmd_port.outcome import port_outcome

    module = importlib.import_module(f"paddle_spmd_port.native.{route}")
    rows = []
    sets = [(rule, cases_for(rule, n, seed)) for rule in HIDDEN_RULES]
    if group:
        sets.append(sweep_group(route))
    for rule, cases in sets:
        t0 = time.perf_counter()
        outs = list(module.run_many(cases))
        in_process = len(cases) / (time.perf_counter() - t0)
        if len(outs) != len(cases):
            raise NotMeasured(f"{route} answered {len(outs)} of {len(cases)} cases")
        require_run(route, rule, outs)
        t0 = time.perf_counter()
        pooled_outs, _ = run_native(cases, backend=route, workers=2)
        pooled = len(cases) / (time.perf_counter() - t0)
        require_run(route, rule, pooled_outs)
        t0 = time.perf_counter()
        for c in cases:
            port_outcome(c)
        rows.append((rule, len(cases), in_process, pooled, len(cases) / (time.perf_counter() - t0)))
    return rows


def form_rows(forms: Sequence[tuple[str, int, float]]) -> list[str]:
    """The call-form table's rows, each form's time per spec against the first (the tuple form),
    marked when over :data:`FORM_TARGET`."""
    base = forms[0][2]
    return [f"| {name} | {count} | {per * 1e9:,.0f} ns | **{per / base:.2f}x**"
            f"{f' (over {FORM_TARGET:g}x)' if per > FORM_TARGET * base and name != FLOOR else ''} |"
            for name, count, per in forms]


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} µs"


#: The tables bench prints, in order (--tables picks some; the rules each times come from --rules).
TABLES = ("forms", "registry", "mixed", "hidden")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = ArgumentParser(prog="python tools/bench.py", description=__doc__,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rules", default=",".join(REGISTRY_RULES + HIDDEN_RULES),
                    help="comma-separated rule keys to time (default: the registry rules and the hidden rules)")
    ap.add_argument("--sample", type=int, default=2000, help="cases per rule, a seeded sample of the grid")
    ap.add_argument("--seed", type=int, default=3, help="seed of the sample")
    ap.add_argument("--repeat", type=int, default=5, help="rounds per loop; the best counts")
    ap.add_argument("--routes", default="", help="comma-separated native routes to measure throughput of: "
                    "compiled, pir")
    ap.add_argument("--group", action="store_true", help="with --routes: also every case the default sweep sends to "
                    "the route (its whole group, start-up included; the pir group takes about a minute)")
    ap.add_argument("--sweep", action="store_true", help="also time the default parity sweep (wall, peak RSS)")
    ap.add_argument("--tables", default=",".join(TABLES),
                    help=f"comma-separated tables to print (default all: {', '.join(TABLES)})")
    args = ap.parse_args(argv)
    tables = [t for t in args.tables.split(",") if t]
    if not tables or any(t not in TABLES for t in tables):
        raise UsageError("--tables", f"{args.tables!r} names no table or an unknown one",
                         "a comma-separated list of " + ", ".join(TABLES))
    args.tables = tables
    rules = [r for r in args.rules.split(",") if r]
    bad = [r for r in rules if r not in REGISTRY_RULES + HIDDEN_RULES]
    if bad or not rules:
        raise UsageError("--rules", f"unknown rule {bad[0]!r}" if bad else "no rule given",
                         "a comma-separated list of " + ", ".join(REGISTRY_RULES + HIDDEN_RULES))
    routes = [r for r in args.routes.split(",") if r]
    if any(r not in ROUTES for r in routes):
        raise UsageError("--routes", f"unknown route in {args.routes!r}", "a comma-separated list of compiled, pir")
    for flag in ("sample", "repeat"):
        if getattr(args, flag) < 1:
            raise UsageError(f"--{flag}", f"{getattr(args, flag)} is not a positive count", "an integer >= 1")
    args.rules, args.routes = rules, routes
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return _bench(args)
    except (NotMeasured, ImportError) as exc:  # ImportError: Paddle is not installed
        print(f"bench: not measured: {exc}", file=sys.stderr)
        return EXIT_INCOMPLETE


def _bench(args: argparse.Namespace) -> int:
    warnings.filterwarnings("ignore")
    # Paddle logs a warning line for every co-sharded input it reads (glog, to stderr): silenced
    # before Paddle is imported, so neither side spends the timed loops writing text
    os.environ.setdefault("GLOG_minloglevel", "2")
    registry = [r for r in args.rules if r in REGISTRY_RULES]
    hidden = [r for r in args.rules if r in HIDDEN_RULES] if "hidden" in args.tables else []
    print(f"port core: {CORE} ({'the C module _speedups' if CORE == 'c' else 'Python only'}; "
          "PADDLE_SPMD_PORT_PURE=1 times the Python)\n")
    if "forms" in args.tables:
        print(f"## Call forms: `DistTensorSpec` built from the grid's specs, per spec (best of {args.repeat})\n")
        print("| form | specs | per spec | vs tuple |")
        print("|---|---|---|---|")
        print("\n".join(form_rows(bench_forms(args.rules, args.sample, args.seed, args.repeat))))
    if registry and "registry" in args.tables:
        print(f"\n## Registry rules: port vs `core.get_phi_spmd_rule`, per case (best of {args.repeat})\n")
        print("| rule | cases | trip port | trip native | ratio | fresh-mesh port | fresh-mesh native | ratio "
              "| bare port | bare native | ratio |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        left_out = 0
        for r in bench_registry(registry, args.sample, args.seed, args.repeat):
            cells = [f"{_us(r['port ' + k])} | {_us(r['native ' + k])} | **{r['native ' + k] / r['port ' + k]:.1f}x**"
                     for k in ("trip", "fresh", "bare")]
            print(f"| {r['rule']} | {r['cases']} | " + " | ".join(cells) + " |")
            left_out += r["coshards_left_out"]
        if left_out:
            print(f"\n({left_out:,} co-sharded cases left out: this Paddle cannot set multi_dims_mapping)")
    if registry and "mixed" in args.tables:
        print(f"\n## Mixed form: registry trips on a user's data, per case (best of {args.repeat})\n")
        print("Both sides build from the same plain data read back from JSON (lists, co-shards as nested "
              "lists), partial dims by keyword; a uniform draw from the whole grid (corner sets at their "
              "share), less the cases Paddle may crash this process on.\n")
        print("| rule | cases | invalid: grid / drawn | co-shards: grid / drawn | trip port | trip native | ratio "
              "| fresh-mesh port | fresh-mesh native | ratio | bare port | bare native | ratio |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        refusals: list[str] = []
        crash_prone: list[str] = []
        for r in bench_mixed(registry, args.sample, args.seed, args.repeat):
            cells = [f"{_us(r['port ' + k])} | {_us(r['native ' + k])} | **{r['native ' + k] / r['port ' + k]:.1f}x**"
                     for k in ("trip", "fresh", "bare")]
            print(f"| {r['rule']} | {r['cases']} | {r['grid invalid']:.1%} / {r['invalid']:.1%} "
                  f"| {r['grid coshard']:.1%} / {r['coshard']:.1%} | " + " | ".join(cells) + " |")
            refusals.append(f"{r['rule']} {r['native refused at build']}")
            crash_prone.append(f"{r['rule']} {r['crash-prone left out']:.1%}")
        print(f"\nPaddle refused inputs as it built them (no rule call; its answer): {', '.join(refusals)}; "
              f"bare calls timed on the cases both sides built. Grid cases left out as crash-prone: "
              f"{', '.join(crash_prone)}.")
    if hidden:
        print(f"\n## Hidden rules: port trip vs the compiled caller in this process (best of {args.repeat})\n")
        print("| rule | cases | port trip | compiled trip | ratio |")
        print("|---|---|---|---|---|")
        for r in bench_hidden(hidden, args.sample, args.seed, args.repeat):
            print(f"| {r['rule']} | {r['cases']} | {_us(r['port trip'])} | {_us(r['compiled trip'])} "
                  f"| **{r['compiled trip'] / r['port trip']:.1f}x** |")
    for route in args.routes:
        print(f"\n## {route} route throughput, cases/s\n")
        print("| rule | cases | in-process | pool (2 workers, start-up included) | port (1 process) |")
        print("|---|---|---|---|---|")
        for rule, n, in_process, pooled, port in bench_throughput(route, args.sample, args.seed, args.group):
            print(f"| {rule} | {n} | {in_process:,.0f} | {pooled:,.0f} | {port:,.0f} |")
    if args.sweep:
        t0 = time.perf_counter()
        rc = subprocess.call([sys.executable, "-m", "paddle_spmd_port", "parity", "--quiet", "--replace-report",
                              "--report-dir", "reports/bench-sweep"], stdout=subprocess.DEVNULL)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"\n## Default parity sweep: {time.perf_counter() - t0:.1f} s wall, peak RSS {peak:.0f} MiB "
              f"(largest single process), exit {rc}")
        if rc != 0:
            raise NotMeasured(f"the default parity sweep exited {rc} (see reports/bench-sweep/parity.md)")
    return 0


if __name__ == "__main__":
    sys.exit(run_command("bench", lambda: main(sys.argv[1:])))
