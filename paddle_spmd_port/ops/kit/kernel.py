"""The oracle's kernel API: what every family's ``ops/<family>/kernel.py`` builds its numpy models
from, and what the oracle (``paddle_spmd_port.oracle``) reads back. Op-free.

A *kernel* takes one dict of input arrays per rank (a single dict = one device) and returns one
dict of output arrays per rank, float64 throughout. An :class:`OpModel` ties a rule key to its
kernel: which of the rule's returned attrs feed the kernel and which it checks, plus what the
oracle's generic code needs to know about the rule (attributes as the kernel sees them, grad
inputs the forward op saved, statistics modes, repro routes). :class:`Facts` holds what holds for
a whole family (its channel axis, which inputs are statistics, how its tensors are re-sized).

Local shapes a kernel cannot use raise :class:`KernelRejects`. Its ``checked`` says whether
Paddle's kernel itself rejects them (``True``: an InvalidArgument/ShapeError), silently reads the
wrong entries or past the end of the buffer (``False``), or whether no CPU kernel exists to
measure that on (``None``: the message says so). Each family's module says which is which.

This module and the families' ``kernel.py`` are the only ones under ``ops/`` that import numpy
(the import contract "pure" in pyproject.toml): the rules themselves stay numpy-free.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import RULES
from ..spec import FamilyPart, OpFamily, foreign_keys

Array = npt.NDArray[np.float64]
Arrays = dict[str, Array | None]
Attrs = dict[str, Any]
Groups = Sequence[Sequence[int]]
Shape = tuple[int, ...]
#: All ranks at once: per-rank inputs, attributes, all-reduce groups (for each rank, the ranks it
#: sums with) -> per-rank outputs.
Run = Callable[[list[Arrays], Attrs, Groups], list[Arrays]]
#: One device: inputs, attributes -> outputs.
Kernel = Callable[[Arrays, Attrs], Arrays]
#: Fills, in place, the grad inputs the forward op would have saved (from the global inputs).
SavedInputs = Callable[[Arrays, Attrs], None]
#: A statistics mode: its name (the ``/<mode>`` suffix of a case id) and the attributes it sets.
Mode = tuple[str, tuple[tuple[str, Any], ...]]


class KernelRejects(Exception):
    """The local inputs of one rank do not fit the kernel."""

    def __init__(self, tensor: str, message: str, *, checked: bool | None, rank: int | None = None) -> None:
        super().__init__(message)
        self.tensor = tensor
        self.checked = checked
        self.rank = rank


def required(ins: Arrays, name: str) -> Array:
    """A required input of the kernel (the simulator fills every one; None is a bug in the caller)."""
    t = ins[name]
    if t is None:
        raise TypeError(f"the kernel needs input {name!r}, got None")
    return t


def on_rank(rank: int, fn: Callable[[], Arrays]) -> Arrays:
    """``fn()``, with the rank named on a :class:`KernelRejects` it raises."""
    try:
        return fn()
    except KernelRejects as exc:
        if exc.rank is None:
            exc.rank = rank
        raise


def per_rank(fn: Kernel) -> Run:
    """A one-device kernel run on every rank on its own (no collective)."""
    def run(inputs_per_rank: list[Arrays], attrs: Attrs, groups: Groups) -> list[Arrays]:
        return [on_rank(r, functools.partial(fn, ins, attrs)) for r, ins in enumerate(inputs_per_rank)]
    return run


def f32(value: float) -> float:
    """Paddle's float attributes (momentum, epsilon) are C++ floats."""
    return float(np.float32(value))


def paddle_check_note(checked: bool | None) -> str:
    """The end of a :class:`KernelRejects` message: what Paddle's kernel does with the input."""
    if checked is None:
        return " (not measured on Paddle: no CPU kernel to measure)"
    return "" if checked else " (Paddle does not check this: it reads the wrong entries or past the end)"


def check_x(x: Array, op: str) -> None:
    """x of rank 2..5 (what the channel kernels take), not empty on this rank."""
    if not 2 <= x.ndim <= 5:
        raise KernelRejects("x", f"{op}: x must have rank 2..5, got {x.ndim}", checked=True)
    if x.size == 0:
        raise KernelRejects("x", f"{op}: a rank holds an empty x {list(x.shape)}", checked=False)


