"""Probes of the static auto-parallel API: each one makes the same calls on either Paddle 3.3.1
or paddle_spmd_port.compat and records what it sees (values, strings, exception class and
message), so tests/test_compat.py can compare the two probe by probe, and the release profiles
(:mod:`paddle_spmd_port.releases`) can name the probes each Paddle release answers differently.

    python -m paddle_spmd_port.compat.probes native   # prints the native observations as JSON
    python -m paddle_spmd_port.compat.probes          # the same probes on the compat layer

Paddle is imported only by :func:`native_api`, when it is called.

The probes of the binding's own types (TensorDistAttr, ProcessMesh, DistTensorSpec), the registry
and the generic ``replicated`` rule live here; each op family's probes in its
``ops/<family>/compat.py`` (``probes(kit)``, handed a :class:`~paddle_spmd_port.ops.kit.compat.ProbeKit`
bound to the API probed). Only calls that Paddle survives are probed (the ones that crash it are
port-only tests).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from ..ops.kit.compat import Probe, ProbeKit, compat_parts

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


def _attr_probes(kit: ProbeKit) -> None:
    """TensorDistAttr: a fresh one, its str, its dims mapping (dynamic dims, the multi-mapping view)."""
    probe, attr, TensorDistAttr, DistTensorSpec = kit.probe, kit.attr, kit.TensorDistAttr, kit.DistTensorSpec

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


def _coshard_probes(kit: ProbeKit) -> None:
    """Co-sharding (3.3.1): the lists are kept, dims_mapping reads one mesh dim per axis."""
    probe, attr, coshard, TensorDistAttr, DistTensorSpec, mesh, mesh22, mesh32 = (
        kit.probe, kit.attr, kit.coshard, kit.TensorDistAttr, kit.DistTensorSpec, kit.mesh, kit.mesh22, kit.mesh32)

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


def _attr_partial_probes(kit: ProbeKit) -> None:
    """TensorDistAttr's partial status: set, read, cleaned, refused."""
    probe, attr = kit.probe, kit.attr

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


def _attr_value_probes(kit: ProbeKit) -> None:
    """TensorDistAttr's values: what a dims mapping takes, a mesh of None, equality."""
    probe, attr, TensorDistAttr, ProcessMesh = kit.probe, kit.attr, kit.TensorDistAttr, kit.ProcessMesh

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


def _attr_bookkeeping_probes(kit: ProbeKit) -> None:
    """TensorDistAttr's bookkeeping (batch_dim, chunk_id, dynamic_dims, annotated, split factor):
    its fields, its str, reset, verify and equality."""
    probe, attr, TensorDistAttr, DistTensorSpec, mesh = (
        kit.probe, kit.attr, kit.TensorDistAttr, kit.DistTensorSpec, kit.mesh)

    @probe("attr/bookkeeping-fields")
    def _():
        fresh, a = TensorDistAttr(), attr([0, -1])
        a.batch_dim, a.chunk_id, a.dynamic_dims = True, -3, [1, 0]
        b = attr([0, -1])
        b.dynamic_dims = (True,)
        b.dims_mapping = [0, -1, -1]  # a non-empty dynamic_dims is not refilled
        return [fresh.batch_dim, fresh.chunk_id, fresh.dynamic_dims, fresh.annotated, a.batch_dim, a.chunk_id,
                a.dynamic_dims, str(a), b.dynamic_dims, str(DistTensorSpec([4, 6], a))]

    @probe("attr/bookkeeping-type", message=False)
    def _():
        attr([0, -1]).batch_dim = 1.5

    @probe("attr/annotated")
    def _():
        a = attr([0, -1])
        seen = []
        for name in ("process_mesh", "dims_mapping", "batch_dim", "dynamic_dims", "chunk_id", "partial", "bogus"):
            a.mark_annotated(name)
            seen.append(a.is_annotated(name))
        marked, text = a.annotated, str(a)
        copy = a.annotated
        copy["x"] = True  # a copy: the attr's own stays
        a.clear_annotated()
        b = attr([0, -1])
        b.annotated = {"process_mesh": 1, "bogus": False}
        return [seen, marked, text, a.annotated, b.annotated, b.is_annotated("bogus"), str(b)]

    @probe("attr/reset")
    def _():
        a = attr([0, -1], [1])
        a.batch_dim, a.chunk_id = 1, 2
        a.mark_annotated("process_mesh")
        a.reset()
        b = TensorDistAttr()
        b.process_mesh = mesh
        b.multi_dims_mapping = [[0, 1], []]
        b.reset()
        return [a.dims_mapping, a.process_mesh is None, sorted(a._partial_dims()), a.batch_dim, a.chunk_id,
                a.dynamic_dims, a.annotated, str(a), b.dims_mapping, b.multi_dims_mapping, str(b)]

    @probe("attr/verify")
    def _():
        annotated, dynamic, partial = attr([]), attr([]), TensorDistAttr()
        annotated.annotated = {"bogus": True}
        dynamic.dynamic_dims = [True]
        partial.process_mesh = mesh
        partial._set_partial_dims([1])
        high = attr([])
        high.batch_dim = 9
        return [TensorDistAttr().verify(), attr([]).verify(), attr([0, -1]).verify(), attr([5, -1]).verify(),
                annotated.verify(), dynamic.verify(), partial.verify(), high.verify()]

    @probe("attr/split-factor")
    def _():
        a = attr([0, -1])
        a._set_split_factor(0, 2)
        b = attr([0, -1])
        b._set_split_factor(0, 2)
        b._set_split_factor(0, 4)
        c = TensorDistAttr()
        c._set_split_factor(5, 2)
        return [str(a), str(b), str(c), a == attr([0, -1]), a == b, str(DistTensorSpec([4, 6], a))]

    @probe("attr/split-factor-second-dim")
    def _():
        a = attr([0, -1])
        a._set_split_factor(0, 2)
        a._set_split_factor(1, 3)

    @probe("attr/equality-bookkeeping")
    def _():
        out = []
        for field, value in (("batch_dim", 1), ("chunk_id", 1), ("dynamic_dims", [True, False])):
            a = attr([0, -1])
            setattr(a, field, value)
            out.append(a == attr([0, -1]))
        a = attr([0, -1])
        a.mark_annotated("process_mesh")
        return out + [a == attr([0, -1])]


