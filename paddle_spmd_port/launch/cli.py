"""``python -m paddle_spmd_port launch``: run many cases on real ranks, compare with the port.

::

    python -m paddle_spmd_port launch --nproc 2                 # 1-D mesh of 2, CPU/gloo
    python -m paddle_spmd_port launch --nproc 4                 # 2x2 mesh, CPU/gloo
    python -m paddle_spmd_port launch --nproc 2 --device gpu    # NCCL, --devices 0,1; adds the GPU-only cases
    python -m paddle_spmd_port launch --nproc 2 --cases my.jsonl --timeout 300 --report-dir out/
    python -m paddle_spmd_port launch --nproc 4 --coshard       # the co-shard set on 2x2 (8 ranks: 2x2x2)
    python -m paddle_spmd_port launch --nproc 2 --rules KEY,KEY # only the cases of these rule keys

``--rules`` (rule keys, as every command spells it) keeps the cases whose op runs one of the rules
(:data:`.cases.OP_RULES`); a rule no launch case reaches (:data:`.cases.NOT_LAUNCHED`: each family's
``ops/<family>/launch.py`` says which and why) is refused by name (exit 2), and listed in the
report under ``all``.

Writes ``<report-dir>/launch-np<N>.md`` and ``.json`` (``launch-np<N>-coshard.*`` with ``--coshard``).
A report there of another selection (other ``--rules``, ``--cases``, ``--mesh``) is refused before
anything runs unless ``--replace-report``, as in every command. ``--nproc`` beyond what the machine
holds (:data:`RANKS_PER_CORE` ranks a core, :data:`RANK_MEMORY_MB` MB of available memory a rank) is
refused unless ``--oversubscribe``. ``--device gpu`` asks Paddle first for a CUDA build and enough
visible GPUs (one line, exit 3, nothing launched); a CPU wheel, or a machine where no GPU can be visible
(``CUDA_VISIBLE_DEVICES`` empty or negative, no GPU device node), is told before the opening line. It
says what it is about to do within a second (on stderr; ``--quiet`` silences it), then prints each
phase: the launch, the crash probes, the PIR route, the report.
Rank logs, launcher output and raw rank results are moved to ``<report-dir>/<that stem>-logs/``
whenever the launch fails, times out, is interrupted, leaves cases unrun or a case ends in an
outcome or a communication the port does not account for (always with ``--keep-logs``).

Each case also gets two communication verdicts: the reshards the ranks ran (Paddle's VLOG lines,
parsed in the ranks) and the reshard and collective ops of its forward through the PIR passes
(phase 3, one plain process), both against ``reshard.plan`` of the port's answer (:mod:`.comm`).

Exit code (the shared table of :mod:`paddle_spmd_port.runctl`): 0 the port accounts for every
case's outcome and communication (a case skipped for a known reason, like an op without a kernel on
the device, included); 1 some verdict or communication difference the port does not account for
(a finding; outranks 3); 2 bad arguments: one line on stderr names the argument and what is valid,
checked (output paths included) before anything is launched or written; 3 the launch itself failed
or timed out, or cases were left unrun (the report covers what the ranks finished), or a rank did
not see its reshard log lines, or the PIR route did not reach every case, or ``--device gpu``
without a CUDA build or enough GPUs (one line, nothing
written); 4 an internal error; 130 / 143 interrupted by SIGINT / SIGTERM: the launcher, every rank and
every crash probe are ended, the temporary directory is removed, the partial report is written (its
first line says INTERRUPTED; unfinished cases are "not run: interrupted") and the rank logs are kept
in ``launch-np<N>-logs/``; the one line on stderr says where. A second signal during that cleanup
is ignored. An internal error (4) ends the run the same way, its partial report ``INTERRUPTED by an
internal error (...)``.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from ..ops.kit.launch import launch_ops
from ..runctl.command import run_command
from ..runctl.exits import EXIT_FINDING, EXIT_INCOMPLETE, EXIT_OK, UsageError, prefix
from ..runctl.grammar import (
    MAX_SECONDS,
    ArgumentParser,
    add_rules_argument,
    available_cores,
    count,
    mesh_shape,
    path_text,
    positive,
    rule_keys,
    seconds,
    whole_number,
)
from ..runctl.paths import add_replace_report_argument, check_output_dir, check_output_file, refuse_other_selection
from ..runctl.signals import Interrupted, add_detail, stopped_by
from .cases import (
    NOT_LAUNCHED,
    OP_RULES,
    LaunchCase,
    coshard_cases,
    default_cases,
    read_cases,
    select_by_rules,
    write_cases,
)
from .launcher import LaunchConfig, LaunchResult, discard_work_dir, end_processes, keep_dir, keep_work_dir, new_job_id
from .output import write_report
from .predict import predict
from .report import DEFAULT_RTOL, Report, build_report, crash_key
from .session import (
    ChildGuard,
    PirResult,
    case_records,
    probe_crash,
    raised_in_ranks,
    rank_info,
    read_rank_records,
    run_cases,
    run_pir_route,
)

PROG = "python -m paddle_spmd_port launch"
EPILOG = """\
here: 1 = a verdict or a communication difference the port does not account for; 3 = the launch
failed or timed out, or cases were not run, or the ranks' reshard log lines (VLOG) were not seen,
or the PIR route did not reach every case; on 130/143 every process is ended, the partial report
and rank logs are kept in --report-dir."""
CASES_VALID = "give a JSON-lines file, one LaunchCase object a line (--write-cases FILE writes the built-in grid)"


def default_mesh(nproc: int) -> tuple[int, ...]:
    """2 -> (2,), 4 -> (2, 2), any other n -> (n,)."""
    return (2, 2) if nproc == 4 else (nproc,)


#: Runs of one crash probe before a crash the port predicts counts as not reproduced: a heap
#: corruption does not abort every run (:func:`.session.probe_crash`).
PROBE_ATTEMPTS = 5

#: ``--coshard`` without ``--mesh``: ranks -> mesh (a co-shard needs 2 or more mesh dims).
COSHARD_MESHES = {4: (2, 2), 8: (2, 2, 2)}


def _coshard_ops() -> str:
    """The ops of the co-shard set, for --coshard's help."""
    mesh = (2, 2)
    ops = sorted({c.op for c in coshard_cases(mesh)}, key=list(OP_RULES).index)
    return " and ".join([", ".join(ops[:-1]), ops[-1]] if len(ops) > 1 else ops)


