"""Benchmark of the own broker against stock Apache Kafka on the same backend: acks=all RF 3
throughput, and the time from `fencepost run` to its first op; own/stock ratios side by side.

(a) Throughput. Two clusters are up at once on the same backend (default
    `clusters.hosts.default_backend()`): the own system and --stock (default
    kafka:3.9.1, ZooKeeper mode), each 3 brokers, flush os (no fsync: Kafka's
    default), truncation kip320, topic `bench` with 3 partitions, RF 3,
    min.insync.replicas 2. One measurement: P producer processes (confluent-kafka,
    acks=all, not idempotent, linger.ms 5, 100-byte values, no key, up to
    --queue-messages unacked each) send as fast as librdkafka takes messages; after
    --warmup seconds, the messages acknowledged without error during the next
    --seconds are counted. First each cluster gets --jit-warmup seconds of load that
    are not counted (the JVM compiles its hot paths under load); then rounds
    alternate the systems (own first, then stock first, ...) so that the noise of
    this shared machine falls on both; the table shows the median of the rounds.
    Beside each figure, in cores: the CPU of each producer process (near 1.0: the
    Python producer is the limit), of the measured cluster's processes (also as
    microseconds per acked message: the brokers' cost, the fairest comparison
    when the machine is saturated), of the idle cluster meanwhile (from /proc;
    local backends only), and of the whole machine (/proc/stat; other users'
    work included: near its CPU count, the machine is the limit).
(b) Time to first op. `fencepost run --system S --nemesis none --time-limit 5`
    as a subprocess per system (after (a)'s clusters are down), alternating:
    seconds from launching the command to its main phase starting (the
    interpreter's start-up, up to the first line of the run's fencepost.log,
    plus the harness's own "run to first op" timing, which that log records).

Prints the figures and the ratios own/stock; asserts nothing. Takes about 7 minutes
with the defaults.

Measured on the project's 2-core machine (netns, defaults, others' work sharing the
cores, load average 4-8; two runs, the first without the 30 s JIT warm-up):
  acked msgs/s, 1 producer:  own 451k / 412k, kafka:3.9.1 310k / 318k, own/stock 1.46 / 1.30
  acked msgs/s, 2 producers: own 427k / 416k, kafka:3.9.1 417k / 369k, own/stock 1.02 / 1.13
  cluster CPU per acked message: own 2.0-2.2 us, kafka:3.9.1 2.6-3.6 us
  command to first op: own 1.78 / 1.10 s, kafka:3.9.1 11.19 / 8.50 s, own/stock 0.16 / 0.13
The machine was busy 1.9-2.0 of its 2 cores in every measurement: producers and
brokers share the CPU, so the figures are the machine's limit as much as the brokers'
(the per-message CPU is the cleaner comparison). The producer is not the limit: one
used 0.75-0.94 of a core, two 0.4 each for no more throughput. Stock Kafka gains most
from a second producer: it serves one request per connection at a time, so one
producer's acks=all requests to a leader wait on each other's replication. Kafka's
rounds spread widely (225k-424k with one producer) even after the JIT warm-up.

Run: python bench/systems_bench.py [--stock kafka:3.9.1] [--backend netns|process] [--seconds 10]
       [--warmup 3] [--jit-warmup 30] [--rounds 3] [--producers 1 2] [--linger-ms 5]
       [--queue-messages 1000000] [--first-op-runs 2] [--keep]
Needs root for the netns backend; Java and Kafka's jars for the stock system
(the first use of a version resolves them with Maven into ~/.cache/fencepost/kafka).
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Iterable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from confluent_kafka import Producer  # noqa: E402

from fencepost.clusters.cluster import Cluster, ClusterSpec  # noqa: E402
from fencepost.clusters.hosts import BACKENDS, default_backend  # noqa: E402
from fencepost.clusters.hosts.netns import network as netns_network  # noqa: E402
from fencepost.clusters.systems.base import TopicSpec  # noqa: E402
from fencepost.harness.rundir.record import logged_timing  # noqa: E402
from fencepost.harness.rundir.run_dirs import logged_at  # noqa: E402

OWN = "own"
TOPIC = "bench"
VALUE_BYTES = 100
LOCAL_BACKENDS = ("netns", "process")  # their processes are this machine's, so /proc has their CPU
BENCH_SUBNETS = range(100, 200)  # 10.77.N.0/24 candidates; the tests pick theirs from 128-254 the same way
SYSTEM_OPTIONS = {"min_insync_replicas": 2, "truncation": "kip320", "flush": "os"}
FLUSH_TIMEOUT_S = 60.0
CHILD_GRACE_S = 90.0  # a producer process's start, warm-up and final flush beyond the window
FIRST_OP_TIME_LIMIT_S = 5
FIRST_OP_TIMEOUT_S = 600.0
FIRST_OP_TIMING = "run to first op"  # the run's timing, in fencepost.log's verdict line
AGAIN = " (2nd)"  # --stock own (the smoke): the second own cluster's label


def system_of(label: str) -> str:
    """The system a label names (`own (2nd)`: own)."""
    return label.removesuffix(AGAIN)


# -- (a) throughput ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProducerResult:
    acked: int  # acknowledged without error inside the window
    window_s: float  # the window as this producer saw it
    cpu_s: float  # this process's CPU time (librdkafka's threads included) inside the window
    errors: int  # delivery errors, window or not
    unflushed: int  # still unacknowledged when the final flush gave up


@dataclass(frozen=True)
class Measurement:
    system: str
    producers: int
    acked_per_s: float
    producer_cores: float  # CPU per producer process (mean), in cores
    cluster_cores: float | None  # the measured cluster's processes, in cores
    idle_cluster_cores: float | None  # the other cluster's meanwhile
    machine_cores: float  # every process of this machine (this bench's, and others' work), in cores
    errors: int

    @property
    def cluster_us_per_msg(self) -> float | None:
        if self.cluster_cores is None or not self.acked_per_s:
            return None
        return self.cluster_cores / self.acked_per_s * 1e6


def produce_in_window(bootstrap: str, linger_ms: int, queue_messages: int, window_from: float,
                      window_until: float, out: Connection) -> None:
    """One producer process: send from now until `window_until` (monotonic clock, shared by the
    processes of this machine), count what is acknowledged between `window_from` and then."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False,
                         "linger.ms": linger_ms, "queue.buffering.max.messages": queue_messages})
    value = b"v" * VALUE_BYTES
    acked = errors = 0
    counting = False

    def report(err: object, _message: object) -> None:
        nonlocal acked, errors
        if err is not None:
            errors += 1
        elif counting:
            acked += 1

    started_at = cpu_from = 0.0
    sent = 0
    while True:
        now = time.monotonic()
        if now >= window_until:
            break
        if not counting and now >= window_from:
            producer.poll(0)  # acks that came before the window are not counted in it
            counting, started_at, cpu_from = True, time.monotonic(), time.process_time()
        try:
            producer.produce(TOPIC, value, on_delivery=report)
        except BufferError:
            producer.poll(0.001)
            continue
        sent += 1
        if sent % 100 == 0:
            producer.poll(0)
    producer.poll(0)
    window_s, cpu_s = time.monotonic() - started_at, time.process_time() - cpu_from
    counting = False
    if not started_at:  # started after the window had passed
        window_s = cpu_s = 0.0
    unflushed = producer.flush(FLUSH_TIMEOUT_S)
    out.send(ProducerResult(acked, window_s, cpu_s, errors, unflushed))
    out.close()


