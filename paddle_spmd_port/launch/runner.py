"""In-rank runner: executes every case of a case file inside one ``paddle.distributed.launch``.

Run by the launcher as the training script; each rank writes ``rank<k>.jsonl`` in ``--out-dir``,
one JSON object per line, flushed after every case so a hung or killed rank still leaves what it
did::

    {"kind": "start", "rank": 0, "world_size": 2, "paddle": "3.3.1", "pid": ...}
    {"kind": "case", "case_id": "c0001", "rank": 0, "seconds": 0.08,
     "stages": {"reference": "ok", "forward": "ok", "probe": "ok", "backward": "ok"},
     "error": null | {"stage": "forward", "type": "ValueError", "message": "..."},
     "skipped": null | {"stage": "backward", "reason": "..."},
     "tensors": {"out": {"placements": ["S(0)"], "local_shape": [2, 8], "max_abs_err": 0.0,
                         "ref_max_abs": 2.1, "present": true, "ref_present": true}, ...},
     "comm": {"forward": [<reshard>, ...], "backward": [...]}}
    {"kind": "done", "rank": 0, "cases": 254, "seconds": 21.3}

The start record says whether the rank sees Paddle's reshard log lines (``"comm_logging"``: a
``dist.shard_tensor`` split over the ranks must log its R->S reshard); ``comm`` holds the reshards
each stage ran (:class:`~.comm.Event` as JSON), parsed from the VLOG lines the forward call and
``out.backward`` write while fd 2 goes to ``rank<k>.stage.log`` (:class:`StderrCapture`; the
lines are written back to the rank's log between ``@@comm <case> <stage> begin/end`` markers).

``--pir`` (one plain process, no launch): every case's forward is built as a PIR program and put
through Paddle's mix2dist, partition and reshard passes (:func:`pir_case`); ``pir.jsonl`` holds a
``{"kind": "pir", "case_id", "error", "x": <x's mapping as PIR holds it>, "reshards": [...],
"collectives": [...]}`` record per case.

Placements are written as the cases spell them (:func:`placement_text`): ``R``, ``S(d)``,
``S(d)#k`` (a co-shard member of shard order k), ``P``.

Per case, on every rank: seed numpy from the case id; run the op on plain dense tensors (the
single-device reference); ``dist.shard_tensor`` x with the case's placements (weight, bias and
running statistics Replicate) and run the same call; feed the upstream gradient with exactly the
placement of ``out``; record placements and local shapes; gather every value with
``dist.reshard(..., Replicate)`` and record its max error against the reference. The call itself
is the op's (its family's :class:`~paddle_spmd_port.ops.kit.launch.LaunchOp`, handed Paddle's
modules); an op with outputs its functional call drops exposes them in a second, forward-only
call (:meth:`~paddle_spmd_port.ops.kit.launch.LaunchOp.extra_outputs`, stage ``probe``).

Paddle's exceptions and ours are told apart by where they came from: Paddle's modules reach the
runner and the op's hooks only through :mod:`.paddle_side`'s proxies, which mark an exception raised
inside a Paddle call (an op, a tensor's construction, placement or reshard, a backward, a collective)
with the call's name. Such an exception in a stage is that case's result (``error``, its ``call``
named); raised outside the op's stages (placing the inputs, gathering the outputs), it is the case's
``runner`` error; the rank goes on with the next case. Any other exception escaping a case is an
error of ours: the rank writes ``{"kind": "internal_error", "rank", "case_id", "type", "message",
"traceback"}``, prints the traceback to its log and exits 1 without running further cases; the
launch command then ends as on any internal error of its own (exit 4, the partial report, the rank
logs kept). A stage the port predicts to kill the process (see :mod:`.predict`) is not executed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import time
import traceback
import warnings
import zlib
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .cases import LaunchCase, parse_placement, read_cases
from .comm import VMODULE, kept_lines, parse_log
from .paddle_side import PaddleProxy, raised_by_paddle
from .predict import predict

MAX_MESSAGE = 4000


#: ``str()`` of a co-shard member in Paddle 3.3.1. ``dist.Shard(d, shard_order=k)`` on two or more
#: mesh dims of one axis comes back from ``tensor.placements`` as a bare ``Placement`` (no
#: ``get_dim``) that prints ``Shard(dim=0, shard_order=1)``; a lone ``Shard(d, shard_order=0)``
#: comes back as a plain ``Shard`` printing ``Shard(dim=0)``.
_CO_SHARD = re.compile(r"Shard\(dim=(\d+), shard_order=(\d+)\)")


def placement_text(p: Any) -> str:
    """One placement in the cases' notation: ``R``, ``S(d)``, ``S(d)#k`` (co-shard member of shard
    order k, read from ``str(p)`` in the format of ``_CO_SHARD``), ``P`` (Partial SUM) or
    ``P(<reduce type>)``. A shard in any other format is kept as ``?<str(p)>``: it then differs
    from every prediction instead of being misread."""
    if p.is_shard():
        if hasattr(p, "get_dim"):
            return f"S({p.get_dim()})"
        m = _CO_SHARD.fullmatch(str(p))
        return f"S({m.group(1)})#{m.group(2)}" if m else f"?{p}"
    if p.is_partial():
        kind = str(p.reduce_type()).rsplit(".", 1)[-1]
        return "P" if kind == "kRedSum" else f"P({kind})"
    return "R"


def _placements_text(tensor: Any) -> list[str]:
    return [placement_text(p) for p in tensor.placements]


def dist_placements(dist: Any, texts: tuple[str, ...]) -> list[Any]:
    """``R`` -> ``Replicate()``, ``S(d)`` -> ``Shard(d)``, ``S(d)#k`` -> ``Shard(d, shard_order=k)``."""
    out = []
    for text in texts:
        parsed = parse_placement(text)
        if parsed is None:
            out.append(dist.Replicate())
        elif parsed[1] is None:
            out.append(dist.Shard(parsed[0]))
        else:
            out.append(dist.Shard(parsed[0], shard_order=parsed[1]))
    return out


