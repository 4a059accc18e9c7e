"""The broker's configuration: the `serve` command line, parsed and checked into one frozen dataclass."""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from fencepost.broker.common.config import ConfigError, parse_host_port
from fencepost.broker.common.modes import FLUSH_MODES, TRUNCATION_MODES


@dataclass(frozen=True)
class BrokerConfig:
    node_id: int
    listen_host: str
    listen_port: int
    data_dir: Path
    advertised_host: str | None = None  # None: the listen address (with the bound port when 0 was asked)
    advertised_port: int | None = None
    flush: str = "os"
    flush_interval_ms: int = 0  # 0: never flush on a timer (lazy mode defaults to 1000)
    hw_checkpoint_interval_ms: int = 5000
    auto_create_topics: bool = True
    num_partitions: int = 1
    default_replication_factor: int = 1
    min_insync_replicas: int = 1
    max_request_bytes: int = 100 * 1024 * 1024
    fetch_max_bytes: int = 55 * 1024 * 1024  # cap on one fetch response, whatever the client asks
    max_partitions: int = 4000  # partitions this broker hosts at most (each holds file descriptors)
    segment_bytes: int = 64 * 1024 * 1024
    cluster_id: str = "fencepost"
    group_initial_rebalance_delay_ms: int = 0
    group_min_session_timeout_ms: int = 1000
    group_max_session_timeout_ms: int = 1_800_000
    log_file: Path | None = None
    log_level: str = "INFO"
    controller: tuple[str, int] | None = None  # None: a single node with its local stand-in controller
    truncation: str = "kip320"
    replica_lag_time_max_ms: int = 30_000
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_backoff_ms: int = 200
    replica_request_timeout_ms: int = 10_000

    def __post_init__(self) -> None:
        if self.truncation not in TRUNCATION_MODES:
            raise ConfigError(f"--truncation must be one of {', '.join(TRUNCATION_MODES)}, got {self.truncation!r}")
        for name in ("replica_lag_time_max_ms", "replica_fetch_wait_max_ms", "replica_fetch_backoff_ms",
                     "replica_request_timeout_ms"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}")
        if not 0 <= self.node_id < 65536:
            raise ConfigError(f"--node-id must be within 0..65535, got {self.node_id}")
        if self.flush not in FLUSH_MODES:
            raise ConfigError(f"--flush must be one of {', '.join(FLUSH_MODES)}, got {self.flush!r}")
        if self.flush_interval_ms < 0:
            raise ConfigError(f"--flush-interval-ms must be >= 0, got {self.flush_interval_ms}")
        if self.num_partitions < 1:
            raise ConfigError(f"--num-partitions must be >= 1, got {self.num_partitions}")
        if self.min_insync_replicas < 1:
            raise ConfigError(f"--min-insync-replicas must be >= 1, got {self.min_insync_replicas}")
        if self.max_request_bytes < 1024:
            raise ConfigError(f"--max-request-bytes must be >= 1024, got {self.max_request_bytes}")
        if self.fetch_max_bytes < 1024:
            raise ConfigError(f"--fetch-max-bytes must be >= 1024, got {self.fetch_max_bytes}")
        if self.max_partitions < 1:
            raise ConfigError(f"--max-partitions must be >= 1, got {self.max_partitions}")

    @property
    def effective_flush_interval_ms(self) -> int:
        """Lazy mode must flush on a timer; the other modes only when asked."""
        if self.flush == "lazy" and self.flush_interval_ms == 0:
            return 1000
        return self.flush_interval_ms


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes", "on"):
        return True
    if text.lower() in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def serve_argument_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m fencepost.broker serve",
                                description="Run one node of fencepost's own Kafka-protocol broker.")
    p.add_argument("--node-id", type=int, required=True, help="this broker's node id (>= 0)")
    p.add_argument("--listen", required=True, metavar="HOST:PORT", help="address to accept clients on (port 0: any)")
    p.add_argument("--data-dir", required=True, type=Path, help="log directory (Kafka's layout)")
    p.add_argument("--advertise", metavar="HOST:PORT", help="address given to clients in Metadata (default: --listen)")
    p.add_argument("--flush", choices=FLUSH_MODES, default="os",
                   help="os: write(2) per append; fsync: fsync per append; lazy: keep in memory until the timer")
    p.add_argument("--flush-interval-ms", type=int, default=0,
                   help="flush every log on this period (lazy default 1000; 0 = never for os/fsync)")
    p.add_argument("--hw-checkpoint-interval-ms", type=int, default=5000)
    p.add_argument("--auto-create-topics", type=_bool, default=True, metavar="true|false",
                   help="create unknown topics asked for in Metadata (auto.create.topics.enable)")
    p.add_argument("--num-partitions", type=int, default=1, help="partitions of auto-created topics")
    p.add_argument("--min-insync-replicas", type=int, default=1, help="default min.insync.replicas of topics")
    p.add_argument("--max-request-bytes", type=int, default=100 * 1024 * 1024)
    p.add_argument("--fetch-max-bytes", type=int, default=55 * 1024 * 1024,
                   help="most bytes one fetch response carries, whatever the client asks")
    p.add_argument("--max-partitions", type=int, default=4000,
                   help="most partitions this broker hosts (topic creation beyond fails)")
    p.add_argument("--segment-bytes", type=int, default=64 * 1024 * 1024)
    p.add_argument("--cluster-id", default="fencepost")
    p.add_argument("--group-initial-rebalance-delay-ms", type=int, default=0)
    p.add_argument("--group-min-session-timeout-ms", type=int, default=1000)
    p.add_argument("--group-max-session-timeout-ms", type=int, default=1_800_000)
    p.add_argument("--controller", metavar="HOST:PORT",
                   help="the controller process to register with (without it: a single node, its own controller)")
    p.add_argument("--truncation", choices=TRUNCATION_MODES, default="kip320",
                   help="how a new follower truncates: hw (pre-KIP-101), kip101, kip279, kip320 (default)")
    p.add_argument("--replica-lag-time-max-ms", type=int, default=30_000,
                   help="a follower not caught up for this long leaves the ISR")
    p.add_argument("--replica-fetch-wait-max-ms", type=int, default=500)
    p.add_argument("--replica-fetch-backoff-ms", type=int, default=200)
    p.add_argument("--replica-request-timeout-ms", type=int, default=10_000,
                   help="a follower's request to its leader fails after this long")
    p.add_argument("--log-file", type=Path, help="also append the log to this file")
    p.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    return p