def _gpu_only_ops() -> str:
    """The ops --device gpu adds, for --device's help."""
    ops = [name for name, op in launch_ops().items() if "cpu" in op.no_kernel]
    return f": {', '.join(ops)}" if ops else ""


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog=PROG, description=__doc__.split("\n")[0], epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nproc", type=count, required=True,
                   help=f"ranks to start on this node (2: 1-D mesh, 4: 2x2); at most what the machine holds "
                        f"({RANKS_PER_CORE} a core, {RANK_MEMORY_MB} MB of available memory each) unless "
                        "--oversubscribe")
    p.add_argument("--oversubscribe", action="store_true",
                   help="allow --nproc beyond what this machine holds (cores, memory)")
    p.add_argument("--device", choices=("cpu", "gpu"), default="cpu",
                   help="where the ranks run: cpu (gloo) or gpu (NCCL; adds the GPU-only cases"
                        f"{_gpu_only_ops()}); default cpu")
    p.add_argument("--mesh", type=mesh_shape, default=None,
                   help="mesh of the built-in grid, sizes joined by x, e.g. 4 or 2x2 (default: 2 ranks -> 2, "
                        "4 -> 2x2, n -> n)")
    p.add_argument("--cases", type=path_text, default=None, help="JSON-lines case file (default: the built-in grid)")
    p.add_argument("--coshard", action="store_true",
                   help="run the co-shard set instead of the built-in grid: x split along 2 or more mesh dims "
                        f"(Shard(d, shard_order=k)), {_coshard_ops()}; mesh 2x2 for 4 ranks, 2x2x2 for 8, "
                        "else give --mesh with 2 or more dims")
    add_rules_argument(p, all_means="every rule a launch case reaches: "
                       f"{', '.join(sorted({k for keys in OP_RULES.values() for k in keys}))}; the others "
                       f"({', '.join(NOT_LAUNCHED)}) are listed in the report as not launched, and refused when named")
    p.add_argument("--timeout", type=seconds, default=300.0,
                   help=f"seconds for the whole launch (> 0, at most {MAX_SECONDS:.0f}; default 300)")
    p.add_argument("--report-dir", type=path_text, default=Path("reports"),
                   help="where the report goes (default reports/); a report there of another selection (other "
                        "--rules, --cases, --mesh) is refused unless --replace-report")
    add_replace_report_argument(p)
    p.add_argument("--rtol", type=float, default=DEFAULT_RTOL, help="relative tolerance (default 1e-5)")
    p.add_argument("--crash-probes", type=whole_number, default=1,
                   help="per kind of predicted crash, how many cases to run alone to confirm it (default 1)")
    p.add_argument("--devices", default=None, help="GPU ids for --device gpu, comma-separated (default 0..nproc-1)")
    p.add_argument("--nnodes", default=None, help="passed to paddle.distributed.launch (N or MIN:MAX)")
    p.add_argument("--master", default=None, help="passed to paddle.distributed.launch: HOST:PORT of the master "
                                                     "node, or etcd://HOST:PORT")
    p.add_argument("--keep-logs", action="store_true", help="keep rank logs even when everything agrees")
    p.add_argument("--write-cases", type=path_text, default=None, help="write the case list to FILE and exit")
    p.add_argument("--quiet", action="store_true", help="no opening line")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    return run_command(PROG, lambda: _main(argv))


