from __future__ import annotations

import importlib.util

import pytest

from tests.suite_order import ordered, read_list

# Shared helpers live in tests/helpers.py; tests import them from there, never from this file.

HAVE_PADDLE = importlib.util.find_spec("paddle") is not None


def pytest_collection_modifyitems(config, items):
    if hasattr(config, "workerinput"):  # an xdist worker: the files longest first (tests/suite_order.py)
        items[:] = [items[i] for i in ordered([item.nodeid.split("::", 1)[0] for item in items], read_list())]
    if HAVE_PADDLE:
        return
    skip = pytest.mark.skip(reason="paddlepaddle is not installed (pip install -e .[cpu])")
    for item in items:
        if "native" in item.keywords or "multiproc" in item.keywords:
            item.add_marker(skip)
