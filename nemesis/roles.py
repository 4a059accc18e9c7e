"""Role targets: the one node a fault aimed at a role hits, resolved when the fault starts.

| role | the node |
|---|---|
| `leader` | the leader of a partition of the topic (the context's partition, else one drawn) |
| `follower` | a follower of that partition: an ISR member other than the leader (any other replica when the ISR holds the leader alone), drawn from the seeded RNG |
| `active-controller` | the node acting as controller now: the own system's controller node; stock Kafka's controller broker (ZooKeeper mode) or the KRaft quorum's leader |
| `group-coordinator` | the broker coordinating the run's consumer group (FindCoordinator; stock Kafka only) |

Each is waited for at most `NemesisContext.leader_wait` (about an election): a role with no
node by then hits nothing, and the fault records `"skipped"` with why (as a `leader` target
always has). What a fault records of the role goes into its info value: `topic`,
`partition`, `leader` (and `follower`) for the partition roles, `controller` for the
active controller, `group` and `coordinator` for the coordinator.
"""
from __future__ import annotations

from typing import Any

from fencepost.clusters import ClusterConfigError, HostError
from fencepost.nemesis.context import NemesisContext
from fencepost.nemesis.spec import ROLE_TARGETS

__all__ = ["ROLE_TARGETS", "resolve_role"]


def resolve_role(ctx: NemesisContext, role: str) -> tuple[str | None, dict[str, Any]]:
    """(the node, what the fault records of it); (None, {..., "skipped": why}) when the role has
    no node within the wait. ClusterConfigError when the system has no such role at all."""
    if role in ("leader", "follower"):
        return _partition_role(ctx, role)
    if role == "active-controller":
        node = _waited(ctx, ctx.cluster.active_controller)
        about: dict[str, Any] = {"controller": node}
        if node is None:
            about["skipped"] = f"no active controller could be told within {ctx.leader_wait:g}s"
        return node, about
    if role == "group-coordinator":
        node = _waited(ctx, lambda: ctx.cluster.group_coordinator(ctx.group))
        about = {"group": ctx.group, "coordinator": node}
        if node is None:
            about["skipped"] = f"group {ctx.group!r} had no coordinator within {ctx.leader_wait:g}s"
        return node, about
    raise ClusterConfigError(f"{role!r} is not a role target; roles are {', '.join(ROLE_TARGETS)}")


def _partition_role(ctx: NemesisContext, role: str) -> tuple[str | None, dict[str, Any]]:
    partition = ctx.choose_partition()
    try:
        view = ctx.await_leader(partition, timeout=ctx.leader_wait)
    except HostError:
        view = None
    leader = view.leader if view is not None else None
    about: dict[str, Any] = {"topic": ctx.topic, "partition": partition, "leader": leader}
    if view is None or leader is None:
        about["skipped"] = f"{ctx.topic}-{partition} had no leader within {ctx.leader_wait:g}s"
        if role == "follower":
            about["follower"] = None
        return None, about
    if role == "leader":
        return leader, about
    followers = sorted(set(view.isr) - {leader}) or sorted(set(view.replicas) - {leader})
    if not followers:
        about["follower"] = None
        about["skipped"] = f"{ctx.topic}-{partition} has no replica besides its leader {leader}"
        return None, about
    node = ctx.rng.choice(followers)
    about["follower"] = node
    return node, about


def _waited(ctx: NemesisContext, ask) -> str | None:
    """ask() until it names a node, at most `leader_wait`; None then. A system without the role
    raises ClusterConfigError at once (the up-front check refuses such a fault before it runs)."""
    try:
        return ctx.cluster.wait_for(ask, ctx.leader_wait, "a node of the role")
    except HostError:
        return None
