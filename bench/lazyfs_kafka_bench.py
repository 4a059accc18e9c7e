"""What the lazy filesystem costs stock Kafka: acks=all throughput of the same Kafka cluster with
its data on plain disk (flush os) and on lazy disks (flush lazy), side by side in one run, and
the latency at a fixed rate on both.

Two clusters are up at once on the netns backend (one with --one-at-a-time): --system (default kafka:3.9.1, ZooKeeper
mode), 3 brokers each, topic `bench` with 3 partitions, RF 3, min.insync.replicas 2,
`log.segment.bytes` --segment-mb on both (Kafka fsyncs a segment when it rolls, and the lazy
filesystem holds every unsynced byte: with Kafka's 1 GiB segments a broker under full load
would pass the daemon's 1 GiB cache limit within a minute). (a) throughput: rounds alternate
the clusters (plain first, then lazy first, ...), each measurement P producer processes
(confluent-kafka, acks=all, linger.ms 5, 100-byte values) sending as fast as librdkafka takes
them, counting what is acknowledged in --seconds after --warmup (bench/systems_bench.py's
`measure`), after --jit-warmup seconds per cluster not counted; the table shows the medians and
lazy/plain. (b) latency: --rate msgs/s for --latency-seconds from one producer (linger.ms
--latency-linger-ms, librdkafka's default 5: with 0 every message is a request of its own, and
on 2 cores one cluster acknowledges about 800 such requests a second), each message's time from
produce() to its delivery report, on both clusters (alternating, --latency-rounds),
percentiles of all samples per cluster. `--rounds 0` measures the latency alone: no
throughput round leaves a backlog for the latency rounds to queue behind (on 2 cores the
throughput rounds' replication and flushing outlast them), and the warm-up is a latency round
per cluster, not counted. `--one-at-a-time` measures the latency with only the measured
cluster up: each latency round brings each cluster up in turn (alternating which goes first),
with a latency round not counted before the counted one, and takes it down again (both
clusters' JVMs on 2 cores otherwise compete for the CPU the latency depends on).

Prints the figures and the ratios; asserts nothing (the targets, docs/LAZYFS.md: throughput
lazy/plain >= 0.5, aim 0.8). Needs root (netns, FUSE), Java and Kafka's jars.

Run: python bench/lazyfs_kafka_bench.py [--system kafka:3.9.1] [--seconds 10] [--warmup 3]
       [--jit-warmup 20] [--rounds 3 (0: latency alone)] [--producers 1] [--rate 2000] [--latency-seconds 20]
       [--latency-rounds 2] [--latency-linger-ms 5] [--one-at-a-time] [--segment-mb 64]
       [--subnets 10.77.100.0/24 10.77.101.0/24] [--backend netns|process] [--smoke]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from producer_load import latency_at_rate  # noqa: E402
from systems_bench import TOPIC, Measurement, measure, status  # noqa: E402

from fencepost.clusters.cluster import Cluster, ClusterSpec  # noqa: E402
from fencepost.clusters.hosts.netns import network as netns_network  # noqa: E402
from fencepost.clusters.systems.base import TopicSpec  # noqa: E402

FLUSHES = ("plain", "lazy")  # plain: flush os on the plain disk; lazy: flush lazy (journal model)
SUBNET_RANGE = range(100, 130)


def free_subnets(count: int) -> list[str]:
    found = [f"10.77.{n}.0/24" for n in SUBNET_RANGE if not netns_network.subnet_users(f"10.77.{n}.0/24")]
    if len(found) < count:
        raise SystemExit(f"no {count} free subnets among 10.77.{SUBNET_RANGE[0]}-{SUBNET_RANGE[-1]}.0/24: "
                         "give --subnets")
    return found[:count]


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def latency_config(cluster: Cluster, linger_ms: int) -> dict[str, object]:
    """The latency producer's settings: acks=all, linger.ms as given (0: each message sent at once)."""
    return {"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": linger_ms}


