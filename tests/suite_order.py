"""The order the xdist workers are handed the test files in: longest first.

pytest-xdist's ``--dist loadfile`` hands a whole file to a worker, in the collection's order (with
``--no-loadscope-reorder``; its default orders files by test count, which puts a few long tests
last). Handed longest first, the last minute of a run is many short files spread over both
workers, not one long file on one of them while the other idles.

The seconds per file live in ``tests/durations.txt`` (``SECONDS PATH`` a line, a file's setup, call
and teardown times summed). A file missing from the list goes after the listed ones, the files with
more tests first; a missing or unreadable list leaves only that. Only the files' order changes: each
file's tests keep theirs, and no file's tests depend on another's. A run in one process (``-n 0``)
keeps the collection's order.

Regenerate the list from a run's durations::

    .venv/bin/python -m pytest -q --durations=0 > /tmp/durations.log
    .venv/bin/python -m tests.suite_order /tmp/durations.log > tests/durations.txt
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

LIST = Path(__file__).with_name("durations.txt")

#: A line of pytest's ``--durations`` table: ``12.34s call     tests/test_x.py::test_y[p]``.
DURATION_LINE = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s+(?:setup|call|teardown)\s+([^:\s]+)::")


def file_seconds(lines: Iterable[str]) -> dict[str, float]:
    """Seconds per test file from pytest's ``--durations`` lines (other lines are skipped)."""
    total: dict[str, float] = {}
    for line in lines:
        found = DURATION_LINE.match(line)
        if found:
            total[found[2]] = total.get(found[2], 0.0) + float(found[1])
    return total


def read_list(path: Path = LIST) -> dict[str, float]:
    """``tests/durations.txt`` as seconds per file; empty if it is missing or unreadable."""
    try:
        text = path.read_text()
    except OSError:
        return {}
    seconds: dict[str, float] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                seconds[parts[1]] = float(parts[0])
            except ValueError:
                continue
    return seconds


def file_order(files: Sequence[str], seconds: dict[str, float]) -> list[str]:
    """``files`` (each once, as collected), the listed ones longest first, then the rest with the most
    tests first (``files`` holds a file once per test); ties keep the collection's order."""
    tests = Counter(files)
    first_seen = {f: n for n, f in reversed(list(enumerate(files)))}
    return sorted(tests, key=lambda f: (f not in seconds, -seconds.get(f, 0.0), -tests[f], first_seen[f]))


def ordered(paths: Sequence[str], seconds: dict[str, float]) -> list[int]:
    """Positions of ``paths`` (each test's file, in collection order) sorted by :func:`file_order`,
    each file's tests kept together in their own order."""
    rank = {f: n for n, f in enumerate(file_order(paths, seconds))}
    return sorted(range(len(paths)), key=lambda i: (rank[paths[i]], i))


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.suite_order DURATIONS_LOG  (pytest --durations=0 output)", file=sys.stderr)
        return 2
    seconds = file_seconds(Path(argv[0]).read_text().splitlines())
    for path, secs in sorted(seconds.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"{secs:.1f} {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
