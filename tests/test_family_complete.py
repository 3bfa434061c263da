"""Every registered op family has what docs/adding-an-op.md's checklist asks of a new op beyond its
folder: a test file, a docs page naming each of its rule keys, and a row per rule key in README's
rules table linking that page. The check names what a family lacks, and it can fail."""

from __future__ import annotations

import re
from pathlib import Path

from paddle_spmd_port.ops import FAMILIES

REPO = Path(__file__).resolve().parent.parent

#: The families whose tests are spread over the shared test files instead of one
#: ``tests/test_<family>.py``: where they are.
SPREAD_TESTS = {
    "batch_norm": ("test_rules_tables.py", "test_preconditions.py"),
    "sync_batch_norm": ("test_rules_tables.py", "test_rules_pr72918.py"),
    "layer_norm": ("test_rules_tables.py", "test_preconditions.py"),
}


def family_problems(family: str, root: Path = REPO) -> list[str]:
    """What ``family`` lacks of the checklist's pieces outside its folder, one line each."""
    keys = FAMILIES[family].keys
    problems = []
    for name in SPREAD_TESTS.get(family, (f"test_{family}.py",)):
        test = root / "tests" / name
        if not test.is_file():
            problems.append(f"{family}: no test file tests/{name}")
        elif not re.search(rf"\b{re.escape(family)}\b", test.read_text()):
            problems.append(f"{family}: tests/{name} never names the family")
    page = root / "docs" / "ops" / f"{family}.md"
    if not page.is_file():
        problems.append(f"{family}: no docs page docs/ops/{family}.md")
    else:
        text = page.read_text()
        problems += [f"{family}: docs/ops/{family}.md never names the rule key {key}" for key in keys
                     if not re.search(rf"\b{re.escape(key)}\b", text)]
    readme = (root / "README.md").read_text()
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `(\w+)` \|.*$", readme, re.M)}
    problems += [f"{family}: README's rules table has no row for {key}" for key in keys if key not in rows]
    if not any(f"(docs/ops/{family}.md)" in rows.get(key, "") for key in keys):
        problems.append(f"{family}: README's rules table does not link docs/ops/{family}.md")
    return problems


def test_every_family_has_its_test_docs_page_and_readme_rows() -> None:
    assert [p for family in FAMILIES for p in family_problems(family)] == []


def test_what_a_family_lacks_is_named(tmp_path: Path) -> None:
    """A copy of the three places without p_norm's test file, with a page that drops one key and a
    README without p_norm's rows: each gap is named."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "docs" / "ops").mkdir(parents=True)
    page = (REPO / "docs" / "ops" / "p_norm.md").read_text()
    (tmp_path / "docs" / "ops" / "p_norm.md").write_text(re.sub(r"\bp_norm_reverse\b", "its reverse", page))
    readme = (REPO / "README.md").read_text()
    (tmp_path / "README.md").write_text("\n".join(line for line in readme.splitlines()
                                                  if not line.startswith("| `p_norm")))
    assert family_problems("p_norm", tmp_path) == [
        "p_norm: no test file tests/test_p_norm.py",
        "p_norm: docs/ops/p_norm.md never names the rule key p_norm_reverse",
        "p_norm: README's rules table has no row for p_norm",
        "p_norm: README's rules table has no row for p_norm_reverse",
        "p_norm: README's rules table has no row for p_norm_grad",
        "p_norm: README's rules table does not link docs/ops/p_norm.md",
    ]
