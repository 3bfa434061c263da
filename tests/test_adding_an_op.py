"""docs/adding-an-op.md's checklist holds: a toy op added by it, in a copy of the repository, touches
six files (its folder's two, the one registration line, its test, its docs page, README's row), and
every room sees it: the rule registry, ``infer``, parity's grid (the kit's default grid, no grid.py
written) and the completeness check, which names the piece a family lacks."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache", "reports")

# --- the toy op, as a contributor following the checklist writes it --------------------------------
TOY_INIT = '''"""toy: x scaled elementwise; one forward rule, no Paddle counterpart.

::

    rule key   inputs   returned
    toy        x        x out
"""

from __future__ import annotations

from ..spec import OpFamily, RegistryName, RuleSpec

FAMILY = OpFamily(
    "toy",
    rules=(RuleSpec("toy", "toy", "forward", ("x",), frozenset(), (("epsilon", 1e-5),), ("x",), ("out",)),),
    registry_names=(RegistryName("toy", "toy"),),
    summary="an elementwise op of x alone",
)
'''

TOY_RULES = '''"""toy's rule: x keeps its sharding, partial status cleared; out is sharded as x."""

from __future__ import annotations

from ...types import DistTensorSpec, SpmdResult
from ..kit.checks import rule
from ..kit.tensor import as_input, check_attrs, require_x_mesh


@rule("toy")
def toy_infer_spmd(x: DistTensorSpec, epsilon: float = 1e-5) -> SpmdResult:
    tx = as_input(x, "x")
    check_attrs(("epsilon", epsilon))
    require_x_mesh(tx)
    attr = tx.attr(tx.dims_mapping)
    return SpmdResult.make(inputs=(attr,), outputs=(attr,))
'''

TOY_TEST = '''from paddle_spmd_port import DistTensorSpec, ProcessMesh
from paddle_spmd_port.rules import get_spmd_rule, toy_infer_spmd


def test_toy_keeps_x_sharding_and_clears_partial():
    mesh = ProcessMesh((2, 3))
    result = toy_infer_spmd(DistTensorSpec((8, 6), (1, -1), mesh, frozenset({0})))
    assert result.inputs[0].dims_mapping == (1, -1) and not result.inputs[0].partial_dims
    assert result.outputs[0].dims_mapping == (1, -1)
    assert get_spmd_rule("toy").infer_forward is not None
'''

TOY_PAGE = """# toy

`toy` (`toy_infer_spmd`): x keeps its sharding, its partial status cleared; out is sharded as x.
"""

README_ROW = "| `toy` | `toy_infer_spmd` | none | none | [toy](docs/ops/toy.md) |"


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def _add_toy(root: Path) -> None:
    """Follow the checklist: the folder's two files, the registration line, the test, the page, the row."""
    folder = root / "paddle_spmd_port" / "ops" / "toy"
    folder.mkdir()
    (folder / "__init__.py").write_text(TOY_INIT)
    (folder / "rules.py").write_text(TOY_RULES)
    registry = root / "paddle_spmd_port" / "ops" / "__init__.py"
    text = registry.read_text()
    assert text.count('"p_norm")') == 1
    registry.write_text(text.replace('"p_norm")', '"p_norm", "toy")'))
    (root / "tests" / "test_toy.py").write_text(TOY_TEST)
    (root / "docs" / "ops" / "toy.md").write_text(TOY_PAGE)
    readme = root / "README.md"
    lines = readme.read_text().splitlines()
    last_row = max(i for i, line in enumerate(lines) if line.startswith("| `p_norm"))
    readme.write_text("\n".join([*lines[:last_row + 1], README_ROW, *lines[last_row + 1:]]) + "\n")


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, *args], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    for name in ("paddle_spmd_port", "tests", "docs"):
        shutil.copytree(REPO / name, root / name, ignore=_IGNORE)
    for name in ("README.md", "pyproject.toml"):
        shutil.copy2(REPO / name, root / name)
    before = _tree(root)
    _add_toy(root)
    after = _tree(root)
    root.joinpath("touched.txt").write_text("\n".join(sorted(k for k in after if before.get(k) != after[k])))
    return root


def test_the_toy_op_touches_six_files(copy: Path) -> None:
    assert copy.joinpath("touched.txt").read_text().splitlines() == [
        "README.md", "docs/ops/toy.md", "paddle_spmd_port/ops/__init__.py", "paddle_spmd_port/ops/toy/__init__.py",
        "paddle_spmd_port/ops/toy/rules.py", "tests/test_toy.py"]


def test_every_room_sees_the_toy_op(copy: Path) -> None:
    run = _run(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "tests/test_toy.py",
               "tests/test_family_complete.py", "tests/test_family_pieces.py", "tests/test_rule_declarations.py")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    infer = _run(copy, "-m", "paddle_spmd_port", "infer", "toy", "--no-native", "--mesh", "2x3", "--x-shape", "8,6",
                 "--x-mapping", "1,-1")
    assert infer.returncode == 0 and "[1,-1]" in infer.stdout, infer.stdout + infer.stderr
    native = _run(copy, "-m", "paddle_spmd_port", "infer", "toy", "--x-shape", "8,6", "--x-mapping", "1,-1")
    assert native.returncode == 3 and "no native route reaches toy" in native.stderr, native.stdout + native.stderr
    listed = _run(copy, "-m", "paddle_spmd_port", "parity", "--list")
    assert listed.returncode == 0 and any(line.split()[:1] == ["toy"] for line in listed.stdout.splitlines()), \
        listed.stdout
    # parity sweeps the default grid; no native route reaches a rule Paddle lacks: compared by none, exit 3
    swept = _run(copy, "-m", "paddle_spmd_port", "parity", "--rules", "toy", "--max-cases", "20", "--report-dir",
                 str(copy / "reports" / "toy"), "--quiet")
    assert swept.returncode == 3, swept.stdout[-2000:] + swept.stderr[-2000:]


def test_the_completeness_check_names_what_the_toy_lacks(copy: Path) -> None:
    page = copy / "docs" / "ops" / "toy.md"
    saved = page.read_text()
    page.unlink()
    try:
        run = _run(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "tests/test_family_complete.py")
    finally:
        page.write_text(saved)
    assert run.returncode == 1 and "toy: no docs page docs/ops/toy.md" in run.stdout, run.stdout[-3000:]
