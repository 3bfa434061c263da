"""Hand-picked cases for the native backend tests: every corner the grid sample might miss.

Each entry is (label, case). Labels say what the case is there for; the tests look some of them
up by label.
"""

from __future__ import annotations

from paddle_spmd_port import DistTensorSpec, ProcessMesh
from paddle_spmd_port.case import Case

MESH_1D = ProcessMesh((4,))
MESH_2D = ProcessMesh((2, 3))
MESH_3D = ProcessMesh((2, 2, 2))


def _s(shape, dm, mesh, partial=()):
    return DistTensorSpec(tuple(shape), tuple(dm), mesh, frozenset(partial))


def _r(shape, mesh):
    return _s(shape, [-1] * len(shape), mesh)


def _bn(label, x_shape, x_dm, fmt, mesh, *, x_partial=(), scale=True, bias=True, mean_dm=None):
    c = 1 if fmt[1] == "C" else len(x_shape) - 1
    ch = (x_shape[c],)
    mean = _s(ch, mean_dm, mesh) if mean_dm is not None else _r(ch, mesh)
    inputs = (_s(x_shape, x_dm, mesh, x_partial), mean, _r(ch, mesh), _r(ch, mesh) if scale else None,
              _r(ch, mesh) if bias else None)
    return label, Case("batch_norm", mesh, inputs, (("data_format", fmt),), label)


def _bn_grad(label, x_shape, x_dm, fmt, mesh, *, og_dm=None, og_partial=(), scale=True, bias=True, reserve=False):
    c = 1 if fmt[1] == "C" else len(x_shape) - 1
    ch = (x_shape[c],)
    og = _s(x_shape, og_dm if og_dm is not None else x_dm, mesh, og_partial)
    inputs = (_s(x_shape, x_dm, mesh), _r(ch, mesh) if scale else None, _r(ch, mesh) if bias else None,
              _r(ch, mesh), _r(ch, mesh), _r(ch, mesh), _r(ch, mesh), _r(ch, mesh) if reserve else None, og)
    return label, Case("batch_norm_grad", mesh, inputs, (("data_format", fmt),), label)


def _ln(label, x_shape, x_dm, b, mesh, *, x_partial=(), scale=True, bias=True):
    n = 1
    for s in x_shape[b:]:
        n *= s
    inputs = (_s(x_shape, x_dm, mesh, x_partial), _r((n,), mesh) if scale else None, _r((n,), mesh) if bias else None)
    return label, Case("layer_norm", mesh, inputs, (("epsilon", 1e-5), ("begin_norm_axis", b)), label)


def _ln_grad(label, x_shape, x_dm, b, mesh, *, x_partial=(), mean_dm=None, mean_partial=(), og_dm=None,
             og_partial=(), scale=True, bias=True):
    n = 1
    for s in x_shape[b:]:
        n *= s
    stat = tuple(x_shape[:b])
    mean = _s(stat, mean_dm if mean_dm is not None else x_dm[:b], mesh, mean_partial)
    inputs = (_s(x_shape, x_dm, mesh, x_partial), _r((n,), mesh) if scale else None, _r((n,), mesh) if bias else None,
              mean, mean, _s(x_shape, og_dm if og_dm is not None else x_dm, mesh, og_partial))
    return label, Case("layer_norm_grad", mesh, inputs, (("epsilon", 1e-5), ("begin_norm_axis", b)), label)


