"""The kafka system's options, checked, and what the truncation switch means for Kafka.

`--truncation` maps to `inter.broker.protocol.version` (DESIGN.md §4.2): `hw` ->
0.11.0-IV1 (followers truncate to their high watermark, as before KIP-101),
`kip101` -> 0.11.0-IV2, `kip279` -> 2.0-IV1, `kip320` -> the version's default.
Old protocol versions exist only in ZooKeeper mode of 3.x: KRaft refuses an
inter-broker protocol below 3.0, and 4.x has no ZooKeeper mode.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

from clusters.errors import ClusterConfigError

MODES = ("zk", "kraft")
TRUNCATION_PROTOCOL = {"hw": "0.11.0-IV1", "kip101": "0.11.0-IV2", "kip279": "2.0-IV1", "kip320": None}
FLUSH_MODES = ("os", "fsync")
WHOLE_NUMBERS = ("controllers", "min_insync_replicas", "session_timeout_ms", "replica_lag_time_max_ms",
                 "heap_mb", "hw_checkpoint_interval_ms")


@dataclass(frozen=True)
class KafkaOptions:
    version: str = ""
    kafka_home: str = ""
    libs: str = ""  # the resolved classpath folder; filled in once, then kept with the cluster's state
    mode: str = ""  # "": zk on 3.x, kraft on 4.x
    controllers: int = 0  # KRaft: 0 = every broker is also a controller; N = N controller-only nodes
    truncation: str = "kip320"
    flush: str = "os"  # fsync: flush.messages=1 (every write fsynced before it is acknowledged)
    min_insync_replicas: int = 2
    session_timeout_ms: int = 3000  # ZooKeeper session, or KRaft broker session
    replica_lag_time_max_ms: int = 5000
    hw_checkpoint_interval_ms: int = 5000
    heap_mb: int = 512
    broker_config: Mapping[str, str] = field(default_factory=dict)  # server.properties overrides, last word

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0]) if self.version else 0

    @property
    def inter_broker_protocol(self) -> str | None:
        return TRUNCATION_PROTOCOL[self.truncation]

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
        return KafkaOptions(**values)

    def checked(self, version: str) -> KafkaOptions:
        """With the version known: the mode filled in, and refused where Kafka cannot express it."""
        opts = KafkaOptions(**{**self.to_dict(), "version": version})
        if opts.truncation not in TRUNCATION_PROTOCOL:
            raise ClusterConfigError(f"truncation {opts.truncation!r}: choose one of {', '.join(TRUNCATION_PROTOCOL)}")
        if opts.flush not in FLUSH_MODES:
            raise ClusterConfigError(f"flush {opts.flush!r} on stock Kafka: choose one of {', '.join(FLUSH_MODES)} "
                                     "(a power cut that loses unflushed writes needs the own system's flush=lazy)")
        mode = opts.mode or ("zk" if opts.major < 4 else "kraft")
        if mode not in MODES:
            raise ClusterConfigError(f"mode {mode!r}: choose zk (ZooKeeper, Kafka 3.x) or kraft")
        if mode == "zk" and opts.major >= 4:
            raise ClusterConfigError(f"Kafka {version} has no ZooKeeper mode (removed in 4.0): use mode=kraft, "
                                     "or a 3.x version for ZooKeeper")
        if mode == "kraft" and opts.truncation != "kip320":
            raise ClusterConfigError(
                f"truncation {opts.truncation!r} needs inter.broker.protocol.version {opts.inter_broker_protocol}, "
                f"which KRaft refuses (3.0 or newer only): use --truncation kip320 on KRaft, or a 3.x version "
                "in ZooKeeper mode (mode=zk) for hw, kip101 and kip279")
        if mode == "zk" and opts.controllers:
            raise ClusterConfigError("controllers= is a KRaft option; ZooKeeper mode runs one ZooKeeper node")
        if not 1 <= opts.min_insync_replicas:
            raise ClusterConfigError("min_insync_replicas: give at least 1")
        return KafkaOptions(**{**opts.to_dict(), "mode": mode})


def _property_value(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        text = str(value)
        if "\n" not in text:
            return text
    raise ClusterConfigError(f"kafka broker_config {name}={value!r}: give a single-line string, number or boolean")
