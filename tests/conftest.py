from __future__ import annotations

import functools
import importlib.util

import pytest

HAVE_PADDLE = importlib.util.find_spec("paddle") is not None


def pytest_collection_modifyitems(config, items):
    if HAVE_PADDLE:
        return
    skip = pytest.mark.skip(reason="paddlepaddle is not installed (pip install -e .[cpu])")
    for item in items:
        if "native" in item.keywords or "multiproc" in item.keywords:
            item.add_marker(skip)


@functools.cache
def paddle_profile():
    """The release profile (paddle_spmd_port.parity.releases) of the installed Paddle, or None without Paddle."""
    if not HAVE_PADDLE:
        return None
    from paddle_spmd_port.native.compiled import paddle_version
    from paddle_spmd_port.parity.releases import detect_profile

    found = paddle_version()  # read from paddle/version/__init__.py, without importing paddle
    return detect_profile(found["version"], found["commit"])


def skip_if_rule_missing(rule: str) -> None:
    """Skip when the installed release's profile lists ``rule`` as missing from its registry or as
    known to differ (the profile's reason goes into the skip message)."""
    profile = paddle_profile()
    if profile is None:
        return
    if rule in profile.registry_missing:
        pytest.skip(f"Paddle {profile.detected_version} (profile {profile.version}) registers no {rule!r} SPMD rule")
    diffs = profile.differences_for(rule)
    if diffs:
        pytest.skip("; ".join(f"known difference for {profile.version}: {d.why}" for d in diffs))


def known_difference(case, port, native) -> str | None:
    """``"known difference for X.Y.Z: <why>"`` when the installed release's profile explains how
    ``native`` differs from ``port`` for ``case`` (None on 3.3.1, without Paddle, or when they agree)."""
    profile = paddle_profile()
    return None if profile is None else profile.explain(case, port, native)
