"""Benchmark of the own broker with a real client: produce and fetch throughput, produce latency at a fixed rate.

One broker node (`python -m fencepost.broker serve`, flush os), one partition, 100-byte
values; a confluent-kafka producer with acks=1 and librdkafka's batching
defaults sends as fast as it can, then a consumer reads everything back; then a
producer sends at a fixed 5,000 msgs/s and the latency of each message
(delivery-report time minus produce() call time) is summarised.

Run: python bench/broker_bench.py [--messages 500000] [--rate 5000] [--seconds 10] [--partitions 1] [--keep]
Prints figures; asserts nothing. Targets on the project's 2-core machine:
>= 50,000 msgs/s produce, >= 100,000 msgs/s fetch, p99 <= 20 ms at 5,000 msgs/s.
Measured there (2026-11, 500,000 messages, other work sharing the cores): produce
~290,000 msgs/s (29 MB/s), fetch ~200,000 msgs/s (20 MB/s), p50 3-5 ms and p99
9-13 ms at 5,000 msgs/s (linger.ms=5 is most of the p50). py-spy shows the broker
idle about half the time in both throughput runs: the Python clients are the limit.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from bench.producer_load import VALUE_BYTES, latency_at_rate, percentile, produce_throughput  # noqa: E402
from tests.support.broker_support import start_broker  # noqa: E402

ACKS_1 = {"acks": "1"}


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # must outlive the future
    futures = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
    futures[name].result(10)


def fetch_throughput(bootstrap: str, topic: str, partitions: int, count: int) -> float:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = 0
    start = time.perf_counter()
    deadline = start + 300
    while got < count and time.perf_counter() < deadline:
        for m in c.consume(10_000, timeout=1):
            if m.error() is None:
                got += 1
    elapsed = time.perf_counter() - start
    c.close()
    if got < count:
        raise SystemExit(f"fetched only {got} of {count} messages")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=500_000)
    parser.add_argument("--rate", type=int, default=5_000, help="msgs/s for the latency run")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--flush", default="os", choices=("os", "fsync", "lazy"))
    parser.add_argument("--keep", action="store_true", help="keep the broker's data directory and log")
    parser.add_argument("--smoke", action="store_true",
                        help="a few seconds: 2,000 messages, latency at 500 msgs/s for 1 s, on the same one broker "
                             "and code path; covers every step and line printed, not the figures' worth")
    args = parser.parse_args(argv)
    if args.smoke:
        args.messages, args.rate, args.seconds = 2_000, 500, 1.0

    work = Path(tempfile.mkdtemp(prefix="broker-bench-"))
    broker = start_broker(work / "data", extra_args=("--flush", args.flush))
    print(f"broker pid {broker.pid} on {broker.bootstrap}, flush {args.flush}, data in {work}")
    try:
        create_topic(broker.bootstrap, "bench", args.partitions)
        mb = args.messages * VALUE_BYTES / 1e6
        elapsed = produce_throughput({"bootstrap.servers": broker.bootstrap, **ACKS_1}, "bench", args.messages)
        print(f"produce  acks=1 {args.messages:>9,} msgs x {VALUE_BYTES} B in {elapsed:6.2f} s: "
              f"{args.messages / elapsed:>9,.0f} msgs/s {mb / elapsed:7.1f} MB/s")
        elapsed = fetch_throughput(broker.bootstrap, "bench", args.partitions, args.messages)
        print(f"fetch           {args.messages:>9,} msgs x {VALUE_BYTES} B in {elapsed:6.2f} s: "
              f"{args.messages / elapsed:>9,.0f} msgs/s {mb / elapsed:7.1f} MB/s")
        create_topic(broker.bootstrap, "latency", 1)
        lat = sorted(latency_at_rate({"bootstrap.servers": broker.bootstrap, **ACKS_1}, "latency", args.rate,
                                     args.seconds))
        print(f"latency  acks=1 at {args.rate:,} msgs/s for {args.seconds:g} s ({len(lat):,} msgs): "
              f"p50 {percentile(lat, 0.5) * 1000:.2f} ms, p99 {percentile(lat, 0.99) * 1000:.2f} ms, "
              f"max {lat[-1] * 1000:.2f} ms, mean {statistics.fmean(lat) * 1000:.2f} ms")
    finally:
        broker.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
