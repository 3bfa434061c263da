"""Report writing shared by every command: markdown tables, and files that are whole or absent.

* :func:`markdown_table` -- the one table renderer (``parity.md``, ``oracle.md``, the launch report).
* :func:`write_atomic` -- text or bytes written to a temp file next to the target (a dot file) and
  renamed over it, so a reader, an interrupt or a crash never sees half a file; the temp file is
  removed whatever happens.
* :func:`write_files` -- several files into one directory, each atomically.
* :func:`write_json` -- ``json.dumps(data, indent=1)``, atomically (no trailing newline).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any


def markdown_table(header: Sequence[object], rows: Iterable[Sequence[object]], *, aligned: bool = False) -> str:
    """A markdown table, its lines joined by newlines (no trailing newline).

    Compact (the default): ``| a | b |`` under a ``|---|---|`` rule; an empty cell is ``| |``.
    ``aligned=True``: every column padded to its widest cell, cells that start with a digit
    right-aligned, the rule as wide as the column -- readable as plain text on a console."""
    head = [str(h) for h in header]
    body = [[str(c) for c in row] for row in rows]
    if not aligned:
        def line(cells: Sequence[str]) -> str:
            return "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"

        return "\n".join([line(head), "|" + "---|" * len(head), *(line(r) for r in body)])
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(head)]
    top = "| " + " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    lines = ["| " + " | ".join(c.rjust(w) if c[:1].isdigit() else c.ljust(w) for c, w in zip(r, widths, strict=True))
             + " |" for r in body]
    return "\n".join([top, rule, *lines])


def write_atomic(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` through a temp file in the same directory and a
    rename: the file is the old one or the new one, never part of either. Returns the path."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return target


def write_files(directory: str | Path, files: Mapping[str, str | bytes]) -> Path:
    """Each of ``files`` (name -> content) written atomically into ``directory`` (made if missing)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        write_atomic(out / name, data)
    return out


def write_json(path: str | Path, data: Any) -> Path:
    """``data`` as indented JSON (``indent=1``, no trailing newline), written atomically."""
    return write_atomic(path, json.dumps(data, indent=1))


__all__ = ["markdown_table", "write_atomic", "write_files", "write_json"]