def curated_cases() -> list[tuple[str, Case]]:
    x4 = (8, 6, 4, 4)
    return [
        # batch_norm forward: the three layouts the op accepts, 1-D/2-D/3-D meshes, partial and None
        _bn("bn-nchw-c-split-2d", x4, (0, 1, -1, -1), "NCHW", MESH_2D),
        _bn("bn-nchw-n-split-1d", x4, (0, -1, -1, -1), "NCHW", MESH_1D),
        _bn("bn-nhwc-c-split-2d", (8, 4, 4, 6), (0, -1, -1, 1), "NHWC", MESH_2D),
        _bn("bn-ndhwc-c-split-3d", (8, 2, 2, 2, 6), (0, -1, 1, -1, 2), "NDHWC", MESH_3D),
        _bn("bn-nchw-partial-x-3d", x4, (-1, 1, -1, -1), "NCHW", MESH_3D, x_partial=(0, 2)),
        _bn("bn-nchw-no-scale-bias", x4, (-1, 0, -1, -1), "NCHW", MESH_2D, scale=False, bias=False),
        _bn("bn-nchw-mean-split", x4, (-1, -1, -1, -1), "NCHW", MESH_2D, mean_dm=(1,)),
        _bn("bn-nhwc-3d-x", (8, 4, 6), (1, -1, 0), "NHWC", MESH_2D),
        _bn("bn-nchw-2d-x", (8, 6), (0, 1), "NCHW", MESH_2D),
        _bn("bn-ncl-layout", (8, 6, 4), (-1, 0, -1), "NCL", MESH_2D),  # the op rejects NCL
        ("bn-mean-2d", Case("batch_norm", MESH_2D, (_r(x4, MESH_2D), _r((6, 1), MESH_2D), _r((6,), MESH_2D),
                                                     _r((6,), MESH_2D), _r((6,), MESH_2D)), (), "bn-mean-2d")),
        # batch_norm grad
        _bn_grad("bng-nchw-c-split-2d", x4, (0, 1, -1, -1), "NCHW", MESH_2D, og_dm=(-1, -1, -1, -1)),
        _bn_grad("bng-nhwc-c-split-3d", (8, 4, 4, 6), (0, -1, 1, 2), "NHWC", MESH_3D),
        _bn_grad("bng-ncl-1d", (8, 6, 4), (-1, 0, -1), "NCL", MESH_1D),  # the grad op accepts NCL
        _bn_grad("bng-og-partial", x4, (-1, 1, -1, -1), "NCHW", MESH_2D, og_dm=(-1, -1, -1, -1), og_partial=(0, 1)),
        _bn_grad("bng-reserve-space", x4, (0, 1, -1, -1), "NCHW", MESH_2D, reserve=True),
        _bn_grad("bng-no-scale-c-replicated", x4, (0, -1, -1, -1), "NCHW", MESH_2D, scale=False, bias=False),
        _bn_grad("bng-no-scale-c-split", x4, (-1, 1, -1, -1), "NCHW", MESH_2D, scale=False),  # Paddle segfaults
        _bn_grad("bng-after-crash", x4, (-1, 1, -1, -1), "NCHW", MESH_2D),
        # layer_norm forward
        _ln("ln-b2-2d", (8, 6, 16), (0, 1, -1), 2, MESH_2D),
        _ln("ln-b1-normed-split-1d", (8, 6, 16), (-1, 0, -1), 1, MESH_1D),
        _ln("ln-partial-x-3d", (8, 6, 4, 4), (0, -1, 2, -1), 2, MESH_3D, x_partial=(1,)),
        _ln("ln-no-scale", (8, 6, 16), (1, -1, 0), 2, MESH_2D, scale=False),
        _ln("ln-b0", (8, 6, 16), (0, -1, -1), 0, MESH_2D),  # InferMeta rejects b = 0
        # layer_norm grad
        _ln_grad("lng-b2-2d", (8, 6, 16), (0, 1, -1), 2, MESH_2D),
        _ln_grad("lng-og-fills-x-3d", (8, 6, 4, 4), (0, -1, -1, -1), 2, MESH_3D, og_dm=(-1, 2, -1, -1)),
        _ln_grad("lng-no-scale-bias", (8, 6, 16), (0, -1, -1), 2, MESH_2D, scale=False, bias=False),
        _ln_grad("lng-og-partial-1d", (8, 6, 16), (0, -1, -1), 1, MESH_1D, og_dm=(-1, -1, -1), og_partial=(0,)),
        _ln_grad("lng-b0", (8, 6, 16), (0, 1, -1), 0, MESH_2D),
        _ln_grad("lng-conflict", (8, 6, 16), (0, -1, -1), 2, MESH_2D, og_dm=(1, -1, -1)),
        # x Partial on mesh dim 1 kept, while mean's sharding puts dim 1 on axis j: Shard + Partial
        _ln_grad("lng-shard-and-partial", (8, 6, 16), (0, -1, -1), 2, MESH_2D, x_partial=(1,),
                 mean_dm=(0, 1)),
    ]


def curated(label: str) -> Case:
    return dict(curated_cases())[label]
