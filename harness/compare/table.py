"""Runs grouped by configuration (system, truncation, faults): how many, how many invalid,
the invalid-run rate with its Wilson 95% interval, the anomalies found, the median
time to first detection, and how many runs failed liveness (results.json's liveness
verdict, beside safety) with the runs per liveness finding, and the liveness-failure rate
(runs that failed liveness over runs with a liveness verdict of ok or failed: unknown and
unjudged runs are left out) with its Wilson 95% interval; in the order of
harness/compare/order.py. The p-value columns (of both rates) are filled in by
harness/compare/significance.py."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from fencepost.harness.check.detection import median_s
from fencepost.harness.compare.collect import RunResult
from fencepost.harness.compare.order import row_key
from fencepost.harness.compare.stats import wilson_interval


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
    median_first_detection_s: float | None = None  # harness.check.detection.median_s of the invalid runs
    p_value: float | None = None  # Fisher's exact test of this row's rate against `versus`'s
    versus: str | None = None  # the row tested against, named SYSTEM:TRUNCATION (same fault group)
    liveness_judged: int = 0  # runs with a liveness verdict of ok or failed
    liveness_failed: int = 0  # runs whose liveness verdict is failed (beside safety)
    runs_by_liveness: dict[str, int] = field(default_factory=dict)  # liveness finding kind -> runs that had it
    liveness_p_value: float | None = None  # Fisher's exact test of the liveness-failure rate against `versus`'s

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

    @property
    def liveness_rate(self) -> float:
        """Runs that failed liveness over runs with a liveness verdict (0.0 when none has one)."""
        return self.liveness_failed / self.liveness_judged if self.liveness_judged else 0.0

    @property
    def liveness_interval(self) -> tuple[float, float]:
        return wilson_interval(self.liveness_failed, self.liveness_judged)


def rows(results: Iterable[RunResult]) -> list[Row]:
    groups: dict[tuple[str, str, str], list[RunResult]] = {}
    for r in results:
        groups.setdefault(r.configuration, []).append(r)
    table = []
    for (system, truncation, faults), runs in sorted(groups.items(), key=lambda item: row_key(*item[0])):
        verdicts = Counter(r.verdict for r in runs)
        by_anomaly: Counter[str] = Counter()
        totals: Counter[str] = Counter()
        for r in runs:
            for name, n in r.anomaly_counts.items():
                if n:
                    by_anomaly[name] += 1
                    totals[name] += n
        by_kind: Counter[str] = Counter(kind for r in runs for kind, n in r.liveness_kinds.items() if n)
        table.append(Row(system, truncation, faults, len(runs), verdicts["invalid"], verdicts["unknown"],
                         verdicts["crashed"], dict(by_anomaly), dict(totals),
                         median_s(r.first_detection_s for r in runs if r.verdict == "invalid"),
                         liveness_judged=sum(r.liveness in ("ok", "failed") for r in runs),
                         liveness_failed=sum(r.liveness == "failed" for r in runs),
                         runs_by_liveness=dict(by_kind)))
    return table
