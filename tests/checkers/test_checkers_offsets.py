"""checkers/offsets.py: each anomaly on a history that has it (exactly what is
reported), and near misses that must stay quiet."""
from __future__ import annotations

from fencepost.checkers.anomaly import (
    ABORTED_READ,
    DUPLICATE,
    FUTURE_READ,
    INCONSISTENT_OFFSETS,
    LOST_WRITE,
    NONMONOTONIC_SEND,
    PHANTOM_READ,
    TRUNCATED_READ,
)
from fencepost.checkers.offsets import (
    MAX_LISTED,
    aborted_reads,
    check_offsets,
    duplicates,
    future_reads,
    inconsistent_offsets,
    lost_writes,
    nonmonotonic_sends,
    observe,
    op_refs,
    phantom_reads,
    truncated_reads,
)
from tests.support.checkers_support import history, log, named, names, poll, send


def run(check, ph):
    return check(ph, observe(ph))


# --- a clean history -----------------------------------------------------------


def test_a_clean_history_has_no_offset_anomaly():
    ph = history(
        sends=[send(0, "0-0", 0), send(2, "0-1", 1, process=1), send(4, "0-2", 2)],
        polls=[poll(6, *log("0-0", "0-1")), poll(8, (2, "0-2"))],
        final=log("0-0", "0-1", "0-2"))
    found = check_offsets(ph)
    assert found.anomalies == []
    assert found.unjudged == 0


# --- lost-write -------------------------------------------------------------------


def test_acked_write_missing_from_the_final_read_is_lost():
    ph = history(sends=[send(0, "a", 0), send(2, "b", 1), send(4, "c", 2)],
                 final=[(0, "a"), (2, "c")])
    lost = run(lost_writes, ph)
    assert lost.unjudged == 0
    [d] = [a.details for a in lost.anomalies]
    assert d["value"] == "b" and d["offset"] == 1 and d["how"] == "missing"
    assert d["send_outcome"] == "ok"
    assert d["ops"] == [[2, 3]]
    assert "final_value" not in d
    assert "offset 1" in d["explanation"] and "'b'" in d["explanation"]


def test_acked_write_overwritten_names_the_value_now_there():
    ph = history(sends=[send(0, "a", 0), send(2, "b", 1)], final=[(0, "a"), (1, "x")])
    [d] = [a.details for a in run(lost_writes, ph).anomalies]
    assert (d["value"], d["offset"], d["how"], d["final_value"]) == ("b", 1, "overwritten", "x")


def test_lost_write_says_where_the_value_sits_instead():
    ph = history(sends=[send(0, "a", 0), send(2, "b", 1)], final=[(0, "a"), (2, "b")])
    [d] = [a.details for a in run(lost_writes, ph).anomalies]
    assert (d["offset"], d["how"], d["final_offsets"]) == (1, "missing", [2])


def test_incomplete_final_read_below_the_acked_offset_is_unjudged_not_lost():
    ph = history(sends=[send(0, "a", 0), send(2, "b", 1), send(4, "c", 2)],
                 final=[(0, "a")], complete=False)
    lost = run(lost_writes, ph)
    assert lost.anomalies == []
    assert lost.unjudged == 2


def test_incomplete_final_read_that_reached_past_the_offset_still_judges_it():
    ph = history(sends=[send(0, "a", 0), send(2, "b", 1), send(4, "c", 2), send(6, "d", 3)],
                 final=[(0, "a"), (2, "c")], complete=False)
    lost = run(lost_writes, ph)
    assert [(a.details["offset"], a.details["how"]) for a in lost.anomalies] == [(1, "missing")]
    assert lost.unjudged == 1  # offset 3, beyond what the final read reached


def test_complete_final_read_judges_offsets_past_its_end():
    ph = history(sends=[send(0, "a", 0), send(2, "b", 1)], final=[(0, "a")])
    lost = run(lost_writes, ph)
    assert [a.details["offset"] for a in lost.anomalies] == [1]
    assert lost.unjudged == 0


def test_without_a_final_read_every_ack_is_unjudged():
    ph = history(sends=[send(0, "a", 0), send(2, "b", 1)], final=None)
    lost = run(lost_writes, ph)
    assert lost.anomalies == [] and lost.unjudged == 2


