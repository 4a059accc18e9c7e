"""Benchmark of the recorded producer workload against a bare producer, on one own cluster.

One own-system cluster (3 brokers + controller, process backend, flush os,
kip320), topic `fp` with 3 partitions, RF 3, min.insync.replicas 2. For each
--concurrency C:
(a) the harness: `workloads.producer.ProducerWorkload` with C logical processes
    driven by `harness.run.scheduler.Scheduler` at an unlimited rate for --seconds,
    every send recorded (invoke + completion) in a real history.jsonl; the
    recorded throughput is completed sends / seconds until the last completion;
(a') the same with a producer client per process (`client = "per-process"`: each process
    its own librdkafka producer, as Jepsen's clients), side by side with (a), its
    recorded ops/s and the ratio per-process / shared;
(b) bare: one confluent-kafka producer with the same settings sends the same
    number of messages (values of the same form, partitions round-robin) as fast
    as it can, no recording: once with at most C messages unacked (the bound the
    workload has), once with no bound (librdkafka then packs thousands of
    messages into each request); seconds until the last is acked.
Prints both, the ratios (a)/(b), and the history's size. Asserts nothing.
Targets: ratio >= 0.75 and >= 5,000 recorded ops/s.
Measured on the project's 2-core machine (shared; 2 runs, 10 s each; docs/WORKLOADS.md):
C=100: 13,800 / 11,900 recorded ops/s vs 14,400 / 15,900 bare bounded (0.96 / 0.75)
and 317,000 / 407,000 bare unbounded (0.04 / 0.03); C=1000: 55,300 / 58,000 vs
123,000 / 160,000 (0.45 / 0.36) and 397,000 / 454,000 (0.14 / 0.13). A recorded send
costs about 18 us of the harness's one Python thread, 10 of them the two history lines.
A client per process against the shared one (2026-11-25, --concurrency 10 100 300, one run):
C=10 2,108 vs 2,001 recorded ops/s (1.05); C=100 4,621 vs 16,926 (0.27); C=300 4,338 vs
41,874 (0.10): the run spec's default follows (per-process up to 10 processes, docs/WORKLOADS.md).

Run: python bench/workload_bench.py [--concurrency 100 300 1000] [--seconds 10]
       [--linger-ms 0] [--max-in-flight 1] [--keep]
(the figures of issue 27: --concurrency 10 100 300)
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Producer  # noqa: E402

from fencepost.clusters.cluster import Cluster, ClusterSpec  # noqa: E402
from fencepost.clusters.systems.base import TopicSpec  # noqa: E402
from fencepost.harness.run.scheduler import Lane, Scheduler, plan_processes  # noqa: E402
from fencepost.harness.rundir.history import HistoryWriter, Recorder  # noqa: E402
from fencepost.workloads.producer import ProducerOptions, ProducerWorkload  # noqa: E402

TOPIC = "fp"
CLOSE_TIMEOUT_S = 60.0


def recorded_run(bootstrap: str, partitions: list[int], options: ProducerOptions, concurrency: int,
                 seconds: float, run_dir: Path) -> tuple[int, float, int]:
    """(sends completed ok, seconds from the first invoke to the last completion, history bytes)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    history = run_dir / "history.jsonl"
    with HistoryWriter(history) as writer:
        producer = ProducerWorkload(bootstrap, Recorder(writer), partitions,
                                    plan_processes(concurrency, 0).producers, options)
        scheduler = Scheduler([Lane(producer, None)])
        started = time.perf_counter()
        scheduler.run(seconds)
        snapshot = scheduler.close(CLOSE_TIMEOUT_S)
        elapsed = time.perf_counter() - started
    if snapshot.fail or snapshot.info:
        print(f"  note: {snapshot.fail} fail and {snapshot.info} info completions", file=sys.stderr)
    return snapshot.ok, elapsed, history.stat().st_size


