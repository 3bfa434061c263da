"""``python -m paddle_spmd_port compat-test PATH... [--against port|native|both]``

Runs unedited Paddle-style SPMD rule test files (unittest, the style of Paddle's
``test/auto_parallel/spmd_rules/test_*_rule.py``) against the port and against native Paddle,
one subprocess per (backend, file), and prints the per-test results side by side::

    test                                    port    native
    TestLayerNormRule.test_forward          pass    pass
    TestLayerNormRule.test_reverse          pass    pass
    summary: 2 tests | port: 2 pass | native: 2 pass | same result 2/2 | OK

A directory argument means its ``test_*.py`` files. Each file's line is printed (stderr) as it
finishes, after an opening line saying what runs (``--quiet`` silences both). Two backends give a
test the *same result* only when they agree on its status and, for a failure or an error, on its
kind and message (``AssertionError: 3 != 4``); a timeout, a crash or an unavailable backend is never
the same result as anything (two timeouts compare nothing). Exit status (:mod:`paddle_spmd_port.runctl`):
0 when every test passes (or is skipped) under every backend run and, with ``both``, both
backends give each test the same result; 1 when a test fails, errors, the file crashes or does
not import, or the backends disagree; 3 when nothing failed but a backend could not run a file
(the native backend without Paddle, or with a Paddle that does not import, a runner timing out);
2 on bad arguments (one line on stderr, nothing run or written: a --timeout that is not finite and
> 0, an empty PATH or --json, a PATH that is neither a .py file nor a directory of test_*.py
files); 4 an internal error (a runner's own code raising included: never the file's crash);
130/143 on SIGINT/SIGTERM (on 4, 130 and 143 the runner processes are ended first, then the files
every backend finished are printed, and written to --json, under ``INTERRUPTED by``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from ..reporting import write_json
from ..runctl.command import run_command
from ..runctl.exits import EXIT_FINDING, EXIT_INCOMPLETE, EXIT_INTERNAL, EXIT_OK, ChildRaised, UsageError, prefix
from ..runctl.grammar import MAX_SECONDS, ArgumentParser, count, path_text, positive, seconds
from ..runctl.paths import check_output_file
from ..runctl.signals import Interrupted, add_detail, signal_text, stopped_by, write_partial

PROG = "python -m paddle_spmd_port compat-test"
REPO_ROOT = Path(__file__).resolve().parents[2]
OK_STATUSES = frozenset({"pass", "skip", "expected-failure"})
#: A file's status when its backend could not run it at all: not a failure of the file (exit 3).
NOT_RUN_STATUSES = frozenset({"unavailable", "timeout", "stopped"})
FILE_ROW = "(whole file)"


#: Statuses whose message says what happened: two backends agree only if the messages agree too.
MESSAGE_STATUSES = frozenset({"fail", "error", "import-error", "unexpected-success"})


def same_result(statuses: dict[str, str], messages: dict[str, str]) -> bool:
    """Whether the backends gave a test the same result: the same status, never one of
    ``NOT_RUN_STATUSES`` or a crash (nothing was compared), and for a failure or an error the same
    kind and message (whitespace aside)."""
    kinds = set(statuses.values())
    if len(kinds) != 1 or kinds & (NOT_RUN_STATUSES | {"crash"}):
        return False
    if kinds & MESSAGE_STATUSES:
        return len({" ".join(m.split()) for m in messages.values()}) == 1
    return True


def expand(paths: Sequence[str]) -> list[Path]:
    """Files as given; directories become their ``test_*.py`` files, sorted. A path that is
    missing or empty, a file not ending in ``.py``, or a directory without ``test_*.py`` files, is a
    :class:`UsageError`."""
    files: list[Path] = []
    for raw in paths:
        if not raw.strip():
            raise UsageError("PATH", "an empty path is not allowed (it would mean the current directory)",
                             "give test files or directories holding test_*.py files")
        path = Path(raw)
        if path.is_dir():
            found = sorted(path.glob("test_*.py"))
            if not found:
                raise UsageError("PATH", f"{raw}: a directory without test_*.py files",
                                 "give test files or directories holding test_*.py files")
            files.extend(found)
        elif path.is_file():
            if path.suffix != ".py":  # (a README or a report would be run as a test and "not import": exit 1)
                raise UsageError("PATH", f"{raw}: not a Python file (.py)",
                                 "give test files or directories holding test_*.py files")
            files.append(path)
        else:
            raise UsageError("PATH", f"{raw}: no such test file or directory",
                             "give test files or directories holding test_*.py files")
    return files


class Runners:
    """The runner subprocesses alive now, so that an interrupt can end them (and no new one starts)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen] = set()
        self.stopped = False

    def start(self, cmd: list[str], **kwargs: Any) -> subprocess.Popen | None:
        with self._lock:
            if self.stopped:
                return None
            proc = subprocess.Popen(cmd, **kwargs)
            self._procs.add(proc)
            return proc

    def done(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._procs.discard(proc)

    def stop(self, grace: float = 3.0) -> None:
        """No new runner; SIGTERM to each runner's process group, SIGKILL to what is left after ``grace`` s."""
        with self._lock:
            self.stopped = True
            procs = list(self._procs)
        for proc in procs:
            kill_group(proc, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
            kill_group(proc, signal.SIGKILL)  # the runner, and anything its test file started


def kill_group(proc: subprocess.Popen, sig: int) -> None:
    """``sig`` to the process group a runner leads (each runs in a session of its own)."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _child_env(shim: bool, tmp: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    if tmp is not None:  # the runner's temp files (the shim's package, a test's own) go where we remove them
        env["TMPDIR"] = tmp
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    env.setdefault("GLOG_minloglevel", "2")
    env.pop("PADDLE_SPMD_COMPAT_SHIM", None)
    if shim:
        env["PADDLE_SPMD_COMPAT_SHIM"] = "1"
    return env


class RunnerRaised(ChildRaised):
    """A runner's own code raised (it exits 4, its traceback on stderr: :mod:`.runner`): an internal
    error, never the file's outcome."""


def run_backend(path: Path, backend: str, *, shim: bool = False, timeout: float = 300.0,
                runners: Runners | None = None) -> dict[str, Any]:
    """One runner subprocess; a crash or timeout becomes the file's status, an exception of the runner's
    own code raises :class:`RunnerRaised`."""
    runners = runners or Runners()
    with tempfile.TemporaryDirectory(prefix="spmd_compat_") as tmp:
        out = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "paddle_spmd_port.compat.runner", "--backend", backend, "--out", str(out)]
        cmd += ["--shim"] if shim else []
        proc = runners.start([*cmd, str(path.resolve())], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=_child_env(shim, tmp), cwd=tmp, stdin=subprocess.DEVNULL, start_new_session=True)
        if proc is None:
            return {"backend": backend, "status": "stopped", "message": "interrupted before it started", "tests": []}
        try:
            _, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc, signal.SIGKILL)
            proc.communicate()
            return {"backend": backend, "status": "timeout", "message": f"no result after {timeout:g} s", "tests": []}
        finally:
            runners.done(proc)
        if proc.returncode == 0 and out.exists():
            return json.loads(out.read_text(encoding="utf-8"))
        if runners.stopped:
            return {"backend": backend, "status": "stopped", "message": "ended by an interrupt", "tests": []}
        if proc.returncode == EXIT_INTERNAL:  # the runner's own code raised: ours, not the file's crash
            raise RunnerRaised(f"the {backend} runner of {path.name}", stderr)
        if proc.returncode < 0:
            how = f"killed by {signal_text(-proc.returncode)}"
        else:
            how = f"exit code {proc.returncode}"
        tail = " | ".join(stderr.strip().splitlines()[-3:])
        return {"backend": backend, "status": "crash", "message": f"runner {how}: {tail}", "tests": []}


