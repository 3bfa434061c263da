"""layer_norm in the compat layer: Paddle registers ``layer_norm`` with the forward and the reverse
rule (``infer_backward``), both reading ``epsilon: float, begin_norm_axis: int`` after the tensors;
an absent scale or bias is the mesh-less stand-in ``DistTensorSpec([0], TensorDistAttr())``.

::

    method          tensors (in order)                      attributes
    infer_forward   x, scale, bias                          epsilon: float, begin_norm_axis: int
    infer_backward  x, scale, bias, out, mean, variance     epsilon: float, begin_norm_axis: int
"""

from __future__ import annotations

from typing import Any

from ..kit.compat import CompatEntries, CompatRule, Method, ProbeKit, bookkeeping_view, tagged_specs

_ATTRS = (("epsilon", "f"), ("begin_norm_axis", "i"))
_SCALE_BIAS = frozenset({"scale", "bias"})

RULES = (
    CompatRule("layer_norm",
               Method(("x", "scale", "bias"), _ATTRS, optional=_SCALE_BIAS, unread=_SCALE_BIAS,
                      output_sources=("x", "x", "x")),
               Method(("x", "scale", "bias", "out", "mean", "variance"), _ATTRS, optional=_SCALE_BIAS,
                      unread=_SCALE_BIAS | {"x"}, meshless=frozenset({"x"}), output_sources=("out", "mean", "variance"),
                      whole=frozenset({"inputs", "outputs"}))),
)
#: ``layer_norm_grad`` is not a registry name in Paddle: both registries must say so.
CONTAINS = ("layer_norm", "layer_norm_grad")


