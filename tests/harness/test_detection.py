"""harness/check/detection.py, the one definition of time to first detection: its rules on a
partition made by hand, and the Spark pipeline's steps (harness/analysis/checks.py, called
without Spark) agreeing with `fencepost compare` run by run."""
from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from fencepost.checkers.anomaly import Anomaly
from fencepost.checkers.partition import PartitionHistory, Poll, Send
from fencepost.harness.analysis.checks import check_run_rows, judge
from fencepost.harness.check.detection import first_detection_s, first_evidence_ns, median_s
from fencepost.harness.compare.checked import check_in_memory
from fencepost.harness.compare.collect import collect
from tests.support.paths import EXAMPLES
from tests.support.synth.run import write_run

S = 1_000_000_000
INVALID = frozenset({"lost-write", "poll-skip"})


def partition() -> PartitionHistory:
    return PartitionHistory("fp", 0, sends=[
        Send(0, "a", "ok", 0, 1 * S, 1, 2 * S, offset=0),
        Send(1, "b", "ok", 2, 3 * S, 5, 5 * S, offset=1),
        Send(2, "c", "info", 6, 6 * S),  # never completed
    ], polls=[Poll(3, "ok", 3, 3 * S, 4, 4 * S)])


def anomaly(name: str, ops) -> Anomaly:
    return Anomaly(name, "fp", 0, {"ops": ops})


def test_an_anomaly_is_complete_when_the_last_op_it_names_completed():
    ph = partition()
    assert first_evidence_ns(ph, [anomaly("lost-write", [[2, 5]])], INVALID) == 5 * S
    assert first_evidence_ns(ph, [anomaly("poll-skip", [[0, 1], [3, 4]])], INVALID) == 4 * S
    assert first_evidence_ns(ph, [anomaly("lost-write", [0])], INVALID) == 2 * S  # an invoke stands for its op
    # the earliest over the anomalies of the invalid set; others, and ops never completed, do not count
    assert first_evidence_ns(ph, [anomaly("lost-write", [[2, 5]]), anomaly("unseen", [[0, 1]]),
                                  anomaly("poll-skip", [[3, 4], [6, None]])], INVALID) == 4 * S
    assert first_evidence_ns(ph, [anomaly("lost-write", [[6, None], 99]), anomaly("lost-write", [])], INVALID) is None
    assert first_evidence_ns(ph, [], INVALID) is None


def test_a_run_is_detected_only_when_invalid_at_its_earliest_partition():
    assert first_detection_s(False, [None, 7 * S, 4_500_000_000]) == 4.5
    assert first_detection_s(False, [None, None]) is None
    assert first_detection_s(True, [3 * S]) is None
    assert first_detection_s("unknown", [3 * S]) is None
    assert median_s([None, 4.0, 1.0, 9.0]) == 4.0 and median_s([2.0, 3.0]) == 2.5
    assert median_s([None]) is None and median_s([]) is None


def two_lost_writes(run_dir: Path) -> Path:
    """fp-0 loses the write acked at 4.5 s, fp-1 the one acked at 8 s."""
    def send(index: int, process: int, partition: int, value: str, invoked: float, acked: float, offset: int):
        base = {"process": process, "f": "send"}
        return [{**base, "index": index, "time": int(invoked * S), "type": "invoke",
                 "value": {"topic": "fp", "partition": partition, "value": value}},
                {**base, "index": index + 1, "time": int(acked * S), "type": "ok",
                 "value": {"topic": "fp", "partition": partition, "value": value, "offset": offset,
                           "leader_epoch": 1}}]
    history = [*send(0, 0, 0, "a", 1, 2, 0), *send(2, 0, 0, "b", 3, 4.5, 1),
               *send(4, 1, 1, "c", 5, 6, 0), *send(6, 1, 1, "d", 7, 8, 1)]
    final = [{"kind": "read", "topic": "fp", "partition": 0, "offset": 0, "value": "a", "leader_epoch": 1},
             {"kind": "read-state", "topic": "fp", "partition": 0, "complete": True},
             {"kind": "read", "topic": "fp", "partition": 1, "offset": 0, "value": "c", "leader_epoch": 1},
             {"kind": "read-state", "topic": "fp", "partition": 1, "complete": True}]
    return write_run(run_dir, history, final, {"topic": "fp", "partitions": 2, "truncation": "hw",
                                               "producer": {"idempotent": True}, "nemesis": {"faults": "kill"}})


def spark_steps(run_dir: Path):
    """What `fencepost analyze` computes for one run, by the plain functions its Spark job calls."""
    rows = check_run_rows(run_dir.name, run_dir)
    return judge(run_dir.name, rows[0][3], [(payload, detected) for _, _, _, payload, detected in rows[1:]])


def test_the_hand_made_run_is_detected_at_its_first_lost_write(tmp_path):
    run_dir = two_lost_writes(tmp_path / "run")
    assert check_in_memory(run_dir).first_detection_s == pytest.approx(4.5)
    assert spark_steps(run_dir).first_detection_s == pytest.approx(4.5)
    (found,) = collect([run_dir])
    assert (found.verdict, found.first_detection_s) == ("invalid", pytest.approx(4.5))


def test_analyze_and_compare_agree_run_by_run(tmp_path):
    runs = [two_lost_writes(tmp_path / "hand")]
    for example in sorted(EXAMPLES.iterdir()):
        if example.is_dir():
            runs.append(Path(shutil.copytree(example, tmp_path / example.name)))
    compared = {r.run_dir: r for r in collect(runs)}
    detected = 0
    for run_dir in runs:
        spark = spark_steps(run_dir)
        assert (compared[run_dir].verdict, compared[run_dir].first_detection_s) == (
            spark.verdict, spark.first_detection_s), run_dir.name
        detected += spark.first_detection_s is not None
        assert (spark.first_detection_s is not None) == (spark.verdict == "invalid"), run_dir.name
    assert detected == 4  # the hand-made run and the three hw examples


def test_analyze_summary_and_compare_show_one_median(tmp_path):
    from fencepost.harness.analysis.output import write_outputs
    from fencepost.harness.compare.table import rows

    runs = [two_lost_writes(tmp_path / "hand")]
    runs += [Path(shutil.copytree(EXAMPLES / name, tmp_path / name))
             for name in ("kip101-scenario-1", "kafka-1211-example-2-high-watermark")]
    verdicts = [spark_steps(run_dir) for run_dir in runs]
    written = write_outputs(verdicts, tmp_path / "analysis", "t")
    with open(written["summary"]) as f:
        summary = {(r["system"], r["truncation"], r["faults"]): r["median_first_detection_s"]
                   for r in csv.DictReader(f)}
    compared = {(r.system, r.truncation, r.faults): f"{r.median_first_detection_s:.3f}" for r in rows(collect(runs))}
    assert summary == compared and summary[("own", "hw", "kill")] == "4.500"
