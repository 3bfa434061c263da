"""``infer`` (and the dispatcher): arguments that cannot form a case end in one line and exit 2;
a case the port refuses is the port's answer, not a usage error; no Paddle means exit 3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paddle_spmd_port.ops import RULES
from tests.cli_checks import REPO, BadInput, assert_usage_error, run_cli

MESH = {"shape": [2], "process_ids": [0, 1], "dim_names": ["x"]}
GOOD_CASE = {"id": "t", "rule": "layer_norm", "mesh": MESH,
             "inputs": [{"shape": [8, 6], "dims_mapping": [0, -1], "partial_dims": [], "mesh": MESH}, None, None],
             "attrs": [["epsilon", 1e-5], ["begin_norm_axis", 1]]}


def case_json(**change) -> str:
    data = {**GOOD_CASE, **change}
    return json.dumps({k: v for k, v in data.items() if v != "<drop>"})


def infer(*args: str) -> tuple[str, ...]:
    return ("infer", *args)


LN = ("layer_norm", "--x-shape", "8,6", "--no-native")

ROWS = [
    # the dispatcher
    BadInput((), "COMMAND"),
    BadInput(("nope",), "COMMAND"),
    # the mesh
    BadInput(infer(*LN, "--mesh", "0"), "--mesh"),
    BadInput(infer(*LN, "--mesh", "-2"), "--mesh"),
    BadInput(infer(*LN, "--mesh", "2,0"), "--mesh"),
    BadInput(infer(*LN, "--mesh", "2,3"), "--mesh"),  # sizes are joined by x, as in every command
    BadInput(infer(*LN, "--mesh", "2x"), "--mesh"),
    BadInput(infer(*LN, "--mesh", ""), "--mesh"),
    # shapes, mappings, partial dims that are not integers (or negative sizes)
    BadInput(infer("layer_norm", "--x-shape", "8,-6", "--no-native"), "--x-shape"),
    BadInput(infer("layer_norm", "--x-shape", "8,six", "--no-native"), "--x-shape"),
    BadInput(infer(*LN, "--scale-shape", "-6"), "--scale-shape"),
    BadInput(infer(*LN, "--x-mapping", "0,x"), "--x-mapping"),
    BadInput(infer(*LN, "--x-partial", "all"), "--x-partial"),
    BadInput(infer("batch_norm", "--x-shape", "", "--no-native"), "--mean-shape"),  # no channel axis to derive from
    # integers written as Python's int() reads them, or with an item left out: typos, not other values
    BadInput(infer("layer_norm", "--x-shape", "8_6", "--no-native"), "--x-shape"),
    BadInput(infer("layer_norm", "--x-shape", "8,,6", "--no-native"), "--x-shape"),
    BadInput(infer("layer_norm", "--x-shape", "8,6,", "--no-native"), "--x-shape"),
    BadInput(infer(*LN, "--x-mapping", "0,,-1"), "--x-mapping"),
    BadInput(infer(*LN, "--x-mapping", "(0,1_0),-1"), "--x-mapping"),
    BadInput(infer(*LN, "--mesh", "2_3"), "--mesh"),
    BadInput(infer(*LN, "--begin-norm-axis", "1_0"), "--begin-norm-axis"),
    BadInput(infer(*LN, "--epsilon", "1_0"), "--epsilon"),
    # attributes
    BadInput(infer(*LN, "--epsilon", "tiny"), "--epsilon"),
    BadInput(infer(*LN, "--begin-norm-axis", "1.5"), "--begin-norm-axis"),
    BadInput(infer("batch_norm", "--x-shape", "8,6", "--is-test", "maybe", "--no-native"), "--is-test"),
    BadInput(infer(*LN, "--momentum", "0.5"), "--momentum"),  # layer_norm has no momentum
    # rule, inputs, missing pieces
    BadInput(infer("no_such_rule", "--x-shape", "8,6"), "rule"),
    BadInput(infer("--no-native"), "RULE"),
    BadInput(infer("layer_norm", "--no-native"), "--x-shape"),
    BadInput(infer(*LN, "--x-none"), "--x-none"),
    BadInput(infer(*LN, "--mean-out-shape", "8"), "--mean-out-shape"),  # not an input of layer_norm
    BadInput(infer(*LN, "--backend", "gpu"), "--backend"),
    BadInput(infer("layer_norm", "--x-shape", "8,6", "--timeout", "0"), "--timeout"),  # parity's grammar
    BadInput(infer("layer_norm", "--x-shape", "8,6", "--timeout", "inf"), "--timeout"),
    BadInput(infer(*LN, "--timeout", "5"), "--timeout"),  # no native worker to wait for
    BadInput(infer(*LN, "--profile", "mine"), "--profile"),
    BadInput(infer(*LN, "--policy", "lenient"), "--policy"),  # the grammar of parity --policy
    BadInput(infer(*LN, "--policy", ""), "--policy"),
    BadInput(infer("--case-json", json.dumps({"rule": "layer_norm", "backend": "registry", "policy": "lenient",
                                              "case": GOOD_CASE}), "--no-native"), "--case-json"),
    BadInput(infer(*LN, "--bogus"), "--bogus"),
    # --case-json that does not form a case
    BadInput(infer("--case-json", "{rule: layer_norm}", "--no-native"), "--case-json"),
    BadInput(infer("--case-json", "[1, 2]", "--no-native"), "--case-json"),
    BadInput(infer("--case-json", case_json(mesh="<drop>"), "--no-native"), "--case-json"),
    BadInput(infer("--case-json", case_json(mesh={"shape": [2], "dim_names": ["x"]}), "--no-native"), "--case-json"),
    BadInput(infer("--case-json", case_json(mesh={**MESH, "shape": [0]}), "--no-native"), "--case-json"),
    BadInput(infer("--case-json", case_json(mesh={**MESH, "process_ids": [0, 0]}), "--no-native"), "--case-json"),
    BadInput(infer("--case-json", case_json(rule="no_such_rule"), "--no-native"), "--case-json"),
    BadInput(infer("--case-json", case_json(inputs=[None]), "--no-native"), "--case-json"),
    BadInput(infer("--case-json", case_json(inputs=[{"shape": "8,6", "dims_mapping": [0, -1], "partial_dims": [],
                                                     "mesh": MESH}, None, None]), "--no-native"), "--case-json"),
    BadInput(infer("--case-json", case_json(inputs=[{"shape": [8, -6], "dims_mapping": [0, -1], "partial_dims": [],
                                                     "mesh": MESH}, None, None]), "--no-native"), "--case-json"),
    # -1 (a size unknown until run time) is a size in the Python API; a case (infer, parity) has real sizes
    BadInput(infer("--case-json", case_json(inputs=[{"shape": [-1, 6], "dims_mapping": [0, -1], "partial_dims": [],
                                                     "mesh": MESH}, None, None]), "--no-native"), "--case-json"),
    BadInput(infer("--case-json", case_json(attrs=[["epsilon", "small"]]), "--no-native"), "--case-json"),
    BadInput(infer("--case-json", case_json(attrs=[["momentum", 0.9]]), "--no-native"), "--case-json"),
    BadInput(infer("--case-json", case_json(attrs={"epsilon": 1e-5}), "--no-native"), "--case-json"),
    BadInput(infer("layer_norm", "--case-json", case_json(), "--no-native"), "--case-json"),
    # --case-json keys and attributes misspelt, repeated or left out: named, never dropped or filled in
    BadInput(infer("--case-json", case_json(atrs=[]), "--no-native"), '"atrs"'),
    BadInput(infer("--case-json", case_json(policy="mirror"), "--no-native"), '"policy"'),
    BadInput(infer("--case-json", case_json(mesh={**MESH, "dim_name": ["x"]}), "--no-native"), '"dim_name"'),
    BadInput(infer("--case-json", case_json(inputs=[{**GOOD_CASE["inputs"][0], "partial": [0]}, None, None]),
                   "--no-native"), '"partial"'),
    BadInput(infer("--case-json", case_json(attrs=[["epsilon", 1e-5]]), "--no-native"), "attrs has no begin_norm_axis"),
    BadInput(infer("--case-json", case_json(attrs=[["epsilon", 1e-5], ["begin_norm_axis", 1], ["epsilon", 1e-5]]),
                   "--no-native"), "epsilon is given twice"),
    BadInput(infer("--case-json", case_json(attrs=[["epsilon", 1e-5], ["begin_norm_axs", 1]]), "--no-native"),
             '"begin_norm_axs"'),
    BadInput(infer("--case-json", case_json()[:-1] + ', "rule": "p_norm"}', "--no-native"), '"rule" is given twice'),
    BadInput(infer("--case-json", json.dumps({"rule": "layer_norm", "backend": "registry",
                                              "case": {**GOOD_CASE, "attrs": [["epsilon", 1e-5]]}}), "--no-native"),
             "attrs has no begin_norm_axis"),
    BadInput(infer("--case-json", json.dumps({"rule": "batch_norm", "backend": "registry", "case": GOOD_CASE}),
                   "--no-native"), "the record's rule"),
    # contradictory flags (were accepted: --scale-none won over --scale-mapping, --no-native over --backend)
    BadInput(infer(*LN, "--scale-shape", "6", "--scale-none"), "--scale-none"),
    BadInput(infer(*LN, "--bias-partial", "0", "--bias-none"), "--bias-none"),
    BadInput(infer("layer_norm", "--x-shape", "8,6", "--backend", "pir", "--no-native"), "--backend"),
    # sizes Paddle cannot hold (int64): were Paddle's TypeError, reported as a mismatch (exit 1)
    BadInput(infer("layer_norm", "--x-shape", "99999999999999999999999,6"), "--x-shape"),
    BadInput(infer("layer_norm", "--x-shape", "8,-99999999999999999999999"), "--x-shape"),
    BadInput(infer(*LN, "--x-mapping", "99999999999999999999,-1"), "--x-mapping"),
    BadInput(infer(*LN, "--x-partial", "9223372036854775808"), "--x-partial"),
    BadInput(infer(*LN, "--begin-norm-axis", "99999999999999999999"), "--begin-norm-axis"),
    BadInput(infer("group_norm", "--x-shape", "8,6,4", "--groups", "-99999999999999999999", "--no-native"),
             "--groups"),
    BadInput(infer("--case-json", case_json(inputs=[{"shape": [2**63, 6], "dims_mapping": [0, -1], "partial_dims": [],
                                                     "mesh": MESH}, None, None]), "--no-native"), "--case-json"),
    # ... and a mesh dim or an integer attribute beyond int64, refused as their flags refuse them (were
    # taken as a case: exit 0 with --no-native, exit 3 "unreachable" with it)
    BadInput(infer("--case-json", case_json(inputs=[{"shape": [8, 6], "dims_mapping": [2**64, -1], "partial_dims": [],
                                                     "mesh": MESH}, None, None]), "--no-native"), "--case-json"),
    BadInput(infer("--case-json", case_json(inputs=[{"shape": [8, 6], "dims_mapping": [[0, -2**64], -1],
                                                     "partial_dims": [], "mesh": MESH}, None, None])), "--case-json"),
    BadInput(infer("--case-json", case_json(attrs=[["begin_norm_axis", 2**64]]), "--no-native"), "--case-json"),
    BadInput(infer("--case-json", case_json(attrs=[["begin_norm_axis", -2**64]])), "--case-json"),
    # a mesh too large to list its process ids (was a MemoryError traceback)
    BadInput(infer(*LN, "--mesh", "100000x100000"), "--mesh"),
]
# every optional tensor of every rule: --NAME-none contradicts --NAME-mapping (and -shape, -partial)
ROWS += [BadInput(infer(rule, "--x-shape", "8,6,4,4", f"--{name.replace('_', '-')}-mapping", "-1",
                        f"--{name.replace('_', '-')}-none", "--no-native"), f"--{name.replace('_', '-')}-none")
         for rule, spec in RULES.items() for name in spec.inputs if name in spec.optional]


@pytest.mark.parametrize("row", ROWS, ids=[r.id or "(no arguments)" for r in ROWS])
def test_bad_input(row: BadInput, tmp_path: Path) -> None:
    assert_usage_error(row, tmp_path)


@pytest.mark.parametrize("argv", [
    ("--case-json", case_json()),  # the table's base case is a case: its rows fail for their own reason
    (*LN, "--x-mapping", "0"),  # one entry for a rank-2 x
    (*LN, "--x-mapping", "5,-1"),  # a mesh dim the mesh does not have
    (*LN, "--x-partial", "7"),
    (*LN, "--begin-norm-axis", "5"),
], ids=["base-case", "mapping-length", "mapping-mesh-dim", "partial-dim", "begin-norm-axis"])
def test_cases_the_port_refuses_are_answers_not_usage_errors(argv: tuple[str, ...], tmp_path: Path) -> None:
    done = run_cli(["infer", *argv, "--no-native"] if "--no-native" not in argv else ["infer", *argv], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and "port:" in done.stdout


def test_infer_without_paddle_fails_closed(tmp_path: Path) -> None:
    """A 'paddle' that cannot be imported, first on PYTHONPATH (so the native workers see it too):
    infer prints the port's answer, then one line saying why Paddle's side is missing, exit 3."""
    fake = tmp_path / "fake" / "paddle"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('paddle hidden by test_infer_without_paddle')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(fake.parent), str(REPO)]))
    argv = [sys.executable, "-m", "paddle_spmd_port", "infer", "layer_norm", "--x-shape", "8,6", "--x-mapping", "0,-1"]
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr and len(lines) == 1, done.stderr
    assert "unavailable" in lines[0] and "paddle hidden by test_infer_without_paddle" in lines[0]  # a worker's error
    assert "port:" in done.stdout and "out out" in done.stdout
    # --no-native asks for the port alone: nothing is missing
    done = subprocess.run([*argv, "--no-native"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_every_declared_attribute_is_a_flag_of_its_type():
    """The attribute flags come from the rule specs: each rule's every attribute parses from its flag
    into a value of its declared default's type, and the case carries it (p_norm's porder, axis,
    keepdims, asvector included)."""
    from paddle_spmd_port.parity import infer_cli

    text = {bool: ("true", True), int: ("1", 1), float: ("1", 1.0), str: ("NHWC", "NHWC")}
    for rule, spec in RULES.items():
        for name, default in spec.attrs:
            arg, want = text[type(default)]
            args = infer_cli.build_parser(rule).parse_args([rule, "--x-shape", "8,6,4,4", f"--{name.replace('_', '-')}",
                                                           arg])
            value = dict(infer_cli.case_from_args(args).attrs)[name]
            assert value == want and type(value) is type(want), (rule, name, value)


def test_a_reduced_out_takes_its_shape_from_the_family():
    """p_norm's out drops the reduced axis: derived from x and the attributes, not copied from x."""
    from paddle_spmd_port.parity import infer_cli

    args = infer_cli.build_parser("p_norm_grad").parse_args(["p_norm_grad", "--x-shape", "8,6", "--axis", "1"])
    case = infer_cli.case_from_args(args)
    assert [t.shape for t in case.inputs if t is not None] == [(8, 6), (8,), (8,)]
    args = infer_cli.build_parser("p_norm_grad").parse_args(["p_norm_grad", "--x-shape", "8,6", "--axis", "1",
                                                             "--keepdims", "true"])
    assert [t.shape for t in infer_cli.case_from_args(args).inputs if t is not None] == [(8, 6), (8, 1), (8, 1)]
