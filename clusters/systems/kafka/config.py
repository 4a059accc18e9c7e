"""server.properties for each Kafka node, fit for chaos: RF 3 and min.insync.replicas=2 by
default, unclean leader election off (it defaulted to on before 0.11: always set), leaders
back on their preferred replicas within seconds, and session and lag timeouts short enough
that faults resolve in seconds. Rendered per release: a key goes only to releases that know it
(SINCE) and stopped being dropped (UNTIL), so a broker is never handed a setting it would not read. The user's
`broker_config` has the last word.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from fencepost.clusters.systems.kafka.options import KafkaOptions

BROKER_PORT = 9092
CONTROLLER_PORT = 9093
ZOOKEEPER_PORT = 2181
ZOOKEEPER_TICK_MS = 500  # sessions may then be 1 s .. 10 s
ELR_FEATURE = "eligible.leader.replicas.version"
CLUSTER_ID = "ZmVuY2Vwb3N0LWthZmthMQ"  # any 16 bytes, base64url; every cluster is its own world
# The first release that knows a chaos default (KIP-98's transaction log and KIP-134's rebalance
# delay came in 0.11.0); every other key is known to 0.10.2, the oldest release fencepost runs.
SINCE = {"transaction.state.log.replication.factor": (0, 11, 0), "transaction.state.log.min.isr": (0, 11, 0),
         "group.initial.rebalance.delay.ms": (0, 11, 0)}
# The first release that no longer knows a chaos default (4.0 removed these with ZooKeeper: its
# startup dump lists none of them, measured by bench/kafka_releases.py).
UNTIL = {"leader.imbalance.per.broker.percentage": (4, 0, 0), "controlled.shutdown.max.retries": (4, 0, 0),
         "controlled.shutdown.retry.backoff.ms": (4, 0, 0)}


@dataclass(frozen=True)
class Endpoint:
    node_id: int
    host: str
    port: int


def chaos_defaults(opts: KafkaOptions, brokers: int) -> dict[str, str]:
    replicas = str(min(3, brokers))
    props = {
        "num.partitions": "3",
        "default.replication.factor": replicas,
        "min.insync.replicas": str(opts.min_insync_replicas),
        "unclean.leader.election.enable": "false",
        "auto.create.topics.enable": "false",
        # leaders go back to their preferred replicas within seconds (Kafka's default, checked every
        # 5 s instead of 300 s), so every run keeps meeting the layout a topic was created with
        "auto.leader.rebalance.enable": "true",
        "leader.imbalance.check.interval.seconds": "5",
        "leader.imbalance.per.broker.percentage": "0",
        "offsets.topic.replication.factor": replicas,
        "offsets.topic.num.partitions": "3",
        "transaction.state.log.replication.factor": replicas,
        "transaction.state.log.min.isr": str(min(2, brokers)),
        "group.initial.rebalance.delay.ms": "0",
        "replica.lag.time.max.ms": str(opts.replica_lag_time_max_ms),
        "replica.high.watermark.checkpoint.interval.ms": str(opts.hw_checkpoint_interval_ms),
        "replica.socket.timeout.ms": "3000",
        "request.timeout.ms": "5000",
        "controller.socket.timeout.ms": "3000",
        "controlled.shutdown.max.retries": "1",
        "controlled.shutdown.retry.backoff.ms": "500",
        "log.retention.hours": "168",
    }
    if opts.flush == "fsync":
        props["log.flush.interval.messages"] = "1"
    release = opts.release
    return {k: v for k, v in props.items()
            if release.at_least(*SINCE.get(k, ())) and not (k in UNTIL and release.at_least(*UNTIL[k]))}


def zk_broker_properties(opts: KafkaOptions, me: Endpoint, data_dir: str, zookeeper: str,
                         brokers: int) -> dict[str, str]:
    props = {
        "broker.id": str(me.node_id),
        "listeners": f"PLAINTEXT://{me.host}:{me.port}",
        "advertised.listeners": f"PLAINTEXT://{me.host}:{me.port}",
        "log.dirs": data_dir,
        "zookeeper.connect": zookeeper,
        "zookeeper.session.timeout.ms": str(opts.session_timeout_ms),
        "zookeeper.connection.timeout.ms": "10000",
        **chaos_defaults(opts, brokers),
    }
    if opts.inter_broker_protocol:
        props["inter.broker.protocol.version"] = opts.inter_broker_protocol
    return {**props, **opts.broker_config}


def kraft_properties(opts: KafkaOptions, node_id: int, host: str, broker_port: int | None,
                     controller_port: int | None, data_dir: str, voters: list[Endpoint],
                     brokers: int) -> dict[str, str]:
    """A KRaft node: a broker (broker_port), a controller (controller_port), or both (combined)."""
    roles = ",".join(r for r, port in (("broker", broker_port), ("controller", controller_port)) if port)
    listeners = []
    if broker_port:
        listeners.append(f"PLAINTEXT://{host}:{broker_port}")
    if controller_port:
        listeners.append(f"CONTROLLER://{host}:{controller_port}")
    props = {
        "process.roles": roles,
        "node.id": str(node_id),
        "controller.quorum.voters": ",".join(f"{v.node_id}@{v.host}:{v.port}" for v in voters),
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "listeners": ",".join(listeners),
        "log.dirs": data_dir,
        "broker.session.timeout.ms": str(opts.session_timeout_ms),
        "broker.heartbeat.interval.ms": str(max(100, opts.session_timeout_ms // 6)),
        "controller.quorum.election.timeout.ms": "1000",
        "controller.quorum.fetch.timeout.ms": "2000",
        **chaos_defaults(opts, brokers),
    }
    if broker_port:
        props["advertised.listeners"] = f"PLAINTEXT://{host}:{broker_port}"
        props["inter.broker.listener.name"] = "PLAINTEXT"
    return {**props, **opts.broker_config}


def format_features(opts: KafkaOptions) -> tuple[str, ...]:
    """`kafka-storage format` arguments that set features: Eligible Leader Replicas when the `elr`
    option names them (left out, the release's own default holds)."""
    if opts.elr is None:
        return ()
    return ("--feature", f"{ELR_FEATURE}={1 if opts.elr else 0}")


def render(props: Mapping[str, str]) -> str:
    return "".join(f"{k}={_escape(v)}\n" for k, v in props.items())


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\")
