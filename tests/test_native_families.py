"""The native room reads the op families: its C++ table from the declared specs, its predicates
from each family's ``native.py``; it names no op itself.

Each check here can fail: a family default of the wrong type (``1`` for a float epsilon) changes a
kind and the header comparison fails; a clause dropped from a family's predicate makes the
reference comparison fail; an op key written into a native module fails the name scan; a C++
table that a new op needs an edit for would not build the p_norm probe.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from paddle_spmd_port.case import Case
from paddle_spmd_port.grid import coshard_cases, grid_for, sample
from paddle_spmd_port.installed import paddle_dir
from paddle_spmd_port.native import compiled, crash_prone
from paddle_spmd_port.ops import FAMILIES, REGISTRY_NAMES, RULES
from paddle_spmd_port.parity.random_cases import random_cases

PACKAGE = Path(__file__).resolve().parents[1] / "paddle_spmd_port"
ROOT = paddle_dir()
HAVE_HEADERS = ROOT is not None and (ROOT / "include" / compiled.RULE_HEADERS).is_dir()
HAVE_CXX = shutil.which(os.environ.get("CXX") or "g++") is not None


# --------------------------------------------------------------------------- no op named
def test_the_native_room_and_the_backends_table_name_no_op():
    names = {*FAMILIES, *RULES, *REGISTRY_NAMES, *(s.cpp for s in RULES.values() if s.cpp)}
    # (the backends table is native/routes.py)
    files = [*sorted((PACKAGE / "native").rglob("*.py")), PACKAGE / "native" / "cpp" / "spmd_caller.cc"]
    assert PACKAGE / "native" / "routes.py" in files
    found = [f"{path.relative_to(PACKAGE)}:{n}: {name}" for path in files
             for n, line in enumerate(path.read_text().splitlines(), 1) for name in names if name in line]
    assert not found, found


# --------------------------------------------------------------------------- the C++ table
_CPP_KIND = {"bool": "bool", "int": "int", "int64_t": "int", "float": "float", "double": "float",
             "std::string": "str"}


def _declared_params(header: Path, function: str) -> list[str]:
    """The kinds of ``function``'s parameters as the header declares them ("tensor" for a tensor)."""
    text = re.sub(r"//[^\n]*", "", header.read_text())
    found = re.search(rf"\bSpmdInfo\s+{function}\s*\(([^)]*)\)", text)
    assert found, f"{header} declares no {function}"
    kinds = []
    for param in found.group(1).split(","):
        words = param.split("=")[0].replace("&", " ").split()
        words = [w for w in words if w != "const"][:-1]  # the type, without the parameter's name
        kinds.append("tensor" if "DistMetaTensor" in words[-1] else _CPP_KIND[words[-1]])
    return kinds


@pytest.mark.skipif(not HAVE_HEADERS, reason="no Paddle headers here")
@pytest.mark.parametrize("key", compiled.RULES)
def test_each_entry_matches_the_header_paddle_ships(key):
    """The table's tensors and attribute kinds (from the declared spec) are the parameters of the
    function the installed header declares."""
    row = next(r for r in compiled.table_rows() if r.key == key)
    assert ROOT is not None
    assert _declared_params(ROOT / "include" / row.header, row.function) == ["tensor"] * len(row.inputs) + list(
        row.kinds)


def test_the_generated_table_has_one_entry_per_declared_function():
    rules = compiled.generated_sources()["spmd_caller_rules.inc"]
    entries = re.findall(r'^    \{"(\w+)", (\d+), (\d+), ', rules, flags=re.M)
    assert [(k, int(n), int(m)) for k, n, m in entries] == [
        (k, len(RULES[k].inputs), len(RULES[k].attrs)) for k in RULES if RULES[k].cpp is not None]
    heads = compiled.generated_sources()["spmd_caller_headers.inc"]
    assert sorted(set(re.findall(r'#include "([^"]+)"', heads))) == sorted(set(compiled.HEADER.values()))


def test_the_table_is_part_of_the_build_key(tmp_path, monkeypatch):
    """Two tables, two binaries: a changed spec can never run an old build."""
    if not (HAVE_HEADERS and HAVE_CXX):
        pytest.skip("no Paddle headers or no C++ compiler here")
    monkeypatch.setenv("PADDLE_SPMD_PORT_CACHE", str(tmp_path))
    rows = compiled.table_rows()
    first = compiled.compile_caller(compiled.generated_sources(rows[:1]))
    second = compiled.compile_caller(compiled.generated_sources(rows[:2]))
    assert first != second and first.exists() and second.exists()
    assert compiled.compile_caller(compiled.generated_sources(rows[:1])) == first  # cached
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".inc")]  # the generated files are gone


