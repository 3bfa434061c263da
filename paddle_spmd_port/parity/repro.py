"""Repro lines: what a report prints so a user can repeat one case alone, on the route it was
compared through -- a shell line (``infer --case-json``) or a standalone Python snippet."""

from __future__ import annotations

import json

from ..case import Case
from ..reporting import REPRO_PYTHON

_REPRO_HEADS: dict[str, str] = {}


def repro_head(backend: str) -> str:
    """The start of a repro line up to its case's JSON: ``infer`` on the route the case was
    compared through (the line ends with the JSON and a closing quote)."""
    head = _REPRO_HEADS.get(backend)
    if head is None:
        head = _REPRO_HEADS[backend] = f"{REPRO_PYTHON} -m paddle_spmd_port infer --backend {backend} --case-json '"
    return head


def one_line_repro(case: Case, backend: str) -> str:
    """The command that repeats ``case`` on route ``backend``: it prints that route and the verdict."""
    return repro_head(backend) + case.json_text() + "'"


def repro_snippet(case: Case, backend: str) -> str:
    """A standalone Python snippet that runs ``case`` on route ``backend`` in this process and
    prints the route, both answers and the verdict class (without the release profile's
    known differences: ``infer`` applies those)."""
    payload = json.dumps(case.to_json(), separators=(",", ":"))
    return "\n".join([
        "# needs: pip install paddlepaddle==3.3.1 and this package (for the case codec and backends)",
        "import json",
        "from paddle_spmd_port.case import Case",
        "from paddle_spmd_port.outcome import port_outcome",
        "from paddle_spmd_port.compare import compare, input_invalid_for",
        f"case = Case.from_json(json.loads({payload!r}))",
        "try:",
        f"    from paddle_spmd_port.native import {backend} as backend",
        "except ImportError as exc:",
        "    raise SystemExit(f'Paddle is needed for the native side: {exc}')",
        "native, port = backend.run(case), port_outcome(case)",
        "print('case  :', case.describe())",
        f"print('route : {backend}')",
        "print('paddle:', native)",
        "print('port  :', port)",
        "print('verdict:', compare(case.spec, port, native, input_invalid_for(case, port, native)).verdict)",
    ])


__all__ = ["one_line_repro", "repro_head", "repro_snippet"]
