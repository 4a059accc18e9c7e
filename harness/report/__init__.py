"""The report of a run (DESIGN.md §2 step 7): `write_report(run_dir)` writes
RUN_DIR/report.html (self-contained), RUN_DIR/history.html (the history viewer)
and RUN_DIR/plots/*.png. docs/REPORT.md says what they show.

Modules: build (write_report), inputs (test.json, results.json, files to link),
scan (one pass over history.jsonl), bands (nemesis ops -> fault bands),
figures (shared matplotlib setup and shading), plots (latency, rate, unseen),
timeline (ops per process), history_viewer, html (the report page), page (HTML
shared with `fencepost serve`). matplotlib is imported only when a report is
written, so importing this package stays cheap.
"""
from __future__ import annotations

from pathlib import Path

from harness.report.page import REPORT_FILE


def write_report(run_dir: Path | str) -> Path:
    """Write RUN_DIR/report.html, history.html and plots/; returns the report's
    path (harness/report/build.py)."""
    from harness.report.build import write_report as write

    return write(run_dir)


__all__ = ["REPORT_FILE", "write_report"]