def test_info_send_never_seen_is_not_lost():
    ph = history(sends=[send(0, "a", 0), send(2, "b", outcome="info")], final=[(0, "a")])
    assert run(lost_writes, ph).anomalies == []


def test_info_send_seen_only_by_the_final_read_is_not_lost():
    ph = history(sends=[send(0, "a", 0), send(2, "b", outcome="info")], final=log("a", "b"))
    assert run(lost_writes, ph).anomalies == []


def test_info_send_observed_by_a_poll_then_gone_is_lost():
    ph = history(sends=[send(0, "a", 0), send(2, "b", outcome="info", done=9)],
                 polls=[poll(4, (0, "a"), (1, "b"))],
                 final=[(0, "a"), (1, "c")])
    [d] = [a.details for a in run(lost_writes, ph).anomalies]
    assert (d["value"], d["offset"], d["how"], d["final_value"]) == ("b", 1, "overwritten", "c")
    assert d["send_outcome"] == "info"
    assert d["ops"] == [[2, 9], [4, 5]]  # the send and the poll that saw it


def test_info_send_observed_by_a_poll_beyond_an_incomplete_final_is_unjudged():
    ph = history(sends=[send(0, "a", 0), send(2, "b", outcome="info")],
                 polls=[poll(4, (0, "a"), (1, "b"))], final=[(0, "a")], complete=False)
    lost = run(lost_writes, ph)
    assert lost.anomalies == [] and lost.unjudged == 1


# --- duplicate ----------------------------------------------------------------------


def test_value_at_two_offsets_is_a_duplicate():
    ph = history(sends=[send(0, "a", 0), send(2, "b", 1)],
                 polls=[poll(4, (0, "a"), (1, "b"), (2, "a"))],
                 final=[(0, "a"), (1, "b"), (2, "a")])
    [d] = named(run(duplicates, ph), DUPLICATE)
    assert d["value"] == "a" and d["offsets"] == [0, 2]
    assert d["ops"] == [[0, 1], [4, 5]]
    assert {(o["offset"], o["by"]) for o in d["observed"]} == {
        (0, "ack"), (0, "poll"), (2, "poll"), (0, "final"), (2, "final")}


def test_value_seen_many_times_at_one_offset_is_not_a_duplicate():
    # The final read holds "a" once; the ack and two polls agree on its offset.
    ph = history(sends=[send(0, "a", 0)],
                 polls=[poll(2, (0, "a")), poll(4, (0, "a"), process=101)], final=[(0, "a")])
    assert run(duplicates, ph) == []


def test_duplicate_between_an_ack_and_the_final_read():
    # A producer retry wrote "a" twice; the final read has it once, at another offset.
    ph = history(sends=[send(0, "a", 0)], final=[(0, "z"), (1, "a")])
    [d] = named(run(duplicates, ph), DUPLICATE)
    assert d["offsets"] == [0, 1]


# --- inconsistent-offsets ---------------------------------------------------------------


def test_two_values_at_one_offset_are_inconsistent():
    ph = history(sends=[send(0, "a", 0), send(2, "b", 1)],
                 polls=[poll(4, (0, "a"), (1, "x"))], final=[(0, "a"), (1, "b")])
    [d] = named(run(inconsistent_offsets, ph), INCONSISTENT_OFFSETS)
    assert d["offset"] == 1 and d["values"] == ["b", "x"]
    assert d["ops"] == [[2, 3], [4, 5]]
    assert sorted((o["value"], o["by"]) for o in d["observed"]) == [
        ("b", "ack"), ("b", "final"), ("x", "poll")]


def test_one_value_seen_by_every_source_is_consistent():
    ph = history(sends=[send(0, "a", 0)], polls=[poll(2, (0, "a"))], final=[(0, "a")])
    assert run(inconsistent_offsets, ph) == []


# --- truncated-read -------------------------------------------------------------------