def _main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    args.argv = argv
    cases = check_args(args)
    if args.write_cases:
        try:  # check_output_file allowed missing directories on the way: they are made, as for a report
            Path(args.write_cases).parent.mkdir(parents=True, exist_ok=True)
            written = write_cases(cases, args.write_cases)
        except OSError as exc:
            raise UsageError("--write-cases", f"cannot write {args.write_cases} ({exc.strerror or exc})",
                             "give a writable file path") from None
        print(f"wrote {written} cases to {args.write_cases}")
        return EXIT_OK
    try:
        if args.device == "gpu":
            cpu_build_by_files()  # instant; Paddle itself is asked below, after the opening line
            no_gpu_visible()  # instant too: a machine where no GPU can be visible is told in one line
        if not args.quiet:
            print(opening_line(args, cases), file=sys.stderr, flush=True)
        if args.device == "gpu":
            check_gpus(args)
    except GpuUnavailable as exc:
        print(f"{prefix(PROG)}: {exc}", file=sys.stderr)
        return EXIT_INCOMPLETE
    return run(cases, args)


# --------------------------------------------------------------------------- argument checks
def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _check_master(master: str | None) -> None:
    """``--master``: ``HOST:PORT`` (port 1..65535) or an ``etcd://`` endpoint, the two forms
    paddle.distributed.launch reads; anything else failed inside the launcher after the report
    directory was made (``nohost`` with --nnodes 2: its ValueError, then ours)."""
    if master is None:
        return
    valid = "give HOST:PORT of the master node (port 1..65535, e.g. 10.0.0.1:8090), or etcd://HOST:PORT"
    if master.startswith("etcd://"):
        if not master[len("etcd://"):].strip():
            raise UsageError("--master", f"{master!r} names no etcd endpoint", valid)
        return
    host, sep, port = master.partition(":")
    if not sep or not host.strip() or ":" in port or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise UsageError("--master", f"{master!r} is not HOST:PORT" if master.strip() else "empty", valid)


def _nodes(nnodes: str | None) -> int | None:
    """``--nnodes`` as a node count; None for an elastic range (the world is known only at run time)."""
    if nnodes is None:
        return 1
    m = re.fullmatch(r"\s*(\d+)\s*(?::\s*(\d+)\s*)?", nnodes)
    if not m or int(m.group(1)) < 1 or (m.group(2) is not None and int(m.group(2)) < int(m.group(1))):
        raise UsageError("--nnodes", f"{nnodes!r} is not allowed", "give a node count >= 1, or MIN:MAX like 2:4")
    return None if m.group(2) is not None and m.group(2) != m.group(1) else int(m.group(1))


def _check_devices(args: argparse.Namespace) -> None:
    if args.devices is None:
        return
    example = ",".join(str(i) for i in range(args.nproc))
    if args.device != "gpu":
        raise UsageError("--devices", "only used with --device gpu", "drop --devices, or add --device gpu")
    ids = [v.strip() for v in args.devices.split(",")]
    if not all(v.isdigit() for v in ids):
        raise UsageError("--devices", f"{args.devices!r} is not a list of GPU ids",
                         f"give one id per rank, comma-separated, e.g. {example}")
    if len(set(ids)) != len(ids):
        raise UsageError("--devices", f"{args.devices!r} names a GPU twice", f"give distinct ids, e.g. {example}")
    if len(ids) != args.nproc:
        raise UsageError("--devices", f"{len(ids)} GPU id(s) for --nproc {args.nproc}",
                         f"give one id per rank, e.g. {example}")
    args.devices = ",".join(ids)


def _read_case_file(path: Path) -> list[LaunchCase]:
    if not path.exists():
        raise UsageError("--cases", f"{path} does not exist", CASES_VALID)
    if path.is_dir():
        raise UsageError("--cases", f"{path} is a directory", CASES_VALID)
    try:
        cases = read_cases(path)
    except OSError as exc:
        raise UsageError("--cases", f"cannot read {path} ({exc.strerror or exc})", CASES_VALID) from None
    except ValueError as exc:  # bad JSON, unknown or ill-typed fields, duplicate ids, not UTF-8
        raise UsageError("--cases", _one_line(exc)[:400], CASES_VALID) from None
    if not cases:
        raise UsageError("--cases", f"{path} holds no cases", CASES_VALID)
    return cases


