"""The final read against a real own cluster (3 brokers, RF 3, process backend): every
partition read from 0 to its high watermark in offset order with leader epochs, a
`read-state` per partition (complete, end offset), appended to final.jsonl after
what is there; with every broker paused it gives up within its time and says why,
`complete: false`; records acknowledged while the read runs are read too (the end is asked
again until it no longer grows)."""
from __future__ import annotations

import os
import threading
import time

import orjson
import pytest
from confluent_kafka import Producer

from fencepost.clusters.cluster import Cluster, ClusterSpec
from fencepost.clusters.systems.base import TopicSpec
from fencepost.harness.rundir.final_writer import add_final_lines
from fencepost.workloads.final_read import final_read_lines

pytestmark = [pytest.mark.integration, pytest.mark.slow]

QUIET = {"log_level": 0}
TOPIC = "read"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    made = Cluster.up(ClusterSpec("fp-final-read-" + os.urandom(2).hex(), backend="process"),
                      tmp_path_factory.mktemp("workloads-final-read"))
    try:
        made.create_topic(TopicSpec(TOPIC))
        made.recovery.wait_for_full_isr(TOPIC, 30)
        yield made
    finally:
        made.down()


@pytest.fixture(scope="module")
def written(cluster) -> dict[int, dict[int, str]]:
    """Acked values by partition and offset: 300 in partition 0, 5 in partition 1, none in 2."""
    acked: dict[int, dict[int, str]] = {0: {}, 1: {}, 2: {}}
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", **QUIET})
    for partition, count in ((0, 300), (1, 5)):
        for i in range(count):
            producer.produce(TOPIC, f"{partition}-{i}".encode(), partition=partition,
                             on_delivery=lambda err, m: err is None and acked[m.partition()].__setitem__(
                                 m.offset(), m.value().decode()))
    assert producer.flush(30) == 0
    assert [len(acked[p]) for p in (0, 1, 2)] == [300, 5, 0]
    return acked


def test_every_partition_is_read_to_its_end_in_offset_order(cluster, written):
    lines = final_read_lines(cluster.bootstrap, TOPIC, [0, 1, 2], timeout_s=30, librdkafka=QUIET)
    by_partition: dict[int, list[dict]] = {0: [], 1: [], 2: []}
    for line in lines:
        by_partition[line["partition"]].append(line)
    for partition, acked in written.items():
        *reads, state = by_partition[partition]
        assert state == {"kind": "read-state", "topic": TOPIC, "partition": partition, "complete": True,
                         "end_offset": len(acked)}
        assert [(r["offset"], r["value"]) for r in reads] == sorted(acked.items())
        assert all(r["kind"] == "read" and r["topic"] == TOPIC and type(r["leader_epoch"]) is int for r in reads)
    # partition by partition, in the order asked
    assert [line["partition"] for line in lines if line["kind"] == "read-state"] == [0, 1, 2]


def test_the_lines_are_added_to_final_jsonl(cluster, written, tmp_path):
    final = tmp_path / "final.jsonl"
    final.write_bytes(b'{"kind":"replica-state","note":"already there"}\n')
    reads = final_read_lines(cluster.bootstrap, TOPIC, [2, 1], timeout_s=30, librdkafka=QUIET)
    count = add_final_lines(final, [orjson.dumps(line) for line in reads])
    lines = [orjson.loads(raw) for raw in final.read_bytes().splitlines()]
    assert count == len(lines) - 1 == 5 + 2
    assert lines[0]["note"] == "already there"
    assert [(line["kind"], line["partition"]) for line in lines[1:3]] == [("read-state", 2), ("read", 1)]


@pytest.mark.timeout(120)
def test_with_every_broker_paused_the_read_gives_up_in_time_and_says_so(cluster, written):
    for node in cluster.broker_nodes:
        cluster.pause(node)
    try:
        lines = final_read_lines(cluster.bootstrap, TOPIC, [0, 1], timeout_s=4, librdkafka=QUIET)
    finally:
        for node in cluster.broker_nodes:
            cluster.resume(node)
    assert [line["kind"] for line in lines] == ["read-state", "read-state"]
    for line in lines:
        assert line["complete"] is False and line["end_offset"] is None
        assert line["error"].startswith("no high watermark from the leader: ")


def test_partitions_known_to_be_offline_are_not_asked_for():
    """A partition with no leader that any live broker could become is reported incomplete with
    the reason, without a broker being asked (here there is none: asking would end in a
    timeout's error instead of the reasons)."""
    lines = final_read_lines("127.0.0.1:9", TOPIC, [0, 1], timeout_s=20,
                             unreadable={0: "fp-0 has no live member of its ISR", 1: "fp-1 too"})
    assert lines == [{"kind": "read-state", "topic": TOPIC, "partition": 0, "complete": False, "end_offset": None,
                      "error": "fp-0 has no live member of its ISR"},
                     {"kind": "read-state", "topic": TOPIC, "partition": 1, "complete": False, "end_offset": None,
                      "error": "fp-1 too"}]


def test_records_acknowledged_while_the_read_runs_are_read_too(cluster):
    """The end is asked again a second after the read reached it, until it no longer grows (a
    leader elected during the read may answer a lagging high watermark, Kafka before 2.2): here
    a writer goes on acknowledging records for 2.5 s of the read, and every one is read."""
    topic = "read-during"
    cluster.create_topic(TopicSpec(topic, partitions=1))
    cluster.recovery.wait_for_full_isr(topic, 30)
    acked: dict[int, str] = {}
    stop = threading.Event()

    def write() -> None:
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", **QUIET})
        for i in range(100_000):
            if stop.is_set():
                break
            producer.produce(topic, f"w-{i}".encode(), partition=0,
                             on_delivery=lambda err, m: err is None
                             and acked.__setitem__(m.offset(), m.value().decode()))
            producer.flush(5)
            time.sleep(0.02)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        time.sleep(0.5)  # records before the read begins
        threading.Timer(2.5, stop.set).start()
        lines = final_read_lines(cluster.bootstrap, topic, [0], timeout_s=30, librdkafka=QUIET)
    finally:
        stop.set()
        writer.join()
    *reads, state = lines
    assert {line["offset"]: line["value"] for line in reads} == acked and len(acked) > 20
    assert state["complete"] is True and state["end_offset"] == len(acked)