class StderrCapture:
    """fd 2 into ``path`` for the span of a stage: Paddle's glog writes its VLOG lines there (C++,
    not Python's ``sys.stderr``). On leaving, the text is parsed (:func:`.comm.parse_log`) and
    written back to the real stderr between two marker lines, the lines the parse reads and every
    line but glog's INFO ones (:func:`.comm.kept_lines`).
    A process that dies inside the span leaves its last lines in ``path``."""

    def __init__(self, path: Path, label: str) -> None:
        self.path, self.label = path, label
        self.text = ""
        self._saved = -1

    def __enter__(self) -> StderrCapture:
        sys.stderr.flush()
        self._fh = open(self.path, "w+b")  # closed in __exit__
        self._saved = os.dup(2)
        os.dup2(self._fh.fileno(), 2)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.stderr.flush()
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._fh.seek(0)
        data = self._fh.read()
        self._fh.close()
        self.text = data.decode(errors="replace")
        sys.stderr.write(f"@@comm {self.label} begin\n")
        sys.stderr.flush()
        sys.stderr.buffer.write(kept_lines(self.text).encode())
        sys.stderr.write(f"@@comm {self.label} end\n")
        sys.stderr.flush()

    def events(self) -> list[dict[str, Any]]:
        return [e.to_json() for e in parse_log(self.text)]


