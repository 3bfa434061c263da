"""Process meshes shaped like Paddle's: the C++ ``core.ProcessMesh`` a ``TensorDistAttr`` hands
back, and the user-facing ``auto.ProcessMesh`` / ``dist.ProcessMesh`` built from a nested list.

    class            built from                    str(...)
    CoreProcessMesh  shape, process_ids, dim_names {shape: [2,3], process_ids: [0,1,2,3,4,5], dim_names: [d0,d1]}
    ProcessMesh      mesh=[[0,1,2],[3,4,5]]        shape [2, 3], process_ids [0, 1, 2, 3, 4, 5], dim_names ['d0', 'd1']

As in Paddle 3.3.1, two meshes are equal when their shapes and process ids are equal; the dim
names are not compared. Any object with ``.shape`` and ``.process_ids`` (a real Paddle mesh
included) compares and converts too.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

from ..types import ProcessMesh as PortMesh


def _ints(values: Any, what: str) -> list[int]:
    try:
        return [operator.index(v) for v in values]
    except TypeError:
        raise TypeError(f"{what} must be a list of ints, got {values!r}") from None


class CoreProcessMesh:
    """What ``TensorDistAttr.process_mesh`` returns: shape, process ids and dim names, read-only.

    ``CoreProcessMesh()`` is the empty mesh that ``DistTensorSpec.process_mesh()`` reports for a
    spec whose attr has none.
    """

    __slots__ = ("_shape", "_process_ids", "_dim_names", "_port")

    def __init__(self, shape: Sequence[int] = (), process_ids: Sequence[int] = (),
                 dim_names: Sequence[str] = ()) -> None:
        shape_, ids = _ints(shape, "shape"), _ints(process_ids, "process_ids")
        names = [str(n) for n in dim_names]
        if shape_ and (math.prod(shape_) != len(ids) or len(names) != len(shape_)):
            raise ValueError(f"a mesh of shape {shape_} needs {math.prod(shape_)} process ids and {len(shape_)} "
                             f"dim names, got {ids} and {names}")
        self._shape, self._process_ids, self._dim_names = tuple(shape_), tuple(ids), tuple(names)
        self._port: PortMesh | None = None

    @property
    def shape(self) -> list[int]:
        return list(self._shape)

    @property
    def process_ids(self) -> list[int]:
        return list(self._process_ids)

    @property
    def dim_names(self) -> list[str]:
        return list(self._dim_names)

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return len(self._process_ids)

    def empty(self) -> bool:
        return not self._process_ids

    def contains(self, process_id: int) -> bool:
        return process_id in self._process_ids

    def dim_size(self, dim: int | str) -> int:
        index = self._dim_names.index(dim) if isinstance(dim, str) else operator.index(dim)
        return self._shape[index]

    def to_port(self) -> PortMesh | None:
        """The port's own mesh type (``None`` for the empty mesh)."""
        if self.empty():
            return None
        if self._port is None:
            self._port = PortMesh(self._shape, self._process_ids, self._dim_names)
        return self._port

    def __eq__(self, other: object) -> bool:
        shape, ids = getattr(other, "shape", None), getattr(other, "process_ids", None)
        if shape is None or ids is None:
            return False
        try:
            return list(self._shape) == list(shape) and list(self._process_ids) == list(ids)
        except TypeError:
            return False

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash((self._shape, self._process_ids))

    def __str__(self) -> str:
        def join(items: Sequence[Any]) -> str:
            return ",".join(map(str, items))
        return f"{{shape: [{join(self._shape)}], process_ids: [{join(self._process_ids)}], " \
               f"dim_names: [{join(self._dim_names)}]}}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape}, process_ids={self.process_ids}, dim_names={self.dim_names})"