def compare(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per-test statuses of one file under each backend, whether they agree and all pass.

    A backend whose run of the file failed as a whole (crash, timeout, import error, Paddle
    missing) gives that status to every test the other backends ran; if none ran any test, the
    file is one ``(file)`` row.
    """
    ran = {b: {row["id"]: row for row in r["tests"]} for b, r in results.items() if r.get("status") == "ran"}
    ids: list[str] = []
    for table in ran.values():
        ids.extend(i for i in table if i not in ids)
    tests = []
    for test_id in ids or [FILE_ROW]:
        statuses, messages = {}, {}
        for backend, report in results.items():
            if backend in ran:
                absent = ("no-tests", "the file defines no unittest tests") if test_id == FILE_ROW else (
                    "missing", "not run by this backend")
                row = ran[backend].get(test_id, {"status": absent[0], "message": absent[1]})
                statuses[backend], messages[backend] = row["status"], row["message"]
            else:
                statuses[backend] = report.get("status", "crash")
                messages[backend] = report.get("message", "")
        tests.append({"id": test_id, "status": statuses, "message": messages,
                      "agree": same_result(statuses, messages),
                      "ok": all(s in OK_STATUSES for s in statuses.values())})
    file_messages = {b: f"{r.get('status')}: {r.get('message', '')}" for b, r in results.items() if b not in ran}
    return {"tests": tests, "file_messages": file_messages,
            "ok": bool(ids) and all(t["ok"] and t["agree"] for t in tests)}


def _count(tests: list[dict[str, Any]], backend: str) -> str:
    counts: dict[str, int] = {}
    for t in tests:
        status = t["status"][backend]
        counts[status] = counts.get(status, 0) + 1
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _difference(test: dict[str, Any]) -> str:
    """How a test's row is flagged when the backends did not give it the same result."""
    if test["agree"]:
        return ""
    statuses = set(test["status"].values())
    if len(statuses) > 1:
        return "   <-- differs"
    if statuses & (NOT_RUN_STATUSES | {"crash"}):
        return "   <-- not compared"
    return "   <-- differs (messages)"


def render(files: list[dict[str, Any]], backends: list[str], environments: dict[str, str],
           complete: bool = True) -> str:
    lines = ["compat-test: " + " | ".join(f"{b}: {environments.get(b, '?')}" for b in backends)]
    every: list[dict[str, Any]] = []
    width = max([len(t["id"]) for f in files for t in f["tests"]] + [20]) + 2
    for f in files:
        lines += ["", f["path"], "  " + "test".ljust(width) + "".join(b.ljust(18) for b in backends)]
        for t in f["tests"]:
            flag = _difference(t) if len(backends) > 1 else ""
            lines.append("  " + t["id"].ljust(width) + "".join(t["status"][b].ljust(18) for b in backends) + flag)
        every.extend(t for t in f["tests"])
    problems = [f"  [{b}] {Path(f['path']).name}::{t['id']}: {t['message'][b]}" for f in files for t in f["tests"]
                for b in backends if t["status"][b] not in OK_STATUSES and t["message"][b]]
    problems += [f"  [{b}] {Path(f['path']).name}: {message}" for f in files
                 for b, message in f["file_messages"].items()]
    if problems:
        lines += ["", "messages:", *problems]
    agree = sum(t["agree"] for t in every)
    ok = bool(every) and all(f["ok"] for f in files)
    summary = f"summary: {len(every)} tests in {len(files)} file(s) | " + " | ".join(
        f"{b}: {_count(every, b)}" for b in backends)
    if len(backends) > 1:
        summary += f" | same result {agree}/{len(every)}"
    lines += ["", summary + (" | INTERRUPTED" if not complete else " | OK" if ok else " | FAILED")]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog=PROG,
        description="Run Paddle-style SPMD rule unittest files against the port and native Paddle, side by side.")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="test files, or directories of test_*.py files")
    parser.add_argument("--against", choices=("port", "native", "both"), default="both",
                        help="run the tests against the port, native Paddle, or both side by side (default both)")
    parser.add_argument("--shim", action="store_true",
                        help="port backend: use the compat 'paddle' shim even when Paddle is installed")
    parser.add_argument("--timeout", type=seconds, default=300.0,
                        help=f"seconds per file and backend (> 0, at most {MAX_SECONDS:.0f}; default 300)")
    # --workers as in parity and oracle; --jobs, its first name, still accepted
    parser.add_argument("--workers", "--jobs", dest="workers", type=count, default=2,
                        help="runner processes at a time (default 2; --jobs is the same flag)")
    parser.add_argument("--json", dest="json_path", type=path_text, metavar="FILE",
                        help="also write the full results as JSON here")
    parser.add_argument("--quiet", action="store_true", help="no opening line and no line per finished file")
    return parser


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    positive(args.workers, "--workers", "a number of processes >= 1")
    if args.shim and args.against == "native":
        raise UsageError("--shim", "contradicts --against native (the shim replaces Paddle for the port backend only)",
                         "drop --shim, or use --against port or both")
    if args.json_path is not None:
        check_output_file(args.json_path, "--json")
    files = expand(args.paths)
    backends = ["port", "native"] if args.against == "both" else [args.against]
    jobs = [(path, backend) for path in files for backend in backends]
    if not args.quiet:
        print(opening_line(files, backends, args), file=sys.stderr, flush=True)
    runners = Runners()
    pool = ThreadPoolExecutor(max_workers=args.workers)
    try:
        futures = {pool.submit(run_backend, path, backend, shim=args.shim, timeout=args.timeout, runners=runners):
                   i for i, (path, backend) in enumerate(jobs)}
        results: dict[int, dict[str, Any]] = {}
        pending = {path: len(backends) for path in files}
        for future in as_completed(futures):
            i = futures[future]
            results[i] = future.result()
            path = jobs[i][0]
            pending[path] -= 1
            if not pending[path] and not args.quiet:
                done = len(files) - sum(1 for n in pending.values() if n)
                mine = {b: results[j] for j, (p, b) in enumerate(jobs) if p == path}
                print(f"{prefix(PROG)}: [{done}/{len(files)}] {path}: " + " | ".join(
                    f"{b} {_file_summary(r)}" for b, r in mine.items()), file=sys.stderr, flush=True)
    except (Interrupted, Exception) as exc:  # a signal, or an internal error (exit 4): the runners end now, not
        runners.stop()  # at their end; the threads' communicate() returns once their runner is gone
        pool.shutdown(wait=True, cancel_futures=True)
        # the partial report: the files every backend finished, under INTERRUPTED
        finished = [(job, results[i]) for i, job in enumerate(jobs) if i in results
                and all(j in results for j, (p, _) in enumerate(jobs) if p == job[0])]
        where = f"stdout{' and ' + str(args.json_path) if args.json_path else ''}"
        why = stopped_by(exc)
        add_detail(exc, write_partial(lambda: _report(finished, backends, args.json_path, why, len(files)), where))
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # and their temp dirs are removed before we leave
    ok, files_out = _report(list(zip(jobs, (results[i] for i in range(len(jobs))), strict=True)), backends,
                            args.json_path)
    if ok:
        return EXIT_OK
    return EXIT_FINDING if any(_failed(t) for f in files_out for t in f["tests"]) else EXIT_INCOMPLETE


