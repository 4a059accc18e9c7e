"""The report of a run: `write_report(run_dir)` writes RUN_DIR/report.html, the
history viewer RUN_DIR/history.html, the timeline RUN_DIR/timeline.html, a page per
traced value or offset under RUN_DIR/trace/, and RUN_DIR/plots/*.png, every page
self-contained. docs/REPORT.md says what they show.

Modules: build (write_report), inputs (test.json, results.json, files to link, what
to trace), clients (the client logs under clients/, and why each was written),
client_links (their links on the report page), scan (one pass over history.jsonl, feeding observers), bands (nemesis ops
-> fault bands), colours (shared by plots and pages), figures (matplotlib setup and
shading), plots (latency, rate, unseen, realtime lag), lag (the realtime lag),
timeline (ops per process, PNG), history_data (the history embedded in the pages),
history_viewer, timeline_page, trace_page (harness/report/trace.py's traces), html (the
report page), page (HTML shared with `fencepost serve`). matplotlib is imported only
when a report is written, so importing this package stays cheap.
"""
from __future__ import annotations

from pathlib import Path

from fencepost.harness.rundir.names import REPORT_FILE


def write_report(run_dir: Path | str) -> Path:
    """Write RUN_DIR/report.html, history.html and plots/; returns the report's
    path (harness/report/build.py)."""
    from fencepost.harness.report.build import write_report as write

    return write(run_dir)


__all__ = ["REPORT_FILE", "write_report"]
