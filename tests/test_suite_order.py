"""The xdist workers are handed the test files longest first (tests/suite_order.py, tests/conftest.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.cli_checks import REPO
from tests.suite_order import LIST, file_order, file_seconds, main, ordered, read_list

LOG = """\
============================= slowest durations =============================
38.88s call     tests/test_b.py::test_one[docs/parity.md]
30.45s setup    tests/test_a.py::test_two
 0.55s teardown tests/test_a.py::test_two
 2.00s call     tests/test_b.py::test_three
(3 durations < 0.005s hidden.  Use -vv to show these durations.)
"""


def test_durations_are_summed_per_file() -> None:
    assert file_seconds(LOG.splitlines()) == {"tests/test_b.py": 40.88, "tests/test_a.py": 31.0}


def test_listed_files_go_longest_first_then_the_rest_by_test_count() -> None:
    paths = ["t/a.py", "t/b.py", "t/b.py", "t/c.py", "t/d.py", "t/d.py", "t/d.py", "t/e.py"]
    seconds = {"t/c.py": 1.0, "t/e.py": 9.0, "t/gone.py": 99.0}
    assert file_order(paths, seconds) == ["t/e.py", "t/c.py", "t/d.py", "t/b.py", "t/a.py"]
    # each file's tests stay together and in their own order
    assert ordered(paths, seconds) == [7, 3, 4, 5, 6, 1, 2, 0]
    # an empty list: the files with more tests first, ties in the collection's order
    assert file_order(paths, {}) == ["t/d.py", "t/b.py", "t/a.py", "t/c.py", "t/e.py"]


def test_a_missing_or_broken_list_orders_by_test_count_alone(tmp_path: Path) -> None:
    assert read_list(tmp_path / "none.txt") == {}
    broken = tmp_path / "broken.txt"
    broken.write_text("12.5 tests/test_x.py\nnot a line\nx tests/test_y.py\n3 tests/test_z.py extra\n")
    assert read_list(broken) == {"tests/test_x.py": 12.5}


def test_the_list_names_test_files_of_this_repository() -> None:
    listed = read_list()
    assert listed, f"{LIST} is missing or empty"
    assert all((REPO / path).is_file() and re.fullmatch(r"tests/test_\w+\.py", path) for path in listed), \
        [p for p in listed if not (REPO / p).is_file()]


def test_the_list_is_written_from_a_durations_log(tmp_path: Path, capsys) -> None:
    log = tmp_path / "d.log"
    log.write_text(LOG)
    assert main([str(log)]) == 0
    assert capsys.readouterr().out == "40.9 tests/test_b.py\n31.0 tests/test_a.py\n"
    assert main([]) == 2


def test_an_xdist_worker_is_handed_the_listed_long_file_first(tmp_path: Path) -> None:
    """Wired through conftest.py and pyproject's addopts (copied as they are into a scratch project):
    test_b.py, listed, goes before test_a.py, unlisted, though collected first and holding more tests
    (xdist's own reorder, or none, would hand test_a.py first)."""
    (tmp_path / "tests").mkdir()
    for name in ("__init__.py", "conftest.py", "suite_order.py"):
        shutil.copy(REPO / "tests" / name, tmp_path / "tests" / name)
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "tests" / "durations.txt").write_text("5.0 tests/test_b.py\n")
    (tmp_path / "tests" / "test_a.py").write_text("".join(f"def test_a{n}():\n    pass\n" for n in range(3)))
    (tmp_path / "tests" / "test_b.py").write_text("def test_b():\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "1", "-v", "-p", "no:cacheprovider"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    ran = re.findall(r"PASSED (tests/\w+\.py)::", done.stdout)
    assert ran == ["tests/test_b.py"] + ["tests/test_a.py"] * 3, done.stdout[-2000:]