def check_per_channel(ins: Arrays, names: Sequence[str], c_len: int, *, checked: Callable[[str], bool],
                      op: str) -> None:
    """Each present input of ``names`` is 1-D with one entry per local channel."""
    for name in names:
        t = ins.get(name)
        if t is None:
            continue
        if t.ndim != 1 or t.shape[0] != c_len:
            raise KernelRejects(
                name, f"{op}: local {name} has shape {list(t.shape)} but the local x has C={c_len}"
                + ("" if checked(name) else " (Paddle does not check this: it reads the wrong channels or past "
                                             "the end of the buffer)"),
                checked=checked(name))


def check_stats(ins: Arrays, names: Sequence[str], shape: Shape, op: str, *, checked: bool | None) -> None:
    """Each input of ``names`` has exactly ``shape`` (statistics the local x needs)."""
    for name in names:
        t = required(ins, name)
        if t.shape != shape:
            raise KernelRejects(name, f"{op}: local {name} has shape {list(t.shape)} but the local x needs "
                                f"{list(shape)}" + paddle_check_note(checked), checked=checked)


def check_last_axis(x: Array, ins: Arrays, names: Sequence[str], op: str) -> None:
    """x has a last axis to normalise and is not empty here; each present input of ``names`` has
    one entry per element of that axis (not measured on Paddle: the kernels normalising the last
    axis this way have no CPU build to measure on)."""
    if x.ndim < 1 or x.size == 0:
        raise KernelRejects("x", f"{op}: a rank holds x {list(x.shape)} (no axis to normalise, or empty)",
                            checked=False)
    for name in names:
        t = ins.get(name)
        if t is not None and t.size != x.shape[-1]:
            raise KernelRejects(name, f"{op}: local {name} has {t.size} entries but the local x's last axis has "
                                f"{x.shape[-1]}" + paddle_check_note(None), checked=None)


def channel_shape(ndim: int, c: int, c_len: int) -> Shape:
    """The shape a per-channel vector broadcasts against x with: ``c_len`` on axis ``c``, 1 elsewhere."""
    shape = [1] * ndim
    shape[c] = c_len
    return tuple(shape)


def _no_sizes(old: Shape, new: Shape, attrs: Attrs) -> Sequence[tuple[Shape, Shape]] | None:
    return ()


def row_sizes(old: Shape, new: Shape, begin: object) -> list[tuple[Shape, Shape]]:
    """For an op normalising the axes from ``begin`` on: scale/bias hold one entry per element of a
    row (the product of the normalised sizes), the statistics one per row (``x.shape[:begin]``).
    An axis outside x leaves the other tensors as they are (the op rejects it)."""
    if not isinstance(begin, int) or not 0 <= begin <= len(old):
        return []
    return [((math.prod(old[begin:]),), (math.prod(new[begin:]),)), (tuple(old[:begin]), tuple(new[:begin]))]


@dataclass(frozen=True)
class Facts:
    """What the oracle's generic code needs to know about a family beyond its kernels."""

    sizes: Callable[[Shape, Shape, Attrs], Sequence[tuple[Shape, Shape]] | None] = _no_sizes
    """Re-sizing a case for numerics: given x's old and new shape and the case's attributes, the
    (old shape -> new shape) pairs of the other tensors' roles, first match wins; None leaves the
    case as it is."""
    x_shapes: Mapping[int, Shape] | None = None
    """x's numeric shape per rank, where the family needs other sizes than the oracle's default."""
    coshard_attrs: tuple[tuple[str, Any, Any], ...] = ()
    """(attribute, value, replacement): the grid's co-shard set carries a value the op rejects; it
    is judged with the replacement."""
    layout: Callable[[str], str] | None = None
    """data_format as the op's kernel receives it (the functional API reduces it first)."""
    statistics: frozenset[str] = frozenset({"invvar", "saved_mean", "saved_variance"})
    """Inputs that are statistics of x (a kernel rejecting one reports it as such)."""
    per_channel: frozenset[str] = frozenset()
    """1-D inputs with one entry per channel of x."""
    channel_axis: Callable[[Attrs, int], int] | None = None
    """x's channel axis (kernel attributes, rank of x) where resharding the per-channel inputs to
    follow it is the repair worth trying on an answer that cannot run; None: no repair."""
    all_reduces: bool = False
    """The kernels all-reduce statistics across ranks (the oracle's ``--sync-group`` applies)."""
    mean_of_rank_means: bool = False
    """The all-reduce averages per-rank means, so uneven batch shards are a cause of their own."""


