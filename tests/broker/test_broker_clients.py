"""The broker with real clients (confluent-kafka / librdkafka 2.x): produce, consume, groups, restarts, crashes.

Each test starts its own broker process on 127.0.0.1 with a free port and a
tmp data directory (tests/support/broker_support.py).
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.broker_support import BrokerProcess, start_broker, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


def create_topic(bootstrap: str, name: str, partitions: int = 1, config: dict | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1,
                                            config=config or {})], operation_timeout=10)
    futures[name].result(10)


def produce(bootstrap: str, topic: str, values: list[str], partitions: int = 1, **conf) -> dict[str, tuple[int, int]]:
    """Send values round-robin over partitions; returns value -> (partition, offset) for each acked one."""
    acked: dict[str, tuple[int, int]] = {}
    errors: list = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            acked[msg.value().decode()] = (msg.partition(), msg.offset())

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, **conf})
    for i, v in enumerate(values):
        p.produce(topic, value=v.encode(), partition=i % partitions, on_delivery=on_delivery)
        if i % 1000 == 999:
            p.poll(0)
    assert p.flush(30) == 0, "messages still in flight after 30 s"
    assert not errors, errors[:3]
    return acked


def read_all(bootstrap: str, topic: str, partitions: int = 1) -> list[tuple[int, int, str]]:
    """(partition, offset, value) of every record from offset 0 up to each partition's high watermark."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False,
                  "enable.partition.eof": True})
    tps = [TopicPartition(topic, p, 0) for p in range(partitions)]
    ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
    c.assign(tps)
    out = []
    done = {p for p, end in ends.items() if end == 0}
    deadline = time.monotonic() + 30
    while len(done) < partitions and time.monotonic() < deadline:
        for m in c.consume(1000, timeout=0.5):
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    if m.offset() >= ends[m.partition()]:
                        done.add(m.partition())
                    continue
                raise AssertionError(f"consumer error: {m.error()}")
            out.append((m.partition(), m.offset(), m.value().decode()))
    c.close()
    assert len(done) == partitions, f"did not reach the end of every partition: {ends}, got {len(out)}"
    return out


def assert_acked_read_back_once(acked: dict[str, tuple[int, int]], records: list[tuple[int, int, str]]) -> None:
    at = {(p, o): v for p, o, v in records}
    assert len(at) == len(records), "one offset read twice"
    values = [v for _, _, v in records]
    assert len(set(values)) == len(values), "a value appears at more than one offset"
    wrong = [(v, po, at.get(po)) for v, po in acked.items() if at.get(po) != v]
    assert not wrong, f"{len(wrong)} acked values not at their acked offsets, e.g. {wrong[:3]}"


@pytest.mark.parametrize("idempotence", [True, False], ids=["idempotent", "plain"])
@pytest.mark.parametrize("compression", ["none", "gzip", "lz4", "zstd", "snappy"])
def test_acks_all_producer_values_read_back_exactly_once(broker, compression, idempotence):
    topic = f"t-{compression}"
    create_topic(broker.bootstrap, topic, partitions=2)
    values = [f"{compression}-{i}" for i in range(3000)]
    acked = produce(broker.bootstrap, topic, values, partitions=2, acks="all", **{
        "enable.idempotence": idempotence, "compression.type": compression})
    assert len(acked) == len(values)
    records = read_all(broker.bootstrap, topic, partitions=2)
    assert len(records) == len(values)
    assert_acked_read_back_once(acked, records)


@pytest.mark.parametrize("acks", ["0", "1"])
def test_acks_zero_and_one(broker, acks):
    create_topic(broker.bootstrap, "a")
    values = [f"v{i}" for i in range(500)]
    acked = produce(broker.bootstrap, "a", values, acks=acks)
    records = read_all(broker.bootstrap, "a")
    assert sorted(v for _, _, v in records) == sorted(values)
    if acks == "1":
        assert_acked_read_back_once(acked, records)


def test_producer_auto_creates_its_topic(broker):
    acked = produce(broker.bootstrap, "created-by-producer", ["x", "y"])
    assert acked == {"x": (0, 0), "y": (0, 1)}


