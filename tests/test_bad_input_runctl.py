"""What every command shares off the happy path (``paddle_spmd_port.runctl``, ``reporting``): an
internal error exits 4 with one line and a saved traceback, a closed stdout ends quietly with the
run's own exit code, report files honour the umask, a narrower run never replaces a broader
report, each long command opens with what it is about to do, and ``--backend`` is checked against
the routes each backend itself declares."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from paddle_spmd_port.compat.cli import same_result
from paddle_spmd_port.installed import NOT_INSTALLED, paddle_version
from paddle_spmd_port.native.routes import BACKENDS, routes_reaching
from paddle_spmd_port.ops import RULES
from paddle_spmd_port.reporting import write_atomic, write_files, write_json
from paddle_spmd_port.runctl.command import run_command
from paddle_spmd_port.runctl.exits import EXIT_INTERNAL, UsageError
from paddle_spmd_port.runctl.paths import refuse_other_selection
from paddle_spmd_port.runctl.signals import Interrupted
from tests.cli_checks import REPO, run_cli

ENV = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _cli(*argv: str) -> list[str]:
    return [sys.executable, "-m", "paddle_spmd_port", *argv]


# --------------------------------------------------------------------------- internal errors: exit 4
@pytest.mark.parametrize("error", [ZeroDivisionError, KeyError, OverflowError, BrokenPipeError])
def test_an_internal_error_is_one_line_exit_4_and_a_saved_traceback(error: type, capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def body() -> int:
        raise error("something of ours went wrong")

    assert run_command("python -m paddle_spmd_port parity", body) == EXIT_INTERNAL == 4
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"paddle_spmd_port parity: internal error: {error.__name__}"), lines[0]
    saved = Path(lines[0].rsplit("traceback saved in ", 1)[1].rstrip(")"))
    assert saved.parent == tmp_path and "Traceback" in saved.read_text() and "something of ours" in saved.read_text()


def test_usage_errors_and_interrupts_are_not_internal_errors(capsys):
    def usage() -> int:
        raise UsageError("--x", "bad", "give y")

    assert run_command("oracle", usage) == 2
    assert capsys.readouterr().err == "paddle_spmd_port oracle: error: --x: bad; give y\n"

    def interrupted() -> int:
        raise Interrupted(15)

    assert run_command("launch", interrupted) == 143
    assert capsys.readouterr().err.startswith("paddle_spmd_port launch: interrupted by SIGTERM")


_SWALLOWING_BODY = """
import gc, os, signal, sys, time
from paddle_spmd_port.runctl.command import run_command

def swallow_here():  # the handler runs in code whose exceptions Python ignores
    os.kill(os.getpid(), signal.SIGTERM)
    for _ in range(1000):
        time.sleep(0)

class Dying:
    def __del__(self):
        swallow_here()

def body():
    if sys.argv[1] == "gc":
        gc.callbacks.append(lambda phase, info: phase == "start" and not gc.callbacks.clear() and swallow_here())
        gc.collect()
    else:
        Dying()
    for _ in range(500):  # 5 s of ordinary work: a swallowed interrupt ran on to exit 0
        time.sleep(0.01)
    return 0

