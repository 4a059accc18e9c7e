"""A consumer close that never returns (librdkafka's rd_kafka_consumer_close, seen hanging
after overlapping faults) is abandoned after its timeout, so the run goes on; a real
consumer closes within it."""
from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer

from fencepost.workloads.closing import close_within


class StuckClose:
    def __init__(self) -> None:
        self.release = threading.Event()
        self.called = threading.Event()

    def close(self) -> None:
        self.called.set()
        self.release.wait()


def test_a_close_that_never_returns_is_abandoned_with_a_warning(caplog):
    stuck = StuckClose()
    started = time.monotonic()
    assert close_within(stuck, timeout_s=0.2, what="consumer 7") is False
    assert stuck.called.is_set() and time.monotonic() - started < 5
    assert "consumer 7 did not close within" in caplog.text
    stuck.release.set()


def test_a_real_consumer_closes_within_the_timeout():
    consumer = Consumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "g", "socket.timeout.ms": 1000})
    assert close_within(consumer, timeout_s=10) is True


def test_errors_of_a_failed_consumer_are_ignored():
    class Broken:
        def close(self) -> None:
            raise RuntimeError("Consumer closed")
    assert close_within(Broken(), timeout_s=5) is True
