"""A fork server for the bad-input tables (tests/cli_checks.py, :func:`run_cli_forked`).

A bad-input row is ``python -m paddle_spmd_port ARGS`` ending before any work; most of its cost is
the interpreter's start and the commands' imports, paid once per row. This server pays them once:
it imports the dispatcher and every command's module (what each row's own process imports first),
then forks a child per request, and the child runs the package as ``python -m`` does
(``runpy``, ``sys.argv[0]`` the package's ``__main__.py``, the working directory first on
``sys.path``) in a session of its own, stdin ``/dev/null``, stdout and stderr to files, and ends
the way that interpreter would (SystemExit, or a traceback and exit 1, then the normal shutdown).

Requests are JSON lines on stdin (``argv``, ``cwd``, ``timeout``, ``env``); each reply one JSON line on
stdout (``code`` as ``subprocess`` reports it, ``out``, ``err``, ``timed_out``). A child past its
timeout is killed with its whole session.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import shutil
import signal
import sys
import tempfile


def _serve() -> list[str] | None:
    """The server's loop; returns (in a forked child only) the argv the child is to run."""
    from paddle_spmd_port import cli

    for module, _ in cli.COMMANDS.values():
        importlib.import_module(module)
    channel = sys.stdout
    import runpy  # noqa: F401  (the children's, imported once here)

    scratch = tempfile.mkdtemp(prefix="cli-server-")
    print(json.dumps({"ready": os.getpid()}), file=channel, flush=True)
    while line := sys.stdin.readline():
        request = json.loads(line)
        out_path, err_path = os.path.join(scratch, "out"), os.path.join(scratch, "err")
        out_fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err_fd = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        pid = os.fork()
        if pid == 0:  # the row's process
            os.setsid()
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(out_fd, 1)
            os.dup2(err_fd, 2)
            for fd in (null, out_fd, err_fd):
                os.close(fd)
            os.chdir(request["cwd"])
            os.environ.clear()  # (the server's but for pytest's per-test variable: tests/cli_checks.py)
            os.environ.update(request["env"])
            return list(request["argv"])
        os.close(out_fd)
        os.close(err_fd)
        timed_out = False
        waker = os.pidfd_open(pid)
        try:
            if not select.select([waker], [], [], request["timeout"])[0]:
                timed_out = True
                os.killpg(pid, signal.SIGKILL)
        finally:
            os.close(waker)
        _, status = os.waitpid(pid, 0)
        if not timed_out:  # anything it left in its session ends with it, as run_cli's timeout does
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        with open(out_path, encoding="utf-8", errors="replace") as out, \
                open(err_path, encoding="utf-8", errors="replace") as err:
            reply = {"code": os.waitstatus_to_exitcode(status), "out": out.read(), "err": err.read(),
                     "timed_out": timed_out}
        print(json.dumps(reply), file=channel, flush=True)
    shutil.rmtree(scratch, ignore_errors=True)  # stdin closed: the tests are done
    return None


if __name__ == "__main__":
    del sys.path[0]  # this file's folder (tests/): the package comes from PYTHONPATH, as for python -m
    argv = _serve()
    if argv is None:
        sys.exit(0)
    import runpy

    sys.argv = ["-m", *argv]  # runpy puts __main__.py's path in place of "-m", as python -m does
    sys.path.insert(0, os.getcwd())  # python -m puts the working directory first
    importlib.invalidate_caches()
    runpy.run_module("paddle_spmd_port", run_name="__main__", alter_sys=True)
