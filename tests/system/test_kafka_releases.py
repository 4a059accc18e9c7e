"""Stock Kafka across its releases, for real: one run per era of the replication protocol, each
judged by `fencepost check` on what it recorded, on the release's own protocol —
0.10.2 (KAFKA-1211: lost writes under leader-bounce), 1.1 (KAFKA-6361: diverged replicas under
fast-leader-change), 2.0 (KIP-279 fixed that: fast-leader-change stays valid; 2.0.0 lets a
zombie keep stale records, KAFKA-6880) and 2.1 (KIP-320: the zombie scenario stays valid).
Also: each release resolved once and never again, and what cannot run refused before anything
starts (exit 254, with a message).

The measured rates behind these claims (10 runs a cell, Fisher's exact test between releases)
are campaigns/releases.toml's, in docs/KAFKA.md; here a bug must show in at most
three targeted runs, and a fix must hold in one.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest

from fencepost.clusters.errors import ClusterConfigError
from fencepost.clusters.systems.kafka import dist
from tests.support.cli import fencepost
from tests.support.kafka_support import needs_java_and_maven, needs_root_and_java, rechecked

pytestmark = [pytest.mark.integration, pytest.mark.java]

ATTEMPTS = 3
SUBNET = "10.77.74.0/24"


def run(where: Path, *args: str) -> tuple[subprocess.CompletedProcess, Path | None]:
    needs_root_and_java()
    where.mkdir(parents=True, exist_ok=True)
    done = fencepost(where, "run", "--time-limit", "30", "--nemesis-schedule", "fixed", "--nemesis-interval", "3",
                     "--backend-option", f"subnet={SUBNET}", *args, timeout=900)
    found = re.search(r"run directory: (\S+)", done.stdout)
    return done, (where / found.group(1) if found else None)


def first_run_with(tmp_path: Path, release: str, fault: str, anomaly: str, *args: str) -> Path:
    """The first of at most ATTEMPTS runs whose check finds `anomaly`; fails when none does."""
    for attempt in range(1, ATTEMPTS + 1):
        done, run_dir = run(tmp_path / f"{release}-{attempt}", "--system", f"kafka:{release}", "--nemesis", fault,
                            "--seed", str(attempt), *args)
        assert done.returncode in (0, 1), (done.stdout, done.stderr[-3000:])
        if rechecked(run_dir)["anomaly_counts"].get(anomaly, 0) > 0:
            assert done.returncode == 1 and "verdict: invalid" in done.stdout
            return run_dir
    pytest.fail(f"kafka {release}: no {anomaly} under {fault} in {ATTEMPTS} runs")


def all_valid(tmp_path: Path, release: str, fault: str, *args: str) -> Path:
    """One run, valid by its own verdict and by `fencepost check` again."""
    done, run_dir = run(tmp_path / release, "--system", f"kafka:{release}", "--nemesis", fault, "--seed", "1", *args)
    assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
    assert rechecked(run_dir)["valid"] is True
    return run_dir


def versions(run_dir: Path) -> dict:
    test = orjson.loads((run_dir / "test.json").read_bytes())
    return {**test["versions"], "protocol": test["protocol"], "truncation": test["truncation"]}


# The scenarios' settings of campaigns/releases.toml (docs/KAFKA.md says why each is needed).
FOUR_BROKERS = ("--nodes", "4", "--concurrency", "50")


def per_process_producers(tmp_path: Path) -> tuple[str, ...]:
    """A producer per process: what the leader takes while its successor is held reaches it over
    many connections, not the one a shared producer's sends queue on."""
    config = tmp_path / "producers.toml"
    config.write_text('[clients]\nproducer = "per-process"\n')
    return ("--config", str(config), *FOUR_BROKERS)


def one_record_per_batch(tmp_path: Path) -> tuple[str, ...]:
    """A producer per process (a send stalled on another partition B leads holds back only its own
    process's connection to B) sending one record per batch."""
    config = tmp_path / "batches.toml"
    config.write_text('[producer]\nbatch_messages = 1\n\n[clients]\nproducer = "per-process"\n')
    return ("--config", str(config), *FOUR_BROKERS)


