"""Grudges and process targets, pure: every partition target is symmetric and has the components
nemesis/grudges.py documents (the control plane placed as said there); majorities-ring and
bridge have their defining properties; seeded choices repeat."""
from __future__ import annotations

import random
from itertools import combinations

import pytest

from fencepost.clusters.errors import ClusterConfigError
from fencepost.nemesis.grudges import (
    complete_grudge,
    components_for,
    grudge_for,
    grudge_json,
    is_symmetric,
    isolate_from,
    majorities_ring,
    sees,
)
from fencepost.nemesis.spec import PARTITION_TARGETS, ROLE_TARGETS
from fencepost.nemesis.targets import pick_nodes

CONTROL = ["controller"]


def brokers(n: int) -> list[str]:
    return [f"n{i}" for i in range(1, n + 1)]


def connected(grudge, a: str, b: str) -> bool:
    return b not in grudge.get(a, ()) and a not in grudge.get(b, ())


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 9])
@pytest.mark.parametrize("target", PARTITION_TARGETS)
def test_every_grudge_is_symmetric_and_names_only_cluster_nodes(target, n):
    nodes = brokers(n)
    for seed in range(20):
        try:
            grudge = grudge_for(target, nodes, CONTROL, random.Random(seed), leader="n1")
        except ClusterConfigError:
            assert n < 3 and target in ("minority", "bridge", "majorities-ring")
            continue
        assert grudge, f"{target} on {n} brokers cuts nothing"
        assert is_symmetric(grudge)
        everyone = set(nodes) | set(CONTROL)
        assert set(grudge) <= everyone and all(drops <= everyone for drops in grudge.values())
        assert all(node not in drops for node, drops in grudge.items())


def test_complete_grudge_cuts_exactly_between_components():
    grudge = complete_grudge([{"a", "b"}, {"c"}, {"d", "e"}])
    assert grudge_json(grudge) == {"a": ["c", "d", "e"], "b": ["c", "d", "e"], "c": ["a", "b", "d", "e"],
                                   "d": ["a", "b", "c"], "e": ["a", "b", "c"]}


@pytest.mark.parametrize("n, cut", [(1, 1), (3, 1), (5, 1), (7, 1)])
def test_one_isolates_one_broker_from_everything_else(n, cut):
    nodes = brokers(n)
    isolated, rest = components_for("one", nodes, CONTROL, random.Random(3))
    assert len(isolated) == cut and isolated <= set(nodes)
    assert rest == set(nodes) - isolated | {"controller"}
    grudge = grudge_for("one", nodes, CONTROL, random.Random(3))
    (alone,) = isolated
    assert grudge[alone] == frozenset(rest)


@pytest.mark.parametrize("n, size", [(3, 1), (4, 1), (5, 2), (6, 2), (7, 3)])
def test_minority_isolates_a_strict_minority_of_brokers_and_leaves_the_controller_with_the_rest(n, size):
    nodes = brokers(n)
    isolated, rest = components_for("minority", nodes, CONTROL, random.Random(n))
    assert len(isolated) == size and 2 * size < n
    assert "controller" in rest and rest == set(nodes) - isolated | {"controller"}


@pytest.mark.parametrize("n, size", [(1, 1), (2, 2), (3, 2), (4, 3), (5, 3)])
def test_majority_isolates_a_majority_of_brokers_from_the_rest_and_the_controller(n, size):
    nodes = brokers(n)
    isolated, rest = components_for("majority", nodes, CONTROL, random.Random(n))
    assert len(isolated) == size and 2 * size > n and "controller" not in isolated
    assert rest == set(nodes) - isolated | {"controller"}
    grudge = grudge_for("majority", nodes, CONTROL, random.Random(n))
    assert all(grudge[b] >= {"controller"} for b in isolated)


def test_leader_isolates_that_node_from_everyone():
    grudge = grudge_for("leader", brokers(3), CONTROL, random.Random(0), leader="n2")
    assert grudge_json(grudge) == {"controller": ["n2"], "n1": ["n2"], "n2": ["controller", "n1", "n3"],
                                   "n3": ["n2"]}
    with pytest.raises(ClusterConfigError, match="leader"):
        grudge_for("leader", brokers(3), CONTROL, random.Random(0), leader=None)


