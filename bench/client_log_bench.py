"""Cost of the client log ring (workloads/client_log.py) per librdkafka log line, on the real
path: a confluent-kafka Consumer with `debug = all` aimed at a port nobody listens on writes
its lines into its queue; one `poll()` then serves them all through the `logger` (see the
module docstring there). The poll is timed with three loggers: ClientLog (the ring), a logger
that keeps nothing (confluent-kafka's own callback cost), and — for scale — the lines counted
in a plain Python list. Prints microseconds of CPU per line; asserts nothing about time.

A run's cost is this per-line figure times its lines per second (the `N lines held` of a
flushed clients/<process>.log over the seconds it spans, docs/WORKLOADS.md).
`python3 bench/client_log_bench.py [--seconds S] [--rounds R]`
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition  # noqa: E402

from fencepost.workloads.client_log import ClientLog  # noqa: E402


class Counting:
    def __init__(self) -> None:
        self.n = 0

    def log(self, level: int, fmt: str, *args: Any) -> None:
        self.n += 1


class Listing(Counting):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def log(self, level: int, fmt: str, *args: Any) -> None:
        self.n += 1
        self.lines.append(fmt % args)


class Ringed(Counting):
    def __init__(self, folder: str) -> None:
        super().__init__()
        self.ring = ClientLog(1, Path(folder) / "1.log")

    def log(self, level: int, fmt: str, *args: Any) -> None:
        self.n += 1
        self.ring.log(level, fmt, *args)


def one(logger: Counting, seconds: float) -> tuple[int, float]:
    """(lines served, CPU seconds of the poll that served them)."""
    consumer = Consumer({"bootstrap.servers": "127.0.0.1:9,127.0.0.1:7", "group.id": "bench", "debug": "all",
                         "log_level": 7, "logger": logger, "reconnect.backoff.ms": 1,
                         "reconnect.backoff.max.ms": 5, "topic.metadata.refresh.interval.ms": 10})
    consumer.assign([TopicPartition("t", p, OFFSET_BEGINNING) for p in range(3)])
    time.sleep(seconds)
    before = logger.n
    cpu = time.process_time()
    consumer.poll(0)
    cpu = time.process_time() - cpu
    served = logger.n - before
    consumer.close()
    return served, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="lines queued for this long before the poll")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--smoke", action="store_true",
                        help="a second: one round of 0.2 s per logger, the same consumers and loggers; covers "
                             "every line printed, not the figures' worth")
    args = parser.parse_args()
    if args.smoke:
        args.seconds, args.rounds = 0.2, 1
    with tempfile.TemporaryDirectory() as folder:
        makers = {"discard (confluent-kafka's callback)": Counting, "python list of formatted lines": Listing,
                  "ClientLog ring": lambda: Ringed(folder)}
        totals = {name: [0, 0.0] for name in makers}
        for _ in range(args.rounds):
            for name, make in makers.items():  # alternated, so that the machine's load hits each alike
                served, cpu = one(make(), args.seconds)
                totals[name][0] += served
                totals[name][1] += cpu
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; {args.rounds} rounds")
    for name, (served, cpu) in totals.items():
        print(f"{name:40s} {served:8d} lines  {cpu / max(served, 1) * 1e6:6.2f} us CPU/line")


if __name__ == "__main__":
    main()