@pytest.mark.native
@pytest.mark.skipif(not (HAVE_HEADERS and HAVE_CXX), reason="no Paddle headers or no C++ compiler here")
def test_a_new_op_needs_no_edit_of_the_caller(tmp_path, monkeypatch):
    """Rows for Paddle's PNormInferSpmd (a family not declared yet) build into the same source and
    answer; a function this build declares with other parameters, or does not have, is unreachable
    with the row's reason; a header this build lacks leaves its rule out."""
    if not (ROOT / "include" / compiled.RULE_HEADERS / "p_norm.h").exists():  # type: ignore[operator]
        pytest.skip("this Paddle has no p_norm.h")
    monkeypatch.setenv("PADDLE_SPMD_PORT_CACHE", str(tmp_path))
    header = f"{compiled.RULE_HEADERS}/p_norm.h"
    kinds = ("float", "int", "float", "bool", "bool")
    rows = [compiled.CppRule("probe", "PNormInferSpmd", header, ("x",), kinds, "unused"),
            compiled.CppRule("probe_other_params", "PNormInferSpmd", header, ("x", "out"), kinds, "other params"),
            compiled.CppRule("probe_no_function", "NoSuchRuleInferSpmd", header, ("x",), (), "no function"),
            compiled.CppRule("probe_no_header", "PNormInferSpmd", f"{compiled.RULE_HEADERS}/no_such_op.h", ("x",),
                             kinds, "unused")]
    binary = compiled.compile_caller(compiled.generated_sources(rows))
    x = "T 2 8 6 2 0 -1 0 1 2 2 0 1 78"  # [8, 6] split on axis 0 over a 1-D mesh of 2 named "x"
    attrs = "5 f 2.0 i 1 f 1e-12 b 0 b 0"
    requests = [f"probe 0 1 {x} {attrs}", f"probe_other_params 0 2 {x} {x} {attrs}", f"probe_no_function 0 1 {x} 0",
                f"probe_no_header 0 1 {x} {attrs}", f"probe 0 1 {x} 4 f 2.0 i 1 f 1e-12 b 0"]
    proc = compiled.start_program(binary)
    replies = [line for batch in compiled.exchange(proc, iter(requests), timeout=120) for line in batch]
    proc.wait()
    out = [compiled.outcome_of(line) for line in replies]
    assert out[0].result is not None, out[0]
    assert out[0].result.inputs[0].dims_mapping == (0, -1) and out[0].result.outputs[0].dims_mapping == (0,)
    assert out[1].unreachable == "other params"
    assert out[2].unreachable == "no function"
    assert out[3].unreachable == "Paddle exports no C++ rule for probe_no_header"
    assert out[4].unreachable == "probe takes 5 attributes, got 4"


# --------------------------------------------------------------------------- the predicates
def _old_grad_partial_without_mesh(case: Case) -> bool:
    x = case.inputs[0]
    if x is None:
        return False
    if case.rule == "batch_norm_grad":
        return (case.inputs[1] is None or case.inputs[2] is None) and any(m != -1 for m in x.dims_mapping)
    if case.spec.op == "group_norm" and case.spec.direction == "grad" and x.dims_mapping[:1] != (-1,):
        return any(t is None or t.mesh is None for t in case.inputs[1:3])
    return False


def reference_pir_may_crash(case: Case) -> bool:
    """The PIR predicate as one function, before its op clauses moved to the families."""
    x = case.inputs[0]
    if x is not None and x.mesh is not None and any(
            s is not None and s.mesh is not None and s.mesh.ndim != x.mesh.ndim for s in case.inputs):
        return True
    if _old_grad_partial_without_mesh(case):
        return True
    attrs = dict(zip((n for n, _ in case.spec.attrs), case.attr_values(), strict=True))
    fmt = attrs.get("data_format", "NCHW")
    if case.rule == "p_norm_grad" and x is not None and not attrs["asvector"]:
        grad = case.inputs[2]  # -1 inserted at the axis into out_grad's mapping when the ranks differ
        grad_rank, grad_len = (1, 0) if grad is None else (len(grad.shape), len(grad.dims_mapping))
        pos = attrs["axis"] + (len(x.shape) if attrs["axis"] < 0 else 0)
        if grad_rank != len(x.shape) and not 0 <= pos <= grad_len:
            return True
    return case.rule in ("batch_norm", "batch_norm_grad") and (not isinstance(fmt, str) or len(fmt) < 2)


def test_the_pir_predicate_equals_the_reference():
    cases: list[Case] = []
    for rule in RULES:
        grid = list(grid_for(rule))
        cases += sample(grid, 200, seed=5) + [c for c in grid if "-invalid-" in c.case_id]
        cases += sample(list(coshard_cases(rule)), 20, seed=5) + random_cases(rule, 200, 5)
    flagged = 0
    for case in cases:
        want = reference_pir_may_crash(case)
        assert crash_prone.pir_may_crash(case) == want, case.describe()
        flagged += want
    assert 0 < flagged < len(cases)
