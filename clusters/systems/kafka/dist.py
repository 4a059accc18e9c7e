"""Where stock Apache Kafka's jars come from (DESIGN.md §4.2).

Either Maven resolves `org.apache.kafka:kafka_2.13:VERSION` with its runtime
dependencies and a logging backend (`mvn dependency:copy-dependencies` on a
generated pom) into `~/.cache/fencepost/kafka/VERSION/libs`, once: a finished
cache folder holds a `resolved` marker and is never resolved again; a failed or
interrupted resolution leaves nothing behind. Or an unpacked distribution
(`KAFKA_HOME` or `--kafka-home`) supplies `libs/`. Missing Java or Maven, an
unknown version and an unreachable repository are ClusterConfigErrors (exit 254)
that say what to do.
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

VERSION = re.compile(r"\d+\.\d+\.\d+(-[A-Za-z0-9.]+)?")
MARKER = "resolved"
MAVEN_TIMEOUT_S = 900.0
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")  # Maven colours its [ERROR] lines even in batch mode
# Maven's words for a repository it could not reach; without network on a fresh machine it
# cannot even fetch the dependency plugin, and says "No plugin found for prefix".
UNREACHABLE = re.compile(r"Could not transfer|transfer failed|Connect to |Connection refused|resolve host|"
                         r"UnknownHost|Network is unreachable|timed out|offline mode|"
                         r"No plugin found for prefix", re.I)

# A logging backend per line: Kafka 3.x logs through slf4j 1.7 to log4j 1 (reload4j, compile-only
# in its pom); 4.x ships log4j2 but no slf4j binding for it.
LOGGING_3 = (("org.slf4j", "slf4j-reload4j", "1.7.36"),)
LOGGING_4 = (("org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3"),)


@dataclass(frozen=True)
class KafkaDistribution:
    version: str
    libs: str  # a folder of jars: the classpath is libs/*

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def classpath(self) -> str:
        return f"{self.libs}/*"


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fencepost" / "kafka"


def check_version(version: str) -> str:
    if not VERSION.fullmatch(version):
        raise ClusterConfigError(f"kafka version {version!r} is not a version like 3.9.1 or 4.1.0: "
                                 "give --system kafka:MAJOR.MINOR.PATCH")
    return version


def resolve(version: str | None, kafka_home: str | None = None, cache: Path | None = None,
            say=lambda line: print(line, file=sys.stderr, flush=True)) -> KafkaDistribution:
    """The distribution for `version`: from `kafka_home` when given, else the Maven cache."""
    if kafka_home:
        return from_home(Path(kafka_home), version)
    if not version:
        raise ClusterConfigError("--system kafka needs a version (e.g. kafka:3.9.1, resolved with Maven), "
                                 "or an unpacked distribution in --kafka-home DIR or KAFKA_HOME")
    check_version(version)
    require_java()
    folder = (cache or cache_root()) / version
    if (folder / MARKER).exists():
        return KafkaDistribution(version, str(folder / "libs"))
    return resolve_with_maven(version, folder, say)


def from_home(home: Path, version: str | None) -> KafkaDistribution:
    libs = home / "libs"
    jars = sorted(libs.glob("kafka_2.*-*.jar")) if libs.is_dir() else []
    found = [m.group(1) for j in jars if (m := re.fullmatch(r"kafka_2\.\d+-(\d+\.\d+\.\d+[^-]*)\.jar", j.name))]
    if not found:
        raise ClusterConfigError(f"kafka home {home} has no libs/kafka_2.13-VERSION.jar: point --kafka-home "
                                 "(or KAFKA_HOME) at an unpacked Apache Kafka distribution")
    if version and found[0] != version:
        raise ClusterConfigError(f"kafka home {home} holds Kafka {found[0]}, not {version}: give --system "
                                 f"kafka:{found[0]}, or leave --kafka-home out to resolve {version} with Maven")
    require_java()
    return KafkaDistribution(found[0], str(libs.resolve()))


def require_java() -> None:
    if shutil.which("java") is None:
        raise ClusterConfigError("stock Kafka needs Java (17 or newer) and `java` is not on PATH: "
                                 "install a JDK (Debian: apt-get install openjdk-17-jdk-headless)")


def pom(version: str) -> str:
    logging = LOGGING_4 if int(version.split(".")[0]) >= 4 else LOGGING_3
    deps = [("org.apache.kafka", "kafka_2.13", version), *logging]
    body = "".join(f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version>"
                   f"</dependency>" for g, a, v in deps)
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            f'<groupId>fencepost</groupId><artifactId>kafka-{version}</artifactId><version>1</version>'
            f'<packaging>pom</packaging><dependencies>{body}</dependencies></project>\n')


def resolve_with_maven(version: str, folder: Path, say) -> KafkaDistribution:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ClusterConfigError(f"kafka:{version} is resolved with Maven and `mvn` is not on PATH: install it "
                                 "(Debian: apt-get install maven), or give an unpacked distribution with "
                                 "--kafka-home DIR")
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=folder.parent))
    try:
        (work / "pom.xml").write_text(pom(version))
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
            raise ClusterConfigError(maven_failure(version, done.stdout + done.stderr))
        if not list((work / "libs").glob("kafka_2.13-*.jar")):
            raise ClusterConfigError(f"Maven finished but no kafka_2.13 jar for {version} is in {work / 'libs'}")
        (work / MARKER).write_text(f"{version}\n")
        if folder.exists():  # a half-made folder from an older, interrupted layout
            shutil.rmtree(folder)
        os.replace(work, folder)
        say(f"resolved Apache Kafka {version} in {time.monotonic() - started:.1f}s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return KafkaDistribution(version, str(folder / "libs"))


def maven_failure(version: str, output: str) -> str:
    """Maven's failure, said as what to do."""
    output = ANSI_ESCAPE.sub("", output)
    errors = [line.removeprefix("[ERROR] ").strip() for line in output.splitlines() if "[ERROR]" in line]
    first = next((e for e in errors if e), output.strip()[-500:])
    # Unreachable first: a failed download names the artifact it wanted, kafka_2.13's pom included.
    if UNREACHABLE.search(output):
        return (f"kafka:{version}: Maven could not reach its repository ({first}); check the network or "
                "the proxy in ~/.m2/settings.xml, or give an unpacked distribution with --kafka-home DIR")
    missing = re.search(r"(?:Could not find artifact|The POM for) (\S+)", output)
    if missing and f"kafka_2.13:jar:{version}" in missing.group(1) or "kafka_2.13:pom:" + version in output:
        return (f"kafka:{version}: Maven Central has no org.apache.kafka:kafka_2.13:{version}; "
                "give a released version (e.g. 3.9.1, 4.1.0)")
    if missing:
        return (f"kafka:{version}: a dependency could not be found in the Maven repository: {missing.group(1)} "
                f"({first}); try another version or give --kafka-home DIR")
    return f"kafka:{version}: Maven failed: {first}"