class CaseRun:
    """Everything one rank does for one case; symmetric across ranks (every collective is
    entered by every rank in the same order)."""

    def __init__(self, case: LaunchCase, mesh: Any, modules: dict[str, Any], capture: Path | None = None) -> None:
        self.case, self.mesh, self.capture = case, mesh, capture
        self.np, self.paddle, self.dist, self.F = (modules[k] for k in ("np", "paddle", "dist", "F"))
        self.api = SimpleNamespace(**modules)
        self.op = case.launch_op
        self.record: dict[str, Any] = {"kind": "case", "case_id": case.case_id, "stages": {}, "error": None,
                                       "skipped": None, "tensors": {}, "comm": {}}
        rng = self.np.random.RandomState((zlib.crc32(case.case_id.encode()) + case.seed) % 2**31)
        f32 = self.np.float32
        self.x = rng.uniform(-2.0, 2.0, case.shape).astype(f32)
        self.w = rng.uniform(0.5, 1.5, case.param_shape).astype(f32)
        self.b = rng.uniform(-0.5, 0.5, case.param_shape).astype(f32)
        self.g = rng.uniform(-1.0, 1.0, case.shape).astype(f32)
        c = case.param_shape if self.op.running_stats else (1,)
        self.rm = rng.uniform(-0.1, 0.1, c).astype(f32)
        self.rv = rng.uniform(0.5, 1.5, c).astype(f32)
        self.ref: dict[str, Any] = {}

    # -- helpers -----------------------------------------------------------------------------
    def _dense(self, array: Any, grad: bool) -> Any:
        return self.paddle.to_tensor(array.copy(), stop_gradient=not grad)

    def _dist(self, array: Any, placements: list[Any], grad: bool) -> Any:
        t = self.dist.shard_tensor(self.paddle.to_tensor(array.copy()), self.mesh, placements)
        t.stop_gradient = not grad
        return t

    def _placements(self, texts: tuple[str, ...]) -> list[Any]:
        return dist_placements(self.dist, texts)

    def _replicate(self) -> list[Any]:
        return [self.dist.Replicate() for _ in self.case.mesh_shape]

    def _gather(self, t: Any) -> Any:
        if all(p.is_replicated() for p in t.placements):
            return t._local_value().numpy()
        return self.dist.reshard(t, self.mesh, self._replicate())._local_value().numpy()

    def _observe(self, name: str, t: Any | None, compare: bool = True) -> None:
        ref = self.ref.get(name)
        entry: dict[str, Any] = {"present": t is not None, "ref_present": ref is not None}
        if t is not None:
            entry["placements"] = _placements_text(t)
            entry["local_shape"] = list(t._local_value().shape)
            if compare and ref is not None:
                full = self._gather(t)
                entry["shape_ok"] = list(full.shape) == list(ref.shape)
                if entry["shape_ok"]:  # (values of another shape are not compared: the shape differs)
                    entry["max_abs_err"] = float(self.np.abs(full.astype("float64") - ref).max()) if full.size else 0.0
                    entry["ref_max_abs"] = float(self.np.abs(ref).max()) if ref.size else 0.0
        self.record["tensors"][name] = entry

    def _fail(self, stage: str, exc: BaseException) -> None:
        """``exc``, raised inside a Paddle call, is the stage's result; any other exception is ours and
        is raised again (the caller is in an ``except`` block)."""
        call = raised_by_paddle(exc)
        if call is None:
            raise exc
        self.record["stages"][stage] = "error"
        self.record["error"] = {"stage": stage, "type": type(exc).__name__, "message": str(exc)[:MAX_MESSAGE],
                                "call": call}

    # -- the op --------------------------------------------------------------------------------
    def _call(self, x: Any, w: Any, b: Any, rm: Any, rv: Any) -> Any:
        return self.op.call(self.api, self.case, x, w, b, rm, rv)

    def run_reference(self) -> None:
        case = self.case
        try:
            x = self._dense(self.x, True)
            w = self._dense(self.w, True) if case.weight else None
            b = self._dense(self.b, True) if case.bias else None
            rm, rv = self._dense(self.rm, False), self._dense(self.rv, False)
            y = self._call(x, w, b, rm, rv)  # on one device: the op's plain call
            self.ref["out"] = y.numpy().astype("float64")
            if self.op.running_stats:
                self.ref["running_mean"] = rm.numpy().astype("float64")
                self.ref["running_var"] = rv.numpy().astype("float64")
            if self.op.extra_output_names:
                try:
                    extra = self._extra_outputs(self._dense(self.x, False), w, b, distributed=False)
                except Exception as exc:  # Paddle's: then those are simply not compared
                    if raised_by_paddle(exc) is None:
                        raise
                    extra = {}
                self.ref.update({n: t.numpy().astype("float64") for n, t in extra.items()})
            if case.backward:
                y.backward(self._dense(self.g, False))
                for name, t in (("x_grad", x), ("weight_grad", w), ("bias_grad", b)):
                    if t is not None and t.grad is not None:
                        self.ref[name] = t.grad.numpy().astype("float64")
            self.record["stages"]["reference"] = "ok"
        except Exception as exc:  # Paddle's is a result, ours is raised again
            if raised_by_paddle(exc) is None:
                raise
            self.record["stages"]["reference"] = f"error: {type(exc).__name__}: {str(exc)[:MAX_MESSAGE]}"

    def run_distributed(self, prediction: Any, run_predicted_crashes: bool = False) -> None:
        case, dist = self.case, self.dist
        rep = self._replicate()
        x = self._dist(self.x, self._placements(case.placements), True)
        w = self._dist(self.w, rep, True) if case.weight else None
        b = self._dist(self.b, rep, True) if case.bias else None
        rm, rv = self._dist(self.rm, rep, False), self._dist(self.rv, rep, False)
        reason = None if run_predicted_crashes else prediction.skip_reason("forward")
        if reason:
            self.record["skipped"] = {"stage": "forward", "reason": reason}
            return
        try:
            with self._captured("forward"):
                y, w, b, rm, rv = self.op.call_distributed(self.api, self, x, w, b, rm, rv)
        except Exception as exc:
            self._fail("forward", exc)
            return
        self.record["stages"]["forward"] = "ok"
        self._observe("out", y)
        if self.op.running_stats:
            self._observe("running_mean", rm)
            self._observe("running_var", rv)
        if self.op.extra_output_names:
            self._probe_extra_outputs(x, w, b)
        if not case.backward:
            return
        reason = None if run_predicted_crashes else prediction.skip_reason("backward")
        if reason:
            self.record["skipped"] = {"stage": "backward", "reason": reason}
            return
        g = dist.shard_tensor(self.paddle.to_tensor(self.g), self.mesh, list(y.placements))
        try:
            with self._captured("backward"):
                y.backward(g)
        except Exception as exc:
            self._fail("backward", exc)
            return
        self.record["stages"]["backward"] = "ok"
        self._observe("x_grad", x.grad)
        for name, t in (("weight_grad", w), ("bias_grad", b)):
            if t is not None:
                self._observe(name, t.grad)

    @contextlib.contextmanager
    def _captured(self, stage: str) -> Iterator[None]:
        """Capture the stage's log lines into ``record["comm"][stage]`` (the reshards it ran), also
        when the stage raises."""
        if self.capture is None:
            yield
            return
        cap = StderrCapture(self.capture, f"{self.case.case_id} {stage}")
        try:
            with cap:
                yield
        finally:
            self.record["comm"][stage] = cap.events()

    def _extra_outputs(self, x: Any, w: Any, b: Any, distributed: bool) -> dict[str, Any]:
        """The op's outputs its functional call drops (forward only), on fresh copies of the running
        statistics."""
        if distributed:
            rep = self._replicate()
            rm, rv = self._dist(self.rm, rep, False), self._dist(self.rv, rep, False)
        else:
            rm, rv = self._dense(self.rm, False), self._dense(self.rv, False)
        return self.op.extra_outputs(self.api, self.case, x, w, b, rm, rv, reference=not distributed)

    def _probe_extra_outputs(self, x: Any, w: Any, b: Any) -> None:
        try:
            outs = self._extra_outputs(x, w, b, distributed=True)
        except Exception as exc:  # Paddle's is a result, ours is raised again
            if raised_by_paddle(exc) is None:
                raise
            self.record["stages"]["probe"] = f"error: {type(exc).__name__}: {str(exc)[:MAX_MESSAGE]}"
            return
        self.record["stages"]["probe"] = "ok"
        for name, t in outs.items():
            self._observe(name, t)