def cluster_up(args: argparse.Namespace, flush: str, subnet: str, scratch: Path) -> Cluster:
    """A cluster of --system with its data on plain disk (flush os) or on lazy disks, its topic's ISR full."""
    options = {"min_insync_replicas": 2, "flush": "os" if flush == "plain" else "lazy"}
    if args.system.startswith("kafka"):  # the own broker has no such setting
        options["broker_config"] = {"log.segment.bytes": str(args.segment_mb << 20)}
    spec = ClusterSpec(f"fp-lazybench-{flush}-{os.urandom(2).hex()}", args.system, 3, args.backend,
                       {"subnet": subnet} if args.backend == "netns" else {}, options)
    started = time.monotonic()
    cluster = Cluster.up(spec, scratch / flush, on_step=lambda step: status(f"{flush}: {step}"))
    try:
        cluster.create_topic(TopicSpec(TOPIC, 3, 3))
        cluster.recovery.wait_for_full_isr(TOPIC)
    except BaseException:
        cluster_down(flush, cluster)
        raise
    status(f"{flush}: up in {time.monotonic() - started:.1f} s ({cluster.bootstrap})")
    return cluster


def cluster_down(flush: str, cluster: Cluster) -> None:
    try:
        cluster.down()
    except Exception as e:  # noqa: BLE001 — the caller's other cluster must still go down
        print(f"  note: taking the {flush} cluster down: {e}; run `fencepost cleanup`", file=sys.stderr)


def latency_round(args: argparse.Namespace, cluster: Cluster, flush: str, label: str, seconds: float) -> list[float]:
    samples = latency_at_rate(latency_config(cluster, args.latency_linger_ms), TOPIC, args.rate, seconds)
    status(f"latency {label} {flush:<6} p50 {percentile(samples, 50) * 1000:.2f} ms, "
           f"p99 {percentile(samples, 99) * 1000:.2f} ms")
    return samples


def latency_one_at_a_time(args: argparse.Namespace, subnets: list[str], scratch: Path,
                          latencies: dict[str, list[float]]) -> dict[str, list[str]]:
    """--one-at-a-time: the latency alone, with only the measured cluster up (the other's JVMs
    idle on the same 2 cores otherwise): per round, each cluster in turn (plain first, then lazy
    first, ...) comes up, gets a latency round not counted, a counted one, and goes down."""
    disk_nodes: dict[str, list[str]] = {}
    for round_ in range(args.latency_rounds):
        for flush in (FLUSHES if round_ % 2 == 0 else FLUSHES[::-1]):
            cluster = cluster_up(args, flush, subnets[FLUSHES.index(flush)], scratch / f"round{round_}")
            try:
                latency_round(args, cluster, flush, "warm-up (not counted)", min(args.latency_seconds, 10.0))
                latencies[flush] += latency_round(args, cluster, flush, f"{round_ + 1}/{args.latency_rounds}",
                                                  args.latency_seconds)
                disk_nodes[flush] = cluster.disks.nodes
            finally:
                cluster_down(flush, cluster)
    return disk_nodes