def process_cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds of these processes (all their threads) so far, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue  # gone: counts nothing
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "; utime and stime are fields 14, 15
        total += int(fields[11]) + int(fields[12])
    return total / tick


def machine_busy_s() -> float:
    """CPU seconds this machine's CPUs have spent not idle, summed, from /proc/stat."""
    user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in Path("/proc/stat").read_text().split()[1:8])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def cluster_pids(cluster: Cluster) -> list[int]:
    return [h.pid for roles in cluster.processes.values() for h in roles.values()]


def measure(clusters: dict[str, Cluster], system: str, producers: int, warmup_s: float, seconds: float,
            linger_ms: int, queue_messages: int, local: bool) -> Measurement:
    """`producers` processes against `clusters[system]` for warm-up + `seconds`; the others idle."""
    context = multiprocessing.get_context("spawn")  # no fork of a process that holds librdkafka threads
    window_from = time.monotonic() + warmup_s
    window_until = window_from + seconds
    children = []
    for _ in range(producers):
        receive, send = context.Pipe(duplex=False)
        child = context.Process(target=produce_in_window, name="bench-producer",
                                args=(clusters[system].bootstrap, linger_ms, queue_messages,
                                      window_from, window_until, send))
        child.start()
        send.close()
        children.append((child, receive))
    try:
        cpu_before = cpu_after = {}
        time.sleep(max(0.0, window_from - time.monotonic()))
        busy_before = machine_busy_s()
        if local:
            cpu_before = {name: process_cpu_s(cluster_pids(c)) for name, c in clusters.items()}
        time.sleep(max(0.0, window_until - time.monotonic()))
        busy_after = machine_busy_s()
        if local:
            cpu_after = {name: process_cpu_s(cluster_pids(c)) for name, c in clusters.items()}
        results = []
        for child, receive in children:
            if not receive.poll(CHILD_GRACE_S):
                raise SystemExit(f"a producer process (pid {child.pid}) sent no result within {CHILD_GRACE_S:g} s "
                                 f"of the window's end; is the {system} cluster at {clusters[system].bootstrap} up?")
            results.append(receive.recv())
            child.join(CHILD_GRACE_S)
    finally:
        for child, _ in children:
            if child.is_alive():
                child.terminate()
                child.join(5)
    short = [r for r in results if r.window_s < seconds * 0.9]
    if short:
        print(f"  note: {len(short)} producer process(es) started late and counted only "
              f"{min(r.window_s for r in short):.1f} of {seconds:g} s (raise --warmup)", file=sys.stderr)
    unflushed = sum(r.unflushed for r in results)
    if unflushed:
        print(f"  note: {unflushed} messages were still unacknowledged {FLUSH_TIMEOUT_S:g} s after the window",
              file=sys.stderr)

    def cores(name: str) -> float | None:
        return (cpu_after[name] - cpu_before[name]) / seconds if local else None

    idle = [cores(name) for name in clusters if name != system]
    return Measurement(system, producers, sum(r.acked for r in results) / seconds,
                       statistics.fmean(r.cpu_s / r.window_s if r.window_s else 0.0 for r in results),
                       cores(system), sum(idle) if local and idle else None, (busy_after - busy_before) / seconds,
                       sum(r.errors for r in results))


