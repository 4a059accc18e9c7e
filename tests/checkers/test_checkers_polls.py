"""checkers/polls.py: poll-skip, nonmonotonic-poll and their in-poll variants."""
from __future__ import annotations

from fencepost.checkers.anomaly import INT_NONMONOTONIC_POLL, INT_POLL_SKIP, NONMONOTONIC_POLL, POLL_SKIP
from fencepost.checkers.polls import MAX_SKIPPED_LISTED, check_polls
from tests.support.checkers_support import history, log, named, poll, reset, send

FINAL = log("a", "b", "c", "d", "e", "f")  # every offset 0..5 known


def polls_of(*polls, final=FINAL, resets=()):
    return check_polls(history(polls=polls, final=final, resets=resets))


def test_contiguous_polls_are_fine():
    assert polls_of(poll(0, *log("a", "b")), poll(2, *log("c", "d", start=2))) == []


def test_poll_jumping_over_a_known_offset_is_a_skip():
    [d] = named(polls_of(poll(0, *log("a", "b")), poll(2, (3, "d"), (4, "e"))), POLL_SKIP)
    assert d["process"] == 100
    assert (d["previous_last_offset"], d["first_offset"]) == (1, 3)
    assert d["skipped"] == [2] and d["skipped_count"] == 1
    assert d["ops"] == [[0, 1], [2, 3]]


def test_gap_over_offsets_nobody_knows_is_not_a_skip():
    # Offset 2 is in no ack, poll or final read (a control record, say).
    final = [(0, "a"), (1, "b"), (3, "d")]
    assert polls_of(poll(0, *log("a", "b")), poll(2, (3, "d")), final=final) == []


def test_known_offsets_come_from_acks_too():
    ph = history(sends=[send(0, "c", 2)], polls=[poll(2, *log("a", "b")), poll(4, (3, "d"))],
                 final=None)
    [d] = named(check_polls(ph), POLL_SKIP)
    assert d["skipped"] == [2]


def test_poll_going_back_is_nonmonotonic():
    [d] = named(polls_of(poll(0, *log("a", "b", "c")), poll(2, (1, "b"), (2, "c"))),
                NONMONOTONIC_POLL)
    assert (d["previous_last_offset"], d["first_offset"]) == (2, 1)
    assert d["ops"] == [[0, 1], [2, 3]]


def test_poll_repeating_the_last_offset_is_nonmonotonic():
    found = polls_of(poll(0, *log("a", "b")), poll(2, (1, "b")))
    assert [a.name for a in found] == [NONMONOTONIC_POLL]


def test_an_assign_between_polls_allows_any_jump():
    found = polls_of(poll(0, *log("a", "b", "c")), poll(4, (0, "a")), poll(6, (5, "f")),
                     resets=[reset(2), reset(5, f="crash")])
    assert found == []


def test_a_reset_of_another_process_changes_nothing():
    found = polls_of(poll(0, *log("a", "b", "c")), poll(4, (0, "a")), resets=[reset(2, process=7)])
    assert [a.name for a in found] == [NONMONOTONIC_POLL]


def test_processes_are_compared_only_with_themselves():
    found = polls_of(poll(0, *log("a", "b", "c")), poll(2, *log("a", "b"), process=101),
                     poll(4, (3, "d")), poll(6, (2, "c"), process=101))
    assert found == []


def test_polls_that_returned_nothing_here_neither_reset_nor_compare():
    found = polls_of(poll(0, *log("a", "b")), poll(2), poll(4, (4, "e")))
    [d] = named(found, POLL_SKIP)
    assert d["skipped"] == [2, 3] and d["ops"] == [[0, 1], [4, 5]]


def test_failed_polls_are_passed_over():
    found = polls_of(poll(0, *log("a", "b")), poll(2, outcome="fail"), poll(4, (4, "e")))
    assert [a.name for a in found] == [POLL_SKIP]


def test_an_info_poll_forgets_the_position():
    # It may have consumed offsets 2 and 3 without anybody seeing them.
    found = polls_of(poll(0, *log("a", "b")), poll(2, outcome="info"), poll(4, (4, "e")))
    assert found == []


def test_a_skip_lists_at_most_ten_offsets_and_counts_them_all():
    final = log(*[f"v{k}" for k in range(40)])
    [d] = named(polls_of(poll(0, (0, "v0")), poll(2, (30, "v30")), final=final), POLL_SKIP)
    assert d["skipped"] == list(range(1, 1 + MAX_SKIPPED_LISTED))
    assert d["skipped_count"] == 29


# --- inside one poll --------------------------------------------------------------


def test_records_in_order_inside_a_poll_are_fine():
    assert polls_of(poll(0, *log("a", "b", "c", "d"))) == []


def test_poll_stepping_over_a_known_offset_is_an_internal_skip():
    [d] = named(polls_of(poll(0, (0, "a"), (1, "b"), (3, "d"))), INT_POLL_SKIP)
    assert (d["offset"], d["next_offset"], d["skipped"], d["skipped_count"]) == (1, 3, [2], 1)
    assert d["ops"] == [[0, 1]]


def test_internal_gap_over_unknown_offsets_is_fine():
    assert polls_of(poll(0, (0, "a"), (3, "d")), final=[(0, "a"), (3, "d")]) == []


def test_offsets_going_back_inside_a_poll_are_internally_nonmonotonic():
    found = polls_of(poll(0, (0, "a"), (2, "c"), (1, "b")))
    assert sorted(a.name for a in found) == [INT_NONMONOTONIC_POLL, INT_POLL_SKIP]
    [d] = named(found, INT_NONMONOTONIC_POLL)
    assert (d["offset"], d["next_offset"]) == (2, 1)


def test_one_offset_twice_inside_a_poll_is_internally_nonmonotonic():
    [d] = named(polls_of(poll(0, (0, "a"), (1, "b"), (1, "b"))), INT_NONMONOTONIC_POLL)
    assert (d["offset"], d["next_offset"]) == (1, 1)
