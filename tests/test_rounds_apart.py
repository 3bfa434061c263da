"""A long random run's rounds each run in a forked copy of the sweep (parity/cli.py ROUNDS_APART,
runctl/forked.py): the sweep itself holds no round's cases, the report it writes is the one rounds
run in the sweep would write (every field but the timings, every per-case row, the repro lines, a
saved baseline and a diff with one), and a round's copy that raises, dies or is signalled ends the
run as the sweep would: the partial report with every earlier round in it, the one line, exit 4 or
128 + the signal, no process left behind. Memory figures: docs/measurements/2026-12-07-rounds-apart.md."""

from __future__ import annotations

import gc
import gzip
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from paddle_spmd_port.case import Case
from paddle_spmd_port.outcome import Outcome, port_outcome
from paddle_spmd_port.parity import cli
from paddle_spmd_port.runctl.exits import ChildRaised, RemoteTraceback
from paddle_spmd_port.runctl.forked import ChildLost, call_in_child
from paddle_spmd_port.runctl.signals import Interrupted, signals_raise

RULES = "layer_norm,p_norm,batch_norm"
ROOT = Path(__file__).resolve().parent.parent


def _native(backend: str, cases: list, args: object, report: object) -> list[Outcome]:
    """Stands in for Paddle: the port's answers under the mirror policy (rows the strict port refuses),
    and every 50th case given its neighbour's answer (mismatches, with their repro lines)."""
    answers = [port_outcome(c, "paddle", "mirror") for c in cases]
    return [answers[i - 1] if i % 50 == 49 else a for i, a in enumerate(answers)]