def _attr_type_probes(kit: ProbeKit) -> None:
    """What TensorDistAttr and DistTensorSpec make of other types where they want a list (a range, a
    set, a generator, a dict), and whether an attr is hashable."""
    probe, attr, TensorDistAttr, DistTensorSpec = kit.probe, kit.attr, kit.TensorDistAttr, kit.DistTensorSpec

    @probe("attr/lists-are-sequences", message=False)
    def _():
        a, spec_ = attr([0, -1]), DistTensorSpec([4, 6], attr([0, -1]))
        a.dims_mapping = range(-1, 1)
        a._set_partial_dims(range(1, 2))
        seen = [a.dims_mapping, sorted(a._partial_dims())]
        for target, name, value in ((a, "dims_mapping", {0, -1}), (a, "dims_mapping", (i for i in [0])),
                                    (spec_, "shape", {4}), (a, "multi_dims_mapping", [{0}, []]),
                                    (a, "dynamic_dims", {True}), (a, "dims_mapping", {0: 1})):
            try:
                setattr(target, name, value)
                seen.append("taken")
            except TypeError:
                seen.append("TypeError")
        for call in (lambda: a._set_partial_dims({0}), lambda: a._clean_partial_dims({1}),
                     lambda: spec_.set_dims_mapping({0, -1}), lambda: DistTensorSpec({4, 6}, attr([0, -1]))):
            try:
                call()
                seen.append("taken")
            except TypeError:
                seen.append("TypeError")
        return seen

    @probe("attr/unhashable", message=False)
    def _():
        hash(TensorDistAttr())


def _mesh_probes(kit: ProbeKit) -> None:
    """ProcessMesh: properties, sub-meshes, copies, constructors, equality, the binding's own view."""
    probe, attr, DistTensorSpec, ProcessMesh, mesh, mesh1 = (
        kit.probe, kit.attr, kit.DistTensorSpec, kit.ProcessMesh, kit.mesh, kit.mesh1)

    @probe("mesh/properties")
    def _():
        return [str(mesh), mesh.shape, mesh.process_ids, mesh.dim_names, mesh.ndim, mesh.size,
                mesh.get_dim_size("d1"), mesh.get_dim_size(0), mesh.contains(3), mesh.contains(9),
                mesh.mesh.tolist(), str(mesh1)]

    @probe("mesh/sub-meshes")
    def _():
        named = ProcessMesh([[0, 1, 2], [3, 4, 5]], dim_names=["x", "y"])
        cube = ProcessMesh([[[0, 1], [2, 3]], [[4, 5], [6, 7]]], dim_names=["a", "b", "c"])
        out = []
        for make in (lambda: named.get_mesh_with_dim("x"), lambda: named.get_mesh_with_dim("y"),
                     lambda: named.get_mesh_with_dim("x", 1), lambda: named.get_mesh_with_dim("y", 2),
                     lambda: cube.get_mesh_with_dim("b"), lambda: cube.get_mesh_with_dim("b", 1),
                     lambda: named[0], lambda: named[1, 2], lambda: named[:, 1], lambda: named[0:1], lambda: cube[1],
                     lambda: cube[1][0], lambda: named.get_mesh_with_dim("y")[0]):
            sub = make()
            out.append([type(sub).__name__, str(sub), sub == named])
        return out

    @probe("mesh/sub-mesh-bad-name")
    def _():
        ProcessMesh([[0, 1, 2], [3, 4, 5]], dim_names=["x", "y"]).get_mesh_with_dim("z")

    @probe("mesh/sub-mesh-names-mismatch")
    def _():
        ProcessMesh([[[0, 1], [2, 3]], [[4, 5], [6, 7]]])[:, 0]

    @probe("mesh/copies")
    def _():
        import copy

        a = attr([0, -1])
        twin = copy.copy(a)
        twin._set_partial_dims([1])
        deep = copy.deepcopy(a)
        deep.dims_mapping = [-1, -1]
        s = DistTensorSpec([4, 6], a)
        t = copy.copy(s)
        t.set_dims_mapping([-1, 0])
        return [sorted(a._partial_dims()), sorted(twin._partial_dims()), a.dims_mapping, deep == a,
                s.dims_mapping(), t.dims_mapping(), str(copy.deepcopy(s)) == str(s), copy.copy(mesh) == mesh,
                type(copy.deepcopy(mesh)).__name__]

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


