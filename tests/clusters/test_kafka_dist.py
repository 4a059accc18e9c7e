"""Where stock Kafka's jars come from (clusters/systems/kafka/dist.py), for real: Maven resolves
a version into a fresh cache folder once and never again (proved by a second resolve with no
`mvn` on PATH); 3.x gets reload4j and 4.x the log4j2 binding; an unknown version, no Maven, no
Java and no reachable repository are ClusterConfigErrors that say what to do and leave no
half-made folder; an unpacked distribution (--kafka-home, KAFKA_HOME) is used as it is.

Every resolution goes into a tmp cache folder (never ~/.cache/fencepost); Maven's own local
repository is the machine's, except in the no-network test, which points Maven at an empty
one in offline mode.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fencepost.clusters.errors import ClusterConfigError
from fencepost.clusters.systems import system_for
from fencepost.clusters.systems.kafka import dist
from fencepost.clusters.systems.kafka.release import Release
from tests.support.cli import fencepost
from tests.support.paths import ROOT

ZK_VERSION = "3.9.1"
KRAFT_VERSION = "4.3.1"
UNKNOWN_VERSION = "3.9.99"


def needs_maven(test):
    """Starts Maven (a few seconds; downloads where the local Maven repository lacks a jar)."""
    return pytest.mark.integration(pytest.mark.slow(pytest.mark.java(test)))


def require_java_and_maven() -> None:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            pytest.skip(f"stock Kafka needs {tool} (scripts/provision installs it)")


def path_with_only(folder: Path, *tools: str) -> str:
    """A PATH folder holding stand-ins for `tools` and nothing else (dist only looks them up)."""
    folder.mkdir(parents=True, exist_ok=True)
    for tool in tools:
        stub = folder / tool
        stub.write_text("#!/bin/sh\nexit 1\n")
        stub.chmod(0o755)
    return str(folder)


def jar_names(libs: str) -> list[str]:
    return sorted(p.name for p in Path(libs).glob("*.jar"))


def fake_home(folder: Path, version: str = ZK_VERSION) -> Path:
    (folder / "libs").mkdir(parents=True)
    (folder / "libs" / f"kafka_2.13-{version}.jar").write_bytes(b"")
    (folder / "libs" / f"kafka-clients-{version}.jar").write_bytes(b"")
    return folder


@pytest.fixture(scope="module")
def resolved_3x(tmp_path_factory) -> tuple[Path, dist.KafkaDistribution]:
    require_java_and_maven()
    cache = tmp_path_factory.mktemp("kafka-cache")
    return cache, dist.resolve(ZK_VERSION, cache=cache, say=lambda line: None)


# -- Maven, for real ---------------------------------------------------------------------------

@needs_maven
def test_a_fresh_resolve_of_3x_gives_the_broker_zookeeper_and_reload4j(resolved_3x):
    cache, found = resolved_3x
    assert found == dist.KafkaDistribution(ZK_VERSION, str(cache / ZK_VERSION / "libs"), "2.13")
    jars = jar_names(found.libs)
    assert f"kafka_2.13-{ZK_VERSION}.jar" in jars
    assert any(j.startswith("zookeeper-3.") for j in jars), jars
    assert any(j.startswith("slf4j-reload4j-") for j in jars), jars
    assert (cache / ZK_VERSION / dist.MARKER).read_text() == dist.recipe(found.release)  # what it was made from
    assert sorted(p.name for p in cache.iterdir()) == [ZK_VERSION]  # no work folder left behind


@needs_maven
def test_a_second_resolve_runs_no_maven(resolved_3x, tmp_path, monkeypatch):
    cache, first = resolved_3x
    monkeypatch.setenv("PATH", path_with_only(tmp_path / "bin", "java"))  # no mvn: running it would fail
    said: list[str] = []
    again = dist.resolve(ZK_VERSION, cache=cache, say=said.append)
    assert again == first and said == []
    with pytest.raises(ClusterConfigError, match="`mvn` is not on PATH"):  # the proof that PATH has no mvn
        dist.resolve("3.8.1", cache=cache, say=said.append)


@needs_maven
def test_4x_gets_the_log4j2_binding(tmp_path):
    require_java_and_maven()
    found = dist.resolve(KRAFT_VERSION, cache=tmp_path, say=lambda line: None)
    jars = jar_names(found.libs)
    assert f"kafka_2.13-{KRAFT_VERSION}.jar" in jars
    assert any(j.startswith("log4j-slf4j-impl-2.") for j in jars), jars
    assert not any(j.startswith("slf4j-reload4j-") for j in jars), jars


@needs_maven
def test_an_unknown_version_names_it_and_leaves_no_half_made_folder(tmp_path):
    require_java_and_maven()
    with pytest.raises(ClusterConfigError,
                       match=rf"kafka:{UNKNOWN_VERSION}: Maven Central has no "
                             rf"org\.apache\.kafka:kafka_2\.13:{UNKNOWN_VERSION}; give a released"):
        dist.resolve(UNKNOWN_VERSION, cache=tmp_path, say=lambda line: None)
    assert list(tmp_path.iterdir()) == []


@needs_maven
def test_an_unreachable_repository_says_so_and_offers_kafka_home(tmp_path, monkeypatch):
    """Maven offline with an empty local repository: what a machine without network meets
    (it cannot even fetch the dependency plugin), with no traffic at all."""
    require_java_and_maven()
    home = tmp_path / "home"
    (home / ".m2").mkdir(parents=True)
    (home / ".m2" / "settings.xml").write_text(
        f"<settings><localRepository>{tmp_path / 'empty-repository'}</localRepository>"
        "<offline>true</offline></settings>\n")
    monkeypatch.setenv("MAVEN_OPTS", f"-Duser.home={home}")  # Maven reads ~/.m2 from user.home
    cache = tmp_path / "cache"
    with pytest.raises(ClusterConfigError) as refused:
        dist.resolve(ZK_VERSION, cache=cache, say=lambda line: None)
    message = str(refused.value)
    assert message.startswith(f"kafka:{ZK_VERSION}: Maven could not reach its repository (")
    assert "--kafka-home DIR" in message and "\x1b[" not in message and "Maven Central has no" not in message
    assert list(cache.iterdir()) == []


@needs_maven
def test_cluster_up_with_an_unknown_version_exits_254_with_the_message(tmp_path, monkeypatch):
    require_java_and_maven()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the real cache stays untouched
    done = fencepost(tmp_path, "cluster", "up", "--system", f"kafka:{UNKNOWN_VERSION}",
                     "--results", str(tmp_path / "results"), timeout=dist.MAVEN_TIMEOUT_S)
    assert done.returncode == 254, done.stderr
    assert f"Maven Central has no org.apache.kafka:kafka_2.13:{UNKNOWN_VERSION}" in done.stderr
    assert list((tmp_path / "cache" / "fencepost" / "kafka").iterdir()) == []


# -- without Maven: refusals and an unpacked distribution -------------------------------------

def test_no_maven_on_path_says_install_it_or_give_kafka_home(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", path_with_only(tmp_path / "bin", "java"))
    with pytest.raises(ClusterConfigError, match=r"`mvn` is not on PATH: install it .*--kafka-home DIR"):
        dist.resolve(ZK_VERSION, cache=tmp_path / "cache")
    assert not (tmp_path / "cache" / ZK_VERSION).exists()


def test_no_java_on_path_says_install_a_jdk(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", path_with_only(tmp_path / "bin", "mvn"))
    with pytest.raises(ClusterConfigError, match=r"needs Java .* `java` is not on PATH: install a JDK"):
        dist.resolve(ZK_VERSION, cache=tmp_path / "cache")


@pytest.mark.parametrize("version, message", [
    ("3.9", r"'3\.9' is not an Apache Kafka release number"),
    ("0.10.2", r"'0\.10\.2' is not an Apache Kafka release number: .*four parts before 1\.0"),
    ("3.9.1.0", r"'3\.9\.1\.0' is not an Apache Kafka release number"),
    ("3.9.1-rc1", r"is not an Apache Kafka release number"),
    ("0.9.0.1", r"kafka 0\.9\.0\.1 is older than 0\.10\.2\.0, the first release fencepost runs"),
    (None, r"needs a version .* KAFKA_HOME")])
def test_a_missing_or_malformed_version_is_refused(tmp_path, version, message):
    with pytest.raises(ClusterConfigError, match=message):
        dist.resolve(version, cache=tmp_path)


def test_an_unpacked_distribution_gives_its_version_and_libs(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", path_with_only(tmp_path / "bin", "java"))
    home = fake_home(tmp_path / "kafka")
    assert dist.from_home(home, None) == dist.KafkaDistribution(ZK_VERSION, str(home / "libs"), "2.13")
    assert dist.resolve(ZK_VERSION, kafka_home=str(home)).classpath == f"{home / 'libs'}/*"


def test_an_unpacked_old_release_gives_its_version_and_scala_build(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", path_with_only(tmp_path / "bin", "java"))
    home = tmp_path / "kafka_2.11-0.11.0.3"
    (home / "libs").mkdir(parents=True)
    (home / "libs" / "kafka_2.11-0.11.0.3.jar").write_bytes(b"")
    (home / "libs" / "kafka-clients-0.11.0.3.jar").write_bytes(b"")
    assert dist.from_home(home, None) == dist.KafkaDistribution("0.11.0.3", str(home / "libs"), "2.11")
    settings = system_for("kafka", {"kafka_home": str(home)}).settings
    assert (settings.version, settings.scala, settings.mode, settings.truncation) == \
        ("0.11.0.3", "2.11", "zk", "release")
    with pytest.raises(ClusterConfigError, match="older than 0.10.2.0"):
        (home / "libs" / "kafka_2.11-0.11.0.3.jar").rename(home / "libs" / "kafka_2.11-0.10.1.1.jar")
        dist.from_home(home, None)


def test_a_release_this_machine_s_java_is_too_old_for_exits_254_before_anything_starts(tmp_path):
    """Every release runs on Java 17 (bench/kafka_releases.py); a Java 11 (a stand-in `java` that
    reports it, as `java -version` does on stderr) cannot run 4.x brokers."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "java").write_text('#!/bin/sh\necho \'openjdk version "11.0.2" 2019-01-15\' >&2\n')
    (bin_dir / "java").chmod(0o755)
    done = subprocess.run([sys.executable, "-m", "fencepost.harness.cli", "cluster", "up", "--system", "kafka:4.4.0",
                           "--results", str(tmp_path / "results")], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
                               "XDG_CACHE_HOME": str(tmp_path / "cache"),
                               "PYTHONPATH": str(ROOT)})
    assert done.returncode == 254, (done.stdout, done.stderr)
    assert "kafka 4.4.0 needs Java 17 or newer and `java` on PATH is 11.0.2" in done.stderr
    assert not (tmp_path / "cache").exists()


