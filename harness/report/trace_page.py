"""The page of one trace, `RUN_DIR/trace/<value-…|offset-…>.html` (harness/report/trace.py):
every event that touched a value or an offset, in time order, each line a link into
the history viewer, the nemesis actions around it, and what final.jsonl holds where
it was. Self-contained (inline style, no script); links relative to the run directory.
"""
from __future__ import annotations

from pathlib import Path

from fencepost.harness.report.page import esc, page
from fencepost.harness.report.trace import Trace
from fencepost.harness.rundir.atomic import output_folder, write_atomically
from fencepost.harness.rundir.safe_names import contained

TRACE_DIR = "trace"

_STYLE = """
tr.nemesis td { background: #f6f1ff; }
tr.this td.held { color: #1d5fbf; font-weight: bold; }
td.other { color: #b3124a; }
"""


def trace_href(trace_or_target) -> str:
    """The page's path relative to the run directory."""
    target = getattr(trace_or_target, "target", trace_or_target)
    return f"{TRACE_DIR}/{target.file_name()}"


def render_trace(trace: Trace, run_name: str) -> str:
    target = trace.target
    rows = []
    for event in trace.events:
        links = "&ndash;".join(f'<a href="../history.html#i{i}">{i}</a>' for i in event.lines)
        css = ' class="nemesis"' if event.kind == "nemesis" else ""
        rows.append(f'<tr{css}><td class="num">{event.time / 1e9:.6f}</td><td>{links}</td>'
                    f"<td>{esc(event.process)}</td><td>{esc(event.what)}</td></tr>")
    events = ('<table id="events"><tr><th class="num">time (s)</th><th>line(s)</th><th>process</th>'
              f'<th>what happened</th></tr>{"".join(rows)}</table>') if rows else \
        '<p class="muted">No history line touched it.</p>'
    body = [f"<h1>Trace of {esc(target.describe())} <span class=\"muted\">{esc(run_name)}</span></h1>",
            '<p><a href="../report.html">&larr; the report</a> &middot; '
            '<a href="../history.html">the history viewer</a></p>',
            '<p class="muted">Every event that touched it, in time order (seconds since the run started; '
            "each line number opens that line in the history viewer): "
            + ("its send's invoke and completion and every poll that returned it"
               if target.value is not None else "the send acked there and every poll that returned a record there")
            + ", with the nemesis actions around them (tinted). Then what final.jsonl, written after the run "
            "healed, holds at each offset it was seen at: the final consumer read, and each replica's record, "
            "its leader epoch there and its high watermark (records below the high watermark are committed; "
            "replicas that differ there have diverged).</p>",
            "<h2>Events</h2>", events, "<h2>After the run: final.jsonl</h2>", _finals(trace)]
    return page(f"trace of {target.describe()}", "\n".join(body), _STYLE)


def _finals(trace: Trace) -> str:
    if not trace.final_present:
        return '<p class="muted">No final.jsonl: the run stopped before its final reads.</p>'
    wanted = trace.target.value
    parts = []
    for final in trace.finals:
        topic, partition, offset = final.place
        rows = [_row("final read", final.read, wanted, "&ndash;" if final.read_complete is not False
                     else "incomplete read", "", "")]
        for r in final.replicas:
            hw = "&ndash;" if r.high_watermark is None else (
                f"{r.high_watermark} ({'below: committed' if offset < r.high_watermark else 'at or above'})")
            rows.append(_row(r.node, r.value, wanted, "&ndash;" if r.epoch is None else str(r.epoch), hw,
                             "&ndash;" if r.log_end_offset is None else str(r.log_end_offset)))
        parts.append(f'<h3>{esc(topic)}-{partition} offset {offset}</h3><table class="final">'
                     '<tr><th>who</th><th>record there</th><th>leader epoch</th><th>high watermark</th>'
                     f'<th>log end</th></tr>{"".join(rows)}</table>')
    if wanted is not None:
        where = ", ".join(f"{t}-{p} offset {o}" for t, p, o in trace.held_at) or "nowhere"
        parts.append(f'<p id="held">The final read holds {esc(repr(wanted))} at: {esc(where)}.</p>')
    return "".join(parts) or '<p class="muted">It was never acked or polled at an offset.</p>'


def _row(who: str, value: str | None, wanted: str | None, epoch: str, hw: str, end: str) -> str:
    if value is None:
        held, css = '<span class="muted">no record</span>', ""
    else:
        mine = wanted is None or value == wanted
        held = esc(repr(value)) + ("" if wanted is None else (" (this value)" if mine else " (another value)"))
        css = ' class="this"' if mine and wanted is not None else ""
        if not mine:
            held = f'<span class="other">{held}</span>'
    return f'<tr{css}><td>{esc(who)}</td><td class="held">{held}</td><td>{epoch}</td><td>{hw}</td><td>{end}</td></tr>'


def write_trace_page(run_dir: Path | str, trace: Trace) -> Path:
    """RUN_DIR/trace/<name>.html, written whole into a real trace/ folder of the run (a symlink
    there is replaced, never followed: harness/rundir/atomic.py); returns its path."""
    run_dir = Path(run_dir)
    path = contained(output_folder(run_dir, TRACE_DIR), trace.target.file_name())
    write_atomically(path, render_trace(trace, run_dir.name))
    return path
