"""Probes of the static auto-parallel API: each one makes the same calls on either Paddle 3.3.1
or paddle_spmd_port.compat and records what it sees (values, strings, exception class and
message), so tests/test_compat.py can compare the two probe by probe, and the release profiles
(:mod:`paddle_spmd_port.parity.releases`) can name the probes each Paddle release answers differently.

    python -m paddle_spmd_port.compat.probes native   # prints the native observations as JSON
    python -m paddle_spmd_port.compat.probes          # the same probes on the compat layer

Paddle is imported only by :func:`native_api`, when it is called.

Only calls that Paddle survives are probed (the ones that crash it are port-only tests).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

FAMILIES = ("NotImplementedError", "IndexError", "ValueError", "RuntimeError", "TypeError", "AssertionError")


def compat_api() -> SimpleNamespace:
    from .. import compat

    return SimpleNamespace(TensorDistAttr=compat.TensorDistAttr, DistTensorSpec=compat.DistTensorSpec,
                           ProcessMesh=compat.ProcessMesh, get_phi_spmd_rule=compat.get_phi_spmd_rule,
                           contains_spmd_rule=compat.contains_spmd_rule)


def native_api() -> SimpleNamespace:
    import warnings

    warnings.filterwarnings("ignore")
    from paddle.distributed.auto_parallel.static.dist_attribute import DistTensorSpec, TensorDistAttr
    from paddle.distributed.fleet import auto
    from paddle.framework import core

    return SimpleNamespace(TensorDistAttr=TensorDistAttr, DistTensorSpec=DistTensorSpec, ProcessMesh=auto.ProcessMesh,
                           get_phi_spmd_rule=core.get_phi_spmd_rule, contains_spmd_rule=core.contains_spmd_rule)


def _message(exc: BaseException) -> str:
    text = str(exc).strip().split("\n")[0]
    text = text.split("[Hint:")[0]
    return re.sub(r"\s*\(at [^)]*\)\s*$", "", text).strip()


def _family(exc: BaseException) -> str:
    for name in FAMILIES:
        if any(cls.__name__ == name for cls in type(exc).__mro__):
            return name
    return type(exc).__name__


def attempt(fn: Callable[[], Any], *, message: bool = True) -> dict[str, Any]:
    """``{"value": ...}`` or ``{"raises": family, "message": ...}`` (message None if not compared)."""
    try:
        return {"value": fn()}
    except Exception as exc:  # the exception is the observation
        return {"raises": _family(exc), "message": _message(exc) if message else None}


def attr_view(attr: Any) -> Any:
    if isinstance(attr, list):
        return [attr_view(a) for a in attr]
    mesh = attr.process_mesh
    return {"dims_mapping": attr.dims_mapping, "partial": sorted(attr._partial_dims()),
            "mesh": None if mesh is None else [mesh.shape, mesh.process_ids, mesh.dim_names], "str": str(attr)}


def result_view(result: Any) -> dict[str, Any]:
    return {"types": [type(result).__name__, type(result[0]).__name__, type(result[1]).__name__],
            "inputs": attr_view(result[0]), "outputs": attr_view(result[1])}


class _LazyRule:
    """A registry rule fetched when a probe first uses it, so a release without the rule fails only
    the probes that need it (recorded as that probe's observation)."""

    def __init__(self, fetch: Callable[[str], Any], name: str) -> None:
        self._fetch, self._name = fetch, name

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._fetch(self._name), attr)