def test_a_home_without_the_broker_jar_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", path_with_only(tmp_path / "bin", "java"))
    (tmp_path / "kafka" / "libs").mkdir(parents=True)
    with pytest.raises(ClusterConfigError, match=r"has no libs/kafka_<scala>-VERSION\.jar .*: point --kafka-home"):
        dist.from_home(tmp_path / "kafka", None)


def test_system_kafka_takes_kafka_home_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", path_with_only(tmp_path / "bin", "java"))
    home = fake_home(tmp_path / "kafka")
    monkeypatch.setenv("KAFKA_HOME", str(home))
    settings = system_for("kafka", {}).settings
    assert (settings.version, settings.libs, settings.mode) == (ZK_VERSION, str(home / "libs"), "zk")


def test_a_version_the_home_does_not_hold_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", path_with_only(tmp_path / "bin", "java"))
    home = fake_home(tmp_path / "kafka")
    with pytest.raises(ClusterConfigError, match=rf"holds Kafka {ZK_VERSION}, not {KRAFT_VERSION}: give "
                                                  rf"--system kafka:{ZK_VERSION}"):
        system_for(f"kafka:{KRAFT_VERSION}", {"kafka_home": str(home)})


# Maven 3.8's own words (captured from real runs), coloured as it prints them in batch mode.
TRANSFER_FAILED = ("\x1b[0m\x1b[0m[ERROR] Failed to execute goal on project kafka-3.9.1: Could not resolve "
                   "dependencies for project fencepost:kafka-3.9.1:pom:1: Failed to collect dependencies at "
                   "org.apache.kafka:kafka_2.13:jar:3.9.1: Failed to read artifact descriptor for "
                   "org.apache.kafka:kafka_2.13:jar:3.9.1: Could not transfer artifact "
                   "org.apache.kafka:kafka_2.13:pom:3.9.1 from/to central (http://127.0.0.1:9/): "
                   "Connect to 127.0.0.1:9 [/127.0.0.1] failed: Connection refused -> [Help 1]\n[ERROR] \n")
DEPENDENCY_MISSING = ("\x1b[0m\x1b[0m[ERROR] Failed to execute goal on project kafka-4.4.0: Could not resolve "
                      "dependencies for project fencepost:kafka-4.4.0:pom:1: Could not find artifact "
                      "org.apache.kafka:kafka-tools-api:jar:4.4.0 in central -> [Help 1]\n[ERROR] \n")


def test_maven_failures_are_said_as_what_to_do():
    unreachable = dist.maven_failure(Release.parse("3.9.1"), TRANSFER_FAILED)
    assert unreachable.startswith("kafka:3.9.1: Maven could not reach its repository (Failed to execute goal")
    assert "\x1b[" not in unreachable and unreachable.endswith("or give an unpacked distribution with --kafka-home DIR")
    assert dist.maven_failure(Release.parse("4.4.0"), DEPENDENCY_MISSING).startswith(
        "kafka:4.4.0: a dependency could not be found in the Maven repository: "
        "org.apache.kafka:kafka-tools-api:jar:4.4.0 (Failed to execute goal")