def check_args(args: argparse.Namespace) -> list[LaunchCase]:
    """Every argument checked before anything is launched or written; returns the cases.
    Raises :class:`UsageError` naming the first bad argument."""
    positive(args.nproc, "--nproc", "a whole number of ranks >= 1")
    if args.write_cases is None:
        _check_capacity(args.nproc, args.oversubscribe)
    if not (math.isfinite(args.rtol) and args.rtol >= 0):
        raise UsageError("--rtol", f"{args.rtol!r} is not allowed", "give a relative tolerance >= 0, e.g. 1e-5")
    if args.crash_probes < 0:
        raise UsageError("--crash-probes", f"{args.crash_probes!r} is not allowed",
                         "give 0 (no probes) or a number of cases per kind of predicted crash")
    _check_master(args.master)
    nodes = _nodes(args.nnodes)
    _check_devices(args)
    if args.coshard:
        cases = _coshard_cases(args, nodes)
    elif args.cases is not None:
        if args.mesh is not None:
            raise UsageError("--mesh", "only shapes the built-in grid; every case of --cases has its own mesh_shape",
                             "drop --mesh or drop --cases")
        cases = _read_case_file(args.cases)
    else:
        world = args.nproc * (nodes or 1)
        mesh = args.mesh or default_mesh(world)
        if len(mesh) > 2:
            raise UsageError("--mesh", f"{'x'.join(map(str, mesh))}: the built-in grid has 1-D and 2-D meshes only",
                             "give a mesh like 4 or 2x2, or a --cases file for other meshes")
        if nodes is not None and math.prod(mesh) != world:
            raise UsageError("--mesh", f"{'x'.join(map(str, mesh))} needs {math.prod(mesh)} ranks, this launch has "
                             f"{world} (--nproc {args.nproc} x --nnodes {nodes})",
                             f"give a mesh of {world} ranks, e.g. {'x'.join(map(str, default_mesh(world)))}")
        try:
            cases = default_cases(mesh, args.device)
        except ValueError as exc:
            raise UsageError("--mesh", _one_line(exc), "give a 1-D or 2-D mesh like 4 or 2x2") from None
    cases = _select_rules(args.rules, cases)
    _check_sizes(cases, args)
    for case in cases:  # the report predicts every case: a case the port cannot take fails here, not at the end
        try:
            predict(case)
        except Exception as exc:  # any failure is this case's problem, told in one line
            where = "--cases" if args.cases is not None else "--mesh"
            raise UsageError(where, f"case {case.case_id} ({case.describe()}): the port cannot predict it: "
                             f"{type(exc).__name__}: {_one_line(exc)[:300]}", "fix or drop that case") from None
    if args.write_cases is not None:
        check_output_file(args.write_cases, "--write-cases")
    else:
        _check_report_paths(args)
        args.selection = selection_of(args)
        refuse_other_selection(args.report_dir / f"{report_stem(args)}.json", args.selection, args.replace_report)
    return cases


#: Ranks a core can hold: a rank mostly waits on its peers (gloo), so a few share a core; far more
#: overload the machine and time out (measured: docs/measurements/2026-12-01-launch-notes.md).
RANKS_PER_CORE = 4
#: Available memory a rank needs: about twice what a CPU rank with Paddle imported holds (same notes).
RANK_MEMORY_MB = 400