def test_subscribe_rebalances_between_two_consumers_and_commits(broker):
    create_topic(broker.bootstrap, "g", partitions=4)
    values = [f"g{i}" for i in range(400)]
    produce(broker.bootstrap, "g", values, partitions=4)
    conf = {"bootstrap.servers": broker.bootstrap, "group.id": "grp", "auto.offset.reset": "earliest",
            "heartbeat.interval.ms": 200, "session.timeout.ms": 6000, "enable.auto.commit": False}
    c1 = Consumer({**conf, "client.id": "c1"})
    c1.subscribe(["g"])
    first: set[str] = set()
    wait_until(lambda: _poll_into(c1, first) or first == set(values), timeout=30, what="c1 reads everything")
    assert len(c1.assignment()) == 4
    c1.commit(asynchronous=False)

    c2 = Consumer({**conf, "client.id": "c2"})
    c2.subscribe(["g"])
    seen: dict[str, set[str]] = {"c1": set(), "c2": set()}

    def balanced() -> bool:
        _poll_into(c1, seen["c1"])
        _poll_into(c2, seen["c2"])
        return len(c1.assignment()) == 2 and len(c2.assignment()) == 2

    wait_until(balanced, timeout=30, what="two consumers with two partitions each")
    owned = {"c1": {tp.partition for tp in c1.assignment()}, "c2": {tp.partition for tp in c2.assignment()}}
    assert owned["c1"] | owned["c2"] == {0, 1, 2, 3}
    fresh = [f"new-{p}" for p in range(4)]
    produce(broker.bootstrap, "g", fresh, partitions=4)  # new-p goes to partition p
    wait_until(lambda: (_poll_into(c1, seen["c1"]), _poll_into(c2, seen["c2"]))
               and seen["c1"] | seen["c2"] == set(fresh), timeout=30, what="the new values")
    # nothing committed was read again, and each consumer read only its own partitions
    assert seen["c1"] == {f"new-{p}" for p in owned["c1"]} and seen["c2"] == {f"new-{p}" for p in owned["c2"]}
    c1.commit(asynchronous=False)
    c2.commit(asynchronous=False)
    committed = c1.committed([TopicPartition("g", p) for p in range(4)], timeout=10)
    assert [tp.offset for tp in committed] == [101, 101, 101, 101]
    c1.close()
    c2.close()

    produce(broker.bootstrap, "g", [f"late-{p}" for p in range(4)], partitions=4)
    c3 = Consumer({**conf, "client.id": "c3"})
    c3.subscribe(["g"])
    later: set[str] = set()
    wait_until(lambda: _poll_into(c3, later) or len(later) >= 4, timeout=30, what="the late values")
    assert later == {f"late-{p}" for p in range(4)}  # resumed from the committed offsets
    c3.close()


def _poll_into(consumer: Consumer, into: set[str]) -> bool:
    for m in consumer.consume(500, timeout=0.1):
        if not m.error():
            into.add(m.value().decode())
    return False


def test_data_and_committed_offsets_survive_a_clean_restart(broker):
    create_topic(broker.bootstrap, "r", partitions=2)
    acked = produce(broker.bootstrap, "r", [f"r{i}" for i in range(1000)], partitions=2, acks="all")
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "keep"})
    c.commit(offsets=[TopicPartition("r", 0, 123), TopicPartition("r", 1, 45)], asynchronous=False)
    c.close()
    assert broker.stop() == 0
    assert (broker.data_dir / ".kafka_cleanshutdown").exists()
    assert "shutdown complete" in broker.log_text()
    broker.restart()
    assert_acked_read_back_once(acked, read_all(broker.bootstrap, "r", partitions=2))
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "keep"})
    committed = c.committed([TopicPartition("r", 0), TopicPartition("r", 1)], timeout=10)
    assert [tp.offset for tp in committed] == [123, 45]
    c.close()
    more = produce(broker.bootstrap, "r", ["after"], acks="all")
    assert more["after"] == (0, 500)


def test_kill9_in_os_mode_keeps_every_acked_write(broker):
    create_topic(broker.bootstrap, "k")
    acked = produce(broker.bootstrap, "k", [f"k{i}" for i in range(2000)], acks="all", **{"enable.idempotence": True})
    broker.kill()
    broker.restart()
    records = read_all(broker.bootstrap, "k")
    assert len(records) == 2000
    assert_acked_read_back_once(acked, records)
    assert "no clean shutdown marker" in broker.log_text()


@pytest.mark.slow
def test_lazy_mode_kill9_loses_only_the_unflushed_tail(tmp_path):
    b = start_broker(tmp_path / "data", extra_args=("--flush", "lazy", "--flush-interval-ms", "600000"))
    try:
        create_topic(b.bootstrap, "lazy")
        flushed = produce(b.bootstrap, "lazy", [f"a{i}" for i in range(300)], acks="all")
        b.stop()  # a clean shutdown writes what lazy mode held
        b.restart()
        unflushed = produce(b.bootstrap, "lazy", [f"b{i}" for i in range(300)], acks="all")
        assert min(o for _, o in unflushed.values()) == 300
        assert len(read_all(b.bootstrap, "lazy")) == 600  # readable while held in memory
        b.kill()  # a power cut: the held appends are gone
        b.restart()
        records = read_all(b.bootstrap, "lazy")
        assert_acked_read_back_once(flushed, records)
        assert len(records) == 300
        again = produce(b.bootstrap, "lazy", ["c0"], acks="all")
        assert again["c0"] == (0, 300)  # the log continues right after the surviving prefix
        assert "Traceback" not in b.log_text() and " ERROR " not in b.log_text()
    finally:
        b.stop()


