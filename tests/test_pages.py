"""The HTML pages (parity.html, oracle.html, launch-np<N>.html, baseline.html): self-contained,
escaped, their verdicts and maps right; and rendered in headless Chromium (tools/browser.py) without
console errors, exceptions, fetches or a blank screenshot. The browser tests skip, saying why,
where Chromium is absent (CI installs it: .ci/install-browser); the planted pages (a JS error, a
blank page, a console error, a fetch) show each check can fail.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from paddle_spmd_port.case import Case
from paddle_spmd_port.grid import grid_for, sample
from paddle_spmd_port.launch.cases import default_cases
from paddle_spmd_port.launch.output import write_report
from paddle_spmd_port.launch.predict import predict
from paddle_spmd_port.launch.report import build_report
from paddle_spmd_port.ops import rule_spec
from paddle_spmd_port.outcome import ErrorInfo, Outcome, port_outcome
from paddle_spmd_port.pages import INVALID_PLACEMENT, map_key, map_label, placement_label
from paddle_spmd_port.parity.baseline import Diff, Saver, load
from paddle_spmd_port.parity.cli import tally_group
from paddle_spmd_port.parity.merge import _tally
from paddle_spmd_port.parity.output import write_diff, write_parity_report
from paddle_spmd_port.parity.report import ParityReport
from paddle_spmd_port.types import DistAttr, SpmdResult
from tests.cli_checks import REPO
from tests.helpers import load_tool

browser = load_tool("browser")
CHROMIUM = browser.chromium()
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (apt-get install chromium, or set "
                                    "CHROMIUM); CI installs it with .ci/install-browser")


# --------------------------------------------------------------------------- pages built here
def _wrong(answer: SpmdResult) -> SpmdResult:
    out = answer.outputs[0]
    return SpmdResult(answer.inputs, (DistAttr(tuple(-1 for _ in out.dims_mapping), frozenset({0}), out.mesh),
                                      *answer.outputs[1:]))


def _parity(tmp: Path, planted: int | None) -> Path:
    """A parity report of 80 sampled layer_norm cases (and the corner cases) with the port's answers
    standing in for Paddle's; case ``planted`` (an answered one) gets a wrong native answer: a mismatch."""
    cases = sample(list(grid_for("layer_norm")), 80, seed=3)
    native = [port_outcome(c) for c in cases]
    if planted is not None:
        i = next(i for i in range(planted, len(cases)) if native[i].result is not None)
        native[i] = Outcome(result=_wrong(native[i].result))
    report = ParityReport(selection={"slug": "test", "describe": "a test selection <&>"},
                          paddle={"version": "3.3.1", "commit": "7688495538f4ab"})
    report.plan("layer_norm", "registry", len(cases), rule_spec("layer_norm").n_cells)
    tally_group(report, "registry", ["layer_norm"], {"layer_norm": cases}, native, 0.1, None)
    report.complete = True
    report.finished = report.started + 1
    write_parity_report(report, tmp)
    return tmp / "parity.html"


def _launch(tmp: Path, planted: bool) -> Path:
    cases = [c for c in default_cases((2,)) if c.op == "layer_norm"][:12]

    def record(case, rank, wrong=False):
        p = predict(case)
        tensors = {t.name: {"present": True, "ref_present": True, "placements": list(t.placements),
                            "local_shape": list(t.local_shape), "max_abs_err": 0.5 if wrong else 0.0,
                            "ref_max_abs": 1.0, "shape_ok": True} for t in p.tensors}
        return {"kind": "case", "case_id": case.case_id, "rank": rank, "stages": {"reference": "ok", "forward": "ok"},
                "error": None, "skipped": None, "tensors": tensors, "seconds": 0.01}

    records = {c.case_id: {r: record(c, r, planted and i == 3) for r in (0, 1)} for i, c in enumerate(cases)}
    report = build_report(cases, records, [0, 1], {"title": "2 ranks, cpu", "paddle": "3.3.1 (7688495538f4)",
                                                   "nproc": 2, "backend": "cpu", "meshes": ["2"],
                                                   "cases": len(cases)})
    write_report(report, tmp, "launch-np2")
    return tmp / "launch-np2.html"


