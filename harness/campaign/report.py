"""The report a campaign ends with, written without Spark into its directory (or, for the
shards of one campaign, into the folder given): report.html, summary.json, summary.csv
(harness/campaign/summary_formats.py) and rates.png (compare's plot). report.html is one
self-contained page: the headline (green when every run yielded what it was expected to),
the table per configuration (the invalid-run rate and the liveness-failure rate, each with
a bar of its 95% interval; a configuration with runs that failed liveness is flagged as a
surprise is, and named under the headline, even when every run was valid and expected), the
plot, the surprises with the commands that replay and reduce them, and every run with a link
to its own report (relative links, so the folder reads the same when copied or downloaded).
"""
from __future__ import annotations

import os
from pathlib import Path

from fencepost.harness.campaign.summary import CampaignSummary, RunLine, summarize, to_json
from fencepost.harness.campaign.summary_formats import headline, legend, liveness_notes, to_csv
from fencepost.harness.compare.formats import (
    liveness_kinds,
    liveness_p_text,
    liveness_rate_text,
    p_cell,
    runs_cell,
    seconds,
)
from fencepost.harness.report.page import esc, href, page
from fencepost.harness.rundir.atomic import write_atomically
from fencepost.harness.rundir.names import REPORT_FILE

SUMMARY_JSON = "summary.json"
SUMMARY_CSV = "summary.csv"
RATES_PNG = "rates.png"
STATUS_CLASS = {"expected": "valid", "surprise": "invalid", "unknown": "unknown", "crashed": "invalid"}
EXTRA_STYLE = """
.bar { position: relative; width: 9em; height: 0.8em; background: #f0f0f0; border: 1px solid #ddd;
       display: inline-block; vertical-align: middle; margin-left: 0.4em; }
.bar .ci { position: absolute; top: 0; bottom: 0; background: #f3b7b7; }
.bar .rate { position: absolute; top: -0.15em; bottom: -0.15em; width: 2px; background: #8e1b1b; }
tr.status-surprise td, tr.status-crashed td, tr.liveness-failed td { background: #fdecec; }
#liveness-failed { color: #8e1b1b; }
"""


def write_campaign_report(directories: list[Path], out: Path | None = None,
                          baseline: str | None = None) -> tuple[CampaignSummary, dict[str, Path]]:
    """Summarize the campaign (or its shards) and write the files into `out` (default: the one
    campaign directory; for several, a `merged` folder beside the first)."""
    import json

    from fencepost.harness.compare.plot import plot_rates

    summary = summarize(directories, baseline)
    out = out or (directories[0] if len(directories) == 1 else directories[0].resolve().parent / "merged")
    out.mkdir(parents=True, exist_ok=True)
    written = {"report": out / REPORT_FILE, "json": out / SUMMARY_JSON, "csv": out / SUMMARY_CSV}
    _atomic(written["json"], json.dumps(to_json(summary, out), indent=1) + "\n")
    _atomic(written["csv"], to_csv(summary))
    if summary.configurations:
        written["rates"] = plot_rates([c.row for c in summary.configurations], out / RATES_PNG)
    _atomic(written["report"], report_html(summary, out, "rates" in written))
    return summary, written


def report_html(summary: CampaignSummary, out: Path, with_plot: bool) -> str:
    badge = "valid" if summary.green else "invalid"
    parts = [f"<h1>campaign {esc(summary.name)}</h1>",
             f'<p><span class="verdict {badge}" id="headline" data-green="{str(summary.green).lower()}">'
             f'{"GREEN" if summary.green else "RED"}</span> {esc(headline(summary).split(": ", 1)[1])}</p>',
             f'<p class="muted">{len(summary.runs)} of {summary.planned} planned runs finished'
             f'{"; shards " + esc(", ".join(summary.shards)) if summary.shards else ""}; from '
             + ", ".join(f"<code>{esc(d)}</code>" for d in summary.directories) + "</p>"]
    notes = liveness_notes(summary)
    if notes:
        parts.append('<ul id="liveness-failed">' + "".join(f"<li>{esc(note)}</li>" for note in notes) + "</ul>")
    parts.append(_configurations(summary))
    if with_plot:
        parts.append(f'<figure><img src="{RATES_PNG}" alt="invalid-run rates with their 95% intervals">'
                     "<figcaption>invalid runs / runs with a verdict, per fault and protocol version, with "
                     "Wilson 95% intervals</figcaption></figure>")
    unexpected = [r for r in summary.runs if r.status in ("surprise", "crashed")]
    if unexpected:
        parts.append("<h2>Surprises</h2><ul id=\"surprises\">" + "".join(
            f"<li><b>{esc(r.run_id)}</b>: {esc(r.why)}"
            + (f"<br><code>fencepost replay {esc(r.run_dir)}</code> &mdash; the same run again; "
               f"<code>fencepost shrink {esc(r.run_dir)}</code> &mdash; the smallest fault script that still "
               f"fails</li>" if r.run_dir else "</li>") for r in unexpected) + "</ul>")
    if summary.missing:
        parts.append(f"<h2>Not run</h2><p>{len(summary.missing)} planned run(s) have no outcome here: "
                     + esc(", ".join(summary.missing[:20])) + (" ..." if len(summary.missing) > 20 else "") + "</p>")
    parts.append(_runs(summary, out))
    return page(f"campaign {summary.name}", "\n".join(parts), EXTRA_STYLE)


