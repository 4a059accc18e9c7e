"""A direct reproducer of the librdkafka deadlock behind issue 34 (docs/FINDINGS.md, finding 1),
on librdkafka's own mock cluster (the `rd_kafka_mock_*` API of the library the confluent-kafka
wheel bundles, through ctypes): no Kafka, no network namespace, one process per trial.

The schedule of one trial (`--trial`), the leader-bounce that showed it shrunk by hand:

1. a mock cluster of 3 brokers on loopback, topic `fp` of `--partitions` partitions led by
   broker 3 and one more led by broker 1 (the consumer keeps a connection there); one record each;
2. a consumer with the harness's settings (`assign()` of every partition from the beginning;
   `--subscribe`: a group member instead, its coordinator broker 1) reads every record, so each
   position carries a leader epoch;
3. broker 3 answers everything 10 s late, and every partition's leader epoch is bumped with
   broker 3 still the leader (as a ZooKeeper-mode controller does when it drops a dead follower
   from the ISR): the consumer learns it from broker 1 and its validation requests (KIP-320,
   OffsetForLeaderEpoch) wait on broker 3;
4. broker 3 leaves the cluster's metadata and its partitions move to brokers 1 and 2 (`leave`:
   the closest means the release's mock has): the consumer's next Metadata response no longer
   lists broker 3, so librdkafka (from v2.10.0) decommissions its handle and fails the queued
   validation requests, while the main thread handles those failures;
5. one more record in each partition: the consumer must read them all within `--patience`
   seconds (the trial exits 0, resumed), or it is stuck (it says so on stderr and waits to be
   killed: its close would never return).

`--force` holds the two threads of the race at their lock acquisitions with gdb
(bench/librdkafka_deadlock_gdb.py, its docstring says how), so that the losing interleaving
happens every time; a trial where gdb did not hold both is left out of the count.

The driver (default) runs `--trials` trials of each `--versions` confluent-kafka release (each
installed once with pip into `--cache`, `pip install --target`, beside the one the harness
uses; `installed`: this Python's own), one at a time, and prints per release the stuck trials,
the rate with its Wilson 95% interval and Fisher's exact p against the first release. `--out`
keeps each trial's stderr (and its client log with `--log`) and each stuck trial's stacks.

`python3 bench/librdkafka_deadlock.py --versions installed,2.9.0,2.10.0 --trials 5 --partitions 1 --force`
"""
from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOPIC = "fp"
GDB_SCRIPT = Path(__file__).resolve().with_name("librdkafka_deadlock_gdb.py")
RESUMED, STUCK, CANNOT = 0, 3, 4  # CANNOT: the schedule could not be set up (said on stderr)
INSTALLED = "installed"  # --versions: the confluent-kafka this Python has, not one from the cache


# -- one trial, in this process --------------------------------------------------------------

def librdkafka() -> ctypes.CDLL:
    """The librdkafka that confluent_kafka loaded (its wheel bundles one), for the mock API."""
    import confluent_kafka
    folder = Path(confluent_kafka.__file__).resolve().parent.parent / "confluent_kafka.libs"
    found = sorted(folder.glob("librdkafka*.so*"))
    if not found:
        raise SystemExit(f"no bundled librdkafka in {folder}: this needs a confluent-kafka wheel")
    lib = ctypes.CDLL(str(found[0]))
    lib.rd_kafka_conf_new.restype = ctypes.c_void_p
    lib.rd_kafka_new.restype = ctypes.c_void_p
    lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
    lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    lib.rd_kafka_mock_partition_set_leader.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32,
                                                       ctypes.c_int32]
    return lib


class FileLogger:
    """librdkafka's debug lines of the consumer, one per line, into a file (flushed as written:
    a stuck trial is killed)."""

    def __init__(self, path: Path) -> None:
        self.file = open(path, "w", encoding="utf-8", buffering=1)

    def log(self, level: int, fmt: str, *args: object) -> None:
        self.file.write(f"{time.time():.3f} {fmt % args if args else fmt}\n")


