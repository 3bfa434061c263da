"""Self-contained HTML pages for the reports (``parity.html``, ``oracle.html``, ``launch-np<N>.html``,
``baseline.html``): the page frame, verdict maps and filterable record tables every room's page uses.

A page is one file: inline CSS, plain HTML tables (the maps are tables whose cells are coloured by a
CSS gradient), and one inline script that only filters the record tables and copies repro lines.
Nothing is fetched (no ``src``/``href`` to another file or host): a CI artifact opens as it is,
offline, and tests/test_pages.py renders each page in headless Chromium and checks for console
errors and a blank screenshot. Everything a page shows is escaped here; the rooms pass text.

Op-free: the rooms say what a row, a column and a class are. :func:`placement_label` turns one
input's dims_mapping and partial dims on a mesh into the dygraph view (``[S(0),R]``), the column
key of the parity and oracle maps; a co-shard's mesh dims are ``S(axis)#k`` in shard order.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .types import mesh_dims_of

if TYPE_CHECKING:
    from .case import Case

#: The top verdict of a page, and its colour.
PASS, FAIL, UNCOMPARED = "pass", "fail", "uncompared"
VERDICT_COLOURS = {PASS: "#1a7f37", FAIL: "#cf222e", UNCOMPARED: "#9a6700"}

INVALID_PLACEMENT = "invalid placement"
"""The column of an input whose dims_mapping no tensor can have on the mesh (a mesh dim out of
range, used twice, or a length that is not the shape's): Paddle-invalid inputs the grid holds."""

_MIN_SHARE = 0.08
"""The least width a class present in a map cell gets in its colour bar: one mismatch among
a thousand matches still shows."""


def esc(value: object) -> str:
    """``value`` as text for an attribute or an element."""
    return html.escape(str(value), quote=True)


def text(value: object) -> str:
    """``value`` as an element's text (quotes kept: a repro line's JSON stays short)."""
    return html.escape(str(value), quote=False)


def placement_label(mesh_ndim: int, shape_len: int, dims_mapping: Sequence[object],
                    partial_dims: Iterable[int]) -> str:
    """``[S(0),R]``: per mesh dim, the tensor axis split along it (``S(a)``, ``S(a)#k`` for the
    k-th mesh dim of a co-shard), ``P`` for a pending partial, ``R`` otherwise;
    :data:`INVALID_PLACEMENT` when the mapping cannot be placed on a mesh of ``mesh_ndim`` dims."""
    if len(dims_mapping) != shape_len:
        return INVALID_PLACEMENT
    out = ["R"] * mesh_ndim
    try:
        for axis, entry in enumerate(dims_mapping):
            held = mesh_dims_of(entry)  # type: ignore[arg-type]
            for k, dim in enumerate(held):
                if not isinstance(dim, int) or not 0 <= dim < mesh_ndim or out[dim] != "R":
                    return INVALID_PLACEMENT
                out[dim] = f"S({axis})" + (f"#{k}" if len(held) > 1 else "")
        for dim in partial_dims:
            if not 0 <= dim < mesh_ndim or out[dim] != "R":
                return INVALID_PLACEMENT
            out[dim] = "P"
    except (TypeError, ValueError):
        return INVALID_PLACEMENT
    return "[" + ",".join(out) + "]"


def mesh_label(shape: Sequence[int]) -> str:
    return "x".join(str(s) for s in shape)


def map_key(case: Case) -> tuple:
    """What places a case in a verdict map, cheap to take (a sweep's every case): the mesh's
    shape and the first given input's rank, dims_mapping and partial dims (:func:`map_label`)."""
    inputs = case.inputs
    x = inputs[0] if inputs else None
    if x is None:  # (rare: the first input left out)
        x = next((s for s in inputs if s is not None), None)
        if x is None:
            return (case.mesh.shape, -1, (), frozenset())
    return (case.mesh.shape, len(x.shape), x.dims_mapping, x.partial_dims)


def map_label(key: tuple) -> tuple[str, str]:
    """A :func:`map_key` as (mesh, placement) text: ``("2x3", "[S(0),R]")``."""
    shape, rank, mapping, partial = key
    if rank < 0:
        return mesh_label(shape), "no input"
    return mesh_label(shape), placement_label(len(shape), rank, mapping, partial)


def _placement_order(label: str) -> tuple:
    """Columns in a reading order: R first, then by split axes, P last, invalid at the end."""
    if label == INVALID_PLACEMENT:
        return (2, label)
    parts = label.strip("[]").split(",")
    return (0 if all(p == "R" for p in parts) else 1, [(p == "P", p != "R", p) for p in parts])


def _mesh_order(label: str) -> tuple:
    try:
        dims = [int(x) for x in label.split("x")]
    except ValueError:
        return (99, label)
    return (len(dims), dims)


@dataclass
class Header:
    """The top of a page: what it is, its verdict, the status line, and the facts a reader needs
    first (Paddle version and commit, release profile, selection, ...), in order."""

    title: str
    verdict: str
    status: str
    facts: list[tuple[str, str]] = field(default_factory=list)


def legend(classes: Sequence[str], colours: Mapping[str, str], totals: Mapping[str, int] | None = None) -> str:
    items = []
    for c in classes:
        n = f" {totals[c]:,}" if totals is not None else ""
        items.append(f'<span class="key"><i style="background:{colours[c]}"></i>{esc(c)}{n}</span>')
    return '<div class="legend">' + "".join(items) + "</div>"


def _cell_style(counts: Mapping[str, int], order: Sequence[str], colours: Mapping[str, str]) -> str:
    """A horizontal colour bar: each class its share of the cell (at least :data:`_MIN_SHARE`),
    the worst class (first in ``order``) leftmost."""
    present = [(c, counts[c]) for c in order if counts.get(c)]
    total = sum(n for _, n in present)
    if not present:
        return ""
    if len(present) == 1:
        return f"background:{colours[present[0][0]]}"
    shares = [max(n / total, _MIN_SHARE) for _, n in present]
    scale = sum(shares)
    stops, at = [], 0.0
    for (c, _), share in zip(present, shares, strict=True):
        end = at + share / scale * 100
        stops.append(f"{colours[c]} {at:.1f}% {end:.1f}%")
        at = end
    return "background:linear-gradient(90deg," + ",".join(stops) + ")"


def verdict_map(cells: Mapping[tuple[str, str], Mapping[str, int]], order: Sequence[str],
                colours: Mapping[str, str], *, row_title: str = "mesh", col_title: str = "placement",
                target: str = "", rows: Sequence[str] | None = None, cols: Sequence[str] | None = None,
                cell_prefix: str = "") -> str:
    """A map of ``(row, column) -> {class: cases}``, each cell the case count (right-aligned:
    the bar's left end, its worst class, stays visible) over a bar of its classes (``order``: worst
    first). Without ``rows``/``cols``: rows are meshes and columns
    placements, one table per number of mesh dims; with them, one table in that order.
    ``target``: the id of the record table a click on a cell filters (to the records whose cell
    is ``cell_prefix + row + " " + column``); a cell's title lists its classes' counts."""
    if not cells:
        return '<p class="muted">no case in this group</p>'
    tables: list[tuple[list[str], list[str], Mapping[tuple[str, str], Mapping[str, int]]]] = []
    wide = rows is not None and cols is not None  # (an overview: few columns, each wide enough to read its bar)
    if rows is not None and cols is not None:
        tables.append((list(rows), list(cols), cells))
    else:
        by_ndim: dict[int, dict[tuple[str, str], Mapping[str, int]]] = {}
        for (row, col), counts in cells.items():
            ndim = len(col.strip("[]").split(",")) if col.startswith("[") else len(row.split("x"))
            by_ndim.setdefault(ndim, {})[(row, col)] = counts
        for ndim in sorted(by_ndim):
            of_ndim = by_ndim[ndim]
            tables.append((sorted({r for r, _ in of_ndim}, key=_mesh_order),
                           sorted({c for _, c in of_ndim}, key=_placement_order), of_ndim))
    out = []
    for row_keys, col_keys, part in tables:
        head = "".join(f"<th>{esc(c)}</th>" for c in col_keys)
        body = []
        for r in row_keys:
            tds = []
            for c in col_keys:
                found = part.get((r, c))
                if not found or not sum(found.values()):
                    tds.append('<td class="empty"></td>')
                    continue
                counts = found
                total = sum(counts.values())
                tip = ", ".join(f"{k} {counts[k]:,}" for k in order if counts.get(k))
                tds.append(f'<td style="{_cell_style(counts, order, colours)}" title="{esc(tip)}">'
                           f"<span>{total:,}</span></td>")
            body.append(f'<tr><th class="rowh">{esc(r)}</th>' + "".join(tds) + "</tr>")
        # a cell's key (what a click filters the records by) is the table's prefix, its row's and its
        # column's headers: put together by the script, not written out per cell
        data = f' data-target="{esc(target)}" data-prefix="{esc(cell_prefix)}"' if target else ""
        corner = f'<th class="corner">{esc(row_title)} \\ {esc(col_title)}</th>'
        out.append(f'<table class="map{" wide" if wide else ""}"{data}><tr>{corner}{head}</tr>' + "".join(body)
                   + "</table>")
    return '<div class="maps">' + "".join(out) + "</div>"


@dataclass
class Record:
    """One row of a record table: its class (filter and colour), its map cell (``"row column"``,
    or ``""``), its cells (text, escaped here), and a repro command (copyable) or ``""``."""

    klass: str
    cell: str
    values: Sequence[object]
    repro: str = ""


def records_table(table_id: str, columns: Sequence[str], records: Sequence[Record], colours: Mapping[str, str],
                  cap_note: str = "") -> str:
    """A table of records, filterable by class, by text and by map cell (a click on a map cell with
    ``data-target=table_id``); each repro line has a copy button."""
    if not records:
        return '<p class="muted">no record to show' + (f" ({esc(cap_note)})" if cap_note else "") + "</p>"
    counts = Counter(r.klass for r in records)
    options = "".join(f'<option value="{esc(k)}">{esc(k)} ({n:,})</option>' for k, n in counts.items())
    bar = (f'<div class="filter" data-for="{esc(table_id)}"><label>class <select class="f-class">'
           f'<option value="">all ({len(records):,})</option>{options}</select></label> '
           f'<label>text <input class="f-text" type="search" placeholder="filter rows"></label> '
           f'<span class="f-cell"></span> <span class="f-count"></span>'
           + (f' <span class="muted">{esc(cap_note)}</span>' if cap_note else "") + "</div>")
    head = "".join(f"<th>{esc(c)}</th>" for c in ("class", *columns, *(("repro",) if any(r.repro for r in records)
                                                                        else ())))
    rows = []
    with_repro = any(r.repro for r in records)
    for r in records:
        tds = [f'<td><b class="tag" style="background:{colours.get(r.klass, "#888")}">{esc(r.klass)}</b></td>']
        tds += [f"<td>{text(v)}</td>" for v in r.values]
        if with_repro:
            tds.append(f'<td class="repro"><button type="button" class="copy">copy</button><code>{text(r.repro)}</code>'
                       "</td>" if r.repro else "<td></td>")
        rows.append(f'<tr data-class="{esc(r.klass)}" data-cell="{esc(r.cell)}">' + "".join(tds) + "</tr>")
    return (bar + f'<table class="records" id="{esc(table_id)}"><thead><tr>{head}</tr></thead><tbody>'
            + "".join(rows) + "</tbody></table>")


def counts_table(header: Sequence[str], rows: Iterable[Sequence[object]], colours: Mapping[str, str] | None = None
                 ) -> str:
    """A plain table; a header cell named like a class gets its colour key, a non-zero number in a
    column of a class in ``colours`` is bold."""
    colours = colours or {}
    head = "".join((f'<th><i class="dot" style="background:{colours[h]}"></i>{esc(h)}</th>' if h in colours
                    else f"<th>{esc(h)}</th>") for h in header)
    body = []
    for row in rows:
        tds = []
        for h, v in zip(header, row, strict=True):
            text = f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)
            strong = h in colours and isinstance(v, int) and v and h not in ("match", "sound", "agree")
            tds.append(f'<td class="{"num" if isinstance(v, int) else ""}">'
                       + (f"<b>{esc(text)}</b>" if strong else esc(text)) + "</td>")
        body.append("<tr>" + "".join(tds) + "</tr>")
    return f'<table class="counts"><thead><tr>{head}</tr></thead><tbody>' + "".join(body) + "</tbody></table>"