class ProcessMesh(CoreProcessMesh):
    """Drop-in for ``auto.ProcessMesh`` / ``dist.ProcessMesh`` as SPMD rule tests use it:
    ``ProcessMesh([[0, 1, 2], [3, 4, 5]])``, ``ProcessMesh(mesh=..., dim_names=["x", "y"])`` or
    ``ProcessMesh(shape=[2, 3], process_ids=range(6))``. Default dim names are ``d0, d1, ...``."""

    __slots__ = ()

    def __init__(self, mesh: Any = None, dim_names: list[str] | None = None,
                 shape: Sequence[int] | None = None, process_ids: Sequence[int] | None = None) -> None:
        # Paddle's own refusals of the container types; every value check is the port mesh's
        # (InvalidSpecError, a ValueError, naming the argument)
        if dim_names is not None and not isinstance(dim_names, list):
            raise ValueError("The dim_names must be an instance of list.")
        if mesh is None:
            if shape is None or process_ids is None:
                raise ValueError("ProcessMesh needs a mesh, or both shape and process_ids.")
            port = PortMesh(shape, list(process_ids), dim_names)
        elif isinstance(mesh, list) or hasattr(mesh, "tolist"):
            port = PortMesh(mesh=mesh, dim_names=dim_names)
        else:
            raise ValueError("The mesh must be an instance of list or np.ndarray.")
        super().__init__(port.shape, port.process_ids or (), port.dim_names or ())
        self._port = port

    @property
    def mesh(self) -> Any:
        """The process ids laid out in the mesh's shape (a numpy array when numpy is installed)."""
        nested: Any = list(self._process_ids)
        for size in reversed(self._shape[1:]):
            nested = [nested[i:i + size] for i in range(0, len(nested), size)]
        try:
            import numpy as np
        except ImportError:
            return nested
        return np.array(nested)

    def get_dim_size(self, dim: int | str | None) -> int:
        return 1 if dim is None else self.dim_size(dim)

    def get_mesh_with_dim(self, dim_name: str, index: int | None = None) -> ProcessMesh:
        """The mesh with ``dim_name`` moved first (the other dims in order); with ``index``, the
        slice at that position of it, one dim fewer (Paddle 3.3.1's answers, probe mesh/sub-meshes)."""
        np = _numpy("get_mesh_with_dim")
        if dim_name not in self._dim_names:
            raise AssertionError(f"{dim_name} is not a valid dim name.")
        axis = self._dim_names.index(dim_name)
        order = [axis] + [i for i in range(self.ndim) if i != axis]
        ids, names = np.array(self.mesh).transpose(order), [self._dim_names[i] for i in order]
        if index is not None:
            ids, names = ids[index], names[1:]
        return ProcessMesh(ids, dim_names=names)

    def __getitem__(self, index: Any) -> ProcessMesh:
        """The sub-mesh numpy indexing gives. Its dim names: those of the sliced positions for a
        tuple index, all but the first for an int, all for a slice; a single process is a 1-D mesh
        named ``d0``. Other names than one per dim fail Paddle's assertion, as there."""
        np = _numpy("ProcessMesh[...]")
        ids = np.array(self.mesh)[index]
        if isinstance(index, tuple):
            names = [self._dim_names[i] for i, part in enumerate(index) if isinstance(part, slice)]
        elif isinstance(index, slice):
            names = list(self._dim_names)
        else:
            names = list(self._dim_names[1:])
        if ids.ndim == 0:
            return ProcessMesh([int(ids)])
        if len(names) != ids.ndim:
            raise AssertionError("The length of dims_names must be same as the shape of the mesh.")
        return ProcessMesh(ids, dim_names=names)

    def __str__(self) -> str:
        return f"shape {self.shape}, process_ids {self.process_ids}, dim_names {self.dim_names}"


def _numpy(what: str) -> Any:
    try:
        import numpy
    except ImportError:
        raise ImportError(f"{what} needs numpy (as Paddle's does); install numpy") from None
    return numpy


def as_core_mesh(mesh: Any) -> CoreProcessMesh | None:
    """Accept a compat mesh, any object with ``shape/process_ids/dim_names`` (a real Paddle
    mesh), or ``None``; raise TypeError like Paddle's binding for anything else."""
    if mesh is None or type(mesh) is CoreProcessMesh:
        return mesh
    if isinstance(mesh, CoreProcessMesh):  # an auto-style ProcessMesh: keep only the core view, as Paddle does
        core = CoreProcessMesh(mesh._shape, mesh._process_ids, mesh._dim_names)
        core._port = mesh._port
        return core
    if all(hasattr(mesh, name) for name in ("shape", "process_ids", "dim_names")):
        return CoreProcessMesh(list(mesh.shape), list(mesh.process_ids), list(mesh.dim_names))
    raise TypeError(f"process_mesh(): incompatible argument {mesh!r}; expected a ProcessMesh "
                    "(paddle_spmd_port.compat.ProcessMesh, or any object with shape, process_ids and dim_names)")


def from_port_mesh(mesh: PortMesh | None) -> CoreProcessMesh | None:
    if mesh is None:
        return None
    core = CoreProcessMesh(mesh.shape, mesh.process_ids or (), mesh.dim_names or ())
    core._port = mesh
    return core
