"""What a fault acts with: the cluster, the recorder, the seeded RNG, the topic, the bound on
every wait — and the questions faults ask the cluster's control plane (which partition,
who leads it), each waited for within that bound.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable

from fencepost.clusters import Cluster, ClusterConfigError, PartitionView
from fencepost.nemesis.recording import NemesisRecorder

DEFAULT_TOPIC = "fp"
DEFAULT_GROUP = "fencepost"  # the consumer group of the run's subscribed consumers (workloads/consumer.py)
DEFAULT_TIMEOUT_S = 30.0
# How long a fault aimed at `leader` waits for the partition to have one: about an
# election after a session timeout. The schedule's steps run one at a time, so a longer
# wait would hold up every other fault's start and stop (a kill of a majority then lasted
# the whole timeout, past the end of the run).
LEADER_TARGET_WAIT_S = 6.0


@dataclass
class NemesisContext:
    cluster: Cluster
    recorder: NemesisRecorder
    rng: random.Random = field(default_factory=random.Random)
    topic: str = DEFAULT_TOPIC
    partition: int | None = None  # the partition `leader` targets and scenarios use; None: drawn each time
    timeout: float = DEFAULT_TIMEOUT_S  # the bound on each wait for the cluster (election, ISR, restart)
    group: str = DEFAULT_GROUP  # the consumer group whose coordinator `group-coordinator` targets
    netem: dict = field(default_factory=dict)  # the netem fault's settings (nemesis/netem.py), as given

    def choose_partition(self, wanted: int | None = None) -> int:
        """`wanted`, else the context's partition, else one drawn from the RNG; checked against the topic."""
        partitions = self.cluster.wait_for(lambda: self.cluster.partitions(self.topic), self.timeout,
                                           f"the partitions of topic {self.topic!r}")
        chosen = wanted if wanted is not None else self.partition
        if chosen is None:
            return self.rng.choice(sorted(partitions))
        if chosen not in partitions:
            raise ClusterConfigError(f"topic {self.topic!r} has no partition {chosen}; its partitions are "
                                     f"{', '.join(map(str, sorted(partitions)))}")
        return chosen

    def view(self, partition: int) -> PartitionView:
        return self.cluster.partition_view(self.topic, partition)

    def await_view(self, partition: int, condition: Callable[[PartitionView], bool], what: str,
                   timeout: float | None = None) -> PartitionView:
        """The partition's view once `condition` holds (HostError after `timeout`, by default
        the context's)."""
        def met() -> PartitionView | None:
            view = self.view(partition)
            return view if condition(view) else None
        return self.cluster.wait_for(met, self.timeout if timeout is None else timeout,
                                     f"{self.topic}-{partition}: {what}")

    @property
    def leader_wait(self) -> float:
        """How long a role target waits for its node (nemesis/roles.py): about an election."""
        return min(LEADER_TARGET_WAIT_S, self.timeout)

    def await_leader(self, partition: int, not_in: tuple[str, ...] = (),
                     timeout: float | None = None) -> PartitionView:
        """Until the partition has a leader outside `not_in` (HostError after `timeout`, by
        default the context's)."""
        what = "a leader" + (f" other than {', '.join(not_in)}" if not_in else "")
        return self.await_view(partition, lambda v: v.leader is not None and v.leader not in not_in, what,
                               timeout)
