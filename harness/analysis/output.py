"""What `fencepost analyze` writes into OUT/analysis: summary.csv (per configuration: runs,
invalid runs, anomaly counts by type, the invalid-run rate with its Wilson 95% interval,
the median time to first detection), junit.xml (one testcase per run),
plots/rates.png and plots/detection.png, and report.html showing all of it."""
from __future__ import annotations

import csv
import html
import io
from pathlib import Path

from fencepost.harness.analysis.checks import RunVerdict
from fencepost.harness.campaign.junit import write_junit
from fencepost.harness.check.detection import median_s
from fencepost.harness.compare.collect import RunResult
from fencepost.harness.compare.formats import render
from fencepost.harness.compare.plot import plot_rates
from fencepost.harness.compare.significance import Baseline, with_p_values
from fencepost.harness.compare.table import Row, rows
from fencepost.harness.rundir.atomic import write_atomically


def configuration_rows(verdicts: list[RunVerdict], baseline: str | None = None) -> list[Row]:
    """The rows of `fencepost compare` (p-values against the row above in each fault group, or
    the baseline's row; median time to first detection) for the runs judged on Spark."""
    return with_p_values(rows(RunResult(Path(v.run_id), v.config.system, v.config.truncation, v.config.faults,
                                        v.verdict, v.anomaly_counts, v.first_detection_s) for v in verdicts),
                         Baseline.parse(baseline) if baseline else None)


def write_outputs(verdicts: list[RunVerdict], out: Path, title: str, baseline: str | None = None,
                  expected: dict[str, dict] | None = None) -> dict[str, Path]:
    """The files; `expected`: run id -> what its campaign expected (junit.xml then fails only
    surprises, as the campaign's own does)."""
    out.mkdir(parents=True, exist_ok=True)
    table = configuration_rows(verdicts, baseline)
    written = {"summary": out / "summary.csv", "junit": out / "junit.xml",
               "rates": out / "plots" / "rates.png", "detection": out / "plots" / "detection.png",
               "report": out / "report.html"}
    write_atomically(written["summary"], _summary_csv(verdicts, table))
    write_junit(written["junit"], title, [{"run_id": v.run_id, "verdict": v.verdict, "seconds": 0.0,
                                          "anomaly_counts": v.anomaly_counts, "run_dir": v.run_dir,
                                          "expected": (expected or {}).get(v.run_id),
                                          "error": "; ".join(v.reasons) or None} for v in verdicts])
    plot_rates(table, written["rates"])
    _plot_detection(verdicts, table, written["detection"])
    write_atomically(written["report"], _report_html(title, verdicts, table))
    return written


def _summary_csv(verdicts: list[RunVerdict], table: list[Row]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["system", "truncation", "faults", "runs", "invalid", "unknown", "crashed", "invalid_rate",
                     "ci_low", "ci_high", "median_first_detection_s", "anomaly_counts"])
    for row in table:
        low, high = row.interval
        median = row.median_first_detection_s
        writer.writerow([row.system, row.truncation, row.faults, row.runs, row.invalid, row.unknown, row.crashed,
                         f"{row.invalid_rate:.4f}", f"{low:.4f}", f"{high:.4f}",
                         "" if median is None else f"{median:.3f}",
                         ";".join(f"{k}={v}" for k, v in sorted(row.anomaly_totals.items()))])
    return buffer.getvalue()


def _plot_detection(verdicts: list[RunVerdict], table: list[Row], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, samples = [], []
    for row in table:
        times = [v.first_detection_s for v in verdicts if v.first_detection_s is not None
                 and (v.config.system, v.config.truncation, v.config.faults)
                 == (row.system, row.truncation, row.faults)]
        labels.append(f"{row.system} {row.truncation}\n{row.faults}")
        samples.append(times)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(labels)), 4.2))
    for i, times in enumerate(samples):
        median = median_s(times)
        if times and median is not None:  # (a median exactly when there are times)
            ax.scatter([i] * len(times), times, alpha=0.6)
            ax.hlines(median, i - 0.3, i + 0.3, color="black")
    ax.set_xticks(range(len(labels)), labels, fontsize="small")
    ax.set_ylabel("seconds into the run")
    ax.set_title("time to first detection of an invalidating anomaly (line: median)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _report_html(title: str, verdicts: list[RunVerdict], table: list[Row]) -> str:
    esc = html.escape
    lines = [f"<!doctype html><meta charset=utf-8><title>{esc(title)}: analysis</title>",
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:3px 8px}.invalid{color:#b00}</style>",
             f"<h1>{esc(title)}</h1><p>{len(verdicts)} runs, {len(table)} configurations</p>",
             "<h2>Per configuration</h2><pre>" + esc(render(table)) + "</pre>",
             "<table><tr><th>system</th><th>truncation</th><th>faults</th><th>runs</th><th>invalid</th>"
             "<th>rate [95% CI]</th><th>median first detection</th></tr>"]
    for row in table:
        low, high = row.interval
        median = row.median_first_detection_s
        lines.append(f"<tr><td>{esc(row.system)}</td><td>{esc(row.truncation)}</td><td>{esc(row.faults)}</td>"
                     f"<td>{row.runs}</td><td>{row.invalid}</td><td>{row.invalid_rate:.2f} [{low:.2f}, {high:.2f}]"
                     f"</td><td>{'' if median is None else f'{median:.1f} s'}</td></tr>")
    lines.append("</table><h2>Plots</h2><img src='plots/rates.png' alt='invalid-run rates'>"
                 "<img src='plots/detection.png' alt='time to first detection'><h2>Runs</h2><table>"
                 "<tr><th>run</th><th>verdict</th><th>anomalies</th><th>first detection</th></tr>")
    for v in verdicts:
        found = ", ".join(f"{k} {n}" for k, n in v.anomaly_counts.items() if n) or "-"
        when = "" if v.first_detection_s is None else f"{v.first_detection_s:.1f} s"
        lines.append(f"<tr><td>{esc(v.run_id)}</td><td class={esc(v.verdict)}>{esc(v.verdict)}</td>"
                     f"<td>{esc(found)}</td><td>{when}</td></tr>")
    lines.append("</table>")
    return "\n".join(lines) + "\n"
