"""The HTML timeline, `RUN_DIR/timeline.html` (after Jepsen's timeline.html): a lane per
process (the nemesis first), each operation a bar from its invoke to its completion,
coloured by outcome (an op never completed runs to the end of the history), the fault
bands behind (scenarios as a strip along the top). Hover a bar for the op — kind,
process, outcome, lines, times, latency, value, error — or the background for the
faults active then; click a bar to open its lines in the history viewer. The mouse
wheel zooms around the pointer, dragging pans, a double click shows the whole run.

Self-contained: the history's columns are embedded as in history.html
(harness/report/history_data.py); the values too, unless their compressed text is
over TEXT_LIMIT bytes (then the tooltip says the history viewer has them). Drawn on a
canvas, only what is in view, so half a million ops stay responsive.
"""
from __future__ import annotations

from pathlib import Path

from fencepost.harness.measures.bands import SCENARIO, Band
from fencepost.harness.report.colours import TYPE_COLOURS, fault_colour
from fencepost.harness.report.history_data import DECODE_JS, HistoryBlobs
from fencepost.harness.report.page import esc, json_script, page
from fencepost.harness.rundir.atomic import write_atomically

TIMELINE_PAGE = "timeline.html"
TEXT_LIMIT = 8 << 20
NEMESIS_COLOUR = "#555555"

_STYLE = """
body { margin: 1em 1.5em; }
#bar { display: flex; flex-wrap: wrap; gap: 0.5em 1.2em; align-items: center; margin: 0.4em 0; }
#legend span { margin-right: 1em; white-space: nowrap; }
#legend i { display: inline-block; width: 0.9em; height: 0.9em; margin-right: 0.3em; vertical-align: -0.1em; }
#wrap { position: relative; border: 1px solid #ddd; }
canvas { display: block; cursor: crosshair; }
#tip { position: absolute; pointer-events: none; background: #fffffe; border: 1px solid #888;
  box-shadow: 0 2px 6px rgba(0,0,0,0.2); padding: 0.35em 0.6em; font-size: 12px; max-width: 36em;
  z-index: 2; white-space: normal; word-break: break-all; }
#tip b { word-break: normal; }
#status { color: #444; }
"""

_BODY = """
<h1>Timeline of {run}</h1>
<p><a href="report.html">&larr; the report</a> &middot; <a href="history.html">the history viewer</a></p>
<p class="muted">A lane per process, the nemesis on top; each operation a bar from its invoke to its completion
(an operation never completed runs to the end), coloured by outcome; faults shaded behind, scenarios as a strip
along the top. Time is seconds since the run started. Hover a bar for the operation, the background for the
faults then; click a bar to open its lines in the history viewer. Mouse wheel: zoom around the pointer;
drag: pan; double click: the whole run.</p>
<div id="bar"><span id="legend">{legend}</span>
<button type="button" id="zoom-in">zoom in</button> <button type="button" id="zoom-out">zoom out</button>
<button type="button" id="whole">whole run</button> <span id="status">Loading&hellip;</span></div>
<div id="wrap"><canvas id="timeline"></canvas><div id="tip" hidden></div></div>
{bands}
{colours}
{data}
"""