def bare_run(bootstrap: str, partitions: list[int], options: ProducerOptions, count: int,
             in_flight: int | None = None) -> float:
    """Seconds for a bare producer (the workload's settings) to have `count` messages acked;
    `in_flight`: the most messages it holds unacked at once (None: no bound)."""
    producer = Producer(options.config(bootstrap, count))
    failures: list[object] = []
    unacked = [0]

    def report(err: object, _message: object) -> None:
        unacked[0] -= 1
        if err is not None:
            failures.append(err)

    bound = count if in_flight is None else in_flight
    n = len(partitions)
    started = time.perf_counter()
    for i in range(count):
        while unacked[0] >= bound:
            producer.poll(0.01)
        value = f"{i % 1000}-{i}".encode()
        while True:
            try:
                producer.produce(TOPIC, value, partition=partitions[i % n], on_delivery=report)
                break
            except BufferError:
                producer.poll(0.001)
        unacked[0] += 1
        producer.poll(0)
    left = producer.flush(CLOSE_TIMEOUT_S)
    elapsed = time.perf_counter() - started
    producer.close()
    if left or failures:
        raise SystemExit(f"bare producer: {left} left unacked, {len(failures)} errors, e.g. {failures[:1]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--linger-ms", type=int, default=0)
    parser.add_argument("--max-in-flight", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the cluster's and the runs' directory")
    parser.add_argument("--smoke", action="store_true",
                        help="several seconds: the same own cluster (process backend), --concurrency 5 for 1 s, "
                             "recorded (shared and per-process clients) and bare; covers every run and line "
                             "printed, not the figures' worth")
    args = parser.parse_args()
    if args.smoke:
        args.concurrency, args.seconds = [5], 1.0
    options = ProducerOptions(topic=TOPIC, linger_ms=args.linger_ms, max_in_flight=args.max_in_flight)
    directory = Path(tempfile.mkdtemp(prefix="fp-workload-bench-"))
    cluster = Cluster.up(ClusterSpec(f"fp-wlbench-{os.urandom(2).hex()}", backend="process"), directory / "cluster")
    try:
        cluster.create_topic(TopicSpec(TOPIC))
        partitions = cluster.partitions(TOPIC)
        bare_run(cluster.bootstrap, partitions, options, 1000)  # connections and metadata warmed up
        print(f"own cluster, 3 brokers, RF 3, acks=all, {len(partitions)} partitions; "
              f"linger.ms {args.linger_ms}, max.in.flight {args.max_in_flight}, not idempotent, retries 0")
        print(f"{'concurrency':>11}  {'recorded ops/s':>14}  {'per-process':>11}  {'pp/shared':>9}  "
              f"{'bare, C in flight':>17}  {'ratio':>5}  {'bare, unbounded':>15}  {'ratio':>5}  {'sends':>7}  "
              f"{'history MB':>10}")
        per_process = ProducerOptions(topic=TOPIC, linger_ms=args.linger_ms, max_in_flight=args.max_in_flight,
                                      client="per-process")
        for concurrency in args.concurrency:
            ok, elapsed, size = recorded_run(cluster.bootstrap, partitions, options, concurrency, args.seconds,
                                             directory / f"run-{concurrency}")
            recorded = ok / elapsed
            ok_pp, elapsed_pp, _ = recorded_run(cluster.bootstrap, partitions, per_process, concurrency,
                                                args.seconds, directory / f"run-{concurrency}-per-process")
            each = ok_pp / elapsed_pp
            bounded = ok / bare_run(cluster.bootstrap, partitions, options, ok, concurrency)
            unbounded = ok / bare_run(cluster.bootstrap, partitions, options, ok)
            print(f"{concurrency:>11}  {recorded:>14,.0f}  {each:>11,.0f}  {each / recorded:>9.2f}  "
                  f"{bounded:>17,.0f}  {recorded / bounded:>5.2f}  {unbounded:>15,.0f}  {recorded / unbounded:>5.2f}  "
                  f"{ok:>7}  {size / 1e6:>10.1f}", flush=True)
    finally:
        cluster.down()
        if args.keep:
            print(f"kept {directory}")
        else:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
