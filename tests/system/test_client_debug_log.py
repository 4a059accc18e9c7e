"""A planted stuck consumer brings its own evidence: two own brokers on 127.0.0.1 (process
backend), a topic of two partitions with one replica each, records written to both, then
the leader of partition 0 SIGSTOPped. A consumer workload with client logs on reads
partition 1 and nothing of partition 0 while the producers' acknowledgements say there is
something to read: after `stuck_s` it writes the consumer's librdkafka debug log
(workloads/client_log.py) to clients/<process>.log in the run directory, under a header
naming the stuck partition, with librdkafka's own fetch and protocol lines in it, and the
process's native thread stacks (gdb: workloads/client_stacks.py) beside it, librdkafka's
threads among them."""
from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Producer

from fencepost.harness.rundir.history import HistoryWriter, Recorder
from fencepost.harness.rundir.names import CLIENTS_DIR, HISTORY_FILE
from fencepost.workloads.client_log import DEFAULT_DEBUG
from fencepost.workloads.consumer import ConsumerOptions, ConsumerWorkload
from tests.support.local_cluster import LocalCluster, node_name

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "planted"
RECORDS = 20  # per partition
PROCESS = 1000


def _produce(bootstrap: str) -> dict[int, int]:
    """RECORDS records to each partition; partition -> the highest acknowledged offset."""
    acked: dict[int, int] = {}

    def report(err, msg) -> None:
        assert err is None, err
        acked[msg.partition()] = max(acked.get(msg.partition(), -1), msg.offset())

    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for partition in (0, 1):
        for i in range(RECORDS):
            producer.produce(TOPIC, value=f"{partition}-{i}".encode(), partition=partition, on_delivery=report)
    assert producer.flush(30) == 0
    return acked


def test_a_consumer_stuck_on_a_paused_leader_writes_its_debug_log_to_the_run_directory(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with LocalCluster(tmp_path / "cluster", brokers=2) as cluster:
        cluster.create_topic(TOPIC, partitions=2, replication_factor=1)
        acked = _produce(cluster.bootstrap)
        assert acked == {0: RECORDS - 1, 1: RECORDS - 1}
        stopped = cluster.leader(TOPIC, 0)
        assert stopped != cluster.leader(TOPIC, 1), "the two partitions should lead on different brokers"
        cluster.pause(stopped)
        with HistoryWriter(run_dir / HISTORY_FILE) as writer:
            consumers = ConsumerWorkload(
                cluster.bootstrap, Recorder(writer), [0, 1], [PROCESS],
                ConsumerOptions(topic=TOPIC, debug=DEFAULT_DEBUG, stuck_s=2.0, librdkafka={"log_level": 0}),
                client_logs=run_dir / CLIENTS_DIR, acked=lambda: acked)
            deadline = time.monotonic() + 8.0
            log_file = run_dir / CLIENTS_DIR / f"{PROCESS}.log"
            while time.monotonic() < deadline and not log_file.exists():
                consumers.begin(PROCESS, lambda process, kind: None)
                time.sleep(0.1)
            for _ in range(5):  # lines after the flush are appended to the file
                consumers.begin(PROCESS, lambda process, kind: None)
                time.sleep(0.1)
            cluster.resume(stopped)
            consumers.close(10)
    lines = [orjson.loads(line) for line in (run_dir / HISTORY_FILE).read_bytes().splitlines()]
    read = {(r["partition"], r["offset"]) for line in lines if line["f"] == "poll" and line["type"] == "ok"
            for r in line["value"]["records"]}
    assert {p for p, _ in read} == {1}, f"only partition 1 ({node_name(stopped)} paused leads 0): {sorted(read)[:5]}"
    assert log_file.exists(), f"no client log in {run_dir / CLIENTS_DIR}: {list(run_dir.rglob('*'))}"
    text = log_file.read_text()
    header = text.splitlines()[0]
    assert header.startswith("=== ") and f"client {PROCESS} flushed: stuck: {TOPIC}-0 (read to -1, " \
        f"acknowledged to {RECORDS - 1}" in header, header
    assert f"{TOPIC}-1" not in header.split("flushed:")[1], header
    assert " DEBUG FETCH " in text, "librdkafka's fetch context lines are in the log"
    assert " DEBUG SEND " in text or " DEBUG RECV " in text, "librdkafka's protocol lines are in the log"
    stacks = run_dir / CLIENTS_DIR / f"{PROCESS}.stacks.1.txt"
    assert "native stacks of every thread written to" in text, "gdb is on this machine: the stacks are taken"
    assert "rdk:broker" in stacks.read_text() and "rdk:main" in stacks.read_text(), "librdkafka's threads, named"
    assert f"NOTE fencepost poll: {RECORDS} records ({TOPIC}-1 to {RECORDS - 1})" in text \
        or "NOTE fencepost poll: 0 records" in text
