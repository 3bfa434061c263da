"""``oracle --search``: the search finds a planted cheaper answer and misses no sound answer its space
holds (held against brute force through the oracle's own verdict), is bounded and says so, and the
command keeps the shared grammar (bad input exit 2 with nothing written, a signal a partial report)."""

from __future__ import annotations

import itertools
import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from paddle_spmd_port.case import Case
from paddle_spmd_port.ops.kit.grid import placements
from paddle_spmd_port.oracle.grid import oracle_grid
from paddle_spmd_port.oracle.report import Judge
from paddle_spmd_port.oracle.search import classify, input_options, price, search_case, sound, space_size
from paddle_spmd_port.oracle.simulator import SOUND, case_data, simulate
from paddle_spmd_port.reshard import cost
from paddle_spmd_port.types import DistAttr, DistTensorSpec, ProcessMesh, SpmdResult
from tests.cli_checks import REPO
from tests.helpers import load_tool
from tests.test_pages import _self_contained
from tests.test_signals_oracle import finish, leftovers, one_line, start, wait_for

MESH = ProcessMesh((2,))
M22 = ProcessMesh((2, 2))


def layer_norm_case(x_dm, mesh=MESH) -> Case:
    x = DistTensorSpec((8, 7, 10), x_dm, mesh)
    scale = DistTensorSpec((10,), (-1,), mesh)
    return Case("layer_norm", mesh, (x, scale, scale), (("begin_norm_axis", 2),), "planted")


def replicate_all(case: Case, answer: SpmdResult) -> SpmdResult:
    """The mutant rule: Paddle's answer with every input and output replicated."""
    def rep(attr: DistAttr) -> DistAttr:
        return attr if attr.mesh is None else DistAttr(tuple(-1 for _ in attr.dims_mapping), frozenset(), attr.mesh)
    return SpmdResult(tuple(map(rep, answer.inputs)), tuple(map(rep, answer.outputs)))


def test_the_search_finds_a_planted_cheaper_answer():
    """A rule that all-gathers a batch-split x for layer_norm is sound but dear: the search finds the
    answer that keeps x split, and the saving is exactly the all-gather."""
    case = layer_norm_case((0, -1, -1))
    mutant = replicate_all(case, case.call_port("paddle"))
    assert simulate(case, mutant).label == SOUND
    space = search_case(case)
    found = classify(space, "mutant", mutant, SOUND)
    assert found.klass == "cheaper"
    gather = cost(case.inputs[0].shape, case.inputs[0], mutant.inputs[0], MESH)
    assert gather == 1 * 4 * 7 * 10 * 4 and found.rule.bytes == gather
    assert space.cheapest.bytes == 0 and found.saving == gather
    assert space.cheapest.answer.inputs[0].dims_mapping == (0, -1, -1)
    # Paddle's own answer keeps x split: nothing cheaper
    paddle = case.call_port("paddle")
    assert classify(space, "paddle", paddle, simulate(case, paddle).label).klass == "as-cheap"


def _brute_force(case: Case) -> int | None:
    """The cheapest sound answer by brute force: every input option x every output placement, each
    judged by simulate (only for rules with one output)."""
    spec = case.spec
    named = case.named_inputs()
    options = [input_options(named[n]) if named.get(n) is not None else [DistAttr((), frozenset(), None)]
               for n in spec.result_inputs]
    (out_name,) = spec.result_outputs
    out_rank = case_data(case).reference[out_name].ndim
    best = None
    for ins in itertools.product(*options):
        for dm, partial in placements(out_rank, case.mesh.ndim):
            answer = SpmdResult(tuple(ins), (DistAttr(dm, partial, case.mesh),))
            if sound(case, answer):
                bytes_ = price(case, answer).bytes
                best = bytes_ if best is None else min(best, bytes_)
    return best


@pytest.mark.parametrize("rule", ["p_norm", "p_norm_grad"])
def test_the_search_misses_nothing_brute_force_finds(rule):
    cases = [c for c in oracle_grid(rule, [(2,), (2, 2)]) if space_size(c) <= 4][::37]
    spaces = list(itertools.islice((s for s in map(search_case, cases) if s.status == "searched"), 3))
    assert len(spaces) == 3
    for space in spaces:
        case = space.case
        want = _brute_force(case)
        got = space.cheapest.bytes if space.cheapest is not None else None
        assert got == want, case.describe()


