"""Survey of Apache Kafka releases on this machine's Java: does each one resolve, start, take
acks=all writes and serve them back, and did it read every setting fencepost gave it?

For each release (default: every release from 0.10.2.0 to the newest 4.x fencepost knows of;
`--releases` picks some), in its default mode (ZooKeeper before 4.0, KRaft from 4.0; `--kraft`
adds KRaft for 3.3 to 3.9): the jars are resolved (the cache folder is reused), one broker (and
its ZooKeeper) is brought up on the process backend with a topic of one partition, 1,000
acks=all records are produced with confluent-kafka and read back from offset 0, and the
broker's "KafkaConfig values" dump is compared with the server.properties fencepost wrote:
a key the release does not list, or lists with another value, is a finding. The cluster is
taken down after each release. Prints one row per release and mode; asserts nothing.

Run: python bench/kafka_releases.py [--releases 0.10.2.2 2.0.1 ...] [--kraft] [--records 1000]
Needs Java and Maven (the first use of a release resolves it into ~/.cache/fencepost/kafka).
"""
from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

from fencepost.clusters.cluster import Cluster, ClusterSpec  # noqa: E402
from fencepost.clusters.errors import ClusterConfigError, HostError  # noqa: E402
from fencepost.clusters.systems.base import TopicSpec  # noqa: E402
from fencepost.clusters.systems.kafka import dist  # noqa: E402

RELEASES = (
    "0.10.2.0 0.10.2.1 0.10.2.2 0.11.0.0 0.11.0.1 0.11.0.2 0.11.0.3 1.0.0 1.0.1 1.0.2 1.1.0 1.1.1 2.0.0 2.0.1 "
    "2.1.0 2.1.1 2.2.0 2.2.1 2.2.2 2.3.0 2.3.1 2.4.0 2.4.1 2.5.0 2.5.1 2.6.0 2.6.1 2.6.2 2.6.3 2.7.0 2.7.1 2.7.2 "
    "2.8.0 2.8.1 2.8.2 3.0.0 3.0.1 3.0.2 3.1.0 3.1.1 3.1.2 3.2.0 3.2.1 3.2.2 3.2.3 3.3.0 3.3.1 3.3.2 3.4.0 3.4.1 "
    "3.5.0 3.5.1 3.5.2 3.6.0 3.6.1 3.6.2 3.7.0 3.7.1 3.7.2 3.8.0 3.8.1 3.9.0 3.9.1 4.0.0 4.0.1 4.1.0 4.1.1 "
    "4.2.0 4.3.0 4.3.1 4.4.0").split()
CONFIG_LINE = re.compile(r"^\s+([a-z0-9.]+) = (.*)$", re.M)


def config_findings(cluster: Cluster, node: str) -> list[str]:
    """Keys of server.properties the broker's KafkaConfig dump lacks or shows with another value."""
    host = cluster.hosts[node]
    written = dict(line.split("=", 1) for line in Path(f"{host.workdir}/server.properties").read_text().splitlines()
                   if "=" in line)
    log = cluster.log_since_start(node, "broker") or cluster.log_since_start(node, "controller")
    start = log.find("KafkaConfig values")
    if start < 0:
        return ["no KafkaConfig dump in the log"]
    dumped = dict(CONFIG_LINE.findall(log[start:start + 200_000].split("\n\n")[0]))
    return [f"{k}={v} (dump: {dumped.get(k, 'absent')})" for k, v in written.items()
            if _as_dumped(dumped.get(k)) != v.replace("\\\\", "\\")]


def _as_dumped(value: str | None) -> str | None:
    """4.x dumps a list setting as `[a, b]` where server.properties says `a,b`."""
    if value is not None and value.startswith("[") and value.endswith("]"):
        return ",".join(part.strip() for part in value[1:-1].split(","))
    return value


def exercise(bootstrap: str, records: int) -> tuple[int, int]:
    """(acked, read back in order from offset 0) for `records` acks=all writes to fp-0."""
    acked: list[int] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 20000})
    for i in range(records):
        producer.produce("fp", f"v{i}".encode(), partition=0,
                         on_delivery=lambda err, msg: None if err else acked.append(msg.offset()))
        producer.poll(0)
    producer.flush(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "survey", "enable.auto.commit": False})
    consumer.assign([TopicPartition("fp", 0, 0)])
    read, deadline = [], time.monotonic() + 20
    while len(read) < len(acked) and time.monotonic() < deadline:
        read += [m.value() for m in consumer.consume(500, 1.0) if not m.error()]
    consumer.close()
    in_order = sum(1 for i, v in enumerate(read) if v == f"v{i}".encode())
    return len(acked), in_order


def survey(release: str, mode: str | None, records: int, work: Path) -> str:
    started = time.monotonic()
    try:
        found = dist.resolve(release, say=lambda line: None)
    except ClusterConfigError as e:
        return f"{release:9} {mode or '-':5} refused: {e}"
    resolved = time.monotonic() - started
    options = {"min_insync_replicas": 1, **({"mode": mode} if mode else {})}
    spec = ClusterSpec(f"rel{release.replace('.', '')}{mode or ''}", f"kafka:{release}", 1, "process", {}, options)
    cluster = None
    try:
        began = time.monotonic()
        cluster = Cluster.up(spec, work / spec.name, timeout=120)
        cluster.create_topic(TopicSpec("fp", 1, 1), 60)
        up = time.monotonic() - began
        acked, read = exercise(cluster.bootstrap, records)
        findings = config_findings(cluster, "n1")
        mode_used = cluster.system.settings.mode
        return (f"{release:9} {mode_used:5} scala {found.scala}  resolve {resolved:4.1f} s  up {up:5.1f} s  "
                f"acked {acked}/{records} read {read}  config: {'ok' if not findings else '; '.join(findings)}")
    except (ClusterConfigError, HostError) as e:
        return f"{release:9} {mode or '-':5} FAILED: {str(e)[-600:]}"
    finally:
        if cluster is not None:
            cluster.down()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--releases", nargs="+", default=list(RELEASES))
    parser.add_argument("--kraft", action="store_true", help="also KRaft for 3.3 to 3.9")
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--smoke", action="store_true",
                        help="under a minute where its jars are cached: the newest release (KRaft) alone, 20 "
                             "records; covers resolving, one real broker's start, the writes read back, the "
                             "KafkaConfig comparison and the row printed, not the other releases")
    args = parser.parse_args()
    if args.smoke:
        args.releases, args.kraft, args.records = [RELEASES[-1]], False, 20
    with tempfile.TemporaryDirectory(prefix="kafka-releases-") as scratch:
        for release in args.releases:
            modes = [None]
            if args.kraft and release.startswith("3.") and (3, 3) <= tuple(map(int, release.split(".")[:2])):
                modes.append("kraft")
            for mode in modes:
                print(survey(release, mode, args.records, Path(scratch)), flush=True)


if __name__ == "__main__":
    main()
