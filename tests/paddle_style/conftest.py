"""The files here are Paddle-style unittest files (they import ``paddle`` the way Paddle's own
SPMD rule tests do). A plain ``pytest tests/`` does not collect them: tests/test_compat.py runs
them through ``compat-test`` under both backends. To run them directly, pick a backend:

    pytest -p paddle_spmd_port.compat.pytest_plugin --spmd-backend=port   tests/paddle_style
    pytest -p paddle_spmd_port.compat.pytest_plugin --spmd-backend=native tests/paddle_style
"""

from __future__ import annotations


def pytest_ignore_collect(collection_path, config):
    if config.getoption("spmd_backend", default=None) is None and collection_path.suffix == ".py":
        return True
    return None