def _baseline(tmp: Path) -> Path:
    cases = sample(list(grid_for("layer_norm")), 30, seed=1)
    outcomes = [port_outcome(c) for c in cases]
    saver = Saver(tmp / "base.gz")
    for i, (c, o) in enumerate(zip(cases, outcomes, strict=True)):
        saver.record("layer_norm", "registry", i, c, o)
    selection = {"slug": "test", "describe": "a test selection"}
    saver.finish({"version": "9.9.9", "commit": "abc"}, selection)
    now = list(outcomes)
    answered = [i for i, o in enumerate(outcomes) if o.result is not None]
    now[answered[0]] = Outcome(crash="signal 11 (SIGSEGV)")  # an answer -> a crash: regressed
    now[answered[1]] = Outcome(error=ErrorInfo("ValueError", "x's rank is wrong"))  # newly raises
    diff = Diff(load(tmp / "base.gz", selection))
    for i, (c, o) in enumerate(zip(cases, now, strict=True)):
        diff.record("layer_norm", "registry", i, c, o)
    diff.judge()
    write_diff(diff, tmp, {"version": "3.3.1", "commit": "7688495538f4"}, selection)
    return tmp / "baseline.html"


def _self_contained(text: str) -> None:
    """No fetch of anything: no src/href/link/import/url(), one inline script (plus the JSON summary)."""
    assert not re.search(r"<(?:img|iframe|link|source|video|audio|object|embed)\b", text, re.I)
    assert not re.search(r"\s(?:src|href|srcset|action)\s*=", text, re.I)
    assert "@import" not in text and "url(" not in text
    assert re.findall(r"<script\b[^>]*>", text) in (["<script>"], ['<script type="application/json" id="summary">',
                                                                   "<script>"])


# --------------------------------------------------------------------------- without a browser
def test_placement_labels() -> None:
    assert placement_label(2, 2, (0, -1), frozenset()) == "[S(0),R]"
    assert placement_label(2, 3, (-1, -1, 1), frozenset({0})) == "[P,S(2)]"
    assert placement_label(2, 2, ((1, 0), -1), frozenset()) == "[S(0)#1,S(0)#0]"
    assert placement_label(1, 2, (-1, -1), ()) == "[R]"
    for bad in ((2, 2, (2, -1), ()), (2, 2, (0, 0), ()), (2, 3, (0, -1), ()), (1, 1, (0,), (0,)), (1, 1, (-2,), ())):
        assert placement_label(*bad) == INVALID_PLACEMENT, bad


def test_parity_page_shows_the_verdict_the_map_and_the_planted_mismatch(tmp_path: Path) -> None:
    text = _parity(tmp_path, planted=5).read_text()
    _self_contained(text)
    assert 'id="verdict"' in text and ">fail</span>" in text and "3.3.1 (commit 7688495538f4)" in text
    assert "a test selection &lt;&amp;&gt;" in text and "<&>" not in text  # escaped
    rows = re.findall(r'<tr data-class="mismatch" data-cell="([^"]*)">', text)
    assert len(rows) == 1 and rows[0].startswith(("2 ", "4 ", "2x", "1x", "4x", "8 ", "3x"))
    mesh, placement = rows[0].split(" ", 1)
    maps = text.split('<table class="records"')[0]
    assert f'<th class="rowh">{mesh}</th>' in maps and f"<th>{placement}</th>" in maps  # its map cell
    assert "infer --backend registry --case-json" in text
    clean = _parity(tmp_path / "clean", planted=None).read_text()
    assert ">pass</span>" in clean and 'data-class="mismatch"' not in clean


def test_the_map_counts_every_case_and_survives_a_merge(tmp_path: Path) -> None:
    _parity(tmp_path, planted=5)
    import json

    data = json.loads((tmp_path / "parity.json").read_text())["rules"]["layer_norm@registry"]
    assert sum(sum(c.values()) for _, _, c in data["map"]) == data["cases"] > 80  # (a sample keeps every corner case)
    merged = _tally(data)
    assert {(m, p): c for m, p, c in data["map"]} == merged.verdict_map()


def test_map_key_is_the_first_given_input() -> None:
    case = next(c for c in grid_for("layer_norm") if c.mesh.shape == (2, 3))
    x = case.inputs[0]
    assert map_label(map_key(case)) == ("2x3", placement_label(2, len(x.shape), x.dims_mapping, x.partial_dims))
    nothing = Case(case.rule, case.mesh, (None,) * len(case.inputs), case.attrs)
    assert map_label(map_key(nothing)) == ("2x3", "no input")


