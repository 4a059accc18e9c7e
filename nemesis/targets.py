"""Which nodes a process fault (pause, kill, power-cut) hits, pure.

| target | nodes |
|---|---|
| `one` | one random broker |
| `minority` | a random (n-1)//2 of the n brokers (n >= 3) |
| `majority` | a random n//2+1 of the brokers |
| `all` | every broker (not the control plane) |
| `leader`, `follower`, `active-controller`, `group-coordinator` | the given node: the one of that role now (nemesis/roles.py) |
| `controller` | the control-plane nodes |

Random picks come from the `random.Random` given, over the sorted broker list,
so one seed gives one choice. Nodes come back sorted.
"""
from __future__ import annotations

import random
from typing import Sequence

from fencepost.clusters import ClusterConfigError
from fencepost.nemesis.grudges import majority_size, minority_size, shuffled
from fencepost.nemesis.spec import ROLE_TARGETS


def least_brokers(target: str) -> int:
    return 3 if target == "minority" else 1


def pick_nodes(target: str, brokers: Sequence[str], control: Sequence[str], rng: random.Random,
               leader: str | None = None) -> list[str]:
    if len(brokers) < least_brokers(target):
        raise ClusterConfigError(f"target {target} needs at least {least_brokers(target)} brokers; "
                                 f"the cluster has {len(brokers)}")
    n = len(brokers)
    if target in ("one", "minority", "majority"):
        size = {"one": 1, "minority": minority_size(n), "majority": majority_size(n)}[target]
        return sorted(shuffled(brokers, rng)[:size])
    if target == "all":
        return sorted(brokers)
    if target in ROLE_TARGETS:  # `leader`: the node the role resolved to
        if leader is None:
            raise ClusterConfigError(f"target {target} needs the node of that role")
        return [leader]
    if target == "controller":
        if not control:
            raise ClusterConfigError("target controller: this system has no control-plane nodes")
        return sorted(control)
    raise ClusterConfigError(f"unknown process target {target!r}")
