"""Which cases each native route runs crash-isolated, without importing Paddle.

Each backend runs the cases its predicate names in forked children (:mod:`._fork`, or the C++
caller's own fork), consecutive ones sharing a child. :mod:`.pool` reads :data:`MAY_CRASH` to
put them next to each other within every worker's slice (a fork per run of them instead of one
per scattered case). A predicate only picks how a case runs, never its outcome.
"""

from __future__ import annotations

from collections.abc import Callable

from ..case import Case
from .compiled import may_crash as compiled_may_crash


def pir_may_crash(case: Case) -> bool:
    """Cases the PIR route builds in a forked child. batch_norm_grad with scale or bias None and x
    split anywhere (Paddle 3.3.1 segfaults when the channel axis is split: it marks partial on an
    attr without a mesh), a data_format too short for the rule's ``data_format[1]`` read, and any
    rule with an input on a mesh of another number of dims than x's (the rules then name mesh dims
    an attr's own mesh lacks; on the grid 44 of 416 such cases segfault); group_norm_grad with scale
    or bias None while x's axis 0 is split (the rule marks Partial on an attr without a mesh:
    SIGSEGV: all 29 such cases of its grid).

    A crash it misses still becomes a ``native crashed`` outcome through the worker restart of
    :mod:`.pool`, only slower (a fresh worker imports Paddle: 1.5-3 s, against ~25 ms for a fork)."""
    x = case.inputs[0]
    if x is not None and x.mesh is not None and any(
            s is not None and s.mesh is not None and s.mesh.ndim != x.mesh.ndim for s in case.inputs):
        return True
    if case.rule == "group_norm_grad":  # scale or bias None, x's axis 0 split: partial on an attr without a mesh
        return (x is not None and x.dims_mapping[:1] not in ((), (-1,))
                and (case.inputs[1] is None or case.inputs[2] is None))
    if case.rule not in ("batch_norm", "batch_norm_grad"):
        return False
    fmt = dict(case.attrs).get("data_format", "NCHW")
    if not isinstance(fmt, str) or len(fmt) < 2:
        return True
    if case.rule == "batch_norm":
        return False
    x, scale, bias = case.inputs[0], case.inputs[1], case.inputs[2]
    return (scale is None or bias is None) and x is not None and any(m != -1 for m in x.dims_mapping)


#: backend -> the cases it runs in forked children (the registry isolates what the compiled caller does).
MAY_CRASH: dict[str, Callable[[Case], bool]] = {
    "registry": compiled_may_crash,
    "compiled": compiled_may_crash,
    "pir": pir_may_crash,
}