def test_polled_record_replaced_in_the_final_read_is_a_truncated_read():
    ph = history(sends=[send(0, "a", 0), send(2, "b", outcome="info", done=20), send(4, "c", 1)],
                 polls=[poll(6, (0, "a"), (1, "b")), poll(8, (1, "b"), process=101)],
                 final=[(0, "a"), (1, "c")])
    [d] = named(run(truncated_reads, ph), TRUNCATED_READ)
    assert (d["offset"], d["value"], d["how"], d["final_value"]) == (1, "b", "overwritten", "c")
    assert d["ops"] == [[2, 20], [6, 7], [8, 9]]  # the writer and both polls


def test_polled_record_missing_from_the_final_read():
    ph = history(sends=[send(0, "a", 0), send(2, "b", 1)], polls=[poll(4, (0, "a"), (1, "b"))],
                 final=[(0, "a")])
    [d] = named(run(truncated_reads, ph), TRUNCATED_READ)
    assert (d["offset"], d["how"]) == (1, "missing")


def test_a_poll_reading_old_records_late_is_fine():
    ph = history(sends=[send(0, "a", 0), send(2, "b", 1)],
                 polls=[poll(50, (0, "a"), (1, "b"))], final=log("a", "b"))
    assert run(truncated_reads, ph) == []


def test_polled_record_beyond_an_incomplete_final_read_is_not_judged():
    ph = history(sends=[send(0, "a", 0), send(2, "b", 1)], polls=[poll(4, (0, "a"), (1, "b"))],
                 final=[(0, "a")], complete=False)
    assert run(truncated_reads, ph) == []


# --- nonmonotonic-send ----------------------------------------------------------------


def test_later_send_at_a_lower_offset_is_nonmonotonic():
    ph = history(sends=[send(0, "a", 5), send(2, "b", 3, process=1)], final=None)
    [d] = named(run(nonmonotonic_sends, ph), NONMONOTONIC_SEND)
    assert (d["value"], d["offset"], d["earlier_value"], d["earlier_offset"]) == ("b", 3, "a", 5)
    assert d["send_outcome"] == "ok"
    assert d["ops"] == [[0, 1], [2, 3]]


def test_later_send_at_the_same_offset_is_nonmonotonic():
    ph = history(sends=[send(0, "a", 5), send(2, "b", 5)], final=None)
    assert [d["offset"] for d in named(run(nonmonotonic_sends, ph), NONMONOTONIC_SEND)] == [5]


def test_concurrent_sends_may_land_in_any_order():
    # b was invoked (line 1) before a completed (line 3): no real-time order between them.
    ph = history(sends=[send(0, "a", 5, done=3), send(1, "b", 3, process=1, done=4)], final=None)
    assert run(nonmonotonic_sends, ph) == []


def test_info_send_found_below_an_earlier_ack_is_nonmonotonic():
    ph = history(sends=[send(0, "a", 5), send(2, "b", outcome="info", process=1)],
                 final=[(4, "b"), (5, "a")])
    [d] = named(run(nonmonotonic_sends, ph), NONMONOTONIC_SEND)
    assert (d["value"], d["offset"], d["send_outcome"], d["earlier_offset"]) == ("b", 4, "info", 5)


def test_the_highest_earlier_ack_is_the_one_named():
    ph = history(sends=[send(0, "a", 7), send(2, "b", 8), send(4, "c", 6, process=1)],
                 final=None)
    [d] = named(run(nonmonotonic_sends, ph), NONMONOTONIC_SEND)
    assert (d["earlier_value"], d["earlier_offset"]) == ("b", 8)
    assert d["ops"] == [[2, 3], [4, 5]]


def test_failed_sends_are_not_judged_for_order():
    ph = history(sends=[send(0, "a", 5), send(2, "b", outcome="fail")], final=None)
    assert run(nonmonotonic_sends, ph) == []


def test_increasing_sends_are_monotonic():
    ph = history(sends=[send(2 * k, f"v{k}", k) for k in range(50)], final=None)
    assert run(nonmonotonic_sends, ph) == []


# --- future-read -----------------------------------------------------------------------