def test_launch_and_baseline_pages(tmp_path: Path) -> None:
    launch = _launch(tmp_path, planted=True).read_text()
    _self_contained(launch)
    assert ">fail</span>" in launch and "numerics differ (NOT EXPECTED)" in launch
    assert "launch --nproc 2 --cases" in launch
    assert ">pass</span>" in _launch(tmp_path / "ok", planted=False).read_text()
    page = _baseline(tmp_path).read_text()
    _self_contained(page)
    assert ">fail</span>" in page and "REGRESSED: 1 of 2 changed cases regressed" in page
    classes = re.findall(r'<tr data-class="([^"]*)"', page)
    assert classes == ["regressed", "newly raises"]  # regressions first


# --------------------------------------------------------------------------- in Chromium
@pytest.fixture(scope="module")
def chrome() -> Iterator[object]:
    if CHROMIUM is None:
        pytest.skip("no Chromium here (apt-get install chromium, or set CHROMIUM); CI installs it")
    with browser.Browser(CHROMIUM) as b:
        yield b


def _png(width: int, height: int, pixel) -> bytes:
    """An 8-bit RGB PNG, each row with filter 1 (Sub) or 4 (Paeth): the decoder's hard cases."""
    raw = b""
    prev = [0] * (width * 3)
    for y in range(height):
        line = [c for x in range(width) for c in pixel(x, y)]
        kind = 1 if y % 2 else 4
        out = []
        for i, v in enumerate(line):
            a = line[i - 3] if i >= 3 else 0
            b, c = prev[i], (prev[i - 3] if i >= 3 else 0)
            if kind == 1:
                pred = a
            else:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
            out.append((v - pred) & 255)
        raw += bytes([kind, *out])
        prev = line

    def chunk(kind: bytes, body: bytes) -> bytes:
        return len(body).to_bytes(4, "big") + kind + body + zlib.crc32(kind + body).to_bytes(4, "big")

    ihdr = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 2, 0, 0, 0])
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def test_png_decoder_and_blank_measure() -> None:
    def pattern(x, y):
        return ((x * 37 + y) & 255, (y * 11) & 255, (x ^ y) & 255)

    w, h, bpp, rows = browser.png_pixels(_png(9, 7, pattern))
    assert (w, h, bpp) == (9, 7, 3)
    assert all(rows[y][x * 3:x * 3 + 3] == bytes(pattern(x, y)) for y in range(7) for x in range(9))
    assert browser.is_blank(browser.ink(_png(40, 30, lambda x, y: (255, 255, 255))))
    assert not browser.is_blank(browser.ink(_png(40, 30, lambda x, y: (0, 0, 0) if 5 < x < 30 and y % 4 else
                                                                  (255, 255, 255))))


@needs_chromium
def test_pages_render_clean_in_chromium(tmp_path: Path, chrome) -> None:
    pages = [_parity(tmp_path / "p", planted=5), _launch(tmp_path / "l", planted=True), _baseline(tmp_path / "b")]
    for page in pages:
        r = chrome.render(page, tmp_path / f"{page.stem}.png")
        assert r.clean, r.line()
        assert r.title.startswith("FAIL:") and (tmp_path / f"{page.stem}.png").stat().st_size > 10_000


CLICK_THE_MISMATCH = """(function(){
  var rows=document.querySelectorAll('tr[data-class="mismatch"]'); if(rows.length!==1){return "rows "+rows.length;}
  var cell=rows[0].getAttribute("data-cell"), hit=null;
  document.querySelectorAll("table.map[data-target] td[title]").forEach(function(td){
    var t=td.closest("table"), key=t.getAttribute("data-prefix")+td.parentNode.cells[0].textContent+" "+
        t.rows[0].cells[td.cellIndex].textContent;
    if(key===cell){hit=td;}
  });
  if(!hit){return "no map cell "+cell;}
  hit.click();
  var table=document.getElementById(hit.closest("table").getAttribute("data-target"));
  var shown=Array.prototype.filter.call(table.tBodies[0].rows,function(r){return !r.hidden;});
  return shown.every(function(r){return r.getAttribute("data-cell")===cell;}) &&
         shown.some(function(r){return r.getAttribute("data-class")==="mismatch";}) ? "ok" : "shown "+shown.length;
})()"""


@needs_chromium
def test_a_click_on_a_map_cell_filters_the_records_to_it(tmp_path: Path, chrome) -> None:
    r = chrome.render(_parity(tmp_path, planted=5), probe=CLICK_THE_MISMATCH)
    assert r.clean and r.probe == "ok", (r.probe, r.line())