# -- (b) time to first op --------------------------------------------------------------------------


@dataclass(frozen=True)
class FirstOp:
    system: str
    startup_s: float  # launch of the command to the first line of its fencepost.log
    harness_s: float  # the harness's "run to first op" (its fencepost.log)
    exit_code: int

    @property
    def total_s(self) -> float:
        return self.startup_s + self.harness_s


def fencepost_command() -> list[str]:
    """This Python's `fencepost` console script (not a version manager's shim, whose start-up is
    not fencepost's), else the one on PATH."""
    beside = Path(sys.executable).parent / "fencepost"
    found = str(beside) if beside.exists() else shutil.which("fencepost")
    if found is None:
        raise SystemExit("no `fencepost` command found beside this Python or on PATH: "
                         f"install the project (pip install -e {ROOT})")
    return [found]


def first_op(system: str, backend: str, backend_options: list[str], results: Path,
             time_limit: float = FIRST_OP_TIME_LIMIT_S) -> FirstOp:
    argv = [*fencepost_command(), "run", "--system", system_of(system), "--backend", backend, "--nemesis", "none",
            "--time-limit", f"{time_limit:g}", "--results", str(results), "--name", "sysbench"]
    for option in backend_options:
        argv += ["--backend-option", option]
    launched = time.time()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=FIRST_OP_TIMEOUT_S)
    found = re.search(r"^run directory: (.+)$", done.stdout, re.MULTILINE)
    log = Path(found.group(1)) / "fencepost.log" if found else None
    found = logged_first_op(log.read_text() if log is not None and log.exists() else "")
    if found is None:
        raise SystemExit(f"`{' '.join(argv)}` exited {done.returncode} without a '{FIRST_OP_TIMING}' timing in "
                         f"{log or 'a run directory'}; its output ends:\n{(done.stdout + done.stderr)[-3000:]}")
    first_line, timing = found
    return FirstOp(system, first_line - launched, timing, done.returncode)


