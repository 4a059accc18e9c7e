"""The per-run and per-partition steps of `fencepost analyze`, as plain functions the Spark
job calls (no Spark here): a run loaded the way `fencepost check` loads it, split into a
header and one payload per partition; a partition checked with `checkers.check_partition`
(the single implementation); a run's verdict decided by `harness.verdict.decide` from its
header and its partitions' reports.

Payloads are pickles: they travel from the task that loaded a run, through Parquet, to
the task that checks one partition, and back to the driver.
"""
from __future__ import annotations

import json
import pickle
from dataclasses import dataclass, replace
from pathlib import Path

from checkers.check import PartitionReport, check_partition
from checkers.partition import PartitionHistory
from harness.checking import compact
from harness.compare.collect import configuration
from harness.loading import LoadedRun, load_run
from harness.verdict import decide, verdict_word

EXAMPLES_KEPT = 3  # anomalies kept in full per name in a report sent back to the driver


@dataclass(frozen=True)
class RunConfig:
    system: str
    truncation: str
    faults: str


def config_of(run_dir: Path) -> RunConfig:
    try:
        test = json.loads((run_dir / "test.json").read_text())
    except (OSError, ValueError):
        test = {}
    return RunConfig(*configuration(test if isinstance(test, dict) else {}))


def split_run(run_id: str, run_dir: str) -> list[tuple[str, str, int, bytes]]:
    """(run_id, topic, partition, payload) rows: one header row (topic "", partition -1)
    holding the run without its partitions' operations, then one per partition."""
    run = load_run(Path(run_dir))
    header = replace(run, partitions={key: _stub(ph) for key, ph in run.partitions.items()})
    rows = [(run_id, "", -1, pickle.dumps((header, config_of(Path(run_dir)))))]
    for (topic, partition), ph in run.partitions.items():
        rows.append((run_id, topic, partition, pickle.dumps((ph, run.options, run.invalid_anomalies))))
    return rows


def _stub(ph: PartitionHistory) -> PartitionHistory:
    """What the verdict reads of a partition: whether its final read is there and complete."""
    return PartitionHistory(ph.topic, ph.partition, final=None if ph.final is None else [],
                            final_complete=ph.final_complete)


def check_payload(payload: bytes) -> tuple[bytes, int | None]:
    """(the pickled, compacted report, the history time in ns at which the evidence of the
    first invalidating anomaly was complete, or None) of one partition's payload."""
    ph, options, invalid = pickle.loads(payload)
    report = check_partition(ph, options)
    detected = _first_evidence(ph, report, invalid)
    return pickle.dumps(compact(report, EXAMPLES_KEPT)), detected


def _first_evidence(ph: PartitionHistory, report: PartitionReport, invalid: frozenset[str]) -> int | None:
    """The earliest time at which all operations of some invalidating anomaly had completed."""
    times: dict[int, int] = {}
    for op in (*ph.sends, *ph.polls):
        if op.complete_index is not None and op.complete_time is not None:
            times[op.invoke_index] = times[op.complete_index] = op.complete_time
    earliest = None
    for anomaly in report.anomalies:
        if anomaly.name not in invalid:
            continue
        indices = [i for pair in anomaly.details.get("ops", ()) for i in (pair if isinstance(pair, (list, tuple))
                                                                           else (pair,))]
        known = [times[i] for i in indices if i in times]
        if known:
            done = max(known)
            earliest = done if earliest is None else min(earliest, done)
    return earliest


@dataclass(frozen=True)
class RunVerdict:
    run_id: str
    config: RunConfig
    verdict: str
    anomaly_counts: dict[str, int]
    first_detection_s: float | None  # seconds from the run's start (history time 0) to the first invalidating evidence
    reasons: list[str]
    run_dir: str = ""


def judge(run_id: str, header_payload: bytes, reports: list[tuple[bytes, int | None]]) -> RunVerdict:
    header, config = pickle.loads(header_payload)
    header: LoadedRun
    loaded = [pickle.loads(report) for report, _ in reports]
    verdict = decide(header, loaded)
    counts: dict[str, int] = {}
    for report in loaded:
        for anomaly in report.anomalies:
            counts[anomaly.name] = counts.get(anomaly.name, 0) + 1
    detections = [t for _, t in reports if t is not None]
    first = min(detections) / 1e9 if detections and verdict.valid is False else None
    return RunVerdict(run_id, config, verdict_word(verdict.valid), dict(sorted(counts.items())), first,
                      list(verdict.reasons))
