"""A campaign's summary (harness/campaign/summary.py) as text (the terminal), markdown (a
GitHub table for $GITHUB_STEP_SUMMARY), JSON (summary.json's document) and tidy CSV
(summary.csv).

summary.csv is tidy: one row per configuration and anomaly, every anomaly found anywhere in
the campaign listed for every configuration (0 where it was not found), so that a
configuration's figures repeat on each of its rows; a campaign without any anomaly has one
row per configuration with an empty `anomaly`. Columns: CSV_COLUMNS (the liveness columns,
added later, at the end).

A configuration with runs that failed liveness gets a line of its own under the table
(`liveness_notes`), whatever its runs' verdicts: a stuck consumer never hides behind a valid
verdict.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from fencepost.harness.campaign.summary import CampaignSummary, ConfigLine, to_json
from fencepost.harness.compare.formats import LIVENESS_LEGEND, liveness_cell, liveness_kinds, p_cell, runs_cell, seconds

FORMATS = ("text", "json", "markdown")
CSV_COLUMNS = ("system", "truncation", "faults", "expected", "runs", "judged", "invalid", "unknown", "crashed",
               "surprises", "invalid_rate", "ci_low", "ci_high", "p_value", "versus", "median_first_detection_s",
               "anomaly", "runs_with_anomaly", "anomaly_total", "liveness_judged", "liveness_failed", "liveness_rate",
               "liveness_ci_low", "liveness_ci_high", "liveness_p_value")
HEADER = ("configuration", "faults", "expected", "runs", "invalid", "invalid rate [95% CI]", "p (Fisher) vs",
          "median first detection", "liveness failed [95% CI]", "surprises", "anomalies (runs: total)")


def render(summary: CampaignSummary, form: str, out: Path) -> str:
    if form == "json":
        return json.dumps(to_json(summary, out), indent=1) + "\n"
    if form == "markdown":
        return to_markdown(summary)
    if form == "text":
        return to_text(summary)
    raise ValueError(f"unknown format {form!r}: one of {', '.join(FORMATS)}")


def headline(summary: CampaignSummary) -> str:
    """`campaign ci: green: 4 runs as expected` / `campaign ci: RED: 1 surprise in 4 runs`."""
    finished = len(summary.runs)
    crashed = sum(r.status == "crashed" for r in summary.runs)
    unknown = sum(r.status == "unknown" for r in summary.runs)
    parts = []
    if summary.green:
        parts.append(f"green: {finished - unknown} of {finished} runs as expected")
    else:
        parts.append(f"RED: {summary.surprises} surprise(s), {crashed} crashed, in {finished} runs")
    if unknown:
        parts.append(f"{unknown} without a verdict")
    if summary.missing:
        parts.append(f"{len(summary.missing)} of {summary.planned} planned runs missing")
    if summary.shards:
        parts.append(f"shards {', '.join(summary.shards)}")
    return f"campaign {summary.name}: " + "; ".join(parts)


def _cells(config: ConfigLine) -> tuple[str, ...]:
    row = config.row
    low, high = row.interval
    rate = f"{row.invalid_rate:.2f} [{low:.2f}, {high:.2f}]" if row.judged else "- (no run with a verdict)"
    median = "-" if row.median_first_detection_s is None else seconds(row.median_first_detection_s)
    anomalies = ", ".join(f"{name} {row.runs_by_anomaly[name]}: {row.anomaly_totals[name]}"
                          for name in sorted(row.runs_by_anomaly, key=lambda n: (-row.runs_by_anomaly[n], n)))
    return (config.name, row.faults, " / ".join(config.expected), runs_cell(row), str(row.invalid), rate,
            p_cell(row), median, liveness_cell(row), str(config.surprises), anomalies or "-")


def liveness_notes(summary: CampaignSummary) -> list[str]:
    """`liveness failed: own:hw none: 3 of 8 runs (stuck-consumer 3), all with a verdict of
    valid`: one line per configuration with runs that failed liveness."""
    notes = []
    for config in summary.configurations:
        if not config.liveness_flagged:
            continue
        row = config.row
        failed = [r for r in summary.runs
                  if r.configuration == (row.system, row.truncation, row.faults) and r.liveness == "failed"]
        valid = sum(r.verdict == "valid" for r in failed)
        verdicts = ("all with a verdict of valid" if valid == len(failed) else
                    f"{valid} of them with a verdict of valid" if valid else "")
        kinds = liveness_kinds(row)
        notes.append(f"liveness failed: {config.name} {row.faults}: {row.liveness_failed} of {row.liveness_judged} "
                     f"runs" + (f" ({kinds})" if kinds else "") + (f", {verdicts}" if verdicts else ""))
    return notes


def legend(summary: CampaignSummary) -> str:
    whom = f"the baseline {summary.baseline}'s row" if summary.baseline else "the row above it"
    return (f"p: Fisher's exact test (two-sided) of a row's invalid-run rate against {whom} in its fault group; "
            "unknown and crashed runs are left out of rates and tests; a surprise is a run that did not yield "
            "what it was expected to; " + LIVENESS_LEGEND)


def to_text(summary: CampaignSummary) -> str:
    lines = [HEADER, *(_cells(c) for c in summary.configurations)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADER) - 1)]
    body = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)) + "  " + line[-1] for line in lines]
    surprises = [f"surprise: {r.run_id}: {r.why}" + (f" (run directory {r.run_dir})" if r.run_dir else "")
                 for r in summary.runs if r.status in ("surprise", "crashed")]
    return "\n".join([headline(summary), *body, *surprises, *liveness_notes(summary), legend(summary)]) + "\n"


def to_markdown(summary: CampaignSummary) -> str:
    def line(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"
    align = ["---", "---", "---", "---:", "---:", "---", "---", "---:", "---", "---:", "---"]
    surprises = [f"- `{r.run_id}`: {r.why}" for r in summary.runs if r.status in ("surprise", "crashed")]
    surprises += [f"- {note}" for note in liveness_notes(summary)]
    return "\n".join([f"### {headline(summary)}", "", line(HEADER), "|" + "|".join(align) + "|",
                      *(line(_cells(c)) for c in summary.configurations), "",
                      *([*surprises, ""] if surprises else []), f"_{legend(summary)}._"]) + "\n"


def to_csv(summary: CampaignSummary) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    anomalies = sorted({name for c in summary.configurations for name in c.row.anomaly_totals}) or [""]
    for config in summary.configurations:
        row = config.row
        low, high = row.interval
        live_low, live_high = row.liveness_interval
        liveness = [row.liveness_judged, row.liveness_failed, f"{row.liveness_rate:.4f}" if row.liveness_judged else "",
                    f"{live_low:.4f}", f"{live_high:.4f}",
                    "" if row.liveness_p_value is None else f"{row.liveness_p_value:.6g}"]
        figures = [row.system, row.truncation, row.faults, " / ".join(config.expected), row.runs, row.judged,
                   row.invalid, row.unknown, row.crashed, config.surprises,
                   f"{row.invalid_rate:.4f}" if row.judged else "", f"{low:.4f}", f"{high:.4f}",
                   "" if row.p_value is None else f"{row.p_value:.6g}", row.versus or "",
                   "" if row.median_first_detection_s is None else f"{row.median_first_detection_s:.3f}"]
        for name in anomalies:
            writer.writerow([*figures, name, row.runs_by_anomaly.get(name, 0), row.anomaly_totals.get(name, 0),
                             *liveness])
    return out.getvalue()
