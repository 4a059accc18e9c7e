"""The history viewer, `RUN_DIR/history.html`: history lines as a table with an
anchor per line (`history.html#i1234`), so the report's anomaly examples link to
the ops they name, shown in their context.

A history of up to FULL_LIMIT lines is shown whole. A larger one is not (a
million rows would not render): the page shows its first HEAD lines and CONTEXT
lines either side of every linked line, at most MAX_ROWS rows, with a row saying
how many lines each gap leaves out. `keep_for_viewer` names the lines the history
scan must keep for that (the scan runs before the size is known, so it keeps the
first FULL_LIMIT too).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from harness.report.page import esc, page
from harness.report.scan import ScannedHistory

HISTORY_PAGE = "history.html"
FULL_LIMIT = 5_000
HEAD = 50
CONTEXT = 8
MAX_ROWS = 20_000
VALUE_CHARS = 400

_STYLE = """
table.history td { white-space: nowrap; }
table.history td.value { white-space: normal; word-break: break-all; max-width: 60em; }
tr:target td { background: #fff3b0 !important; }
tr.linked td:first-child { border-left: 4px solid #C62828; }
tr.gap td { color: #666; background: #fafafa; text-align: center; font-style: italic; }
td.t-ok { color: #1d5fbf; } td.t-fail { color: #b3124a; } td.t-info { color: #b86e00; }
tr.nemesis td { background: #f6f1ff; }
#jump-message { color: #C62828; margin-left: 1em; }
"""

# Jump to a line by number; says so when the line is not on this page.
_SCRIPT = """
function jumpTo(form) {
  var n = form.elements["line"].value.trim();
  var row = document.getElementById("i" + n);
  document.getElementById("jump-message").textContent =
      row ? "" : "line " + n + " is not shown on this page (see history.jsonl)";
  if (row) { location.hash = "i" + n; }
  return false;
}
"""


def keep_for_viewer(linked: set[int]) -> set[int]:
    """The history lines the viewer may show, given the linked ones."""
    keep = set(range(FULL_LIMIT))
    for index in linked:
        keep.update(range(max(0, index - CONTEXT), index + CONTEXT + 1))
    return keep


def shown_indices(lines: int, linked: set[int]) -> list[int]:
    """Which lines the page shows, in order (see the module doc)."""
    if lines <= FULL_LIMIT:
        return list(range(lines))
    shown = set(range(min(HEAD, lines)))
    for index in sorted(linked):
        if len(shown) >= MAX_ROWS:
            break
        shown.update(range(max(0, index - CONTEXT), min(lines, index + CONTEXT + 1)))
    return sorted(shown)


def write_history_page(run_dir: Path, scan: ScannedHistory, linked: set[int]) -> Path:
    shown = shown_indices(scan.lines, linked)
    rows: list[str] = []
    previous = -1
    for index in shown:
        if index > previous + 1:
            rows.append(_gap(index - previous - 1))
        rows.append(_row(index, scan.kept.get(index), index in linked))
        previous = index
    if scan.lines > previous + 1:
        rows.append(_gap(scan.lines - previous - 1))
    if scan.lines == 0:
        what = "The history is empty (no history.jsonl, or no line in it)."
    elif len(shown) == scan.lines:
        what = f"All {scan.lines:,} lines of history.jsonl."
    else:
        what = (f"history.jsonl has {scan.lines:,} lines; shown: the first {min(HEAD, scan.lines)} "
                f"and {CONTEXT} lines either side of each operation an anomaly example names "
                f"({len(shown):,} lines). The whole file: <a href=\"history.jsonl\">history.jsonl</a>.")
    body = (f'<h1>History of {esc(run_dir.name)}</h1>'
            f'<p><a href="report.html">&larr; the report</a></p>'
            f"<p>{what} Lines named by an anomaly example are marked on the left; "
            f"times are seconds since the run started.</p>"
            f'<form onsubmit="return jumpTo(this)">Go to line <input name="line" size="8" '
            f'inputmode="numeric"> <button>go</button><span id="jump-message"></span></form>'
            f'<table class="history"><thead><tr><th class="num">index</th><th class="num">time (s)</th>'
            f"<th>process</th><th>type</th><th>f</th><th>value</th><th>error</th></tr></thead>"
            f'<tbody>{"".join(rows)}</tbody></table>')
    path = run_dir / HISTORY_PAGE
    path.write_text(page(f"history {run_dir.name}", body, _STYLE, _SCRIPT), encoding="utf-8")
    return path


def _row(index: int, line: dict[str, Any] | None, linked: bool) -> str:
    classes = ["linked"] if linked else []
    if line is None:
        return (f'<tr id="i{index}" class="{" ".join(classes)}"><td class="num">{index}</td>'
                f'<td colspan="6" class="muted">this line could not be read (see results.json '
                f"errors)</td></tr>")
    if line.get("process") == "nemesis":
        classes.append("nemesis")
    kind = str(line.get("type", ""))
    value = line.get("value")
    text = "" if value is None else orjson.dumps(value, default=str).decode()
    if len(text) > VALUE_CHARS:
        text = f"{text[:VALUE_CHARS]}… ({len(text):,} characters)"
    time = line.get("time")
    seconds = f"{time / 1e9:.6f}" if isinstance(time, int) else ""
    return (f'<tr id="i{index}" class="{" ".join(classes)}">'
            f'<td class="num"><a href="#i{index}">{index}</a></td><td class="num">{seconds}</td>'
            f"<td>{esc(line.get('process', ''))}</td><td class=\"t-{esc(kind)}\">{esc(kind)}</td>"
            f"<td>{esc(line.get('f', ''))}</td><td class=\"value mono\">{esc(text)}</td>"
            f"<td>{esc(line.get('error') or '')}</td></tr>")


def _gap(n: int) -> str:
    return f'<tr class="gap"><td colspan="7">… {n:,} line{"s" if n != 1 else ""} not shown …</td></tr>'