def section(title: str, body: str, *, open_: bool = True, note: str = "") -> str:
    """A collapsible section (``<details>``), open unless ``open_`` is false."""
    return (f'<details class="sec"{" open" if open_ else ""}><summary>{esc(title)}'
            + (f' <span class="muted">{esc(note)}</span>' if note else "") + f"</summary>{body}</details>")


def paragraph(text: str) -> str:
    return f"<p>{esc(text)}</p>"


def pre(text: str) -> str:
    return f"<pre>{esc(text)}</pre>"


_CSS = """
:root{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#1f2328}
body{margin:0 24px 40px}
header{border-bottom:1px solid #d0d7de;padding:12px 0 8px}
.maps{overflow-x:auto}
h1{font-size:20px;margin:0 0 6px}
.badge{display:inline-block;color:#fff;font-weight:700;padding:3px 12px;border-radius:12px;margin-right:10px;
text-transform:uppercase;letter-spacing:.05em}
.status{font-weight:600}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:8px 0 0}
dl.facts dt{color:#59636e}dl.facts dd{margin:0;word-break:break-word}
details.sec{border:1px solid #d0d7de;border-radius:6px;margin:12px 0;padding:4px 10px}
details.sec>summary{cursor:pointer;font-weight:600;font-size:15px;padding:4px 0}
details.sub{margin:6px 0 6px 8px}details.sub>summary{cursor:pointer;font-weight:600}
.muted{color:#59636e;font-weight:400}
table{border-collapse:collapse;margin:6px 0}
table.counts td,table.counts th{border:1px solid #d0d7de;padding:2px 6px}
table.counts td.num{text-align:right;font-variant-numeric:tabular-nums}
table.map{margin:6px 12px 6px 0;display:inline-table;vertical-align:top}
table.map th{font-weight:500;font-size:11px;padding:2px 3px;color:#59636e}
table.map th.rowh{text-align:right;font-weight:600}
table.map td{min-width:54px;height:24px;border:1px solid #fff;text-align:right;padding:0 2px}
table.map.wide td{min-width:150px}
table.map[data-target] td{cursor:pointer}
table.map td.empty{background:#f6f8fa;cursor:default}
table.map td span{background:rgba(255,255,255,.82);border-radius:3px;padding:0 3px;font-size:11px;
font-variant-numeric:tabular-nums}
table.map td.sel{outline:3px solid #0969da}
.legend{margin:4px 0}.key{margin-right:12px;white-space:nowrap}
.key i,i.dot{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:4px;vertical-align:-1px}
.filter{margin:8px 0 4px;display:flex;gap:10px;flex-wrap:wrap;align-items:center}
table.records{width:100%;table-layout:auto}
table.records td,table.records th{border-top:1px solid #d0d7de;padding:3px 6px;vertical-align:top;text-align:left;
font-size:12px}
table.records td{overflow-wrap:break-word}
td.repro{min-width:32ch}
td.repro code{font-size:11px;display:block;max-width:60ch;max-height:4.2em;overflow:auto;white-space:pre-wrap;
word-break:break-all;background:#f6f8fa;padding:2px 4px}
b.tag{color:#fff;border-radius:3px;padding:0 5px;white-space:nowrap;font-weight:600}
button.copy{font-size:11px;margin-bottom:2px}
pre{background:#f6f8fa;padding:6px;overflow:auto;font-size:12px}
"""

