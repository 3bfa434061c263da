"""Output paths, checked before any work starts and without creating anything
(:func:`check_output_dir`, :func:`check_output_file`), and one report per selection: a run never
silently replaces the report of another selection (:func:`refuse_other_selection`,
``--replace-report``)."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .exits import UsageError


def _nearest_existing(path: Path) -> Path:
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    return probe


def _check_creatable_below(existing: Path, arg: str, target: Path) -> None:
    if not existing.is_dir():
        raise UsageError(arg, f"{target}: {existing} is a file, not a directory", "give a path under a directory")
    try:  # os.access says yes to root everywhere; a real (immediately removed) file is the honest test
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        raise UsageError(arg, f"{target}: cannot write in {existing} ({exc.strerror or exc})",
                         "give a writable directory") from None


def _non_empty(path: str | Path, arg: str) -> Path:
    if not str(path).strip():
        raise UsageError(arg, "an empty path is not allowed", "give a path")
    return Path(path)


def check_output_dir(path: str | Path, arg: str) -> Path:
    """``path`` as a directory the run can write its report into; checked before any work starts
    and without creating anything. Raises :class:`UsageError` naming ``arg``."""
    target = _non_empty(path, arg)
    if target.exists() and not target.is_dir():
        raise UsageError(arg, f"{target} is a file", "give a directory (it is created if missing)")
    _check_creatable_below(_nearest_existing(target), arg, target)
    return target


def check_output_file(path: str | Path, arg: str) -> Path:
    """``path`` as a file the run can (over)write; checked before any work starts."""
    target = _non_empty(path, arg)
    if target.is_dir():
        raise UsageError(arg, f"{target} is a directory", "give a file path")
    if target.exists() and not os.access(target, os.W_OK):
        raise UsageError(arg, f"{target} is not writable", "give a writable file path")
    _check_creatable_below(_nearest_existing(target.parent), arg, target)
    return target


def add_replace_report_argument(parser: argparse.ArgumentParser) -> None:
    """``--replace-report``: let a run replace a report of another selection (see :func:`refuse_other_selection`)."""
    parser.add_argument("--replace-report", action="store_true",
                        help="let this run replace a report of another selection in --report-dir")


def refuse_other_selection(report_json: Path, selection: dict[str, Any], replace: bool = False,
                           arg: str = "--report-dir") -> None:
    """Refuse (exit 2, before any work) to overwrite ``report_json`` when it holds the report of
    another selection -- a narrower run must never silently replace a broader one (parity, launch
    and oracle alike). ``selection`` has ``slug`` (the key compared) and ``describe`` (a sentence);
    the report keeps it under ``selection`` (or ``meta.selection``). A report without one, or one
    that cannot be read, counts as another selection. ``replace`` (``--replace-report``) allows it."""
    if replace or not report_json.is_file():
        return
    try:
        data = json.loads(report_json.read_text())
        old = data.get("selection") or (data.get("meta") or {}).get("selection") or {}
        if not isinstance(old, dict):
            old = {}
    except (OSError, ValueError, AttributeError):
        old = {}
    if old.get("slug") != selection["slug"]:
        what = old.get("describe") or "a run of unknown selection"
        raise UsageError(arg, f"{report_json} holds the report of another run ({what}); this run: "
                         f"{selection['describe']}",
                         f"choose another {arg}, or pass --replace-report to replace it")