def _setup(monkeypatch: pytest.MonkeyPatch, apart: bool) -> None:
    monkeypatch.setattr(cli, "run_native_group", _native)
    monkeypatch.setattr(cli, "BACKGROUND_BACKEND", "none")  # every group in this thread
    monkeypatch.setattr(cli, "BACKGROUND_FALLBACK", "none")
    monkeypatch.setattr(cli, "CASES_PER_ROUND", 1000)  # 4 rounds
    monkeypatch.setattr(cli, "ROUNDS_APART", apart)


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str,
         apart: bool, *extra: str) -> tuple[int, str, str, Path]:
    _setup(monkeypatch, apart)
    out = tmp_path / name
    code = cli.main(["--rules", RULES, "--random", "1300", "--seed", "6", "--quiet", "--report-dir", str(out), *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err, out


def _summary(out: Path) -> dict:
    """parity.json without what differs from run to run (the timings)."""
    data = json.loads((out / "parity.json").read_text())
    for key in ("started", "finished"):
        data.pop(key)
    for group in data["rules"].values():
        group.pop("native_seconds")
        group.pop("port_seconds")
    return data


def _rows(path: Path) -> list[str]:
    with gzip.open(path, "rt") as fh:
        return sorted(fh)


def _console(text: str, out: Path) -> list[str]:
    return [line.replace(str(out), "OUT") for line in text.splitlines() if " s; report in " not in line]


def test_rounds_apart_write_the_report_rounds_in_the_sweep_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Every field of parity.json but the timings (counts, verdict map, examples, coverage, notes), every
    per-case row, the console (the repro lines) and the baseline saved are the same whether the rounds run
    apart or in the sweep; so is a diff against that baseline."""
    code_in, console_in, _, inside = _run(tmp_path, monkeypatch, capsys, "in", False,
                                       "--save-baseline", str(tmp_path / "in.gz"))
    code_apart, console_apart, _, apart = _run(tmp_path, monkeypatch, capsys, "apart", True,
                                            "--save-baseline", str(tmp_path / "apart.gz"))
    assert code_in == code_apart == 1  # (the planted mismatches)
    summary = _summary(apart)
    assert summary["total_mismatches"] > 20 and summary["complete"]
    assert summary == _summary(inside)
    assert _rows(apart / "parity-cases.jsonl.gz") == _rows(inside / "parity-cases.jsonl.gz")
    assert _console(console_apart, apart) == _console(console_in, inside)
    assert _rows(tmp_path / "apart.gz") == _rows(tmp_path / "in.gz")

    diffs = {}
    for name, apart_mode in (("diff-in", False), ("diff-apart", True)):
        code, _, _, out = _run(tmp_path, monkeypatch, capsys, name, apart_mode, "--baseline", str(tmp_path / "in.gz"))
        assert code == 0
        data = json.loads((out / "baseline.json").read_text())
        assert data["unchanged"] == 3 * 1300, data["unchanged"]  # every case reached the diff, once
        diffs[name] = {k: v for k, v in data.items() if k not in ("new_paddle", "old_paddle")}
    assert diffs["diff-in"] == diffs["diff-apart"]


def _live_cases() -> int:
    return sum(type(o) is Case for o in gc.get_objects())


@pytest.mark.parametrize("apart", [True, False])
def test_the_sweep_holds_no_rounds_cases_when_its_rounds_run_apart(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], apart: bool) -> None:
    """After each round the sweep holds none of the round's cases (nor drew any: its copies did); run in
    the sweep, a round's cases are still held when it ends (so this check can fail). Counted over the
    cases alive before the run (what other tests in this process keep)."""
    held: list[int] = []
    take, run_round = cli._Sweep._take_round, cli._Sweep._run_round

    def taking(sweep: cli._Sweep, state: dict, spool: str) -> None:
        take(sweep, state, spool)
        held.append(_live_cases() - before)

    def running(sweep: cli._Sweep, number: int, batch: list | None) -> None:
        run_round(sweep, number, batch)
        held.append(_live_cases() - before)

    monkeypatch.setattr(cli._Sweep, "_take_round", taking)
    monkeypatch.setattr(cli._Sweep, "_run_round", running)
    before = _live_cases()
    code, _, _, _ = _run(tmp_path, monkeypatch, capsys, "r", apart)
    assert code == 1 and len(held) == 4
    assert (max(held) == 0) == apart, held


def _ending_in_round_two(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """Round 2's copy raises (or is killed) while it tallies, after some of its rows reached the cases file."""
    from paddle_spmd_port.parity.report import ParityReport

    add, in_child = ParityReport.add, cli._Sweep._round_in_child
    seen: list[int] = []

    def adding(report: ParityReport, tally: object, index: int, *args: object) -> None:
        add(report, tally, index, *args)  # type: ignore[arg-type]
        seen.append(index)
        if seen[0] == 2 and len(seen) == 900:  # (seen[0]: the round, in its copy)
            report.flush_cases_file()  # (a member cut short on disk)
            if how == "raise":
                raise KeyError("planted")
            os.kill(os.getpid(), signal.SIGKILL)

    def round_in_child(sweep: cli._Sweep, number: int, *args: object) -> dict:
        seen.append(number + 1)
        return in_child(sweep, number, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(ParityReport, "add", adding)
    monkeypatch.setattr(cli._Sweep, "_round_in_child", round_in_child)


def _round_one_rows(out: Path) -> tuple[int, int]:
    """(rows in the cases file, cases of the report that need a row) -- equal when the file holds
    exactly the tallied rounds' rows."""
    data = json.loads((out / "parity.json").read_text())
    needing = sum(n for g in data["rules"].values() for verdict, n in g["verdicts"].items()
                  if verdict not in ("match", "both-raise-same"))
    with gzip.open(out / "parity-cases.jsonl.gz", "rt") as fh:  # (reads to its end: no member cut short)
        return sum(1 for _ in fh), needing


@pytest.mark.parametrize("how", ["raise", "kill"])
def test_a_rounds_copy_that_raises_or_dies_ends_the_run_as_an_internal_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], how: str) -> None:
    _ending_in_round_two(monkeypatch, how)
    code, _, err, out = _run(tmp_path, monkeypatch, capsys, "r", True)
    assert code == 4, err
    first = (out / "parity.md").read_text().splitlines()[0]
    assert "INTERRUPTED by an internal error" in first and "round 2 of 4's process" in first, first
    if how == "raise":  # what it tallied before the error is in the report, as in the sweep
        assert "raised KeyError: 'planted'" in first and "partial report in" in err
    else:  # nothing came back: round 1 alone
        assert "was killed by signal 9 (SIGKILL) before it sent its result" in first, first
    rows, needing = _round_one_rows(out)
    assert rows == needing > 0
    data = json.loads((out / "parity.json").read_text())
    compared = sum(g["cases"] for g in data["rules"].values())
    assert (compared > 1000) == (how == "raise") and compared >= 1000
    assert {g["state"] for g in data["rules"].values()} == {"interrupted"}


_RUNNER = textwrap.dedent("""
    import os, sys, time
    from paddle_spmd_port.outcome import port_outcome
    from paddle_spmd_port.parity import cli
    marker = sys.argv[1]
    def native(backend, cases, args, report):
        if os.path.exists(marker + ".1"):  # round 2: say so, then wait for the signal
            open(marker, "w").write(str(os.getpid()))
            try:
                time.sleep(60)
            except BaseException as exc:  # (the copy itself was signalled)
                open(marker + ".stopped", "w").write(type(exc).__name__)
                raise
        open(marker + ".1", "w").close()
        return [port_outcome(c) for c in cases]
    cli.run_native_group = native
    cli.BACKGROUND_BACKEND = cli.BACKGROUND_FALLBACK = "none"
    cli.CASES_PER_ROUND = 2000
    sys.exit(cli.main(sys.argv[2:]))
""")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_a_round_apart_writes_the_partial_report_and_ends_the_copy(tmp_path: Path,
                                                                                  sig: signal.Signals) -> None:
    """SIGTERM to the sweep alone (the copy gets it passed on), SIGINT to the whole group (as a terminal
    sends it): 128 + the signal, the one line, the partial report with round 1 in it, the copy gone."""
    marker, out = tmp_path / "marker", tmp_path / "r"
    proc = subprocess.Popen([sys.executable, "-c", _RUNNER, str(marker), "--rules", "layer_norm", "--random", "5000",
                             "--seed", "2", "--quiet", "--report-dir", str(out)], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() or not marker.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        copy = int(marker.read_text())
        if sig == signal.SIGTERM:
            os.kill(proc.pid, sig)
        else:
            os.killpg(proc.pid, sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 128 + sig, err
    assert (tmp_path / "marker.stopped").read_text() == "Interrupted"  # (passed on, when sent to the sweep alone)
    assert err.strip().splitlines()[-1] == (f"paddle_spmd_port parity: interrupted by {sig.name}; "
                                            f"partial report in {out / 'parity.md'}"), err
    assert (out / "parity.md").read_text().startswith(f"**INTERRUPTED by {sig.name}")
    data = json.loads((out / "parity.json").read_text())
    assert data["rules"]["layer_norm@registry"]["cases"] == 2000  # round 1; round 2 answered nothing
    rows, needing = _round_one_rows(out)
    assert rows == needing
    with pytest.raises(ProcessLookupError):
        os.kill(copy, 0)  # (reaped: not even a zombie)


# --------------------------------------------------------------------------- runctl.forked itself
def test_call_in_child_returns_the_copys_result_and_runs_nothing_twice(capfd: pytest.CaptureFixture[str]) -> None:
    print("buffered before the fork", end="")  # (flushed first: never written by both processes)
    got = call_in_child(lambda: {"pid": os.getpid(), "data": list(range(100_000))}, "copy")
    assert got["pid"] != os.getpid() and got["data"] == list(range(100_000))  # (more than a pipe's buffer)
    assert capfd.readouterr().out == "buffered before the fork"


def _raise() -> None:
    raise KeyError("inside")


def test_call_in_child_raises_the_copys_error_with_its_traceback() -> None:
    with pytest.raises(ChildRaised, match=r"^the copy raised KeyError: 'inside'$") as info:
        call_in_child(_raise, "the copy")
    assert isinstance(info.value.__cause__, RemoteTraceback) and "_raise" in str(info.value.__cause__)


def test_a_result_that_cannot_be_sent_is_the_copys_error() -> None:
    with pytest.raises(ChildRaised, match=r"^the copy raised .*pickle") as info:
        call_in_child(lambda: (lambda: None), "the copy")  # (a lambda does not pickle)
    assert "Traceback" in str(info.value.__cause__)


def test_call_in_child_says_how_a_copy_that_sent_nothing_ended() -> None:
    with pytest.raises(ChildLost, match=r"^the copy was killed by signal 9 \(SIGKILL\) before it sent its result$"):
        call_in_child(lambda: os.kill(os.getpid(), signal.SIGKILL), "the copy")
    with pytest.raises(ChildLost, match=r"^the copy exited with status 7 before it sent its result$"):
        call_in_child(lambda: os._exit(7), "the copy")


def _answers_a_signal() -> str:
    try:
        time.sleep(30)
    except Interrupted as exc:
        return f"stopped by {exc.name}"
    return "not signalled"


def _ignores_signals() -> str:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(30)
    return "slept"


@pytest.mark.parametrize("stage", [_answers_a_signal, _ignores_signals])
def test_a_signal_to_the_parent_is_passed_on_and_the_copy_awaited_or_killed(
        stage: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """A SIGTERM to this process reaches the copy; its result comes back on the Interrupted (a copy that
    ignores it is killed once its grace is over, and the Interrupted carries nothing)."""
    import threading

    from paddle_spmd_port.runctl import signals

    monkeypatch.setattr(signals, "_FIRED", [])  # (the process-wide "first signal" record, this test's own)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM))
    t0 = time.monotonic()
    try:
        with pytest.raises(Interrupted) as info, signals_raise():
            timer.start()
            call_in_child(stage, "the copy", grace=1.0)  # type: ignore[arg-type]
    finally:
        timer.join()
        for sig, handler in handlers.items():  # (signals_raise leaves them ignored after a signal)
            signal.signal(sig, handler)
    assert info.value.signum == signal.SIGTERM
    expected = "stopped by SIGTERM" if stage is _answers_a_signal else None
    assert info.value.child_result == expected  # type: ignore[attr-defined]
    assert time.monotonic() - t0 < 20
