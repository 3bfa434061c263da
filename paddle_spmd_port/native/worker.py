"""Worker process: runs cases through one native backend and streams outcomes as frames.

    python -m paddle_spmd_port.native.worker --backend registry --base B --start K  < SLICE.pickle

Its cases come on stdin, one pickled pair: a list of :class:`~paddle_spmd_port.case.Case` (the
pool's slice, whose first case has the index B in the whole run) and one byte per case, how to run
it (:data:`RUN_HERE` or :data:`ISOLATE`: the pool's :func:`~.pool.plan_slices`), read
once the backend is imported, so that the pool pickles and writes them while Paddle is imported
here. From index K on, one frame per case is written to stdout and flushed: ``>iI`` (index,
payload length) then the pickled
:class:`~paddle_spmd_port.outcome.Outcome`; index -1 carries the pickled Paddle version info
(first), -2 ends the stream. If Paddle kills the process, the parent (:mod:`.pool`) sees which
index was in flight and restarts the worker after it. If the worker's own code raises once Paddle
is imported (reading its cases, pickling an outcome, a forked child's :class:`._fork.ChildFailed`:
Paddle's errors are outcomes inside the backend), index -3 carries the traceback (UTF-8) and the
worker exits 1: the parent raises it as an error of ours, never a crash of the case in flight.
Crash-prone cases run in children of the worker's fork server, started before the cases are read
(:mod:`._fork`).
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import mmap
import os
import pickle
import platform
import shutil
import signal
import struct
import subprocess
import sys
import traceback
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from ..case import Case
from ._fork import start_fork_server
from ._paddle import paddle_version

#: A frame's header: the case index (or HELLO / DONE) and the payload's length in bytes.
FRAME = struct.Struct(">iI")
HELLO, DONE, RAISED = -1, -2, -3
#: A case's byte on stdin: run in the worker itself, or in a forked child of its own. The pool works it
#: out once per case; the worker only reads it.
RUN_HERE, ISOLATE = 0, 1


def write_frame(out: IO[bytes], index: int, payload: bytes = b"") -> None:
    """One frame, flushed: if Paddle kills us on the next case, the parent knows which it was."""
    out.write(FRAME.pack(index, len(payload)) + payload)
    out.flush()


def _stream_many(backend: Any, cases: Sequence[Case], start: int, stop: int, out: IO[bytes], base: int,
                 isolate: bytes) -> None:
    """Feed ``cases[start:stop]`` lazily to ``backend.run_many`` and write each outcome as it comes,
    labelled ``base`` + its position; the cases whose byte in ``isolate`` is set run crash-isolated.

    The indices of the cases handed over are queued as they are read, so the k-th outcome is
    labelled with the k-th index even if the backend reads ahead."""
    pending: deque[int] = deque()

    def feed() -> Iterator[Case]:
        for index in range(start, stop):
            pending.append(base + index)
            yield cases[index]

    # the backend hands back one object for equal outcomes (most cases share an answer): each is
    # pickled once (the entry holds the outcome, so its id is not reused while the entry lives)
    pickled: dict[int, tuple[Any, bytes]] = {}
    prone = {id(cases[i]) for i in range(start, stop) if isolate[i]}  # (the list holds them: ids stay theirs)
    for outcome in backend.run_many(feed(), may_crash=lambda case: id(case) in prone):
        hit = pickled.get(id(outcome))
        if hit is None or hit[0] is not outcome:
            if len(pickled) > 100_000:
                pickled.clear()
            hit = pickled[id(outcome)] = (outcome, pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL))
        write_frame(out, pending.popleft(), hit[1])


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", required=True)
    ap.add_argument("--base", type=int, default=0, help="the index of the first case on stdin in the whole run")
    ap.add_argument("--start", type=int, default=0, help="the index of the first case to run")
    return ap.parse_args(argv)


#: Backends whose workers run with the settings below (malloc tunables, no GC while importing, one
#: OpenBLAS thread). Only the PIR route: they move where the C heap puts things, and the registry
#: route answers some invalid corner cases (co-shard-invalid, a dims_mapping of the wrong length)
#: from whatever memory it reads, so their answers would move with them (seen: the notes in docs/measurements).
TUNED = ("pir",)

#: The environment variable that picks a worker's (or the compiled caller's) memory layout: 0 the
#: usual one, k > 0 another (:func:`shift_layout`). The pool's re-run of invalid inputs takes layout 1.
LAYOUT_ENV = "PADDLE_SPMD_PORT_LAYOUT"
_held: list[mmap.mmap] = []


@functools.cache
def fixed_layout_prefix() -> tuple[str, ...]:
    """The command prefix that starts a program without address-space randomisation (``setarch ARCH
    -R``), or () where that is not allowed here (no setarch, a seccomp filter refusing the personality).

    Why: an answer Paddle reads from memory it never set holds what that memory held, often an address
    (a dims_mapping entry of 140227075054784); with randomised addresses it is another number every
    run, so no two runs' reports could agree on it. Without randomisation, a worker started the same
    way reads the same bytes every time; a different layout (:data:`LAYOUT_ENV`) reads others, which is
    how the re-run tells such an answer (compare.py: native-varies)."""
    tool = shutil.which("setarch")
    if tool is None:
        return ()
    cmd = (tool, platform.machine(), "-R")
    try:
        ok = subprocess.run([*cmd, "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    return cmd if ok else ()


#: A started program's environment block is padded to a multiple of this many bytes (its strings and
#: their pointers) and to :data:`ENV_VARS` variables (:func:`fixed_environment`).
ENV_BYTES = 1 << 16
ENV_VARS = 1024
_PAD = "PADDLE_SPMD_PORT_PAD"
#: Linux refuses a single environment string longer than this (MAX_ARG_STRLEN, 32 pages).
_MAX_STRING = 32 * 4096 - 1


#: The directory every worker and the compiled caller start in: the one holding this package (so that
#: ``python -m paddle_spmd_port.native.worker`` finds it, installed or not). Why one place: Python puts
#: the start directory first on ``sys.path``, and a path of another length moves what the worker's heap
#: holds when its fork server forks (seen: an invalid co-shard answered otherwise from a test's
#: temporary directory than from the repository).
FIXED_CWD = str(Path(__file__).resolve().parents[2])


def fixed_environment(env: Mapping[str, str], layout: int = 0) -> dict[str, str]:
    """``env`` (its PYTHONPATH made absolute: the program starts in :data:`FIXED_CWD`) padded so that
    the block the kernel copies onto a new program's stack takes the same room for any ``env`` of up to
    :data:`ENV_BYTES` and :data:`ENV_VARS` (and ``layout`` times 4 KiB more).

    Why: the stack starts below that block, so a variable one byte longer (pytest's PYTEST_CURRENT_TEST
    going from "(setup)" to "(call)") moves every frame, and with it what an answer read from stack
    memory Paddle never set holds (seen: an invalid co-shard answering [0,...] under one
    environment and [2,...] under another). The layout's extra room is how :data:`LAYOUT_ENV` moves the
    compiled caller's stack (a C++ program has no :func:`shift_layout`)."""
    out = {k: v for k, v in env.items() if not k.startswith(_PAD)}
    out[LAYOUT_ENV] = str(layout)
    if out.get("PYTHONPATH"):  # its relative entries as they read here, the program starting in FIXED_CWD
        out["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) if p else p
                                            for p in out["PYTHONPATH"].split(os.pathsep))

    def size(k: str, v: str) -> int:
        return len(os.fsencode(k)) + len(os.fsencode(v)) + 2 + 8  # "k=v", its NUL and its pointer

    used = sum(size(k, v) for k, v in out.items())
    count = -(-(len(out) + 1) // ENV_VARS) * ENV_VARS  # at least one pad variable
    pads = [f"{_PAD}{i:04d}" for i in range(count - len(out))]
    used += sum(size(name, "") for name in pads)
    target = -(-used // ENV_BYTES) * ENV_BYTES + layout * 4096
    fill = target - used
    # spread over every pad variable, each short: Python copies the environment into str objects, and one
    # of tens of KiB would come from the C heap, placed and sized by the rest of the environment
    for k, name in enumerate(pads):
        take = min(fill // (len(pads) - k) + (fill % (len(pads) - k) > 0), _MAX_STRING - len(name) - 1)
        out[name] = "x" * take
        fill -= take
    return out


def shift_layout() -> None:
    """Before Paddle is loaded: for layout k > 0 (:data:`LAYOUT_ENV`), reserve k MiB of address space
    and hold it, so that the libraries and the large blocks mapped after it land elsewhere than in
    layout 0 (the same place every time: the addresses are not randomised, :func:`fixed_layout_prefix`)."""
    k = int(os.environ.get(LAYOUT_ENV, "0") or 0)
    if k > 0:
        _held.append(mmap.mmap(-1, k << 20))


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    tuned = args.backend in TUNED
    # The protocol gets its own copy of stdout; fd 1 then points at stderr, so whatever Paddle
    # prints (from Python or C++) can't corrupt the frames.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    # Importing Paddle allocates a great many objects that live to the end: no cyclic collections
    # meanwhile (it shortens the import: docs/measurements/2026-12-01-native-notes.md), one after the cases are loaded.
    # OpenBLAS (loaded with numpy) would start a thread that only spins here: nothing is computed.
    if tuned:
        gc.disable()
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    shift_layout()
    backend = importlib.import_module(f"paddle_spmd_port.native.{args.backend}")
    # Paddle installs C-level handlers that print a stack trace on fatal signals; after heap
    # corruption they can deadlock (seen: a SIGABRT turning into a 120 s hang). Die at once instead.
    for fatal in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGILL):
        signal.signal(fatal, signal.SIG_DFL)
    write_frame(out, HELLO, pickle.dumps(paddle_version()))
    try:
        _serve(backend, out, args)
    except Exception:  # ours (Paddle's errors are outcomes): the parent raises it, see the docstring
        write_frame(out, RAISED, traceback.format_exc().encode(errors="replace"))
        return 1
    write_frame(out, DONE)
    return 0


def _serve(backend: Any, out: IO[bytes], args: argparse.Namespace) -> None:
    """The worker once Paddle is imported: its fork server, its cases, an outcome frame each."""
    # before the cases are loaded: a small zygote, the same whatever the cases (see ._fork)
    start_fork_server(close_fds=[out.fileno(), 0], prepare=getattr(backend, "prepare_fork_server", None))
    with os.fdopen(0, "rb") as fh:
        cases: list[Case]
        cases, isolate = pickle.load(fh)
    gc.collect()
    gc.freeze()  # the cases live to the end: out of the cyclic GC's way
    gc.enable()
    start, stop = args.start - args.base, len(cases)  # positions in the slice; frames carry run indices
    try:
        if hasattr(backend, "run_many"):  # batched backend: same protocol, one frame per case
            _stream_many(backend, cases, start, stop, out, args.base, isolate)
        else:
            for index in range(start, stop):
                outcome = backend.run(cases[index])
                write_frame(out, args.base + index, pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL))
    finally:  # Paddle's objects must be torn down in the order the collector finds (frozen, PIR aborts at exit)
        gc.unfreeze()


#: glibc malloc settings for a worker: a larger per-thread cache (more freed chunks of each size
#: kept, up to 4 KiB ones) spares the C heap's bin walks that Paddle's many small allocations per
#: op build cause, with the output bytes identical (docs/measurements/2026-12-01-native-notes.md).
#: glibc reads them only at process start.
MALLOC_TUNABLES = "glibc.malloc.tcache_count=2000:glibc.malloc.tcache_max=4096"


def _with_malloc_tunables() -> None:
    """Run as a program for a :data:`TUNED` backend: start over with :data:`MALLOC_TUNABLES`
    unless the environment sets glibc tunables already (then they are left as they are). Same
    process (the pool's process group and pipes stay), stdin not read yet."""
    if _parse(sys.argv[1:]).backend in TUNED and "GLIBC_TUNABLES" not in os.environ:
        os.execve(sys.executable, sys.orig_argv, dict(os.environ, GLIBC_TUNABLES=MALLOC_TUNABLES))


if __name__ == "__main__":
    _with_malloc_tunables()
    sys.exit(main())