_SCRIPT = DECODE_JS + r"""
(function () {
  var LEFT = 78, TOP = 26, m, meta, lanes = [], laneOf, laneH = 18, t0 = 0, t1 = 1, end = 1;
  var bands, colours, canvas, ctx, width = 800, height = 100, drag = null, hovered = null;
  var $ = function (id) { return document.getElementById(id); };
  var esc = function (s) { return String(s).replace(/[&<>"]/g, function (c) {
    return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]; }); };

  function X(t) { return LEFT + (t - t0) / (t1 - t0) * (width - LEFT - 8); }
  function T(x) { return t0 + (x - LEFT) / (width - LEFT - 8) * (t1 - t0); }
  function outcome(r) { var p = m.pair[r]; return p > 0 ? m.type[r + p] : m.type[r]; }
  function colourOf(r) {
    if (meta.procs[m.proc[r]] === meta.nemesis) return colours.nemesis;
    var code = outcome(r), name = meta.types[code];
    return colours.types[code === 0 ? "info" : name] || "#999";
  }

  function build() {
    var procs = meta.procs.map(function (p, code) { return [p, code]; });
    procs.sort(function (a, b) {
      if (a[0] === meta.nemesis || b[0] === meta.nemesis) return a[0] === meta.nemesis ? -1 : 1;
      var x = +a[0], y = +b[0];
      return isNaN(x) || isNaN(y) ? (a[0] < b[0] ? -1 : 1) : x - y; });
    laneOf = new Int32Array(meta.procs.length);
    procs.forEach(function (p, k) { laneOf[p[1]] = k; lanes.push({name: p[0], rows: []}); });
    for (var r = 0; r < m.n; r++) if (m.pair[r] >= 0) lanes[laneOf[m.proc[r]]].rows.push(r);
    lanes.forEach(function (lane) {
      var n = lane.rows.length; lane.start = new Float64Array(n); lane.end = new Float64Array(n);
      lane.reach = new Float64Array(n);  // the latest end so far: ops of the nemesis may overlap
      var reach = -Infinity;
      lane.rows.forEach(function (r, k) {
        lane.start[k] = m.time[r];
        lane.end[k] = m.pair[r] > 0 ? m.time[r + m.pair[r]] : (m.type[r] === 0 ? end : m.time[r]);
        reach = Math.max(reach, lane.end[k]); lane.reach[k] = reach;
      });
    });
    laneH = lanes.length <= 40 ? 18 : Math.max(4, Math.floor(900 / lanes.length));
  }

  function firstEndingAfter(lane, t) {  // the first op whose reach (so: maybe it) ends at or after t
    var lo = 0, hi = lane.reach.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (lane.reach[mid] < t) lo = mid + 1; else hi = mid; }
    return lo;
  }

  function size() {
    width = Math.max(400, $("wrap").clientWidth);
    height = TOP + lanes.length * laneH + 4;
    var dpr = window.devicePixelRatio || 1;
    canvas.width = width * dpr; canvas.height = height * dpr;
    canvas.style.width = width + "px"; canvas.style.height = height + "px";
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  }

  function ticks() {
    var span = t1 - t0, raw = span / 10, mag = Math.pow(10, Math.floor(Math.log10(raw))), step = mag;
    [1, 2, 5, 10].some(function (s) { step = s * mag; return raw <= step; });
    ctx.fillStyle = "#555"; ctx.strokeStyle = "#eee"; ctx.font = "11px sans-serif"; ctx.textAlign = "center";
    for (var t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      var x = X(t); ctx.beginPath(); ctx.moveTo(x, TOP - 4); ctx.lineTo(x, height); ctx.stroke();
      ctx.fillText(+t.toFixed(6) + " s", x, TOP - 8);
    }
  }

  function draw() {
    ctx.clearRect(0, 0, width, height);
    ticks();
    var bottom = TOP + lanes.length * laneH;
    bands.forEach(function (b) {
      if (b[1] < t0 || b[0] > t1) return;
      var x1 = Math.max(LEFT, X(b[0])), x2 = Math.min(width, X(b[1])), c = colours.faults[b[2]] || "#888";
      ctx.globalAlpha = b[2] === "scenario" ? 0.7 : 0.16; ctx.fillStyle = c;
      if (b[2] === "scenario") ctx.fillRect(x1, TOP - 3, Math.max(1, x2 - x1), 4);
      else ctx.fillRect(x1, TOP, Math.max(1, x2 - x1), bottom - TOP);
    });
    ctx.globalAlpha = 1;
    ctx.font = "11px sans-serif"; ctx.textAlign = "right";
    lanes.forEach(function (lane, k) {
      var y = TOP + k * laneH, h = Math.max(2, laneH - (laneH > 8 ? 5 : 1));
      if (laneH >= 9 || k % Math.ceil(9 / laneH) === 0) {
        ctx.fillStyle = "#333"; ctx.fillText(lane.name, LEFT - 6, y + laneH / 2 + 4);
      }
      var lastX = -1, lastColour = "";
      for (var i = firstEndingAfter(lane, t0); i < lane.rows.length && lane.start[i] <= t1; i++) {
        if (lane.end[i] < t0) continue;
        var x1 = Math.max(LEFT, X(lane.start[i])), x2 = Math.min(width, X(lane.end[i]));
        var c = colourOf(lane.rows[i]);
        if (x2 <= lastX && c === lastColour) continue;  // inside a pixel already drawn in that colour
        ctx.fillStyle = c;
        ctx.fillRect(x1, y + (laneH - h) / 2, Math.max(1, x2 - x1), h);
        lastX = Math.max(lastX, x1 + 1); lastColour = c;
      }
    });
    $("status").textContent = (t1 - t0 < end * 0.999 ? "showing " + t0.toFixed(3) + "\u2013" + t1.toFixed(3) +
      " s of " : "the whole run: ") + end.toFixed(3) + " s, " + m.n.toLocaleString("en-US") + " lines";
  }

  function opAt(x, y) {
    var k = Math.floor((y - TOP) / laneH);
    if (k < 0 || k >= lanes.length || x < LEFT) return null;
    var lane = lanes[k], t = T(x), slack = 3 * (t1 - t0) / (width - LEFT), best = null;
    for (var i = firstEndingAfter(lane, t - slack); i < lane.rows.length && lane.start[i] <= t + slack; i++) {
      if (lane.end[i] < t - slack) continue;
      if (best === null || lane.start[i] >= lane.start[best]) best = i;  // the innermost (latest begun)
    }
    return best === null ? null : {lane: k, row: lane.rows[best]};
  }

  function tip(html, x, y) {
    var el = $("tip"); el.innerHTML = html; el.hidden = false;
    var left = Math.min(x + 14, width - el.offsetWidth - 4);
    el.style.left = Math.max(0, left) + "px"; el.style.top = (y + 16) + "px";
  }

  function describe(r) {
    var p = m.pair[r] > 0 ? r + m.pair[r] : -1, code = outcome(r);
    var word = code === 0 ? "never completed (outcome unknown)" : meta.types[code];
    var lines = m.line[r] + (p >= 0 ? "\u2013" + m.line[p] : "");
    var out = ["<b>" + esc(meta.fs[m.f[r]]) + "</b> \u00b7 process " + esc(meta.procs[m.proc[r]]) + " \u00b7 " +
               esc(word), "lines " + lines + " (click: open them in the history viewer)",
               "invoked " + m.time[r].toFixed(6) + " s" + (p >= 0 ? " \u00b7 completed " + m.time[p].toFixed(6) +
               " s \u00b7 latency " + fmtLatency(m.time[p] - m.time[r]) : "")];
    if (m.text) {
      var value = p >= 0 && m.text[p] ? m.text[p] : m.text[r];
      if (value) out.push("value: <code>" + esc(value.length > 300 ? value.slice(0, 300) + "\u2026" : value) +
                          "</code>");
    } else {
      out.push('<span class="muted">value: in the history viewer (click)</span>');
    }
    var err = p >= 0 && m.err[p] >= 0 ? m.err[p] : m.err[r];
    if (err >= 0) out.push("error: " + esc(meta.errors[err]));
    return out.join("<br>");
  }

  function fmtLatency(s) { return s >= 1 ? s.toFixed(3) + " s" : (s * 1e3).toFixed(3) + " ms"; }

  function bandsAt(t) {
    return bands.filter(function (b) { return b[0] <= t && t <= b[1]; }).map(function (b) {
      return esc(b[3]) + " (" + b[0].toFixed(3) + "\u2013" + b[1].toFixed(3) + " s)"; });
  }

  function onMove(event) {
    var box = canvas.getBoundingClientRect(), x = event.clientX - box.left, y = event.clientY - box.top;
    if (drag) {
      var dt = (drag.x - x) / (width - LEFT - 8) * (drag.t1 - drag.t0);
      t0 = drag.t0 + dt; t1 = drag.t1 + dt; draw(); return;
    }
    var hit = opAt(x, y);
    hovered = hit;
    if (hit) { tip(describe(hit.row), x, y); canvas.style.cursor = "pointer"; }
    else {
      canvas.style.cursor = "crosshair";
      var faults = x >= LEFT ? bandsAt(T(x)) : [];
      if (faults.length) tip("<b>faults at " + T(x).toFixed(3) + " s</b><br>" + faults.join("<br>"), x, y);
      else $("tip").hidden = true;
    }
    document.body.setAttribute("data-hovered", hit ? String(m.line[hit.row]) : "");
  }

  function zoom(factor, at) {
    var a = at === undefined ? (t0 + t1) / 2 : at, span = Math.max((t1 - t0) * factor, 1e-6);
    t0 = a - (a - t0) * factor; t1 = t0 + span;
    if (t1 - t0 >= end) { t0 = 0; t1 = end; }
    draw();
  }

  async function start() {
    try { m = await HistoryData.load(true); } catch (e) { $("status").textContent = e.message; return; }
    meta = m.meta;
    bands = JSON.parse($("timeline-bands").textContent);
    colours = JSON.parse($("timeline-colours").textContent);
    end = Math.max(meta.end / 1e9, 1e-3); t0 = 0; t1 = end;
    canvas = $("timeline"); ctx = canvas.getContext("2d");
    build(); size(); draw();
    canvas.addEventListener("mousemove", onMove);
    canvas.addEventListener("mouseleave", function () { $("tip").hidden = true; if (!drag) hovered = null; });
    canvas.addEventListener("mousedown", function (event) {
      drag = {x: event.clientX - canvas.getBoundingClientRect().left, t0: t0, t1: t1, moved: false}; });
    window.addEventListener("mouseup", function (event) {
      var was = drag; drag = null;
      if (was && Math.abs(event.clientX - canvas.getBoundingClientRect().left - was.x) < 3 && hovered)
        location.href = "history.html#i" + m.line[hovered.row];
    });
    canvas.addEventListener("wheel", function (event) {
      event.preventDefault();
      zoom(Math.pow(1.0015, event.deltaY), T(event.clientX - canvas.getBoundingClientRect().left));
    }, {passive: false});
    canvas.addEventListener("dblclick", function () { t0 = 0; t1 = end; draw(); });
    $("zoom-in").addEventListener("click", function () { zoom(0.5); });
    $("zoom-out").addEventListener("click", function () { zoom(2); });
    $("whole").addEventListener("click", function () { t0 = 0; t1 = end; draw(); });
    window.addEventListener("resize", function () { size(); draw(); });
    window.timelineView = {
      // Where line `index`'s op is drawn, in page coordinates (for the tests: they hover there).
      locate: function (index) {
        var r = m.rowOfLine(index); if (r < 0) return null;
        if (m.pair[r] < 0) r += m.pair[r];
        var lane = lanes[laneOf[m.proc[r]]], k = lane.rows.indexOf(r), box = canvas.getBoundingClientRect();
        var x1 = Math.max(LEFT, X(lane.start[k])), x2 = Math.min(width, X(lane.end[k]));
        return [box.left + (x1 + x2) / 2, box.top + TOP + laneOf[m.proc[r]] * laneH + laneH / 2];
      },
      show: function (from, to) { t0 = from; t1 = to; draw(); },
      lanes: function () { return lanes.map(function (l) { return l.name; }); }
    };
    document.body.setAttribute("data-ready", "yes");
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
"""


