"""instance_norm in the compat layer (registry name ``instance_norm``)::

    method          tensors (in order)                                      attributes
    infer_forward   x, scale, bias                                          epsilon: float
    infer_backward  x, scale, bias, saved_mean, saved_variance, y_grad      epsilon: float

The inputs that crash Paddle are in docs/instance-rms-fastln-3.3.1.md (port-only tests).
"""

from __future__ import annotations

from typing import Any

from ..kit.compat import CompatEntries, CompatRule, Method, ProbeKit, bookkeeping_view, tagged_specs

_EPS = (("epsilon", "f"),)
_SCALE_BIAS = frozenset({"scale", "bias"})

RULES = (
    CompatRule("instance_norm",
               Method(("x", "scale", "bias"), _EPS, optional=_SCALE_BIAS, unread=_SCALE_BIAS,
                      output_sources=("x", "x", "x")),
               Method(("x", "scale", "bias", "saved_mean", "saved_variance", "y_grad"), _EPS, optional=_SCALE_BIAS,
                      unread=_SCALE_BIAS | {"saved_mean", "saved_variance", "y_grad"},
                      meshless=frozenset({"saved_mean", "saved_variance", "y_grad"}),  # (a mesh-less scale crashes)
                      answered=("x", "scale", "saved_mean", "saved_variance", "y_grad"),  # bias is not answered
                      output_sources=("x", "scale", "scale"))),
)
CONTAINS: tuple[str, ...] = ()


def probes(kit: ProbeKit) -> None:
    probe, spec, absent, view = kit.probe, kit.spec, kit.absent, kit.result_view
    inorm = kit.rule("instance_norm")
    nx, c6 = spec([8, 6, 4, 4], [1, 0, -1, -1]), spec([6], [-1])
    stat2 = spec([8, 6], [1, 0])

    @probe("in/forward")
    def _() -> Any:
        return view(inorm.infer_forward(nx, c6, c6, 1e-5))

    @probe("in/forward-partial-and-absent-bias")
    def _() -> Any:
        return view(inorm.infer_forward(spec([8, 6, 4, 4], [-1, 1, -1, -1], [0]), c6, absent(), 1e-5))

    @probe("in/forward-one-dim-mesh")
    def _() -> Any:
        w = spec([6], [-1], on=kit.mesh1)
        return view(inorm.infer_forward(spec([8, 6, 4, 4], [-1, 0, -1, -1], on=kit.mesh1), w, w, 1e-5))

    @probe("in/forward-coshard")
    def _() -> Any:
        w = spec([6], [-1], on=kit.mesh32)
        xs = kit.DistTensorSpec([8, 6, 4, 4], kit.coshard([[], [0, 1], [], []], kit.mesh32))
        return view(inorm.infer_forward(xs, w, w, 1e-5))

    @probe("in/x-rank-1")
    def _() -> Any:
        inorm.infer_forward(spec([8], [-1]), c6, c6, 1e-5)

    @probe("in/grad")
    def _() -> Any:
        return view(inorm.infer_backward(nx, c6, c6, stat2, stat2, spec([8, 6, 4, 4], [-1, -1, 0, 1]), 1e-5))

    @probe("in/grad-partial-and-absent-bias")
    def _() -> Any:
        dy = spec([8, 6, 4, 4], [1, -1, -1, -1], [0])
        return view(inorm.infer_backward(nx, spec([6], [-1], [1]), absent(), stat2, stat2, dy, 1e-5))

    @probe("in/grad-unread-mappings")
    def _() -> Any:
        # the grad rule reads x's mapping only: the others may hold anything
        return view(inorm.infer_backward(nx, spec([6], [3]), spec([6], [0, 1]), spec([8, 6], [0, 0]), spec([8, 6], [7]),
                                         spec([8, 6, 4, 4], [1, 1, 1, -1]), 1e-5))

    @probe("in/grad-without-mesh")
    def _() -> Any:
        loose_stat = kit.DistTensorSpec([8, 6], kit.TensorDistAttr())
        loose_dy = kit.DistTensorSpec([8, 6, 4, 4], kit.TensorDistAttr())
        loose_dy.set_dims_mapping([0, 1, -1, -1])
        return [view(inorm.infer_backward(nx, c6, c6, loose_stat, stat2, spec([8, 6, 4, 4], [-1, -1, 0, 1]), 1e-5)),
                view(inorm.infer_backward(nx, c6, absent(), stat2, loose_stat, loose_dy, 1e-5))]

    @probe("in/answers-keep-source-fields")
    def _() -> Any:
        fwd = tagged_specs(kit, ([8, 6, 4, 4], [0, 1, -1, -1]), ([6], [-1]), ([6], [-1]))
        grad = tagged_specs(kit, ([8, 6, 4, 4], [0, 1, -1, -1]), ([6], [-1]), ([6], [-1]), ([8, 6], [0, 1]),
                            ([8, 6], [0, 1]), ([8, 6, 4, 4], [0, 1, -1, -1]))
        return [bookkeeping_view(inorm.infer_forward(*fwd, 1e-5)), bookkeeping_view(inorm.infer_backward(*grad, 1e-5))]

    @probe("in/grad-y-grad-rank")
    def _() -> Any:
        inorm.infer_backward(nx, c6, c6, stat2, stat2, spec([8, 6, 4], [-1, -1, -1]), 1e-5)


#: The family's compat entries, read by paddle_spmd_port.compat (the rules it serves, its probes).
COMPAT = CompatEntries(RULES, CONTAINS, probes)
