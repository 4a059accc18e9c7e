"""Apache Kafka releases as fencepost runs them: which Scala build, which extra jars on Java 17,
which control-plane modes, which replication protocol a release has of its own, and which older
protocols it can emulate through `inter.broker.protocol.version` (IBP).

The rules are facts about the releases, each checked on this project's machines (docs/KAFKA.md,
"Releases"): a table here rather than a guess at run time.

- **Scala build**: the one the release's own downloads recommended: 2.11 before 1.0, 2.12 from
  1.0 to 2.3, 2.13 from 2.4 (the first with a 2.13 build; 4.x has only 2.13).
- **Java 17 extras**: 0.10.x and 0.11.x call `javax.xml.bind.DatatypeConverter` (for the
  cluster id), gone from the JDK since 11: `jaxb-api` and `javax.activation-api` go on their
  classpath. ZooKeeper clients 3.4.11 to
  3.5.7 cannot reach a server on Java 14 or newer (ZOOKEEPER-3779: the address's changed
  `toString` is parsed as a host name), which 2.0.0 to 2.5.0 depend on: they get ZooKeeper
  3.5.9 instead (client and the `zk` node's server; the broker's replication code is untouched).
  From 1.1 the broker's log4j backend is no longer a runtime dependency: the one its
  distribution shipped is added (log4j 1.2.17 before 3.0, reload4j in 3.x, log4j2's slf4j
  binding in 4.x).
- **Java**: 4.x brokers need Java 17 or newer (KIP-750); every release from 0.10.2.0 on runs
  on Java 17 with the extras above (measured: bench/kafka_releases.py), and on Java 25 as far
  as it was tried (0.10.2.2). A Java older than a release needs is refused, naming both.
- **Modes**: ZooKeeper in every release before 4.0; KRaft from 3.3, when it became production
  ready (KIP-833; the earlier previews are refused).
- **Own protocol** (follower truncation): before 0.11 to the high watermark (KAFKA-1211 open);
  0.11 to 1.1 by OffsetsForLeaderEpoch v0 (KIP-101); 2.0 with the epoch in the answer (KIP-279);
  from 2.1 with the current leader epoch on fetch (KIP-320).
- **Eligible Leader Replicas** (KIP-966): the feature `eligible.leader.replicas.version` exists
  from 4.0; a new cluster is formatted with 0 on 4.0.x and 1 from 4.1 (what each release's
  `kafka-storage version-mapping` prints), and `kafka-storage format --feature
  eligible.leader.replicas.version=N` sets it either way.
- **Emulations** (ZooKeeper mode only: KRaft refuses an IBP below 3.0): `hw` -> 0.11.0-IV1,
  `kip101` -> 0.11.0-IV2, `kip279` -> 2.0-IV1, `kip320` -> 2.1-IV2, each on releases that know
  that IBP (an IBP is known from the release that introduced it on). A release's own protocol
  needs no emulation: `release` sets no IBP.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from fencepost.clusters.errors import ClusterConfigError
from fencepost.clusters.modes import RELEASE_PROTOCOL, TRUNCATIONS

RELEASE_TEXT = re.compile(r"(\d+)\.(\d+)\.(\d+)(?:\.(\d+))?")
FIRST = (0, 10, 2, 0)
OWN = RELEASE_PROTOCOL  # --truncation: the release's own protocol, no inter.broker.protocol.version
# truncation -> (the IBP that emulates it, the first release that knows that IBP)
EMULATIONS = {"hw": ("0.11.0-IV1", (0, 11, 0)), "kip101": ("0.11.0-IV2", (0, 11, 0)),
              "kip279": ("2.0-IV1", (2, 0, 0)), "kip320": ("2.1-IV2", (2, 1, 0))}
# what each protocol fixed: truncation -> (the fix's name, the release line that brought it)
PROTOCOL_NAMES = {"hw": "high-watermark truncation (before KIP-101)", "kip101": "KIP-101 leader epochs",
                  "kip279": "KIP-279 epoch-aware truncation", "kip320": "KIP-320 leader-epoch fencing"}
JAXB = (("javax.xml.bind", "jaxb-api", "2.3.1"), ("javax.activation", "javax.activation-api", "1.2.0"))
ZOOKEEPER_FOR_JAVA_17 = ("org.apache.zookeeper", "zookeeper", "3.5.9")
LOG4J_1 = (("log4j", "log4j", "1.2.17"), ("org.slf4j", "slf4j-log4j12", "1.7.30"))
RELOAD4J = (("org.slf4j", "slf4j-reload4j", "1.7.36"),)
LOG4J_2 = (("org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3"),)
KRAFT_FROM = (3, 3, 0)
ZOOKEEPER_UNTIL = (4, 0, 0)
ELR_FROM = (4, 0, 0)  # eligible.leader.replicas.version exists (KIP-966 part 1)
ELR_DEFAULT_FROM = (4, 1, 0)  # a new cluster's format sets it to 1 (`kafka-storage version-mapping`)

Artifact = tuple[str, str, str]


@dataclass(frozen=True, order=True)
class Release:
    """A release number: three parts from 1.0 on, four before (0.10.2.2)."""
    parts: tuple[int, ...]
    text: str = field(compare=False)

    @staticmethod
    def parse(text: str) -> Release:
        found = RELEASE_TEXT.fullmatch(text)
        if not found or (text.startswith("0.") != (found.group(4) is not None)):
            raise ClusterConfigError(f"kafka version {text!r} is not an Apache Kafka release number: give "
                                     "--system kafka:X.Y.Z (e.g. kafka:3.9.1, kafka:4.1.0), or four parts before "
                                     "1.0 (kafka:0.10.2.2)")
        release = Release(tuple(int(p) for p in found.groups() if p is not None), text)
        if release.parts < FIRST:
            raise ClusterConfigError(f"kafka {text} is older than 0.10.2.0, the first release fencepost runs "
                                     "(its clients need ApiVersions and its brokers CreateTopics): give 0.10.2.0 or "
                                     "newer")
        return release

    def __str__(self) -> str:
        return self.text

    def at_least(self, *parts: int) -> bool:
        return self.parts >= parts

    @property
    def major(self) -> int:
        return self.parts[0]

    @property
    def scala(self) -> str:
        if not self.at_least(1, 0, 0):
            return "2.11"
        return "2.12" if not self.at_least(2, 4, 0) else "2.13"

    @property
    def java_minimum(self) -> int:
        """The oldest Java major version the release's brokers run on."""
        return 17 if self.major >= 4 else 8

    def check_java(self, version: str | None) -> None:
        """ClusterConfigError when the Java that `java -version` reports is too old for this release."""
        major = java_major(version)
        if major is not None and major < self.java_minimum:
            raise ClusterConfigError(f"kafka {self} needs Java {self.java_minimum} or newer and `java` on PATH is "
                                     f"{version}: install a newer JDK "
                                     "(Debian: apt-get install openjdk-17-jdk-headless) "
                                     "and put its java first on PATH")

    @property
    def has_zookeeper(self) -> bool:
        return self.parts < ZOOKEEPER_UNTIL

    @property
    def has_kraft(self) -> bool:
        return self.at_least(*KRAFT_FROM)

    @property
    def has_elr(self) -> bool:
        return self.at_least(*ELR_FROM)

    def elr_on(self, wanted: bool | None) -> bool | None:
        """Whether a new KRaft cluster of this release has Eligible Leader Replicas on, given the
        `elr` option (None: the release's default); None where the release has none."""
        if not self.has_elr:
            return None
        return self.at_least(*ELR_DEFAULT_FROM) if wanted is None else wanted

    @property
    def default_mode(self) -> str:
        return "zk" if self.has_zookeeper else "kraft"

    @property
    def own_protocol(self) -> str:
        """The follower truncation this release does of its own (a key of PROTOCOL_NAMES)."""
        if not self.at_least(0, 11, 0):
            return "hw"
        if not self.at_least(2, 0, 0):
            return "kip101"
        return "kip279" if not self.at_least(2, 1, 0) else "kip320"

    def java17_extras(self) -> tuple[Artifact, ...]:
        """Jars the release needs beside its own dependencies to run on Java 17, logging included."""
        extras: list[Artifact] = []
        if not self.at_least(1, 0, 0):
            extras += JAXB
        if self.at_least(2, 0, 0) and not self.at_least(2, 5, 1):
            extras.append(ZOOKEEPER_FOR_JAVA_17)
        if self.at_least(1, 1, 0):
            extras += LOG4J_1 if self.major < 3 else RELOAD4J if self.major == 3 else LOG4J_2
        return tuple(extras)

    def inter_broker_protocol(self, truncation: str, mode: str) -> str | None:
        """The IBP that makes this release run `truncation` (None: its own); ClusterConfigError where
        the release cannot express it, saying why and what to do."""
        if truncation == OWN:
            return None
        if truncation not in EMULATIONS:
            raise ClusterConfigError(f"truncation {truncation!r}: choose one of {', '.join(TRUNCATIONS)}")
        protocol, since = EMULATIONS[truncation]
        if mode == "kraft":
            raise ClusterConfigError(
                f"truncation {truncation!r} needs inter.broker.protocol.version {protocol}, which KRaft refuses "
                f"(3.0 or newer only): leave --truncation out (kafka {self}'s own protocol) on KRaft, or use a "
                "release before 4.0 in ZooKeeper mode (mode=zk) for hw, kip101, kip279 and kip320")
        if not self.at_least(*since):
            own, first = self.own_protocol, ".".join(map(str, since))
            hint = (f"kafka {self}'s own protocol is already {own}: leave --truncation out" if own == truncation
                    else f"kafka {self}'s own protocol is {own}; for {truncation} use a release from {first}")
            raise ClusterConfigError(
                f"truncation {truncation!r} needs inter.broker.protocol.version {protocol}, which kafka {self} "
                f"does not know (it came in {first}): {hint}")
        return protocol

    def describe_protocol(self, truncation: str) -> str:
        """How a report names the protocol under test, e.g. "its own protocol (KIP-101 leader epochs)"."""
        if truncation == OWN:
            return f"its own protocol ({PROTOCOL_NAMES[self.own_protocol]})"
        protocol = EMULATIONS[truncation][0]
        return f"{PROTOCOL_NAMES[truncation]}, emulated with inter.broker.protocol.version {protocol}"


def java_major(version: str | None) -> int | None:
    """17 for "17.0.15", 8 for "1.8.0_392"; None when unknown."""
    if not version:
        return None
    found = re.match(r"(\d+)(?:\.(\d+))?", version)
    if found is None:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major
