"""Where stock Apache Kafka's jars come from.

Either Maven resolves the release's broker artifact for the Scala build it was published for
(`org.apache.kafka:kafka_<scala>:VERSION`), with its runtime dependencies and the extra jars it
needs on Java 17 (clusters/systems/kafka/release.py says which), by `mvn
dependency:copy-dependencies` on a generated pom, into `~/.cache/fencepost/kafka/VERSION/libs`,
once: a finished cache folder holds a `resolved` marker naming exactly what was resolved and is
never resolved again while that stays the same; a failed or interrupted resolution leaves
nothing behind. Or an unpacked distribution (`KAFKA_HOME` or `--kafka-home`) supplies `libs/`.
Missing Java or Maven, a version that is no release and an unreachable repository are
ClusterConfigErrors (exit 254) that say what to do.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from clusters.errors import ClusterConfigError
from clusters.systems.kafka.release import Release

MARKER = "resolved"
JAVA_VERSION = re.compile(r'version "([^"]+)"')
JAVA_TIMEOUT_S = 20.0
MAVEN_TIMEOUT_S = 900.0
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")  # Maven colours its [ERROR] lines even in batch mode
# Maven's words for a repository it could not reach; without network on a fresh machine it
# cannot even fetch the dependency plugin, and says "No plugin found for prefix".
UNREACHABLE = re.compile(r"Could not transfer|transfer failed|Connect to |Connection refused|resolve host|"
                         r"UnknownHost|Network is unreachable|timed out|offline mode|"
                         r"No plugin found for prefix", re.I)

BROKER_JAR = re.compile(r"kafka_(2\.\d+)-(\d+\.\d+\.\d+(?:\.\d+)?)\.jar")


@dataclass(frozen=True)
class KafkaDistribution:
    version: str
    libs: str  # a folder of jars: the classpath is libs/*
    scala: str = ""  # the Scala build of the broker jar (2.11, 2.12, 2.13)

    @property
    def release(self) -> Release:
        return Release.parse(self.version)

    @property
    def classpath(self) -> str:
        return f"{self.libs}/*"


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fencepost" / "kafka"


def resolve(version: str | None, kafka_home: str | None = None, cache: Path | None = None,
            say=lambda line: print(line, file=sys.stderr, flush=True)) -> KafkaDistribution:
    """The distribution for `version`: from `kafka_home` when given, else the Maven cache."""
    if kafka_home:
        return from_home(Path(kafka_home), version)
    if not version:
        raise ClusterConfigError("--system kafka needs a version (e.g. kafka:3.9.1, resolved with Maven), "
                                 "or an unpacked distribution in --kafka-home DIR or KAFKA_HOME")
    release = Release.parse(version)
    require_java()
    release.check_java(java_version())
    folder = (cache or cache_root()) / version
    marker = folder / MARKER
    if marker.exists() and marker.read_text() == recipe(release):
        return KafkaDistribution(version, str(folder / "libs"), release.scala)
    return resolve_with_maven(release, folder, say)


def from_home(home: Path, version: str | None) -> KafkaDistribution:
    """An unpacked distribution of any release (`libs/kafka_<scala>-<version>.jar` names both)."""
    libs = home / "libs"
    jars = sorted(libs.glob("kafka_2.*-*.jar")) if libs.is_dir() else []
    found = [m.groups() for j in jars if (m := BROKER_JAR.fullmatch(j.name))]
    if not found:
        raise ClusterConfigError(f"kafka home {home} has no libs/kafka_<scala>-VERSION.jar (e.g. "
                                 "kafka_2.13-3.9.1.jar): point --kafka-home (or KAFKA_HOME) at an unpacked Apache "
                                 "Kafka distribution")
    scala, found_version = found[0]
    if version and found_version != version:
        raise ClusterConfigError(f"kafka home {home} holds Kafka {found_version}, not {version}: give --system "
                                 f"kafka:{found_version}, or leave --kafka-home out to resolve {version} with Maven")
    release = Release.parse(found_version)
    require_java()
    release.check_java(java_version())
    return KafkaDistribution(found_version, str(libs.resolve()), scala)


def java_version(java: str | None = None) -> str | None:
    """The version `java -version` reports (e.g. 17.0.15), or None without a java on PATH."""
    java = java or shutil.which("java")
    if java is None:
        return None
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = JAVA_VERSION.search(done.stderr + done.stdout)
    return found.group(1) if found else None


def require_java() -> None:
    if shutil.which("java") is None:
        raise ClusterConfigError("stock Kafka needs Java (17 or newer) and `java` is not on PATH: "
                                 "install a JDK (Debian: apt-get install openjdk-17-jdk-headless)")


def artifacts(release: Release) -> list[tuple[str, str, str]]:
    """What Maven resolves for a release: its broker for its Scala build, then its Java 17 extras
    (declared in the pom, so they win over a dependency's own version of the same artifact)."""
    return [("org.apache.kafka", broker_artifact(release), release.text), *release.java17_extras()]


def broker_artifact(release: Release) -> str:
    return f"kafka_{release.scala}"


def recipe(release: Release) -> str:
    """The marker's text: the artifacts a cache folder was resolved from, one per line."""
    return "".join(f"{g}:{a}:{v}\n" for g, a, v in artifacts(release))


def pom(release: Release) -> str:
    body = "".join(f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version>"
                   f"</dependency>" for g, a, v in artifacts(release))
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            f'<groupId>fencepost</groupId><artifactId>kafka-{release}</artifactId><version>1</version>'
            f'<packaging>pom</packaging><dependencies>{body}</dependencies></project>\n')


