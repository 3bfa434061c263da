"""``python -m paddle_spmd_port infer RULE ...``: one rule call, port and native side by side.

    python -m paddle_spmd_port infer layer_norm --mesh 2,3 --x-shape 64,32,1024 --x-mapping 1,-1,-1 \\
        --begin-norm-axis 2
    python -m paddle_spmd_port infer batch_norm_grad --mesh 2 --x-shape 8,6,4,4 --x-mapping -1,0,-1,-1 \\
        --scale-none --data-format NHWC
    python -m paddle_spmd_port infer --case-json '{"rule": ...}'     # the repro line of a report

Every tensor argument NAME of the rule takes ``--NAME-shape``, ``--NAME-mapping``,
``--NAME-partial`` (mesh dims, comma separated) and, where optional, ``--NAME-none``. Shapes not
given are derived from x (per-channel [C] for batch_norm, x.shape[b:] product for scale/bias,
x.shape[:b] for mean/variance); mappings not given are replicated.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence

from .cases.case import Case
from .cases.rulebook import RULES
from .compare import compare
from .outcome import Outcome, run_port
from .types import DistTensorSpec, ProcessMesh


def _ints(text: str, what: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in text.split(",") if v.strip() != "")
    except ValueError:
        raise SystemExit(f"{what}: expected comma-separated integers like 0,-1 — got {text!r}") from None


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes"):
        return True
    if text.lower() in ("0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m paddle_spmd_port infer", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rule", nargs="?", choices=list(RULES), help="rule key")
    ap.add_argument("--case-json", help="a case as JSON (what a report's repro line carries)")
    ap.add_argument("--mesh", default="2,3", help="mesh shape, e.g. 2 or 2,3 (default 2,3)")
    ap.add_argument("--no-native", action="store_true", help="port only (no Paddle needed)")
    ap.add_argument("--backend", choices=("registry", "pir", "compiled"), default=None)
    names = sorted({n for spec in RULES.values() for n in spec.inputs})
    for name in names:
        flag = name.replace("_", "-")
        ap.add_argument(f"--{flag}-shape", dest=f"{name}_shape")
        ap.add_argument(f"--{flag}-mapping", dest=f"{name}_mapping")
        ap.add_argument(f"--{flag}-partial", dest=f"{name}_partial")
        ap.add_argument(f"--{flag}-none", dest=f"{name}_none", action="store_true")
    ap.add_argument("--epsilon", type=float)
    ap.add_argument("--momentum", type=float)
    ap.add_argument("--begin-norm-axis", type=int, dest="begin_norm_axis")
    ap.add_argument("--data-format", dest="data_format")
    for flag in ("is_test", "use_global_stats", "trainable_statistics"):
        ap.add_argument(f"--{flag.replace('_', '-')}", dest=flag, type=_bool)
    return ap


def _derived_shape(rule: str, name: str, x_shape: tuple[int, ...], attrs: dict) -> tuple[int, ...]:
    if name in ("x", "out", "out_grad"):
        return x_shape
    if rule.startswith(("batch_norm", "sync_batch_norm")):
        fmt = attrs.get("data_format", "NCHW")
        c = 1 if len(fmt) > 1 and fmt[1] == "C" else len(x_shape) - 1
        return (x_shape[c],)
    b = attrs.get("begin_norm_axis", 1)
    if name in ("mean", "variance"):
        return x_shape[:b]
    return (math.prod(x_shape[b:]),)


def case_from_args(args: argparse.Namespace) -> Case:
    if args.case_json:
        return Case.from_json(json.loads(args.case_json))
    if args.rule is None:
        raise SystemExit("give a RULE (one of " + ", ".join(RULES) + ") or --case-json")
    spec = RULES[args.rule]
    mesh = ProcessMesh(_ints(args.mesh, "--mesh"))
    attrs = {k: getattr(args, k) for k, _ in spec.attrs if getattr(args, k, None) is not None}
    if args.x_shape is None:
        raise SystemExit("--x-shape is required, e.g. --x-shape 8,6,4,4")
    x_shape = _ints(args.x_shape, "--x-shape")
    inputs: list[DistTensorSpec | None] = []
    for name in spec.inputs:
        if getattr(args, f"{name}_none"):
            if name not in spec.optional:
                raise SystemExit(f"--{name.replace('_', '-')}-none: {name} is not optional for {args.rule}")
            inputs.append(None)
            continue
        shape_text = getattr(args, f"{name}_shape")
        shape = _ints(shape_text, f"--{name}-shape") if shape_text else _derived_shape(args.rule, name, x_shape, attrs)
        mapping_text = getattr(args, f"{name}_mapping")
        mapping = _ints(mapping_text, f"--{name}-mapping") if mapping_text else (-1,) * len(shape)
        partial_text = getattr(args, f"{name}_partial")
        partial = frozenset(_ints(partial_text, f"--{name}-partial")) if partial_text else frozenset()
        inputs.append(DistTensorSpec(shape, mapping, mesh, partial))
    return Case(args.rule, mesh, tuple(inputs), tuple(attrs.items()), "cli")


def _show(label: str, case: Case, outcome: Outcome) -> None:
    print(f"{label}:")
    if outcome.result is None:
        print(f"  {outcome}")
        return
    for side, names, attrs in (("in ", case.spec.result_inputs, outcome.result.inputs),
                               ("out", case.spec.result_outputs, outcome.result.outputs)):
        for name, attr in zip(names, attrs, strict=False):
            print(f"  {side} {name:<15} {str(attr):<22} {' '.join(attr.placements())}")


def _glue_negative_values(argv: Sequence[str]) -> list[str]:
    """``--x-mapping -1,0`` -> ``--x-mapping=-1,0`` (argparse would read -1,0 as an option)."""
    out: list[str] = []
    items = list(argv)
    i = 0
    while i < len(items):
        item = items[i]
        nxt = items[i + 1] if i + 1 < len(items) else ""
        if item.startswith("--") and "=" not in item and nxt[:2].lstrip("-")[:1].isdigit() and nxt.startswith("-"):
            out.append(f"{item}={nxt}")
            i += 2
            continue
        out.append(item)
        i += 1
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(_glue_negative_values(sys.argv[1:] if argv is None else argv))
    case = case_from_args(args)
    print(case.describe())
    port = run_port(case)
    _show("port", case, port)
    if args.no_native:
        return 0
    from .native.pool import run_native
    from .sweep import DEFAULT_BACKEND

    backend = args.backend or DEFAULT_BACKEND[case.rule]
    try:
        (native,), info = run_native([case], backend=backend, workers=1)
    except (ImportError, RuntimeError) as exc:
        print(f"native ({backend}): unavailable: {str(exc).strip()[-300:]}")
        return 0
    _show(f"native ({backend}, Paddle {info.get('version', '?')})", case, native)
    cmp = compare(case.spec, port, native)
    print(f"verdict: {cmp.verdict} ({cmp.matching_cells}/{cmp.cells} cells equal)")
    for diff in cmp.diffs:
        print(f"  {diff}")
    return 1 if cmp.verdict == "mismatch" else 0


if __name__ == "__main__":
    sys.exit(main())