_JS = """
(function(){
  "use strict";
  function apply(bar){
    var table=document.getElementById(bar.getAttribute("data-for"));
    if(!table){return;}
    var klass=bar.querySelector(".f-class").value;
    var text=bar.querySelector(".f-text").value.toLowerCase();
    var cell=bar.getAttribute("data-cell")||"";
    var shown=0,rows=table.tBodies[0].rows;
    for(var i=0;i<rows.length;i++){
      var r=rows[i];
      var ok=(!klass||r.getAttribute("data-class")===klass)&&(!cell||r.getAttribute("data-cell")===cell)&&
             (!text||r.textContent.toLowerCase().indexOf(text)>=0);
      r.hidden=!ok; if(ok){shown++;}
    }
    bar.querySelector(".f-count").textContent=shown+" of "+rows.length+" shown";
    var label=bar.querySelector(".f-cell");
    label.textContent=cell?("cell "+cell+" \\u00d7"):"";
    label.style.cursor=cell?"pointer":"";
  }
  var bars=document.querySelectorAll(".filter[data-for]");
  Array.prototype.forEach.call(bars,function(bar){
    bar.querySelector(".f-class").addEventListener("change",function(){apply(bar);});
    bar.querySelector(".f-text").addEventListener("input",function(){apply(bar);});
    bar.querySelector(".f-cell").addEventListener("click",function(){bar.setAttribute("data-cell","");
      Array.prototype.forEach.call(document.querySelectorAll("td.sel"),function(td){td.classList.remove("sel");});
      apply(bar);});
    apply(bar);
  });
  document.addEventListener("click",function(ev){
    var td=ev.target.closest?ev.target.closest("table.map[data-target] td[title]"):null;
    if(!td){return;}
    var table=td.closest("table"), row=td.parentNode;
    var bar=document.querySelector('.filter[data-for="'+table.getAttribute("data-target")+'"]');
    if(!bar){return;}
    var key=table.getAttribute("data-prefix")+row.cells[0].textContent+" "+
            table.rows[0].cells[td.cellIndex].textContent;
    Array.prototype.forEach.call(document.querySelectorAll("td.sel"),function(o){o.classList.remove("sel");});
    td.classList.add("sel");
    bar.setAttribute("data-cell",key);
    var d=bar.closest("details"); if(d){d.open=true;}
    apply(bar); bar.scrollIntoView({block:"nearest"});
  });
  function copied(button,ok){button.textContent=ok?"copied":"select + copy";
    setTimeout(function(){button.textContent="copy";},1500);}
  function fallback(button,text){
    var area=document.createElement("textarea"); area.value=text; document.body.appendChild(area);
    area.select(); var ok=false; try{ok=document.execCommand("copy");}catch(e){ok=false;}
    document.body.removeChild(area); copied(button,ok);
  }
  document.addEventListener("click",function(ev){
    var button=ev.target.closest?ev.target.closest("button.copy"):null;
    if(!button){return;}
    var text=button.parentNode.querySelector("code").textContent;
    if(navigator.clipboard&&window.isSecureContext){
      navigator.clipboard.writeText(text).then(function(){copied(button,true);},function(){fallback(button,text);});
    }else{fallback(button,text);}
  });
  window.__readyAt=performance.now();
  document.body.setAttribute("data-ready","1");
})();
"""


