"""Parity report: per-rule tallies, their markdown / JSON / JUnit renderings, repro snippets."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from .cases.case import Case
from .compare import CLASSES, Comparison
from .outcome import Outcome

EXAMPLES_PER_CLASS = 5
MISMATCHES_KEPT = 200


@dataclass
class RuleTally:
    rule: str
    backend: str
    cases: int = 0
    cells: int = 0
    matching_cells: int = 0
    verdicts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLASSES, 0))
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    native_seconds: float = 0.0
    port_seconds: float = 0.0
    invalid_native: dict[str, int] = field(default_factory=dict)
    """For port-rejects-invalid cases: what Paddle did instead (result = garbage accepted, crash, error)."""

    def add(self, case: Case, port: Outcome, native: Outcome, cmp: Comparison) -> None:
        self.cases += 1
        self.cells += cmp.cells
        self.matching_cells += cmp.matching_cells
        self.verdicts[cmp.verdict] += 1
        if cmp.verdict == "port-rejects-invalid":
            self.invalid_native[native.status] = self.invalid_native.get(native.status, 0) + 1
        if cmp.verdict == "match" or cmp.verdict == "both-raise-same":
            return
        kept = self.examples.setdefault(cmp.verdict, [])
        limit = MISMATCHES_KEPT if cmp.verdict == "mismatch" else EXAMPLES_PER_CLASS
        if len(kept) < limit:
            kept.append({"case": case.to_json(), "describe": case.describe(), "port": str(port),
                         "native": str(native), "diffs": [str(d) for d in cmp.diffs], "note": cmp.note,
                         "repro": one_line_repro(case)})

    @property
    def mismatches(self) -> int:
        return self.verdicts["mismatch"]

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "backend": self.backend, "cases": self.cases, "cells": self.cells,
                "matching_cells": self.matching_cells, "verdicts": self.verdicts, "examples": self.examples,
                "invalid_native": self.invalid_native,
                "native_seconds": round(self.native_seconds, 3), "port_seconds": round(self.port_seconds, 3)}


def one_line_repro(case: Case) -> str:
    return "python -m paddle_spmd_port infer --case-json '" + json.dumps(case.to_json(), separators=(",", ":")) + "'"


def repro_snippet(case: Case) -> str:
    """A standalone Python snippet that runs ``case`` on Paddle and prints the raw answer."""
    payload = json.dumps(case.to_json(), separators=(",", ":"))
    return "\n".join([
        "# needs: pip install paddlepaddle==3.3.1 and this package (for the case codec and backends)",
        "import json",
        "from paddle_spmd_port.cases.case import Case",
        "from paddle_spmd_port.outcome import run_port",
        f"case = Case.from_json(json.loads({payload!r}))",
        "try:",
        "    from paddle_spmd_port.native import registry as backend",
        "    if case.rule not in backend.ROUTES:",
        "        from paddle_spmd_port.native import pir as backend",
        "except ImportError as exc:",
        "    raise SystemExit(f'Paddle is needed for the native side: {exc}')",
        "print('case  :', case.describe())",
        "print('paddle:', backend.run(case))",
        "print('port  :', run_port(case))",
    ])


@dataclass
class ParityReport:
    tallies: dict[str, RuleTally] = field(default_factory=dict)
    paddle: dict[str, str] = field(default_factory=dict)
    started: float = field(default_factory=time.time)
    finished: float | None = None
    complete: bool = False
    notes: list[str] = field(default_factory=list)
    profile: dict[str, Any] = field(default_factory=dict)
    """The Paddle release profile applied (versions.VersionProfile.to_json())."""

    @property
    def total_cells(self) -> int:
        return sum(t.cells for t in self.tallies.values())

    @property
    def total_mismatches(self) -> int:
        return sum(t.mismatches for t in self.tallies.values())

    def table(self) -> str:
        head = ("| rule | backend | cases | cells | matching cells | match | both raise | port rejects invalid "
                "| native crash | unreachable | known difference | mismatch |")
        rows = [head, "|" + "---|" * 12]
        for t in self.tallies.values():
            v = t.verdicts
            rows.append(f"| {t.rule} | {t.backend} | {t.cases:,} | {t.cells:,} | {t.matching_cells:,} | "
                        f"{v['match']:,} | {v['both-raise-same']:,} | {v['port-rejects-invalid']:,} | "
                        f"{v['native-crash']:,} | {v['unreachable']:,} | {v['known-difference']:,} | "
                        f"{v['mismatch']:,} |")
        total_cases = sum(t.cases for t in self.tallies.values())
        rows.append(f"| **total** | | {total_cases:,} | {self.total_cells:,} | "
                    f"{sum(t.matching_cells for t in self.tallies.values()):,} | | | | | | | "
                    f"**{self.total_mismatches:,}** |")
        return "\n".join(rows)

    def markdown(self) -> str:
        wall = (self.finished or time.time()) - self.started
        lines = [
            "# Parity report: paddle_spmd_port vs Paddle",
            "",
            f"Paddle {self.paddle.get('version', '?')} (commit {self.paddle.get('commit', '?')[:12]}); "
            f"wall time {wall:.1f} s; {'complete' if self.complete else '**INCOMPLETE (partial report)**'}.",
            "",
            *([f"Profile: {self.profile['headline']}.", ""] if self.profile else []),
            self.table(),
            "",
            "Classes: *match* = every cell equal; *both raise* = same error family and message; *port rejects "
            "invalid* = input Paddle does not validate (it returned garbage, crashed or raised something else); "
            "*native crash* = Paddle's process died; *unreachable* = the backend cannot express the case; "
            "*known difference* = a difference this Paddle release is known to have (versions.py).",
        ]
        invalid = [f"{t.rule}: " + ", ".join(f"{n} {k}" for k, n in sorted(t.invalid_native.items()))
                   for t in self.tallies.values() if t.invalid_native]
        if invalid:
            lines += ["", "What Paddle did with the input the port rejects as invalid (result = accepted "
                      "silently, crash = process died, error = raised something else):", ""]
            lines += [f"- {line}" for line in invalid]
        for note in self.notes:
            lines += ["", f"> {note}"]
        for t in self.tallies.values():
            for verdict, examples in t.examples.items():
                lines += ["", f"## {t.rule}: {verdict} ({t.verdicts[verdict]:,}; first {len(examples)})", ""]
                for ex in examples:
                    lines.append(f"- `{ex['describe']}`")
                    lines.append(f"  - port:   `{ex['port']}`")
                    lines.append(f"  - native: `{ex['native']}`")
                    if ex.get("note"):
                        lines.append(f"  - {ex['note']}")
                    for d in ex["diffs"][:6]:
                        lines.append(f"  - {d}")
                    lines.append(f"  - repro: `{ex['repro']}`")
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, Any]:
        return {"paddle": self.paddle, "profile": self.profile, "complete": self.complete, "started": self.started,
                "finished": self.finished, "total_cells": self.total_cells,
                "total_mismatches": self.total_mismatches, "notes": self.notes,
                "rules": {k: t.to_json() for k, t in self.tallies.items()}}

    def junit(self) -> str:
        suites = []
        for t in self.tallies.values():
            cases = []
            failure = ""
            if t.mismatches:
                detail = "\n".join(f"{ex['describe']}\n  " + "\n  ".join(ex["diffs"])
                                   for ex in t.examples.get("mismatch", [])[:20])
                failure = (f"<failure message={quoteattr(f'{t.mismatches} mismatching cases')}>"
                           f"{escape(detail)}</failure>")
            cases.append(f'<testcase classname="parity.{t.rule}" name="all cells ({t.cells} cells, {t.cases} cases)" '
                         f'time="{t.native_seconds + t.port_seconds:.3f}">{failure}</testcase>')
            for ex in t.examples.get("mismatch", [])[:50]:
                cases.append(f'<testcase classname="parity.{t.rule}" name={quoteattr(ex["case"]["id"])}>'
                             f'<failure message={quoteattr("; ".join(ex["diffs"][:3]))}>'
                             f'{escape(ex["repro"])}</failure></testcase>')
            suites.append(f'<testsuite name="parity.{t.rule}" tests="{len(cases)}" '
                          f'failures="{min(1, t.mismatches) + len(cases) - 1}">' + "".join(cases) + "</testsuite>")
        return '<?xml version="1.0" encoding="utf-8"?>\n<testsuites>' + "".join(suites) + "</testsuites>\n"

    def write(self, directory: str | Path, junit: str | Path | None = None) -> Path:
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        (out / "parity.json").write_text(json.dumps(self.to_json(), indent=1))
        (out / "parity.md").write_text(self.markdown())
        if junit:
            Path(junit).parent.mkdir(parents=True, exist_ok=True)
            Path(junit).write_text(self.junit())
        return out
