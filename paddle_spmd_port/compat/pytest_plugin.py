"""pytest option ``--spmd-backend=port|native`` for Paddle-style SPMD rule tests.

    pytest -p paddle_spmd_port.compat.pytest_plugin --spmd-backend=port   path/to/test_<op>_rule.py
    pytest -p paddle_spmd_port.compat.pytest_plugin --spmd-backend=native path/to/test_<op>_rule.py

``port`` installs the compat API before any test module is imported (see
:mod:`paddle_spmd_port.compat.swap`: names swapped inside Paddle when it is installed, else the
compat ``paddle`` shim; ``PADDLE_SPMD_COMPAT_SHIM=1`` forces the shim). The swap holds for the
whole pytest process, so give this option only Paddle-style rule test paths, not a suite that
also uses real Paddle. ``native`` changes nothing and fails early when Paddle is missing.
Without the option the plugin does nothing.
"""

from __future__ import annotations

import pytest

from .swap import install_port_backend, paddle_installed

OPTION = "spmd_backend"
_DESCRIPTION = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("spmd", "paddle_spmd_port compat")
    group.addoption("--spmd-backend", dest=OPTION, choices=("port", "native"), default=None,
                    help="run Paddle-style SPMD rule tests against the port (compat API) or native Paddle")


def pytest_configure(config: pytest.Config) -> None:
    backend = config.getoption(OPTION)
    if backend == "port":
        config.stash[_DESCRIPTION] = install_port_backend()
    elif backend == "native":
        if not paddle_installed():
            raise pytest.UsageError("--spmd-backend=native needs paddlepaddle installed")
        config.stash[_DESCRIPTION] = "native Paddle"


def pytest_report_header(config: pytest.Config) -> str | None:
    description = config.stash.get(_DESCRIPTION, None)
    return None if description is None else f"spmd-backend: {config.getoption(OPTION)} ({description})"