def _modules(backend: str) -> dict[str, Any]:
    warnings.filterwarnings("ignore")
    import numpy as np
    import paddle
    import paddle.distributed as dist
    import paddle.nn.functional as F

    if backend == "gpu":
        paddle.set_device(f"gpu:{dist.ParallelEnv().device_id}")
    else:
        paddle.set_device("cpu")
    # Paddle only through proxies (.paddle_side): an exception raised inside a Paddle call is marked as Paddle's
    return {"np": np, "paddle": PaddleProxy(paddle, "paddle"), "dist": PaddleProxy(dist, "dist"),
            "F": PaddleProxy(F, "F")}


def _mesh(modules: dict[str, Any], shape: tuple[int, ...]) -> Any:
    np, dist = modules["np"], modules["dist"]
    ids = np.arange(int(np.prod(shape))).reshape(shape).tolist()
    return dist.ProcessMesh(ids, dim_names=[f"d{i}" for i in range(len(shape))])


def comm_logging(modules: dict[str, Any], capture: Path) -> bool:
    """Whether this rank sees Paddle's reshard log lines: ``dist.shard_tensor`` of a small tensor
    split over every rank runs an R->S reshard (a local slice, no collective), which must log."""
    dist, paddle = modules["dist"], modules["paddle"]
    world = dist.get_world_size()
    mesh = dist.ProcessMesh(list(range(world)), dim_names=["d0"])
    with StderrCapture(capture, "logging check") as cap:
        dist.shard_tensor(paddle.zeros([world]), mesh, [dist.Shard(0)])
    return any(e.function == "RToSReshard" for e in parse_log(cap.text))


