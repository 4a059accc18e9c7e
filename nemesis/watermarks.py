"""A partition's high watermark, asked of its leader as a client asks (ListOffsets through a
consumer of no group): what scenarios wait on, for records to flow before they act or for a new
leader to pass a mark."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaException, TopicPartition

from fencepost.workloads.closing import close_within

POLL_S = 0.5


def watermark_consumer(bootstrap: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": "fencepost-nemesis", "enable.auto.commit": False})


def high_watermark(bootstrap: str, topic: str, partition: int, timeout: float = 5.0) -> int | None:
    """The high watermark now; None when the leader does not answer within `timeout`."""
    consumer = watermark_consumer(bootstrap)
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)[1]
    except KafkaException:
        return None
    finally:
        close_within(consumer, what="the nemesis's high-watermark consumer")


def await_above(bootstrap: str, topic: str, partition: int, above: int, timeout: float) -> int | None:
    """Asks until the high watermark is above `above` or `timeout` seconds have passed; the last
    answer (None when there was none)."""
    reached = None
    consumer = watermark_consumer(bootstrap)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                _, reached = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=2.0)
            except KafkaException:
                pass
            if reached is not None and reached > above:
                break
            time.sleep(POLL_S)
    finally:
        close_within(consumer, what="the nemesis's high-watermark consumer")
    return reached
