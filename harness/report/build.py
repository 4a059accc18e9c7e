"""`write_report(run_dir)`: the whole report of a run, in one pass over its history.

Reads test.json and results.json (harness/report/inputs.py), scans history.jsonl
once (scan.py) handing every line to the history viewer's columns (history_data.py),
the realtime lag (lag.py) and the traces of the anomaly examples (harness/report/trace.py),
turns the nemesis ops into bands (bands.py), draws the plots (plots.py, timeline.py)
into RUN_DIR/plots/, and writes the history viewer (history_viewer.py), the HTML
timeline (timeline_page.py), a page per traced value or offset under RUN_DIR/trace/
(trace_page.py) and then RUN_DIR/report.html (html.py), each replaced atomically.
"""
from __future__ import annotations

from pathlib import Path

from fencepost.harness.errors import BadInput, Problems
from fencepost.harness.measures.bands import nemesis_bands
from fencepost.harness.measures.lag import RealtimeLag
from fencepost.harness.report.history_data import HistoryColumns
from fencepost.harness.report.history_viewer import write_history_page
from fencepost.harness.report.html import render_report
from fencepost.harness.report.inputs import linked_indices, load_inputs, trace_targets
from fencepost.harness.report.plots import PLOTS_DIR, write_plots
from fencepost.harness.report.scan import scan_history
from fencepost.harness.report.timeline import plot_timeline
from fencepost.harness.report.timeline_page import write_timeline_page
from fencepost.harness.report.trace import TraceCollector
from fencepost.harness.report.trace_page import trace_href, write_trace_page
from fencepost.harness.rundir.atomic import output_folder, write_atomically
from fencepost.harness.rundir.names import REPORT_FILE


def write_report(run_dir: Path | str) -> Path:
    """Write RUN_DIR/report.html, history.html, timeline.html, trace/ and plots/*.png;
    returns the report's path. Missing or partial inputs are shown as such; only a
    run directory that does not exist or cannot be written is an error."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise BadInput(f"{run_dir} is not a directory: give a run directory "
                       f"(results/<test>/<run>/, e.g. results/latest)")
    inputs = load_inputs(run_dir)
    linked = linked_indices(inputs.results)
    columns = HistoryColumns()
    lag = RealtimeLag()
    tracer = TraceCollector(trace_targets(inputs.results))
    scan = scan_history(run_dir, observers=[columns, lag, tracer] if tracer.targets else [columns, lag])
    bands = nemesis_bands(scan.nemesis, scan.last_time)
    try:
        plots_dir = output_folder(run_dir, PLOTS_DIR)
        traces = {}
        if tracer.targets:
            for trace in tracer.finish(run_dir, Problems(max_kept=5)):
                write_trace_page(run_dir, trace)
                traces[trace.target] = trace_href(trace)
        plots = write_plots(scan, bands, inputs.results, lag, plots_dir)
        plots.append(plot_timeline(scan, bands, plots_dir))
        blobs = columns.finish(scan, linked, run_dir.name)
        write_history_page(run_dir, blobs)
        write_timeline_page(run_dir, blobs, bands)
        path = run_dir / REPORT_FILE
        write_atomically(path, render_report(inputs, scan, bands, plots, lag, traces))
    except OSError as e:
        raise BadInput(f"cannot write the report into {run_dir}: {e.strerror or e} "
                       f"({getattr(e, 'filename', '')}); make the run directory writable") from e
    return path