@pytest.mark.slow
def test_lazy_mode_flush_timer_writes_the_log_out(tmp_path):
    b = start_broker(tmp_path / "data", extra_args=("--flush", "lazy", "--flush-interval-ms", "100"))
    try:
        create_topic(b.bootstrap, "timer")
        acked = produce(b.bootstrap, "timer", [f"t{i}" for i in range(200)], acks="all")
        segment = b.data_dir / "timer-0" / "00000000000000000000.log"
        wait_until(lambda: segment.exists() and segment.stat().st_size > 0, what="the flush timer to write")
        wait_until(lambda: _segment_holds(segment, 200), what="all 200 records on disk")
        b.kill()
        b.restart()
        assert_acked_read_back_once(acked, read_all(b.bootstrap, "timer"))
    finally:
        b.stop()


def _segment_holds(segment: Path, count: int) -> bool:
    from fencepost.broker.storage import iter_batches
    data = segment.read_bytes()
    try:
        return sum(batch.record_count for batch in iter_batches(data)) >= count
    except ValueError:
        return False


def test_torn_tail_written_by_hand_is_truncated_on_start(broker):
    create_topic(broker.bootstrap, "torn")
    acked = produce(broker.bootstrap, "torn", [f"x{i}" for i in range(100)], acks="all")
    broker.stop()
    segment = broker.data_dir / "torn-0" / "00000000000000000000.log"
    whole = segment.read_bytes()
    with open(segment, "ab") as f:
        f.write(whole[:40])  # the first 40 bytes of a batch: a write cut by a crash
    (broker.data_dir / ".kafka_cleanshutdown").unlink()
    broker.restart()
    assert segment.stat().st_size == len(whole)
    records = read_all(broker.bootstrap, "torn")
    assert_acked_read_back_once(acked, records)
    assert len(records) == 100
    assert produce(broker.bootstrap, "torn", ["next"])["next"] == (0, 100)


def test_two_brokers_cannot_share_a_data_dir(broker: BrokerProcess, tmp_path):
    with pytest.raises(RuntimeError, match="in use by another broker"):
        start_broker(broker.data_dir, log_file=tmp_path / "second.log", timeout=10)
    assert broker.alive()


@pytest.mark.slow
def test_clients_ride_through_a_kill_and_restart(broker):
    """A producer (idempotent, acks=all) and a consumer keep running while the broker is killed and restarted:
    every acked value is read once, at its acked offset, and records written after the restart carry epoch 1."""
    create_topic(broker.bootstrap, "ride")
    acked: dict[bytes, int] = {}
    errors: list[str] = []
    seen: dict[bytes, list[tuple[int, int | None]]] = {}
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 1, "message.timeout.ms": 30000})
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "ride", "enable.auto.commit": False})
    c.assign([TopicPartition("ride", 0, 0)])

    def on_delivery(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            acked[msg.value()] = msg.offset()

    def consume(timeout: float) -> None:
        for m in c.consume(500, timeout=timeout):
            if m.error():
                errors.append(str(m.error()))
            else:
                seen.setdefault(m.value(), []).append((m.offset(), m.leader_epoch()))

    sent = 0
    for phase in ("before", "after"):
        phase_end = time.monotonic() + 2
        while time.monotonic() < phase_end:
            p.produce("ride", b"%d" % sent, on_delivery=on_delivery)
            sent += 1
            p.poll(0)
            consume(0.001)
        if phase == "before":
            broker.kill()
            time.sleep(0.5)  # clients keep producing into their queues and retrying meanwhile
            broker.restart()
    assert p.flush(30) == 0
    wait_until(lambda: consume(0.2) or len(seen) >= len(acked), timeout=20, what="every acked value consumed")
    c.close()
    assert not errors, errors[:5]
    assert len(acked) == sent
    assert all(len(v) == 1 for v in seen.values()), "a value consumed twice"
    assert {v: found[0][0] for v, found in seen.items()} == acked
    assert {epoch for found in seen.values() for _, epoch in found} == {0, 1}
