"""`write_report(run_dir)`: the whole report of a run, in one pass over its history.

Reads test.json and results.json (harness/report/inputs.py), scans history.jsonl
once (scan.py), turns the nemesis ops into bands (bands.py), draws the plots
(plots.py, timeline.py) into RUN_DIR/plots/, writes the history viewer
(history_viewer.py) and then RUN_DIR/report.html (html.py), replaced atomically.
"""
from __future__ import annotations

from pathlib import Path

from harness.errors import BadInput
from harness.report.bands import nemesis_bands
from harness.report.history_data import HistoryColumns
from harness.report.history_viewer import write_history_page
from harness.report.html import render_report
from harness.report.inputs import linked_indices, load_inputs
from harness.report.page import REPORT_FILE
from harness.report.plots import PLOTS_DIR, write_plots
from harness.report.scan import scan_history
from harness.report.timeline import plot_timeline


def write_report(run_dir: Path | str) -> Path:
    """Write RUN_DIR/report.html, RUN_DIR/history.html and RUN_DIR/plots/*.png;
    returns the report's path. Missing or partial inputs are shown as such; only
    a run directory that does not exist or cannot be written is an error."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise BadInput(f"{run_dir} is not a directory: give a run directory "
                       f"(results/<test>/<run>/, e.g. results/latest)")
    inputs = load_inputs(run_dir)
    linked = linked_indices(inputs.results)
    columns = HistoryColumns()
    scan = scan_history(run_dir, observers=[columns])
    bands = nemesis_bands(scan.nemesis, scan.last_time)
    plots_dir = run_dir / PLOTS_DIR
    try:
        plots = write_plots(scan, bands, inputs.results, plots_dir)
        plots.append(plot_timeline(scan, bands, plots_dir))
        write_history_page(run_dir, columns.finish(scan, linked, run_dir.name))
        path = run_dir / REPORT_FILE
        partial = path.with_name(REPORT_FILE + ".partial")
        partial.write_text(render_report(inputs, scan, bands, plots), encoding="utf-8")
        partial.replace(path)
    except OSError as e:
        raise BadInput(f"cannot write the report into {run_dir}: {e.strerror or e} "
                       f"({getattr(e, 'filename', '')}); make the run directory writable") from e
    return path
