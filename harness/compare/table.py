"""Runs grouped by configuration (system, truncation, faults): how many, how many invalid,
the invalid-run rate with its Wilson 95% interval, and the anomalies found."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable

from harness.compare.collect import RunResult
from harness.stats import wilson_interval


@dataclass(frozen=True)
class Row:
    system: str
    truncation: str
    faults: str
    runs: int
    invalid: int
    unknown: int
    crashed: int
    runs_by_anomaly: dict[str, int]  # anomaly -> runs that had it
    anomaly_totals: dict[str, int]

    @property
    def judged(self) -> int:
        """Runs with a verdict of valid or invalid: the denominator of the rate."""
        return self.runs - self.unknown - self.crashed

    @property
    def invalid_rate(self) -> float:
        return self.invalid / self.judged if self.judged else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.invalid, self.judged)


def rows(results: Iterable[RunResult]) -> list[Row]:
    groups: dict[tuple[str, str, str], list[RunResult]] = {}
    for r in results:
        groups.setdefault(r.configuration, []).append(r)
    table = []
    for (system, truncation, faults), runs in sorted(groups.items()):
        verdicts = Counter(r.verdict for r in runs)
        by_anomaly: Counter[str] = Counter()
        totals: Counter[str] = Counter()
        for r in runs:
            for name, n in r.anomaly_counts.items():
                if n:
                    by_anomaly[name] += 1
                    totals[name] += n
        table.append(Row(system, truncation, faults, len(runs), verdicts["invalid"], verdicts["unknown"],
                         verdicts["crashed"], dict(by_anomaly), dict(totals)))
    return table


def render(table: list[Row]) -> str:
    header = ("system", "truncation", "faults", "runs", "invalid", "invalid rate [95% CI]", "anomalies (runs: total)")
    lines = [header]
    for row in table:
        low, high = row.interval
        anomalies = ", ".join(f"{name} {row.runs_by_anomaly[name]}: {row.anomaly_totals[name]}"
                              for name in sorted(row.runs_by_anomaly, key=lambda n: (-row.runs_by_anomaly[n], n)))
        extra = "".join(f" +{n} {what}" for n, what in ((row.unknown, "unknown"), (row.crashed, "crashed")) if n)
        lines.append((row.system, row.truncation, row.faults, f"{row.runs}{extra}", str(row.invalid),
                      f"{row.invalid_rate:.2f} [{low:.2f}, {high:.2f}]", anomalies or "-"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths)) + "  " + line[-1] for line in lines)


def to_csv(table: list[Row]) -> str:
    import csv
    import io
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["system", "truncation", "faults", "runs", "invalid", "unknown", "crashed", "invalid_rate",
                     "ci_low", "ci_high", "anomalies"])
    for row in table:
        low, high = row.interval
        writer.writerow([row.system, row.truncation, row.faults, row.runs, row.invalid, row.unknown, row.crashed,
                         f"{row.invalid_rate:.4f}", f"{low:.4f}", f"{high:.4f}",
                         ";".join(f"{k}={v}" for k, v in sorted(row.anomaly_totals.items()))])
    return out.getvalue()
