"""`fencepost compare`'s table in each output form: text (the terminal), markdown (a GitHub
table for a README or $GITHUB_STEP_SUMMARY), json (every figure of every row) and CSV
(compare.csv: the columns of earlier releases first, in their order, new ones at the end)."""
from __future__ import annotations

import csv
import io
import json
from typing import Any

from fencepost.harness.compare.table import Row

FORMATS = ("text", "json", "markdown")
HEADER = ("system", "truncation", "faults", "runs", "invalid", "invalid rate [95% CI]", "p (Fisher) vs",
          "median first detection", "liveness failed [95% CI]", "anomalies (runs: total)")
CSV_COLUMNS = ("system", "truncation", "faults", "runs", "invalid", "unknown", "crashed", "invalid_rate",
               "ci_low", "ci_high", "anomalies", "p_value", "versus", "median_first_detection_s",
               "liveness_judged", "liveness_failed", "liveness_findings", "liveness_rate", "liveness_ci_low",
               "liveness_ci_high", "liveness_p_value")


def render(table: list[Row], form: str = "text", against: str | None = None) -> str:
    """The table as `form` (one of FORMATS). `against`: the baseline the p-values were
    taken against (None: each row against the previous one of its fault group)."""
    if form == "json":
        return to_json(table)
    if form == "markdown":
        return to_markdown(table, against)
    if form == "text":
        return to_text(table, against)
    raise ValueError(f"unknown format {form!r}: one of {', '.join(FORMATS)}")


def legend(against: str | None) -> str:
    whom = f"the baseline {against}'s row" if against else "the row above it"
    return (f"p: Fisher's exact test (two-sided) of a row's invalid-run rate against {whom} in its fault group; "
            "unknown and crashed runs are left out of rates and tests; " + LIVENESS_LEGEND)


LIVENESS_LEGEND = ("liveness failed: runs that failed liveness / runs with a liveness verdict (ok or failed; "
                   "others left out), the rate, its 95% interval and p, Fisher's test of that rate against the "
                   "same row, then the runs per finding")


def to_text(table: list[Row], against: str | None = None) -> str:
    lines = [HEADER, *(_cells(row) for row in table)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADER) - 1)]
    body = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)) + "  " + line[-1] for line in lines]
    return "\n".join([*body, legend(against)])