@pytest.mark.root
def test_0_10_2_loses_acknowledged_writes_under_leader_bounce(tmp_path):
    run_dir = first_run_with(tmp_path, "0.10.2.2", "leader-bounce", "lost-write")
    recorded = versions(run_dir)
    assert (recorded["kafka"], recorded["scala"], recorded["mode"], recorded["truncation"]) == \
        ("0.10.2.2", "2.11", "zk", "release")
    assert recorded["protocol"] == "kafka 0.10.2.2, its own protocol (high-watermark truncation (before KIP-101))"
    assert recorded["java"] and recorded["librdkafka"] and recorded["fencepost"]
    results = orjson.loads((run_dir / "results.json").read_bytes())
    lost = results["anomalies"]["lost-write"][0]
    assert lost["how"] in ("missing", "overwritten") and lost["ops"]
    # brokers that halt ("log truncation is not allowed") cost no minute of waiting: the recovery
    # phase ends as soon as a partition keeps fewer live replicas than min.insync.replicas
    log = (run_dir / "fencepost.log").read_text()
    recovery = re.search(r"recovery after the final heal: (done|not done) in ([\d.]+) s", log)
    assert recovery and float(recovery.group(2)) < 15, recovery


@pytest.mark.root
def test_1_1_diverges_under_fast_leader_change(tmp_path):
    run_dir = first_run_with(tmp_path, "1.1.1", "fast-leader-change", "replica-divergence",
                             *one_record_per_batch(tmp_path))
    example = orjson.loads((run_dir / "results.json").read_bytes())["anomalies"]["replica-divergence"][0]
    assert len(set(example["values"].values())) > 1
    assert versions(run_dir)["scala"] == "2.12"


@pytest.mark.root
def test_2_0_truncates_by_epoch_and_stays_valid_under_fast_leader_change(tmp_path):
    run_dir = all_valid(tmp_path, "2.0.1", "fast-leader-change", *one_record_per_batch(tmp_path))
    assert '"f":"fast-leader-change"' in (run_dir / "history.jsonl").read_text()


@pytest.mark.root
def test_2_0_0_lets_a_zombie_keep_stale_records(tmp_path):
    """KAFKA-6880 on the code that had it: the zombie, fenced by the controller yet still fetching
    from L, keeps what L took while L's successor was held, at offsets later leaders fill anew."""
    tmp_path.mkdir(exist_ok=True)
    run_dir = first_run_with(tmp_path, "2.0.0", "zombie", "replica-divergence", *per_process_producers(tmp_path))
    done = [orjson.loads(line) for line in (run_dir / "history.jsonl").read_bytes().splitlines()
            if b'"f":"zombie"' in line and b'"type":"info"' in line]
    assert done and "error" not in done[0] and len(done[0]["value"]["leaders"]) == 3, done[:1]


@pytest.mark.root
def test_2_1_fences_the_zombie(tmp_path):
    run_dir = all_valid(tmp_path, "2.1.1", "zombie", *FOUR_BROKERS)
    assert versions(run_dir)["protocol"] == "kafka 2.1.1, its own protocol (KIP-320 leader-epoch fencing)"


# -- the jars, and what is refused ----------------------------------------------------------------

@pytest.mark.slow
def test_an_old_release_resolves_once_with_its_java_17_extras_and_never_again(tmp_path, monkeypatch):
    needs_java_and_maven()
    found = dist.resolve("0.10.2.2", cache=tmp_path, say=lambda line: None)
    jars = sorted(p.name for p in Path(found.libs).glob("*.jar"))
    assert "kafka_2.11-0.10.2.2.jar" in jars and "zookeeper-3.4.9.jar" in jars
    assert any(j.startswith("jaxb-api-") for j in jars) and any(j.startswith("javax.activation-api-") for j in jars)
    swapped = dist.resolve("2.0.1", cache=tmp_path, say=lambda line: None)
    zookeeper = sorted(p.name for p in Path(swapped.libs).glob("zookeeper-*.jar"))
    assert zookeeper == ["zookeeper-3.5.9.jar", "zookeeper-jute-3.5.9.jar"], zookeeper
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "java").symlink_to(shutil.which("java"))
    monkeypatch.setenv("PATH", str(bin_dir))  # no mvn: a second resolve that ran Maven would fail
    said: list[str] = []
    assert dist.resolve("0.10.2.2", cache=tmp_path, say=said.append) == found and said == []