sys.exit(run_command("python -m paddle_spmd_port fuzz", body))
"""


@pytest.mark.parametrize("where", ["gc", "del"])
def test_an_interrupt_swallowed_by_a_gc_callback_or_del_still_ends_the_run(where: str):
    # hypothesis's gc callback swallowed the fuzz's SIGINT: the run went on, and a second signal is ignored
    done = subprocess.run([sys.executable, "-c", _SWALLOWING_BODY, where], capture_output=True, text=True,
                          timeout=60, env=ENV)
    assert done.returncode == 143, (done.returncode, done.stderr)
    assert done.stderr.splitlines()[-1] == "paddle_spmd_port fuzz: interrupted by SIGTERM", done.stderr
    assert "Traceback" not in done.stderr


def test_an_internal_error_in_a_real_command_exits_4(tmp_path):
    """A bug reached from the command line: the dispatcher and the command alike say one line, exit 4."""
    code = ("import sys, paddle_spmd_port.parity.infer_cli as m\n"
            "m.port_outcome = lambda *a, **k: 1 / 0\n"  # a bug planted in the port's side
            "from paddle_spmd_port.cli import main\n"
            "sys.exit(main(['infer', 'layer_norm', '--x-shape', '8,6', '--no-native']))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=dict(ENV, TMPDIR=str(tmp_path)),
                          capture_output=True, text=True, timeout=120)
    lines = done.stderr.splitlines()
    assert done.returncode == 4 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "paddle_spmd_port infer: internal error: ZeroDivisionError" in lines[0]
    assert list(tmp_path.glob("paddle_spmd_port-infer-*.traceback"))


# --------------------------------------------------------------------------- a closed stdout
def _closed_stdout(argv: list[str], cwd: Path) -> tuple[int, str]:
    """Run with a stdout whose reader is already gone (what ``| head -1`` becomes): every write fails."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(argv, cwd=cwd, env=ENV, stdout=write, stderr=subprocess.PIPE, text=True, timeout=600,
                              stdin=subprocess.DEVNULL)
    finally:
        os.close(write)
    return done.returncode, done.stderr


def test_a_closed_stdout_ends_quietly_with_the_commands_own_code(tmp_path):
    code, err = _closed_stdout(_cli("infer", "layer_norm", "--x-shape", "8,6", "--no-native"), tmp_path)
    assert (code, err) == (0, ""), err  # was: BrokenPipeError traceback, exit 1
    code, err = _closed_stdout(_cli("parity", "--list", "--rules", "layer_norm"), tmp_path)
    assert (code, err) == (0, ""), err
    code, err = _closed_stdout(_cli("infer", "layer_norm", "--x-shape", "8,6", "--mesh", "0"), tmp_path)
    assert code == 2 and len(err.splitlines()) == 1  # usage errors still say why


@pytest.mark.native
def test_a_closed_stdout_does_not_stop_a_sweep_or_its_report(tmp_path):
    code, err = _closed_stdout(_cli("parity", "--quiet", "--rules", "layer_norm", "--max-cases", "20",
                                    "--report-dir", str(tmp_path / "rep")), tmp_path)
    assert code == 0 and "Traceback" not in err and "BrokenPipe" not in err, err
    assert json.loads((tmp_path / "rep" / "parity.json").read_text())["complete"] is True


# --------------------------------------------------------------------------- report files and the umask
@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_report_files_honour_the_umask(umask: int, tmp_path):
    old = os.umask(umask)
    try:
        paths = [write_atomic(tmp_path / "a.md", "x"), write_json(tmp_path / "a.json", {"a": 1}),
                 *(write_files(tmp_path / "d", {"b.md": "y", "c.gz": b"z"}).iterdir())]
        write_atomic(tmp_path / "a.md", "replaced")  # replacing keeps honouring it
    finally:
        os.umask(old)
    for path in paths:
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask, (path, oct(path.stat().st_mode))
    assert not [p for p in tmp_path.rglob(".*")], "a temp file was left behind"


def test_the_umask_check_catches_mkstemp(tmp_path):
    """What the check above guards against: tempfile.mkstemp's files are 0600 whatever the umask
    (renamed over the target, every report was 0600)."""
    old = os.umask(0o022)
    try:
        fd, name = tempfile.mkstemp(dir=tmp_path)
        os.close(fd)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(name).st_mode) == 0o600 != 0o666 & ~0o022


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_a_commands_report_honours_the_umask(umask: int, tmp_path):
    done = subprocess.run(_cli("oracle", "--max-cases", "1", "--profile", "paddle", "--quiet", "--rules",
                               "layer_norm", "--report-dir", str(tmp_path / "rep")),
                          cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: os.umask(umask))
    assert done.returncode == 0, done.stderr
    files = sorted((tmp_path / "rep").iterdir())
    assert {p.name for p in files} >= {"oracle.md", "oracle.json", "oracle-cases.jsonl.gz"}
    assert {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in files} == {p.name: oct(0o666 & ~umask)
                                                                            for p in files}