def leave(lib: ctypes.CDLL, mock: int, topic: bytes, partitions: int) -> str:
    """Broker 3 leaves the cluster's metadata and its partitions move to brokers 1 and 2, by the
    closest means this librdkafka's mock cluster has; returns which."""
    broker = (ctypes.c_void_p(mock), ctypes.c_int32(3))
    if hasattr(lib, "rd_kafka_mock_broker_remove_from_metadata"):  # v2.15.0 on: keeps its connections
        lib.rd_kafka_mock_broker_remove_from_metadata(*broker)
        return "rd_kafka_mock_broker_remove_from_metadata"
    if hasattr(lib, "rd_kafka_mock_broker_decommission"):  # v2.9.0 on: closes its connections too
        lib.rd_kafka_mock_broker_decommission(*broker)
        return "rd_kafka_mock_broker_decommission"
    lib.rd_kafka_mock_broker_set_down(*broker)  # earlier: a down broker is left out of Metadata
    for p in range(partitions):
        lib.rd_kafka_mock_partition_set_leader(mock, topic, p, 1 + p % 2)
    return "rd_kafka_mock_broker_set_down and rd_kafka_mock_partition_set_leader"


def trial(partitions: int, patience: float, log: Path | None = None, marker: Path | None = None,
          subscribe: bool = False) -> int:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    lib = librdkafka()
    errstr = ctypes.create_string_buffer(512)
    host = lib.rd_kafka_new(0, lib.rd_kafka_conf_new(), errstr, len(errstr))  # a producer handle hosts the mock
    mock = lib.rd_kafka_mock_cluster_new(host, 3)
    bootstraps = lib.rd_kafka_mock_cluster_bootstraps(mock).decode()
    topic = TOPIC.encode()
    lib.rd_kafka_mock_topic_create(mock, topic, partitions + 1, 3)
    lib.rd_kafka_mock_partition_set_leader(mock, topic, partitions, 1)  # keeps the consumer connected to broker 1

    def lead(broker: int) -> None:  # every partition to `broker`, each at a new leader epoch
        for p in range(partitions):
            lib.rd_kafka_mock_partition_set_leader(mock, topic, p, broker)

    def produce(tag: str) -> None:
        producer = Producer({"bootstrap.servers": bootstraps, "acks": "all"})
        for p in range(partitions):
            producer.produce(TOPIC, f"{tag}-{p}".encode(), partition=p)
        if producer.flush(10) != 0:
            raise SystemExit("the mock cluster did not acknowledge the records")

    def read_all(consumer: Consumer, tag: str, seconds: float) -> bool:
        wanted = {f"{tag}-{p}" for p in range(partitions)}
        deadline = time.monotonic() + seconds
        while wanted and time.monotonic() < deadline:
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                wanted.discard(message.value().decode())
        return not wanted

    lead(3)
    produce("first")
    consumer = Consumer({"bootstrap.servers": bootstraps, "group.id": "fencepost", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest" if subscribe else "error", "enable.partition.eof": False,
                         "topic.metadata.refresh.interval.ms": 250,
                         **({"debug": "broker,topic,metadata,fetch,protocol", "logger": FileLogger(log)}
                            if log else {})})
    if subscribe:  # the group's coordinator is broker 1, which stays
        lib.rd_kafka_mock_coordinator_set(ctypes.c_void_p(mock), b"group", b"fencepost", ctypes.c_int32(1))
        consumer.subscribe([TOPIC])
    else:
        consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(partitions + 1)])
    if not read_all(consumer, "first", 20):
        print("the consumer did not read the first records", file=sys.stderr)
        return CANNOT
    # Broker 3 answers everything 10 s late from now on, and every partition's epoch is bumped
    # with broker 3 still the leader: the consumer learns it (from broker 1, which leads the
    # extra partition, or late from broker 3) and its validation requests wait on broker 3.
    lib.rd_kafka_mock_broker_set_rtt(ctypes.c_void_p(mock), ctypes.c_int32(3), ctypes.c_int(10_000))
    lead(3)
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:  # the consumer learns the new epochs and starts validating
        consumer.poll(0.05)
    if marker is not None:  # --force: the driver attaches gdb now (bench/librdkafka_deadlock_gdb.py)
        print(f"ATTACH {os.getpid()}", file=sys.stderr, flush=True)
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            consumer.poll(0.05)
    print(f"broker 3 leaves: {leave(lib, mock, topic, partitions)}", file=sys.stderr, flush=True)
    produce("second")
    if read_all(consumer, "second", patience):
        print("resumed", file=sys.stderr)
        consumer.close()
        return RESUMED
    print(f"stuck: no record of the second round within {patience:g} s", file=sys.stderr, flush=True)
    time.sleep(3600)  # the driver takes the stacks, then kills this process (its close would never return)
    return STUCK


