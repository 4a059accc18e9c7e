"""The producer loads the broker benchmarks share: as fast as possible, and at a fixed rate with latencies.

Each takes a confluent-kafka producer configuration (acks, bootstrap...), so one
benchmark measures acks=1 on one node and another acks=all on a replicated
cluster with the same loop. 100-byte values.

Run alone, it measures both loads against one own broker (acks=1), as bench/broker_bench.py
does with its fetch beside them: python bench/producer_load.py [--messages 100000] [--rate 2000]
[--seconds 5] [--smoke]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--rate", type=int, default=2_000, help="msgs/s for the latency load")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--smoke", action="store_true",
                        help="a few seconds: 2,000 messages, then 500 msgs/s for 1 s, against the same one own "
                             "broker; covers both loads and every line printed, not the figures' worth")
    args = parser.parse_args(argv)
    if args.smoke:
        args.messages, args.rate, args.seconds = 2_000, 500, 1.0
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.support.broker_support import start_broker

    with tempfile.TemporaryDirectory(prefix="producer-load-") as work:
        broker = start_broker(Path(work) / "data")
        try:
            config = {"bootstrap.servers": broker.bootstrap, "acks": "1"}
            elapsed = produce_throughput(config, "load", args.messages)
            print(f"throughput acks=1: {args.messages:,} msgs in {elapsed:.2f} s: "
                  f"{args.messages / elapsed:,.0f} msgs/s")
            lat = sorted(latency_at_rate(config, "latency", args.rate, args.seconds))
            print(f"latency acks=1 at {args.rate:,} msgs/s for {args.seconds:g} s ({len(lat):,} msgs): "
                  f"p50 {percentile(lat, 0.5) * 1000:.2f} ms, p99 {percentile(lat, 0.99) * 1000:.2f} ms")
        finally:
            broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
