"""Single-node stand-in for the controller: topic creation and deletion, leader epochs, and their durable record.

Owns `topics.json` in the data directory (topic ids, partition counts, configs,
each partition's leader epoch), written to a temporary file, fsynced and renamed.
On start every partition's leader epoch is bumped (a restarted broker leads in
a new epoch, as after a controller re-election), recorded, and pushed to the
metadata cache and the replica manager, as a LeaderAndIsr would be. When the
controller process takes over, this module is what it replaces.
"""
from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from pathlib import Path

import orjson

from fencepost.broker.common.durable_file import write_file_atomically
from fencepost.broker.common.topics import config_error, topic_name_error

from .errors import ErrorCode
from .metadata_cache import MetadataCache, PartitionMetadata, TopicMetadata
from .partition import TopicPartition
from .replica_manager import ReplicaManager

log = logging.getLogger("broker.controller")

TOPICS_FILE = "topics.json"


@dataclass(frozen=True, slots=True)
class TopicResult:
    error: ErrorCode
    message: str | None = None
    topic: TopicMetadata | None = None


class LocalController:
    def __init__(self, node_id: int, data_dir: Path, metadata: MetadataCache, replicas: ReplicaManager,
                 max_partitions: int = 4000) -> None:
        self.node_id = node_id
        self.max_partitions = max_partitions
        self.path = Path(data_dir) / TOPICS_FILE
        self.metadata = metadata
        self.replicas = replicas

    # startup

    def load(self, partitions_on_disk: dict[tuple[str, int], int]) -> None:
        """Read topics.json (and adopt partition directories it does not list), bump epochs, lead everything.

        `partitions_on_disk` maps each partition log found to its latest leader epoch: a new
        epoch is always above both the recorded one and the log's (a log may be newer than
        topics.json, e.g. when that file was restored or rebuilt).
        """
        topics: dict[str, TopicMetadata] = {}
        if self.path.exists():
            try:
                doc = orjson.loads(self.path.read_bytes())
                for t in doc["topics"]:
                    parts = {int(p["partition"]): PartitionMetadata(int(p["partition"]), self.node_id,
                                                                    int(p["leader_epoch"]), (self.node_id,),
                                                                    (self.node_id,))
                             for p in t["partitions"]}
                    topics[t["name"]] = TopicMetadata(t["name"], uuid.UUID(t["topic_id"]), parts,
                                                      dict(t.get("configs", {})))
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise RuntimeError(f"cannot read {self.path}: {e}; fix or remove the file (topics are then "
                                   "rebuilt from the partition directories with default configs)") from e
        for topic, index in partitions_on_disk:
            t = topics.get(topic)
            if t is None:
                t = topics[topic] = TopicMetadata(topic, uuid.uuid4(), {})
                log.warning("topic %s found on disk but not in %s: adopted with default configs", topic, self.path)
            if index not in t.partitions:
                t.partitions[index] = PartitionMetadata(index, self.node_id, -1, (self.node_id,), (self.node_id,))
        for name, t in topics.items():
            bumped = {i: PartitionMetadata(i, self.node_id,
                                           max(p.leader_epoch, partitions_on_disk.get((name, i), -1)) + 1,
                                           p.replicas, p.isr)
                      for i, p in t.partitions.items()}
            topics[name] = TopicMetadata(t.name, t.topic_id, bumped, t.configs)
        self._save(topics.values())
        for t in topics.values():
            self._publish(t)
        if topics:
            log.info("loaded %d topics (%d partitions) from %s", len(topics),
                     sum(len(t.partitions) for t in topics.values()), self.path)

    # topic changes

    def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                     configs: dict[str, str | None], validate_only: bool = False) -> TopicResult:
        problem = topic_name_error(name)
        if problem:
            return TopicResult(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        if self.metadata.topic(name) is not None:
            return TopicResult(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        if num_partitions < 1:
            return TopicResult(ErrorCode.INVALID_PARTITIONS, f"number of partitions must be >= 1, got {num_partitions}")
        hosted = sum(len(self.metadata.topic(n).partitions) for n in self.metadata.topic_names())
        if hosted + num_partitions > self.max_partitions:
            return TopicResult(ErrorCode.INVALID_PARTITIONS, f"{num_partitions} more partitions would exceed this "
                               f"broker's limit of {self.max_partitions} (it hosts {hosted}); see --max-partitions")
        brokers = len(self.metadata.alive_brokers())
        if not 1 <= replication_factor <= brokers:
            return TopicResult(ErrorCode.INVALID_REPLICATION_FACTOR,
                               f"replication factor {replication_factor} is not within 1..{brokers} (live brokers)")
        for key, value in configs.items():
            problem = config_error(key, value)
            if problem:
                return TopicResult(ErrorCode.INVALID_CONFIG, problem)
        parts = {i: PartitionMetadata(i, self.node_id, 0, (self.node_id,), (self.node_id,))
                 for i in range(num_partitions)}
        topic = TopicMetadata(name, uuid.uuid4(), parts, {k: v for k, v in configs.items() if v is not None})
        if validate_only:
            return TopicResult(ErrorCode.NONE, topic=topic)
        self._save([*(self.metadata.topic(n) for n in self.metadata.topic_names()), topic])
        self._publish(topic)
        log.info("created topic %s: %d partitions, configs %s", name, num_partitions, topic.configs)
        return TopicResult(ErrorCode.NONE, topic=topic)

    def delete_topic(self, name: str) -> TopicResult:
        topic = self.metadata.topic(name)
        if topic is None:
            return TopicResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        self._save([self.metadata.topic(n) for n in self.metadata.topic_names() if n != name])
        self.metadata.remove_topic(name)
        for i in topic.partitions:
            self.replicas.stop_replica(TopicPartition(name, i), delete=True)
        log.info("deleted topic %s", name)
        return TopicResult(ErrorCode.NONE, topic=topic)

    # internals

    def _publish(self, topic: TopicMetadata) -> None:
        self.metadata.put_topic(topic)
        for i, p in topic.partitions.items():
            self.replicas.make_leader(TopicPartition(topic.name, i), p.leader_epoch, p.replicas, p.isr)

    def _save(self, topics) -> None:
        doc = {"version": 1, "topics": [
            {"name": t.name, "topic_id": str(t.topic_id), "configs": t.configs,
             "partitions": [{"partition": i, "leader_epoch": p.leader_epoch}
                            for i, p in sorted(t.partitions.items())]}
            for t in topics]}
        write_file_atomically(self.path, orjson.dumps(doc, option=orjson.OPT_INDENT_2))

