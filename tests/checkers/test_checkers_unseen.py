"""checkers/unseen.py: acked values never polled, and their count over time."""
from __future__ import annotations

from fencepost.checkers.unseen import MAX_POINTS, downsample, unseen
from tests.support.checkers_support import history, log, poll, send


def test_acked_value_never_polled_is_unseen_and_says_whether_the_final_read_has_it():
    ph = history(sends=[send(0, "a", 0), send(2, "b", 1), send(4, "c", 2)],
                 polls=[poll(6, (0, "a"))], final=log("a", "b"))
    found = unseen(ph).anomalies
    assert [(a.details["value"], a.details["offset"], a.details["in_final"]) for a in found] == [
        ("b", 1, True), ("c", 2, False)]
    assert found[0].details["ops"] == [[2, 3]]


def test_value_polled_before_its_ack_arrived_is_seen():
    ph = history(sends=[send(0, "a", 0, done=5)], polls=[poll(2, (0, "a"))], final=log("a"))
    result = unseen(ph)
    assert result.anomalies == []
    assert result.series == [[30, 0], [50, 0]]  # poll done on line 3, ack on line 5


def test_failed_and_info_sends_are_never_unseen():
    ph = history(sends=[send(0, "a", outcome="fail"), send(2, "b", outcome="info")], final=[])
    assert unseen(ph).anomalies == []


def test_a_value_polled_at_another_offset_is_seen():
    ph = history(sends=[send(0, "a", 0)], polls=[poll(2, (7, "a"))], final=None)
    assert unseen(ph).anomalies == []


def test_series_counts_acked_but_not_yet_polled_at_each_completion():
    ph = history(
        sends=[send(0, "a", 0), send(2, "b", 1, process=1), send(4, "c", 2)],
        polls=[poll(6, (0, "a")), poll(8), poll(10, (1, "b"), (2, "c"))],
        final=log("a", "b", "c"))
    # Completions: a on line 1, b on 3, c on 5, polls on 7, 9 and 11; time = line * 10.
    assert unseen(ph).series == [[10, 1], [30, 2], [50, 3], [70, 2], [90, 2], [110, 0]]


def test_series_is_downsampled_to_the_limit():
    sends = [send(2 * k, f"v{k}", k) for k in range(3 * MAX_POINTS)]
    series = unseen(history(sends=sends, final=None)).series
    assert len(series) == MAX_POINTS
    assert series[0] == [10, 1] and series[-1] == [(6 * MAX_POINTS - 1) * 10, 3 * MAX_POINTS]
    assert all(a[0] < b[0] and a[1] < b[1] for a, b in zip(series, series[1:]))


def test_downsample_keeps_short_series_and_both_ends():
    assert downsample([1, 2, 3], 5) == [1, 2, 3]
    assert downsample(list(range(10)), 4) == [0, 3, 6, 9]
    assert downsample(list(range(10)), 1) == [9]


def test_with_keep_only_the_first_by_offset_carry_details_and_the_counts_stay_exact():
    # Acked out of offset order, none polled; "b" and "d" in the final read.
    sends = [send(0, "d", 3), send(2, "a", 0), send(4, "c", 2), send(6, "b", 1)]
    ph = history(sends=sends, final=log("a", "b", "x", "d"))
    full = unseen(ph)
    kept = unseen(ph, keep=2)
    assert [a.details["value"] for a in full.anomalies] == ["a", "b", "c", "d"]
    assert kept.anomalies[:2] == full.anomalies[:2]
    assert len(kept.anomalies) == 4 and all(a.details == {} and a.name == "unseen"
                                            for a in kept.anomalies[2:])
    assert kept.in_final == full.in_final == 3  # a, b and d
    assert kept.series == full.series
    assert unseen(ph, keep=10).anomalies == full.anomalies