# --------------------------------------------------------------------------- one report per selection
def _oracle(rep: Path, *args: str) -> subprocess.CompletedProcess:
    return run_cli(["oracle", "--quiet", "--profile", "paddle", "--max-cases", "2", "--report-dir", str(rep), *args],
                   rep.parent)


def _snapshot(rep: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(rep.iterdir())}


def test_a_narrower_oracle_run_leaves_the_broader_report_untouched(tmp_path):
    rep = tmp_path / "reports"
    assert _oracle(rep, "--rules", "layer_norm,batch_norm").returncode == 0
    broader = _snapshot(rep)
    assert json.loads(broader["oracle.json"])["selection"]["slug"] == "rules=layer_norm,batch_norm;profile=paddle;max=2"
    narrower = _oracle(rep, "--rules", "layer_norm")
    assert narrower.returncode == 2 and narrower.stdout == "", narrower.stderr
    assert "holds the report of another run (rules layer_norm, batch_norm" in narrower.stderr
    assert "--replace-report" in narrower.stderr and _snapshot(rep) == broader
    assert _oracle(rep, "--rules", "layer_norm,batch_norm").returncode == 0  # the same selection: replaced
    assert _oracle(rep, "--rules", "layer_norm", "--replace-report").returncode == 0  # insisted
    assert json.loads((rep / "oracle.json").read_text())["selection"]["slug"] == "rules=layer_norm;profile=paddle;max=2"


def test_the_selection_check_is_shared(tmp_path):
    """parity, launch and oracle refuse through the one helper; a report of the same selection is
    replaced, one of another selection or of none is refused, --replace-report insists."""
    report = tmp_path / "x.json"
    report.write_text(json.dumps({"meta": {"selection": {"slug": "a", "describe": "run A"}}}))
    refuse_other_selection(report, {"slug": "a", "describe": "run A"})
    with pytest.raises(UsageError, match="run A"):
        refuse_other_selection(report, {"slug": "b", "describe": "run B"})
    refuse_other_selection(report, {"slug": "b", "describe": "run B"}, replace=True)
    report.write_text("not json")
    with pytest.raises(UsageError, match="unknown selection"):
        refuse_other_selection(report, {"slug": "a", "describe": "run A"})
    refuse_other_selection(tmp_path / "absent.json", {"slug": "a", "describe": "run A"})
    for module in ("parity.cli", "launch.cli", "oracle.cli"):
        text = (REPO / "paddle_spmd_port" / (module.replace(".", "/") + ".py")).read_text()
        assert "refuse_other_selection(" in text and "add_replace_report_argument(" in text, module


# --------------------------------------------------------------------------- opening lines
def _first_stderr_line(argv: list[str], cwd: Path) -> str:
    """The first line a command writes to stderr; the command is then ended (the check is that it
    speaks before its work, not the work)."""
    proc = subprocess.Popen(argv, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        assert proc.stderr is not None
        return proc.stderr.readline()
    finally:
        os.killpg(proc.pid, 9)
        proc.wait(timeout=60)


def test_each_long_command_opens_with_what_it_is_about_to_do(tmp_path):
    paddle = paddle_version()
    if paddle["version"] == NOT_INSTALLED:
        pytest.skip("the opening lines name the installed Paddle")
    version = f"Paddle {paddle['version']} (commit {paddle['commit'][:12]})"
    line = _first_stderr_line(_cli("parity", "--rules", "layer_norm", "--sample", "5"), tmp_path)
    assert line.startswith(f"paddle_spmd_port parity: {version}, release profile "), line
    assert "comparing rules layer_norm" in line and "report in reports/parity-rules-layer_norm_sample5-seed0" in line
    line = _first_stderr_line(_cli("launch", "--nproc", "2", "--rules", "layer_norm", "--report-dir", "out"), tmp_path)
    assert line.startswith(f"paddle_spmd_port launch: {version}; ") and "rules layer_norm" in line, line
    assert "report in out/launch-np2.md" in line
    line = _first_stderr_line(_cli("oracle", "--rules", "layer_norm"), tmp_path)
    assert line.startswith("paddle_spmd_port oracle: judging 1 rule(s)") and "reports/oracle.md" in line, line
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "test_a.py").write_text("import unittest\n")
    line = _first_stderr_line(_cli("compat-test", "t", "--against", "port"), tmp_path)
    assert line.startswith("paddle_spmd_port compat-test: 1 file(s) against port (") and version in line, line
    assert not (tmp_path / "reports").exists() and not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- routes per rule
