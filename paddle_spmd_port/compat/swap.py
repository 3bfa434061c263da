"""Point Paddle's SPMD rule-test API at this package, inside the current process.

Two ways, chosen by :func:`install_port_backend`:

* **swap** (Paddle installed): import Paddle, then replace these names with the compat ones.
  Test files import them afterwards, so they bind to the compat objects::

      paddle.base.core (= paddle.framework.core)        get_phi_spmd_rule, contains_spmd_rule,
                                                        DistTensorSpec, TensorDistAttr, ProcessMesh (the core one),
                                                        SpmdRule
      paddle.distributed.auto_parallel.static.dist_attribute   DistTensorSpec, TensorDistAttr
      paddle.distributed.auto_parallel (= fleet.auto)   ProcessMesh
      paddle.distributed.auto_parallel.process_mesh     ProcessMesh (where Paddle defines it)
      paddle.distributed                                ProcessMesh

* **shim** (Paddle missing, or forced with ``PADDLE_SPMD_COMPAT_SHIM=1``): write a small
  ``paddle`` package tree into a temporary directory and put it first on ``sys.path``. Every
  name it exposes is the compat implementation itself; nothing else of Paddle exists there, and
  asking for anything else raises ImportError / AttributeError naming the shim (see
  :data:`SHIM_MODULES`).

Both leak into everything else the process imports afterwards, so run them in a process of
their own (``compat-test`` does) or only on Paddle-style rule tests (the pytest plugin).
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

SHIM_ENV = "PADDLE_SPMD_COMPAT_SHIM"

SWAPS: tuple[tuple[str, str, str], ...] = (
    ("paddle.base.core", "get_phi_spmd_rule", "get_phi_spmd_rule"),
    ("paddle.base.core", "contains_spmd_rule", "contains_spmd_rule"),
    # the same classes under core's names, so core.TensorDistAttr() builds a compat attr and a rule's
    # answer is an instance of core.ProcessMesh, as natively
    ("paddle.base.core", "DistTensorSpec", "DistTensorSpec"),
    ("paddle.base.core", "TensorDistAttr", "TensorDistAttr"),
    ("paddle.base.core", "ProcessMesh", "CoreProcessMesh"),
    ("paddle.base.core", "SpmdRule", "SpmdRule"),
    ("paddle.distributed.auto_parallel.static.dist_attribute", "DistTensorSpec", "DistTensorSpec"),
    ("paddle.distributed.auto_parallel.static.dist_attribute", "TensorDistAttr", "TensorDistAttr"),
    ("paddle.distributed.auto_parallel", "ProcessMesh", "ProcessMesh"),
    ("paddle.distributed.auto_parallel.process_mesh", "ProcessMesh", "ProcessMesh"),
    ("paddle.distributed", "ProcessMesh", "ProcessMesh"),
)
"""(module, attribute, compat name) replaced by the swap."""

_MISSING = '''

def __getattr__(name):
    raise AttributeError(
        f"{__name__}.{name} is not part of the paddle_spmd_port compat shim, which provides only the "
        "SPMD rule-test surface (see paddle_spmd_port.compat.swap.SHIM_MODULES); install paddlepaddle "
        "to run tests that need more")
'''

SHIM_MODULES: dict[str, str] = {
    "paddle/__init__.py": (
        '"""paddle_spmd_port compat shim: not Paddle, only its SPMD rule-test API backed by the port."""\n'
        '__version__ = "0.0.0+paddle_spmd_port.compat.shim"\n'
        "COMPAT_SHIM = True\n"
        "from . import base, distributed, framework  # noqa: E402\n"),
    "paddle/base/__init__.py": "from . import core\n",
    "paddle/base/core.py": (
        "from paddle_spmd_port.compat import (CoreProcessMesh as ProcessMesh, DistTensorSpec, SpmdRule,\n"
        "                                     TensorDistAttr, contains_spmd_rule, get_phi_spmd_rule)\n"),
    "paddle/framework/__init__.py": "from paddle.base import core\n",
    "paddle/distributed/__init__.py": (
        "from paddle_spmd_port.compat import ProcessMesh\n"
        "from . import auto_parallel, fleet\n"),
    "paddle/distributed/fleet/__init__.py": "from paddle.distributed import auto_parallel as auto\n",
    "paddle/distributed/auto_parallel/__init__.py": (
        "from paddle_spmd_port.compat import ProcessMesh\n"
        "from . import process_mesh, static\n"),
    "paddle/distributed/auto_parallel/process_mesh.py": "from paddle_spmd_port.compat import ProcessMesh\n",
    "paddle/distributed/auto_parallel/static/__init__.py": "from . import dist_attribute\n",
    "paddle/distributed/auto_parallel/static/dist_attribute.py": (
        "from paddle_spmd_port.compat import DistTensorSpec, TensorDistAttr\n"),
}
"""The shim's files: exactly the names Paddle's SPMD rule tests import, and nothing else."""


def paddle_installed() -> bool:
    return importlib.util.find_spec("paddle") is not None


def write_shim(root: str | os.PathLike[str]) -> Path:
    """Write the shim's ``paddle`` tree under ``root`` and return ``root``."""
    base = Path(root)
    for rel, source in SHIM_MODULES.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source + _MISSING, encoding="utf-8")
    return base


def install_shim() -> str:
    if "paddle" in sys.modules:
        raise RuntimeError("Paddle is already imported in this process; the compat shim must come first")
    root = tempfile.mkdtemp(prefix="paddle_spmd_compat_shim_")
    atexit.register(shutil.rmtree, root, True)
    sys.path.insert(0, str(write_shim(root)))
    importlib.invalidate_caches()
    importlib.import_module("paddle")
    return f"compat shim at {root} (no Paddle)"


def install_swap() -> str:
    import warnings

    from .. import compat

    warnings.filterwarnings("ignore")
    for module_name, attribute, compat_name in SWAPS:
        module = importlib.import_module(module_name)
        if not hasattr(module, attribute):
            raise RuntimeError(f"{module_name} has no {attribute}; this Paddle's API differs from 3.3.1")
        setattr(module, attribute, getattr(compat, compat_name))
    paddle = sys.modules["paddle"]
    return f"paddle {paddle.__version__} with compat swapped in"


def install_port_backend(force_shim: bool | None = None) -> str:
    """Swap (Paddle installed) or shim (not installed, or forced); returns a one-line description."""
    if force_shim is None:
        force_shim = os.environ.get(SHIM_ENV, "") not in ("", "0")
    if force_shim or not paddle_installed():
        return install_shim()
    return install_swap()