def test_a_mutant_search_that_drops_outputs_partial_claims_is_caught():
    """The brute force can fail: a search whose answer is not sound is not what it returns."""
    case = layer_norm_case((-1, -1, 0))  # the normalised axis split: the kernel rejects x as is
    space = search_case(case)
    assert space.cheapest is not None
    assert simulate(case, space.cheapest.answer).label == SOUND
    assert space.cheapest.answer.inputs[0].dims_mapping == (-1, -1, -1)  # the gather is needed


def test_the_answer_space_of_one_input():
    """The given attr first; each axis kept or dropped, a co-shard also cut back to its outer
    member; partial dims kept or dropped."""
    def texts(dm, partial=()):
        return [str(a) for a in input_options(DistTensorSpec((8, 4), dm, M22, frozenset(partial)))]

    assert texts((0, 1)) == ["[0,1]", "[0,-1]", "[-1,1]", "[-1,-1]"]
    assert texts(((1, 0), -1)) == ["[(1,0),-1]", "[1,-1]", "[-1,-1]"]
    assert texts((0, -1), (1,)) == ["[0,-1] P{1}", "[0,-1]", "[-1,-1] P{1}", "[-1,-1]"]


def test_the_search_is_bounded_and_counts_what_it_skips():
    case = layer_norm_case((0, 1, -1), M22)
    assert space_size(case) == 4
    skipped = search_case(case, max_candidates=3)
    assert skipped.status == "skipped" and skipped.reason == "more candidates than the bound: 4 > 3"
    assert classify(skipped, "paddle", None, "").klass == "skipped"
    searched = search_case(case)
    assert classify(searched, "native", None, "no-answer").klass == "no-answer"  # not run: not "missing"
    assert classify(searched, "native", None, "rule-error").klass == "missing"
    assert search_case(case, max_candidates=4).status == "searched"


def test_a_partial_input_must_hold_on_paddles_own_split():
    """A count of nonzeros (p_norm porder 0) reads every nonzero random addend as the value: kept
    Partial, it passes random addends but not Paddle's R->P split (zeros on the other ranks)."""
    x = DistTensorSpec((8, 7), (-1, -1), MESH, frozenset({0}))
    case = Case("p_norm", MESH, (x,), (("porder", 0.0), ("axis", 1)), "partial")
    space = search_case(case)
    assert space.cheapest is not None
    assert space.cheapest.answer.inputs[0].partial_dims == frozenset()


def test_judge_and_search_agree_on_a_sample():
    judge = Judge()
    for case in list(oracle_grid("rms_norm", [(2, 2)]))[:30]:
        space = search_case(case)
        j = judge(case, "paddle")
        found = classify(space, "paddle", j.answer, j.verdict.label)
        if found.klass == "cheaper":
            assert simulate(case, space.cheapest.answer).label == SOUND
            assert space.cheapest.bytes < found.rule.bytes


def _run(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "paddle_spmd_port", "oracle", *argv], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("argv, word", [
    (["--max-candidates", "5"], "--max-candidates"),
    (["--search", "--max-candidates", "0"], "--max-candidates"),
])
def test_bad_input_is_one_line_and_writes_nothing(argv, word, tmp_path):
    run = _run(*argv, "--report-dir", str(tmp_path / "r"), cwd=REPO)
    assert run.returncode == 2, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and word in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "r").exists()


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    """One small run of the command: (its result, its report dir)."""
    out = tmp_path_factory.mktemp("search") / "r"
    run = _run("--search", "--rules", "p_norm_grad,layer_norm_reverse", "--profile", "paddle", "--sample", "15",
               "--max-candidates", "4", "--quiet", "--report-dir", str(out), cwd=REPO)
    assert run.returncode == 0, run.stderr
    return run, out


def test_the_command_writes_its_reports_and_a_pr_summary(searched):
    run, out = searched
    data = json.loads((out / "search.json").read_text())
    counts = data["profiles"]["paddle"]["p_norm_grad"]["counts"]
    assert sum(counts.values()) == 15 and data["status"] == "complete"
    assert counts["skipped"] > 0  # the bound of 4 candidates is met: counted, not silent
    summary = (out / "search-summary.md").read_text().strip().splitlines()
    assert len(summary) == 2 and summary[0].startswith("p_norm_grad [paddle]: ")
    assert f"({counts['skipped']} skipped)" in summary[0] and run.stdout.strip() == "\n".join(summary)
    assert "| more candidates than the bound |" in (out / "search.md").read_text()


