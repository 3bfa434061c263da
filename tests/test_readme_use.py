"""The README's "## Use" block runs as pasted: every command line of it, run by bash in a directory
that has the set-up's ``.venv`` (a link to the interpreter running this test's environment),
exits 0 without a traceback. A bare ``python`` would not (a fresh shell has not activated .venv:
"No module named 'paddle'", exit 3), so every line names ``.venv/bin/python``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_checks import REPO


def use_commands(readme: str) -> list[str]:
    """The command lines of the first ``bash`` block under ``## Use`` (comments are bash's to drop)."""
    section = readme.split("\n## Use\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "no bash block under ## Use"
    return [ln for ln in block.group(1).splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


COMMANDS = use_commands((REPO / "README.md").read_text())


def test_every_use_command_names_the_set_ups_interpreter() -> None:
    assert len(COMMANDS) >= 5
    bare = [c for c in COMMANDS if not c.startswith(".venv/bin/python -m paddle_spmd_port ")]
    assert not bare, f"not runnable in a fresh shell after the set-up: {bare}"


def test_the_check_finds_a_bare_python() -> None:
    """The extraction sees what a reader pastes: a bare ``python`` line is found (and would fail above)."""
    readme = "# x\n## Use\n\n```bash\npython -m paddle_spmd_port parity --list   # sizes\n# a comment\n```\n## Next\n"
    assert use_commands(readme) == ["python -m paddle_spmd_port parity --list   # sizes"]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with ``.venv`` as the set-up leaves it: the environment this test runs in."""
    root = Path(sys.executable).parent.parent
    if not (root / "bin" / "python").exists():
        pytest.skip(f"{sys.executable} is not inside an environment with bin/python")
    here = tmp_path_factory.mktemp("readme-use")
    (here / ".venv").symlink_to(root, target_is_directory=True)
    return here


@pytest.mark.native
@pytest.mark.parametrize("command", COMMANDS, ids=[c.split(" -m paddle_spmd_port ", 1)[-1][:60] for c in COMMANDS])
def test_a_use_command_runs_as_pasted(command: str, work: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))  # this checkout's package, whatever .venv has installed
    done = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    context = f"{command}\nexit {done.returncode}\nstdout: {done.stdout[-1500:]}\nstderr: {done.stderr[-1500:]}"
    assert done.returncode == 0, context
    assert "Traceback" not in done.stderr, context
    assert done.stdout.strip(), context
