"""``python -m paddle_spmd_port launch``: run many cases on real ranks, compare with the port.

::

    python -m paddle_spmd_port launch --nproc 2                 # 1-D mesh of 2, CPU/gloo
    python -m paddle_spmd_port launch --nproc 4                 # 2x2 mesh, CPU/gloo
    python -m paddle_spmd_port launch --nproc 2 --backend gpu   # NCCL, --devices 0,1; adds SyncBatchNorm
    python -m paddle_spmd_port launch --nproc 2 --cases my.jsonl --timeout 300 --report-dir out/

Writes ``<report-dir>/launch-np<N>.md`` and ``.json``. Rank logs, launcher output and raw rank
results are moved to ``<report-dir>/launch-np<N>-logs/`` whenever the launch fails, times out or
a case ends in an outcome the port does not account for (always with ``--keep-logs``).

Exit code: 0 all cases accounted for; 1 some verdict not expected; 2 the launch itself failed or
timed out (the report then covers what the ranks finished); 3 bad arguments.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .cases import LaunchCase, default_cases, read_cases, write_cases
from .launcher import LaunchConfig, discard_work_dir, keep_work_dir
from .predict import predict
from .report import DEFAULT_RTOL, build_report, crash_key
from .session import probe_crash, run_cases


def parse_mesh(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"mesh must look like 2 or 2x2, got {text!r}") from None
    if not shape or any(s < 1 for s in shape):
        raise argparse.ArgumentTypeError(f"mesh sizes must be positive, got {text!r}")
    return shape


def default_mesh(nproc: int) -> tuple[int, ...]:
    """2 -> (2,), 4 -> (2, 2), any other n -> (n,)."""
    return (2, 2) if nproc == 4 else (nproc,)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m paddle_spmd_port launch", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nproc", type=int, required=True, help="ranks to start on this node (2: 1-D mesh, 4: 2x2)")
    p.add_argument("--backend", choices=("cpu", "gpu"), default="cpu")
    p.add_argument("--mesh", type=parse_mesh, default=None, help="mesh of the default grid, e.g. 4 or 2x2")
    p.add_argument("--cases", type=Path, default=None, help="JSON-lines case file (default: the built-in grid)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds for the whole launch (default 300)")
    p.add_argument("--report-dir", type=Path, default=Path("reports"), help="where the report goes")
    p.add_argument("--rtol", type=float, default=DEFAULT_RTOL, help="relative tolerance (default 1e-5)")
    p.add_argument("--crash-probes", type=int, default=1,
                   help="per kind of predicted crash, how many cases to run alone to confirm it (default 1)")
    p.add_argument("--devices", default=None, help="GPU ids for --backend gpu (default 0..nproc-1)")
    p.add_argument("--nnodes", default=None, help="passed to paddle.distributed.launch")
    p.add_argument("--master", default=None, help="passed to paddle.distributed.launch")
    p.add_argument("--keep-logs", action="store_true", help="keep rank logs even when everything agrees")
    p.add_argument("--write-cases", type=Path, default=None, help="write the case list to FILE and exit")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    try:
        nodes = int(args.nnodes or 1)
    except ValueError:
        nodes = 1  # an elastic range like "2:4": the world size is only known at run time
    world = args.nproc * nodes
    mesh = args.mesh or default_mesh(world)
    if args.cases is None and math.prod(mesh) != world:
        print(f"--mesh {mesh} needs {math.prod(mesh)} ranks, this launch has {world} "
              f"(--nproc {args.nproc} x --nnodes {nodes})", file=sys.stderr)
        return 3
    try:
        cases = read_cases(args.cases) if args.cases else default_cases(mesh, args.backend)
    except (OSError, ValueError) as exc:
        print(f"cannot read cases: {exc}", file=sys.stderr)
        return 3
    if args.write_cases:
        print(f"wrote {write_cases(cases, args.write_cases)} cases to {args.write_cases}")
        return 0
    return run(cases, args)


def run_probes(cases: Sequence[LaunchCase], per_kind: int, work_dir: Path) -> dict[str, dict]:
    """Run up to ``per_kind`` cases of every kind of predicted crash alone (in parallel); the
    first probe of each kind is the one reported."""
    from concurrent.futures import ThreadPoolExecutor

    chosen: dict[str, list[LaunchCase]] = {}
    for case in cases:
        key = crash_key(predict(case))
        if key is not None and len(chosen.setdefault(key, [])) < per_kind:
            chosen[key].append(case)
    jobs = [(key, case) for key, items in chosen.items() for case in items]
    if not jobs:
        return {}
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        results = list(pool.map(lambda job: probe_crash(job[1], work_dir=work_dir / job[1].case_id), jobs))
    probes: dict[str, dict] = {}
    for (key, _), result in zip(jobs, results, strict=True):
        if key not in probes or not result["confirmed"]:
            probes[key] = result
    return probes


def run(cases: list[LaunchCase], args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    runnable = [c for c in cases if not (c.op == "sync_batch_norm" and args.backend == "cpu")]
    not_run = {c.case_id: "sync_batch_norm has no CPU kernel: run with --backend gpu"
               for c in cases if c not in runnable}
    config = LaunchConfig(nproc=args.nproc, backend=args.backend, timeout=args.timeout, nnodes=args.nnodes,
                          master=args.master, devices=args.devices)
    print(f"launching {len(runnable)} cases on {args.nproc} ranks ({args.backend}) ...", flush=True)
    session = run_cases(runnable, config)
    launch = session.launch
    print(launch.summary(), flush=True)

    probes = run_probes(runnable, args.crash_probes, launch.work_dir / "probes")
    for key, probe in probes.items():
        print(f"crash probe {key} (case {probe['case_id']}): {probe['summary']}", flush=True)

    records = session.case_records()
    # multi-node: each node reports on the ranks it ran (their global ids); one node: 0..nproc-1
    ranks = list(range(args.nproc)) if args.nnodes in (None, "1") else sorted(session.rank_info())
    for case_id, reason in not_run.items():
        records[case_id] = {r: {"kind": "case", "case_id": case_id, "rank": r, "stages": {}, "error": None,
                                "tensors": {}, "skipped": {"stage": "setup", "reason": reason}}
                            for r in ranks}
    info = session.rank_info().get(min(ranks) if ranks else 0, {})
    stem = f"launch-np{args.nproc}" + ("-gpu" if args.backend == "gpu" else "")
    meta = {
        "title": f"{args.nproc} ranks, {args.backend}",
        "command": "python -m paddle_spmd_port launch " + " ".join(getattr(args, "argv", [])),
        "launch": launch.summary(), "launch_command": " ".join(launch.command),
        "paddle": f"{info.get('paddle', '?')} ({info.get('commit', '')[:12]})", "backend": args.backend,
        "nproc": args.nproc, "meshes": sorted({"x".join(map(str, c.mesh_shape)) for c in cases}),
        "cases": len(cases), "launch_seconds": round(launch.seconds, 1), "probes": probes,
    }
    report = build_report(cases, records, ranks, meta, args.rtol, probes)
    report.meta["wall_seconds"] = round(time.monotonic() - t0, 1)
    md, js = report.write(args.report_dir, stem)
    counts = report.counts_expected()
    print("verdicts: " + ", ".join(f"{v}{'' if e else ' (NOT expected)'}: {n}" for (v, e), n in sorted(counts.items())))
    unexpected = report.unexpected
    failed = not launch.ok
    if failed or unexpected or args.keep_logs:
        kept = keep_work_dir(launch, args.report_dir / f"{stem}-logs")
        print(f"logs kept in {kept.work_dir}")
        if failed:
            print(kept.failure_text(), file=sys.stderr)
    else:
        discard_work_dir(launch)
    for v in unexpected[:20]:
        print(f"NOT EXPECTED {v.case.case_id} {v.case.describe()}: {v.verdict}: {'; '.join(v.reasons)[:400]}")
    print(f"report: {md} and {js}; {len(cases)} cases, wall {report.meta['wall_seconds']}s")
    if failed:
        return 2
    return 1 if unexpected else 0