@dataclass(frozen=True)
class OpModel:
    """How the oracle runs one rule's op: which answer slots feed the kernel, which it checks."""

    inputs: tuple[str, ...]
    """Kernel inputs, in the order of the rule's returned input attrs."""
    outputs: tuple[str, ...]
    """Kernel outputs, in the order of the rule's returned output attrs."""
    run: Run
    """All ranks at once: per-rank inputs, attributes, all-reduce groups -> per-rank outputs."""
    family: str
    """The rule's op family."""
    facts: Facts = Facts()
    batch_axis_outputs: tuple[str, ...] = ()
    """Outputs shaped like x (their axis 0 is the batch)."""
    batch_axis_inputs: tuple[str, ...] = ()
    """Inputs shaped like x, cut along the batch when each batch shard is normalised on its own."""
    batch_statistics: Callable[[Attrs], bool] | None = None
    """Does the kernel, under these attributes, normalise with statistics of the batch? If so, an
    answer that splits the batch and is right per batch shard is labelled ``local-stats-only``."""
    modes: tuple[Mode, ...] = ()
    """Statistics modes every case of the rule is crossed with (none: each case once)."""
    attrs: Callable[[Attrs, frozenset[str]], Attrs] | None = None
    """The attributes the kernel runs with, from the case's and the names of its present inputs,
    where they are not simply the case's."""
    saved_inputs: SavedInputs | None = None
    """Makes the grad inputs the forward op saved consistent with x (else they stay random)."""
    launch: Callable[[Attrs, Shape], dict[str, Any] | None] | None = None
    """The op-specific fields of the rule's ``launch`` case (x placed, the rest replicated), from the
    case's attributes and x's shape; it returns None where no launch case expresses them. None
    here: the rule has no launch case."""
    partial_x_script: Callable[[Shape, Attrs, bool, bool], str] | None = None
    """A plain 2-rank script showing a Partial x on real Paddle (x's shape, the attributes, with a
    weight, with a bias), for the rules a dygraph backward reaches from a Partial x."""
    registry_repro: bool = False
    """Paddle's answer can be read from the registry in Python (a weaker repro than a real run)."""
    not_on_ranks: str = ""
    """Why no real run shows this rule's bugs (printed with the repro), if that is known."""


def model(rule: str, run: Run, facts: Facts, **options: Any) -> OpModel:
    """The model of ``rule``: the kernel's inputs and outputs are the rule's returned attrs (the
    family's declared names), the family is the rule's op."""
    spec = RULES[rule]
    return OpModel(spec.result_inputs, spec.result_outputs, run, spec.op, facts, **options)


def from_forward(forward: OpModel, saved: Mapping[str, str]) -> SavedInputs:
    """Grad inputs that are forward outputs (``saved``: grad input -> forward output), computed by
    running the forward model on the grad's inputs, where the shapes fit."""
    def fill(arrays: Arrays, attrs: Attrs) -> None:
        ins = {name: arrays.get(name) for name in forward.inputs}
        try:
            outs = forward.run([ins], attrs, [[0]])[0]
        except KernelRejects:
            return  # the grad kernel will say what does not fit
        for name, out in saved.items():
            value = outs[out]
            if (given := arrays.get(name)) is not None and value is not None and given.shape == value.shape:
                arrays[name] = value
    return fill


@dataclass(frozen=True)
class KernelModels(FamilyPart):
    """A family's numpy models for the oracle (``KERNEL`` in ``ops/<family>/kernel.py``): rule key
    -> :class:`OpModel`. A rule without one is listed by the oracle as not judged."""

    MODULE = "kernel"
    ATTRIBUTE = "KERNEL"

    models: Mapping[str, OpModel]

    def problems(self, family: OpFamily) -> list[str]:
        # a model keyed by another family's rule would be judged under the wrong facts
        out = [f"models {foreign}, which are not the family's rule keys" for foreign in
               [foreign_keys(family, self.models)] if foreign]
        out += [f"{key}'s model belongs to the family {m.family!r}" for key, m in self.models.items()
                if m.family != family.name]
        return out


__all__ = ["Array", "Arrays", "Attrs", "Facts", "Groups", "Kernel", "KernelModels", "KernelRejects", "Mode",
           "OpModel", "Run", "SavedInputs", "Shape", "channel_shape", "check_last_axis", "check_per_channel",
           "check_stats", "check_x", "f32", "from_forward", "model", "on_rank", "paddle_check_note", "per_rank",
           "required", "row_sizes"]