# -- the driver --------------------------------------------------------------------------------

def install(version: str, cache: Path) -> Path | None:
    """A folder holding confluent-kafka `version` (pip --target), installed once; None for
    `installed`, the one this Python has."""
    if version == INSTALLED:
        return None
    folder = cache / f"confluent-kafka-{version}"
    if not (folder / "confluent_kafka").is_dir():
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--only-binary", ":all:",
                        "--target", str(partial), f"confluent-kafka=={version}"], check=True)
        partial.rename(folder)
    return folder


def run_trial(folder: Path | None, args: argparse.Namespace, out: Path, name: str) -> tuple[int, str]:
    """(the trial's exit code, what gdb did in --force mode or "")."""
    env = dict(os.environ) if folder is None else dict(os.environ, PYTHONPATH=str(folder))
    out.mkdir(parents=True, exist_ok=True)
    stderr, marker, held = out / f"{name}.stderr", out / f"{name}.go", out / f"{name}.gdb"
    command = [sys.executable, __file__, "--trial", "--partitions", str(args.partitions),
               "--patience", str(args.patience), *(["--subscribe"] if args.subscribe else [])]
    if args.force:
        command += ["--marker", str(marker)]
    if args.log:
        command += ["--log", str(out / f"{name}.client.log")]
    forced = ""
    with open(stderr, "w") as err:
        child = subprocess.Popen(command, env=env, stderr=err, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + args.patience + 90
        gdb = None
        while child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
            text = stderr.read_text(errors="replace")
            if args.force and gdb is None and "ATTACH" in text:
                gdb = subprocess.Popen(["timeout", "-s", "KILL", "60", "gdb", "-p", str(child.pid), "-nx", "-q",
                                        "-iex", "set debuginfod enabled off", "-iex", "set non-stop on",
                                        "-x", str(GDB_SCRIPT)],
                                       stdout=open(held, "w"), stderr=subprocess.STDOUT, stdin=subprocess.PIPE)
            if gdb is not None and not marker.exists() and any(w in held.read_text() for w in ("ARMED", "ABSENT")):
                marker.touch()
            if gdb is not None and gdb.stdin and any(w in held.read_text() for w in ("HELD", "NOT-HIT", "ABSENT")):
                time.sleep(0.5)  # its detach
                gdb.stdin.close()  # gdb reads its commands there: at the end of them it exits
                gdb.stdin = None
            if "stuck:" in text and (gdb is None or gdb.poll() is not None):
                break
        if gdb is not None:
            gdb.wait()
            forced = " ".join(w for w in ("HELD", "NOT-HIT", "ABSENT") if w in held.read_text()) or "gdb failed"
        if child.poll() is not None:
            return child.returncode, forced
        with open(out / f"{name}.stacks.txt", "w") as stacks:
            subprocess.run(["timeout", "-s", "KILL", "60", "gdb", "-p", str(child.pid), "-batch", "-nx",
                            "-iex", "set debuginfod enabled off", "-ex", "thread apply all bt 30"],
                           stdout=stacks, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        child.send_signal(signal.SIGKILL)
        child.wait()
        return STUCK, forced


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trial", action="store_true", help="run one trial in this process")
    parser.add_argument("--partitions", type=int, default=32)
    parser.add_argument("--subscribe", action="store_true",
                        help="the consumer subscribes (a group, its coordinator broker 1) instead of assigning")
    parser.add_argument("--patience", type=float, default=10.0, help="seconds to wait for the second round")
    parser.add_argument("--versions", default=INSTALLED,
                        help=f"confluent-kafka releases, comma-separated ({INSTALLED!r}: this Python's own)")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "fencepost" / "confluent-kafka")
    parser.add_argument("--out", type=Path, default=Path("librdkafka-deadlock"),
                        help="each trial's stderr, and each stuck trial's thread stacks "
                             "(default ./librdkafka-deadlock)")
    parser.add_argument("--log", type=Path, help="the consumer's librdkafka debug log: a file (--trial), "
                                                 "or any value for the driver (each trial's, into --out)")
    parser.add_argument("--force", action="store_true",
                        help="hold the broker thread at the race's point with gdb (librdkafka_deadlock_gdb.py)")
    parser.add_argument("--marker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true",
                        help="several seconds: one trial of 1 partition with this Python's confluent-kafka "
                             "(nothing installed), --patience 3, --out in a temporary folder; with --force too "
                             "(half a minute: gdb's detach is slow) the trial is held with gdb, so "
                             "librdkafka_deadlock_gdb.py runs and a stuck trial's stacks are taken; covers the "
                             "driver, a trial and the table, not other releases nor the rates' worth")
    args = parser.parse_args(argv)
    if args.smoke and not args.trial:
        args.versions, args.trials, args.partitions, args.patience = INSTALLED, 1, 1, 3.0
        if args.force and shutil.which("gdb") is None:
            print("librdkafka_deadlock: --force needs gdb on PATH", file=sys.stderr)
            return 254
        print(f"smoke: one trial, {'held with gdb' if args.force else 'left alone'}", flush=True)
        with tempfile.TemporaryDirectory(prefix="librdkafka-deadlock-smoke-") as out:
            args.out = Path(out)
            return drive(args)
    if args.trial:
        return trial(args.partitions, args.patience, args.log, args.marker, args.subscribe)
    return drive(args)


def drive(args: argparse.Namespace) -> int:
    """The driver: every release's trials, then the table."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from fencepost.harness.compare.stats import fisher_exact, wilson_interval

    counts: dict[str, tuple[int, int]] = {}
    for version in args.versions.split(","):
        folder = install(version, args.cache)
        stuck = judged = 0
        for n in range(args.trials):
            code, forced = run_trial(folder, args, args.out, f"{version}-{n:03d}")
            if code == CANNOT:
                print(f"confluent-kafka {version}: the schedule cannot be set up (see --out's stderr)", flush=True)
                break
            if args.force and not forced.startswith(("HELD", "ABSENT")):
                # gdb did not hold both threads in time: the trial says nothing of the race (it may
                # even look stuck, a thread having been held longer than --patience)
                print(f"confluent-kafka {version} trial {n}: not held (gdb: {forced}), left out", flush=True)
                continue
            judged += 1
            stuck += code == STUCK
            print(f"confluent-kafka {version} trial {n}: {'STUCK' if code == STUCK else 'resumed'}"
                  f"{f' (gdb: {forced})' if forced else ''} ({stuck}/{judged})", flush=True)
        counts[version] = (stuck, judged)
    first = next(iter(counts))
    print(f"\n{'confluent-kafka':16} {'stuck':>9} {'rate':>6}  95% interval     p vs {first}")
    for version, (stuck, judged) in counts.items():
        low, high = wilson_interval(stuck, judged)
        s0, n0 = counts[first]
        p = fisher_exact([[stuck, judged - stuck], [s0, n0 - s0]]) if version != first and judged and n0 else None
        rate = stuck / judged if judged else 0.0
        print(f"{version:16} {stuck:>4}/{judged:<4} {rate:6.3f}  [{low:.3f}, {high:.3f}]  "
              f"{'-' if p is None else f'{p:.2g}'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