def logged_first_op(log: str) -> tuple[float, float] | None:
    """(the time of a fencepost.log's first line, epoch seconds; its run's 'run to first op'
    seconds), as the harness writes them (harness/rundir/run_dirs.py, harness/rundir/record.py);
    None if the log lacks either."""
    first_line, timing = logged_at(log), logged_timing(log, FIRST_OP_TIMING)
    return None if first_line is None or timing is None else (first_line.timestamp(), timing)


# -- the bench ---------------------------------------------------------------------------------------


@dataclass
class Figures:
    measurements: list[Measurement] = field(default_factory=list)
    first_ops: list[FirstOp] = field(default_factory=list)

    def of(self, system: str, producers: int) -> list[Measurement]:
        return [m for m in self.measurements if m.system == system and m.producers == producers]

    def median_rate(self, system: str, producers: int) -> float:
        return statistics.median(m.acked_per_s for m in self.of(system, producers))

    def median_first_op(self, system: str) -> float | None:
        totals = [f.total_s for f in self.first_ops if f.system == system]
        return statistics.median(totals) if totals else None


def free_subnets(count: int) -> list[str]:
    """`count` /24 subnets of 10.77.0.0/16 that nothing on this machine routes yet."""
    found = []
    for third in BENCH_SUBNETS:
        candidate = f"10.77.{third}.0/24"
        if not netns_network.subnet_users(candidate):
            found.append(candidate)
            if len(found) == count:
                return found
    raise SystemExit(f"no {count} free subnets among 10.77.{BENCH_SUBNETS[0]}-{BENCH_SUBNETS[-1]}.0/24: "
                     "remove leftover clusters with `fencepost cleanup`")


