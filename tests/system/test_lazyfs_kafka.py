"""Stock Apache Kafka 3.9.1, unmodified, on a lazy filesystem: one KRaft node (broker and
controller) with its log dir on a lazy mount (journal model), acks=all writes in batches of 100,
then a power cut (drop, kill -9, unmount, mount again) and a restart on the same folder.

With `log.flush.interval.messages=10000` Kafka fsyncs its partition when the batch ending at
offset 9,999 and the one ending at 19,999 are appended (and at no other point: the segment,
1 MiB, never rolls); exactly those 20,000 of the 25,000 acknowledged records survive. With
`log.flush.interval.messages=1` every batch is fsynced before it is acknowledged, and nothing
acknowledged is lost.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from fencepost.clusters.errors import HostError
from fencepost.clusters.hosts.base import CLUSTER_ENV
from fencepost.clusters.hosts.process import free_port
from fencepost.clusters.systems.kafka import config, dist, wire
from fencepost.clusters.systems.kafka.options import KafkaOptions
from tests.support.lazyfs_support import CLUSTER
from tests.support.paths import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.root, pytest.mark.java, pytest.mark.slow]
VERSION = "3.9.1"
TOPIC = "lazy"
BATCH = 100
HERE = ROOT / "clusters" / "systems" / "kafka"


def needs_java() -> None:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            pytest.skip(f"stock Kafka needs {tool} (scripts/provision installs it)")


class Broker:
    """One KRaft node (broker and controller) of Kafka 3.9.1 with its log dir at `data`."""

    def __init__(self, libs: str, workdir: Path, data: Path, flush_messages: int) -> None:
        self.libs, self.workdir, self.data = libs, workdir, data
        self.port, self.controller_port = free_port(), free_port()
        opts = KafkaOptions(version=VERSION, mode="kraft", min_insync_replicas=1, session_timeout_ms=2000,
                            broker_config={"num.partitions": "1", "log.segment.bytes": str(1 << 20),
                                           "log.flush.interval.messages": str(flush_messages)})
        props = config.kraft_properties(opts, 1, "127.0.0.1", self.port, self.controller_port, str(data),
                                        [config.Endpoint(1, "127.0.0.1", self.controller_port)], 1)
        self.properties = workdir / "server.properties"
        self.properties.write_text(config.render(props))
        self.process: subprocess.Popen | None = None

    def java(self, main: str, *args: str) -> list[str]:
        return [shutil.which("java") or "java", "-Xms384m", "-Xmx384m", "-XX:+UseG1GC",
                f"-Dlog4j.configuration=file:{HERE / 'log4j.properties'}", "-cp", f"{self.libs}/*", main, *args]

    def format(self) -> None:
        done = subprocess.run(self.java("kafka.tools.StorageTool", "format", "-t", config.CLUSTER_ID, "-c",
                                        str(self.properties)), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr

    def start(self, timeout: float = 60.0) -> None:
        log = open(self.workdir / "broker.log", "ab")
        self.process = subprocess.Popen(self.java("kafka.Kafka", str(self.properties)), stdout=log, stderr=log,
                                        stdin=subprocess.DEVNULL, cwd=self.workdir, start_new_session=True,
                                        env={**os.environ, CLUSTER_ENV: CLUSTER})
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            assert self.process.poll() is None, f"the broker exited: {self.log_tail()}"
            try:
                if 1 in wire.metadata("127.0.0.1", self.port, [], 1.0).brokers:
                    return
            except HostError:
                pass
            assert time.monotonic() < deadline, f"the broker did not register within {timeout:g}s: {self.log_tail()}"
            time.sleep(0.2)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def log_tail(self) -> str:
        return (self.workdir / "broker.log").read_text(errors="replace")[-3000:]

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


def create_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # referenced until the answer: its end cancels it
    futures = admin.create_topics([NewTopic(TOPIC, 1, 1, config={"min.insync.replicas": "1"})], request_timeout=30)
    futures[TOPIC].result(30)


def produce(bootstrap: str, count: int) -> int:
    """`count` acks=all records with values 0..count-1, in batches of exactly BATCH; how many were acked."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 1000,
                         "batch.num.messages": BATCH, "enable.idempotence": False, "message.timeout.ms": 30000})
    acked = []

    def report(err, msg):
        if err is None:
            acked.append(msg.offset())
    for start in range(0, count, BATCH):
        for i in range(start, min(count, start + BATCH)):
            producer.produce(TOPIC, f"{i:08d}".encode(), partition=0, on_delivery=report)
        producer.flush(30)
    assert sorted(acked) == list(range(count)), "acknowledged offsets are not 0..count-1"
    return len(acked)