def _report(done: list[tuple[tuple[Path, str], dict[str, Any]]], backends: list[str], json_path: str | None,
            interrupted: str = "", n_files: int = 0) -> tuple[bool, list[dict[str, Any]]]:
    """Print the table of the (file, backend) runs ``done`` and write ``--json``; ``interrupted``:
    what ended the run early (the table is then of the files finished, out of ``n_files``). Returns
    whether every file agreed, and the files' results."""
    by_file: dict[Path, dict[str, dict[str, Any]]] = {}
    environments: dict[str, str] = {}
    reports = [report for _, report in done]
    for (path, backend), report in done:
        by_file.setdefault(path, {})[backend] = report
        if "environment" in report:
            environments.setdefault(backend, report["environment"])
    files_out = [{"path": str(path), **compare(results), "reports": results} for path, results in by_file.items()]
    if interrupted:
        print(f"INTERRUPTED by {interrupted}: {len(files_out)} of {n_files} file(s) run on every backend; "
              "the rest were not run")
    print(render(files_out, backends, environments, complete=not interrupted))
    unavailable = [r for r in reports if r.get("status") == "unavailable"]
    if "native" in backends and unavailable:
        print(f"native backend unavailable: {unavailable[0].get('message', '')} (use --against port to run the port "
              "alone)")
    ok = not interrupted and all(f["ok"] for f in files_out)
    if json_path:  # check_output_file allowed missing directories on the way: they are made, as for a report
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        write_json(json_path, {"backends": backends, "environments": environments, "files": files_out, "ok": ok,
                               **({"interrupted": interrupted} if interrupted else {})})
    return ok, files_out


