"""The producer loads the broker benchmarks share: as fast as possible, and at a fixed rate with latencies.

Each takes a confluent-kafka producer configuration (acks, bootstrap...), so one
benchmark measures acks=1 on one node and another acks=all on a replicated
cluster with the same loop. 100-byte values.
"""
from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Producer

VALUE_BYTES = 100


def produce_throughput(config: dict[str, Any], topic: str, count: int, flush_timeout_s: float = 120) -> float:
    """Send `count` values as fast as librdkafka takes them; seconds until every one is acked."""
    value = b"v" * VALUE_BYTES
    p = Producer({**config, "queue.buffering.max.messages": 1_000_000})
    failures: list[object] = []
    start = time.perf_counter()
    for _ in range(count):
        while True:
            try:
                p.produce(topic, value, on_delivery=lambda err, _m: err and failures.append(err))
                break
            except BufferError:
                p.poll(0.001)
    left = p.flush(flush_timeout_s)
    elapsed = time.perf_counter() - start
    if left or failures:
        raise SystemExit(f"produce failed: {left} left in queue, {len(failures)} errors, e.g. {failures[:1]}")
    return elapsed


def latency_at_rate(config: dict[str, Any], topic: str, rate: int, seconds: float) -> list[float]:
    """Send at `rate` msgs/s for `seconds`; each message's delivery-report time minus its produce() time."""
    value = b"l" * VALUE_BYTES
    p = Producer(config)
    p.produce(topic, value)  # connect and fetch metadata before measuring
    p.flush(10)
    latencies: list[float] = []
    errors: list[object] = []
    total = int(rate * seconds)
    start = time.perf_counter()
    sent = 0
    while sent < total:
        due = min(int((time.perf_counter() - start) * rate) + 1, total)
        while sent < due:
            t0 = time.perf_counter()
            p.produce(topic, value, on_delivery=lambda err, _m, t0=t0: errors.append(err) if err else
                      latencies.append(time.perf_counter() - t0))
            sent += 1
        p.poll(0.0002)
    p.flush(30)
    if len(latencies) != total:
        raise SystemExit(f"only {len(latencies)} of {total} latency samples were delivered; "
                         f"errors e.g. {errors[:1]}")
    return latencies


def percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(int(q * len(sorted_values)), len(sorted_values) - 1)]
