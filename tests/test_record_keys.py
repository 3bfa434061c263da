"""``infer --case-json`` takes a record as a report wrote it and refuses any key no writer writes
(parity/repro.py RECORD_KEYS): each writer's records hold exactly the keys declared for them (so
the declaration can neither miss a key a writer adds nor keep one it dropped), each kind of record
pasted back is answered, and one with a misspelt key is a usage error naming it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from paddle_spmd_port.compare import compare
from paddle_spmd_port.ops import rule_spec
from paddle_spmd_port.outcome import Outcome, port_outcome
from paddle_spmd_port.parity import infer_cli
from paddle_spmd_port.parity.baseline import CASES_FILE, row_line
from paddle_spmd_port.parity.report import GroupTally
from paddle_spmd_port.parity.repro import BASELINE_ROW_KEYS, CHANGE_KEYS, PER_CASE_RECORD_KEYS
from tests.test_baseline import _cases, _diff, _saved


def _per_case_records() -> list[dict]:
    """Parity's per-case records as the report writes them (their case last), of every shape: a strict
    and a mirror run's, an undecodable answer's."""
    case = _cases()[0]
    tally = GroupTally("layer_norm", "registry")
    port = port_outcome(case)
    out = []
    for native, policy in ((Outcome(crash="signal 11 (SIGSEGV)"), "strict"),
                           (Outcome(undecodable="not a list", raw="[[0"), "mirror")):
        cmp = compare(rule_spec("layer_norm"), port, native, None)
        record = tally.record(case, port, native, cmp, case.json_text(), policy)
        out.append({**record, "case": case.to_json()})
    return out


def _change_records(tmp_path: Path) -> list[dict]:
    """A baseline diff's changes as its cases file holds them, a strict and a mirror run's."""
    from paddle_spmd_port.parity.output import write_diff
    from tests.test_baseline import OLD, SELECTION

    cases = _cases()[:3]
    base = _saved(tmp_path, cases, [port_outcome(c) for c in cases])
    out = []
    for policy in ("strict", "mirror"):
        diff = _diff(base, cases, [Outcome(crash="signal 6 (SIGABRT)")] * len(cases), policy=policy)
        write_diff(diff, tmp_path / policy, OLD, SELECTION)
        with gzip.open(tmp_path / policy / CASES_FILE, "rt") as fh:
            out += [json.loads(line) for line in fh]
    return out


def _baseline_rows() -> list[dict]:
    case = _cases()[0]
    return [json.loads(row_line("layer_norm", "registry", 0, case, port_outcome(case)))]


def test_each_writer_writes_exactly_the_keys_declared_for_it(tmp_path: Path) -> None:
    for records, declared in ((_per_case_records(), PER_CASE_RECORD_KEYS), (_change_records(tmp_path), CHANGE_KEYS),
                              (_baseline_rows(), BASELINE_ROW_KEYS)):
        assert records and set().union(*records) == set(declared), (sorted(set().union(*records)), declared)


def _infer(record: dict, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = infer_cli.main(["--case-json", json.dumps(record), "--no-native"])
    return code, capsys.readouterr().err


def test_every_kind_of_record_is_answered_and_a_misspelt_key_is_refused(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    records = _per_case_records() + _change_records(tmp_path)[:1] + _baseline_rows()
    for record in records:
        code, err = _infer(record, capsys)
        assert code == 0, (record, err)
    for record, key in ((records[1], "policy"), (records[0], "backend"), (records[-1], "i")):
        wrong = {("polcy" if k == "policy" else k + "_" if k == key else k): v for k, v in record.items()}
        code, err = _infer(wrong, capsys)
        typo = "polcy" if key == "policy" else key + "_"
        assert code == 2 and err.count("\n") == 1, err
        assert f'the record has the unknown key "{typo}"' in err, err
