"""The kafka system's options, checked against the release they are for.

`--truncation` names the protocol under test: `release` (the default) is the release's own;
`hw`, `kip101`, `kip279` and `kip320` are emulations through `inter.broker.protocol.version`
where the release can express them (clusters/systems/kafka/release.py holds the rules).
ZooKeeper mode exists before 4.0, KRaft from 3.3.

`flush = "lazy"` puts every broker's (and KRaft controller's) `log.dirs` on a lazy disk
(clusters/disks.py), with Kafka's own flush settings left as they are (it fsyncs on segment roll
and when told: `broker_config` `log.flush.interval.messages`), so that a power cut loses what
Kafka had not fsynced; `lazy_model` is the lazy filesystem's metadata model.

`elr` switches Eligible Leader Replicas (KIP-966) on or off where the release has them (KRaft,
4.0 and newer): the feature `eligible.leader.replicas.version` (1 or 0), set when the nodes'
storage is formatted (`kafka-storage format --feature`). Left out, the release decides: its
`kafka-storage version-mapping` says 0 on 4.0.x and 1 from 4.1 (ELR on by default for new
clusters from 4.1).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

from fencepost.clusters.errors import ClusterConfigError
from fencepost.clusters.lazyfs.mount import MODELS as LAZY_MODELS
from fencepost.clusters.modes import FLUSH_MODES
from fencepost.clusters.systems.kafka.release import OWN, TRUNCATIONS, Release

MODES = ("zk", "kraft")
WHOLE_NUMBERS = ("controllers", "min_insync_replicas", "session_timeout_ms", "replica_lag_time_max_ms",
                 "heap_mb", "hw_checkpoint_interval_ms")


@dataclass(frozen=True)
class KafkaOptions:
    version: str = ""
    kafka_home: str = ""
    libs: str = ""  # the resolved classpath folder; filled in once, then kept with the cluster's state
    scala: str = ""  # the Scala build of the broker jar, filled in with libs
    mode: str = ""  # "": zk before 4.0, kraft from 4.0
    controllers: int = 0  # KRaft: 0 = every broker is also a controller; N = N controller-only nodes
    truncation: str = OWN
    flush: str = "os"  # fsync: flush.messages=1 (every write fsynced before it is acknowledged); lazy: lazy disks
    lazy_model: str = "journal"  # the lazy filesystem's metadata model (flush = "lazy"): journal or strict
    elr: bool | None = None  # Eligible Leader Replicas (4.x, KRaft); None: the release's default
    min_insync_replicas: int = 2
    session_timeout_ms: int = 3000  # ZooKeeper session, or KRaft broker session
    replica_lag_time_max_ms: int = 5000
    hw_checkpoint_interval_ms: int = 5000
    heap_mb: int = 512
    broker_config: Mapping[str, str] = field(default_factory=dict)  # server.properties overrides, last word

    @property
    def release(self) -> Release:
        return Release.parse(self.version)

    @property
    def elr_on(self) -> bool | None:
        """Whether Eligible Leader Replicas are on (None where the release has none); only on checked options."""
        return self.release.elr_on(self.elr) if self.mode == "kraft" else None

    @property
    def inter_broker_protocol(self) -> str | None:
        """The IBP the brokers are told (None: the release's own); only on checked options."""
        return self.release.inter_broker_protocol(self.truncation, self.mode)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "broker_config": dict(self.broker_config)}

    @staticmethod
    def from_mapping(options: Mapping[str, Any]) -> KafkaOptions:
        known = {f.name for f in fields(KafkaOptions)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ClusterConfigError(f"the kafka system has no option {', '.join(map(repr, unknown))}; "
                                     f"its options are {', '.join(sorted(known))}")
        values = dict(options)
        for name in WHOLE_NUMBERS:
            value = values.get(name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise ClusterConfigError(f"kafka system option {name}={value!r}: give a whole number >= 0")
        config = values.get("broker_config") or {}
        if not isinstance(config, Mapping) or not all(isinstance(k, str) for k in config):
            raise ClusterConfigError(f"kafka system option broker_config={config!r}: give a table of "
                                     "server.properties names to values")
        values["broker_config"] = {k: _property_value(k, v) for k, v in config.items()}
        if values.get("elr") is not None and not isinstance(values["elr"], bool):
            raise ClusterConfigError(f"kafka system option elr={values['elr']!r}: give true or false (Eligible "
                                     "Leader Replicas on or off), or leave it out for the release's default")
        return KafkaOptions(**values)

    def checked(self, version: str) -> KafkaOptions:
        """With the version known: the mode filled in, and refused where the release cannot express it."""
        opts = KafkaOptions(**{**self.to_dict(), "version": version})
        release = opts.release
        if opts.truncation not in TRUNCATIONS:
            raise ClusterConfigError(f"truncation {opts.truncation!r}: choose one of {', '.join(TRUNCATIONS)} "
                                     f"({OWN}: the release's own protocol)")
        if opts.flush not in FLUSH_MODES:
            raise ClusterConfigError(f"flush {opts.flush!r} on stock Kafka: choose one of {', '.join(FLUSH_MODES)} "
                                     "(lazy: the data on the lazy filesystem, so that a power cut loses what was "
                                     "not fsynced)")
        if opts.lazy_model not in LAZY_MODELS:
            raise ClusterConfigError(f"lazy_model {opts.lazy_model!r}: choose {' or '.join(LAZY_MODELS)} (the "
                                     "lazy filesystem's metadata model, docs/LAZYFS.md)")
        mode = opts.mode or release.default_mode
        if mode not in MODES:
            raise ClusterConfigError(f"mode {mode!r}: choose zk (ZooKeeper, before 4.0) or kraft (from 3.3)")
        if mode == "zk" and not release.has_zookeeper:
            raise ClusterConfigError(f"Kafka {version} has no ZooKeeper mode (removed in 4.0): use mode=kraft, "
                                     "or a release before 4.0 for ZooKeeper")
        if mode == "kraft" and not release.has_kraft:
            raise ClusterConfigError(f"Kafka {version} has no production KRaft mode (KRaft is production ready from "
                                     "3.3, KIP-833; before it a preview): use mode=zk, or a release from 3.3")
        if mode == "zk" and opts.controllers:
            raise ClusterConfigError("controllers= is a KRaft option; ZooKeeper mode runs one ZooKeeper node")
        if not 1 <= opts.min_insync_replicas:
            raise ClusterConfigError("min_insync_replicas: give at least 1")
        release.inter_broker_protocol(opts.truncation, mode)  # refuses what the release cannot express
        if opts.elr is not None and (mode != "kraft" or not release.has_elr):
            raise ClusterConfigError(
                f"elr={'true' if opts.elr else 'false'}: Eligible Leader Replicas (KIP-966) exist in KRaft mode "
                f"from Kafka 4.0; kafka {version} in {'ZooKeeper' if mode == 'zk' else 'KRaft'} mode has none: "
                "leave elr out, or use a 4.x release")
        return KafkaOptions(**{**opts.to_dict(), "mode": mode})

    def protocol_description(self) -> str:
        """e.g. "kafka 0.11.0.3, its own protocol (KIP-101 leader epochs)"; only on checked options."""
        return f"kafka {self.version}, {self.release.describe_protocol(self.truncation)}"


def _property_value(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        text = str(value)
        if "\n" not in text:
            return text
    raise ClusterConfigError(f"kafka broker_config {name}={value!r}: give a single-line string, number or boolean")
