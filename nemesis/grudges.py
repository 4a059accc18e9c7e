"""Grudges, pure: which node drops which, for each partition target (Jepsen's jepsen.nemesis).

A grudge maps a node to the set of nodes it drops traffic from and to. Every
grudge made here is symmetric (a drops b exactly when b drops a) and lists only
nodes that drop something. Random choices come from the `random.Random` given,
over node lists taken in sorted order, so one seed gives one grudge.

Brokers are split; the control plane (the own system's `controller`; ZooKeeper
or KRaft voters later) is only ever cut off when a target names it:

| target | components |
|---|---|
| `one` | one random broker alone; every other node (brokers and control plane) together |
| `minority` | a random minority of the brokers ((n-1)//2, n >= 3) alone; the rest with the control plane |
| `majority` | a random majority of the brokers (n//2+1) alone; the rest with the control plane |
| `bridge` | brokers shuffled and halved (floor(n/2) | the rest, n >= 3); the first broker of the second half is the bridge, in both components; the control plane is with the second half |
| `majorities-ring` | no components: brokers in a random ring, each sees the brokers within ring distance r (the least r with 2r+1 >= a majority); with 3 brokers a line (one link cut); the control plane sees everyone |
| `leader`, `follower`, `active-controller`, `group-coordinator` | the given node (resolved by its role: nemesis/roles.py) alone; everyone else together |
| `controller` | the control plane alone; all brokers together |

So `one`, `minority`, `majority` and `leader` name the group that is cut off,
from the other brokers and from the control plane alike.
"""
from __future__ import annotations

import random
from typing import Collection, Iterable, Mapping, Sequence

from fencepost.clusters import ClusterConfigError
from fencepost.nemesis.spec import ROLE_TARGETS

Grudge = dict[str, frozenset[str]]


def complete_grudge(components: Sequence[Collection[str]]) -> Grudge:
    """Each node drops every node it shares no component with (Jepsen's complete-grudge;
    a node in several components — a bridge — keeps all of them)."""
    nodes = sorted({n for c in components for n in c})
    member = {n: {i for i, c in enumerate(components) if n in c} for n in nodes}
    grudge = {n: frozenset(m for m in nodes if not member[n] & member[m]) for n in nodes}
    return {n: drops for n, drops in grudge.items() if drops}


def minority_size(n: int) -> int:
    """The largest strict minority of n: (n-1)//2."""
    return (n - 1) // 2


def majority_size(n: int) -> int:
    return n // 2 + 1


def shuffled(nodes: Iterable[str], rng: random.Random) -> list[str]:
    order = sorted(nodes)
    rng.shuffle(order)
    return order


def components_for(target: str, brokers: Sequence[str], control: Sequence[str], rng: random.Random,
                   leader: str | None = None) -> list[frozenset[str]]:
    """The components of a target (every target but majorities-ring, which has none)."""
    brokers, control = sorted(brokers), sorted(control)
    everyone = frozenset(brokers) | frozenset(control)
    _need(target, brokers, control)
    if target in ("one", "minority", "majority"):
        size = {"one": 1, "minority": minority_size(len(brokers)), "majority": majority_size(len(brokers))}[target]
        cut = frozenset(shuffled(brokers, rng)[:size])
        return [cut, everyone - cut]
    if target == "bridge":
        order = shuffled(brokers, rng)
        half = len(order) // 2
        first, second = order[:half], order[half:]
        return [frozenset(first) | {second[0]}, frozenset(second) | frozenset(control)]
    if target in ROLE_TARGETS:  # `leader`: the node the role resolved to
        if leader is None or leader not in everyone:
            raise ClusterConfigError(f"partition:{target} needs the node of that role; got {leader!r}, "
                                     f"nodes are {', '.join(sorted(everyone))}")
        return [frozenset({leader}), everyone - {leader}]
    if target == "controller":
        return [frozenset(control), frozenset(brokers)]
    raise ClusterConfigError(f"partition target {target!r} has no components "
                             f"(majorities-ring is a grudge of its own; see grudge_for)")


def majorities_ring(brokers: Sequence[str], rng: random.Random) -> Grudge:
    """Every broker sees a majority of the brokers, no two see the same set (n >= 3).

    Brokers sit in a random ring and each sees those within ring distance r, r the
    least with 2r+1 >= majority (Jepsen's majorities-ring-perfect for 5 nodes, made
    symmetric for any n). With 3 brokers a ring of distance 1 cuts nothing, so the
    ring is opened into a line: the two ends drop each other."""
    if len(brokers) < 3:
        raise ClusterConfigError(f"partition:majorities-ring needs at least 3 brokers; the cluster has "
                                 f"{len(brokers)}")
    ring = shuffled(brokers, rng)
    n = len(ring)
    if n == 3:
        return {ring[0]: frozenset({ring[2]}), ring[2]: frozenset({ring[0]})}
    radius = majority_size(n) // 2  # 2r+1 >= majority
    grudge = {}
    for i, node in enumerate(ring):
        drops = frozenset(ring[j] for j in range(n) if min((i - j) % n, (j - i) % n) > radius)
        if drops:
            grudge[node] = drops
    return grudge


def grudge_for(target: str, brokers: Sequence[str], control: Sequence[str], rng: random.Random,
               leader: str | None = None) -> Grudge:
    """The grudge of a partition target (see the module's table)."""
    if target == "majorities-ring":
        return majorities_ring(sorted(brokers), rng)
    return complete_grudge(components_for(target, brokers, control, rng, leader))


def from_clients(node: str, clients: str) -> Grudge:
    """`node` drops the harness's clients (the peer `clients` stands for them); nothing else is cut.
    One-sided: the clients are no node of the cluster and have no rules of their own."""
    return {node: frozenset({clients})}


def isolate_from(node: str, peers: Iterable[str]) -> Grudge:
    """`node` and each of `peers` drop each other, nobody else is cut (the zombie's cut)."""
    peers = frozenset(peers) - {node}
    if not peers:
        return {}
    return {node: peers, **{p: frozenset({node}) for p in peers}}


def is_symmetric(grudge: Mapping[str, Collection[str]]) -> bool:
    return all(a in grudge.get(b, ()) for a, drops in grudge.items() for b in drops)


def grudge_json(grudge: Mapping[str, Collection[str]]) -> dict[str, list[str]]:
    """As recorded in the history: node -> sorted list, nodes sorted, empty entries left out."""
    return {n: sorted(grudge[n]) for n in sorted(grudge) if grudge[n]}


def sees(grudge: Mapping[str, Collection[str]], nodes: Iterable[str]) -> dict[str, frozenset[str]]:
    """What each node can reach under the grudge (itself included)."""
    nodes = frozenset(nodes)
    return {n: nodes - frozenset(grudge.get(n, ())) for n in sorted(nodes)}


def _need(target: str, brokers: Sequence[str], control: Sequence[str]) -> None:
    least = {"minority": 3, "bridge": 3}.get(target, 1)
    if len(brokers) < least:
        raise ClusterConfigError(f"partition:{target} needs at least {least} brokers; the cluster has "
                                 f"{len(brokers)}")
    if target == "controller" and not control:
        raise ClusterConfigError("partition:controller: this system has no control-plane nodes to cut off")
