"""Lazy disks on the docker backend (clusters/disks/container_disk.py): the daemon runs in each node's
container, a power cut loses what the broker had not fsynced and the node comes back on a fresh
mount of the same backing folder, a plain kill -9 loses nothing (the daemon survives it: it is the
node's page cache), teardown leaves no container, daemon or mount. The own system: a node starts
in a second. Needs root and a Docker daemon (the one that answers, or dockerd started here)."""
from __future__ import annotations

import os
import shutil

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from fencepost.clusters.cluster import Cluster, ClusterSpec
from fencepost.clusters.lazyfs.cleanup import daemons
from fencepost.clusters.systems.base import TopicSpec
from fencepost.nemesis import MemoryRecorder, heal_cluster, start_fault
from tests.support.docker_daemon import daemon_answers, running_dockerd
from tests.support.lazyfs_support import needs_fuse

pytestmark = [pytest.mark.integration, pytest.mark.docker, pytest.mark.root, pytest.mark.slow]
TOPIC = "fp"


@pytest.fixture
def docker_daemon():
    if os.geteuid() != 0:
        pytest.skip("the docker backend tests need root")
    if not daemon_answers() and shutil.which("dockerd") is None:
        pytest.skip("dockerd is not installed (scripts/provision installs docker.io)")
    with running_dockerd():
        yield


def end_offset(bootstrap: str, partition: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "fp-test"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(TOPIC, partition), timeout=10)[1]
    finally:
        consumer.close()


def test_a_power_cut_in_a_container_loses_the_unsynced_tail_and_a_kill_loses_nothing(tmp_path, docker_daemon):
    needs_fuse()
    name = "fp-dockerdisk-" + os.urandom(2).hex()
    spec = ClusterSpec(name, "own", 1, "docker", {}, {"flush": "lazy", "flush_interval_ms": 600000,
                                                         "min_insync_replicas": 1})
    cluster = Cluster.up(spec, tmp_path)
    try:
        assert cluster.disks.nodes == ["n1"] and cluster.disks.kills_with_signals("n1")
        cluster.create_topic(TopicSpec(TOPIC, 1, 1))
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        for i in range(50):
            producer.produce(TOPIC, f"a{i}".encode(), partition=0)
        assert producer.flush(30) == 0
        recorder = MemoryRecorder()
        start_fault(cluster, "kill:one", recorder)  # a process crash: the page cache (the daemon) stays
        heal_cluster(cluster, recorder)
        assert end_offset(cluster.bootstrap, 0) == 50
        cluster.writeback("n1")  # the 50 records durable, as the kernel's write-back would make them
        for i in range(30):
            producer.produce(TOPIC, f"b{i}".encode(), partition=0)
        assert producer.flush(30) == 0
        before = cluster.disks.disk("n1").daemons[0].pid
        fault = start_fault(cluster, "power-cut:one", recorder)
        assert fault.done["lost"]["n1"]["lost_bytes"] > 0
        assert cluster.disks.disk("n1").daemons[0].pid != before
        heal_cluster(cluster, recorder)
        assert end_offset(cluster.bootstrap, 0) == 50  # the 30 unsynced records are gone
        assert daemons([name])  # the daemon, seen from this machine
    finally:
        cluster.down()
    assert daemons([name]) == {}
