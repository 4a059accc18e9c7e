"""The Kafka jar cache is verified (clusters/systems/kafka/dist.py, docs/KAFKA.md "The jars"):
Maven is asked for strict checksums, a finished cache folder holds `manifest.json` with each
jar's SHA-256 and size, and every use checks the jars against it, refusing, with the fix, a
folder whose jars were changed, added or removed, whose manifest is missing (a folder from
before this check, or an interrupted copy) or unreadable, or that has no marker at all.

Fast tests run `resolve` on a synthetic cache made by a stand-in `mvn` (a shell script on PATH
that writes a few jars where Maven would, and records its arguments): no network, no Java
(a stand-in `java` too). The real test (java, slow) resolves the smallest release, 0.10.2.2
(15 jars, 16 MB), with Maven into a tmp cache, checks the manifest against hashes computed
here, times the check, and tampers with a copy.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from fencepost.clusters.errors import ClusterConfigError
from fencepost.clusters.systems.kafka import dist

VERSION = "0.10.2.2"  # the smallest release: 15 jars
JARS = {"kafka_2.11-0.10.2.2.jar": b"PK broker " * 100, "kafka-clients-0.10.2.2.jar": b"PK clients " * 50,
        "jaxb-api-2.3.1.jar": b"PK jaxb " * 20}
FAKE_MAVEN = """#!/bin/sh
echo "$@" >> "{log}"
case " $* " in *" --strict-checksums "*|*" -C "*) ;; *) echo "[ERROR] no strict checksums" ; exit 1 ;; esac
/bin/mkdir -p libs
{writes}
"""


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def stand_ins(folder: Path, maven: bool = True) -> tuple[str, Path]:
    """A PATH with a `java` that knows no version and, with `maven`, an `mvn` that writes JARS."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "java").write_text("#!/bin/sh\nexit 1\n")
    log = folder / "mvn-calls.txt"
    if maven:
        writes = "\n".join(f"printf '%s' '{data.decode()}' > libs/{name}" for name, data in JARS.items())
        (folder / "mvn").write_text(FAKE_MAVEN.format(log=log, writes=writes))
    for tool in folder.iterdir():
        tool.chmod(0o755)
    return str(folder), log


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """A cache folder resolved by the stand-in Maven; afterwards PATH has no `mvn`, so any
    second resolution would fail with "`mvn` is not on PATH" instead of repairing the cache."""
    path, log = stand_ins(tmp_path / "bin")
    monkeypatch.setenv("PATH", path)
    root = tmp_path / "cache"
    found = dist.resolve(VERSION, cache=root, say=lambda line: None)
    assert found.libs == str(root / VERSION / "libs")
    monkeypatch.setenv("PATH", stand_ins(tmp_path / "bin-without-mvn", maven=False)[0])
    return root


def refused(root: Path, *words: str) -> str:
    with pytest.raises(ClusterConfigError) as e:
        dist.resolve(VERSION, cache=root, say=lambda line: None)
    message = str(e.value)
    folder = root / VERSION
    assert str(folder) in message and "rm -r" in message and "resolves kafka:0.10.2.2 again" in message, message
    assert "`mvn` is not on PATH" not in message, message  # refused by the check, not by a re-resolution
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"
    return message


# -- synthetic caches: the manifest, tampering, missing pieces ----------------------------------

def test_maven_is_asked_for_strict_checksums_and_the_manifest_names_every_jar(tmp_path, monkeypatch):
    path, log = stand_ins(tmp_path / "bin")
    monkeypatch.setenv("PATH", path)
    found = dist.resolve(VERSION, cache=tmp_path / "cache", say=lambda line: None)
    assert "--strict-checksums" in log.read_text().split() or "-C" in log.read_text().split()
    folder = tmp_path / "cache" / VERSION
    manifest = json.loads((folder / "manifest.json").read_text())
    libs = Path(found.libs)
    assert manifest["jars"] == {p.name: {"sha256": sha256(p), "size": p.stat().st_size} for p in libs.iterdir()}
    assert sorted(manifest["jars"]) == sorted(JARS)
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no temporary file left
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [VERSION]  # no work folder left


def test_an_intact_cache_is_used_again_without_maven(cache):
    found = dist.resolve(VERSION, cache=cache, say=lambda line: None)
    assert found.libs == str(cache / VERSION / "libs")


def test_a_jar_whose_bytes_changed_is_refused_naming_it(cache):
    jar = cache / VERSION / "libs" / "kafka-clients-0.10.2.2.jar"
    data = bytearray(jar.read_bytes())
    data[5] ^= 0x01  # one bit, same size
    jar.write_bytes(bytes(data))
    refused(cache, "libs/kafka-clients-0.10.2.2.jar changed")


