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
                         "ref_max_abs": 2.1, "present": true, "ref_present": true}, ...}}
    {"kind": "done", "rank": 0, "cases": 254, "seconds": 21.3}

Placements are written as the cases spell them (:func:`placement_text`): ``R``, ``S(d)``,
``S(d)#k`` (a co-shard member of shard order k), ``P``.

Per case, on every rank: seed numpy from the case id; run the op on plain dense tensors (the
single-device reference); ``dist.shard_tensor`` x with the case's placements (weight, bias and
running statistics Replicate) and run the same functional call; feed the upstream gradient with
exactly the placement of ``out``; record placements and local shapes; gather every value with
``dist.reshard(..., Replicate)`` and record its max error against the reference. For
batch_norm, a second forward-only call of ``_C_ops.batch_norm`` (the very call ``F.batch_norm``
makes) exposes mean_out/variance_out/saved_mean/saved_variance, which ``F.batch_norm`` drops.

A Paddle exception in a stage is that case's result; the runner goes on with the next case. A
stage the port predicts to kill the process (see :mod:`.predict`) is not executed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import traceback
import warnings
import zlib
from pathlib import Path
from typing import Any

from ..rules.signatures import kernel_layout
from .cases import BN_OPS, LaunchCase, parse_placement, read_cases
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