def enable_comm_logging() -> None:
    """Turn on the VLOG lines :func:`.comm.parse_log` reads; glog reads ``GLOG_vmodule`` when
    Paddle's library loads, so this runs before Paddle is imported (a user's own modules stay)."""
    mine = os.environ.get("GLOG_vmodule", "")
    os.environ["GLOG_vmodule"] = f"{mine},{VMODULE}" if mine and VMODULE not in mine else (mine or VMODULE)


def run(cases: list[LaunchCase], out_dir: Path, backend: str, run_predicted_crashes: bool = False) -> int:
    started = time.time()
    if not run_predicted_crashes:  # a crash probe compares no communication (and must end as Paddle lets it)
        enable_comm_logging()
    modules = _modules(backend)
    dist, paddle = modules["dist"], modules["paddle"]
    rank, world = dist.get_rank(), dist.get_world_size()
    path = out_dir / f"rank{rank}.jsonl"
    capture = out_dir / f"rank{rank}.stage.log"
    case_capture = out_dir / f"rank{rank}.case.log"
    meshes: dict[tuple[int, ...], Any] = {}
    with open(path, "w") as fh:
        def emit(obj: dict[str, Any]) -> None:
            fh.write(json.dumps(obj) + "\n")
            fh.flush()

        case_id = None
        try:
            logging_ok = comm_logging(modules, capture)
            emit({"kind": "start", "rank": rank, "world_size": world, "pid": os.getpid(),
                  "paddle": paddle.__version__, "commit": getattr(paddle.version, "commit", ""), "backend": backend,
                  "cases": len(cases), "comm_logging": logging_ok})
            for case in cases:
                case_id = case.case_id
                emit(_run_case(case, modules, meshes, rank, world, capture if logging_ok else None,
                               case_capture if logging_ok else None, run_predicted_crashes))
        except Exception as exc:
            if raised_by_paddle(exc) is None:  # ours: the run ends (main), this record saying where
                emit(internal_error(exc, rank, case_id))
            raise  # (Paddle's, outside every case: the rank fails, the launch with it)
        emit({"kind": "done", "rank": rank, "cases": len(cases), "seconds": round(time.time() - started, 3)})
    return 0


