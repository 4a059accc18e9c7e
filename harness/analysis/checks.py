"""The per-run and per-partition steps of `fencepost analyze`, as plain functions the Spark
job calls (no Spark here): a run loaded the way `fencepost check` loads it and its partitions
checked with `checkers.check_partition` (the single implementation), as one header and one
report per partition; a run's verdict decided on the driver by `harness.check.verdict.decide` from
its header and its partitions' reports.

Headers and reports are pickles: they travel from the Python worker that checked a run back
to the driver.
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

from fencepost.harness.check.checking import check_partitions, compact
from fencepost.harness.check.detection import first_detection_s, first_evidence_ns
from fencepost.harness.check.loading import LoadedRun, load_run
from fencepost.harness.check.verdict import decide
from fencepost.harness.errors import BadInput
from fencepost.harness.rundir.record import configuration_of, read_record, verdict_word

EXAMPLES_KEPT = 3  # anomalies kept in full per name in a report sent back to the driver


@dataclass(frozen=True)
class RunConfig:
    system: str
    truncation: str
    faults: str


def config_of(run_dir: Path) -> RunConfig:
    return RunConfig(*read_record(run_dir, strict=False).configuration.key)


def check_run_rows(run_id: str, run_dir: Path) -> list[tuple[str, str, int, bytes, int | None]]:
    """(run_id, topic, partition, payload, detected) rows of one run: a header row (topic "",
    partition -1, detected None) holding the run without its partitions' operations (or, for a
    run that cannot be read, the message saying why), then one row per partition: its pickled,
    compacted report and its first evidence (harness.check.detection.first_evidence_ns: history time
    in ns, or None; taken from the full report, before compacting). The run is loaded once, as
    `fencepost check` loads it, and its partitions checked by `checkers.check_partition`."""
    try:
        run = load_run(run_dir)
    except BadInput as e:  # one unreadable run is that run's error, not the campaign's
        return [(run_id, "", -1, pickle.dumps((str(e), config_of(run_dir))), None)]
    reports = check_partitions(run, jobs=1)
    header = run.header()
    rows: list[tuple[str, str, int, bytes, int | None]] = [
        (run_id, "", -1, pickle.dumps((header, RunConfig(*configuration_of(run.test).key))), None)]
    for ((topic, partition), ph), report in zip(run.partitions.items(), reports):
        rows.append((run_id, topic, partition, pickle.dumps(compact(report, EXAMPLES_KEPT)),
                     first_evidence_ns(ph, report.anomalies, run.invalid_anomalies)))
    return rows


@dataclass(frozen=True)
class RunVerdict:
    run_id: str
    config: RunConfig
    verdict: str
    anomaly_counts: dict[str, int]
    first_detection_s: float | None  # harness.check.detection.first_detection_s
    reasons: list[str]
    run_dir: str = ""


def judge(run_id: str, header_payload: bytes, reports: list[tuple[bytes, int | None]]) -> RunVerdict:
    header: LoadedRun | str  # the run's header, or why it could not be read
    header, config = pickle.loads(header_payload)
    if isinstance(header, str):
        return RunVerdict(run_id, config, "crashed", {}, None, [f"unreadable: {header}"])
    loaded = [pickle.loads(report) for report, _ in reports]
    verdict = decide(header, loaded)
    counts: dict[str, int] = {}
    for report in loaded:
        for anomaly in report.anomalies:
            counts[anomaly.name] = counts.get(anomaly.name, 0) + 1
    first = first_detection_s(verdict.valid, (t for _, t in reports))
    return RunVerdict(run_id, config, verdict_word(verdict.valid), dict(sorted(counts.items())), first,
                      list(verdict.reasons))
