"""p_norm in the compat layer: Paddle registers ``p_norm`` with the forward and the reverse rule
(``infer_backward``), both reading ``porder: float, axis: int, epsilon: float, keepdims: bool,
asvector: bool`` after the tensors.

::

    method          tensors (in order)   attributes
    infer_forward   x                    porder: float, axis: int, epsilon: float, keepdims: bool, asvector: bool
    infer_backward  x, out               (the same)
"""

from __future__ import annotations

from typing import Any

from ..kit.compat import CompatEntries, CompatRule, Method, ProbeKit, bookkeeping_view, tagged_specs

_ATTRS = (("porder", "f"), ("axis", "i"), ("epsilon", "f"), ("keepdims", "b"), ("asvector", "b"))

_X = frozenset({"x"})  # the reverse rule reads nothing of x's attr but its rank (and gives x's mesh back)
RULES = (CompatRule("p_norm", Method(("x",), _ATTRS, output_sources=("x",)),
                    Method(("x", "out"), _ATTRS, unread=_X, meshless=_X, output_sources=("out",),
                           whole=frozenset({"outputs"}))),)
#: ``p_norm_grad`` is not a registry name in Paddle: both registries must say so.
CONTAINS = ("p_norm", "p_norm_grad")


def probes(kit: ProbeKit) -> None:
    probe, spec, view = kit.probe, kit.spec, kit.result_view
    pn = kit.rule("p_norm")
    x = spec([4, 6, 8], [0, 1, -1])

    @probe("pn/forward-split-reduced-axis")
    def _() -> Any:
        return view(pn.infer_forward(x, 2.0, 1, 1e-12, False, False))

    @probe("pn/forward-keepdims")
    def _() -> Any:
        return view(pn.infer_forward(x, 1.0, -1, 1e-12, True, False))

    @probe("pn/forward-asvector")
    def _() -> Any:
        return view(pn.infer_forward(spec([4, 6, 8], [0, -1, -1], [1]), 2.0, 0, 1e-12, False, True))

    @probe("pn/reverse")
    def _() -> Any:
        return view(pn.infer_backward(x, spec([4, 8], [1, 0]), 2.0, 1, 1e-12, False, False))

    @probe("pn/reverse-x-mapping-unread")
    def _() -> Any:
        # Paddle's own test_p_norm_rule.py: x keeps setUp's [1, 0] on a 1-D mesh; the reverse rule reads none of it
        on4 = kit.ProcessMesh(mesh=[0, 1, 2, 3])
        return [view(pn.infer_backward(spec([64, 32], dm, on=on4), spec([32], [-1], on=on4), 2.0, 0, 1e-12, False,
                                       False)) for dm in ([1, 0], [0], [0, 0, -1])]

    @probe("pn/reverse-x-without-mesh")
    def _() -> Any:
        loose = kit.DistTensorSpec([4, 6, 8], kit.TensorDistAttr())
        loose.set_dims_mapping([0, 1, -1])
        return view(pn.infer_backward(loose, spec([4, 8], [1, 0]), 2.0, 1, 1e-12, False, False))

    @probe("pn/answers-keep-source-fields")
    def _() -> Any:
        fwd = tagged_specs(kit, ([4, 6, 8], [0, 1, -1]))
        rev = tagged_specs(kit, ([4, 6, 8], [0, 1, -1]), ([4, 8], [1, 0]))
        return [bookkeeping_view(pn.infer_forward(*fwd, 2.0, 1, 1e-12, False, False)),
                bookkeeping_view(pn.infer_backward(*rev, 2.0, 1, 1e-12, False, False))]

    @probe("pn/reverse-forced-axes-conflict")
    def _() -> Any:
        pn.infer_backward(x, spec([1, 1, 1], [1, 0, -1]), 2.0, 1, 1e-12, True, True)

    @probe("pn/reverse-rank-vs-mapping")
    def _() -> Any:
        pn.infer_backward(x, spec([4, 8], [-1]), 2.0, 1, 1e-12, False, False)

    # how the binding classifies each attribute value (porder a float, axis an int, the flags bools)
    for label, args in {"int-porder": (2, 1, 1e-12, False, False), "float-axis": (2.0, 1.0, 1e-12, False, False),
                        "inf-porder": (float("inf"), 1, 1e-12, False, False),
                        "int-keepdims": (2.0, 1, 1e-12, 1, False), "int-asvector": (2.0, 1, 1e-12, False, 2),
                        "float-keepdims": (2.0, 1, 1e-12, 1.5, False)}.items():
        def attribute_probe(args: tuple[Any, ...] = args) -> Any:
            return view(pn.infer_forward(x, *args))

        probe(f"pn/attribute-{label}")(attribute_probe)


#: The family's compat entries, read by paddle_spmd_port.compat (the rules it serves, its probes).
COMPAT = CompatEntries(RULES, CONTAINS, probes)
