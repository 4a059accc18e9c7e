"""The own broker's two ways to lose what was not flushed, side by side: its in-process buffer
(`--flush lazy`: appends held in the broker's memory until the flush timer) against the
mechanism stock Kafka uses (`--flush os` and the same flush timer, on a lazy filesystem mount:
appends written, the lazy filesystem holds them until the fsync), and the same broker on the
plain disk (`--flush os`, the baseline). The harness's `flush = "lazy"` uses the second
(clusters/systems/own.py); this bench is what that choice costs.

One broker node (`python -m fencepost.broker serve`), one partition, 100-byte values; per measurement a
fresh broker and data directory; a confluent-kafka producer with acks=1 sends --messages as
fast as it can. Rounds alternate the order of the variants; the table shows the medians.

Run (as root, FUSE): python bench/own_lazy_bench.py [--messages 300000] [--rounds 3]
       [--flush-interval-ms 1000]
Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.broker_bench import ACKS_1, create_topic  # noqa: E402
from bench.producer_load import produce_throughput  # noqa: E402
from fencepost.clusters.lazyfs import LazyMount  # noqa: E402
from tests.support.broker_support import start_broker  # noqa: E402

VARIANTS = ("plain disk, --flush os", "in-process buffer, --flush lazy", "lazy filesystem, --flush os")


def measure(variant: str, work: Path, messages: int, interval_ms: int) -> float:
    data = work / "data"
    mount = None
    if variant.startswith("lazy filesystem"):
        mount = LazyMount.mount(data, work / "durable", f"ownbench-{work.name[-6:]}")
    flush = "lazy" if "--flush lazy" in variant else "os"
    extra = ("--flush", flush) + (("--flush-interval-ms", str(interval_ms)) if "plain" not in variant else ())
    broker = start_broker(data, extra_args=extra)
    try:
        create_topic(broker.bootstrap, "bench", 1)
        return messages / produce_throughput({"bootstrap.servers": broker.bootstrap, **ACKS_1}, "bench", messages)
    finally:
        broker.stop()
        if mount is not None:
            mount.unmount()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--flush-interval-ms", type=int, default=1000)
    parser.add_argument("--smoke", action="store_true",
                        help="a few seconds: one round of 2,000 messages per variant, the same brokers and lazy "
                             "filesystem mount (root, FUSE); covers every variant and line printed, not the "
                             "figures' worth")
    args = parser.parse_args()
    if args.smoke:
        args.messages, args.rounds = 2_000, 1
    rates: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for round_ in range(args.rounds):
        for variant in (VARIANTS if round_ % 2 == 0 else VARIANTS[::-1]):
            work = Path(tempfile.mkdtemp(prefix="fp-ownbench-"))
            try:
                rate = measure(variant, work, args.messages, args.flush_interval_ms)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            rates[variant].append(rate)
            print(f"round {round_ + 1}/{args.rounds} {variant:<34} {rate:>9,.0f} msgs/s", flush=True)
    base = statistics.median(rates[VARIANTS[0]])
    print(f"\nown broker, one node, one partition, acks=1, {args.messages:,} x 100 B; flush timer "
          f"{args.flush_interval_ms} ms; medians of {args.rounds} rounds\n")
    print("| variant | msgs/s | / plain disk |")
    print("|---|---|---|")
    for variant in VARIANTS:
        median = statistics.median(rates[variant])
        print(f"| {variant} | {median:,.0f} | {median / base:.2f} |")


if __name__ == "__main__":
    main()
