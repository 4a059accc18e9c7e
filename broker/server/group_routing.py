"""Which broker coordinates a consumer group.

Rule: among the brokers this broker's metadata holds as registered and unfenced, sorted by
id, the one at crc32(group id) mod their count. Every broker answers FindCoordinator by this
rule, and a broker refuses the requests of a group it does not coordinate with
NOT_COORDINATOR, so a client that asked before the brokers changed finds the coordinator
again — as Kafka does with the leader of the group's `__consumer_offsets` partition. A
group's committed offsets live with its coordinator (its `OffsetStore`): when the brokers
change and the group moves, it finds what the new coordinator last held for it.
"""
from __future__ import annotations

import zlib

from .metadata_cache import BrokerEndpoint, MetadataCache


class GroupRouting:
    def __init__(self, metadata: MetadataCache, node_id: int) -> None:
        self.metadata = metadata
        self.node_id = node_id

    def coordinator(self, group_id: str) -> BrokerEndpoint | None:
        """The group's coordinator; None while no broker is known."""
        brokers = self.metadata.alive_brokers()
        if not brokers:
            return None
        return brokers[zlib.crc32(group_id.encode()) % len(brokers)]

    def coordinates(self, group_id: str) -> bool:
        """Whether this broker coordinates the group."""
        chosen = self.coordinator(group_id)
        return chosen is not None and chosen.node_id == self.node_id