def test_a_release_before_0_10_2_is_refused_with_the_reason(tmp_path):
    with pytest.raises(ClusterConfigError, match=r"older than 0\.10\.2\.0"):
        dist.resolve("0.10.1.1", cache=tmp_path)


@pytest.mark.parametrize("args, message", [
    (("--system", "kafka:0.10.2.2", "--truncation", "kip101"),
     "0.11.0-IV2, which kafka 0.10.2.2 does not know"),
    (("--system", "kafka:0.10.2.2", "--truncation", "hw"), "own protocol is already hw: leave --truncation out"),
    (("--system", "kafka:2.0.1", "--truncation", "kip320"), "2.1-IV2, which kafka 2.0.1 does not know"),
    (("--system", "kafka:4.4.0", "--truncation", "kip101"), "KRaft refuses"),
    (("--system", "kafka:3.2.3", "--system-option", "mode=kraft"), "no production KRaft mode"),
    (("--system", "kafka:0.9.0.1"), "older than 0.10.2.0"),
    (("--system", "kafka:0.10.2"), "not an Apache Kafka release number"),
])
def test_what_a_release_cannot_do_exits_254_before_anything_starts(tmp_path, args, message):
    done = fencepost(tmp_path, "run", *args, "--results", str(tmp_path / "results"), timeout=120)
    assert done.returncode == 254, (done.stdout, done.stderr)
    assert message in done.stderr, done.stderr
    assert not (tmp_path / "results").exists()


@pytest.mark.slow
def test_an_unknown_release_exits_254_naming_the_artifact(tmp_path, monkeypatch):
    needs_java_and_maven()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    done = fencepost(tmp_path, "cluster", "up", "--system", "kafka:0.10.2.9", "--results",
                     str(tmp_path / "results"), timeout=dist.MAVEN_TIMEOUT_S)
    assert done.returncode == 254, done.stderr
    assert "Maven Central has no org.apache.kafka:kafka_2.11:0.10.2.9" in done.stderr


@pytest.mark.slow
def test_the_control_plane_speaks_each_release_s_versions_and_reads_zookeeper(tmp_path):
    """0.10.2.2 answers Metadata only up to v2 and CreateTopics up to v1, with no leader epoch; the
    view from ZooKeeper has the epoch all the same. One broker on the process backend."""
    from fencepost.clusters.cluster import Cluster, ClusterSpec
    from fencepost.clusters.systems.base import TopicSpec
    from fencepost.clusters.systems.kafka import config, wire
    from fencepost.clusters.systems.kafka.zookeeper import ZooKeeperReader

    needs_java_and_maven()
    spec = ClusterSpec("cp01022", "kafka:0.10.2.2", 1, "process", {}, {"min_insync_replicas": 1})
    cluster = Cluster.up(spec, tmp_path / "cluster", timeout=120)
    try:
        cluster.create_topic(TopicSpec("fp", 2, 1), 60)
        broker, zk = cluster.hosts["n1"], cluster.hosts["zk"]
        answer = wire.metadata(broker.address, broker.port("broker", config.BROKER_PORT), ["fp"], 5)
        assert answer.version == 2 and answer.brokers == (1,) and answer.controller == 1
        assert [p.leader_epoch for p in answer.topics["fp"][1]] == [wire.UNKNOWN, wire.UNKNOWN]
        code, message = wire.create_topic(broker.address, broker.port("broker", config.BROKER_PORT), "fp", 2, 1, {}, 5)
        assert code == 36 and "exists" in (message or "")  # TOPIC_ALREADY_EXISTS, with CreateTopics v1's message
        with ZooKeeperReader(zk.address, zk.port("zookeeper", config.ZOOKEEPER_PORT), 5) as reader:
            assert reader.brokers() == [1] and reader.controller() == 1
            assert reader.replicas("fp") == {0: (1,), 1: (1,)} and reader.replicas("absent") is None
            state = reader.partition_state("fp", 0)
            assert state is not None and state.leader == 1 and state.leader_epoch >= 0 and state.isr == (1,)
        view = cluster.partition_view("fp", 1)
        assert (view.leader, view.replicas, view.isr) == ("n1", ("n1",), ("n1",)) and view.leader_epoch >= 0
    finally:
        cluster.down()
