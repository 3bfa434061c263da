"""Repro lines: what a report prints so a user can repeat one case alone, on the route it was
compared through and under the strictness policy its port answer was given by -- a shell line
(``infer --case-json``) or a standalone Python snippet.

One rule for the policy, in every line and record: the default (``strict``) is never named, any
other is (``--policy mirror``), so a strict run's lines read as they always have and a mirror run's
line, pasted, answers under mirror (without it, ``infer`` would refuse what the mirror answered)."""

from __future__ import annotations

import json

from ..case import Case
from ..ops.kit.strictness import DEFAULT_POLICY, POLICIES
from ..reporting import REPRO_PYTHON

_REPRO_HEADS: dict[tuple[str, str], str] = {}

#: The keys of what ``infer --case-json`` takes as a record (a case with what a report said of it):
#: parity's per-case record (report.py GroupTally.record, plus its case), a baseline diff's change
#: (baseline.py Change), a saved baseline's row (baseline.py row_line). Any other key is refused, so
#: that a misspelt one (``"polcy"``) is never dropped unread. tests/test_record_keys.py holds each
#: writer to its tuple.
PER_CASE_RECORD_KEYS = ("rule", "backend", "verdict", "id", "describe", "port", "native", "diffs", "note", "raw",
                        "policy", "repro", "case")
CHANGE_KEYS = ("class", "rule", "backend", "id", "describe", "old", "new", "old_verdict", "new_verdict", "diffs",
               "policy", "repro", "reruns", "old_outcome", "new_outcome", "rerun_outcomes", "case")
BASELINE_ROW_KEYS = ("rule", "backend", "i", "id", "native", "case")
RECORD_KEYS = tuple(dict.fromkeys(PER_CASE_RECORD_KEYS + CHANGE_KEYS + BASELINE_ROW_KEYS))


def named_policy(policy: str) -> str | None:
    """``policy`` as a repro line or record names it: None for the default (never named)."""
    if policy not in POLICIES:  # (a typo here would write lines that replay under another policy)
        raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    return None if policy == DEFAULT_POLICY else policy


def repro_head(backend: str, policy: str = DEFAULT_POLICY) -> str:
    """The start of a repro line up to its case's JSON: ``infer`` on the route the case was
    compared through, under ``policy`` (named unless the default), the line ending with the JSON and
    a closing quote."""
    head = _REPRO_HEADS.get((backend, policy))
    if head is None:
        named = named_policy(policy)
        flag = f"--policy {named} " if named else ""
        head = _REPRO_HEADS[backend, policy] = \
            f"{REPRO_PYTHON} -m paddle_spmd_port infer --backend {backend} {flag}--case-json '"
    return head


def one_line_repro(case: Case, backend: str, policy: str = DEFAULT_POLICY) -> str:
    """The command that repeats ``case`` on route ``backend`` under ``policy``: it prints that route
    and the verdict."""
    return repro_head(backend, policy) + case.json_text() + "'"


def repro_snippet(case: Case, backend: str, policy: str = DEFAULT_POLICY) -> str:
    """A standalone Python snippet that runs ``case`` on route ``backend`` in this process, the port
    under ``policy``, and prints the route, both answers and the verdict class (without the release
    profile's known differences: ``infer`` applies those)."""
    payload = json.dumps(case.to_json(), separators=(",", ":"))
    named = named_policy(policy)
    port_call = f"port_outcome(case, policy={named!r})" if named else "port_outcome(case)"
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
        f"native, port = backend.run(case), {port_call}",
        "print('case  :', case.describe())",
        f"print('route : {backend}')",
        "print('paddle:', native)",
        "print('port  :', port)",
        "print('verdict:', compare(case.spec, port, native, input_invalid_for(case, port, native)).verdict)",
    ])


__all__ = ["named_policy", "one_line_repro", "repro_head", "repro_snippet"]