def _run_case(case: LaunchCase, modules: dict[str, Any], meshes: dict[tuple[int, ...], Any], rank: int, world: int,
              capture: Path | None, case_capture: Path | None, run_predicted_crashes: bool) -> dict[str, Any]:
    """One case on this rank: its record. A Paddle exception outside the op's stages is the case's
    ``runner`` error; any other exception is ours and is raised."""
    t0 = time.time()
    if case.world_size != world:
        return {"kind": "case", "case_id": case.case_id, "rank": rank, "seconds": 0.0, "stages": {},
                "skipped": {"stage": "setup", "reason": f"mesh {list(case.mesh_shape)} needs {case.world_size} "
                            f"ranks, this launch has {world}"}, "error": None, "tensors": {}}
    if case.mesh_shape not in meshes:
        meshes[case.mesh_shape] = _mesh(modules, case.mesh_shape)
    run_ = CaseRun(case, meshes[case.mesh_shape], modules, capture)
    # the whole case too: the runner's own reshards (shard_tensor, the gathers) log as much
    with StderrCapture(case_capture, f"{case.case_id}") if case_capture else contextlib.nullcontext():
        try:
            run_.run_reference()
            run_.run_distributed(predict(case), run_predicted_crashes)
        except Exception as exc:  # Paddle's, outside the op's stages: the case's; ours: raised again
            run_._fail("runner", exc)
            run_.record["error"]["traceback"] = traceback.format_exc()[-MAX_MESSAGE:]
    run_.record.update(rank=rank, seconds=round(time.time() - t0, 4))
    return run_.record