def _configurations(summary: CampaignSummary) -> str:
    rows = []
    for c in summary.configurations:
        row = c.row
        low, high = row.interval
        rate = (f"{row.invalid_rate:.2f} [{low:.2f}, {high:.2f}]{_bar(row.invalid_rate, low, high)}" if row.judged
                else "- (no run with a verdict)")
        liveness = "-"
        if row.liveness_judged:
            kinds = liveness_kinds(row)
            liveness = (esc(liveness_rate_text(row, with_p=False)) + _bar(row.liveness_rate, *row.liveness_interval)
                        + esc(f" {liveness_p_text(row)}".rstrip()) + (f" ({esc(kinds)})" if kinds else ""))
        median = "-" if row.median_first_detection_s is None else seconds(row.median_first_detection_s)
        anomalies = ", ".join(f"{esc(name)} {row.runs_by_anomaly[name]}: {row.anomaly_totals[name]}"
                              for name in sorted(row.runs_by_anomaly, key=lambda n: (-row.runs_by_anomaly[n], n)))
        flagged = " liveness-failed" if c.liveness_flagged else ""
        rows.append(f'<tr class="config{flagged}" data-config="{esc(c.name)}|{esc(row.faults)}" '
                    f'data-surprises="{c.surprises}" data-liveness-failed="{row.liveness_failed}">'
                    f'<td>{esc(c.name)}</td><td>{esc(row.faults)}</td>'
                    f'<td>{esc(" / ".join(c.expected))}</td><td class="num">{esc(runs_cell(row))}</td>'
                    f'<td class="num">{row.invalid}</td><td>{rate}</td><td>{esc(p_cell(row))}</td>'
                    f'<td class="num">{median}</td><td>{liveness}</td><td class="num">{c.surprises}</td>'
                    f'<td>{anomalies or "-"}</td></tr>')
    return ("<h2>Per configuration</h2><table id=\"configurations\"><thead><tr><th>configuration</th><th>faults</th>"
            "<th>expected</th><th class=\"num\">runs</th><th class=\"num\">invalid</th><th>invalid rate [95% CI]</th>"
            "<th>p (Fisher) vs</th><th class=\"num\">median first detection</th><th>liveness failed [95% CI]</th>"
            "<th class=\"num\">surprises</th>"
            f"<th>anomalies (runs: total)</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f'<p class="muted">{esc(legend(summary))}. Files: <a href="{SUMMARY_CSV}">{SUMMARY_CSV}</a> (one row per '
            f'configuration and anomaly), <a href="{SUMMARY_JSON}">{SUMMARY_JSON}</a>.</p>')


def _bar(rate: float, low: float, high: float) -> str:
    """A rate (the dark line) in its 95% interval (the shaded span), on 0..1."""
    return (f'<span class="bar" title="95% interval"><span class="ci" style="left:{low * 100:.1f}%;'
            f'width:{(high - low) * 100:.1f}%"></span><span class="rate" style="left:{rate * 100:.1f}%"></span></span>')


def _runs(summary: CampaignSummary, out: Path) -> str:
    rows = []
    for r in summary.runs:
        found = ", ".join(f"{esc(k)} {n}" for k, n in sorted(r.anomaly_counts.items()) if n) or "none"
        when = "-" if r.first_detection_s is None else seconds(r.first_detection_s)
        stuck = ' <span class="tag liveness-failed">liveness failed</span>' if r.liveness == "failed" else ""
        rows.append(f'<tr class="run status-{esc(r.status)}" data-run="{esc(r.run_id)}" data-status="{esc(r.status)}">'
                    f"<td>{esc(r.run_id)}</td><td>{esc(' '.join(r.configuration))}</td>"
                    f"<td>{esc(r.expected.describe())}</td>"
                    f'<td class="verdict-cell"><span class="tag">{esc(r.verdict)}</span>{stuck}</td>'
                    f'<td><span class="verdict {STATUS_CLASS.get(r.status, "unknown")}">{esc(r.status)}</span> '
                    f"{esc(r.why)}</td><td>{found}</td><td class=\"num\">{when}</td>"
                    f'<td class="num">{r.seconds:.0f} s</td><td>{_links(r, out)}</td></tr>')
    return ("<h2>Runs</h2><table id=\"runs\"><thead><tr><th>run</th><th>configuration</th><th>expected</th>"
            "<th>verdict</th><th>status</th><th>anomalies</th><th class=\"num\">first detection</th>"
            f"<th class=\"num\">took</th><th></th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _links(run: RunLine, out: Path) -> str:
    if run.run_dir is None:
        return '<span class="muted">no run directory</span>'
    folder = os.path.relpath(run.run_dir, out)
    report = run.run_dir / REPORT_FILE
    first = (f'<a class="report" href="{href(folder + "/report.html")}">report</a>' if report.is_file()
             else '<span class="muted">no report</span>')
    return f'{first} &middot; <a href="{href(folder + "/")}">files</a>'


def _atomic(path: Path, text: str) -> None:
    write_atomically(path, text)