def test_controller_isolates_the_control_plane_from_every_broker_and_nothing_else():
    grudge = grudge_for("controller", brokers(4), ["controller", "zk"], random.Random(0))
    assert grudge["controller"] == grudge["zk"] == frozenset(brokers(4))
    assert all(grudge[b] == {"controller", "zk"} for b in brokers(4))
    assert connected(grudge, "controller", "zk") and connected(grudge, "n1", "n4")
    with pytest.raises(ClusterConfigError, match="no control-plane"):
        grudge_for("controller", brokers(3), [], random.Random(0))


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7])
def test_bridge_one_broker_sees_everyone_the_two_sides_do_not_see_each_other(n):
    nodes = brokers(n)
    for seed in range(10):
        grudge = grudge_for("bridge", nodes, CONTROL, random.Random(seed))
        first, second = components_for("bridge", nodes, CONTROL, random.Random(seed))
        (bridge,) = first & second
        assert bridge not in grudge  # drops nothing
        assert all(bridge not in drops for drops in grudge.values())  # nobody drops it
        assert len(first) == n // 2 + 1 and len(second) == n - n // 2 + 1  # halves, the bridge in both
        assert "controller" in second
        for a in first - {bridge}:
            for b in second - {bridge}:
                assert not connected(grudge, a, b)
        for component in (first, second):
            assert all(connected(grudge, a, b) for a, b in combinations(component, 2))


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 8, 9])
def test_majorities_ring_every_broker_sees_a_majority_and_no_two_the_same(n):
    nodes = brokers(n)
    for seed in range(10):
        grudge = majorities_ring(nodes, random.Random(seed))
        assert is_symmetric(grudge) and grudge
        views = sees(grudge, nodes)
        assert all(len(v) > n / 2 for v in views.values()), views
        assert len(set(views.values())) == n, views  # no two brokers see the same set


def test_majorities_ring_of_five_is_a_ring_each_broker_with_its_two_neighbours():
    grudge = majorities_ring(brokers(5), random.Random(11))
    views = sees(grudge, brokers(5))
    assert all(len(v) == 3 for v in views.values())
    # walk the ring: from any broker, always to the neighbour not yet seen, back home after 5 steps
    start = "n1"
    path, here = [start], start
    while len(path) < 5:
        here = next(iter(views[here] - {here} - set(path)))
        path.append(here)
    assert start in views[path[-1]]


def test_majorities_ring_leaves_the_control_plane_connected_to_all():
    grudge = grudge_for("majorities-ring", brokers(5), CONTROL, random.Random(2))
    assert "controller" not in grudge and all("controller" not in d for d in grudge.values())


def test_isolate_from_cuts_only_between_the_node_and_its_peers():
    grudge = isolate_from("n2", ["controller", "zk"])
    assert grudge_json(grudge) == {"controller": ["n2"], "n2": ["controller", "zk"], "zk": ["n2"]}
    assert isolate_from("n2", ["n2"]) == {}


@pytest.mark.parametrize("target", PARTITION_TARGETS)
def test_the_same_seed_gives_the_same_grudge_and_the_node_order_does_not_matter(target):
    nodes = brokers(7)
    one = grudge_for(target, nodes, CONTROL, random.Random(42), leader="n3")
    again = grudge_for(target, list(reversed(nodes)), CONTROL, random.Random(42), leader="n3")
    assert one == again
    if target not in (*ROLE_TARGETS, "controller"):  # a role names its node: nothing to draw
        others = {str(grudge_json(grudge_for(target, nodes, CONTROL, random.Random(s))))
                  for s in range(10)}
        assert len(others) > 1, f"{target}: every seed gave the same grudge"


def test_grudge_json_sorts_and_drops_empty_entries():
    assert grudge_json({"n2": {"n1"}, "n1": {"n3", "n2"}, "n3": set()}) == {"n1": ["n2", "n3"], "n2": ["n1"]}


@pytest.mark.parametrize("target, n, expected", [("one", 5, 1), ("minority", 5, 2), ("majority", 5, 3),
                                                 ("all", 5, 5), ("minority", 3, 1), ("majority", 2, 2)])
def test_process_targets_pick_that_many_brokers(target, n, expected):
    nodes = brokers(n)
    picked = pick_nodes(target, nodes, CONTROL, random.Random(5))
    assert len(picked) == expected and set(picked) <= set(nodes) and picked == sorted(picked)
    assert picked == pick_nodes(target, nodes, CONTROL, random.Random(5))


def test_process_targets_leader_and_controller_and_their_refusals():
    assert pick_nodes("leader", brokers(3), CONTROL, random.Random(0), leader="n3") == ["n3"]
    assert pick_nodes("controller", brokers(3), CONTROL, random.Random(0)) == ["controller"]
    with pytest.raises(ClusterConfigError, match="at least 3 brokers"):
        pick_nodes("minority", brokers(2), CONTROL, random.Random(0))
    with pytest.raises(ClusterConfigError, match="no control-plane"):
        pick_nodes("controller", brokers(3), [], random.Random(0))
