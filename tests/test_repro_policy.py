"""A repro line replays under the strictness policy of the run that wrote it (docs/strictness.md).

A ``parity --policy mirror`` run answers, as Paddle's rule does, inputs the default ``strict`` port
refuses; its repro lines and per-case records name ``--policy mirror`` (strict ones name no policy),
so that a line pasted into a fresh process reproduces the recorded class and answer, where the same
line without the policy replays as *port rejects invalid*.

A healthy mirror agrees with Paddle (tests/test_strictness.py), and an agreeing case gets no record:
so that the mirror-answered cases print lines, the batch_norm mirror functions are planted wrong
(their first output's mesh dropped) for the sweep and for its replays alike -- in this process, and
in the fresh ones through a driver that plants them before it runs ``python -m paddle_spmd_port``'s
own ``main`` with the pasted line's arguments. One rule, one route (compiled: its caller starts in
milliseconds), a small random sample.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from paddle_spmd_port.ops import registry
from paddle_spmd_port.parity import cli as parity_cli
from paddle_spmd_port.parity import infer_cli
from paddle_spmd_port.parity.report import CASES_FILE
from paddle_spmd_port.reporting import REPRO_PYTHON
from paddle_spmd_port.types import DistAttr, SpmdResult
from tests.cli_checks import REPO

pytestmark = pytest.mark.native
pytest.importorskip("paddle")

RULE = "batch_norm"
#: ~8% of batch_norm's random cases are refusals the mirror answers (seed 1: 31 of 400)
RUN = ["--quiet", "--rules", RULE, "--random", "60", "--seed", "1", "--backend", "compiled", "--workers", "1"]
HEAD = f"{REPRO_PYTHON} -m paddle_spmd_port infer --backend compiled --policy mirror --case-json '"
DRIVER = f"""
import sys
sys.path.insert(0, {str(REPO)!r})
from tests.test_repro_policy import plant_wrong_mirrors
plant_wrong_mirrors(lambda mapping, key, value: mapping.__setitem__(key, value))
from paddle_spmd_port.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _drop_mesh(answer: SpmdResult) -> SpmdResult:
    out0 = answer.outputs[0]
    return SpmdResult(answer.inputs, (DistAttr.make(out0.dims_mapping, out0.partial_dims, None), *answer.outputs[1:]))


def plant_wrong_mirrors(setitem) -> int:
    """Every mirror function of RULE answers with its first output's mesh dropped (``setitem(mapping,
    key, value)`` sets it: a monkeypatch's, or a plain one in a driver); the number planted."""
    planted = 0
    for key, fn in list(registry.MIRRORS.items()):
        if key[0] == RULE:
            setitem(registry.MIRRORS, key, lambda *args, fn=fn, **kwargs: _drop_mesh(fn(*args, **kwargs)))
            planted += 1
    return planted


@pytest.fixture(scope="module")
def mirror_run(tmp_path_factory):
    """The planted mirror run: its exit code, records, parity.json, console text and report dir, the
    plant still in place for in-process replays."""
    out = tmp_path_factory.mktemp("mirror")
    with pytest.MonkeyPatch.context() as mp:
        assert plant_wrong_mirrors(mp.setitem)
        console = io.StringIO()
        with contextlib.redirect_stdout(console):
            code = parity_cli.main([*RUN, "--policy", "mirror", "--show-repro", "--junit", str(out / "j.xml"),
                                    "--report-dir", str(out / "r")])
        with gzip.open(out / "r" / CASES_FILE, "rt") as fh:
            records = [json.loads(line) for line in fh]
        (out / "driver.py").write_text(DRIVER)
        yield code, records, json.loads((out / "r" / "parity.json").read_text()), console.getvalue(), out


def _infer_lines(text: str) -> list[str]:
    """Every ``infer`` command in ``text`` up to its --case-json (HTML-escaped quotes or not)."""
    return re.findall(r"-m paddle_spmd_port infer [^'&{]*--case-json", text)


def test_a_mirror_runs_report_names_its_policy_in_every_repro_line(mirror_run) -> None:
    code, records, data, console, out = mirror_run
    assert code == 1, console[-2000:]  # the planted mirror answers mismatch
    assert data["selection"]["policy"] == "mirror" and "policy-mirror" in data["selection"]["slug"]
    planted = [r for r in records if r["verdict"] == "mismatch"]
    assert len(planted) >= 2, [r["verdict"] for r in records]
    assert all(r["policy"] == "mirror" and r["repro"].startswith(HEAD) for r in records)
    texts = {"console": console, "parity.json": json.dumps(data), "junit": (out / "j.xml").read_text(),
             **{name: (out / "r" / name).read_text() for name in ("parity.md", "parity.html")}}
    for name, text in texts.items():
        lines = _infer_lines(text)
        assert lines, name
        assert all("--policy mirror " in line for line in lines), (name, [x for x in lines if "--policy" not in x])
    # --show-repro: each mismatch's snippet answers with the port under the run's policy
    snippets = console.count("from paddle_spmd_port.outcome import port_outcome")
    assert snippets >= 2 and console.count("port_outcome(case, policy='mirror')") == snippets


def _pasted(line: str, driver: Path, *, drop_policy: bool = False) -> subprocess.CompletedProcess:
    """``line`` run in a fresh process (through the planting driver), optionally without its policy."""
    argv = shlex.split(line)
    n = len(shlex.split(REPRO_PYTHON))
    assert argv[n:n + 3] == ["-m", "paddle_spmd_port", "infer"], line
    rest = argv[n + 2:]
    if drop_policy:  # the mutant: the line as it was written before it named the policy
        i = rest.index("--policy")
        rest = rest[:i] + rest[i + 2:]
    return subprocess.run([sys.executable, str(driver), *rest], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


def test_a_pasted_mirror_line_reproduces_its_class_and_without_the_policy_it_does_not(mirror_run) -> None:
    _, records, _, _, out = mirror_run
    driver = out / "driver.py"
    for record in [r for r in records if r["verdict"] == "mismatch"][:2]:
        done = _pasted(record["repro"], driver)
        context = f"{record['repro']}\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}"
        assert done.returncode == 1, context
        assert "route: compiled" in done.stdout and "port (mirror policy):" in done.stdout, context
        assert re.search(r"^verdict: mismatch ", done.stdout, re.M), context
        assert all(f"  {diff}" in done.stdout for diff in record["diffs"]), context  # the same cells differ
        mutant = _pasted(record["repro"], driver, drop_policy=True)
        assert mutant.returncode == 0, mutant.stdout[-2000:]
        verdict = re.search(r"^verdict: (\S+)", mutant.stdout, re.M)
        assert verdict and verdict[1] == "port-rejects-invalid" != record["verdict"], mutant.stdout[-2000:]


def test_a_mirror_record_replays_under_its_policy_unless_told_otherwise(mirror_run, capsys) -> None:
    _, records, _, _, _ = mirror_run  # (in this process: the plant is in place)
    record = next(r for r in records if r["verdict"] == "mismatch")
    assert infer_cli.main(["--case-json", json.dumps(record)]) == 1
    printed = capsys.readouterr().out
    assert "port (mirror policy):" in printed and "verdict: mismatch" in printed and "recorded: mismatch" in printed
    assert infer_cli.main(["--case-json", json.dumps(record), "--policy", "strict"]) == 0
    printed = capsys.readouterr().out
    assert "verdict: port-rejects-invalid" in printed
    assert "not the recorded verdict: the record's run answered under policy mirror, this one under strict" in printed
