"""checkers/replicas.py: replica-divergence below the high watermarks."""
from __future__ import annotations

from fencepost.checkers.anomaly import REPLICA_DIVERGENCE
from fencepost.checkers.replicas import replica_divergence
from tests.support.checkers_support import history, log, named, send


def diverged(replicas, hws, sends=()):
    return named(replica_divergence(history(sends=sends, final=None, replicas=replicas, hws=hws)),
                 REPLICA_DIVERGENCE)


def test_identical_replicas_agree():
    logs = {n: log("a", "b", "c") for n in ("n1", "n2", "n3")}
    assert diverged(logs, {"n1": 3, "n2": 3, "n3": 3}) == []


def test_different_values_below_both_hws_diverge():
    [d] = diverged({"n1": log("a", "b", "c"), "n2": log("a", "x", "c")}, {"n1": 3, "n2": 3},
                   sends=[send(0, "b", 1), send(2, "x", outcome="info")])
    assert d["offset"] == 1 and d["how"] == "different"
    assert d["nodes"] == ["n1", "n2"] and d["values"] == {"n1": "b", "n2": "x"}
    assert d["high_watermarks"] == {"n1": 3, "n2": 3}
    assert d["ops"] == [[0, 1], [2, 3]]  # the sends that wrote those values
    assert "n2 holds 'x'" in d["explanation"]


def test_differences_above_a_hw_are_an_uncommitted_tail():
    # n2's record at 2 is above its HW: not committed there, so not judged.
    assert diverged({"n1": log("a", "b", "c"), "n2": log("a", "b", "x")}, {"n1": 3, "n2": 2}) == []


def test_a_record_the_other_replica_lacks_below_its_hw_is_missing():
    [d] = diverged({"n1": log("a", "b", "c"), "n2": log("a", "b")}, {"n1": 3, "n2": 3})
    assert (d["offset"], d["how"]) == (2, "missing")
    assert d["values"] == {"n1": "c", "n2": None}


def test_a_lagging_replica_with_a_low_hw_is_not_missing_anything():
    assert diverged({"n1": log("a", "b", "c"), "n2": log("a")}, {"n1": 3, "n2": 1}) == []


def test_divergence_deep_below_the_lowest_hw_is_found():
    # Below every HW: the fast path compares whole prefixes, then must look closer.
    [d] = diverged({"n1": log("a", "b", "c", "d"), "n2": log("a", "b", "c", "d"),
                    "n3": log("z", "b", "c")}, {"n1": 4, "n2": 4, "n3": 3})
    assert d["offset"] == 0 and d["values"] == {"n1": "a", "n2": "a", "n3": "z"}


def test_three_replicas_one_anomaly_per_offset():
    found = diverged({"n1": log("a", "b"), "n2": log("a", "x"), "n3": log("a", "y")},
                     {"n1": 2, "n2": 2, "n3": 2})
    assert [d["offset"] for d in found] == [1]
    assert found[0]["values"] == {"n1": "b", "n2": "x", "n3": "y"}


def test_replicas_without_a_state_are_not_judged():
    assert diverged({"n1": log("a"), "n2": log("x")}, {"n1": 1}) == []


def test_a_replica_with_a_state_but_no_log_lacks_everything_below_its_hw():
    found = diverged({"n1": log("a", "b")}, {"n1": 2, "n2": 2})
    assert [(d["offset"], d["how"]) for d in found] == [(0, "missing"), (1, "missing")]