def status(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def optional(value: float | None, form: str) -> str:
    return "-" if value is None else format(value, form)


def run_throughput(args: argparse.Namespace, systems: list[str], directory: Path, figures: Figures) -> None:
    local = args.backend in LOCAL_BACKENDS
    subnets = free_subnets(len(systems)) if args.backend == "netns" else []
    clusters: dict[str, Cluster] = {}
    try:
        for i, system in enumerate(systems):
            options = {"subnet": subnets[i]} if subnets else {}
            started = time.monotonic()
            spec = ClusterSpec(f"fp-sysbench-{os.urandom(2).hex()}", system_of(system), 3, args.backend, options,
                               SYSTEM_OPTIONS)
            clusters[system] = Cluster.up(spec, directory / f"cluster-{i}",
                                          on_step=lambda step, s=system: status(f"{s}: {step}"))
            clusters[system].create_topic(TopicSpec(TOPIC, 3, 3))
            clusters[system].recovery.wait_for_full_isr(TOPIC)
            status(f"{system}: up with topic {TOPIC} in {time.monotonic() - started:.1f} s "
                   f"({args.backend}, bootstrap {clusters[system].bootstrap})")
        for system in systems:  # the JVM compiles its hot paths under load: not counted
            if args.jit_warmup > 0:
                m = measure(clusters, system, 1, args.warmup, args.jit_warmup, args.linger_ms, args.queue_messages,
                            local)
                status(f"warm-up    {system:<12} 1 producer(s): {m.acked_per_s:>10,.0f} acked msgs/s over "
                       f"{args.jit_warmup:g} s (not counted)")
        for round_ in range(args.rounds):
            order = systems if round_ % 2 == 0 else systems[::-1]
            for system in order:
                for producers in args.producers:
                    m = measure(clusters, system, producers, args.warmup, args.seconds, args.linger_ms,
                                args.queue_messages, local)
                    figures.measurements.append(m)
                    status(f"round {round_ + 1}/{args.rounds}  {system:<12} {producers} producer(s): "
                           f"{m.acked_per_s:>10,.0f} acked msgs/s, producer CPU {m.producer_cores:.2f} cores each, "
                           f"cluster CPU {optional(m.cluster_cores, '.2f')} cores, "
                           f"machine busy {m.machine_cores:.2f} of {os.cpu_count()} cores"
                           + (f", {m.errors} delivery errors" if m.errors else ""))
    finally:
        for system, cluster in clusters.items():
            try:
                cluster.down()
            except Exception as e:  # noqa: BLE001 — the other cluster must still go down
                print(f"  note: taking the {system} cluster down: {e}; run `fencepost cleanup`", file=sys.stderr)


def run_first_ops(args: argparse.Namespace, systems: list[str], directory: Path, figures: Figures) -> None:
    for run in range(args.first_op_runs):
        for system in (systems if run % 2 == 0 else systems[::-1]):
            options = [f"subnet={free_subnets(1)[0]}"] if args.backend == "netns" else []
            f = first_op(system, args.backend, options, directory / "runs", args.first_op_time_limit)
            figures.first_ops.append(f)
            status(f"first op {run + 1}/{args.first_op_runs}  {system:<12} {f.total_s:6.2f} s after the command "
                   f"(start-up {f.startup_s:.2f} s + run to first op {f.harness_s:.2f} s), exit {f.exit_code}")


def print_tables(args: argparse.Namespace, systems: list[str], figures: Figures) -> None:
    own, stock = systems
    print(f"\n{own} vs {stock}: 3 brokers, RF 3, min.insync.replicas 2, acks=all, {VALUE_BYTES}-byte values, "
          f"linger.ms {args.linger_ms}, backend {args.backend}; medians of {args.rounds} rounds of "
          f"{args.seconds:g} s, first op median of {args.first_op_runs} run(s)")
    rate_heads = [f"msgs/s {p} prod" for p in args.producers]
    print(f"{'system':<13}" + "".join(f"{h:>17}" for h in rate_heads) + f"{'run to first op s':>19}")
    for system in systems:
        rates = "".join(f"{figures.median_rate(system, p):>17,.0f}" for p in args.producers)
        print(f"{system:<13}{rates}{optional(figures.median_first_op(system), '.2f'):>19}")
    ratios = "".join(optional(figures.median_rate(own, p) / figures.median_rate(stock, p)
                              if figures.median_rate(stock, p) else None, ">17.2f") for p in args.producers)
    first_own, first_stock = figures.median_first_op(own), figures.median_first_op(stock)
    first_ratio = first_own / first_stock if first_own is not None and first_stock else None
    print(f"{'own/stock':<13}{ratios}{optional(first_ratio, '.2f'):>19}")

    print(f"\n{'system':<13}{'prod':>5}{'rounds, acked msgs/s':>30}{'prod CPU':>10}{'cluster CPU':>13}"
          f"{'us/msg':>8}{'idle other':>12}{'machine busy':>14}")
    for system in systems:
        for p in args.producers:
            ms = figures.of(system, p)
            rounds = " ".join(f"{m.acked_per_s / 1000:,.0f}k" for m in ms)
            print(f"{system:<13}{p:>5}{rounds:>30}{statistics.fmean(m.producer_cores for m in ms):>10.2f}"
                  f"{optional(_mean(m.cluster_cores for m in ms), '.2f'):>13}"
                  f"{optional(_mean(m.cluster_us_per_msg for m in ms), '.1f'):>8}"
                  f"{optional(_mean(m.idle_cluster_cores for m in ms), '.2f'):>12}"
                  f"{statistics.fmean(m.machine_cores for m in ms):>14.2f}")
    if figures.first_ops:
        print(f"\n{'system':<13}{'command to first op s':>23}{'start-up s':>12}{'run to first op s':>19}{'exit':>6}")
        for f in figures.first_ops:
            print(f"{f.system:<13}{f.total_s:>23.2f}{f.startup_s:>12.2f}{f.harness_s:>19.2f}{f.exit_code:>6}")
    print(f"(CPU in cores, mean of the rounds: each producer process; the measured cluster's processes; "
          f"the idle cluster's meanwhile; the whole machine's ({os.cpu_count()} CPUs; other users' work included). "
          f"us/msg: the measured cluster's CPU per acked message. Load average at the end: "
          f"{' '.join(f'{v:.1f}' for v in os.getloadavg())}.)")


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stock", default="kafka:3.9.1", help="the stock system to compare with (default kafka:3.9.1)")
    parser.add_argument("--backend", default=default_backend(), choices=BACKENDS,
                        help=f"host backend of both systems (default here: {default_backend()})")
    parser.add_argument("--seconds", type=float, default=10.0, help="counted seconds per measurement")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of sending before counting")
    parser.add_argument("--jit-warmup", type=float, default=30.0,
                        help="seconds of uncounted load on each cluster before the rounds (the JVM's JIT)")
    parser.add_argument("--rounds", type=int, default=3, help="measurements per system and producer count")
    parser.add_argument("--producers", type=int, nargs="+", default=[1, 2], help="producer processes (default 1 2)")
    parser.add_argument("--linger-ms", type=int, default=5)
    parser.add_argument("--queue-messages", type=int, default=1_000_000,
                        help="each producer's queue.buffering.max.messages: the most it holds unacked")
    parser.add_argument("--first-op-runs", type=int, default=2, help="`fencepost run`s per system (0: none)")
    parser.add_argument("--first-op-time-limit", type=float, default=FIRST_OP_TIME_LIMIT_S,
                        help=f"each `fencepost run`'s --time-limit (default {FIRST_OP_TIME_LIMIT_S})")
    parser.add_argument("--keep", action="store_true", help="keep the clusters' and runs' directory")
    parser.add_argument("--smoke", action="store_true",
                        help="about 20 s: own against a second own cluster (no JVM; --stock own), process "
                             "backend, one 1 s round of 1 producer, no JIT warm-up, one `fencepost run` of 1 s "
                             "each; covers (a) and (b), the log reading and the tables, not stock Kafka's "
                             "start-up nor the figures' worth")
    args = parser.parse_args(argv)
    if args.smoke:
        args.stock, args.backend, args.seconds, args.warmup, args.jit_warmup = OWN, "process", 1.0, 2.0, 0.0
        args.rounds, args.producers, args.first_op_runs, args.first_op_time_limit = 1, [1], 1, 1.0
    if args.rounds < 1 or args.seconds <= 0 or args.warmup < 0 or min(args.producers) < 1 or args.first_op_runs < 0:
        parser.error("--rounds and --producers take whole numbers >= 1, --seconds > 0, --warmup and "
                     "--first-op-runs >= 0")
    if args.backend == "netns" and os.geteuid() != 0:
        parser.error("the netns backend needs root: run as root or give --backend process")

    systems = [OWN, args.stock if args.stock != OWN else OWN + AGAIN]
    directory = Path(tempfile.mkdtemp(prefix="fp-systems-bench-"))
    figures = Figures()
    try:
        run_throughput(args, systems, directory, figures)
        run_first_ops(args, systems, directory, figures)
        print_tables(args, systems, figures)
    finally:
        if args.keep:
            print(f"kept {directory}")
        else:
            shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