def probes(kit: ProbeKit) -> None:
    probe, spec, absent, view, np = kit.probe, kit.spec, kit.absent, kit.result_view, kit.np
    ln = kit.rule("layer_norm")
    x, s = spec([64, 32, 1024], [1, -1, -1]), spec([1024], [-1])
    out, mean = spec([64, 32, 1024], [1, -1, -1], [0]), spec([64, 32], [1, -1])

    @probe("coshard/layer-norm-reads-the-surviving-dim")
    def _() -> Any:
        xs = kit.DistTensorSpec([8, 6, 4], kit.coshard([[0, 1], [], []], kit.mesh32))
        return view(kit.fetch("layer_norm").infer_forward(xs, absent(), absent(), 1e-5, 2))

    @probe("registry/kwargs", message=False)
    def _() -> Any:
        ln.infer_forward(x=x)

    @probe("ln/forward")
    def _() -> Any:
        return view(ln.infer_forward(x, s, s, 1e-5, 2))

    @probe("ln/forward-partial-and-absent-scale")
    def _() -> Any:
        return view(ln.infer_forward(spec([64, 32, 1024], [1, -1, -1], [0]), absent(), s, 1e-5, 2))

    @probe("ln/forward-absent-with-mapping")
    def _() -> Any:
        b = absent()
        b.set_dims_mapping([0])
        return view(ln.infer_forward(x, s, b, 1e-5, 2))

    @probe("ln/unread-mappings")
    def _() -> Any:
        # scale's and bias's mappings (and x's in the reverse rule) are never read: stale or invalid ones answer
        # (the reverse rule answers scale and bias with their own dynamic_dims, so no stale length there)
        stale, wrong = spec([1024], [1, -1, -1]), spec([1024], [5])
        return [view(ln.infer_forward(x, stale, wrong, 1e-5, 2)),
                view(ln.infer_backward(spec([64, 32, 1024], [0, 0, 7]), wrong, spec([1024], [1]), out, mean, mean,
                                       1e-5, 2))]

    @probe("ln/reverse-x-without-mesh")
    def _() -> Any:
        loose = kit.DistTensorSpec([64, 32, 1024], kit.TensorDistAttr())
        loose.set_dims_mapping([1, -1, -1])
        return view(ln.infer_backward(loose, s, s, out, mean, mean, 1e-5, 2))

    @probe("ln/answers-keep-source-fields")
    def _() -> Any:
        fwd = tagged_specs(kit, ([8, 4, 16], [1, -1, -1]), ([16], [-1]), ([16], [-1]))
        rev = tagged_specs(kit, ([8, 4, 16], [1, -1, -1]), ([16], [-1]), ([16], [-1]), ([8, 4, 16], [1, -1, -1]),
                           ([8, 4], [1, -1]), ([8, 4], [1, -1]))
        return [bookkeeping_view(ln.infer_forward(*fwd, 1e-5, 2)), bookkeeping_view(ln.infer_backward(*rev, 1e-5, 2))]

    @probe("ln/forward-begin-norm-axis-0")
    def _() -> Any:
        return view(ln.infer_forward(x, s, s, 1e-5, 0))

    @probe("ln/forward-interleaved-args")
    def _() -> Any:
        return view(ln.infer_forward(x, 1e-5, s, 2, s))

    @probe("ln/forward-extra-args")
    def _() -> Any:
        return view(ln.infer_forward(x, s, s, x, 1e-5, 2, "extra", 3.5, [1, 2]))

    @probe("ln/forward-one-dim-mesh")
    def _() -> Any:
        w = spec([16], [-1], on=kit.mesh1)
        return view(ln.infer_forward(spec([8, 16], [0, -1], on=kit.mesh1), w, w, 1e-5, 1))

    @probe("ln/reverse-partial-kept")
    def _() -> Any:
        return view(ln.infer_backward(spec([64, 32, 1024], [-1, -1, -1], [0]), s, s, out, mean, mean, 1e-5, 2))

    @probe("ln/reverse-absent-scale-bias")
    def _() -> Any:
        return view(ln.infer_backward(x, absent(), absent(), out, mean, mean, 1e-5, 2))

    @probe("ln/reverse-conflict")
    def _() -> Any:
        ln.infer_backward(x, s, s, spec([64, 32, 1024], [0, -1, -1]), mean, mean, 1e-5, 2)

    @probe("ln/reverse-forced-axes-conflict")
    def _() -> Any:
        o = spec([8, 8, 4, 4], [-1, -1, 0, 1])
        m = spec([8, 8], [-1, -1])
        ln.infer_backward(spec([8, 8, 4, 4], [-1, -1, -1, -1]), s, s, o, m, m, 1e-5, 2)

    @probe("ln/reverse-rank-vs-mapping")
    def _() -> Any:
        ln.infer_backward(x, s, s, out, spec([64], [1, -1]), mean, 1e-5, 2)

    @probe("ln/scale-rank")
    def _() -> Any:
        ln.infer_forward(x, spec([32, 1024], [-1, -1]), s, 1e-5, 1)

    # how the binding classifies each attribute value (the rule wants a float, then an int)
    for label, args in {"int-epsilon": (0, 2), "float-axis": (1e-5, 2.0), "bool-epsilon": (True, 2),
                        "bool-axis": (1e-5, False), "str-axis": (1e-5, "2"), "list-axis": (1e-5, [2]),
                        "float-list-epsilon": ([1e-5], 2), "bool-list-epsilon": ([True], 2),
                        "empty-list-epsilon": ([], 2), "float64-epsilon": (np.float64(1e-5), 2),
                        "float32-epsilon": (np.float32(1e-5), 2),
                        "int64-axis": (1e-5, np.int64(2)), "none-epsilon": (None, 2),
                        "tuple-epsilon": ((1e-5,), 2), "dict-axis": (1e-5, {}), "big-axis": (1e-5, 2 ** 40),
                        "str-list-epsilon": (["a"], 2), "int64-list-epsilon": ([np.int64(1)], 2),
                        "big-list-epsilon": ([2 ** 40], 2), "mixed-list-axis": (1e-5, [1, 2.0]),
                        "trailing-none": (1e-5, 2, None)}.items():
        def attribute_probe(args: tuple[Any, ...] = args) -> Any:
            return view(ln.infer_forward(x, s, s, *args))

        probe(f"ln/attribute-{label}")(attribute_probe)


#: The family's compat entries, read by paddle_spmd_port.compat (the rules it serves, its probes).
COMPAT = CompatEntries(RULES, CONTAINS, probes)
