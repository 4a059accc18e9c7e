"""The history viewer, `RUN_DIR/history.html`: the whole history, every line, in one
self-contained page (no server, no network: the data is embedded, harness/report/
history_data.py, and drawn by the plain JavaScript below).

What a person can do on it (docs/REPORT.md says the same for users):
- two views: **operations** (an invoke and its completion in one row, with the
  latency between them; the default) and **lines** (each history line, as written);
- filters — process, partition, f, outcome/type, nemesis only, anomaly examples
  only — and a **value search** (substring of the value's JSON text, or of the
  error; `"3-17"` with the quotes matches that value exactly);
- `history.html#i1234` shows line 1234 (filters that hide it are cleared), as the
  report's example links do; a box jumps to a line by number;
- clicking a row shows its lines whole (value pretty-printed, error, times).

Only the rows in sight are in the page at any time (a fixed row height; cells cut
with an ellipsis, the error column of a fixed width), so a million lines scroll as
fifty do and one long error cannot squeeze the value column.
"""
from __future__ import annotations

from pathlib import Path

from fencepost.harness.report.history_data import DECODE_JS, HistoryBlobs
from fencepost.harness.report.page import esc, page
from fencepost.harness.rundir.atomic import write_atomically

HISTORY_PAGE = "history.html"
ROW_PX = 22

_STYLE = """
html, body { height: 100%; }
body { margin: 0; display: flex; flex-direction: column; }
header { flex: none; padding: 0.6em 1.5em 0.3em 1.5em; border-bottom: 1px solid #ddd; }
header h1 { margin: 0 0 0.2em 0; }
header p { margin: 0.2em 0; }
#controls { display: flex; flex-wrap: wrap; gap: 0.4em 1.1em; align-items: center; margin: 0.4em 0; }
#controls label { white-space: nowrap; }
#q { width: 16em; }
#status { color: #444; min-height: 1.3em; }
#status .warn { color: #C62828; }
#scroller { flex: 1 1 auto; overflow-y: auto; overflow-x: hidden; position: relative; }
table.history { table-layout: fixed; width: 100%; margin: 0; border-collapse: collapse; font-size: 13px; }
table.history th { position: sticky; top: 0; z-index: 1; background: #f4f4f4; }
table.history td, table.history th { white-space: nowrap; overflow: hidden; text-overflow: ellipsis;
  height: ROWpx; max-height: ROWpx; line-height: ROWpx; padding: 0 0.5em; box-sizing: border-box;
  border: 1px solid #e4e4e4; vertical-align: middle; }
table.history tr.pad td { border: none; padding: 0; height: auto; line-height: 0; }
table.history tbody tr:not(.pad) { cursor: pointer; }
col.c-lines { width: 10.5em; } col.c-time { width: 7.6em; } col.c-proc { width: 5.8em; }
col.c-type { width: 8.2em; } col.c-f { width: 7.8em; } col.c-lat { width: 5.8em; }
col.c-err { width: 14em; }
tr.target td { background: #fff3b0 !important; }
tr.selected td { background: #e8f0fe; }
tr.linked td:first-child { border-left: 4px solid #C62828; }
tr.nemesis td { background: #f6f1ff; }
td.t-ok { color: #1d5fbf; } td.t-fail { color: #b3124a; } td.t-info, td.t-never { color: #b86e00; }
td.t-never { font-style: italic; }
mark { background: #ffe066; padding: 0; }
#detail { flex: none; max-height: 38vh; overflow: auto; border-top: 2px solid #bbb; padding: 0.4em 1.5em;
  background: #fcfcfc; }
#detail pre { white-space: pre-wrap; word-break: break-all; margin: 0.2em 0 0.6em 0; max-height: 14em;
  overflow: auto; }
#detail h3 { margin: 0.3em 0; font-size: 1em; }
""".replace("ROWpx", f"{ROW_PX}px")

