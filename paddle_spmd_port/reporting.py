"""Report writing shared by every command: markdown tables, and files that are whole or absent.

* :func:`markdown_table` -- the one table renderer (``parity.md``, ``oracle.md``, the launch report).
* :func:`write_atomic` -- text or bytes written to a temp file next to the target (a dot file) and
  renamed over it, so a reader, an interrupt or a crash never sees half a file; the temp file is
  removed whatever happens.
* :func:`write_files` -- several files into one directory, each atomically.
* :func:`write_json` -- ``json.dumps(data, indent=1)``, atomically (no trailing newline), written as
  it is encoded (never the whole text in memory).
* :data:`REPRO_PYTHON` -- the interpreter every printed repro line starts with.

Every file written here honours the umask (0644 under umask 022), as ``open()`` would: a report is
for others to read (a shared machine, a CI artifact). ``tempfile.mkstemp`` makes 0600 files, and
renaming one over the target kept that mode for every report; the temp file is now made by
:func:`_create_temp` with mode 0666 minus the umask.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

#: The interpreter a repro line names: the one running this command (quoted for a shell), so the
#: line pasted into a fresh shell, one that has not activated the venv, runs where Paddle and this
#: package are installed; a bare ``python`` there is another interpreter (no Paddle: exit 3).
REPRO_PYTHON = shlex.quote(sys.executable) if sys.executable else "python"


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


_UMASK_LOCK = threading.Lock()


def mode_for(mode: int) -> int:
    """``mode`` minus the process's umask (what ``open()``/``mkdir()`` would give): for a file or
    directory whose mode has to be set after the fact."""
    with _UMASK_LOCK:  # reading the umask means setting it: no other thread may see the 0 meanwhile
        umask = os.umask(0o077)
        os.umask(umask)
    return mode & ~umask


def _create_temp(target: Path) -> tuple[int, str]:
    """A new, empty temp file next to ``target`` (a dot file), created with mode 0666 so that the
    umask applies (as for ``open()``); its file descriptor and path."""
    for _ in range(100):
        tmp = str(target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temp file name next to {target}")


def write_atomic(path: str | Path, data: str | bytes | Iterable[str]) -> Path:
    """Write ``data`` (text as UTF-8; or text in pieces, written as they come) to ``path`` through a
    temp file in the same directory and a rename: the file is the old one or the new one, never part
    of either; its mode honours the umask. Returns the path."""
    target = Path(path)
    fd, tmp = _create_temp(target)
    try:
        with os.fdopen(fd, "wb") as fh:
            if isinstance(data, (str, bytes)):
                fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            else:
                _write_pieces(fh, data)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return target


def _write_pieces(fh: IO[bytes], pieces: Iterable[str]) -> None:
    """``pieces`` joined into ``fh`` about :data:`_PIECES_JOINED` characters at a time: never the whole
    text in memory (a sweep's report is megabytes of JSON, made of millions of small pieces, each an
    object: joined at once they take several times the text's size at the run's peak)."""
    batch: list[str] = []
    size = 0
    for piece in pieces:
        batch.append(piece)
        size += len(piece)
        if size >= _PIECES_JOINED:
            fh.write("".join(batch).encode("utf-8"))
            batch.clear()
            size = 0
    fh.write("".join(batch).encode("utf-8"))


_PIECES_JOINED = 1 << 14


def write_files(directory: str | Path, files: Mapping[str, str | bytes]) -> Path:
    """Each of ``files`` (name -> content) written atomically into ``directory`` (made if missing)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        write_atomic(out / name, data)
    return out


def write_json(path: str | Path, data: Any) -> Path:
    """``data`` as indented JSON (``indent=1``, no trailing newline: ``json.dumps(data, indent=1)``),
    written atomically as it is encoded."""
    return write_atomic(path, json.JSONEncoder(indent=1).iterencode(data))


__all__ = ["markdown_table", "mode_for", "write_atomic", "write_files", "write_json"]