def test_a_changed_jar_with_its_old_size_and_mtime_is_still_refused(cache):
    """Every use hashes every jar: a copy that kept size and mtime (cp -p, touch -r) is caught too."""
    jar = cache / VERSION / "libs" / "kafka_2.11-0.10.2.2.jar"
    before = jar.stat()
    jar.write_bytes(b"X" * before.st_size)
    os.utime(jar, ns=(before.st_atime_ns, before.st_mtime_ns))
    refused(cache, "libs/kafka_2.11-0.10.2.2.jar changed")


def test_an_added_jar_is_refused_naming_it(cache):
    (cache / VERSION / "libs" / "evil-1.0.jar").write_bytes(b"PK evil")
    refused(cache, "libs/evil-1.0.jar is not in the manifest (added)")


def test_a_removed_jar_is_refused_naming_it(cache):
    (cache / VERSION / "libs" / "jaxb-api-2.3.1.jar").unlink()
    refused(cache, "libs/jaxb-api-2.3.1.jar is missing")


def test_a_cache_without_a_manifest_is_refused_as_made_before_the_check_or_interrupted(cache):
    """What a cache made by an older fencepost looks like: the marker, the jars, no manifest."""
    (cache / VERSION / "manifest.json").unlink()
    refused(cache, "no manifest.json", "from before jars were checked", "interrupted")
    assert (cache / VERSION / "libs" / "kafka_2.11-0.10.2.2.jar").exists()  # refused, not deleted


def test_a_folder_without_its_marker_is_refused_not_resolved_over(cache):
    """A half-made folder (jars, no marker): today's code resolved it again silently."""
    (cache / VERSION / "resolved").unlink()
    refused(cache, "no resolved marker", "interrupted")
    assert (cache / VERSION / "libs" / "kafka_2.11-0.10.2.2.jar").exists()


@pytest.mark.parametrize("text", [b"", b"{not json", b"[]", b'{"format": 1, "jars": []}', b"\xff\xfe"])
def test_a_damaged_manifest_is_refused(cache, text):
    (cache / VERSION / "manifest.json").write_bytes(text)
    refused(cache, "manifest.json")


def test_a_manifest_of_other_jars_is_refused(cache):
    """A manifest edited to match planted jars must at least name this release's recipe."""
    path = cache / VERSION / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["recipe"] = ["org.apache.kafka:kafka_2.11:0.10.2.1"]
    path.write_text(json.dumps(manifest))
    refused(cache, "manifest.json is not the one fencepost writes")


def test_a_checksum_maven_refused_is_said_as_such():
    release = dist.Release.parse(VERSION)
    output = ("[ERROR] Failed to execute goal on project kafka-0.10.2.2: Could not resolve dependencies: "
              "Could not transfer artifact org.apache.kafka:kafka-clients:jar:0.10.2.2 from/to central: "
              "Checksum validation failed, expected 0123 but is 4567")
    message = dist.maven_failure(release, output)
    assert "checksum does not match" in message and "could not reach" not in message, message


# -- a real cache, resolved by Maven ---------------------------------------------------------

@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.java
def test_a_real_release_resolved_by_maven_is_verified_and_tampering_is_caught(tmp_path):
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            pytest.skip(f"stock Kafka needs {tool} (scripts/provision installs it)")
    root = tmp_path / "cache"
    found = dist.resolve(VERSION, cache=root, say=lambda line: None)
    libs = Path(found.libs)
    manifest = json.loads((root / VERSION / "manifest.json").read_text())
    assert manifest["jars"] == {p.name: {"sha256": sha256(p), "size": p.stat().st_size} for p in libs.iterdir()}
    assert len(manifest["jars"]) >= 10 and f"kafka_2.11-{VERSION}.jar" in manifest["jars"]
    started = time.perf_counter()
    assert dist.resolve(VERSION, cache=root, say=lambda line: None) == found  # verified, no Maven
    seconds = time.perf_counter() - started
    size = sum(p.stat().st_size for p in libs.iterdir())
    print(f"verifying {len(manifest['jars'])} jars, {size / 1e6:.1f} MB: {seconds:.3f} s")
    assert seconds < 5.0  # ~0.02 s measured; a bound a loaded machine keeps
    jar = libs / f"kafka-clients-{VERSION}.jar"
    data = bytearray(jar.read_bytes())
    data[len(data) // 2] ^= 0xFF
    jar.write_bytes(bytes(data))
    with pytest.raises(ClusterConfigError, match=rf"libs/kafka-clients-{VERSION}\.jar changed"):
        dist.resolve(VERSION, cache=root, say=lambda line: None)