_BODY = """
<header>
<h1>History of {run}</h1>
<p><a href="report.html">&larr; the report</a> &middot; <a href="timeline.html">timeline</a> &middot;
<a href="history.jsonl">history.jsonl</a> (the file itself)</p>
<p class="muted">{what} Times are seconds since the run started. Operations view: an invoke and its
completion in one row (lines <i>a</i>&ndash;<i>b</i>) with the latency between them; an op never completed
has no completion line (its outcome is unknown). Rows marked red on the left are named by an anomaly
example of the report. Click a row to see its lines whole.</p>
<form id="controls" autocomplete="off">
<label><input type="radio" name="view" value="ops" checked> operations</label>
<label><input type="radio" name="view" value="lines"> lines</label>
<label>process <select id="f-proc"><option value="">any</option></select></label>
<label>partition <select id="f-part"><option value="">any</option></select></label>
<label>f <select id="f-f"><option value="">any</option></select></label>
<label><span id="type-label">outcome</span> <select id="f-type"><option value="">any</option></select></label>
<label><input type="checkbox" id="f-nemesis"> nemesis only</label>
<label><input type="checkbox" id="f-linked"> anomaly examples only</label>
<label>search <input id="q" type="search" placeholder='a value: 3-17, or "3-17" exactly'></label>
<label>go to line <input id="goto" size="9" inputmode="numeric"></label>
<button type="submit">go</button>
</form>
<p id="status">Loading the history&hellip;</p>
</header>
<div id="scroller"><table class="history" id="rows"><colgroup><col class="c-lines"><col class="c-time">
<col class="c-proc"><col class="c-type"><col class="c-f"><col class="c-lat"><col class="c-value">
<col class="c-err"></colgroup><thead><tr><th>line(s)</th><th class="num">time (s)</th><th>process</th>
<th id="type-head">outcome</th><th>f</th><th class="num">latency</th><th>value</th><th>error</th></tr></thead>
<tbody></tbody></table></div>
<div id="detail" hidden></div>
{data}
"""

