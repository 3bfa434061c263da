"""batch_norm in the compat layer: Paddle registers ``batch_norm`` with the attribute-less static
forward (BatchNormInferSpmdStatic: attributes given are ignored) and no backward (``infer_backward``
raises NotFound).

::

    method          tensors (in order)                  attributes
    infer_forward   x, mean, variance, scale, bias      (none; extra ones are ignored)
    infer_backward  RuntimeError (NotFound), like Paddle
"""

from __future__ import annotations

from typing import Any

from ..kit.compat import CompatEntries, CompatRule, Method, ProbeKit, bookkeeping_view, tagged_specs

RULES = (
    CompatRule("batch_norm", Method(("x", "mean", "variance", "scale", "bias"), optional=frozenset({"scale", "bias"}),
                                    unread=frozenset({"mean", "variance", "scale", "bias"}),
                                    # mean_out, saved_mean copy mean's attr; variance_out, saved_variance variance's
                                    meshless=frozenset({"mean", "variance"}),
                                    meshless_outputs=(("mean", (1, 3)), ("variance", (2, 4))),
                                    output_sources=("x", "mean", "variance", "mean", "variance", "x"))),
)
#: ``batch_norm_grad`` is not a registry name in Paddle: both registries must say so.
CONTAINS = ("batch_norm", "batch_norm_grad")


def probes(kit: ProbeKit) -> None:
    probe, spec, absent, view = kit.probe, kit.spec, kit.absent, kit.result_view
    bn = kit.rule("batch_norm")
    bx, stat = spec([8, 16, 4, 4], [0, 1, -1, -1]), spec([16], [-1])

    @probe("registry/batch-norm-backward")
    def _() -> Any:
        bn.infer_backward(bx, stat, stat, stat, stat)

    @probe("bn/forward")
    def _() -> Any:
        return view(bn.infer_forward(bx, stat, stat, stat, stat))

    @probe("bn/forward-partial-absent")
    def _() -> Any:
        return view(bn.infer_forward(spec([8, 16, 4, 4], [-1, 1, -1, -1], [0]), spec([16], [-1], [0]), stat,
                                     absent(), spec([16], [0])))

    @probe("bn/forward-attributes-ignored")
    def _() -> Any:
        return view(bn.infer_forward(spec([8, 4, 4, 16], [0, -1, -1, 1]), stat, stat, stat, stat, False, 0.9,
                                     1e-5, "NHWC", False, False))

    @probe("bn/forward-statistics-mappings-unread")
    def _() -> Any:
        return view(bn.infer_forward(bx, spec([16], [5]), spec([16], [0, -1]), spec([16], []), spec([16], [1, 1])))

    @probe("bn/forward-statistics-without-mesh")
    def _() -> Any:
        loose = kit.DistTensorSpec([16], kit.TensorDistAttr())
        return [view(bn.infer_forward(bx, loose, stat, stat, stat)),
                view(bn.infer_forward(bx, stat, loose, stat, stat))]

    @probe("bn/answers-keep-source-fields")
    def _() -> Any:
        return bookkeeping_view(bn.infer_forward(*tagged_specs(kit, ([8, 16, 4, 4], [0, 1, -1, -1]),
                                                               *[([16], [-1])] * 4)))

    @probe("bn/forward-2d-5d")
    def _() -> Any:
        return [view(bn.infer_forward(spec([8, 16], [0, 1]), stat, stat, stat, stat)),
                view(bn.infer_forward(spec([2, 16, 4, 4, 4], [-1, 0, -1, -1, 1]), stat, stat, stat, stat))]

    @probe("bn/x-rank-1")
    def _() -> Any:
        bn.infer_forward(spec([8], [0]), stat, stat, stat, stat)

    @probe("bn/x-rank-6")
    def _() -> Any:
        bn.infer_forward(spec([2] * 6, [-1] * 6), stat, stat, stat, stat)

    @probe("bn/mean-rank-2")
    def _() -> Any:
        bn.infer_forward(bx, spec([16, 2], [-1, -1]), stat, stat, stat)

    @probe("bn/scale-rank-2")
    def _() -> Any:
        bn.infer_forward(bx, stat, stat, spec([16, 2], [-1, -1]), stat)


#: The family's compat entries, read by paddle_spmd_port.compat (the rules it serves, its probes).
COMPAT = CompatEntries(RULES, CONTAINS, probes)
