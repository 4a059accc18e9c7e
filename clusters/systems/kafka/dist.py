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

The jars are verified: Maven downloads with strict checksums (`--strict-checksums`: a jar whose
bytes do not match the repository's checksum fails the resolution), and a finished folder holds
`manifest.json`, each jar's SHA-256 and size, written atomically with the marker once Maven is
done. Every use hashes every jar again (a 3.9.1 folder, 46 MB, in about 0.05 s) and refuses a
folder whose jars differ from its manifest (a jar changed, added or removed) or that has no
manifest (an interrupted copy, or a folder made before jars were checked), saying to delete the
folder so the next run resolves it again.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from fencepost.clusters.errors import ClusterConfigError
from fencepost.clusters.systems.kafka.release import Release

MARKER = "resolved"
MANIFEST = "manifest.json"  # each jar's SHA-256 and size, written once the resolution is complete
MANIFEST_FORMAT = 1
LIBS = "libs"
JAVA_VERSION = re.compile(r'version "([^"]+)"')
JAVA_TIMEOUT_S = 20.0
MAVEN_TIMEOUT_S = 900.0
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")  # Maven colours its [ERROR] lines even in batch mode
# Maven's words for a repository it could not reach; without network on a fresh machine it
# cannot even fetch the dependency plugin, and says "No plugin found for prefix".
UNREACHABLE = re.compile(r"Could not transfer|transfer failed|Connect to |Connection refused|resolve host|"
                         r"UnknownHost|Network is unreachable|timed out|offline mode|"
                         r"No plugin found for prefix", re.I)

CHECKSUM_FAILED = re.compile(r"Checksum validation failed|checksum failed|ChecksumFailure", re.I)
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
    if cached_recipe(folder) == recipe(release):
        verify_cache(folder, release)
        return KafkaDistribution(version, str(folder / LIBS), release.scala)
    if (folder.exists() or folder.is_symlink()) and cached_recipe(folder) is None:
        raise ClusterConfigError(tampered(folder, release, f"it has no {MARKER} marker: a resolution was "
                                                           "interrupted or the folder was made by hand"))
    return resolve_with_maven(release, folder, say)


def cached_recipe(folder: Path) -> str | None:
    """The recipe a cache folder's marker names; None without a readable marker."""
    try:
        return (folder / MARKER).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def tampered(folder: Path, release: Release, why: str) -> str:
    """The refusal of a cache folder that cannot be trusted, with the fix."""
    return (f"the Kafka {release} jar cache {folder} cannot be trusted: {why}. "
            f"Delete it (rm -r {shlex.quote(str(folder))}) and "
            f"run again: fencepost then resolves kafka:{release} again with Maven, checksums checked "
            "(docs/KAFKA.md, \"The jars\")")


def jar_digests(libs: Path) -> dict[str, dict[str, object]]:
    """Every file in `libs` -> its SHA-256 and size (a folder or a link to one counts as a file
    that cannot be read, so it never matches a manifest)."""
    found: dict[str, dict[str, object]] = {}
    for path in sorted(libs.iterdir()):
        try:
            with open(path, "rb") as f:
                digest = hashlib.file_digest(f, "sha256").hexdigest()
                size = os.fstat(f.fileno()).st_size
        except OSError as e:
            digest, size = f"unreadable ({e.strerror})", -1
        found[path.name] = {"sha256": digest, "size": size}
    return found


def manifest(release: Release, libs: Path) -> dict[str, object]:
    return {"format": MANIFEST_FORMAT, "kafka": release.text, "recipe": recipe(release).splitlines(),
            "jars": jar_digests(libs)}


def verify_cache(folder: Path, release: Release) -> None:
    """Refuse (ClusterConfigError with the fix) a cache folder whose jars are not exactly those its
    manifest names with the bytes it names, or that has no manifest."""
    path = folder / MANIFEST
    try:
        recorded = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise ClusterConfigError(tampered(folder, release, f"it has no {MANIFEST} (the SHA-256 of each jar): "
                                                           "it was made by a fencepost from before jars were "
                                                           "checked, or its resolution was interrupted")) from None
    except (OSError, ValueError) as e:
        raise ClusterConfigError(tampered(folder, release, f"its {MANIFEST} cannot be read ({e})")) from None
    jars = recorded.get("jars") if isinstance(recorded, dict) else None
    if (not isinstance(jars, dict) or recorded.get("format") != MANIFEST_FORMAT
            or recorded.get("recipe") != recipe(release).splitlines()):
        raise ClusterConfigError(tampered(folder, release, f"its {MANIFEST} is not the one fencepost writes for "
                                                           f"kafka:{release}"))
    libs = folder / LIBS
    try:
        found = jar_digests(libs)
    except OSError as e:
        raise ClusterConfigError(
            tampered(folder, release, f"its {LIBS} folder cannot be read ({e.strerror})")) from None
    problems = [f"{LIBS}/{name} is not in the manifest (added)" for name in sorted(set(found) - set(jars))]
    problems += [f"{LIBS}/{name} is missing" for name in sorted(set(jars) - set(found))]
    problems += [f"{LIBS}/{name} changed (SHA-256 {found[name]['sha256']}, size {found[name]['size']}; the "
                 f"manifest says {_recorded(jars[name])})"
                 for name in sorted(set(found) & set(jars)) if found[name] != jars[name]]
    if problems:
        more = f" and {len(problems) - 3} more" if len(problems) > 3 else ""
        raise ClusterConfigError(tampered(folder, release, "its jars are not the ones Maven resolved: "
                                                           + "; ".join(problems[:3]) + more))


def _recorded(entry: object) -> str:
    if isinstance(entry, dict):
        return f"SHA-256 {entry.get('sha256')}, size {entry.get('size')}"
    return repr(entry)[:80]


def write_atomically(path: Path, data: bytes) -> None:
    """`path` holds `data` whole or is left as it was: a temporary file, fsynced, renamed."""
    tmp = path.with_name(f".{path.name}.partial")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


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
            done = subprocess.run([mvn, "-B", "-q", "-U", "--strict-checksums", "dependency:copy-dependencies",
                                   f"-DoutputDirectory={LIBS}", "-DincludeScope=runtime"],
                                  cwd=work, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ClusterConfigError(f"Maven did not resolve kafka:{version} within {MAVEN_TIMEOUT_S:g}s: "
                                     "is the Maven repository reachable?") from None
        if done.returncode != 0:
            raise ClusterConfigError(maven_failure(release, done.stdout + done.stderr))
        if not list((work / LIBS).glob(f"{broker_artifact(release)}-*.jar")):
            raise ClusterConfigError(f"Maven finished but no {broker_artifact(release)} jar for {version} is in "
                                     f"{work / LIBS}")
        # the manifest once Maven is done, then the marker: a folder is whole with both, and the
        # work folder becomes the cache folder in one rename
        write_atomically(work / MANIFEST, json.dumps(manifest(release, work / LIBS), indent=1).encode() + b"\n")
        write_atomically(work / MARKER, recipe(release).encode())
        if folder.exists():  # resolved from another recipe (an older fencepost)
            shutil.rmtree(folder)
        os.replace(work, folder)
        _fsync_folder(folder.parent)
        say(f"resolved Apache Kafka {version} in {time.monotonic() - started:.1f}s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return KafkaDistribution(version, str(folder / LIBS), release.scala)


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def maven_failure(release: Release, output: str) -> str:
    """Maven's failure, said as what to do."""
    version, artifact = release.text, broker_artifact(release)
    output = ANSI_ESCAPE.sub("", output)
    errors = [line.removeprefix("[ERROR] ").strip() for line in output.splitlines() if "[ERROR]" in line]
    first = next((e for e in errors if e), output.strip()[-500:])
    # A checksum refused first (Maven says it "could not transfer" that artifact too), then unreachable:
    # a failed download names the artifact it wanted, kafka_2.13's pom included.
    if CHECKSUM_FAILED.search(output):
        return (f"kafka:{version}: Maven refused a download whose checksum does not match the repository's "
                f"({first}): the download was cut or something between altered it; run again, and if it "
                "persists check the mirror or proxy in ~/.m2/settings.xml, or give an unpacked distribution "
                "with --kafka-home DIR")
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