def resolve_with_maven(release: Release, folder: Path, say) -> KafkaDistribution:
    version = release.text
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ClusterConfigError(f"kafka:{version} is resolved with Maven and `mvn` is not on PATH: install it "
                                 "(Debian: apt-get install maven), or give an unpacked distribution with "
                                 "--kafka-home DIR")
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=folder.parent))
    try:
        (work / "pom.xml").write_text(pom(release))
        say(f"resolving Apache Kafka {version} with Maven into {folder} (once) ...")
        started = time.monotonic()
        try:
            done = subprocess.run([mvn, "-B", "-q", "-U", "dependency:copy-dependencies",
                                   "-DoutputDirectory=libs", "-DincludeScope=runtime"],
                                  cwd=work, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ClusterConfigError(f"Maven did not resolve kafka:{version} within {MAVEN_TIMEOUT_S:g}s: "
                                     "is the Maven repository reachable?") from None
        if done.returncode != 0:
            raise ClusterConfigError(maven_failure(release, done.stdout + done.stderr))
        if not list((work / "libs").glob(f"{broker_artifact(release)}-*.jar")):
            raise ClusterConfigError(f"Maven finished but no {broker_artifact(release)} jar for {version} is in "
                                     f"{work / 'libs'}")
        (work / MARKER).write_text(recipe(release))
        if folder.exists():  # resolved from another recipe (an older fencepost), or half made
            shutil.rmtree(folder)
        os.replace(work, folder)
        say(f"resolved Apache Kafka {version} in {time.monotonic() - started:.1f}s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return KafkaDistribution(version, str(folder / "libs"), release.scala)


def maven_failure(release: Release, output: str) -> str:
    """Maven's failure, said as what to do."""
    version, artifact = release.text, broker_artifact(release)
    output = ANSI_ESCAPE.sub("", output)
    errors = [line.removeprefix("[ERROR] ").strip() for line in output.splitlines() if "[ERROR]" in line]
    first = next((e for e in errors if e), output.strip()[-500:])
    # Unreachable first: a failed download names the artifact it wanted, kafka_2.13's pom included.
    if UNREACHABLE.search(output):
        return (f"kafka:{version}: Maven could not reach its repository ({first}); check the network or "
                "the proxy in ~/.m2/settings.xml, or give an unpacked distribution with --kafka-home DIR")
    missing = re.search(r"(?:Could not find artifact|The POM for) (\S+)", output)
    if missing and f"{artifact}:jar:{version}" in missing.group(1) or f"{artifact}:pom:{version}" in output:
        return (f"kafka:{version}: Maven Central has no org.apache.kafka:{artifact}:{version}; "
                "give a released version (e.g. 0.10.2.2, 2.0.1, 3.9.1, 4.1.0)")
    if missing:
        return (f"kafka:{version}: a dependency could not be found in the Maven repository: {missing.group(1)} "
                f"({first}); try another version or give --kafka-home DIR")
    return f"kafka:{version}: Maven failed: {first}"