def to_markdown(table: list[Row], against: str | None = None) -> str:
    def line(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"
    align = ["---", "---", "---", "---:", "---:", "---", "---", "---:", "---", "---"]
    return "\n".join([line(HEADER), "|" + "|".join(align) + "|", *(line(_cells(row)) for row in table), "",
                      f"_{legend(against)}._"]) + "\n"


def to_json(table: list[Row]) -> str:
    return json.dumps([as_dict(row) for row in table], indent=2) + "\n"


def as_dict(row: Row) -> dict[str, Any]:
    low, high = row.interval
    live_low, live_high = row.liveness_interval
    return {"system": row.system, "truncation": row.truncation, "faults": row.faults, "runs": row.runs,
            "judged": row.judged, "invalid": row.invalid, "unknown": row.unknown, "crashed": row.crashed,
            "invalid_rate": row.invalid_rate if row.judged else None, "ci_low": low, "ci_high": high,
            "p_value": row.p_value, "versus": row.versus,
            "median_first_detection_s": row.median_first_detection_s,
            "runs_by_anomaly": dict(sorted(row.runs_by_anomaly.items())),
            "anomaly_totals": dict(sorted(row.anomaly_totals.items())),
            "liveness_judged": row.liveness_judged, "liveness_failed": row.liveness_failed,
            "runs_by_liveness": dict(sorted(row.runs_by_liveness.items())),
            "liveness_rate": row.liveness_rate if row.liveness_judged else None,
            "liveness_ci_low": live_low, "liveness_ci_high": live_high, "liveness_p_value": row.liveness_p_value}


def to_csv(table: list[Row]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for row in table:
        low, high = row.interval
        live_low, live_high = row.liveness_interval
        writer.writerow([row.system, row.truncation, row.faults, row.runs, row.invalid, row.unknown, row.crashed,
                         f"{row.invalid_rate:.4f}", f"{low:.4f}", f"{high:.4f}",
                         ";".join(f"{k}={v}" for k, v in sorted(row.anomaly_totals.items())),
                         "" if row.p_value is None else f"{row.p_value:.6g}", row.versus or "",
                         "" if row.median_first_detection_s is None else f"{row.median_first_detection_s:.3f}",
                         row.liveness_judged, row.liveness_failed,
                         ";".join(f"{k}={v}" for k, v in sorted(row.runs_by_liveness.items())),
                         f"{row.liveness_rate:.4f}" if row.liveness_judged else "", f"{live_low:.4f}",
                         f"{live_high:.4f}", "" if row.liveness_p_value is None else f"{row.liveness_p_value:.6g}"])
    return out.getvalue()


def runs_cell(row: Row) -> str:
    """`3`, or `3 runs (1 unknown, 1 crashed)`: the runs counted, then those of them left
    out of the rate."""
    left_out = [f"{n} {what}" for n, what in ((row.unknown, "unknown"), (row.crashed, "crashed")) if n]
    if not left_out:
        return str(row.runs)
    return f"{row.runs} {'run' if row.runs == 1 else 'runs'} ({', '.join(left_out)})"


def seconds(value: float) -> str:
    """`12.3 s`; under a second two significant digits (`0.006 s`), never a bare `0.0 s`."""
    return f"{value:.1f} s" if value >= 1 else f"{value:.2g} s"


def p_text(p: float) -> str:
    """`0.3085`; below 1e-4 `3.2e-05`."""
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def p_cell(row: Row) -> str:
    if row.p_value is None:
        return "-"
    return f"{p_text(row.p_value)} vs {row.versus}"


def _cells(row: Row) -> tuple[str, ...]:
    low, high = row.interval
    anomalies = ", ".join(f"{name} {row.runs_by_anomaly[name]}: {row.anomaly_totals[name]}"
                          for name in sorted(row.runs_by_anomaly, key=lambda n: (-row.runs_by_anomaly[n], n)))
    median = "-" if row.median_first_detection_s is None else seconds(row.median_first_detection_s)
    rate = f"{row.invalid_rate:.2f} [{low:.2f}, {high:.2f}]" if row.judged else "- (no run with a verdict)"
    return (row.system, row.truncation, row.faults, runs_cell(row), str(row.invalid), rate, p_cell(row), median,
            liveness_cell(row), anomalies or "-")


def liveness_rate_text(row: Row, with_p: bool = True) -> str:
    """`1/8 0.12 [0.02, 0.47] p=0.3085`: the runs that failed liveness over the runs with a
    liveness verdict, the rate, its Wilson 95% interval, and (`with_p`) the p-value against
    `versus` (left out where there is none); `-` when no run has a liveness verdict."""
    if not row.liveness_judged:
        return "-"
    low, high = row.liveness_interval
    p = f" {liveness_p_text(row)}" if with_p and row.liveness_p_value is not None else ""
    return f"{row.liveness_failed}/{row.liveness_judged} {row.liveness_rate:.2f} [{low:.2f}, {high:.2f}]{p}"


def liveness_p_text(row: Row) -> str:
    """`p=0.3085`: the liveness-failure rate's p-value against `versus`; "" without one."""
    return "" if row.liveness_p_value is None else f"p={p_text(row.liveness_p_value)}"


def liveness_kinds(row: Row) -> str:
    """`unavailable 2, no-recovery 1`: the runs per liveness finding, most first."""
    return ", ".join(f"{k} {n}" for k, n in sorted(row.runs_by_liveness.items(), key=lambda kv: (-kv[1], kv[0])))


def liveness_cell(row: Row) -> str:
    """`2/40 0.05 [0.01, 0.17] p=0.4937 (unavailable 2, no-recovery 1)`: `liveness_rate_text`,
    then the runs per finding; `-` when no run has a liveness verdict."""
    if not row.liveness_judged:
        return "-"
    kinds = liveness_kinds(row)
    return liveness_rate_text(row) + (f" ({kinds})" if kinds else "")