@pytest.mark.parametrize("mutant, caught", [
    ("js-error", "exception"), ("blank", "blank"), ("console-error", "console"), ("fetch", "fetch"),
    ("script-stops", "ready")])
@needs_chromium
def test_each_browser_check_can_fail(tmp_path: Path, chrome, mutant: str, caught: str) -> None:
    text = _parity(tmp_path, planted=None).read_text()  # (clean as rendered: test_pages_render_clean_in_chromium)
    edits = {
        "js-error": lambda t: t.replace("</body>", "<script>null.planted();</script></body>"),
        "blank": lambda t: re.sub(r"<body>.*</body>", "<body></body>", t, flags=re.S),
        "console-error": lambda t: t.replace("</body>", "<script>console.error('planted');</script></body>"),
        "fetch": lambda t: t.replace("<main>", '<main><img alt="" src="http://127.0.0.1:9/planted.png">'),
        "script-stops": lambda t: t.replace('"use strict";', '"use strict"; if (document.body) { return; }'),
    }
    bad = tmp_path / f"{mutant}.html"
    bad.write_text(edits[mutant](text))
    r = chrome.render(bad)
    assert not r.clean
    found = {"exception": bool(r.exceptions), "blank": r.blank, "console": bool(r.console_errors),
             "fetch": bool(r.fetches), "ready": not r.ready}
    assert found[caught], r.line()


@pytest.mark.native
@needs_chromium
def test_a_sampled_run_s_pages_render_clean(tmp_path: Path, chrome) -> None:
    """Real runs, sampled: parity (Paddle's registry route) and the oracle."""
    pytest.importorskip("paddle", reason="paddlepaddle is not installed")
    env_py = sys.executable
    parity = subprocess.run([env_py, "-m", "paddle_spmd_port", "parity", "--rules", "layer_norm",
                             "--sample", "20", "--primary-only", "--workers", "1", "--quiet",
                             "--report-dir", str(tmp_path / "p")], cwd=REPO, capture_output=True, text=True,
                            timeout=300)
    assert parity.returncode == 0, parity.stdout[-2000:] + parity.stderr[-2000:]
    oracle = subprocess.run([env_py, "-m", "paddle_spmd_port", "oracle", "--rules", "batch_norm_grad",
                             "--max-cases", "40", "--profile", "proposed", "--quiet",
                             "--report-dir", str(tmp_path / "o")], cwd=REPO, capture_output=True, text=True,
                            timeout=300)
    assert oracle.returncode == 0, oracle.stdout[-2000:] + oracle.stderr[-2000:]
    for page in (tmp_path / "p" / "parity.html", tmp_path / "o" / "oracle.html"):
        _self_contained(page.read_text())
        r = chrome.render(page)
        assert r.clean and r.title.startswith("PASS:"), r.line()


def test_the_top_verdict_follows_the_run(tmp_path: Path) -> None:
    """pass only when every selected case was compared and none mismatched; an interrupted run, an
    uncompared case or an empty selection is uncompared, a mismatch fails (outranking both)."""
    from paddle_spmd_port.parity.pages import parity_verdict

    cases = sample(list(grid_for("layer_norm")), 10, seed=3)
    native = [port_outcome(c) for c in cases]
    native[0] = Outcome(not_run="worker timed out")

    def report(outcomes: list[Outcome], **state: object) -> ParityReport:
        r = ParityReport()
        r.plan("layer_norm", "registry", len(cases), rule_spec("layer_norm").n_cells)
        tally_group(r, "registry", ["layer_norm"], {"layer_norm": cases}, outcomes, 0.1, None)
        r.complete = True
        for k, v in state.items():
            setattr(r, k, v)
        return r

    assert parity_verdict(report([port_outcome(c) for c in cases])) == "pass"
    assert parity_verdict(report(native)) == "uncompared"
    assert parity_verdict(report([port_outcome(c) for c in cases], interrupted="SIGTERM")) == "uncompared"
    assert parity_verdict(report([port_outcome(c) for c in cases], complete=False)) == "uncompared"
    assert parity_verdict(ParityReport(complete=True)) == "uncompared"
    i = next(i for i, o in enumerate(native) if o.result is not None)
    native[i] = Outcome(result=_wrong(native[i].result))
    assert parity_verdict(report(native, interrupted="SIGTERM")) == "fail"
