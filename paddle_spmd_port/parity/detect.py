"""Which release profile (:mod:`.releases`) applies to a Paddle build.

:func:`detect_release` picks a profile for a version string; :func:`installed_release` reads the
installed Paddle's version and commit (from ``paddle/version/__init__.py``, without importing
Paddle) and picks its profile. How a release is picked::

    paddle.__version__   profile   flags
    3.0.0                3.0.0     exact
    3.2.5 (unmeasured)   3.2.2     nearest older measured release (is_exact=False)
    3.1.0rc1             3.1.0     a pre-release of a measured release takes that release's (is_exact=False)
    3.4.0, 0.0.0 (dev)   3.3.1     is_newer_than_known: every difference is a possible regression
    2.5.2                2.6.2     is_older_than_known
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from ..installed import NOT_INSTALLED, paddle_version
from .releases import RELEASES, ReleaseProfile

_VERSION = re.compile(r"^\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:\.(\d+))?[.-]?(?:(a|b|rc|dev|post)\.?(\d*))?")
_STAGE = {"dev": -4, "a": -3, "b": -2, "rc": -1, None: 0, "post": 1}


def version_key(version: str) -> tuple[int, ...] | None:
    """A sortable key for a release string (``3.1.0rc1`` < ``3.1.0`` < ``3.1.0.post1``), or None
    when it does not start with a number."""
    m = _VERSION.match(version)
    if not m:
        return None
    nums = tuple(int(g or 0) for g in m.group(1, 2, 3, 4))
    return (*nums, _STAGE[m.group(5)], int(m.group(6) or 0))


def is_develop_build(version: str) -> bool:
    """Paddle's builds from the develop branch report ``0.0.0``."""
    key = version_key(version)
    return key is not None and key[:4] == (0, 0, 0, 0)


def detect_release(version: str, commit: str = "") -> ReleaseProfile:
    """The release profile to compare Paddle ``version`` (``paddle.__version__``, commit
    ``paddle.version.commit``) with; see the module docstring for the flags."""
    ordered = sorted(RELEASES, key=lambda p: version_key(p.version) or ())
    newest, oldest = ordered[-1], ordered[0]
    found: dict[str, Any] = dict(detected_version=version, detected_commit=commit)  # (replace() checks the names)
    key = version_key(version)
    if key is None or is_develop_build(version) or key > (version_key(newest.version) or ()):
        return replace(newest, **found, is_exact=False, is_newer_than_known=True, commit_matches=False)
    if key < (version_key(oldest.version) or ()):
        return replace(oldest, **found, is_exact=False, is_older_than_known=True, commit_matches=False)
    exact = next((p for p in ordered if p.version == version), None)
    if exact is not None:
        return replace(exact, **found, commit_matches=not commit or commit.startswith(exact.commit))
    # a pre-release (dev, a, b, rc) of a measured release is nearer to it than to the release before
    release = next((p for p in ordered if key[4] < 0 and (version_key(p.version) or ())[:4] == key[:4]), None)
    if release is not None:
        return replace(release, **found, is_exact=False, is_prerelease=True, commit_matches=False)
    older = [p for p in ordered if (version_key(p.version) or ()) <= key]
    return replace(older[-1], **found, is_exact=False, commit_matches=False)


def installed_release() -> ReleaseProfile | None:
    """The release profile of the installed Paddle, or None when Paddle is not installed.
    Reads ``paddle/version/__init__.py``; Paddle itself is not imported."""
    found = paddle_version()
    if found["version"] == NOT_INSTALLED:
        return None
    return detect_release(found["version"], found["commit"])


__all__ = ["detect_release", "installed_release", "is_develop_build", "version_key"]
