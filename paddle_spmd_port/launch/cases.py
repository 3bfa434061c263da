"""Cases for real multi-process runs: one functional-API call on one sharded input.

A :class:`LaunchCase` says which op to call (``F.layer_norm``, ``F.batch_norm``,
``paddle.nn.SyncBatchNorm``, ``F.group_norm`` or ``F.instance_norm``), on which global shape, how x
is placed on which mesh, and the op's options. Weight, bias and the running statistics are always placed Replicate; the
upstream gradient is given exactly the placement the forward output came out with.

The default grids (:func:`default_cases`), for a mesh whose every dim has size 2::

    op          configurations                                    x placements         variants
    layer_norm  [4,8]/[8]  [4,6,8]/[8],[6,8]  [2,4,6,4]/[4],[6,4],  every R / S(axis)   affine both/none;
                [4,6,4]   (shape / normalized_shape)              combination (*)      weight-only and
                                                                                       bias-only for x all
                                                                                       R or S(0) alone
    batch_norm  NC [4,6], NCL [4,6,8], NLC [4,8,6], NCHW          as above (*)         training x affine
                [4,6,2,4], NHWC [4,2,4,6], NCDHW [2,6,2,2,4],                          both/none; eval (2-D
                NDHWC [2,2,2,4,6]                                                      mesh: when a mesh dim
                                                                                       is R); weight/bias-
                                                                                       only with C sharded
    batch_norm  NCHW, NHWC, NC on a 1x2 / 2x1 mesh (the C axis on a size-1 mesh dim: the only way
                the rule's "C stays sharded" path runs in 3.3.1)
    group_norm  NCHW [4,6,2,4] groups 3, NHWC [4,2,4,6] groups 3,     as above (*)         affine both/none;
                NCL [4,6,8] groups 2, NDHWC [2,2,2,4,6] groups 2                           weight/bias-only for
                                                                                       x all R or S(0) alone
    instance_   NCHW [4,6,2,4], NCDHW [2,6,2,2,4]                     as above (*)         affine both/none;
    norm                                                                                   weight/bias-only for
                                                                                       x all R, S(0) or
                                                                                       S(1) alone; and
                                                                                       forward-only where
                                                                                       the rule keeps a
                                                                                       spatial axis split
    instance_   NC [4,6], NCL [4,6,8] (the rule aborts Paddle on a    all R, S(0) alone    affine both
    norm        2-D / 3-D x: never run, confirmed by a crash probe)

(*) see :func:`placement_grid`: n+1 placements of a rank-n x on a 1-D mesh, (n+1)^2 - n on a
2-D mesh. ``sync_batch_norm`` cases are added only for ``backend="gpu"`` (no CPU kernel in Paddle).

The co-shard set (:func:`coshard_cases`, ``launch --coshard``): x split along two or more mesh
dims (``S(d)#k`` placements), see :data:`COSHARD_CONFIGS` and :func:`coshard_orders`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

from ..case import write_jsonl
from ..rules.signatures import DATA_FORMAT_NDIM, channel_axis
from ..types import Mapping, MeshDims

OPS = ("layer_norm", "batch_norm", "sync_batch_norm", "group_norm", "instance_norm")
BN_OPS = ("batch_norm", "sync_batch_norm")
"""The ops with running statistics."""

#: The rule keys (``runctl.rule_keys``) each op's eager call runs: its forward rule, and its grad
#: rule in the backward (GroupNormInferSpmd calls GroupNormInferSpmdBase, the grad alike).
OP_RULES: dict[str, tuple[str, ...]] = {
    "layer_norm": ("layer_norm", "layer_norm_grad"),
    "batch_norm": ("batch_norm", "batch_norm_grad"),
    "sync_batch_norm": ("sync_batch_norm", "sync_batch_norm_grad"),
    "group_norm": ("group_norm", "group_norm_base", "group_norm_grad", "group_norm_grad_base"),
    "instance_norm": ("instance_norm", "instance_norm_grad"),
}

_RMS_NOT_REACHED = (
    "no eager API reaches the rms_norm rules in Paddle 3.3.1 on CPU: F.rms_norm, fused_rms_norm_ext and "
    "fast_rms_norm have no CPU kernel (NotFound), fused_rms_norm (fused_rms_norm_quant) dies with SIGILL in "
    "its AVX kernel on this CPU, and none of their eager functions calls RmsNorm*InferSpmd "
    "(docs/launch-norms-3.3.1.md)")

#: Rule keys no launch case reaches, and why (``launch --rules`` refuses them by name).
NOT_LAUNCHED: dict[str, str] = {
    "batch_norm_static": "a static-graph rule; eager calls run the forward and grad rules only",
    "layer_norm_reverse": "a reverse rule; eager calls run the forward and grad rules only",
    "rms_norm": _RMS_NOT_REACHED,
    "rms_norm_reverse": _RMS_NOT_REACHED,
    "rms_norm_grad": _RMS_NOT_REACHED,
    "fast_ln": "the fast_ln op never calls FastLnInferSpmd (libpaddle links no FastLn* function) and has no CPU kernel",
    "fast_ln_grad": ("the fast_ln_grad op never calls FastLnGradInferSpmd (libpaddle links no FastLn* function) "
                     "and has no CPU kernel"),
}


def select_by_rules(cases: Iterable[LaunchCase], rules: Iterable[str]) -> list[LaunchCase]:
    """The cases whose op runs one of ``rules`` (rule keys, :data:`OP_RULES`)."""
    wanted = set(rules)
    return [c for c in cases if wanted & set(OP_RULES[c.op])]


_PLACEMENT = re.compile(r"S\((\d+)\)(?:#(\d+))?")


def parse_placement(text: str) -> tuple[int, int | None] | None:
    """One mesh dim's placement of x: ``"R"`` -> None, ``"S(2)"`` -> ``(2, None)``, ``"S(0)#1"`` ->
    ``(0, 1)`` (``Shard(0, shard_order=1)``: this mesh dim is member 1 of a co-shard of axis 0)."""
    text = text.strip()
    if text == "R":
        return None
    m = _PLACEMENT.fullmatch(text)
    if m is None:
        raise ValueError(f"placement {text!r} is not 'R', 'S(<axis>)' or 'S(<axis>)#<shard order>'")
    return int(m.group(1)), None if m.group(2) is None else int(m.group(2))


def placements_to_dims_mapping(placements: Sequence[str], ndim: int) -> Mapping:
    """Per-mesh-dim placements of an input -> per-tensor-axis dims_mapping; the one place a case's
    placements are checked.

    ``("S(1)", "R")`` on a rank-3 tensor -> ``(-1, 0, -1)``. An axis on two or more mesh dims is a
    co-shard: every member says its shard order, the orders are 0..n-1 once each, and the entry is
    the tuple of mesh dims in shard order: ``("S(0)#1", "S(0)#0")`` -> ``((1, 0), -1, -1)``. A lone
    member carries no order (``S(0)#0`` alone is ``S(0)``: one spelling per distribution).
    """
    members: dict[int, list[tuple[int | None, int]]] = {}
    for mesh_dim, text in enumerate(placements):
        parsed = parse_placement(text)
        if parsed is None:
            continue
        axis, order = parsed
        if not 0 <= axis < ndim:
            raise ValueError(f"placement {text} names axis {axis} of a rank-{ndim} tensor")
        members.setdefault(axis, []).append((order, mesh_dim))
    mapping: list[MeshDims] = [-1] * ndim
    for axis, held in members.items():
        orders = [order for order, _ in held]
        if len(held) == 1:
            if orders[0] is not None:
                raise ValueError(f"axis {axis} is on one mesh dim only in {list(placements)}: write S({axis}), "
                                 "a shard order (#k) is for an axis split along two or more mesh dims")
            mapping[axis] = held[0][1]
        elif sorted(o if o is not None else -1 for o in orders) != list(range(len(held))):
            raise ValueError(f"axis {axis} is sharded on {len(held)} mesh dims in {list(placements)}: a co-shard "
                             f"gives each member a distinct shard order 0..{len(held) - 1} (S({axis})#k)")
        else:
            by_order = dict(held)
            mapping[axis] = tuple(by_order[k] for k in range(len(held)))
    return tuple(mapping)


@dataclass(frozen=True)
class LaunchCase:
    """One op call on real ranks. ``placements`` are x's, one per mesh dim: ``"R"``, ``"S(k)"``, or
    ``"S(k)#j"`` for member j (shard order) of a co-shard of axis k (:func:`placements_to_dims_mapping`)."""

    case_id: str
    op: str
    shape: tuple[int, ...]
    mesh_shape: tuple[int, ...]
    placements: tuple[str, ...]
    normalized_shape: tuple[int, ...] = ()
    """layer_norm only."""
    data_format: str = ""
    """batch_norm / sync_batch_norm / group_norm / instance_norm: the layout given to the functional
    API (``F.instance_norm`` passes none to the op: channel-first layouts only)."""
    training: bool = True
    """batch_norm / sync_batch_norm only."""
    groups: int = 0
    """group_norm only: ``num_groups`` (>= 1, dividing C)."""
    weight: bool = True
    bias: bool = True
    backward: bool = True
    epsilon: float = 1e-5
    seed: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        for name in ("shape", "mesh_shape", "placements", "normalized_shape", "notes"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        self._check_types()
        if self.op not in OPS:
            raise ValueError(f"op must be one of {OPS}, got {self.op!r}")
        if len(self.placements) != len(self.mesh_shape):
            raise ValueError(f"{self.case_id}: {len(self.placements)} placements for a {len(self.mesh_shape)}-D mesh")
        placements_to_dims_mapping(self.placements, len(self.shape))
        if self.op == "layer_norm":
            k = len(self.normalized_shape)
            if not 1 <= k <= len(self.shape) or tuple(self.shape[-k:]) != self.normalized_shape:
                raise ValueError(f"{self.case_id}: normalized_shape {list(self.normalized_shape)} is not a "
                                 f"trailing part of {list(self.shape)}")
        elif self.data_format not in DATA_FORMAT_NDIM:
            raise ValueError(f"{self.case_id}: data_format must be one of {sorted(DATA_FORMAT_NDIM)}")
        elif DATA_FORMAT_NDIM[self.data_format] != len(self.shape):
            raise ValueError(f"{self.case_id}: {self.data_format} needs a rank-{DATA_FORMAT_NDIM[self.data_format]} x")
        if self.op == "instance_norm" and self.channel_axis != 1:
            raise ValueError(f"{self.case_id}: F.instance_norm passes no layout to the op: give NC, NCL, NCHW or NCDHW")
        if self.op == "group_norm":
            if len(self.shape) < 3:
                raise ValueError(f"{self.case_id}: F.group_norm takes a rank 3 to 5 x "
                                 "(NCL, NLC, NCHW, NHWC, NCDHW, NDHWC)")
            if self.groups < 1 or self.shape[self.channel_axis] % self.groups:
                raise ValueError(f"{self.case_id}: groups must be >= 1 and divide C ({self.shape[self.channel_axis]}), "
                                 f"got {self.groups}")

    def _check_types(self) -> None:
        """Field types, so that a hand-written case file fails here, with its line, not in a rank."""
        def whole(value: Any) -> bool:
            return isinstance(value, int) and not isinstance(value, bool)

        if not isinstance(self.case_id, str):
            raise ValueError(f"case_id must be a string, got {self.case_id!r}")
        for name in ("shape", "mesh_shape", "normalized_shape"):
            values = getattr(self, name)
            if not all(whole(v) and v > 0 for v in values):
                raise ValueError(f"{self.case_id}: {name} must hold positive integers, got {list(values)!r}")
        if not self.shape or not self.mesh_shape:
            raise ValueError(f"{self.case_id}: shape and mesh_shape must not be empty")
        if not all(isinstance(p, str) for p in self.placements):
            raise ValueError(f"{self.case_id}: placements must be strings like 'R', 'S(0)' or 'S(0)#1', got "
                             f"{list(self.placements)!r}")
        for name in ("training", "weight", "bias", "backward"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{self.case_id}: {name} must be true or false, got {getattr(self, name)!r}")
        if not isinstance(self.op, str) or not isinstance(self.data_format, str):
            raise ValueError(f"{self.case_id}: op and data_format must be strings")
        if not (isinstance(self.epsilon, (int, float)) and not isinstance(self.epsilon, bool)
                and math.isfinite(self.epsilon) and self.epsilon > 0):
            raise ValueError(f"{self.case_id}: epsilon must be a number > 0, got {self.epsilon!r}")
        if not whole(self.seed) or not whole(self.groups):
            raise ValueError(f"{self.case_id}: seed and groups must be integers, got {self.seed!r}, {self.groups!r}")

    @property
    def world_size(self) -> int:
        return math.prod(self.mesh_shape)

    @property
    def dims_mapping(self) -> Mapping:
        """x's dims_mapping; a co-sharded axis holds its mesh dims in shard order."""
        return placements_to_dims_mapping(self.placements, len(self.shape))

    @property
    def begin_norm_axis(self) -> int:
        """What ``F.layer_norm`` passes: ``x.ndim - len(normalized_shape)``."""
        return len(self.shape) - len(self.normalized_shape)

    @property
    def channel_axis(self) -> int:
        """The channel axis of x under the data_format the op sees."""
        return channel_axis(self.data_format, len(self.shape))

    @property
    def param_shape(self) -> tuple[int, ...]:
        """Shape of weight/bias: normalized_shape for layer_norm, (C,) for the others."""
        if self.op == "layer_norm":
            return self.normalized_shape
        return (self.shape[self.channel_axis],)

    def describe(self) -> str:
        mesh = "x".join(map(str, self.mesh_shape))
        parts = [self.op, f"x{list(self.shape)}", f"[{','.join(self.placements)}]@{mesh}"]
        if self.op == "layer_norm":
            parts.append(f"ns={list(self.normalized_shape)}")
        elif self.op in BN_OPS:
            parts += [self.data_format, "train" if self.training else "eval"]
        else:
            parts += [self.data_format] + ([f"groups={self.groups}"] if self.op == "group_norm" else [])
        affine = {(True, True): "w+b", (False, False): "no-affine", (True, False): "w-only", (False, True): "b-only"}
        parts.append(affine[(self.weight, self.bias)])
        if not self.backward:
            parts.append("fwd-only")
        return " ".join(parts)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key, value in data.items():
            if isinstance(value, tuple):
                data[key] = list(value)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LaunchCase:
        if not isinstance(data, dict):
            raise ValueError(f"a case is a JSON object of LaunchCase fields, got {type(data).__name__} {data!r:.60}")
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown case fields {sorted(unknown)}; known: {sorted(known)}")
        return cls(**data)


def write_cases(cases: Iterable[LaunchCase], path: str | Path) -> int:
    return write_jsonl(cases, path)


def read_cases(path: str | Path) -> list[LaunchCase]:
    cases = []
    with open(path) as fh:
        for lineno, line in enumerate(fh, 1):
            if line.strip():
                try:
                    cases.append(LaunchCase.from_json(json.loads(line)))
                except (ValueError, TypeError, KeyError) as exc:
                    raise ValueError(f"{path}:{lineno}: bad case: {exc}") from exc
    ids = [c.case_id for c in cases]
    if len(ids) != len(set(ids)):
        raise ValueError(f"{path}: case ids must be unique")
    return cases


def placement_grid(ndim: int, mesh_ndim: int) -> list[tuple[str, ...]]:
    """Every x placement on a 1-D or 2-D mesh: each mesh dim ``R`` or ``S(axis)``, no axis on two
    mesh dims. A rank-n tensor has n+1 on a 1-D mesh and (n+1)^2 - n on a 2-D one."""
    if mesh_ndim not in (1, 2):
        raise ValueError("default grids exist for 1-D and 2-D meshes only; pass --cases for others")
    options = ["R"] + [f"S({a})" for a in range(ndim)]
    if mesh_ndim == 1:
        return [(p,) for p in options]
    return [(p0, p1) for p0 in options for p1 in options if p0 == "R" or p0 != p1]


def _scaled(shape: Sequence[int], factor: int) -> tuple[int, ...]:
    return tuple(s * factor for s in shape)


#: (shape, normalized_shape) for a mesh whose dims all have size 2; scaled for bigger meshes.
LN_CONFIGS: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = (
    ((4, 8), (8,)),
    ((4, 6, 8), (8,)),
    ((4, 6, 8), (6, 8)),
    ((2, 4, 6, 4), (4,)),
    ((2, 4, 6, 4), (6, 4)),
    ((2, 4, 6, 4), (4, 6, 4)),
)

BN_CONFIGS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("NC", (4, 6)),
    ("NCL", (4, 6, 8)),
    ("NLC", (4, 8, 6)),
    ("NCHW", (4, 6, 2, 4)),
    ("NHWC", (4, 2, 4, 6)),
    ("NCDHW", (2, 6, 2, 2, 4)),
    ("NDHWC", (2, 2, 2, 4, 6)),
)

