"""clusters/recovery.py: whether partitions can still recover, judged from the partition views,
the nodes' states and the fatal markers they logged (a cluster's answers given here as data; the
real clusters' answers are exercised by the system tests of runs that quiesce)."""
from __future__ import annotations

from typing import Any, Callable

import pytest

from fencepost.clusters import HostError, NotRejoining, PartitionView
from fencepost.clusters.recovery import Recovery
from fencepost.clusters.systems.markers import FatalMarker


class Answers:
    """What Recovery asks of a cluster (recovery.Answers), answered from fixed data."""

    def __init__(self, views: dict[int, PartitionView], states: dict[str, str],
                 markers: dict[str, list[FatalMarker]] | None = None) -> None:
        self.views, self.states, self.markers = views, states, markers or {}

    def partition_view(self, topic: str, partition: int) -> PartitionView:
        if partition not in self.views:
            raise HostError(f"no view of {topic}-{partition}")
        return self.views[partition]

    def partitions(self, topic: str) -> list[int]:
        return sorted(self.views)

    def node_state(self, node: str) -> str:
        return self.states[node]

    def fatal_markers(self, node: str) -> list[FatalMarker]:
        return self.markers.get(node, [])

    def wait_for(self, condition: Callable[[], Any], timeout: float, what: str) -> Any:
        return condition() or pytest.fail(f"not yet: {what}")


def view(p: int, leader: str | None, isr: tuple[str, ...], replicas: tuple[str, ...] = ("n1", "n2", "n3")):
    return PartitionView("fp", p, leader, 3, replicas, isr)


RUNNING = {"n1": "running", "n2": "running", "n3": "running"}


def test_live_replicas_may_recover():
    recovery = Recovery(Answers({0: view(0, "n1", ("n1",))}, RUNNING))
    assert recovery.unrecoverable("fp", [0], min_isr=2) is None
    assert recovery.offline("fp", [0]) == {}


def test_fewer_live_replicas_than_min_isr_is_unrecoverable():
    states = {**RUNNING, "n2": "down", "n3": "down"}
    recovery = Recovery(Answers({0: view(0, "n1", ("n1",))}, states))
    why = recovery.unrecoverable("fp", [0], min_isr=2)
    assert why is not None and "fp-0 keeps 1 of its replicas, fewer than min.insync.replicas=2" in why
    assert "n2 is not running" in why and "n3 is not running" in why


def test_no_live_isr_member_is_offline_unless_unclean_election():
    states = {**RUNNING, "n1": "down"}
    markers = {"n2": [FatalMarker("n2", "ERROR giving up fp-0", "fp-0")]}
    answers = Answers({0: view(0, None, ("n1", "n2"))}, states, markers)
    recovery = Recovery(answers)
    offline = recovery.offline("fp", [0])
    assert list(offline) == [0] and "no live member of its ISR ['n1', 'n2']" in offline[0]
    assert "n2 gave fp-0 up (it logged: ERROR giving up fp-0)" in offline[0]
    assert recovery.offline("fp", [0], unclean=True) == {}
    assert recovery.unrecoverable("fp", [0], min_isr=1) == offline[0]


def test_a_halting_node_is_not_rejoining():
    markers = {"n3": [FatalMarker("n3", "FATAL halting", None, halts=True)]}
    recovery = Recovery(Answers({0: view(0, "n1", ("n1", "n2"))}, RUNNING, markers))
    assert recovery.not_rejoining("n3", "fp", 0) == "n3 is halting (it logged: FATAL halting)"
    assert recovery.not_rejoining("n2", "fp", 0) is None


def test_an_unreadable_view_judges_nothing():
    recovery = Recovery(Answers({}, RUNNING))
    assert recovery.unrecoverable("fp", [0], min_isr=2) is None
    assert recovery.offline("fp", [0]) == {}


def test_waiting_for_a_full_isr_ends_at_once_when_a_replica_never_returns():
    states = {**RUNNING, "n3": "down"}
    recovery = Recovery(Answers({0: view(0, "n1", ("n1", "n2"))}, states))
    with pytest.raises(NotRejoining, match="n3 is not running"):
        recovery.wait_for_full_isr("fp", 1)
    full = Recovery(Answers({0: view(0, "n1", ("n1", "n2", "n3"))}, RUNNING))
    full.wait_for_full_isr("fp", 1)
