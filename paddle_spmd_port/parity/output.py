"""Write what a parity run found: the report (``parity.json``, ``parity.md``, ``parity.html``,
``--junit``) and a baseline diff (``baseline-cases.jsonl.gz``, ``baseline.json``, ``baseline.md``,
``baseline.html``). The report and the diff are data and render their own text; the pages render
both; this module, above all three, is the only one that writes them, so no data module imports a
page module."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..reporting import write_atomic, write_json
from .baseline import CASES_FILE as DIFF_CASES_FILE
from .baseline import Diff
from .pages import baseline_page, parity_page
from .report import ParityReport


def write_parity_report(report: ParityReport, directory: str | Path, junit: str | Path | None = None) -> Path:
    """The report's files in ``directory`` (each written atomically; the per-case file, written as
    cases are tallied, flushed first), and the JUnit file when asked; returns the directory."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    report.flush_cases_file()
    write_json(out / "parity.json", report.to_json())
    write_atomic(out / "parity.md", report.markdown())
    write_atomic(out / "parity.html", parity_page(report))
    if junit:
        Path(junit).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(Path(junit), report.junit())
    return out


def write_diff(diff: Diff, out: Path, new_paddle: dict[str, Any], selection: dict[str, Any],
               interrupted: str = "") -> None:
    """The baseline diff's files in ``out``; ``interrupted`` (a signal name) marks them partial."""
    out.mkdir(parents=True, exist_ok=True)
    diff.write_cases(out / DIFF_CASES_FILE)
    write_json(out / "baseline.json", diff.to_json(new_paddle, selection, interrupted))
    write_atomic(out / "baseline.md", diff.markdown(new_paddle, selection, interrupted))
    write_atomic(out / "baseline.html", baseline_page(diff, new_paddle, selection, interrupted))


__all__ = ["write_diff", "write_parity_report"]