#: (data_format, shape, groups) for a mesh whose dims all have size 2.
GN_CONFIGS: tuple[tuple[str, tuple[int, ...], int], ...] = (
    ("NCHW", (4, 6, 2, 4), 3),
    ("NHWC", (4, 2, 4, 6), 3),
    ("NCL", (4, 6, 8), 2),
    ("NDHWC", (2, 2, 2, 4, 6), 2),
)

#: (data_format, shape) of the instance_norm cases that run; :data:`IN_CRASH_CONFIGS` abort Paddle.
IN_CONFIGS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("NCHW", (4, 6, 2, 4)),
    ("NCDHW", (2, 6, 2, 2, 4)),
)
IN_CRASH_CONFIGS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("NC", (4, 6)),
    ("NCL", (4, 6, 8)),
)

_AFFINE_MAIN = ((True, True), (False, False))
_AFFINE_EXTRA = ((True, False), (False, True))


def _factor(mesh_shape: Sequence[int]) -> int:
    """Shapes are written for mesh dims of size 2; scale so every mesh dim divides every axis."""
    lcm = math.lcm(*mesh_shape)
    return max(1, lcm // math.gcd(lcm, 2))


def default_cases(mesh_shape: Sequence[int], backend: str = "cpu") -> list[LaunchCase]:
    """The built-in grid for one launch over ``prod(mesh_shape)`` ranks (see the module table)."""
    mesh_shape = tuple(mesh_shape)
    mesh_ndim, factor = len(mesh_shape), _factor(mesh_shape)
    cases: list[LaunchCase] = []

    def add(**kw: Any) -> None:
        cases.append(LaunchCase(case_id=f"c{len(cases):04d}", **kw))

    def few(pl: tuple[str, ...], axis: int) -> bool:
        """The placements that also get the rarer variants: all R, and ``axis`` alone on mesh dim 0."""
        return set(pl) == {"R"} or (pl[0] == f"S({axis})" and set(pl[1:]) <= {"R"})

    for shape, ns in LN_CONFIGS:
        shape, ns = _scaled(shape, factor), _scaled(ns, factor)
        for pl in placement_grid(len(shape), mesh_ndim):
            for w, b in _AFFINE_MAIN + (_AFFINE_EXTRA if few(pl, 0) else ()):
                add(op="layer_norm", shape=shape, mesh_shape=mesh_shape, placements=pl, normalized_shape=ns,
                    weight=w, bias=b)
    for fmt, shape in BN_CONFIGS:
        shape = _scaled(shape, factor)
        c = channel_axis(fmt, len(shape))
        for pl in placement_grid(len(shape), mesh_ndim):
            with_eval = mesh_ndim == 1 or "R" in pl  # the rule ignores is_test: eval on a subset on 2-D meshes
            for training in (True, False) if with_eval else (True,):
                extra = _AFFINE_EXTRA if training and (few(pl, c) or (mesh_ndim == 1 and f"S({c})" in pl)) else ()
                for w, b in _AFFINE_MAIN + extra:
                    add(op="batch_norm", shape=shape, mesh_shape=mesh_shape, placements=pl, data_format=fmt,
                        training=training, weight=w, bias=b)
    if math.prod(mesh_shape) == 2 and mesh_ndim == 1:
        # C on a size-1 mesh dim: the rule keeps C sharded and the kernel can run.
        for fmt, shape in (("NCHW", (4, 6, 2, 4)), ("NHWC", (4, 2, 4, 6)), ("NC", (4, 6))):
            c = channel_axis(fmt, len(shape))
            for mesh2, pl in (((1, 2), (f"S({c})", "S(0)")), ((2, 1), ("S(0)", f"S({c})")),
                              ((1, 2), (f"S({c})", "R"))):
                for training in (True, False):
                    add(op="batch_norm", shape=shape, mesh_shape=mesh2, placements=pl, data_format=fmt,
                        training=training)
    if backend == "gpu":
        for fmt, shape in (("NCHW", (4, 6, 2, 4)), ("NHWC", (4, 2, 4, 6)), ("NCL", (4, 6, 8))):
            shape = _scaled(shape, factor)
            for pl in placement_grid(len(shape), mesh_ndim)[: 2 * len(shape) + 1]:
                add(op="sync_batch_norm", shape=shape, mesh_shape=mesh_shape, placements=pl, data_format=fmt)
    for fmt, shape, groups in GN_CONFIGS:
        shape = _scaled(shape, factor)
        for pl in placement_grid(len(shape), mesh_ndim):
            for w, b in _AFFINE_MAIN + (_AFFINE_EXTRA if few(pl, 0) else ()):
                add(op="group_norm", shape=shape, mesh_shape=mesh_shape, placements=pl, data_format=fmt,
                    groups=groups, weight=w, bias=b)
    for fmt, shape in IN_CONFIGS:
        shape = _scaled(shape, factor)
        for pl in placement_grid(len(shape), mesh_ndim):
            # PADDLE-QUIRK(in-5d-last-axis): the rule clears axes 2 and 3 only; a split of axis 4 stays
            keeps_spatial = any(p == f"S({a})" for p in pl for a in range(4, len(shape)))
            for w, b in _AFFINE_MAIN + (_AFFINE_EXTRA if few(pl, 0) or few(pl, 1) else ()):
                add(op="instance_norm", shape=shape, mesh_shape=mesh_shape, placements=pl, data_format=fmt,
                    weight=w, bias=b)
            if keeps_spatial:  # the backward always raises (1-D saved_mean): the forward values alone too
                add(op="instance_norm", shape=shape, mesh_shape=mesh_shape, placements=pl, data_format=fmt,
                    backward=False)
    for alone in ("R", "S(0)"):  # config inner: `--crash-probes 2` probes a 2-D and a 3-D x
        pl = (alone,) + ("R",) * (mesh_ndim - 1)
        for fmt, shape in IN_CRASH_CONFIGS:
            add(op="instance_norm", shape=_scaled(shape, factor), mesh_shape=mesh_shape, placements=pl,
                data_format=fmt)
    return cases


#: The co-shard set's x configurations, written for mesh dims of size 2 (scaled like the grid's):
#: (op, shape, normalized_shape or data_format, {co-sharded axis: what it is}).
COSHARD_CONFIGS: tuple[tuple[str, tuple[int, ...], tuple[int, ...] | str, dict[int, str]], ...] = (
    ("layer_norm", (8, 4, 8), (8,), {0: "not normalised", 2: "normalised"}),
    ("layer_norm", (10, 4, 8), (8,), {0: "not normalised, uneven pieces: predicted to abort, not run"}),
    ("layer_norm", (4, 8, 8), (8, 8), {1: "normalised, not the last"}),
    ("batch_norm", (8, 8, 2, 8), "NCHW", {0: "N", 1: "C", 3: "W (normalised)"}),
    ("batch_norm", (8, 2, 8, 8), "NHWC", {3: "C"}),
)


def coshard_orders(mesh_ndim: int) -> list[tuple[int, ...]]:
    """The member lists (mesh dims in shard order) of the co-shard set: mesh dims 0 and 1 in both
    orders; on a mesh of 3 or more dims also 1 and 2 in both orders, and every mesh dim in both
    directions."""
    if mesh_ndim < 2:
        raise ValueError("a co-shard needs a mesh of 2 or more dims")
    orders: list[tuple[int, ...]] = [(0, 1), (1, 0)]
    if mesh_ndim >= 3:
        every = tuple(range(mesh_ndim))
        orders += [(1, 2), (2, 1), every, every[::-1]]
    return orders


def coshard_placements(axis: int, members: Sequence[int], mesh_ndim: int) -> tuple[str, ...]:
    """x's placements with ``axis`` co-sharded along ``members`` (in shard order), other mesh dims R:
    ``coshard_placements(0, (1, 0), 2) == ("S(0)#1", "S(0)#0")``."""
    out = ["R"] * mesh_ndim
    for order, mesh_dim in enumerate(members):
        out[mesh_dim] = f"S({axis})#{order}"
    return tuple(out)


def coshard_cases(mesh_shape: Sequence[int]) -> list[LaunchCase]:
    """The co-shard set (``launch --coshard``): for every configuration of :data:`COSHARD_CONFIGS`,
    every co-sharded axis it names and every member list of :func:`coshard_orders`, one case with
    weight and bias and one without (layer_norm over 2 axes: without only, as a 2-D weight is refused
    by the rule; batch_norm: training, and eval too where the N axis is co-sharded), forward and
    backward. Case ids ``cs0000``... Each case's notes say what the
    co-sharded axis is."""
    mesh_shape = tuple(mesh_shape)
    factor = _factor(mesh_shape)
    cases: list[LaunchCase] = []
    for members in coshard_orders(len(mesh_shape)):
        for op, shape, option, axes in COSHARD_CONFIGS:
            shape = _scaled(shape, factor)
            for axis, what in axes.items():
                placements = coshard_placements(axis, members, len(mesh_shape))
                if op == "layer_norm":
                    ns = cast(tuple[int, ...], option)
                    kw: dict[str, Any] = {"normalized_shape": _scaled(ns, factor)}
                    # a 2-D weight is refused by the rule whatever x's placement: no affine there
                    variants = [(True, True, True), (True, False, False)] if len(ns) == 1 else [(True, False, False)]
                else:
                    kw = {"data_format": option}
                    variants = [(True, True, True), (True, False, False)]
                    if what == "N":
                        variants.append((False, True, True))
                for training, w, b in variants:
                    cases.append(LaunchCase(case_id=f"cs{len(cases):04d}", op=op, shape=shape, mesh_shape=mesh_shape,
                                            placements=placements, training=training, weight=w, bias=b,
                                            notes=(f"x co-sharded on axis {axis}: {what}",), **kw))
    return cases