@pytest.mark.parametrize("sig", [signal.SIGTERM], ids=["SIGTERM"])
def test_a_signal_writes_a_partial_report(sig, tmp_path):
    reports = tmp_path / "reports"
    proc, err = start(["oracle", "--search", "--rules", "rms_norm,batch_norm_grad", "--profile", "paddle",
                       "--meshes", "2", "--sample", "3000", "--report-dir", str(reports)], tmp_path)
    wait_for(lambda: "[oracle --search] rms_norm:" in err.read_text(), proc, "first rule searched", timeout=120)
    proc.send_signal(sig)
    code, out = finish(proc)
    stderr = err.read_text()
    assert code == 128 + sig, stderr
    line = one_line(stderr, sig, progress_prefix=("[oracle --search] ", "paddle_spmd_port oracle: searching "))
    assert str(reports / "search.md") in line and out == ""
    assert leftovers(proc.pid, tmp_path) == []
    first = (reports / "search.md").read_text().splitlines()[0]
    assert first.startswith(f"INTERRUPTED by {sig.name}") and "batch_norm_grad (" in first
    data = json.loads((reports / "search.json").read_text())
    assert data["rules"]["rms_norm"]["status"] == "done"


browser = load_tool("browser")
CHROMIUM = browser.chromium()


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (apt-get install chromium, or set CHROMIUM); CI "
                    "installs it with .ci/install-browser")
def test_the_page_renders_clean_with_its_map(searched):
    """search.html in headless Chromium: no console error, exception, fetch or blank screen; the
    rule x mesh map and a record per cheaper case."""
    _, out = searched
    text = (out / "search.html").read_text()
    _self_contained(text)
    maps = text.split('<table class="records"')[0]
    assert '<th class="corner">rule \\ mesh</th>' in maps and '<th class="rowh">p_norm_grad</th>' in maps
    data = json.loads((out / "search.json").read_text())
    cheaper = sum(1 for c in data["cases"] if c["class"] == "cheaper")
    assert len(re.findall(r'<tr data-class="saves [^"]*"', text)) == cheaper > 0
    with browser.Browser(CHROMIUM) as chrome:
        r = chrome.render(out / "search.html")
    assert r.clean and r.title.startswith("PASS:"), r.line()


def test_the_proposed_reverse_rule_answers_the_cheaper_of_reverse_and_forward():
    """p_norm over the last axis of x split on axis 1, out asked split on axis 0: the reverse answer
    moves x (an all_to_all of x), the forward answer keeps x and moves the smaller out: the forward
    one is chosen. With x replicated both move nothing: the tie keeps the reverse answer."""
    from paddle_spmd_port.ops.kit.cheapest import price as rule_price
    from paddle_spmd_port.ops.p_norm import proposed as p_norm_proposed
    from paddle_spmd_port.ops.registry import PROFILES, rules_in

    own = rules_in(p_norm_proposed)  # the reverse rule as written, before the cheaper choice

    spec = Case("p_norm_reverse", MESH, (None, None), ()).spec
    attrs = (float("inf"), -1, 1e-12, True, False)
    out = DistTensorSpec((8, 7, 10, 1), (0, -1, -1, -1), MESH)
    for x_dm, chosen in (((-1, 0, -1, -1), "forward"), ((-1, -1, -1, -1), "reverse")):
        x = DistTensorSpec((8, 7, 10, 12), x_dm, MESH)
        given = {"x": x, "out": out}
        reverse = own["p_norm_reverse"](x, out, *attrs)
        forward = PROFILES["proposed"]["p_norm"](x, *attrs)
        assert reverse != forward
        answer = PROFILES["proposed"]["p_norm_reverse"](x, out, *attrs)
        assert answer == (forward if chosen == "forward" else reverse), chosen
        assert rule_price(spec, given, answer) == min(rule_price(spec, given, reverse),
                                                      rule_price(spec, given, forward))
