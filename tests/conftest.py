from __future__ import annotations

import importlib.util
import os

import pytest

from tests.suite_order import ordered, read_list

# Shared helpers live in tests/helpers.py; tests import them from there, never from this file.

HAVE_PADDLE = importlib.util.find_spec("paddle") is not None


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (pyproject.toml's addopts): one worker more than the cores this process may use. The
    suite spends part of its time waiting on child processes (Paddle's import in a native worker, a
    launch's ranks, the timeouts the fail-closed tests wait out) with a core idle; a third worker on
    two cores fills those waits (docs/measurements/2026-12-07-suite-workers.md)."""
    return len(os.sched_getaffinity(0)) + 1 if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1) + 1


def pytest_collection_modifyitems(config, items):
    if hasattr(config, "workerinput"):  # an xdist worker: the files longest first (tests/suite_order.py)
        items[:] = [items[i] for i in ordered([item.nodeid.split("::", 1)[0] for item in items], read_list())]
    if HAVE_PADDLE:
        return
    skip = pytest.mark.skip(reason="paddlepaddle is not installed (pip install -e .[cpu])")
    for item in items:
        if "native" in item.keywords or "multiproc" in item.keywords:
            item.add_marker(skip)