def observe(api: SimpleNamespace, rules_used: dict[str, set[str]] | None = None,
            not_run: frozenset[str] = frozenset()) -> dict[str, dict[str, Any]]:
    """Every probe's observation, by probe name; ``rules_used`` (if given) is filled with the
    registry names each probe looked up (``get_phi_spmd_rule`` or ``contains_spmd_rule``); the
    probes in ``not_run`` are recorded as ``{"not_run": True}`` (they kill the process)."""
    used: dict[str, set[str]] = {} if rules_used is None else rules_used
    running = [""]

    def fetch(name: str) -> Any:
        used.setdefault(running[0], set()).add(name)
        return api.get_phi_spmd_rule(name)

    def contains(name: str) -> Any:
        used.setdefault(running[0], set()).add(name)
        return api.contains_spmd_rule(name)

    TensorDistAttr, DistTensorSpec, ProcessMesh = api.TensorDistAttr, api.DistTensorSpec, api.ProcessMesh
    mesh = ProcessMesh(mesh=[[0, 1, 2], [3, 4, 5]])
    mesh1 = ProcessMesh([0, 1], dim_names=["x"])

    def attr(dm: list[int], partial: list[int] | None = None, on: Any = mesh) -> Any:
        a = TensorDistAttr()
        a.process_mesh = on
        a.dims_mapping = dm
        if partial:
            a._set_partial_dims(partial)
        return a

    def spec(shape: list[int], dm: list[int], partial: list[int] | None = None, on: Any = mesh) -> Any:
        return DistTensorSpec(shape, attr(dm, partial, on))

    def absent() -> Any:
        return DistTensorSpec([0], TensorDistAttr())

    ln, bn, rep = (_LazyRule(fetch, name) for name in ("layer_norm", "batch_norm", "replicated"))
    x, s = spec([64, 32, 1024], [1, -1, -1]), spec([1024], [-1])
    out, mean = spec([64, 32, 1024], [1, -1, -1], [0]), spec([64, 32], [1, -1])
    bx, stat = spec([8, 16, 4, 4], [0, 1, -1, -1]), spec([16], [-1])
    probes: dict[str, Callable[[], Any]] = {}

    def probe(name: str, *, message: bool = True) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
        def register(fn: Callable[[], Any]) -> Callable[[], Any]:
            probes[name] = lambda: attempt(fn, message=message)
            return fn
        return register

    # --- TensorDistAttr -------------------------------------------------------------------------
    @probe("attr/empty")
    def _():
        a = TensorDistAttr()
        return [str(a), a.dims_mapping, a.process_mesh is None, a._is_partial(), sorted(a._partial_dims())]

    @probe("attr/str-with-mesh")
    def _():
        return str(attr([1, -1, -1]))

    @probe("attr/dynamic-dims-fixed-by-first-mapping")
    def _():
        a = attr([0, -1])
        a.dims_mapping = [0, -1, -1]
        b = DistTensorSpec([4, 4], TensorDistAttr())
        b.set_dims_mapping([0])
        b.set_dims_mapping([0, -1, -1])
        return [str(a), str(b)]

    @probe("attr/multi-dims-mapping")
    def _():
        return attr([1, -1, 0]).multi_dims_mapping

    # co-sharding (3.3.1): the lists are kept, dims_mapping reads one mesh dim per axis
    mesh22 = ProcessMesh(mesh=[[0, 1], [2, 3]])
    mesh32 = ProcessMesh(mesh=[[0, 1], [2, 3], [4, 5]])

    def coshard(multi: list[list[int]], on: Any = mesh22) -> Any:
        a = TensorDistAttr()
        a.process_mesh = on
        a.multi_dims_mapping = multi
        return a

    @probe("coshard/read-back")
    def _():
        a = coshard([[0, 1], [], []])
        return [a.multi_dims_mapping, a.dims_mapping, str(a)]

    @probe("coshard/larger-mesh-dim-survives")
    def _():
        return [coshard(m, on).dims_mapping for on in (mesh, mesh32, mesh22)
                for m in ([[0, 1], [], []], [[1, 0], [], []], [[-1], [1, 0]], [[0], [1]])]

    @probe("coshard/dims-mapping-set-after-replaces-it")
    def _():
        a = coshard([[0, 1], [], []])
        a.dims_mapping = [0, -1, -1]
        return [a.multi_dims_mapping, a.dims_mapping, str(a)]

    @probe("coshard/set-after-dims-mapping")
    def _():
        a = attr([0, -1, -1], on=mesh22)
        a.multi_dims_mapping = [[0, 1], [], []]
        return [a.multi_dims_mapping, a.dims_mapping]

    @probe("coshard/partial-on-a-member-refused")
    def _():
        coshard([[0, 1], [], []])._set_partial_dims([1])

    @probe("coshard/partial-set-before-kept")
    def _():
        a = TensorDistAttr()
        a.process_mesh = mesh22
        a._set_partial_dims([1])
        a.multi_dims_mapping = [[0, 1], [], []]
        return [a.multi_dims_mapping, a.dims_mapping, sorted(a._partial_dims())]

    @probe("coshard/equality-and-spec-copy")
    def _():
        a = coshard([[0, 1], [], []])
        copy = DistTensorSpec([8, 6, 4], a)
        return [a == attr([0, -1, -1], on=mesh22), a == coshard([[0, 1], [], []]), copy.dims_mapping(), str(copy)]

    @probe("coshard/not-a-list", message=False)
    def _():
        coshard("01")

    @probe("coshard/layer-norm-reads-the-surviving-dim")
    def _():
        xs = DistTensorSpec([8, 6, 4], coshard([[0, 1], [], []], mesh32))
        return result_view(fetch("layer_norm").infer_forward(xs, absent(), absent(), 1e-5, 2))

    @probe("attr/partial-api")
    def _():
        a = attr([-1, 0], [1])
        seen = [a._is_partial(), a._is_partial(1), a._is_partial(0), a._is_partial(mesh_axis=1),
                sorted(a._partial_dims()), str(a)]
        a._clean_partial_status()
        return seen + [a._is_partial(), str(a)]

    @probe("attr/partial-two-dims-sorted")
    def _():
        a = attr([-1, -1])
        a._set_partial_dims([1])
        a._set_partial_dims([0])
        return [sorted(a._partial_dims()), str(a)]

    @probe("attr/partial-twice")
    def _():
        attr([-1, -1], [1])._set_partial_dims([1])

    @probe("attr/partial-on-sharding-dim")
    def _():
        attr([0, -1])._set_partial_dims([0])

    @probe("attr/clean-partial-dims")
    def _():
        a = attr([-1, -1], [0, 1])
        a._clean_partial_dims([0])
        return sorted(a._partial_dims())

    @probe("attr/clean-partial-dims-not-partial")
    def _():
        attr([-1, -1], [0])._clean_partial_dims([1])

    @probe("attr/dims-mapping-conversions")
    def _():
        import numpy as np

        a = TensorDistAttr()
        seen = []
        for value in ((0, -1), [True, -1], np.array([1, -1]), [np.int64(0), -1], range(-1, 1)):
            a.dims_mapping = value
            seen.append(a.dims_mapping)
        return seen

    @probe("attr/dims-mapping-float", message=False)
    def _():
        TensorDistAttr().dims_mapping = [0.0, -1]

    @probe("attr/dims-mapping-str", message=False)
    def _():
        TensorDistAttr().dims_mapping = "ab"

    @probe("attr/mesh-none")
    def _():
        a = attr([0, -1])
        a.process_mesh = None
        return a.process_mesh is None

    @probe("attr/equality")
    def _():
        named = ProcessMesh([[0, 1, 2], [3, 4, 5]], dim_names=["a", "b"])
        return [attr([0, -1]) == attr([0, -1]), attr([0, -1]) == attr([0, -1], [1]), attr([0, -1]) == attr([-1, -1]),
                attr([0, -1]) == attr([0, -1], on=named), TensorDistAttr() == TensorDistAttr(),
                attr([0, -1]) != attr([0, -1]), attr([0, -1]) == 5]

    @probe("attr/unhashable", message=False)
    def _():
        hash(TensorDistAttr())

    # --- ProcessMesh --------------------------------------------------------------------------------
    @probe("mesh/properties")
    def _():
        return [str(mesh), mesh.shape, mesh.process_ids, mesh.dim_names, mesh.ndim, mesh.size,
                mesh.get_dim_size("d1"), mesh.get_dim_size(0), mesh.contains(3), mesh.contains(9),
                mesh.mesh.tolist(), str(mesh1)]

    @probe("mesh/constructors")
    def _():
        import numpy as np

        return [str(ProcessMesh(shape=[2, 2], process_ids=[0, 1, 2, 3])), str(ProcessMesh(np.array([[0, 1], [2, 3]]))),
                str(ProcessMesh(mesh=[[4, 5]], dim_names=["a", "b"]))]

    @probe("mesh/equality")
    def _():
        return [mesh == ProcessMesh([[0, 1, 2], [3, 4, 5]], dim_names=["x", "y"]),
                mesh == ProcessMesh([[0, 1, 2], [3, 4, 6]]), mesh == ProcessMesh([0, 1, 2, 3, 4, 5]),
                mesh != ProcessMesh([[0, 1, 2], [3, 4, 6]]), mesh == [[0, 1, 2], [3, 4, 5]],
                attr([0, -1]).process_mesh == mesh, mesh == attr([0, -1]).process_mesh,
                hash(mesh) == hash(attr([0, -1]).process_mesh)]

    @probe("mesh/core-view")
    def _():
        core = attr([0, -1], on=ProcessMesh([[0, 1, 2], [3, 4, 5]], dim_names=["x", "y"])).process_mesh
        return [str(core), core.shape, core.process_ids, core.dim_names, core.ndim, core.size, core.empty(),
                core.contains(4), core.dim_size(1)]

    # --- DistTensorSpec -----------------------------------------------------------------------------
    @probe("spec/absent-stand-in")
    def _():
        a = absent()
        return [a.shape, a.dims_mapping(), str(a.process_mesh()), a.process_mesh().shape, a.process_mesh().empty(),
                str(a)]

    @probe("spec/str")
    def _():
        return [str(spec([4, 8], [0, -1], [1])), str(DistTensorSpec())]

    @probe("spec/copy-is-independent")
    def _():
        a = spec([16, 8], [0, -1], [1])
        b = DistTensorSpec(a)
        b.shape = (4,)
        b.set_dims_mapping([-1])
        return [a.shape, a.dims_mapping(), b.shape, b.dims_mapping(), str(a), str(b)]

    @probe("spec/attr-is-copied")
    def _():
        a = attr([1, -1])
        b = DistTensorSpec([6, 2], a)
        a.dims_mapping = [0, -1]
        a._set_partial_dims([1])
        return [b.dims_mapping(), str(b)]

    @probe("spec/shape")
    def _():
        import numpy as np

        a = DistTensorSpec([2, 3], TensorDistAttr())
        shape = a.shape
        shape.append(9)
        seen = [a.shape]
        a.shape = [np.prod([2, 3]), np.int64(4)]
        seen.append(a.shape)
        a.shape = [-1, 3]
        return seen + [a.shape, [type(d).__name__ for d in a.shape]]

    @probe("spec/set-process-mesh")
    def _():
        a = DistTensorSpec([2, 3], TensorDistAttr())
        a.set_process_mesh(mesh1)
        a.set_dims_mapping([0, -1])
        return [str(a), a.process_mesh() == mesh1]

    @probe("spec/bad-constructor", message=False)
    def _():
        DistTensorSpec([2, 3])

    @probe("spec/set-process-mesh-none", message=False)
    def _():
        DistTensorSpec([2, 3], TensorDistAttr()).set_process_mesh(None)

    # --- registry -------------------------------------------------------------------------------------
    @probe("registry/contains")
    def _():
        names = ("layer_norm", "batch_norm", "replicated", "sync_batch_norm", "layer_norm_grad", "batch_norm_grad",
                 "nope")
        return [contains(n) for n in names]

    @probe("registry/unknown")
    def _():
        fetch("sync_batch_norm")

    @probe("registry/batch-norm-backward")
    def _():
        bn.infer_backward(bx, stat, stat, stat, stat)

    @probe("registry/kwargs", message=False)
    def _():
        ln.infer_forward(x=x)

    # --- layer_norm -----------------------------------------------------------------------------------
    @probe("ln/forward")
    def _():
        return result_view(ln.infer_forward(x, s, s, 1e-5, 2))

    @probe("ln/forward-partial-and-absent-scale")
    def _():
        return result_view(ln.infer_forward(spec([64, 32, 1024], [1, -1, -1], [0]), absent(), s, 1e-5, 2))

    @probe("ln/forward-absent-with-mapping")
    def _():
        b = absent()
        b.set_dims_mapping([0])
        return result_view(ln.infer_forward(x, s, b, 1e-5, 2))

    @probe("ln/forward-begin-norm-axis-0")
    def _():
        return result_view(ln.infer_forward(x, s, s, 1e-5, 0))

    @probe("ln/forward-interleaved-args")
    def _():
        return result_view(ln.infer_forward(x, 1e-5, s, 2, s))

    @probe("ln/forward-extra-args")
    def _():
        return result_view(ln.infer_forward(x, s, s, x, 1e-5, 2, "extra", 3.5, [1, 2]))

    @probe("ln/forward-one-dim-mesh")
    def _():
        w = spec([16], [-1], on=mesh1)
        return result_view(ln.infer_forward(spec([8, 16], [0, -1], on=mesh1), w, w, 1e-5, 1))

    @probe("ln/reverse-partial-kept")
    def _():
        return result_view(ln.infer_backward(spec([64, 32, 1024], [-1, -1, -1], [0]), s, s, out, mean, mean, 1e-5, 2))

    @probe("ln/reverse-absent-scale-bias")
    def _():
        return result_view(ln.infer_backward(x, absent(), absent(), out, mean, mean, 1e-5, 2))

    @probe("ln/reverse-conflict")
    def _():
        ln.infer_backward(x, s, s, spec([64, 32, 1024], [0, -1, -1]), mean, mean, 1e-5, 2)

    @probe("ln/reverse-forced-axes-conflict")
    def _():
        o = spec([8, 8, 4, 4], [-1, -1, 0, 1])
        m = spec([8, 8], [-1, -1])
        ln.infer_backward(spec([8, 8, 4, 4], [-1, -1, -1, -1]), s, s, o, m, m, 1e-5, 2)

    @probe("ln/reverse-rank-vs-mapping")
    def _():
        ln.infer_backward(x, s, s, out, spec([64], [1, -1]), mean, 1e-5, 2)

    @probe("ln/scale-rank")
    def _():
        ln.infer_forward(x, spec([32, 1024], [-1, -1]), s, 1e-5, 1)

    for label, args in {"int-epsilon": (0, 2), "float-axis": (1e-5, 2.0), "bool-epsilon": (True, 2),
                        "bool-axis": (1e-5, False), "str-axis": (1e-5, "2"), "list-axis": (1e-5, [2]),
                        "float-list-epsilon": ([1e-5], 2), "bool-list-epsilon": ([True], 2),
                        "empty-list-epsilon": ([], 2), "float64-epsilon": (__import__("numpy").float64(1e-5), 2),
                        "float32-epsilon": (__import__("numpy").float32(1e-5), 2),
                        "int64-axis": (1e-5, __import__("numpy").int64(2)), "none-epsilon": (None, 2),
                        "tuple-epsilon": ((1e-5,), 2), "dict-axis": (1e-5, {}), "big-axis": (1e-5, 2 ** 40),
                        "str-list-epsilon": (["a"], 2), "int64-list-epsilon": ([__import__("numpy").int64(1)], 2),
                        "big-list-epsilon": ([2 ** 40], 2), "mixed-list-axis": (1e-5, [1, 2.0]),
                        "trailing-none": (1e-5, 2, None)}.items():
        def attribute_probe(args: tuple[Any, ...] = args) -> Any:
            return result_view(ln.infer_forward(x, s, s, *args))

        probe(f"ln/attribute-{label}")(attribute_probe)

    # --- batch_norm -----------------------------------------------------------------------------------
    @probe("bn/forward")
    def _():
        return result_view(bn.infer_forward(bx, stat, stat, stat, stat))

    @probe("bn/forward-partial-absent")
    def _():
        return result_view(bn.infer_forward(spec([8, 16, 4, 4], [-1, 1, -1, -1], [0]), spec([16], [-1], [0]), stat,
                                            absent(), spec([16], [0])))

    @probe("bn/forward-attributes-ignored")
    def _():
        return result_view(bn.infer_forward(spec([8, 4, 4, 16], [0, -1, -1, 1]), stat, stat, stat, stat, False, 0.9,
                                            1e-5, "NHWC", False, False))

    @probe("bn/forward-2d-5d")
    def _():
        return [result_view(bn.infer_forward(spec([8, 16], [0, 1]), stat, stat, stat, stat)),
                result_view(bn.infer_forward(spec([2, 16, 4, 4, 4], [-1, 0, -1, -1, 1]), stat, stat, stat, stat))]

    @probe("bn/x-rank-1")
    def _():
        bn.infer_forward(spec([8], [0]), stat, stat, stat, stat)

    @probe("bn/x-rank-6")
    def _():
        bn.infer_forward(spec([2] * 6, [-1] * 6), stat, stat, stat, stat)

    @probe("bn/mean-rank-2")
    def _():
        bn.infer_forward(bx, spec([16, 2], [-1, -1]), stat, stat, stat)

    @probe("bn/scale-rank-2")
    def _():
        bn.infer_forward(bx, stat, stat, spec([16, 2], [-1, -1]), stat)

    # --- instance_norm, fused_rms_norm, group_norm (registry names; see docs/*-3.3.1.md for the crash inputs) ----
    inorm, rms, gn = (_LazyRule(fetch, name) for name in ("instance_norm", "fused_rms_norm", "group_norm"))
    nx, c6 = spec([8, 6, 4, 4], [1, 0, -1, -1]), spec([6], [-1])
    stat2 = spec([8, 6], [1, 0])
    rx, r1 = spec([16, 32, 64], [1, -1, 0]), spec([64], [-1])

    @probe("in/forward")
    def _():
        return result_view(inorm.infer_forward(nx, c6, c6, 1e-5))

    @probe("in/forward-partial-and-absent-bias")
    def _():
        return result_view(inorm.infer_forward(spec([8, 6, 4, 4], [-1, 1, -1, -1], [0]), c6, absent(), 1e-5))

    @probe("in/forward-one-dim-mesh")
    def _():
        w = spec([6], [-1], on=mesh1)
        return result_view(inorm.infer_forward(spec([8, 6, 4, 4], [-1, 0, -1, -1], on=mesh1), w, w, 1e-5))

    @probe("in/forward-coshard")
    def _():
        w = spec([6], [-1], on=mesh32)
        xs = DistTensorSpec([8, 6, 4, 4], coshard([[], [0, 1], [], []], mesh32))
        return result_view(inorm.infer_forward(xs, w, w, 1e-5))

    @probe("in/x-rank-1")
    def _():
        inorm.infer_forward(spec([8], [-1]), c6, c6, 1e-5)

    @probe("in/grad")
    def _():
        return result_view(inorm.infer_backward(nx, c6, c6, stat2, stat2, spec([8, 6, 4, 4], [-1, -1, 0, 1]), 1e-5))

    @probe("in/grad-partial-and-absent-bias")
    def _():
        dy = spec([8, 6, 4, 4], [1, -1, -1, -1], [0])
        return result_view(inorm.infer_backward(nx, spec([6], [-1], [1]), absent(), stat2, stat2, dy, 1e-5))

    @probe("in/grad-y-grad-rank")
    def _():
        inorm.infer_backward(nx, c6, c6, stat2, stat2, spec([8, 6, 4], [-1, -1, -1]), 1e-5)

    @probe("rms/forward")
    def _():
        return result_view(rms.infer_forward(rx, r1, 1e-6))

    @probe("rms/forward-partial")
    def _():
        return result_view(rms.infer_forward(spec([16, 32, 64], [-1, 1, -1], [0]), spec([64], [-1], [1]), 1e-6))

    @probe("rms/forward-absent-scale")
    def _():
        rms.infer_forward(rx, absent(), 1e-6)

    @probe("rms/forward-one-dim-mesh")
    def _():
        return result_view(rms.infer_forward(spec([16, 64], [0, -1], on=mesh1), spec([64], [-1], on=mesh1), 1e-6))

    @probe("rms/forward-coshard")
    def _():
        xs = DistTensorSpec([16, 32, 64], coshard([[1, 0], [], []], mesh32))
        return result_view(rms.infer_forward(xs, spec([64], [-1], on=mesh32), 1e-6))

    @probe("rms/reverse")
    def _():
        return result_view(rms.infer_backward(rx, r1, spec([16, 32, 64], [-1, 1, -1]), spec([16, 32], [0, 1]), 1e-6))

    @probe("rms/reverse-partial")
    def _():
        out = spec([16, 32, 64], [1, -1, -1], [0])
        return result_view(rms.infer_backward(rx, r1, out, spec([16, 32], [1, -1]), 1e-6))

    @probe("gn/forward")
    def _():
        return result_view(gn.infer_forward(nx, c6, c6))

    @probe("gn/forward-partial-absent-and-attributes")
    def _():
        return result_view(gn.infer_forward(spec([8, 6, 4, 4], [-1, -1, -1, 1], [0]), absent(), c6, 1e-5, 2, "NCHW"))

    @probe("gn/forward-one-dim-mesh")
    def _():
        w = spec([6], [-1], on=mesh1)
        return result_view(gn.infer_forward(spec([8, 6, 4, 4], [0, -1, -1, -1], on=mesh1), w, w))

    @probe("gn/forward-coshard")
    def _():
        w = spec([6], [-1], on=mesh32)
        return result_view(gn.infer_forward(DistTensorSpec([8, 6, 4, 4], coshard([[0, 1], [], [], []], mesh32)), w, w))

    @probe("gn/x-rank-2")
    def _():
        gn.infer_forward(spec([8, 6], [0, -1]), c6, c6)

    # --- replicated -------------------------------------------------------------------------------------
    z, o4 = spec([4, 4], [0, -1], on=mesh1), spec([3, 3, 3, 3], [-1, 0, -1, -1], [1])

    @probe("replicated/forward")
    def _():
        return result_view(rep.infer_forward([x, spec([16], [-1], [1]), z], [o4, z]))

    @probe("replicated/forward-absent-first")
    def _():
        return result_view(rep.infer_forward([absent(), x], [o4]))

    @probe("replicated/forward-single-spec")
    def _():
        return result_view(rep.infer_forward(x, [o4]))

    @probe("replicated/backward")
    def _():
        return result_view(rep.infer_backward([x, z], [o4, z]))

    @probe("replicated/attributes-ignored")
    def _():
        return result_view(rep.infer_forward([x], [o4], 1.0, "s"))

    observed = {}
    for name, run in probes.items():
        running[0] = name
        observed[name] = {"not_run": True} if name in not_run else run()
    return observed


def crashing_probes() -> frozenset[str]:
    """The probes the installed Paddle's release profile lists as killing the process."""
    from ..parity.detect import installed_release

    profile = installed_release()
    if profile is None or profile.is_newer_than_known:
        return frozenset()
    return frozenset(dict(profile.probe_crashes))


if __name__ == "__main__":
    if sys.argv[1:] == ["native"]:
        print(json.dumps(observe(native_api(), not_run=crashing_probes())))
    else:
        print(json.dumps(observe(compat_api())))