_SCRIPT = DECODE_JS + r"""
(function () {
  var ROW = ROW_PX, MAX_PX = 15000000, m = null, meta = null, view = "ops", list = new Int32Array(0);
  var query = "", target = -1, targetLine = -1, selected = -1, nemesisCode = -1, linked = null, errMatch = null;
  var allOps = null, allLines = null, partHas = null, searchTimer = null;
  var $ = function (id) { return document.getElementById(id); };
  var esc = function (s) { return String(s).replace(/[&<>"]/g, function (c) {
    return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]; }); };
  var fmt = function (n) { return n.toLocaleString("en-US"); };

  function partnerOf(r) { return m.pair[r] ? r + m.pair[r] : -1; }
  function isOpRow(r) { return m.pair[r] >= 0; }  // an invoke, or a line with no other half
  function outcome(r) { var p = partnerOf(r); return p >= 0 && p > r ? m.type[p] : m.type[r]; }
  function valueText(r) {
    if (!m.text) return "";
    if (view === "ops") { var p = partnerOf(r); if (p > r && m.text[p]) return m.text[p]; }
    return m.text[r];
  }
  function latency(a, b) {
    var s = Math.abs(m.time[b] - m.time[a]);
    return s >= 1 ? s.toFixed(3) + " s" : (s * 1e3).toFixed(s >= 0.01 ? 1 : 3) + " ms";
  }

  function currentFilter() {
    return {proc: $("f-proc").value === "" ? -1 : +$("f-proc").value,
            f: $("f-f").value === "" ? -1 : +$("f-f").value,
            type: $("f-type").value === "" ? -1 : +$("f-type").value,
            part: $("f-part").value !== "", nemesis: $("f-nemesis").checked, linked: $("f-linked").checked};
  }

  function matches(r, flt) {
    var p = partnerOf(r);
    if (flt.proc >= 0 && m.proc[r] !== flt.proc) return false;
    if (flt.f >= 0 && m.f[r] !== flt.f) return false;
    if (flt.type >= 0 && (view === "ops" ? outcome(r) : m.type[r]) !== flt.type) return false;
    if (flt.nemesis && m.proc[r] !== nemesisCode) return false;
    if (flt.part && !(m.part[r] >= 0 && partHas[m.part[r]])) return false;
    if (flt.linked && !(linked.has(m.line[r]) || (view === "ops" && p >= 0 && linked.has(m.line[p]))))
      return false;
    if (query) {
      var hit = (m.text && m.text[r].indexOf(query) >= 0) || (m.err[r] >= 0 && errMatch[m.err[r]]);
      if (!hit && view === "ops" && p > r)
        hit = (m.text && m.text[p].indexOf(query) >= 0) || (m.err[p] >= 0 && errMatch[m.err[p]]);
      if (!hit) return false;
    }
    return true;
  }

  function filtersOn() {
    return $("f-proc").value !== "" || $("f-part").value !== "" || $("f-f").value !== "" ||
      $("f-type").value !== "" || $("f-nemesis").checked || $("f-linked").checked || query !== "";
  }

  function refilter() {
    var started = performance.now();
    var fpart = $("f-part").value;
    partHas = meta.parts.map(function (names) { return names.indexOf(fpart) >= 0; });
    errMatch = meta.errors.map(function (e) { return query !== "" && e.indexOf(query) >= 0; });
    var base = view === "ops" ? allOps : allLines;
    if (!filtersOn()) { list = base; }
    else {
      var out = new Int32Array(base.length), k = 0, flt = currentFilter();
      for (var i = 0; i < base.length; i++) if (matches(base[i], flt)) out[k++] = base[i];
      list = out.subarray(0, k);
    }
    var took = (performance.now() - started) / 1000, what = view === "ops" ? "operations" : "lines";
    var text = filtersOn() ? fmt(list.length) + " of " + fmt(base.length) + " " + what + " match"
                           : "all " + fmt(base.length) + " " + what;
    if (query) text += " \u00b7 search \u201c" + esc(query) + "\u201d";
    if (filtersOn()) text += " (" + took.toFixed(2) + " s)";
    $("status").innerHTML = text;
    $("status").setAttribute("data-matches", list.length);
    $("status").setAttribute("data-seconds", took.toFixed(3));
    document.body.setAttribute("data-filtered", String(Date.now()));
    $("scroller").scrollTop = 0;
    render();
  }

  function total() { return Math.min(list.length * ROW, MAX_PX); }
  function scaled() { return list.length * ROW > MAX_PX; }
  function visibleRows() { return Math.ceil($("scroller").clientHeight / ROW) + 2; }
  function firstRow() {
    var s = $("scroller").scrollTop, vis = visibleRows();
    if (!scaled()) return Math.floor(s / ROW);
    var room = Math.max(1, total() - $("scroller").clientHeight);
    return Math.round(Math.min(1, s / room) * Math.max(0, list.length - vis));
  }

  function cells(r) {
    var p = partnerOf(r), ops = view === "ops", parts = [];
    var lines = '<a href="#i' + m.line[r] + '">' + m.line[r] + "</a>";
    if (p >= 0 && ops && p > r) lines += "&ndash;" + '<a href="#i' + m.line[p] + '">' + m.line[p] + "</a>";
    if (p >= 0 && !ops) lines += ' <span class="muted">(' + (p > r ? "\u2192" : "\u2190") +
      ' <a href="#i' + m.line[p] + '">' + m.line[p] + "</a>)</span>";
    var code = ops ? outcome(r) : m.type[r], word = meta.types[code], cls = "t-" + word;
    if (ops && code === 0) { word = "never completed"; cls = "t-never"; }
    var err = m.err[ops && p > r ? p : r], errText = err >= 0 ? meta.errors[err] : "";
    if (ops && errText === "" && m.err[r] >= 0) errText = meta.errors[m.err[r]];
    var value = valueText(r), shown = esc(value.length > 600 ? value.slice(0, 600) + "\u2026" : value);
    if (query) {
      var at = value.indexOf(query);
      if (at >= 0) {
        var from = value.lastIndexOf("{", at);  // from the record or object that holds it
        if (from < 0 || at - from > 80) from = Math.max(0, at - 60);
        shown = (from > 0 ? "\u2026" : "") + esc(value.slice(from, at)) + "<mark>" + esc(query) + "</mark>" +
          esc(value.slice(at + query.length, at + query.length + 400));
      }
    }
    parts.push("<td>" + lines + "</td>", '<td class="num">' + m.time[r].toFixed(6) + "</td>",
      "<td>" + esc(meta.procs[m.proc[r]]) + "</td>", '<td class="' + cls + '">' + esc(word) + "</td>",
      "<td>" + esc(meta.fs[m.f[r]]) + "</td>",
      '<td class="num">' + (p >= 0 ? latency(r, p) : "") + "</td>",
      '<td class="value mono" title="' + esc(value.slice(0, 2000)) + '">' + shown + "</td>",
      '<td class="error" title="' + esc(errText) + '">' + esc(errText) + "</td>");
    return parts.join("");
  }

  function render() {
    var scroller = $("scroller"), first = firstRow(), n = Math.min(visibleRows() + 4, list.length - first);
    var head = scroller.querySelector("thead").offsetHeight;
    var top = scaled() ? scroller.scrollTop : first * ROW;
    var rows = ['<tr class="pad"><td colspan="8" style="height:' + top + 'px"></td></tr>'];
    for (var i = 0; i < n; i++) {
      var r = list[first + i], p = partnerOf(r), cls = [];
      if (linked.has(m.line[r]) || (view === "ops" && p > r && linked.has(m.line[p]))) cls.push("linked");
      if (m.proc[r] === nemesisCode) cls.push("nemesis");
      if (r === target || (view === "ops" && p === target)) cls.push("target");
      if (r === selected) cls.push("selected");
      var ids = view === "ops" && p > r ? m.line[r] + " " + m.line[p] : String(m.line[r]);
      rows.push('<tr id="i' + m.line[r] + '" data-row="' + r + '" data-lines="' + ids + '" class="' +
                cls.join(" ") + '">' + cells(r) + "</tr>");
    }
    var bottom = Math.max(0, total() + 0 - top - n * ROW);
    rows.push('<tr class="pad"><td colspan="8" style="height:' + bottom + 'px"></td></tr>');
    scroller.querySelector("tbody").innerHTML = rows.join("");
  }

  function scrollToRow(r) {
    var k = -1;
    for (var i = 0; i < list.length; i++) if (list[i] === r) { k = i; break; }
    if (k < 0) return false;
    var scroller = $("scroller"), room = scroller.clientHeight;
    if (scaled()) {
      scroller.scrollTop = k / Math.max(1, list.length - visibleRows()) * Math.max(1, total() - room);
    } else {
      scroller.scrollTop = Math.max(0, k * ROW - room / 2);
    }
    render();
    return true;
  }

  function goToLine(index) {
    var r = m.rowOfLine(index), note = "";
    if (r < 0) {
      var why = index >= meta.lines || index < 0 ? "the history has " + fmt(meta.lines) + " lines (0 to " +
        fmt(meta.lines - 1) + ")" : "that line could not be read (results.json lists the errors)";
      $("status").innerHTML = '<span class="warn">line ' + esc(index) + " is not here: " + why + "</span>";
      return;
    }
    if (view === "ops" && m.pair[r] < 0) r = r + m.pair[r];  // a completion: its operation's row
    target = view === "ops" ? r : m.rowOfLine(index);
    targetLine = index;
    if (!scrollToRow(target)) {
      clearFilters();
      note = " (filters cleared to show it)";
      refilter();
      scrollToRow(target);
    }
    $("status").innerHTML += " \u00b7 line " + fmt(index) + note;
    document.body.setAttribute("data-target", String(index));
  }

  function clearFilters() {
    ["f-proc", "f-part", "f-f", "f-type"].forEach(function (id) { $(id).value = ""; });
    $("f-nemesis").checked = false; $("f-linked").checked = false; $("q").value = ""; query = "";
  }

  function pretty(text) {
    if (!text) return "(no value)";
    try { return JSON.stringify(JSON.parse(text), null, 1); } catch (e) { return text; }
  }

  function showDetail(r) {
    selected = r;
    var p = partnerOf(r), rows = p >= 0 ? [Math.min(r, p), Math.max(r, p)] : [r], out = [];
    if (p >= 0) out.push("<h3>" + esc(meta.fs[m.f[r]]) + " by process " + esc(meta.procs[m.proc[r]]) +
                         ": latency " + latency(r, p) + "</h3>");
    rows.forEach(function (k) {
      var e = m.err[k] >= 0 ? "<br>error: " + esc(meta.errors[m.err[k]]) : "";
      out.push("<div><b>line " + m.line[k] + "</b> \u00b7 " + m.time[k].toFixed(6) + " s \u00b7 process " +
               esc(meta.procs[m.proc[k]]) + " \u00b7 " + esc(meta.types[m.type[k]]) + " \u00b7 " +
               esc(meta.fs[m.f[k]]) + e + "<pre>" + esc(pretty(m.text ? m.text[k] : "")) + "</pre></div>");
    });
    out.push('<p class="muted">To follow a value through the whole run (sends, polls, final read, ' +
             "replicas, faults around it): <code>fencepost trace RUN_DIR VALUE</code>.</p>");
    $("detail").innerHTML = '<button type="button" id="detail-close" style="float:right">close</button>' +
      out.join("");
    $("detail").hidden = false;
    $("detail-close").addEventListener("click", function () {
      $("detail").hidden = true; selected = -1; render(); });
    render();
  }

  function option(select, value, label) {
    var o = document.createElement("option"); o.value = value; o.textContent = label; select.appendChild(o);
  }

  function setTypeOptions() {
    var select = $("f-type"), keep = select.value;
    select.innerHTML = '<option value="">any</option>';
    meta.types.forEach(function (t, code) {
      option(select, code, view === "ops" && code === 0 ? "never completed" : t);
    });
    select.value = keep;
    $("type-label").textContent = $("type-head").textContent = view === "ops" ? "outcome" : "type";
  }

  async function start() {
    try { m = await HistoryData.load(true); } catch (e) {
      $("status").innerHTML = '<span class="warn">' + esc(e.message) + "</span>"; return; }
    meta = m.meta;
    nemesisCode = meta.procs.indexOf(meta.nemesis);
    linked = new Set(meta.linked);
    var ops = [], lines = new Int32Array(m.n);
    for (var r = 0; r < m.n; r++) { lines[r] = r; if (isOpRow(r)) ops.push(r); }
    allOps = Int32Array.from(ops); allLines = lines;
    var procs = meta.procs.map(function (p, code) { return [p, code]; }).sort(function (a, b) {
      var x = +a[0], y = +b[0];
      if (isNaN(x) !== isNaN(y)) return isNaN(x) ? -1 : 1;
      return isNaN(x) ? (a[0] < b[0] ? -1 : 1) : x - y; });
    procs.forEach(function (p) { option($("f-proc"), p[1], p[0]); });
    var names = {};
    meta.parts.forEach(function (list) { list.forEach(function (n) { names[n] = true; }); });
    Object.keys(names).sort().forEach(function (n) { option($("f-part"), n, n); });
    meta.fs.forEach(function (f, code) { option($("f-f"), code, f); });
    setTypeOptions();
    ["f-proc", "f-part", "f-f", "f-type", "f-nemesis", "f-linked"].forEach(function (id) {
      $(id).addEventListener("change", refilter); });
    document.querySelectorAll('input[name="view"]').forEach(function (radio) {
      radio.addEventListener("change", function () {
        // The line in focus (linked to, or clicked) stays in sight in the other view.
        var focus = target >= 0 ? targetLine : (selected >= 0 ? m.line[selected] : -1);
        view = radio.value; target = -1; selected = -1; setTypeOptions(); refilter();
        if (focus >= 0) goToLine(focus); }); });
    $("q").addEventListener("input", function () {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(function () { query = $("q").value; refilter(); }, 250); });
    $("controls").addEventListener("submit", function (event) {
      event.preventDefault();
      clearTimeout(searchTimer);
      if ($("q").value !== query) { query = $("q").value; refilter(); }
      var n = $("goto").value.trim();
      if (n !== "") location.hash = "i" + n;
    });
    var pending = false;
    $("scroller").addEventListener("scroll", function () {
      if (!pending) { pending = true; requestAnimationFrame(function () { pending = false; render(); }); }
    });
    window.addEventListener("resize", render);
    $("rows").addEventListener("click", function (event) {
      if (event.target.closest("a")) return;
      var tr = event.target.closest("tr[data-row]");
      if (tr) showDetail(+tr.getAttribute("data-row"));
    });
    window.addEventListener("hashchange", fromHash);
    if (m.n === 0) {
      $("status").textContent = "The history is empty (no history.jsonl, or no line in it).";
    } else {
      refilter();
      fromHash();
    }
    window.historyViewer = {model: m, rows: function () { return list; }};
    document.body.setAttribute("data-ready", "yes");
  }

  function fromHash() {
    var found = /^#i(\d+)$/.exec(location.hash);
    if (found) goToLine(+found[1]);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
""".replace("ROW_PX", str(ROW_PX))


def write_history_page(run_dir: Path, blobs: HistoryBlobs) -> Path:
    meta = blobs.meta
    if meta["rows"] == 0:
        what = "The history is empty (no history.jsonl, or no line in it)."
    else:
        what = f"All {meta['lines']:,} lines of history.jsonl"
        if meta["unreadable"]:
            what += f" ({meta['unreadable']:,} could not be read: results.json lists them)"
        what += "."
    body = _BODY.format(run=esc(run_dir.name), what=what, data=blobs.script_tags())
    path = run_dir / HISTORY_PAGE
    write_atomically(path, page(f"history {run_dir.name}", body, _STYLE, _SCRIPT))
    return path