def side_by_side(args: argparse.Namespace, subnets: list[str], scratch: Path, rates: dict[str, list[Measurement]],
                 latencies: dict[str, list[float]]) -> dict[str, list[str]]:
    """Both clusters up at once: throughput rounds, then latency rounds, alternating."""
    clusters: dict[str, Cluster] = {}
    try:
        for i, flush in enumerate(FLUSHES):
            clusters[flush] = cluster_up(args, flush, subnets[i], scratch)
        for flush in FLUSHES if args.rounds == 0 else ():
            latency_round(args, clusters[flush], flush, "warm-up (not counted)", min(args.latency_seconds, 10.0))
        for flush in FLUSHES if args.rounds > 0 else ():
            if args.jit_warmup > 0:
                m = measure(clusters, flush, args.producers, args.warmup, args.jit_warmup, args.linger_ms,
                            args.queue_messages, True)
                status(f"warm-up {flush:<6} {m.acked_per_s:>10,.0f} acked msgs/s (not counted)")
        for round_ in range(args.rounds):
            for flush in (FLUSHES if round_ % 2 == 0 else FLUSHES[::-1]):
                m = measure(clusters, flush, args.producers, args.warmup, args.seconds, args.linger_ms,
                            args.queue_messages, True)
                rates[flush].append(m)
                status(f"round {round_ + 1}/{args.rounds} {flush:<6} {m.acked_per_s:>10,.0f} acked msgs/s, "
                       f"cluster CPU {m.cluster_cores:.2f} cores, machine busy {m.machine_cores:.2f}"
                       + (f", {m.errors} errors" if m.errors else ""))
        for round_ in range(args.latency_rounds):
            for flush in (FLUSHES if round_ % 2 == 0 else FLUSHES[::-1]):
                latencies[flush] += latency_round(args, clusters[flush], flush,
                                                  f"{round_ + 1}/{args.latency_rounds}", args.latency_seconds)
        return {flush: clusters[flush].disks.nodes for flush in FLUSHES}
    finally:
        for flush, cluster in clusters.items():
            cluster_down(flush, cluster)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--system", default="kafka:3.9.1")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--jit-warmup", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--producers", type=int, default=1)
    parser.add_argument("--linger-ms", type=int, default=5)
    parser.add_argument("--queue-messages", type=int, default=1_000_000)
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--latency-seconds", type=float, default=20.0)
    parser.add_argument("--latency-rounds", type=int, default=2)
    parser.add_argument("--latency-linger-ms", type=int, default=5)
    parser.add_argument("--segment-mb", type=int, default=64)
    parser.add_argument("--subnets", nargs=2, metavar="CIDR")
    parser.add_argument("--one-at-a-time", action="store_true",
                        help="latency alone, only the measured cluster up (each round brings each cluster up anew)")
    parser.add_argument("--backend", default="netns", choices=("netns", "process"))
    parser.add_argument("--smoke", action="store_true",
                        help="under a minute: --system own on the process backend (no JVM, no netns; its lazy "
                             "disks still FUSE mounts: root), one 1 s throughput round and one 1 s latency round "
                             "at 200 msgs/s per cluster, no JIT warm-up; covers both clusters, every measurement "
                             "and the table, not stock Kafka nor the figures' worth")
    args = parser.parse_args()
    if args.smoke:
        # a spawned producer's start-up takes a second or more on a busy machine: the warm-up covers it
        args.system, args.backend, args.seconds, args.warmup, args.jit_warmup = "own", "process", 1.0, 2.0, 0.0
        args.rounds, args.rate, args.latency_seconds, args.latency_rounds = 1, 200, 1.0, 1
    subnets = args.subnets or (free_subnets(2) if args.backend == "netns" else ["-", "-"])
    rates: dict[str, list[Measurement]] = {f: [] for f in FLUSHES}
    latencies: dict[str, list[float]] = {f: [] for f in FLUSHES}
    with tempfile.TemporaryDirectory(prefix="fp-lazybench-") as scratch:
        if args.one_at_a_time:
            disk_nodes = latency_one_at_a_time(args, subnets, Path(scratch), latencies)
        else:
            disk_nodes = side_by_side(args, subnets, Path(scratch), rates, latencies)
    print(f"\n{args.system}, 3 brokers, RF 3, min.insync.replicas 2, acks=all, 100-byte values, "
          f"{args.producers} producer(s), linger.ms {args.linger_ms} (latency: {args.latency_linger_ms}"
          f"{', one cluster up at a time' if args.one_at_a_time else ''}), "
          f"log.segment.bytes {args.segment_mb} MiB, {args.backend}; "
          f"{datetime.now().astimezone():%Y-%m-%d %H:%M %z}, load {os.getloadavg()[0]:.1f}; lazy disks on "
          f"{', '.join(disk_nodes['lazy'])}\n")
    print("| data on | acked msgs/s (median of rounds) | rounds | "
          f"latency at {args.rate} msgs/s: p50 / p99 / max (ms) |")
    print("|---|---|---|---|")
    for flush in FLUSHES:
        median = f"{statistics.median(m.acked_per_s for m in rates[flush]):,.0f}" if rates[flush] else "-"
        each = ", ".join(f"{m.acked_per_s:,.0f}" for m in rates[flush]) or "-"
        samples = latencies[flush]
        latency = (f"{percentile(samples, 50) * 1000:.2f} / {percentile(samples, 99) * 1000:.2f} / "
                   f"{max(samples) * 1000:.2f}") if samples else "-"
        name = "plain disk (flush os)" if flush == "plain" else "lazy disks (flush lazy, journal)"
        print(f"| {name} | {median} | {each} | {latency} |")
    if rates["plain"] and rates["lazy"]:
        lazy = statistics.median(m.acked_per_s for m in rates["lazy"])
        plain = statistics.median(m.acked_per_s for m in rates["plain"])
        print(f"\nthroughput lazy / plain: {lazy / plain:.2f} (target >= 0.5, aim 0.8)" if plain else
              "\nthroughput lazy / plain: - (the plain cluster acknowledged nothing in its rounds: raise --warmup)")
    if latencies["lazy"] and latencies["plain"]:
        print(f"p99 latency lazy / plain: {percentile(latencies['lazy'], 99) / percentile(latencies['plain'], 99):.2f}")


if __name__ == "__main__":
    main()