def _spec_probes(kit: ProbeKit) -> None:
    """DistTensorSpec: the stand-in for an absent tensor, str, copies, shape, process mesh."""
    probe, attr, spec, absent, TensorDistAttr, DistTensorSpec, mesh1 = (
        kit.probe, kit.attr, kit.spec, kit.absent, kit.TensorDistAttr, kit.DistTensorSpec, kit.mesh1)

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


def _registry_probes(kit: ProbeKit) -> None:
    """The registry: which names each one holds (every family's ``contains``, and two more)."""
    parts = list(compat_parts())

    @kit.probe("registry/contains")
    def _():
        names = (*(name for _family, part in parts for name in part.contains), "replicated", "nope")
        return [kit.contains(n) for n in names]


def _family_probes(kit: ProbeKit) -> None:
    """Each family's probes (``ops/<family>/compat.py``), family by family."""
    for _family, part in compat_parts():
        if part.probes is not None:
            part.probes(kit)


def _replicated_probes(kit: ProbeKit) -> None:
    """The generic ``replicated`` rule: forward, backward, an absent first input, attributes it ignores."""
    probe, spec, absent, mesh1, rep = kit.probe, kit.spec, kit.absent, kit.mesh1, kit.rule("replicated")
    x = spec([64, 32, 1024], [1, -1, -1])
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


#: The probe groups in the order they are registered (and observed): the binding's own types, the
#: registry, each family's, the replicated rule.
GROUPS: tuple[Callable[[ProbeKit], None], ...] = (
    _attr_probes, _coshard_probes, _attr_partial_probes, _attr_value_probes, _attr_bookkeeping_probes,
    _attr_type_probes, _mesh_probes, _spec_probes, _registry_probes, _family_probes, _replicated_probes)


def probe_kit(api: SimpleNamespace, probe: Callable[..., Callable[[Probe], Probe]],
              fetch: Callable[[str], Any], contains: Callable[[str], Any]) -> ProbeKit:
    """The kit every probe group is handed, bound to ``api``: its classes, the meshes the probes
    use (2x3, a 1-D pair, 2x2, 3x2) and the input builders on them."""
    import numpy as np

    TensorDistAttr, DistTensorSpec, ProcessMesh = api.TensorDistAttr, api.DistTensorSpec, api.ProcessMesh
    mesh = ProcessMesh(mesh=[[0, 1, 2], [3, 4, 5]])
    mesh1 = ProcessMesh([0, 1], dim_names=["x"])
    mesh22 = ProcessMesh(mesh=[[0, 1], [2, 3]])
    mesh32 = ProcessMesh(mesh=[[0, 1], [2, 3], [4, 5]])

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

    def coshard(multi: list[list[int]], on: Any = mesh22) -> Any:
        a = TensorDistAttr()
        a.process_mesh = on
        a.multi_dims_mapping = multi
        return a

    return ProbeKit(probe=probe, rule=lambda name: _LazyRule(fetch, name), fetch=fetch, contains=contains,
                    TensorDistAttr=TensorDistAttr, DistTensorSpec=DistTensorSpec, ProcessMesh=ProcessMesh, mesh=mesh,
                    mesh1=mesh1, mesh22=mesh22, mesh32=mesh32, attr=attr, spec=spec, absent=absent, coshard=coshard,
                    result_view=result_view, np=np)


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

    probes: dict[str, Callable[[], Any]] = {}

    def probe(name: str, *, message: bool = True) -> Callable[[Probe], Probe]:
        def register(fn: Probe) -> Probe:
            probes[name] = lambda: attempt(fn, message=message)
            return fn
        return register

    kit = probe_kit(api, probe, fetch, contains)
    for group in GROUPS:
        group(kit)
    observed = {}
    for name, run in probes.items():
        running[0] = name
        observed[name] = {"not_run": True} if name in not_run else run()
    return observed


def crashing_probes() -> frozenset[str]:
    """The probes the installed Paddle's release profile lists as killing the process."""
    from ..releases import installed_release

    profile = installed_release()
    if profile is None or profile.is_newer_than_known:
        return frozenset()
    return frozenset(dict(profile.probe_crashes))


if __name__ == "__main__":
    if sys.argv[1:] == ["native"]:
        print(json.dumps(observe(native_api(), not_run=crashing_probes())))
    else:
        print(json.dumps(observe(compat_api())))
