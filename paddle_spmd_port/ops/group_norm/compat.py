"""group_norm in the compat layer: Paddle registers ``group_norm`` with the Base rule, which reads
no attributes (epsilon, groups, data_format and any others given are ignored), and no backward::

    method          tensors (in order)      attributes
    infer_forward   x, scale, bias          (none)
    infer_backward  RuntimeError (NotFound), like Paddle

The inputs that crash Paddle are in docs/group_norm-3.3.1.md (port-only tests).
"""

from __future__ import annotations

from typing import Any

from ..kit.compat import CompatEntries, CompatRule, Method, ProbeKit, bookkeeping_view, tagged_specs

_SCALE_BIAS = frozenset({"scale", "bias"})
RULES = (CompatRule("group_norm", Method(("x", "scale", "bias"), optional=_SCALE_BIAS, unread=_SCALE_BIAS,
                                                 output_sources=("x", "x", "x"))),)
CONTAINS: tuple[str, ...] = ()


def probes(kit: ProbeKit) -> None:
    probe, spec, absent, view = kit.probe, kit.spec, kit.absent, kit.result_view
    gn = kit.rule("group_norm")
    nx, c6 = spec([8, 6, 4, 4], [1, 0, -1, -1]), spec([6], [-1])

    @probe("gn/forward")
    def _() -> Any:
        return view(gn.infer_forward(nx, c6, c6))

    @probe("gn/forward-partial-absent-and-attributes")
    def _() -> Any:
        return view(gn.infer_forward(spec([8, 6, 4, 4], [-1, -1, -1, 1], [0]), absent(), c6, 1e-5, 2, "NCHW"))

    @probe("gn/forward-one-dim-mesh")
    def _() -> Any:
        w = spec([6], [-1], on=kit.mesh1)
        return view(gn.infer_forward(spec([8, 6, 4, 4], [0, -1, -1, -1], on=kit.mesh1), w, w))

    @probe("gn/forward-coshard")
    def _() -> Any:
        w = spec([6], [-1], on=kit.mesh32)
        return view(gn.infer_forward(kit.DistTensorSpec([8, 6, 4, 4], kit.coshard([[0, 1], [], [], []], kit.mesh32)),
                                     w, w))

    @probe("gn/forward-scale-bias-mappings-unread")
    def _() -> Any:
        return view(gn.infer_forward(nx, spec([6], [4]), spec([6], [-1, -1, -1])))

    @probe("gn/answers-keep-source-fields")
    def _() -> Any:
        return bookkeeping_view(gn.infer_forward(*tagged_specs(kit, ([8, 6, 4, 4], [0, 1, -1, -1]), ([6], [-1]),
                                                               ([6], [-1]))))

    @probe("gn/x-rank-2")
    def _() -> Any:
        gn.infer_forward(spec([8, 6], [0, -1]), c6, c6)


#: The family's compat entries, read by paddle_spmd_port.compat (the rules it serves, its probes).
COMPAT = CompatEntries(RULES, CONTAINS, probes)