def parse_serve_args(argv: list[str]) -> BrokerConfig:
    """Parse `serve` arguments; argparse exits with status 2 on a malformed line, ConfigError on a bad value."""
    a = serve_argument_parser().parse_args(argv)
    host, port = parse_host_port(a.listen, "--listen")
    adv_host = adv_port = None
    if a.advertise:
        adv_host, adv_port = parse_host_port(a.advertise, "--advertise")
        if adv_port == 0:
            raise ConfigError(f"--advertise needs a real port, got {a.advertise!r}")
    elif host in ("", "0.0.0.0", "::"):
        raise ConfigError(f"--listen {a.listen!r} binds every interface: give --advertise HOST:PORT "
                          "so clients know which address to use")
    controller = parse_host_port(a.controller, "--controller") if a.controller else None
    if controller is not None and controller[1] == 0:
        raise ConfigError(f"--controller needs a real port, got {a.controller!r}")
    return BrokerConfig(
        controller=controller, truncation=a.truncation, replica_lag_time_max_ms=a.replica_lag_time_max_ms,
        replica_fetch_wait_max_ms=a.replica_fetch_wait_max_ms, replica_fetch_backoff_ms=a.replica_fetch_backoff_ms,
        replica_request_timeout_ms=a.replica_request_timeout_ms,
        node_id=a.node_id, listen_host=host, listen_port=port, data_dir=a.data_dir,
        advertised_host=adv_host, advertised_port=adv_port, flush=a.flush,
        flush_interval_ms=a.flush_interval_ms, hw_checkpoint_interval_ms=a.hw_checkpoint_interval_ms,
        auto_create_topics=a.auto_create_topics, num_partitions=a.num_partitions,
        min_insync_replicas=a.min_insync_replicas, max_request_bytes=a.max_request_bytes,
        fetch_max_bytes=a.fetch_max_bytes, max_partitions=a.max_partitions,
        segment_bytes=a.segment_bytes, cluster_id=a.cluster_id,
        group_initial_rebalance_delay_ms=a.group_initial_rebalance_delay_ms,
        group_min_session_timeout_ms=a.group_min_session_timeout_ms,
        group_max_session_timeout_ms=a.group_max_session_timeout_ms,
        log_file=a.log_file, log_level=a.log_level,
    )