def read_all(bootstrap: str) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lazy-check", "enable.auto.commit": False})
    try:
        partition = TopicPartition(TOPIC, 0, OFFSET_BEGINNING)
        low, high = consumer.get_watermark_offsets(partition, timeout=30)
        consumer.assign([partition])
        values: list[int] = []
        deadline = time.monotonic() + 60
        while len(values) < high - low:
            assert time.monotonic() < deadline, f"read {len(values)} of {high - low} records"
            msg = consumer.poll(1.0)
            if msg is not None and not msg.error():
                assert msg.offset() == low + len(values)
                values.append(int(msg.value()))
        return values
    finally:
        consumer.close()


def cut_and_restart(lazy_mount, broker: Broker) -> None:
    report = lazy_mount.power_cut(broker.kill)
    assert not report.lazy_unmount
    broker.start()


@pytest.fixture
def kafka_libs() -> str:
    needs_java()
    return dist.resolve(VERSION).libs


def run_broker(lazy, kafka_libs: str, tmp_path: Path, flush_messages: int):
    mount = lazy("journal", cache_limit_mb=256)
    broker = Broker(kafka_libs, tmp_path, mount.mountpoint, flush_messages)
    broker.format()
    mount.checkpoint()  # the format's files durable, as on any machine a while after (see the test below)
    broker.start()
    return mount, broker


def test_kafka_format_leaves_its_bootstrap_checkpoint_unsynced(lazy, kafka_libs, tmp_path):
    """StorageTool format fsyncs meta.properties but not bootstrap.checkpoint: a cut right after
    the format leaves the file empty (its entry is durable through the later fsync), and the
    broker then refuses to start ("No FeatureLevelRecord for metadata.version")."""
    mount = lazy("journal")
    Broker(kafka_libs, tmp_path, mount.mountpoint, 1).format()
    assert mount.stats()["dirty_files"] == 1
    mount.power_cut()
    assert (mount.mountpoint / "bootstrap.checkpoint").stat().st_size == 0
    assert (mount.mountpoint / "meta.properties").stat().st_size > 0


def test_kafka_keeps_exactly_the_records_up_to_its_last_fsync(lazy, kafka_libs, tmp_path):
    mount, broker = run_broker(lazy, kafka_libs, tmp_path, flush_messages=10_000)
    try:
        create_topic(broker.bootstrap)
        assert produce(broker.bootstrap, 25_000) == 25_000
        assert read_all(broker.bootstrap) == list(range(25_000))  # unsynced, yet read back before the cut
        assert mount.stats()["dirty_bytes"] > 0
        cut_and_restart(mount, broker)
        assert read_all(broker.bootstrap) == list(range(20_000))
    finally:
        broker.kill()


def test_kafka_flushing_every_message_loses_nothing_acknowledged(lazy, kafka_libs, tmp_path):
    mount, broker = run_broker(lazy, kafka_libs, tmp_path, flush_messages=1)
    try:
        create_topic(broker.bootstrap)
        assert produce(broker.bootstrap, 5_000) == 5_000
        cut_and_restart(mount, broker)
        assert read_all(broker.bootstrap) == list(range(5_000))
    finally:
        broker.kill()