class CaseRun:
    """Everything one rank does for one case; symmetric across ranks (every collective is
    entered by every rank in the same order)."""

    def __init__(self, case: LaunchCase, mesh: Any, modules: dict[str, Any]) -> None:
        self.case, self.mesh = case, mesh
        self.np, self.paddle, self.dist, self.F = (modules[k] for k in ("np", "paddle", "dist", "F"))
        self.record: dict[str, Any] = {"kind": "case", "case_id": case.case_id, "stages": {}, "error": None,
                                       "skipped": None, "tensors": {}}
        rng = self.np.random.RandomState((zlib.crc32(case.case_id.encode()) + case.seed) % 2**31)
        f32 = self.np.float32
        self.x = rng.uniform(-2.0, 2.0, case.shape).astype(f32)
        self.w = rng.uniform(0.5, 1.5, case.param_shape).astype(f32)
        self.b = rng.uniform(-0.5, 0.5, case.param_shape).astype(f32)
        self.g = rng.uniform(-1.0, 1.0, case.shape).astype(f32)
        c = case.param_shape if case.op in BN_OPS else (1,)
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
        """``R`` -> ``Replicate()``, ``S(d)`` -> ``Shard(d)``, ``S(d)#k`` -> ``Shard(d, shard_order=k)``."""
        out = []
        for text in texts:
            parsed = parse_placement(text)
            if parsed is None:
                out.append(self.dist.Replicate())
            elif parsed[1] is None:
                out.append(self.dist.Shard(parsed[0]))
            else:
                out.append(self.dist.Shard(parsed[0], shard_order=parsed[1]))
        return out

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
                entry["max_abs_err"] = float(self.np.abs(full.astype("float64") - ref).max()) if full.size else 0.0
                entry["ref_max_abs"] = float(self.np.abs(ref).max()) if ref.size else 0.0
                entry["shape_ok"] = list(full.shape) == list(ref.shape)
        self.record["tensors"][name] = entry

    def _fail(self, stage: str, exc: BaseException) -> None:
        self.record["stages"][stage] = "error"
        self.record["error"] = {"stage": stage, "type": type(exc).__name__, "message": str(exc)[:MAX_MESSAGE]}

    # -- the op --------------------------------------------------------------------------------
    def _call(self, x: Any, w: Any, b: Any, rm: Any, rv: Any) -> Any:
        case = self.case
        if case.op == "layer_norm":
            return self.F.layer_norm(x, list(case.normalized_shape), weight=w, bias=b, epsilon=case.epsilon)
        if case.op == "group_norm":
            return self.F.group_norm(x, case.groups, epsilon=case.epsilon, weight=w, bias=b,
                                     data_format=case.data_format)
        if case.op == "instance_norm":
            return self.F.instance_norm(x, weight=w, bias=b, eps=case.epsilon, data_format=case.data_format)
        return self.F.batch_norm(x, rm, rv, weight=w, bias=b, training=case.training, epsilon=case.epsilon,
                                 data_format=case.data_format)

    def _sync_layer(self) -> Any:
        """``paddle.nn.SyncBatchNorm`` with the case's weight, bias and running statistics, its
        parameters and buffers replicated on the mesh (``dist.shard_layer``)."""
        case, paddle = self.case, self.paddle
        layer = paddle.nn.SyncBatchNorm(case.param_shape[0], epsilon=case.epsilon, data_format=case.data_format)
        layer.weight.set_value(self.w)
        layer.bias.set_value(self.b)
        layer._mean.set_value(self.rm)
        layer._variance.set_value(self.rv)
        layer.train() if case.training else layer.eval()
        return self.dist.shard_layer(layer, self.mesh)

    def run_reference(self) -> None:
        case = self.case
        try:
            x = self._dense(self.x, True)
            w = self._dense(self.w, True) if case.weight else None
            b = self._dense(self.b, True) if case.bias else None
            rm, rv = self._dense(self.rm, False), self._dense(self.rv, False)
            y = self._call(x, w, b, rm, rv)  # sync_batch_norm on one device is batch_norm
            self.ref["out"] = y.numpy().astype("float64")
            if case.op in BN_OPS:
                self.ref["running_mean"] = rm.numpy().astype("float64")
                self.ref["running_var"] = rv.numpy().astype("float64")
            if case.op == "batch_norm":
                try:
                    self.ref.update(self._batch_norm_outputs(self._dense(self.x, False), w, b, distributed=False))
                except Exception:  # then those four are simply not compared
                    pass
            if case.backward:
                y.backward(self._dense(self.g, False))
                for name, t in (("x_grad", x), ("weight_grad", w), ("bias_grad", b)):
                    if t is not None and t.grad is not None:
                        self.ref[name] = t.grad.numpy().astype("float64")
            self.record["stages"]["reference"] = "ok"
        except Exception as exc:  # a Paddle error is a result
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
            if case.op == "sync_batch_norm":
                layer = self._sync_layer()
                y = layer(x)
                w, b, rm, rv = layer.weight, layer.bias, layer._mean, layer._variance
            else:
                y = self._call(x, w, b, rm, rv)
        except Exception as exc:
            self._fail("forward", exc)
            return
        self.record["stages"]["forward"] = "ok"
        self._observe("out", y)
        if case.op in BN_OPS:
            self._observe("running_mean", rm)
            self._observe("running_var", rv)
        if case.op == "batch_norm":
            self._probe_batch_norm_outputs(x, w, b)
        if not case.backward:
            return
        reason = None if run_predicted_crashes else prediction.skip_reason("backward")
        if reason:
            self.record["skipped"] = {"stage": "backward", "reason": reason}
            return
        try:
            y.backward(dist.shard_tensor(self.paddle.to_tensor(self.g), self.mesh, list(y.placements)))
        except Exception as exc:
            self._fail("backward", exc)
            return
        self.record["stages"]["backward"] = "ok"
        self._observe("x_grad", x.grad)
        for name, t in (("weight_grad", w), ("bias_grad", b)):
            if t is not None:
                self._observe(name, t.grad)

    def _batch_norm_outputs(self, x: Any, w: Any, b: Any, distributed: bool) -> dict[str, Any]:
        """The same ``_C_ops.batch_norm`` call ``F.batch_norm`` makes, forward only, on fresh copies
        of the running statistics: the four statistics outputs ``F.batch_norm`` discards.
        saved_mean/saved_variance are only defined in training mode."""
        case, paddle = self.case, self.paddle
        if distributed:
            rep = self._replicate()
            rm, rv = self._dist(self.rm, rep, False), self._dist(self.rv, rep, False)
        else:
            rm, rv = self._dense(self.rm, False), self._dense(self.rv, False)
        with paddle.no_grad():
            outs = paddle._C_ops.batch_norm(x, rm, rv, w, b, not case.training, 0.9, case.epsilon,
                                            kernel_layout(case.data_format), not case.training, False)
        if distributed:
            return dict(zip(("mean_out", "variance_out", "saved_mean", "saved_variance"), outs[1:5], strict=True))
        names = ("mean_out", "variance_out") + (("saved_mean", "saved_variance") if case.training else ())
        return {n: t.numpy().astype("float64") for n, t in zip(names, outs[1:5], strict=False)}

    def _probe_batch_norm_outputs(self, x: Any, w: Any, b: Any) -> None:
        try:
            outs = self._batch_norm_outputs(x, w, b, distributed=True)
        except Exception as exc:
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
    return {"np": np, "paddle": paddle, "dist": dist, "F": F}


