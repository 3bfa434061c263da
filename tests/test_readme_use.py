"""The README's "## Use" block and every block of the docs marked runnable run as pasted.

* The first ``bash`` block under README's ``## Use``: every command line of it, run by bash in a
  directory that has the set-up's ``.venv`` (a link to the interpreter running this test's
  environment), exits 0 without a traceback. A bare ``python`` would not (a fresh shell has not
  activated .venv: "No module named 'paddle'", exit 3), so every line names ``.venv/bin/python``.
* Every ``bash`` block right after a ``<!-- runnable -->`` line in README.md or docs/**/*.md: the
  commands of one page run in page order in one directory (a later block may read what an earlier one
  wrote, as for a reader), each exiting 0 without a traceback. Only commands that finish in seconds are
  marked; the long ones (the full sweep, real launches, the matrix) stay unmarked.
* Every ``bash`` block of README.md and docs/ (marked or not; measurement pages aside) runs the
  package and the tools with a venv's interpreter, never a bare ``python``.

The directory also links the repository's ``tests/`` and ``tools/``, which the commands name by
relative path, as they do when run from the repository.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_checks import REPO

MARK = "<!-- runnable -->"


def use_commands(readme: str) -> list[str]:
    """The command lines of the first ``bash`` block under ``## Use`` (comments are bash's to drop)."""
    section = readme.split("\n## Use\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "no bash block under ## Use"
    return _lines(block.group(1))


def _lines(block: str) -> list[str]:
    return [ln for ln in block.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def runnable_blocks(text: str, where: str = "text") -> list[list[str]]:
    """The command lines of each block marked runnable, in order. A mark not followed by a ``bash``
    block is an error: a reader would take the next block for tested when it is not."""
    blocks = []
    parts = text.split(MARK)
    for n, after in enumerate(parts[1:], 1):
        block = re.match(r"\s*\n```bash\n(.*?)```", after, re.S)
        assert block, f"{where}: runnable mark {n} is not followed by a ```bash block"
        blocks.append(_lines(block.group(1)))
    return blocks


def _pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


PAGES = {p.relative_to(REPO).as_posix(): runnable_blocks(p.read_text(), str(p)) for p in _pages()}
RUNNABLE = {page: [c for block in blocks for c in block] for page, blocks in PAGES.items() if blocks}
COMMANDS = use_commands((REPO / "README.md").read_text())


def bare_python(commands: list[str]) -> list[str]:
    """Lines that run a Python other than the set-up's (``python``, ``python3``, a bare ``pytest``)."""
    bad = []
    for c in commands:
        words = re.split(r"[\s|;&()]+", c)
        if any(w in ("python", "python3", "pytest") for w in words):
            bad.append(c)
    return bad


def test_every_use_command_names_the_set_ups_interpreter() -> None:
    assert len(COMMANDS) >= 5
    bare = [c for c in COMMANDS if not c.startswith(".venv/bin/python -m paddle_spmd_port ")]
    assert not bare, f"not runnable in a fresh shell after the set-up: {bare}"


def test_the_check_finds_a_bare_python() -> None:
    """The extraction sees what a reader pastes: a bare ``python`` line is found (and would fail above)."""
    readme = "# x\n## Use\n\n```bash\npython -m paddle_spmd_port parity --list   # sizes\n# a comment\n```\n## Next\n"
    assert use_commands(readme) == ["python -m paddle_spmd_port parity --list   # sizes"]


def test_the_docs_have_runnable_blocks_and_name_the_set_ups_interpreter() -> None:
    assert len(RUNNABLE) >= 5, f"runnable blocks only in {sorted(RUNNABLE)}"
    bare = {page: bad for page, cmds in RUNNABLE.items() if (bad := bare_python(cmds))}
    assert not bare, f"runnable lines naming another Python than .venv/bin/python: {bare}"


def test_the_runnable_extraction_can_fail() -> None:
    """A mark without a block is refused; a marked block with a bare python is found; an unmarked
    block is not taken."""
    page = (f"# p\n\n{MARK}\n```bash\n.venv/bin/python -m x\n# c\npython3 tools/bench.py | head\n```\n\n"
            "```bash\nrm -rf /\n```\n")
    blocks = runnable_blocks(page)
    assert blocks == [[".venv/bin/python -m x", "python3 tools/bench.py | head"]]
    assert bare_python(blocks[0]) == ["python3 tools/bench.py | head"]
    assert bare_python([".venv/bin/python tools/bench.py --help | head -3"]) == []
    with pytest.raises(AssertionError, match="not followed"):
        runnable_blocks(f"# p\n{MARK}\n\ntext\n```bash\nls\n```\n")


def bash_blocks(text: str) -> list[list[str]]:
    """The command lines of every ``bash`` block, marked runnable or not."""
    return [_lines(b) for b in re.findall(r"```bash\n(.*?)```", text, re.S)]


def bare_package_runs(commands: list[str]) -> list[str]:
    """Lines that run this package or a tool (``-m paddle_spmd_port``, ``tools/``) with a bare Python: a
    fresh shell's ``python`` has no Paddle (the command fails closed, exit 3) where .venv's has."""
    return [c for c in commands if any(bare_python([part]) and ("-m paddle_spmd_port" in part or "tools/" in part)
                                       for part in re.split(r"&&|\|\||[;|]", c))]


def test_no_page_runs_the_package_with_a_bare_python() -> None:
    """Long commands are not run by the test above, but are pasted all the same. Measurement pages
    keep the commands as they were run (other releases' venvs), and are left out."""
    bad = {p.relative_to(REPO).as_posix(): found for p in _pages() if "measurements" not in p.parts
           and (found := bare_package_runs([c for b in bash_blocks(p.read_text()) for c in b]))}
    assert not bad, f"commands naming another Python than .venv/bin/python: {bad}"
    page = ("```bash\npython3 -m venv .venv && .venv/bin/python -m paddle_spmd_port parity\n"
            "PYTHONPATH=$PWD python -m paddle_spmd_port parity --rules p_norm\n```\n")
    found = bare_package_runs(bash_blocks(page)[0])
    assert found == ["PYTHONPATH=$PWD python -m paddle_spmd_port parity --rules p_norm"]


@pytest.fixture(scope="module")
def venv_root() -> Path:
    root = Path(sys.executable).parent.parent
    if not (root / "bin" / "python").exists():
        pytest.skip(f"{sys.executable} is not inside an environment with bin/python")
    return root


def _workdir(tmp: Path, venv_root: Path) -> Path:
    """A directory with ``.venv`` as the set-up leaves it (the environment this test runs in), and the
    repository's tests/ and tools/, which commands name by relative path."""
    (tmp / ".venv").symlink_to(venv_root, target_is_directory=True)
    for name in ("tests", "tools"):
        (tmp / name).symlink_to(REPO / name, target_is_directory=True)
    return tmp


def run_pasted(command: str, cwd: Path) -> str | None:
    """Run one pasted line with bash as a reader would; None if it exited 0 without a traceback, else
    what went wrong."""
    env = dict(os.environ, PYTHONPATH=str(REPO))  # this checkout's package, whatever .venv has installed
    done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    if done.returncode == 0 and "Traceback" not in done.stderr and done.stdout.strip():
        return None
    return f"{command}\nexit {done.returncode}\nstdout: {done.stdout[-1500:]}\nstderr: {done.stderr[-1500:]}"


def test_a_failing_pasted_line_is_caught(tmp_path: Path) -> None:
    """The runner reports a non-zero exit, a traceback on exit 0 and a silent command."""
    assert run_pasted("echo ok", tmp_path) is None
    assert "exit 3" in (run_pasted("echo x; exit 3", tmp_path) or "")
    assert run_pasted("echo x; echo 'Traceback (most recent call last):' >&2", tmp_path)
    assert run_pasted("true", tmp_path)


@pytest.mark.native
@pytest.mark.parametrize("command", COMMANDS, ids=[c.split(" -m paddle_spmd_port ", 1)[-1][:60] for c in COMMANDS])
def test_a_use_command_runs_as_pasted(command: str, venv_root: Path, tmp_path: Path) -> None:
    problem = run_pasted(command, _workdir(tmp_path, venv_root))
    assert problem is None, problem


@pytest.mark.native
@pytest.mark.parametrize("page", sorted(RUNNABLE))
def test_a_pages_runnable_blocks_run_as_pasted(page: str, venv_root: Path, tmp_path: Path) -> None:
    work = _workdir(tmp_path, venv_root)
    for command in RUNNABLE[page]:
        problem = run_pasted(command, work)
        assert problem is None, f"{page}: {problem}"


#: Pages a link may name before they are written (none now: every linked page must exist).
PENDING: set[str] = set()


def broken_links(page: Path, text: str) -> list[str]:
    """Relative markdown links of ``page`` (``[t](path)`` or ``[t](path#anchor)``) whose file is missing."""
    bad = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        rel = path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else str(path)
        if not path.exists() and rel not in PENDING:
            bad.append(target)
    return bad


def test_every_relative_link_of_the_readme_and_docs_resolves() -> None:
    bad = {p.relative_to(REPO).as_posix(): b for p in _pages() if (b := broken_links(p, p.read_text()))}
    assert not bad, f"links to missing files: {bad}"


def test_the_link_check_finds_a_missing_file() -> None:
    page = REPO / "docs" / "x.md"
    text = "[a](parity.md) [b](nowhere.md#x) [c](https://example.org/y.md) [d](#here) [e](adding-an-op.md)"
    assert broken_links(page, text) == ["nowhere.md#x"]


def python_example(readme: str) -> tuple[str, list[str]]:
    """The first ``python`` block under ``## Use`` and the output its ``# `` comment lines promise."""
    section = readme.split("\n## Use\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block, "no python block under ## Use"
    code = block.group(1)
    return code, [ln[2:] for ln in code.splitlines() if ln.startswith("# ")]


def test_the_python_example_prints_what_it_says() -> None:
    code, promised = python_example((REPO / "README.md").read_text())
    assert promised, "the example says nothing about its output"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == promised


def test_the_python_example_check_can_fail() -> None:
    code, promised = python_example("# x\n## Use\n```python\nprint(1)\n# 2\n```\n## Next\n")
    assert promised == ["2"]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() != promised