def _file_summary(report: dict[str, Any]) -> str:
    """One backend's run of one file in a few words: ``5 pass, 1 fail`` or its file status."""
    if report.get("status") != "ran":
        return str(report.get("status", "crash"))
    counts: dict[str, int] = {}
    for row in report.get("tests", []):
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no tests"


def opening_line(files: list[Path], backends: list[str], args: argparse.Namespace) -> str:
    from ..installed import NOT_INSTALLED, paddle_version

    found = paddle_version()
    paddle = ("Paddle not installed" if found["version"] == NOT_INSTALLED
              else f"Paddle {found['version']} (commit {found['commit'][:12]})")
    json_to = f"; results also in {args.json_path}" if args.json_path else ""
    return (f"{prefix(PROG)}: {len(files)} file(s) against {' and '.join(backends)} ({paddle}), "
            f"{args.workers} runner(s) at a time, {args.timeout:g} s per file and backend{json_to}")


def _failed(test: dict[str, Any]) -> bool:
    """A finding: some backend ran the test and it did not pass, or every backend ran it and they
    differ. A backend that could not run the file at all (``NOT_RUN_STATUSES``) is not one."""
    statuses = test["status"].values()
    if any(s not in OK_STATUSES | NOT_RUN_STATUSES for s in statuses):
        return True
    return not test["agree"] and not any(s in NOT_RUN_STATUSES for s in statuses)


def main(argv: list[str] | None = None) -> int:
    return run_command(PROG, lambda: _main(argv))


if __name__ == "__main__":
    sys.exit(main())