def test_every_rule_has_a_route_and_the_default_ones_are_among_them():
    from paddle_spmd_port.native.routes import DEFAULT_BACKENDS

    for rule in RULES:
        routes = routes_reaching(rule)
        assert routes and set(DEFAULT_BACKENDS[rule]) <= set(routes) <= set(BACKENDS), rule


#: PIR declares an op for these, but its build fails on a CPU wheel's dtype check (no kernel):
#: no default route (native/pir.py's table).
PIR_NEEDS_A_GPU_KERNEL = {"sync_batch_norm", "sync_batch_norm_grad"}


@pytest.mark.native
def test_the_routes_are_the_ones_each_backend_declares():
    """routes_reaching (what --backend is checked against) says what each backend's own table says."""
    from paddle_spmd_port.native import compiled, pir, registry

    declared = {"registry": set(registry.ROUTES), "compiled": set(compiled.RULES),
                "pir": set(pir.ROUTES) - PIR_NEEDS_A_GPU_KERNEL}
    for backend, rules in declared.items():
        assert {r for r in RULES if backend in routes_reaching(r)} == rules, backend


# --------------------------------------------------------------------------- compat-test's "same result"
@pytest.mark.parametrize(("statuses", "messages", "same"), [
    (("pass", "pass"), ("", ""), True),
    (("fail", "fail"), ("AssertionError: 1 != 2", "AssertionError:  1 != 2"), True),
    (("fail", "fail"), ("AssertionError: 1 != 2", "AssertionError: 1 != 3"), False),
    (("error", "error"), ("KeyError: 'a'", "ValueError: no rule"), False),  # two unrelated errors
    (("timeout", "timeout"), ("no result after 5 s", "no result after 5 s"), False),  # nothing compared
    (("crash", "crash"), ("runner killed by signal 11", "runner killed by signal 11"), False),
    (("unavailable", "unavailable"), ("", ""), False),
    (("pass", "fail"), ("", "AssertionError"), False),
    (("skip", "skip"), ("needs a GPU", "no GPU here"), True),  # a skip's reason is not a result
])
def test_same_result_needs_the_same_kind_and_message(statuses, messages, same):
    backends = ("port", "native")
    assert same_result(dict(zip(backends, statuses, strict=True)), dict(zip(backends, messages, strict=True))) is same


UNRELATED_ERRORS = """
import unittest
from paddle.base import core

class T(unittest.TestCase):
    def test_fails_differently(self):
        raise ValueError(core.get_phi_spmd_rule.__module__.split(".")[0])  # paddle_spmd_port vs paddle
"""


@pytest.mark.native
def test_compat_test_does_not_count_unrelated_errors_as_the_same_result(tmp_path):
    (tmp_path / "test_unrelated.py").write_text(UNRELATED_ERRORS)
    done = run_cli(["compat-test", "test_unrelated.py", "--json", "r.json"], tmp_path, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    row = json.loads((tmp_path / "r.json").read_text())["files"][0]["tests"][0]
    assert row["status"] == {"port": "error", "native": "error"} and row["agree"] is False, row
    assert "same result 0/1" in done.stdout and "<-- differs (messages)" in done.stdout
    progress = [ln for ln in done.stderr.splitlines() if "[1/1] test_unrelated.py" in ln]
    assert progress == ["paddle_spmd_port compat-test: [1/1] test_unrelated.py: port 1 error | native 1 error"]
