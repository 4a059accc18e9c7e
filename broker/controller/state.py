"""The controller's state machine: registered brokers, their sessions, topics and partition leadership.

Pure: no I/O, no clock (every operation that needs the time is given `now`, in
seconds of a monotonic clock). Each operation returns (response, changed): the
response is the protocol answer without its "id" ({"error": None | NAME,
"message": text, ...}); `changed` says the durable state moved on, and then
`version` has grown by one, so the caller persists it and pushes a snapshot.
Sessions (the last heartbeat of each broker) are not durable: a loaded state
starts every unfenced broker's session at load time.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any

from fencepost.broker.common.controller_protocol import NO_LEADER, BrokerInfo, PartitionState, Snapshot, TopicState
from fencepost.broker.common.topics import config_error, topic_name_error

from .election import assign_replicas, bump_if_changed, elect_leader, lead_in_new_epoch, without_broker

Response = dict[str, Any]
Result = tuple[Response, bool]
STATE_FORMAT = 1
UNCLEAN_CONFIG = "unclean.leader.election.enable"


def ok(**fields: Any) -> Response:
    return {"error": None, "message": None, **fields}


def error(name: str, message: str) -> Response:
    return {"error": name, "message": message}


@dataclass(slots=True)
class BrokerRecord:
    node_id: int
    host: str
    port: int
    incarnation: str
    broker_epoch: int
    fenced: bool = False

    def info(self) -> BrokerInfo:
        return BrokerInfo(self.node_id, self.host, self.port, self.fenced)

    def to_dict(self) -> dict[str, Any]:
        return {"node_id": self.node_id, "host": self.host, "port": self.port, "incarnation": self.incarnation,
                "broker_epoch": self.broker_epoch, "fenced": self.fenced}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BrokerRecord:
        return cls(int(d["node_id"]), str(d["host"]), int(d["port"]), str(d["incarnation"]),
                   int(d["broker_epoch"]), bool(d["fenced"]))


class ControllerState:
    def __init__(self, session_timeout_ms: int, controller_id: int = -1) -> None:
        self.session_timeout_ms = session_timeout_ms
        self.controller_id = controller_id
        self.brokers: dict[int, BrokerRecord] = {}
        self.topics: dict[str, TopicState] = {}  # TopicStates are replaced, never mutated: snapshots share them
        self.version = 0
        self.next_broker_epoch = 1
        self.topics_created = 0
        self._last_seen: dict[int, float] = {}

    # -- durable form --------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {"format": STATE_FORMAT, "version": self.version, "next_broker_epoch": self.next_broker_epoch,
                "topics_created": self.topics_created,
                "brokers": [b.to_dict() for _, b in sorted(self.brokers.items())],
                "topics": [t.to_dict() for _, t in sorted(self.topics.items())]}

    @classmethod
    def from_dict(cls, d: dict[str, Any], session_timeout_ms: int, now: float,
                  controller_id: int = -1) -> ControllerState:
        """The state saved by `to_dict`; every unfenced broker's session starts at `now`.
        Raises ValueError (or KeyError, TypeError) when `d` is not such a state."""
        if d.get("format") != STATE_FORMAT:
            raise ValueError(f"format is {d.get('format')!r}, expected {STATE_FORMAT}")
        s = cls(session_timeout_ms, controller_id)
        s.version, s.next_broker_epoch = int(d["version"]), int(d["next_broker_epoch"])
        s.topics_created = int(d["topics_created"])
        s.brokers = {b.node_id: b for b in map(BrokerRecord.from_dict, d["brokers"])}
        s.topics = {t.name: t for t in map(TopicState.from_dict, d["topics"])}
        s._last_seen = {n: now for n, b in s.brokers.items() if not b.fenced}
        return s

    def snapshot(self) -> Snapshot:
        return Snapshot(self.version, self.controller_id, {n: b.info() for n, b in self.brokers.items()},
                        dict(self.topics))

    # -- broker lifecycle ----------------------------------------------------

    def register(self, node_id: int, host: str, port: int, incarnation: str, now: float) -> Result:
        if node_id < 0 or not 0 < port <= 65535 or not host:
            return error("INVALID_REQUEST", f"register needs node_id >= 0, a host and a port in 1..65535, "
                                            f"got node_id={node_id} host={host!r} port={port}"), False
        known = self.brokers.get(node_id)
        epoch = self.next_broker_epoch
        self.next_broker_epoch += 1
        self.brokers[node_id] = BrokerRecord(node_id, host, port, incarnation, epoch)
        self._last_seen[node_id] = now
        if known is not None and known.incarnation != incarnation:
            for topic, p in self._partitions():
                if p.leader == node_id:
                    self._put(topic, p, lead_in_new_epoch(p))
        self._elect_offline()
        return self._commit(ok(broker_epoch=epoch, session_timeout_ms=self.session_timeout_ms))

    def heartbeat(self, node_id: int, broker_epoch: int, now: float) -> Result:
        """Refreshes the session; the caller pushes a snapshot when the broker's metadata is behind."""
        stale = self._stale(node_id, broker_epoch)
        if stale:
            return stale, False
        self._last_seen[node_id] = now
        return ok(), False

    def expire(self, now: float) -> Result:
        """Fences every unfenced broker whose session is older than the timeout."""
        timeout_s = self.session_timeout_ms / 1000
        expired = [n for n, b in sorted(self.brokers.items())
                   if not b.fenced and now - self._last_seen.get(n, float("-inf")) > timeout_s]
        if not expired:
            return ok(fenced=[]), False
        self._fence(expired)
        return self._commit(ok(fenced=expired))

    def shutdown(self, node_id: int, broker_epoch: int) -> Result:
        """Controlled shutdown: fenced now, its leaderships moved. Repeating it is a no-op."""
        b = self.brokers.get(node_id)
        if b is not None and b.fenced and b.broker_epoch == broker_epoch:
            return ok(), False
        stale = self._stale(node_id, broker_epoch)
        if stale:
            return stale, False
        self._fence([node_id])
        return self._commit(ok())

    # -- partitions ----------------------------------------------------------

    def alter_partition(self, node_id: int, broker_epoch: int, topic: str, partition: int, leader_epoch: int,
                        partition_epoch: int, isr: list[int]) -> Result:
        stale = self._stale(node_id, broker_epoch)
        if stale:
            return stale, False
        t = self.topics.get(topic)
        p = t.partitions.get(partition) if t is not None else None
        if p is None:
            return error("UNKNOWN_TOPIC_OR_PARTITION", f"partition {topic}-{partition} does not exist"), False
        name = f"{topic}-{partition}"
        if p.leader != node_id:
            return error("NOT_LEADER_OR_FOLLOWER", f"{name} is led by {p.leader}, not by {node_id}"), False
        if leader_epoch != p.leader_epoch:
            return error("FENCED_LEADER_EPOCH", f"{name} is in leader epoch {p.leader_epoch}, "
                                                f"the request is for {leader_epoch}"), False
        if partition_epoch != p.partition_epoch:
            return error("INVALID_UPDATE_VERSION", f"{name} is at partition epoch {p.partition_epoch}, "
                                                   f"the request is for {partition_epoch}"), False
        problem = _isr_problem(p, isr)
        if problem:
            return error("INVALID_REQUEST", f"{name}: {problem}"), False
        fenced = [r for r in isr if r not in p.isr and self.brokers[r].fenced]
        if fenced:
            return error("INELIGIBLE_REPLICA", f"{name}: cannot add fenced broker(s) {fenced} to the ISR"), False
        new = replace(p, isr=tuple(isr), partition_epoch=p.partition_epoch + 1)
        self._replace_partition(topic, new)
        return self._commit(ok(partition=new.to_dict()))

    # -- topics --------------------------------------------------------------

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, str | None], validate_only: bool = False) -> Result:
        problem = topic_name_error(name)
        if problem:
            return error("INVALID_TOPIC_EXCEPTION", problem), False
        if name in self.topics:
            return error("TOPIC_ALREADY_EXISTS", f"topic {name!r} already exists"), False
        if partitions < 1:
            return error("INVALID_PARTITIONS", f"number of partitions must be >= 1, got {partitions}"), False
        live = sorted(n for n, b in self.brokers.items() if not b.fenced)
        if not 1 <= replication_factor <= len(live):
            return error("INVALID_REPLICATION_FACTOR", f"replication factor {replication_factor} is not "
                         f"within 1..{len(live)} (unfenced brokers: {live})"), False
        for key, value in configs.items():
            problem = config_error(key, value)
            if problem:
                return error("INVALID_CONFIG", problem), False
        assignment = assign_replicas(live, partitions, replication_factor, self.topics_created % len(live))
        topic = TopicState(name, str(uuid.uuid4()),
                           {i: PartitionState(i, r[0], 0, 0, r, r) for i, r in assignment.items()},
                           {k: v for k, v in configs.items() if v is not None})
        if validate_only:
            return ok(topic=topic.to_dict()), False
        self.topics[name] = topic
        self.topics_created += 1
        return self._commit(ok(topic=topic.to_dict()))

    def delete_topic(self, name: str) -> Result:
        if name not in self.topics:
            return error("UNKNOWN_TOPIC_OR_PARTITION", f"topic {name!r} does not exist"), False
        del self.topics[name]
        return self._commit(ok())

    def describe(self) -> Result:
        return ok(snapshot=self.snapshot().to_dict()), False

    # -- internals -----------------------------------------------------------

    def _commit(self, response: Response) -> Result:
        self.version += 1
        return response, True

    def _stale(self, node_id: int, broker_epoch: int) -> Response | None:
        b = self.brokers.get(node_id)
        if b is None:
            return error("STALE_BROKER_EPOCH", f"broker {node_id} is not registered; register first")
        if b.broker_epoch != broker_epoch:
            return error("STALE_BROKER_EPOCH", f"broker {node_id} is in broker epoch {b.broker_epoch}, "
                                               f"not {broker_epoch}; register again")
        if b.fenced:
            return error("STALE_BROKER_EPOCH", f"broker {node_id} is fenced (its session expired or it shut "
                                               f"down); register again")
        return None

    def _unfenced(self) -> set[int]:
        return {n for n, b in self.brokers.items() if not b.fenced}

    def _unclean(self, topic: str) -> bool:
        return self.topics[topic].configs.get(UNCLEAN_CONFIG, "false").lower() == "true"

    def _partitions(self) -> list[tuple[str, PartitionState]]:
        return [(name, p) for name, t in sorted(self.topics.items()) for _, p in sorted(t.partitions.items())]

    def _fence(self, nodes: list[int]) -> None:
        for n in nodes:
            self.brokers[n].fenced = True
            self._last_seen.pop(n, None)
        unfenced = self._unfenced()
        for topic, p in self._partitions():
            q = p
            for n in nodes:
                q = without_broker(q, n, unfenced, self._unclean(topic))
            self._put(topic, p, q)

    def _elect_offline(self) -> None:
        unfenced = self._unfenced()
        for topic, p in self._partitions():
            if p.leader == NO_LEADER:
                self._put(topic, p, elect_leader(p, unfenced, self._unclean(topic)))

    def _put(self, topic: str, old: PartitionState, new: PartitionState) -> None:
        new = bump_if_changed(old, new)
        if new is not old:
            self._replace_partition(topic, new)

    def _replace_partition(self, topic: str, p: PartitionState) -> None:
        t = self.topics[topic]
        self.topics[topic] = replace(t, partitions={**t.partitions, p.partition: p})


def _isr_problem(p: PartitionState, isr: list[int]) -> str | None:
    if len(set(isr)) != len(isr):
        return f"ISR {isr} has duplicates"
    outside = [r for r in isr if r not in p.replicas]
    if outside:
        return f"ISR {isr} has brokers {outside} that are not replicas {list(p.replicas)}"
    if p.leader not in isr:
        return f"ISR {isr} does not contain the leader {p.leader}"
    return None