def _available_memory_mb() -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def machine_ranks() -> tuple[int, str]:
    """How many ranks this machine holds, and why (cores x RANKS_PER_CORE, capped by memory)."""
    cores = available_cores()
    limit, why = cores * RANKS_PER_CORE, f"{cores} core(s) x {RANKS_PER_CORE} ranks a core"
    memory = _available_memory_mb()
    if memory is not None and memory // RANK_MEMORY_MB < limit:
        limit, why = max(1, memory // RANK_MEMORY_MB), f"{memory:,} MB available at {RANK_MEMORY_MB} MB a rank"
    return limit, why


def _check_capacity(nproc: int, oversubscribe: bool) -> None:
    limit, why = machine_ranks()
    if nproc > limit and not oversubscribe:
        raise UsageError("--nproc", f"{nproc} ranks are more than this machine holds ({limit}: {why})",
                         f"give at most {limit}, or add --oversubscribe to insist")


def selection_of(args: argparse.Namespace) -> dict[str, Any]:
    """What this launch runs, beyond what the report's file name says (ranks, device, co-shard set):
    its key (``slug``) and a sentence. A report of another selection is not replaced silently."""
    slug, words = [], []
    if args.cases is not None:
        where = Path(args.cases).resolve()
        slug.append(f"cases={where}")
        words.append(f"the cases of {args.cases}")
    elif args.mesh is not None:
        slug.append("mesh=" + "x".join(map(str, args.mesh)))
        words.append("the built-in " + ("co-shard set" if args.coshard else "grid") + " on mesh "
                     + "x".join(map(str, args.mesh)))
    else:
        words.append("the built-in " + ("co-shard set" if args.coshard else "grid"))
    if args.rules != list(rule_keys()):
        slug.append("rules=" + ",".join(args.rules))
        words.append("rules " + ", ".join(args.rules))
    else:
        words.append("every rule")
    if args.nnodes not in (None, "1"):
        slug.append(f"nnodes={args.nnodes}")
        words.append(f"{args.nnodes} nodes")
    return {"slug": ";".join(slug) or "full", "describe": ", ".join(words)}


def cpu_build_by_files() -> None:
    """``--device gpu`` with a CPU wheel, told without importing Paddle: the wheel's
    ``paddle/version/__init__.py`` says ``cuda_version = 'False'`` (what ``paddle.version.cuda()``
    returns) for a build without CUDA. Raises :class:`GpuUnavailable`."""
    from ..installed import paddle_dir

    root = paddle_dir()
    if root is None:
        raise GpuUnavailable("--device gpu: Paddle is not installed")
    try:
        text = (root / "version" / "__init__.py").read_text()
    except OSError:
        return  # no verdict from the files: check_gpus asks Paddle
    found = re.search(r"^cuda_version\s*=\s*['\"]([^'\"]*)['\"]", text, re.M)
    if found and found.group(1) in ("False", ""):
        raise GpuUnavailable("--device gpu: the installed Paddle is a CPU build (paddle.version.cuda() is "
                             f"{found.group(1)!r}); install a CUDA build, or run --device cpu")


def no_gpu_visible() -> None:
    """``--device gpu`` where CUDA can see no GPU, told without importing Paddle (a CUDA wheel's import
    takes long): ``CUDA_VISIBLE_DEVICES`` empty or starting with a negative id, or, on Linux, no GPU
    device node (``/dev/nvidia<N>``; WSL's ``/dev/dxg``). Raises :class:`GpuUnavailable`; otherwise
    :func:`check_gpus` asks Paddle how many GPUs it sees."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and (not visible.split(",")[0].strip() or visible.strip().startswith("-")):
        raise GpuUnavailable(f"--device gpu: no GPU is visible (CUDA_VISIBLE_DEVICES={visible!r}); set it to the "
                             "GPU ids to use, or run --device cpu")
    dev = Path("/dev")
    if sys.platform.startswith("linux") and dev.is_dir() and not any(dev.glob("nvidia[0-9]*")) \
            and not (dev / "dxg").exists():
        raise GpuUnavailable("--device gpu: no GPU is visible on this machine (no /dev/nvidia<N> device); run "
                             "--device cpu, or on a machine with GPUs")


def check_gpus(args: argparse.Namespace) -> None:
    """``--device gpu``: a CUDA build of Paddle and as many visible GPUs as ranks on this node, asked
    of Paddle itself (``paddle.is_compiled_with_cuda()``, ``paddle.device.cuda.device_count()``, in a
    subprocess: the launch never imports Paddle here). Raises :class:`GpuUnavailable` (exit 3)."""
    from ..installed import NOT_INSTALLED, paddle_version

    found = paddle_version()
    if found["version"] == NOT_INSTALLED:
        raise GpuUnavailable("--device gpu: Paddle is not installed")
    probe = ("import warnings; warnings.filterwarnings('ignore'); import paddle;"
             " cuda = paddle.is_compiled_with_cuda(); "
             "print(int(cuda), paddle.device.cuda.device_count() if cuda else 0)")
    try:
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL)
        cuda, gpus = (int(v) for v in done.stdout.split()[-2:])
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        raise GpuUnavailable(f"--device gpu: could not ask Paddle for its GPUs ({_one_line(exc)[:200]})") from None
    if not cuda:
        raise GpuUnavailable(f"--device gpu: Paddle {found['version']} is a CPU build "
                             "(paddle.is_compiled_with_cuda() is False); install a CUDA build, or run --device cpu")
    wanted = [int(d) for d in args.devices.split(",")] if args.devices else list(range(args.nproc))
    if gpus < args.nproc or max(wanted) >= gpus:
        raise GpuUnavailable(f"--device gpu: {gpus} GPU(s) visible, this launch needs {args.nproc} "
                             f"(ids {','.join(map(str, wanted))}); check CUDA_VISIBLE_DEVICES, or use fewer --nproc")


class GpuUnavailable(Exception):
    """``--device gpu`` where this machine cannot run it: one line, exit 3 (nothing launched, nothing written)."""


def opening_line(args: argparse.Namespace, cases: Sequence[LaunchCase]) -> str:
    from ..installed import NOT_INSTALLED, paddle_version

    found = paddle_version()
    paddle = ("Paddle not installed" if found["version"] == NOT_INSTALLED
              else f"Paddle {found['version']} (commit {found['commit'][:12]})")
    return (f"{prefix(PROG)}: {paddle}; {len(cases)} cases ({args.selection['describe']}) on {args.nproc} ranks "
            f"({args.device}); report in {args.report_dir / report_stem(args)}.md")


#: Bytes a rank holds per element of a case's x: the float32 global tensor, its gradient and the
#: op's output and its gradient, on every rank (each builds the global tensor, then shards it).
BYTES_PER_ELEMENT = 4 * 4


def _check_sizes(cases: Sequence[LaunchCase], args: argparse.Namespace) -> None:
    """A case whose x the ranks cannot hold is refused by name before the launch (a shape of 10^11
    elements would have every rank allocate it): beyond int64 elements, or beyond the memory
    available to ``--nproc`` ranks."""
    memory = _available_memory_mb()
    where = "--cases" if args.cases is not None else "--mesh"
    for case in cases:
        numel = math.prod(case.shape)
        if numel > 2**63 - 1:
            raise UsageError(where, f"case {case.case_id}: shape {list(case.shape)} holds {numel:.3g} elements, "
                             "beyond int64 (the largest size Paddle holds)", "fix or drop that case")
        need_mb = numel * BYTES_PER_ELEMENT * args.nproc // 2**20
        if memory is not None and need_mb > memory and not args.oversubscribe:
            raise UsageError(where, f"case {case.case_id}: shape {list(case.shape)} needs ~{need_mb:,} MB on "
                             f"{args.nproc} ranks, {memory:,} MB are available",
                             "give a smaller shape, or add --oversubscribe to insist")


def _select_rules(rules: list[str], cases: list[LaunchCase]) -> list[LaunchCase]:
    """The cases of ``rules`` (``--rules``, checked by runctl); a rule named explicitly that no
    launch case reaches is refused with the reason."""
    if rules != list(rule_keys()):
        refused = [r for r in rules if r in NOT_LAUNCHED]
        if refused:
            raise UsageError("--rules", f"no launch case reaches {refused[0]}: {NOT_LAUNCHED[refused[0]]}",
                             f"choose from all, {', '.join(k for k in rule_keys() if k not in NOT_LAUNCHED)}")
    chosen = select_by_rules(cases, rules)
    if not chosen:
        ops = sorted({c.op for c in cases})
        raise UsageError("--rules", f"no case of this selection (ops {', '.join(ops)}) runs {', '.join(rules)}",
                         "name a rule of those ops, or drop --rules")
    return chosen


def _coshard_cases(args: argparse.Namespace, nodes: int | None) -> list[LaunchCase]:
    """The co-shard set for ``--coshard`` on ``--mesh`` or the ranks' default co-shard mesh."""
    if args.cases is not None:
        raise UsageError("--coshard", "runs the built-in co-shard set; --cases gives cases of its own",
                         "drop --coshard or drop --cases (a case file may hold S(d)#k placements)")
    world = args.nproc * (nodes or 1)
    mesh = args.mesh or COSHARD_MESHES.get(world)
    if mesh is None:
        raise UsageError("--coshard", f"no default co-shard mesh for {world} ranks",
                         "use 4 ranks (2x2) or 8 (2x2x2), or give --mesh with 2 or more dims, e.g. --mesh 2x3")
    if len(mesh) < 2:
        raise UsageError("--mesh", f"{'x'.join(map(str, mesh))}: a co-shard needs a mesh of 2 or more dims",
                         "give a mesh like 2x2 or 2x2x2")
    if nodes is not None and math.prod(mesh) != world:
        raise UsageError("--mesh", f"{'x'.join(map(str, mesh))} needs {math.prod(mesh)} ranks, this launch has "
                         f"{world}", f"give a mesh of {world} ranks")
    return coshard_cases(mesh)


def report_stem(args: argparse.Namespace) -> str:
    return (f"launch-np{args.nproc}" + ("-gpu" if args.device == "gpu" else "")
            + ("-coshard" if args.coshard else ""))


def _check_report_paths(args: argparse.Namespace) -> None:
    directory = check_output_dir(args.report_dir, "--report-dir")
    stem = report_stem(args)
    for name in (f"{stem}.md", f"{stem}.json", f"{stem}.html"):
        target = directory / name
        if target.is_dir():
            raise UsageError("--report-dir", f"{target} is a directory, the report file goes there",
                             "remove it or give another --report-dir")
        if target.exists() and not target.is_file():
            raise UsageError("--report-dir", f"{target} is not a regular file", "give another --report-dir")
    logs = directory / f"{stem}-logs"
    if (logs.exists() or logs.is_symlink()) and not (logs.is_dir() and not logs.is_symlink()):
        raise UsageError("--report-dir", f"{logs} is not a directory, the logs go there",
                         "remove it or give another --report-dir")


# --------------------------------------------------------------------------- the run
def run_probes(cases: Sequence[LaunchCase], per_kind: int, work_dir: Path, *, token: str | None = None,
               into: dict[str, dict] | None = None) -> dict[str, dict]:
    """Run up to ``per_kind`` cases of every kind of predicted crash alone (in parallel); the
    first probe of each kind is the one reported, unless a later one did not crash.

    Interruptible: the main thread waits on the probes, and on the way out (an interrupt included)
    no new probe starts and every running one is killed. ``into`` receives the finished probes
    even then; ``token`` marks the probe processes as this launch's."""
    chosen: dict[str, list[LaunchCase]] = {}
    for case in cases:
        key = crash_key(predict(case))
        if key is not None and len(chosen.setdefault(key, [])) < per_kind:
            chosen[key].append(case)
    jobs = [(key, case) for key, items in chosen.items() for case in items]
    probes: dict[str, dict] = {} if into is None else into
    if not jobs:
        return probes
    done: dict[int, dict] = {}
    guard = ChildGuard()
    pool = ThreadPoolExecutor(max_workers=len(jobs), thread_name_prefix="crash-probe")
    try:
        futures = {pool.submit(probe_crash, case, work_dir=work_dir / case.case_id, token=token, guard=guard,
                               attempts=PROBE_ATTEMPTS): i
                   for i, (_, case) in enumerate(jobs)}
        for future in as_completed(futures):
            done[futures[future]] = future.result()
    finally:
        guard.stop()  # no-op when every probe finished
        pool.shutdown(wait=True, cancel_futures=True)
        for i, (key, _) in enumerate(jobs):
            if i in done and (key not in probes or not done[i]["confirmed"]):
                probes[key] = done[i]
    return probes


def _meta(cases: Sequence[LaunchCase], args: argparse.Namespace, records: dict[int, list[dict[str, Any]]],
          ranks: list[int], launch_text: str, launch_command: str, launch_seconds: float,
          probes: dict[str, dict]) -> dict[str, Any]:
    info = rank_info(records).get(min(ranks) if ranks else 0, {})
    return {
        "title": f"{args.nproc} ranks, {args.device}" + (", co-shard set" if args.coshard else ""),
        "command": f"{PROG} " + " ".join(getattr(args, "argv", [])),
        "launch": launch_text, "launch_command": launch_command,
        "paddle": f"{info.get('paddle', '?')} ({info.get('commit', '')[:12]})", "backend": args.device,
        "nproc": args.nproc, "meshes": sorted({"x".join(map(str, c.mesh_shape)) for c in cases}),
        "cases": len(cases), "launch_seconds": round(launch_seconds, 1), "probes": probes,
        "not_launched": {r: NOT_LAUNCHED[r] for r in getattr(args, "rules", []) if r in NOT_LAUNCHED},
        "selection": getattr(args, "selection", None),
    }


def _report(cases: list[LaunchCase], args: argparse.Namespace, records: dict[int, list[dict[str, Any]]],
            not_run: dict[str, str], probes: dict[str, dict], launch_text: str, launch_command: str,
            launch_seconds: float, t0: float, interrupted: str | None = None, pir: PirResult | None = None) -> Report:
    by_case = case_records(records)
    # multi-node: each node reports on the ranks it ran (their global ids); one node: 0..nproc-1
    ranks = list(range(args.nproc)) if args.nnodes in (None, "1") else sorted(rank_info(records))
    for case_id, reason in not_run.items():
        by_case[case_id] = {r: {"kind": "case", "case_id": case_id, "rank": r, "stages": {}, "error": None,
                                "tensors": {}, "skipped": {"stage": "setup", "reason": reason}}
                            for r in ranks}
    meta = _meta(cases, args, records, ranks, launch_text, launch_command, launch_seconds, probes)
    starts = rank_info(records)
    logging_ok = all(info.get("comm_logging") is True for info in starts.values())
    pir_records = None
    if pir is not None:
        meta["pir"] = pir.summary
        pir_records = dict(pir.records)  # a case the device cannot run is not built either, for the same reason
        pir_records.update({case_id: {"kind": "pir", "case_id": case_id, "skipped": reason, "error": None}
                            for case_id, reason in not_run.items()})
    report = build_report(cases, by_case, ranks, meta, args.rtol, probes, interrupted=interrupted,
                          comm_logging=logging_ok, pir=pir_records)
    report.meta["wall_seconds"] = round(time.monotonic() - t0, 1)
    return report


def run(cases: list[LaunchCase], args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    not_run = {c.case_id: c.launch_op.no_kernel[args.device] for c in cases if args.device in c.launch_op.no_kernel}
    runnable = [c for c in cases if c.case_id not in not_run]
    config = LaunchConfig(nproc=args.nproc, backend=args.device, timeout=args.timeout, nnodes=args.nnodes,
                          master=args.master, devices=args.devices)
    job_id = new_job_id()
    stem = report_stem(args)
    logs_dest = args.report_dir / f"{stem}-logs"
    # named here, created inside the try: an interrupt can never leave it behind unnoticed
    work = Path(tempfile.gettempdir()) / f"{job_id}-work"
    launch: LaunchResult | None = None
    records: dict[int, list[dict[str, Any]]] | None = None
    probes: dict[str, dict] = {}
    kept: list[Path] = []  # where the normal path moved the work dir, if it got that far
    try:
        work.mkdir(mode=0o700)
        print(f"phase 1/4: launching {len(runnable)} cases on {args.nproc} ranks ({args.device}) ...", flush=True)
        session = run_cases(runnable, config, work_dir=work, job_id=job_id)
        launch, records = session.launch, session.records
        print(launch.summary(), flush=True)
        raised = raised_in_ranks(records)
        if raised is not None:  # our code raised in a rank: an internal error (exit 4), never a case's outcome
            raise raised

        kinds = len({k for k in (crash_key(predict(c)) for c in runnable) if k is not None})
        print(f"phase 2/4: crash probes: {kinds} kind(s) of predicted crash, up to {args.crash_probes} case(s) "
              "each, run alone ..." if kinds and args.crash_probes else "phase 2/4: no crash probe to run", flush=True)
        run_probes(runnable, args.crash_probes, work / "probes", token=job_id, into=probes)
        for key, probe in probes.items():
            print(f"crash probe {key} (case {probe['case_id']}): {probe['summary']}", flush=True)

        print(f"phase 3/4: the PIR route: {len(runnable)} cases' forward through Paddle's partition and reshard "
              "passes, in one process ...", flush=True)
        pir = run_pir_route(runnable, work_dir=work / "pir", timeout=args.timeout, token=job_id)
        print(pir.summary, flush=True)

        print("phase 4/4: comparing every rank's tensors and reshards with the port's prediction ...", flush=True)
        report = _report(cases, args, records, not_run, probes, launch.summary(), " ".join(launch.command),
                         launch.seconds, t0, pir=pir)
        md, js = write_report(report, args.report_dir, stem)
        counts = report.counts_expected()
        print("verdicts: " + ", ".join(f"{v}{'' if e else ' (NOT expected)'}: {n}"
                                       for (v, e), n in sorted(counts.items())))
        for route, label in (("comm", "communication"), ("pir", "PIR route reshards")):
            comm = report.comm_counts(route)
            print(f"{label}: " + ", ".join(f"{v}{'' if e else ' (NOT expected)'}: {n}"
                                           for (v, e), n in sorted(comm.items())))
        findings = [v for v in report.verdicts if v.finding]
        unrun = [v for v in report.verdicts if v.unrun and not v.finding]
        if not report.meta["comm_logging"]:
            unrun_comm = "the ranks did not see their reshard log lines: communication not compared"
            print(f"NOT COMPARED: {unrun_comm}")
        failed = not launch.ok
        if failed or findings or unrun or args.keep_logs or not report.meta["comm_logging"] or not pir.ok:
            moved = keep_work_dir(launch, logs_dest)
            kept.append(moved.work_dir)
            print(f"logs kept in {moved.work_dir}")
            if failed:
                print(moved.failure_text(), file=sys.stderr)
        else:
            discard_work_dir(launch)
        for v in findings[:20]:
            why = list(v.reasons) if not v.expected else []
            why += [f"communication differs: {r}" for r in (v.comm.reasons if v.comm else [])]
            why += [f"PIR route differs: {r}" for r in (v.pir.reasons if v.pir else [])]
            print(f"NOT EXPECTED {v.case.case_id} {v.case.describe()}: {v.verdict}: {'; '.join(why)[:400]}")
        if unrun:
            first = unrun[0]
            because = first.reasons[0] if first.reasons else "; ".join(first.pir.notes if first.pir else ())
            print(f"NOT RUN: {len(unrun)} case(s), e.g. {first.case.case_id}: {because}")
        print(f"report: {md} and {js}; {len(cases)} cases, wall {report.meta['wall_seconds']}s")
        if findings:
            return EXIT_FINDING
        return EXIT_INCOMPLETE if failed or unrun or not report.meta["comm_logging"] or not pir.ok else EXIT_OK
    except (Interrupted, Exception) as exc:  # a signal, or an internal error (exit 4): the same partial report
        _after_interrupt(exc, cases, args, records, not_run, probes, launch, job_id, work, logs_dest, stem, t0,
                         bool(kept))
        raise
    finally:
        end_processes(job_id)  # safety net: anything of this launch still alive (cheap when none is)
        shutil.rmtree(work, ignore_errors=True)


def _after_interrupt(exc: BaseException, cases: list[LaunchCase], args: argparse.Namespace,
                     records: dict[int, list[dict[str, Any]]] | None, not_run: dict[str, str], probes: dict[str, dict],
                     launch: LaunchResult | None, job_id: str, work: Path, logs_dest: Path, stem: str,
                     t0: float, already_kept: bool) -> None:
    """The launcher, ranks and probes are ended (their own ``finally``/``except`` blocks ran on the
    way up); end anything left, write the partial report, keep the logs; say where on the one line
    (runctl.signals.add_detail). ``exc``: the signal, or the internal error, that ended the run. A second
    signal meanwhile is ignored (runctl.signals), so this runs to the end; nothing here raises over ``exc``."""
    reason = stopped_by(exc)
    try:
        end_processes(job_id)
    except Exception as err:  # (said on the line: the first error stays the one reported)
        where = [f"processes of the launch may be left ({type(err).__name__}: {_one_line(err)[:200]})"]
    else:
        where = []
    if records is None:  # interrupted during the launch: what the ranks wrote so far
        try:
            records = read_rank_records(work / "results")
        except Exception:  # unreadable: the partial report has no rank's results
            records = {}
    seconds = time.monotonic() - t0
    if launch is None:
        launch_text = f"launch {job_id} interrupted by {reason} after {seconds:.1f}s"
        launch_seconds, command = seconds, ""
    else:
        launch_text = (f"{launch.summary()}; then interrupted by {reason} (crash probes not finished by then "
                       "are not reported)")
        launch_seconds, command = launch.seconds, " ".join(launch.command)
    try:
        report = _report(cases, args, records, not_run, probes, launch_text, command, launch_seconds, t0,
                         interrupted=reason)
        md, _ = write_report(report, args.report_dir, stem)
        where.append(f"partial report in {md}")
    except Exception as err:  # the interrupt is what gets reported; say why there is no report
        where.append(f"no partial report ({type(err).__name__}: {_one_line(err)[:200]})")
    try:
        if work.exists():
            keep_dir(work, logs_dest)
            already_kept = True
        if already_kept:
            logs = logs_dest / "logs"
            where.append(f"rank logs in {logs if logs.is_dir() else logs_dest}")
    except Exception as err:  # (OSError mostly; nothing here raises over exc)
        where.append(f"logs not kept ({_one_line(err)[:200]})")
    add_detail(exc, "; ".join(where))
