"""rms_norm in the compat layer, under Paddle's registry name ``fused_rms_norm``::

    method          tensors (in order)          attributes
    infer_forward   x, scale                    epsilon: float
    infer_backward  x, scale, out, invvar       epsilon: float   (the reverse rule)

The inputs that crash Paddle are in docs/instance-rms-fastln-3.3.1.md (port-only tests).
"""

from __future__ import annotations

from typing import Any

from ..kit.compat import CompatEntries, CompatRule, Method, ProbeKit, bookkeeping_view, tagged_specs

_EPS = (("epsilon", "f"),)
_SCALE, _X_SCALE = frozenset({"scale"}), frozenset({"x", "scale"})  # mappings unread, lengths checked

RULES = (
    CompatRule("fused_rms_norm", Method(("x", "scale"), _EPS, unread=_SCALE, length_read=_SCALE, meshless=_SCALE,
                                        output_sources=("x", "x")),
               Method(("x", "scale", "out", "invvar"), _EPS, unread=_X_SCALE, length_read=_X_SCALE,
                      meshless=_X_SCALE, output_sources=("out", "invvar"))),
)
CONTAINS: tuple[str, ...] = ()


def probes(kit: ProbeKit) -> None:
    probe, spec, absent, view = kit.probe, kit.spec, kit.absent, kit.result_view
    rms = kit.rule("fused_rms_norm")
    rx, r1 = spec([16, 32, 64], [1, -1, 0]), spec([64], [-1])

    @probe("rms/forward")
    def _() -> Any:
        return view(rms.infer_forward(rx, r1, 1e-6))

    @probe("rms/forward-partial")
    def _() -> Any:
        return view(rms.infer_forward(spec([16, 32, 64], [-1, 1, -1], [0]), spec([64], [-1], [1]), 1e-6))

    @probe("rms/forward-absent-scale")
    def _() -> Any:
        rms.infer_forward(rx, absent(), 1e-6)

    @probe("rms/forward-one-dim-mesh")
    def _() -> Any:
        return view(rms.infer_forward(spec([16, 64], [0, -1], on=kit.mesh1), spec([64], [-1], on=kit.mesh1), 1e-6))

    @probe("rms/forward-coshard")
    def _() -> Any:
        xs = kit.DistTensorSpec([16, 32, 64], kit.coshard([[1, 0], [], []], kit.mesh32))
        return view(rms.infer_forward(xs, spec([64], [-1], on=kit.mesh32), 1e-6))

    @probe("rms/reverse")
    def _() -> Any:
        return view(rms.infer_backward(rx, r1, spec([16, 32, 64], [-1, 1, -1]), spec([16, 32], [0, 1]), 1e-6))

    @probe("rms/unread-mappings")
    def _() -> Any:
        # scale's (and in the reverse x's) mapping values are never read, their lengths are
        out, invvar = spec([16, 32, 64], [-1, 1, -1]), spec([16, 32], [0, 1])
        return [view(rms.infer_forward(rx, spec([64], [5]), 1e-6)),
                view(rms.infer_backward(spec([16, 32, 64], [4, 0, 0]), spec([64], [2]), out, invvar, 1e-6))]

    @probe("rms/reverse-x-length-read")
    def _() -> Any:
        rms.infer_backward(spec([16, 32, 64], [0]), r1, spec([16, 32, 64], [-1, 1, -1]), spec([16, 32], [0, 1]), 1e-6)

    @probe("rms/without-mesh")
    def _() -> Any:
        loose_x = kit.DistTensorSpec([16, 32, 64], kit.TensorDistAttr())
        loose_scale = kit.DistTensorSpec([64], kit.TensorDistAttr())
        loose_x.set_dims_mapping([0, 0, -1])  # values unread, the lengths checked (an empty one fails)
        loose_scale.set_dims_mapping([-1])
        out, invvar = spec([16, 32, 64], [-1, 1, -1]), spec([16, 32], [0, 1])
        return [view(rms.infer_forward(rx, loose_scale, 1e-6)),
                view(rms.infer_backward(loose_x, loose_scale, out, invvar, 1e-6))]

    @probe("rms/answers-keep-source-fields")
    def _() -> Any:
        fwd = tagged_specs(kit, ([16, 32, 64], [1, -1, -1]), ([64], [-1]))
        rev = tagged_specs(kit, ([16, 32, 64], [1, -1, -1]), ([64], [-1]), ([16, 32, 64], [1, -1, -1]),
                           ([16, 32], [1, -1]))
        return [bookkeeping_view(rms.infer_forward(*fwd, 1e-6)), bookkeeping_view(rms.infer_backward(*rev, 1e-6))]

    @probe("rms/reverse-partial")
    def _() -> Any:
        out = spec([16, 32, 64], [1, -1, -1], [0])
        return view(rms.infer_backward(rx, r1, out, spec([16, 32], [1, -1]), 1e-6))


#: The family's compat entries, read by paddle_spmd_port.compat (the rules it serves, its probes).
COMPAT = CompatEntries(RULES, CONTAINS, probes)