def page(header: Header, sections: Sequence[str], *, data: Mapping[str, object] | None = None) -> str:
    """The whole page. ``data``: a small JSON summary embedded for tools (``<script
    type="application/json" id="summary">``), never read by the page's script."""
    facts = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in header.facts)
    colour = VERDICT_COLOURS.get(header.verdict, "#59636e")
    summary = ""
    if data is not None:
        text = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")
        summary = f'<script type="application/json" id="summary">{text}</script>'
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
            f"<title>{esc(header.verdict.upper())}: {esc(header.title)}</title><style>{_CSS}</style></head><body>"
            f'<header><h1><span class="badge" id="verdict" style="background:{colour}">{esc(header.verdict)}</span>'
            f'{esc(header.title)}</h1><div class="status">{esc(header.status)}</div>'
            f'<dl class="facts">{facts}</dl></header><main>' + "".join(sections)
            + f"</main>{summary}<script>{_JS}</script></body></html>\n")


__all__ = ["FAIL", "INVALID_PLACEMENT", "PASS", "UNCOMPARED", "VERDICT_COLOURS", "Header", "Record", "counts_table",
           "esc", "legend", "map_key", "map_label", "mesh_label", "page", "paragraph", "placement_label", "pre",
           "records_table", "section", "text", "verdict_map"]
