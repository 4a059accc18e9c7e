"""A run checked for `fencepost compare`, in memory: loaded and checked as `fencepost
check` does (`load_run`, `check_partitions`, `decide`), with nothing written anywhere,
and its time to first detection taken from the full reports (harness/check/detection.py)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from fencepost.harness.check.checking import check_partitions
from fencepost.harness.check.detection import first_detection_s, first_evidence_ns
from fencepost.harness.check.liveness import liveness
from fencepost.harness.check.loading import load_run
from fencepost.harness.check.verdict import Valid, decide


@dataclass(frozen=True)
class Checked:
    valid: Valid
    anomaly_counts: dict[str, int]  # every anomaly found, by name (as results.json's)
    first_detection_s: float | None
    liveness: dict | None = None  # results.json's liveness section, as `fencepost check` makes it


def check_in_memory(run_dir: Path) -> Checked:
    """The verdict, anomaly counts and first detection of the run in `run_dir`, checked in
    this process. Raises BadInput as `fencepost check` does for what is not a run."""
    run = load_run(run_dir)
    reports = check_partitions(run, jobs=1)  # full reports: every anomaly keeps its ops
    verdict = decide(run, reports)
    counts = Counter(anomaly.name for report in reports for anomaly in report.anomalies)
    evidence = [first_evidence_ns(ph, report.anomalies, run.invalid_anomalies)
                for ph, report in zip(run.partitions.values(), reports)]
    return Checked(verdict.valid, dict(sorted(counts.items())), first_detection_s(verdict.valid, evidence),
                   liveness(run.run_dir, run.test))
