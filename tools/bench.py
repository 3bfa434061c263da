#!/usr/bin/env python
"""Benchmarks, measured side by side in one process and one run (ratios, not timed asserts).

    python tools/bench.py [--cases N] [--repeat R] [--pir] [--compiled] [--sweep]

1. per call, port vs native registry, on the same cases:
   a) the rule call alone, on pre-built specs (port DistTensorSpec vs Paddle DistTensorSpec);
   b) the whole trip a user pays: build the specs, call, read every field of the answer.
2. ``--pir`` / ``--compiled``: backend throughput (cases/s) on samples of the hidden rules' grids,
   in-process and through the worker pool, with the port's rate on the same cases.
3. ``--sweep``: wall time of the whole ``parity`` sweep (runs it).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import timeit
import warnings

sys.path.insert(0, ".")
warnings.filterwarnings("ignore")

from paddle_spmd_port.parity.grid import grid_for, sample  # noqa: E402
from paddle_spmd_port.rules import rule_function  # noqa: E402

REGISTRY_RULES = ("batch_norm_static", "layer_norm", "layer_norm_reverse")


def best_per_call(fn, n: int, repeat: int) -> float:
    return min(timeit.repeat(fn, number=1, repeat=repeat)) / n


def bench_registry(n_cases: int, repeat: int) -> list[tuple[str, float, float, float, float]]:
    return [bench_registry_rule(rule, n_cases, repeat) for rule in REGISTRY_RULES]


def bench_registry_rule(rule: str, n_cases: int, repeat: int) -> tuple[str, float, float, float, float]:
    from paddle_spmd_port.native import registry as reg

    cases = [c for c in sample(list(grid_for(rule)), n_cases, seed=3) if "-invalid-" not in c.case_id]
    name, method = reg.ROUTES[rule]
    paddle_rule = reg.core.get_phi_spmd_rule(name)
    call = getattr(paddle_rule, method)
    port_fn = rule_function(cases[0].rule)
    prepared_port = [(c.inputs, c.attr_values()) for c in cases]
    prepared_native = [([reg.to_paddle_spec(s) for s in c.inputs],
                        [] if rule == "batch_norm_static" else reg._typed_attrs(c)) for c in cases]

    def port_call():
        for inputs, attrs in prepared_port:
            try:
                port_fn(*inputs, *attrs)
            except (ValueError, NotImplementedError):
                pass

    def native_call():
        for specs, attrs in prepared_native:
            try:
                call(*specs, *attrs)
            except (ValueError, NotImplementedError):
                pass

    def port_trip():
        for c in cases:
            try:
                res = c.call_port()
            except (ValueError, NotImplementedError):
                continue
            for a in res.inputs + res.outputs:
                a.dims_mapping, a.partial_dims, a.mesh  # noqa: B018

    def native_trip():
        for c in cases:
            reg.run(c)  # builds Paddle specs, calls, converts every attr back

    n = len(cases)
    pc, nc = best_per_call(port_call, n, repeat), best_per_call(native_call, n, repeat)
    pt, nt = best_per_call(port_trip, n, repeat), best_per_call(native_trip, n, repeat)
    return rule, pc, nc, pt, nt


def bench_throughput(backend: str, n_cases: int) -> list[tuple[str, int, float, float, float]]:
    """Cases/s of a native backend on the hidden rules: in this process (``run_many``) and through
    the crash-isolating worker pool (2 workers, JSON protocol), next to the port on the same cases."""
    import importlib

    from paddle_spmd_port.native.pool import run_native
    from paddle_spmd_port.outcome import port_outcome

    module = importlib.import_module(f"paddle_spmd_port.native.{backend}")
    rows = []
    for rule in ("batch_norm", "batch_norm_grad", "layer_norm_grad"):
        cases = [c for c in sample(list(grid_for(rule)), n_cases, seed=5) if "-invalid-" not in c.case_id]
        t0 = time.perf_counter()
        outs = list(module.run_many(cases))
        in_process = len(cases) / (time.perf_counter() - t0)
        assert len(outs) == len(cases)
        t0 = time.perf_counter()
        run_native(cases, backend=backend, workers=2)
        pooled = len(cases) / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        for c in cases:
            port_outcome(c)
        port = len(cases) / (time.perf_counter() - t0)
        rows.append((rule, len(cases), in_process, pooled, port))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--pir", action="store_true", help="PIR backend throughput")
    ap.add_argument("--compiled", action="store_true", help="compiled-caller backend throughput")
    ap.add_argument("--sweep", action="store_true")
    args = ap.parse_args()
    print("## port vs native registry, per call (best of", args.repeat, "runs)\n")
    print("| rule | port call | native call | speed-up | port trip | native trip | speed-up |")
    print("|---|---|---|---|---|---|---|")
    for rule, pc, nc, pt, nt in bench_registry(args.cases, args.repeat):
        print(f"| {rule} | {pc * 1e6:.1f} µs | {nc * 1e6:.1f} µs | {nc / pc:.1f}x | {pt * 1e6:.1f} µs "
              f"| {nt * 1e6:.1f} µs | {nt / pt:.1f}x |")
    for backend in [b for b in ("pir", "compiled") if getattr(args, b)]:
        print(f"\n## {backend} backend throughput, cases/s\n")
        print("| rule | cases | in-process | pool (2 workers, incl. start-up) | port (1 process) |")
        print("|---|---|---|---|---|")
        for rule, n, in_process, pooled, port in bench_throughput(backend, args.cases):
            print(f"| {rule} | {n} | {in_process:,.0f} | {pooled:,.0f} | {port:,.0f} |")
    if args.sweep:
        t0 = time.time()
        rc = subprocess.call([sys.executable, "-m", "paddle_spmd_port", "parity", "--quiet",
                              "--report-dir", "reports/bench-sweep"], stdout=subprocess.DEVNULL)
        print(f"\n## whole parity sweep: {time.time() - t0:.1f} s wall (exit {rc})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