def test_poll_that_read_an_offset_before_its_send_began_is_a_future_read():
    # The poll read offsets 0..1 (completed on line 3); send b began on line 4
    # and was acked at offset 1.
    ph = history(sends=[send(0, "a", 0), send(4, "b", 1, process=1)],
                 polls=[poll(2, (0, "a"), (1, "x"))], final=None)
    [d] = named(run(future_reads, ph), FUTURE_READ)
    assert (d["value"], d["offset"], d["poll_max_offset"]) == ("b", 1, 1)
    assert d["ops"] == [[2, 3], [4, 5]]


def test_poll_concurrent_with_the_send_is_not_a_future_read():
    ph = history(sends=[send(0, "a", 0), send(2, "b", 1, done=6)],
                 polls=[poll(3, (0, "a"), (1, "b"))], final=None)
    assert run(future_reads, ph) == []


def test_poll_of_lower_offsets_before_a_send_is_not_a_future_read():
    ph = history(sends=[send(0, "a", 0), send(4, "b", 1)], polls=[poll(2, (0, "a"))], final=None)
    assert run(future_reads, ph) == []


# --- aborted-read, phantom-read -----------------------------------------------------------


def test_read_of_a_failed_send_is_an_aborted_read():
    ph = history(sends=[send(0, "a", 0), send(2, "b", outcome="fail")],
                 polls=[poll(4, (0, "a"), (1, "b"))], final=log("a", "b"))
    [d] = named(run(aborted_reads, ph), ABORTED_READ)
    assert d["value"] == "b" and d["offsets"] == [1]
    assert d["ops"] == [[2, 3], [4, 5]]


def test_read_of_an_info_send_is_not_an_aborted_read():
    ph = history(sends=[send(0, "a", 0), send(2, "b", outcome="info")],
                 polls=[poll(4, (0, "a"), (1, "b"))], final=log("a", "b"))
    assert run(aborted_reads, ph) == []


def test_failed_send_never_read_is_fine():
    ph = history(sends=[send(0, "a", 0), send(2, "b", outcome="fail")], final=log("a"))
    assert run(aborted_reads, ph) == []


def test_value_nobody_sent_is_a_phantom_read():
    ph = history(sends=[send(0, "a", 0)], polls=[poll(2, (0, "a"), (1, "ghost"))],
                 final=log("a", "ghost"))
    [d] = named(run(phantom_reads, ph), PHANTOM_READ)
    assert d["value"] == "ghost" and d["offsets"] == [1]
    assert d["ops"] == [[2, 3]]
    assert {o["by"] for o in d["observed"]} == {"poll", "final"}


def test_every_read_value_sent_means_no_phantom():
    ph = history(sends=[send(0, "a", 0), send(2, "b", outcome="info")], final=log("a", "b"))
    assert run(phantom_reads, ph) == []


# --- all together, and the details' shape ------------------------------------------------


def test_a_truncation_shows_as_lost_write_truncated_read_and_inconsistent_offset():
    # "b" was acked at 1 and polled there; then the log was truncated and "c" took offset 1.
    ph = history(sends=[send(0, "a", 0), send(2, "b", 1), send(6, "c", 1)],
                 polls=[poll(4, (0, "a"), (1, "b"))], final=[(0, "a"), (1, "c")])
    found = check_offsets(ph)
    assert names(found.anomalies) == sorted([
        LOST_WRITE, TRUNCATED_READ, INCONSISTENT_OFFSETS, NONMONOTONIC_SEND, FUTURE_READ])


def test_op_lists_are_cut_and_counted():
    ops = [send(2 * k, f"v{k}", k) for k in range(MAX_LISTED + 5)]
    refs = op_refs(ops)
    assert len(refs["ops"]) == MAX_LISTED and refs["ops_total"] == MAX_LISTED + 5
    assert refs["ops"][0] == [0, 1]


def test_anomalies_serialise_to_json():
    import orjson

    ph = history(sends=[send(0, "a", 0), send(2, "b", 1), send(6, "c", 1)],
                 polls=[poll(4, (0, "a"), (1, "b"))], final=[(0, "a"), (1, "c")])
    for a in check_offsets(ph).anomalies:
        out = orjson.loads(orjson.dumps(a.to_json()))
        assert out["type"] == a.name and out["explanation"] and out["ops"]