def internal_error(exc: BaseException, rank: int | None, case_id: str | None) -> dict[str, Any]:
    """The record a rank (or the PIR process: ``rank`` None) writes when an error of ours ends it:
    the launch command raises it as its own internal error (:func:`.session.raised_in_ranks`)."""
    return {"kind": "internal_error", "rank": rank, "case_id": case_id, "type": type(exc).__name__,
            "message": str(exc)[:MAX_MESSAGE],
            "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4 * MAX_MESSAGE:]}


#: Op names (``pd_op.<name>``, trailing ``_`` dropped) that move data between ranks in a PIR program.
PIR_COLLECTIVE = re.compile(r"all_?gather|all_?reduce|reduce_?scatter|all_?to_?all|send|recv|broadcast|c_concat")


def pir_case(case: LaunchCase, mesh: Any, modules: dict[str, Any], passes: dict[str, Any]) -> dict[str, Any]:
    """The case's forward as a PIR program, through the passes ``dist.to_static`` runs: the
    ``dist_op.reshard`` ops the partition pass inserts (each with the ops that consume it) and the
    collective ops left after the reshard pass. Static mode only: no data, nothing runs."""
    paddle, dist = modules["paddle"], modules["dist"]
    api = SimpleNamespace(**modules)
    record: dict[str, Any] = {"kind": "pir", "case_id": case.case_id, "error": None}
    main_prog, startup = paddle.static.Program(), paddle.static.Program()
    rep = [dist.Replicate() for _ in case.mesh_shape]
    try:
        with paddle.static.program_guard(main_prog, startup):
            def replicated(name: str, shape: tuple[int, ...]) -> Any:
                return dist.shard_tensor(paddle.static.data(name, list(shape), "float32"), mesh, rep)

            x = dist.shard_tensor(paddle.static.data("x", list(case.shape), "float32"), mesh,
                                  dist_placements(dist, case.placements))
            record["x"] = list(x.dist_attr().dims_mapping)  # as PIR holds it (a co-shard: one mesh dim)
            stats = case.param_shape if case.launch_op.running_stats else (1,)
            case.launch_op.call(api, case, x, replicated("w", case.param_shape) if case.weight else None,
                                replicated("b", case.param_shape) if case.bias else None,
                                replicated("rm", stats), replicated("rv", stats))
        passes["mix2dist"](main_prog)
        passes["partition"](main_prog)
        reshards = []
        for op in main_prog.global_block().ops:
            if op.name() != "dist_op.reshard":
                continue
            src, dst = op.operand_source(0), op.result(0)
            reshards.append({"shape": list(src.shape), "src": list(src.dist_attr().dims_mapping),
                             "src_partial": sorted(src.dist_attr().partial_dims),
                             "dst": list(dst.dist_attr().dims_mapping),
                             "dst_partial": sorted(dst.dist_attr().partial_dims),
                             "ops": sorted({u.name().removeprefix("pd_op.").rstrip("_") for u in dst.all_used_ops()})})
        passes["reshard"](main_prog)
        record["reshards"] = reshards
        record["collectives"] = [op.name() for op in main_prog.global_block().ops
                                 if PIR_COLLECTIVE.search(op.name().removeprefix("pd_op."))]
    except Exception as exc:  # Paddle's, building the program or in a pass: this case's result; ours: raised
        call = raised_by_paddle(exc)
        if call is None:
            raise
        record["error"] = {"type": type(exc).__name__, "message": str(exc)[:MAX_MESSAGE], "call": call}
    return record


def run_pir(cases: list[LaunchCase], out_dir: Path) -> int:
    """Every case's forward through the PIR route, in this one process (``pir.jsonl``); a case
    whose forward the port predicts to crash Paddle is not built."""
    started = time.time()
    modules = _modules("cpu")
    paddle = modules["paddle"]
    from paddle.distributed.auto_parallel.static.mix_to_dist_pass import apply_mix2dist_pass
    from paddle.distributed.auto_parallel.static.pir_pass import ReshardPasses, apply_partition_pass

    passes = {"mix2dist": PaddleProxy(apply_mix2dist_pass, "apply_mix2dist_pass"),
              "partition": PaddleProxy(apply_partition_pass, "apply_partition_pass"),
              "reshard": PaddleProxy(ReshardPasses.apply_reshard_pass, "ReshardPasses.apply_reshard_pass")}
    paddle.enable_static()
    meshes: dict[tuple[int, ...], Any] = {}
    with open(out_dir / "pir.jsonl", "w") as fh:
        def emit(obj: dict[str, Any]) -> None:
            fh.write(json.dumps(obj) + "\n")
            fh.flush()

        emit({"kind": "start", "pid": os.getpid(), "paddle": paddle.__version__, "cases": len(cases)})
        case_id = None
        try:
            for case in cases:
                case_id = case.case_id
                reason = predict(case).skip_reason("forward")
                if reason:
                    emit({"kind": "pir", "case_id": case.case_id, "skipped": reason, "error": None})
                    continue
                if case.mesh_shape not in meshes:
                    meshes[case.mesh_shape] = _mesh(modules, case.mesh_shape)
                emit(pir_case(case, meshes[case.mesh_shape], modules, passes))
        except Exception as exc:
            if raised_by_paddle(exc) is None:  # ours (Paddle's is the case's record): the run ends (main), saying where
                emit(internal_error(exc, None, case_id))
            raise
        emit({"kind": "done", "cases": len(cases), "seconds": round(time.time() - started, 3)})
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="paddle_spmd_port.launch.runner", description=__doc__.split("\n")[0])
    parser.add_argument("--cases", required=True, help="case file (JSON lines of LaunchCase)")
    parser.add_argument("--out-dir", required=True, help="where rank<k>.jsonl goes")
    parser.add_argument("--backend", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--job-id", default="", help="only to tag the process (ps/pgrep)")
    parser.add_argument("--run-predicted-crashes", action="store_true",
                        help="also run stages the port predicts to crash (crash probes, one process per case)")
    parser.add_argument("--pir", action="store_true",
                        help="build every case's forward as a PIR program in this one process (no launch) and "
                             "record its reshard and collective ops (pir.jsonl)")
    args = parser.parse_args(argv)
    try:
        if args.pir:
            code = run_pir(read_cases(args.cases), Path(args.out_dir))
        else:
            code = run(read_cases(args.cases), Path(args.out_dir), args.backend, args.run_predicted_crashes)
    except Exception as exc:
        if raised_by_paddle(exc) is not None:  # Paddle's, outside every case (setting up): the run fails as before
            raise
        # ours: its record is written (run, run_pir) where a case was running; the traceback goes to the
        # log, and the process ends at once (the same heap hazard as below on a rank), exit 1
        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
    sys.stdout.flush()
    sys.stderr.flush()
    if args.pir:
        return code
    if args.run_predicted_crashes:
        # a normal exit: a heap the case corrupted may abort only when it is freed here, and that
        # abort is the crash the probe is looking for (no GLOG_vmodule in a probe, so no hang)
        return code
    # Paddle 3.3.1 with GLOG_vmodule set corrupts its heap in the interpreter's normal exit
    # ("corrupted size vs. prev_size", measured: the rank then hangs in the abort): every record is
    # written and flushed by now, so the rank leaves without running the exit handlers.
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