def write_timeline_page(run_dir: Path, blobs: HistoryBlobs, bands: list[Band]) -> Path:
    spare: dict[str, str] = {}
    kinds = sorted({b.kind for b in bands})
    faults = {kind: fault_colour(kind, spare) for kind in kinds}
    legend = "".join(f'<span><i style="background:{colour}"></i>{esc(name)}</span>'
                     for name, colour in TYPE_COLOURS.items())
    legend += f'<span><i style="background:{NEMESIS_COLOUR}"></i>nemesis action</span>'
    legend += "".join(f'<span><i style="background:{faults[k]};opacity:{0.7 if k == SCENARIO else 0.35}"></i>'
                      f'{esc("scenario (top strip)" if k == SCENARIO else k)}</span>' for k in kinds)
    band_list = [[b.start / 1e9, b.end / 1e9, b.kind,
                  b.label + (f" (in {b.scenario})" if b.scenario and b.kind != SCENARIO else "")] for b in bands]
    with_text = len(blobs.text) <= TEXT_LIMIT
    body = _BODY.format(run=esc(run_dir.name), legend=legend,
                        bands=json_script("timeline-bands", band_list),
                        colours=json_script("timeline-colours", {"types": TYPE_COLOURS, "faults": faults,
                                                                 "nemesis": NEMESIS_COLOUR}),
                        data=blobs.script_tags(with_text=with_text))
    path = run_dir / TIMELINE_PAGE
    write_atomically(path, page(f"timeline {run_dir.name}", body, _STYLE, _SCRIPT))
    return path
