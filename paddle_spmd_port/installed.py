"""The installed Paddle, found from its files without importing it (importing Paddle takes seconds,
and a broken install must not break ``--version`` or release detection).

    paddle_dir()       the ``paddle`` package folder, or None
    paddle_version()   {"version": ..., "commit": ...} from ``paddle/version/__init__.py``:
                       the values of ``paddle.__version__`` and ``paddle.version.commit``;
                       version "not installed" when there is no Paddle
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

NOT_INSTALLED = "not installed"


def paddle_dir() -> Path | None:
    """The installed ``paddle`` package folder, found without importing Paddle."""
    try:
        spec = importlib.util.find_spec("paddle")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def paddle_version() -> dict[str, str]:
    """Version and commit, read from ``paddle/version/__init__.py``."""
    root = paddle_dir()
    if root is None:
        return {"version": NOT_INSTALLED, "commit": ""}
    try:
        text = (root / "version" / "__init__.py").read_text()
    except OSError:
        return {"version": "unknown (no paddle/version/__init__.py)", "commit": ""}
    found = {key: re.search(rf"^{key}\s*=\s*['\"]([^'\"]*)['\"]", text, re.M) for key in ("full_version", "commit")}
    version, commit = found["full_version"], found["commit"]
    return {"version": version.group(1) if version else "?", "commit": commit.group(1) if commit else "?"}