def _mesh(modules: dict[str, Any], shape: tuple[int, ...]) -> Any:
    np, dist = modules["np"], modules["dist"]
    ids = np.arange(int(np.prod(shape))).reshape(shape).tolist()
    return dist.ProcessMesh(ids, dim_names=[f"d{i}" for i in range(len(shape))])


def run(cases: list[LaunchCase], out_dir: Path, backend: str, run_predicted_crashes: bool = False) -> int:
    started = time.time()
    modules = _modules(backend)
    dist, paddle = modules["dist"], modules["paddle"]
    rank, world = dist.get_rank(), dist.get_world_size()
    path = out_dir / f"rank{rank}.jsonl"
    meshes: dict[tuple[int, ...], Any] = {}
    with open(path, "w") as fh:
        def emit(obj: dict[str, Any]) -> None:
            fh.write(json.dumps(obj) + "\n")
            fh.flush()

        emit({"kind": "start", "rank": rank, "world_size": world, "pid": os.getpid(), "paddle": paddle.__version__,
              "commit": getattr(paddle.version, "commit", ""), "backend": backend, "cases": len(cases)})
        for case in cases:
            t0 = time.time()
            if case.world_size != world:
                emit({"kind": "case", "case_id": case.case_id, "rank": rank, "seconds": 0.0, "stages": {},
                      "skipped": {"stage": "setup", "reason": f"mesh {list(case.mesh_shape)} needs {case.world_size} "
                                  f"ranks, this launch has {world}"}, "error": None, "tensors": {}})
                continue
            if case.mesh_shape not in meshes:
                meshes[case.mesh_shape] = _mesh(modules, case.mesh_shape)
            run_ = CaseRun(case, meshes[case.mesh_shape], modules)
            try:
                run_.run_reference()
                run_.run_distributed(predict(case), run_predicted_crashes)
            except Exception as exc:  # never let one case end the launch
                run_._fail("runner", exc)
                run_.record["error"]["traceback"] = traceback.format_exc()[-MAX_MESSAGE:]
            run_.record.update(rank=rank, seconds=round(time.time() - t0, 4))
            emit(run_.record)
        emit({"kind": "done", "rank": rank, "cases": len(cases), "seconds": round(time.time() - started, 3)})
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="paddle_spmd_port.launch.runner", description=__doc__.split("\n")[0])
    parser.add_argument("--cases", required=True, help="case file (JSON lines of LaunchCase)")
    parser.add_argument("--out-dir", required=True, help="where rank<k>.jsonl goes")
    parser.add_argument("--backend", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--job-id", default="", help="only to tag the process (ps/pgrep)")
    parser.add_argument("--run-predicted-crashes", action="store_true",
                        help="also run stages the port predicts to crash (crash probes, one process per case)")
    args = parser.parse_args(argv)
    code = run(read_cases(args.cases), Path(args.out_dir), args.backend, args.run_predicted_crashes)
    sys.stdout.flush()
    sys.stderr.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
