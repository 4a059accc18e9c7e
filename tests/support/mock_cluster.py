"""librdkafka's own mock cluster (the `rd_kafka_mock_*` API of the librdkafka that the
confluent-kafka wheel bundles), driven through ctypes, as bench/librdkafka_deadlock.py does:
a Kafka-protocol cluster on loopback inside this process, no Kafka, no network namespace.
Real confluent-kafka clients talk to it at `bootstrap`; a test shapes it (which broker leads a
partition or coordinates a group, how late a broker answers) while they run.

    with MockCluster(brokers=2) as cluster:
        cluster.topic("fp", partitions=1, leader=2)
        cluster.coordinator("fencepost", 1)
        ...  # clients on cluster.bootstrap
        cluster.rtt(1, 3000)  # broker 1 answers everything 3 s late from now on

Close every client before the cluster (leaving the `with`): a client of a destroyed cluster
retries its connections until it is closed.
"""
from __future__ import annotations

import ctypes
from pathlib import Path
from types import TracebackType

import pytest


def librdkafka() -> ctypes.CDLL:
    """The librdkafka confluent_kafka loaded, with the mock API's argument types set; the test
    is skipped when this confluent-kafka bundles none (not a wheel)."""
    import confluent_kafka
    folder = Path(confluent_kafka.__file__).resolve().parent.parent / "confluent_kafka.libs"
    found = sorted(folder.glob("librdkafka*.so*"))
    if not found:
        pytest.skip(f"no bundled librdkafka in {folder}: the mock cluster needs a confluent-kafka wheel")
    lib = ctypes.CDLL(str(found[0]))
    lib.rd_kafka_conf_new.restype = ctypes.c_void_p
    lib.rd_kafka_new.restype = ctypes.c_void_p
    lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
    lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.rd_kafka_mock_cluster_destroy.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    lib.rd_kafka_mock_partition_set_leader.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32,
                                                       ctypes.c_int32]
    lib.rd_kafka_mock_coordinator_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                                  ctypes.c_int32]
    lib.rd_kafka_mock_broker_set_rtt.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int]
    lib.rd_kafka_mock_group_initial_rebalance_delay_ms.argtypes = [ctypes.c_void_p, ctypes.c_int32]
    return lib


class MockCluster:
    """A mock cluster of `brokers` brokers (ids 1..brokers) whose groups rebalance at once
    (no initial delay); `bootstrap` is its bootstrap.servers. A context manager: leaving it
    destroys the cluster."""

    def __init__(self, brokers: int = 1) -> None:
        self._lib = librdkafka()
        errstr = ctypes.create_string_buffer(512)
        # a producer handle hosts the mock cluster (its brokers run on their own threads)
        self._host = self._lib.rd_kafka_new(0, self._lib.rd_kafka_conf_new(), errstr, len(errstr))
        if not self._host:
            raise RuntimeError(f"librdkafka could not make the mock cluster's host handle: {errstr.value.decode()}")
        self._mock = self._lib.rd_kafka_mock_cluster_new(self._host, brokers)
        if not self._mock:
            self._lib.rd_kafka_destroy(self._host)
            raise RuntimeError(f"librdkafka could not start a mock cluster of {brokers} brokers")
        self.bootstrap: str = self._lib.rd_kafka_mock_cluster_bootstraps(self._mock).decode()
        self._lib.rd_kafka_mock_group_initial_rebalance_delay_ms(self._mock, 0)

    def topic(self, name: str, partitions: int = 1, leader: int | None = None) -> None:
        """Create topic `name` (replication factor 1); with `leader`, every partition led by it."""
        self._call("rd_kafka_mock_topic_create", name.encode(), partitions, 1)
        for p in range(partitions if leader is not None else 0):
            self._call("rd_kafka_mock_partition_set_leader", name.encode(), p, leader)

    def coordinator(self, group: str, broker: int) -> None:
        """Broker `broker` coordinates consumer group `group`."""
        self._call("rd_kafka_mock_coordinator_set", b"group", group.encode(), broker)

    def rtt(self, broker: int, ms: int) -> None:
        """Broker `broker` answers every request `ms` milliseconds late, from now on (0: at once)."""
        self._call("rd_kafka_mock_broker_set_rtt", broker, ms)

    def _call(self, name: str, *args: object) -> None:
        error = getattr(self._lib, name)(self._mock, *args)
        if error:
            raise RuntimeError(f"{name}{args}: librdkafka error code {error}")

    def close(self) -> None:
        """Destroy the cluster (idempotent)."""
        if self._mock:
            self._lib.rd_kafka_mock_cluster_destroy(self._mock)
            self._lib.rd_kafka_destroy(self._host)
            self._mock = self._host = None

    def __enter__(self) -> MockCluster:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()
