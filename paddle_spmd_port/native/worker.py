"""Worker process: runs cases through one native backend and streams outcomes as JSON lines.

    python -m paddle_spmd_port.native.worker --backend registry --cases FILE.jsonl --start K

Reads the case file from line K on and prints ``{"i": index, "outcome": {...}}`` per case,
flushed, then ``{"done": true}``. If Paddle kills the process, the parent
(:mod:`.pool`) sees which index was in flight and restarts the worker after it.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
from collections import deque

from ..case import Case
from ._paddle import paddle_version


def _stream_many(backend, fh, start: int, stop: int, out) -> None:
    """Feed cases lazily to ``backend.run_many`` and print each outcome, flushed, as it comes.

    The indices of the cases handed over are queued as they are read, so the k-th outcome is
    labelled with the k-th index even if the backend reads ahead."""
    pending: deque[int] = deque()

    def cases():
        for index, line in enumerate(fh):
            if index < start:
                continue
            if 0 <= stop <= index:
                return
            pending.append(index)
            yield Case.from_json(json.loads(line))

    for outcome in backend.run_many(cases()):
        index = pending.popleft()
        out.write(json.dumps({"i": index, "outcome": outcome.to_json()}, separators=(",", ":")) + "\n")
        out.flush()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", required=True)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--stop", type=int, default=-1)
    args = ap.parse_args(argv)
    # The protocol gets its own copy of stdout; fd 1 then points at stderr, so whatever Paddle
    # prints (from Python or C++) can't corrupt the JSON lines.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    backend = importlib.import_module(f"paddle_spmd_port.native.{args.backend}")
    # Paddle installs C-level handlers that print a stack trace on fatal signals; after heap
    # corruption they can deadlock (seen: a SIGABRT turning into a 120 s hang). Die at once instead.
    for fatal in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGILL):
        signal.signal(fatal, signal.SIG_DFL)
    out.write(json.dumps({"hello": paddle_version()}) + "\n")
    out.flush()
    with open(args.cases) as fh:
        lines = enumerate(fh)
        if hasattr(backend, "run_many"):  # batched backend: same protocol, one flushed line per case
            _stream_many(backend, fh, args.start, args.stop, out)
            lines = enumerate(())
        for index, line in lines:
            if index < args.start:
                continue
            if 0 <= args.stop <= index:
                break
            outcome = backend.run(Case.from_json(json.loads(line)))
            out.write(json.dumps({"i": index, "outcome": outcome.to_json()}, separators=(",", ":")) + "\n")
            # flushed per case: if Paddle kills us on the next one, the parent knows which it was
            out.flush()
    out.write('{"done": true}\n')
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
