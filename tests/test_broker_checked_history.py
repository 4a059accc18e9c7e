"""The own broker judged by fencepost's own checkers: a real confluent-kafka
producer and consumer, their operations recorded with harness.history, the
broker killed with -9 and restarted, the replica log dumped with dump-log, and
`check_run` on the run directory — as `fencepost run` will do it.

In `os` flush mode a kill -9 loses nothing: the run must be valid. In `lazy`
mode the broker acks writes it holds only in memory, so a kill -9 before the
flush is a power cut that loses acknowledged writes: the checkers must say
`lost-write`.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from harness.checking import check_run
from harness.history import HistoryWriter, Recorder
from tests.broker_support import start_broker

pytestmark = pytest.mark.integration

TOPIC = "fp"
PRODUCER = 0
CONSUMER = 1


def produce(recorder: Recorder, bootstrap: str, values: list[str]) -> None:
    """One send at a time on one process: invoke, wait for the delivery
    report, record ok with its offset and epoch (or fail/info)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 0, "message.timeout.ms": 10_000})
    for value in values:
        invoke = {"topic": TOPIC, "partition": 0, "value": value}
        handle = recorder.invoke(PRODUCER, "send", invoke)
        reports = []
        producer.produce(TOPIC, value.encode(), partition=0,
                         on_delivery=lambda err, msg: reports.append((err, msg)))
        producer.flush(15)
        if not reports:
            recorder.complete(handle, "info", invoke, error="no delivery report")
            continue
        err, msg = reports[0]
        if err is not None:
            recorder.complete(handle, "info", invoke, error=str(err))
        else:
            recorder.complete(handle, "ok", {**invoke, "offset": msg.offset(),
                                             "leader_epoch": msg.leader_epoch()})


def consume(recorder: Recorder, bootstrap: str, polls: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "checked-history",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        assign = recorder.invoke(CONSUMER, "assign", {"partitions": [[TOPIC, 0]], "from": "beginning"})
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        recorder.complete(assign, "ok")
        for _ in range(polls):
            handle = recorder.invoke(CONSUMER, "poll", None)
            messages = consumer.consume(num_messages=50, timeout=0.2)
            records = [{"topic": TOPIC, "partition": 0, "offset": m.offset(),
                        "value": m.value().decode(), "leader_epoch": m.leader_epoch()}
                       for m in messages if m.error() is None]
            recorder.complete(handle, "ok", {"records": records})
    finally:
        consumer.close()


def final_read(bootstrap: str) -> list[dict]:
    """A fresh consumer reads the partition from 0 to its end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "final-read",
                         "enable.auto.commit": False})
    try:
        _, end = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        lines, position = [], 0
        for _ in range(200):
            if position >= end:
                break
            for m in consumer.consume(num_messages=500, timeout=0.5):
                if m.error() is None:
                    lines.append({"kind": "read", "topic": TOPIC, "partition": 0, "offset": m.offset(),
                                  "value": m.value().decode(), "leader_epoch": m.leader_epoch()})
                    position = m.offset() + 1
        lines.append({"kind": "read-state", "topic": TOPIC, "partition": 0, "complete": position >= end})
        return lines
    finally:
        consumer.close()


def dump_replica(data_dir: Path) -> list[bytes]:
    done = subprocess.run([sys.executable, "-m", "broker", "dump-log", "--data-dir", str(data_dir),
                           "--node", "n1"], capture_output=True, check=True, timeout=60)
    return [line for line in done.stdout.splitlines() if line.strip()]


def chaos_run(tmp_path: Path, flush_args: tuple[str, ...]) -> tuple[Path, list[dict]]:
    """Produce, kill -9 the broker, restart it, produce and consume more, then
    read everything back into a run directory."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    broker = start_broker(tmp_path / "data", extra_args=("--num-partitions", "1", *flush_args))
    try:
        with HistoryWriter(run_dir / "history.jsonl") as writer:
            recorder = Recorder(writer)
            produce(recorder, broker.bootstrap, [f"{PRODUCER}-{i}" for i in range(60)])
            recorder.nemesis("kill", {"nodes": ["n1"]}, type="invoke")
            broker.kill()
            broker.restart()
            recorder.nemesis("kill", {"nodes": ["n1"]}, type="info")
            produce(recorder, broker.bootstrap, [f"{PRODUCER}-{i}" for i in range(60, 100)])
            consume(recorder, broker.bootstrap, polls=20)
        final = final_read(broker.bootstrap)
    finally:
        broker.stop()
    replica = dump_replica(tmp_path / "data")
    with open(run_dir / "final.jsonl", "wb") as out:
        for line in final:
            out.write(orjson.dumps(line) + b"\n")
        for line in replica:
            out.write(line + b"\n")
    (run_dir / "test.json").write_bytes(orjson.dumps({"name": "checked-history",
                                                      "producer": {"idempotent": True}}))
    return run_dir, final


def test_a_kill_in_os_mode_loses_nothing_and_the_run_checks_valid(tmp_path):
    run_dir, final = chaos_run(tmp_path, ("--flush", "os"))
    assert [line["value"] for line in final if line["kind"] == "read"] == [f"0-{i}" for i in range(100)]
    outcome = check_run(run_dir, out=None)
    assert outcome.valid is True, outcome.results["anomaly_counts"]
    assert outcome.exit_code == 0
    assert outcome.results["linearizability"]["fp-0"]["linearizable"] is True


def test_a_power_cut_in_lazy_mode_is_caught_as_lost_writes(tmp_path):
    # A flush interval longer than the run: every acked write before the kill
    # exists only in the broker's memory when it dies.
    run_dir, final = chaos_run(tmp_path, ("--flush", "lazy", "--flush-interval-ms", "600000"))
    read = [line["value"] for line in final if line["kind"] == "read"]
    assert "0-0" not in read  # the first 60 acked writes died with the process
    outcome = check_run(run_dir, out=None)
    assert outcome.valid is False and outcome.exit_code == 1
    counts = outcome.results["anomaly_counts"]
    assert counts["lost-write"] == 60, counts
    assert counts["nonlinearizable"] == 1
    lost = {a["value"] for a in outcome.results["anomalies"]["lost-write"]}
    assert lost <= {f"0-{i}" for i in range(60)}
