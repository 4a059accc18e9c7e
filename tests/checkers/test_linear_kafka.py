"""checkers/linear on Kafka partition histories: the translation, one hand-made
history per anomaly kind with its expected minimal counterexample, the HTML
page, budgets, and properties over generated valid histories."""
from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fencepost.checkers.linear.kafka import FINAL_READ, RetryCopy, check_partition, partition_ops
from fencepost.checkers.linear.logmodel import Append, LogModel, Read, ReadExact
from fencepost.checkers.linear.minimize import minimize
from fencepost.checkers.linear.search import check
from fencepost.checkers.partition import CheckOptions
from tests.support.linear_support import history, poll, send, simulate

# These tests are about the search: the witness shortcut is tested in test_linear_witness.py.
NOT_IDEMPOTENT = CheckOptions(idempotent=False, linear_method="search")
IDEMPOTENT = CheckOptions(idempotent=True, linear_method="search")


def actions(result):
    """The counterexample as (f, type, what) triples, order-free."""
    out = set()
    for e in result.counterexample:
        what = tuple(map(tuple, e["records"])) if "records" in e else (e["offset"], e["value"])
        out.add((e["f"], e["type"], what))
    return out


def assert_one_minimal(ops_of_cx, model=None):
    """The set fails, and dropping any one op (and the readers of what it
    wrote) makes it linearizable."""
    model = model or LogModel()
    assert check(model, ops_of_cx).linearizable is False
    for gone in ops_of_cx:
        written = set(model.provides(gone))
        rest = [o for o in ops_of_cx if o is not gone and not written & set(model.depends_on(o))]
        assert check(model, rest).linearizable is True, gone


# --- translation ---------------------------------------------------------------------


def test_translation_of_each_kind_of_op():
    ph = history(
        sends=[send(0, "0-0", 0, 3, offset=0),
               send(1, "1-0", 1, 4, outcome="fail"),
               send(2, "2-0", 2, 9, outcome="info"),  # seen at 1: an optional append
               send(3, "3-0", 5, None, outcome="info")],  # seen nowhere: dropped
        polls=[poll(4, 6, 8, (0, "0-0"), (1, "2-0")),
               poll(4, 10, 11),  # empty: dropped
               poll(5, 12, 13, (0, "0-0"), outcome="info")],  # not ok: dropped
        final=[(0, "0-0"), (1, "2-0"), (4, "9-9")])
    ops = partition_ops(ph, NOT_IDEMPOTENT)
    got = [(o.process, o.call, o.ret, o.input) for o in ops]
    assert got == [
        (0, 0, 3, Append(0, "0-0")),
        (2, 2, None, Append(1, "2-0")),
        (4, 6, 8, Read(((0, "0-0"), (1, "2-0")))),
        ("final", 14, 15, ReadExact(0, "0-0")),
        ("final", 14, 15, ReadExact(1, "2-0")),
        ("final", 14, 15, ReadExact(4, "9-9")),
    ]
    assert ops[0].ref is ph.sends[0] and ops[2].ref is ph.polls[0] and ops[3].ref == FINAL_READ


def test_final_read_checks_gaps_and_beyond_its_end_only_where_something_was_seen():
    sends = [send(0, "a", 0, 1, offset=0), send(0, "b", 2, 3, offset=2), send(0, "c", 4, 5, offset=7)]
    final = [(0, "a"), (5, "x")]

    def exact(ph):
        return sorted((o.input.offset, o.input.value) for o in partition_ops(ph, NOT_IDEMPOTENT)
                      if isinstance(o.input, ReadExact))

    # 2 is a gap someone wrote to; 1, 3, 4 nobody mentions; 7 lies past the end.
    assert exact(history(sends, final=final, complete=True)) == [(0, "a"), (2, None), (5, "x"), (7, None)]
    # An incomplete final read speaks only for the offsets it reached.
    assert exact(history(sends, final=final, complete=False)) == [(0, "a"), (2, None), (5, "x")]
    assert exact(history(sends, final=None)) == []


def test_non_idempotent_copies_become_optional_appends():
    ph = history(sends=[send(0, "a", 0, 5, offset=3)], final=[(1, "a"), (3, "a")])
    copies = [o for o in partition_ops(ph, NOT_IDEMPOTENT) if isinstance(o.ref, RetryCopy)]
    assert [(o.call, o.ret, o.input) for o in copies] == [(0, None, Append(1, "a"))]
    assert copies[0].ref.send is ph.sends[0]
    assert not [o for o in partition_ops(ph, IDEMPOTENT) if isinstance(o.ref, RetryCopy)]


def test_malformed_ok_send_is_an_actionable_error():
    ph = history(sends=[send(0, "a", 7, 8, offset=None)])
    with pytest.raises(ValueError, match=r"fp/1: the ok send at history line 7 \(value 'a'\) has no offset"):
        partition_ops(ph, NOT_IDEMPOTENT)


# --- valid histories ------------------------------------------------------------------


def test_concurrent_sends_polls_and_final_read_are_linearizable():
    ph = history(
        sends=[send(0, "0-0", 0, 6, offset=1), send(1, "1-0", 1, 4, offset=0),
               send(0, "0-1", 7, 9, offset=3)],  # 2 is a control batch: a gap
        polls=[poll(2, 2, 5, (0, "1-0")),  # saw 1-0 before its ack came back
               poll(2, 10, 11, (0, "1-0"), (1, "0-0")),  # reading behind: fine
               poll(3, 8, 12, (3, "0-1"))],
        final=[(0, "1-0"), (1, "0-0"), (3, "0-1")])
    result = check_partition(ph, NOT_IDEMPOTENT)
    assert result.linearizable is True
    assert result.counterexample == [] and result.html is None
    assert result.ops == 9


def test_info_send_observed_or_not():
    observed = history(sends=[send(0, "a", 0, 2, outcome="info"), send(1, "b", 3, 4, offset=1)],
                       polls=[poll(2, 5, 6, (0, "a"))], final=[(0, "a"), (1, "b")])
    assert check_partition(observed, IDEMPOTENT).linearizable is True
    unobserved = history(sends=[send(0, "a", 0, 2, outcome="info"), send(1, "b", 3, 4, offset=0)],
                         final=[(0, "b")])
    assert check_partition(unobserved, IDEMPOTENT).linearizable is True
    # Its timeout does not bound it: it may land after the info line.
    late = history(sends=[send(0, "a", 0, 2, outcome="info"), send(1, "b", 3, 4, offset=0)],
                   final=[(0, "b"), (1, "a")])
    assert check_partition(late, IDEMPOTENT).linearizable is True


# --- anomalies and their minimal counterexamples ----------------------------------------


def test_lost_write_missing():
    ph = history(sends=[send(0, "a", 0, 1, offset=0), send(1, "b", 2, 3, offset=1),
                        send(0, "c", 4, 5, offset=2)],
                 final=[(0, "a"), (2, "c")])
    result = check_partition(ph, NOT_IDEMPOTENT)
    assert result.linearizable is False
    assert actions(result) == {("send", "ok", (1, "b")), ("final-read", "ok", (1, None))}


def test_lost_write_overwritten_by_an_unacked_value():
    # KAFKA-1211: b acked at 1; a follower truncated it away, became leader and
    # took x at 1 from a producer that timed out. The final log has x at 1.
    ph = history(sends=[send(0, "a", 0, 1, offset=0), send(1, "b", 2, 3, offset=1),
                        send(2, "x", 4, 9, outcome="info")],
                 final=[(0, "a"), (1, "x")])
    result = check_partition(ph, NOT_IDEMPOTENT)
    assert result.linearizable is False
    assert actions(result) == {("send", "ok", (1, "b")), ("final-read", "ok", (1, "x")),
                               ("send", "info", (1, "x"))}


def test_lost_write_overwritten_by_an_acked_value():
    # Both acked at 1: the two acks alone contradict; the final read is not needed.
    ph = history(sends=[send(1, "b", 2, 3, offset=1), send(2, "x", 4, 9, offset=1)],
                 final=[(1, "x")])
    result = check_partition(ph, NOT_IDEMPOTENT)
    assert actions(result) == {("send", "ok", (1, "b")), ("send", "ok", (1, "x"))}


def test_truncated_read_of_unacked_writes():
    ph = history(sends=[send(0, "a", 0, 9, outcome="info"), send(1, "b", 10, 19, outcome="info")],
                 polls=[poll(2, 3, 4, (0, "a"))],
                 final=[(0, "b")])
    result = check_partition(ph, NOT_IDEMPOTENT)
    assert result.linearizable is False
    assert actions(result) == {("poll", "ok", ((0, "a"),)), ("send", "info", (0, "a")),
                               ("final-read", "ok", (0, "b")), ("send", "info", (0, "b"))}


def test_truncated_read_where_another_value_was_acked():
    ph = history(sends=[send(0, "a", 0, 9, outcome="info"), send(1, "b", 10, 19, offset=0)],
                 polls=[poll(2, 3, 4, (0, "a"))],
                 final=[(0, "b")])
    result = check_partition(ph, NOT_IDEMPOTENT)
    assert actions(result) == {("poll", "ok", ((0, "a"),)), ("send", "info", (0, "a")),
                               ("send", "ok", (0, "b"))}


def test_nonmonotonic_send():
    ph = history(sends=[send(0, "a", 0, 1, offset=5), send(1, "b", 2, 3, offset=4)],
                 final=[(4, "b"), (5, "a")])
    result = check_partition(ph, NOT_IDEMPOTENT)
    assert result.linearizable is False
    assert actions(result) == {("send", "ok", (5, "a")), ("send", "ok", (4, "b"))}
    assert "began after" in result.explanation


def test_nonmonotonic_send_far_apart_in_a_longer_history():
    sends = [send(0, f"v{i}", 2 * i, 2 * i + 1, offset=i) for i in range(300) if i != 40]
    sends.append(send(1, "late", 700, 701, offset=40))  # invoked after everything was acked
    ph = history(sends, final=[(s.offset, s.value) for s in sorted(sends, key=lambda s: s.offset)])
    result = check_partition(ph, NOT_IDEMPOTENT)
    assert result.linearizable is False
    got = actions(result)
    assert len(got) == 2 and ("send", "ok", (40, "late")) in got


def test_future_read():
    ph = history(sends=[send(0, "a", 5, 6, offset=0)],
                 polls=[poll(1, 0, 1, (0, "a"))],
                 final=[(0, "a")])
    result = check_partition(ph, NOT_IDEMPOTENT)
    assert result.linearizable is False
    assert actions(result) == {("poll", "ok", ((0, "a"),)), ("send", "ok", (0, "a"))}


def test_future_read_of_a_lower_offset():
    # The poll read up to 3 before the send that got offset 2 began (the sends
    # overlap, so this is no nonmonotonic send).
    ph = history(sends=[send(0, "a", 0, 9, offset=3), send(1, "b", 5, 6, offset=2)],
                 polls=[poll(2, 2, 3, (3, "a"))],
                 final=[(2, "b"), (3, "a")])
    result = check_partition(ph, NOT_IDEMPOTENT)
    assert result.linearizable is False
    assert actions(result) == {("poll", "ok", ((3, "a"),)), ("send", "ok", (3, "a")),
                               ("send", "ok", (2, "b"))}


def test_duplicate_counts_only_when_idempotent():
    ph = history(sends=[send(0, "a", 0, 5, offset=3), send(1, "b", 1, 2, offset=2)],
                 final=[(1, "a"), (2, "b"), (3, "a")])  # a retry wrote a first at 1
    assert check_partition(ph, NOT_IDEMPOTENT).linearizable is True
    result = check_partition(ph, IDEMPOTENT)
    assert result.linearizable is False
    # Nothing may write a at 1: the final read's record there is unexplained.
    assert actions(result) == {("final-read", "ok", (1, "a"))}


def test_aborted_and_phantom_reads():
    aborted = history(sends=[send(0, "a", 0, 1, outcome="fail")], polls=[poll(1, 2, 3, (0, "a"))],
                      final=[])
    result = check_partition(aborted, NOT_IDEMPOTENT)
    assert result.linearizable is False
    assert actions(result) == {("poll", "ok", ((0, "a"),))}
    phantom = history(final=[(0, "ghost")])
    result = check_partition(phantom, NOT_IDEMPOTENT)
    assert actions(result) == {("final-read", "ok", (0, "ghost"))}
    assert "no operation in the history writes 'ghost' at offset 0" in result.explanation


def test_inconsistent_offsets_between_polls():
    ph = history(sends=[send(0, "a", 0, 9, outcome="info"), send(1, "b", 0, 9, outcome="info")],
                 polls=[poll(2, 10, 11, (0, "a")), poll(3, 10, 11, (0, "b"))],
                 final=None)
    result = check_partition(ph, NOT_IDEMPOTENT)
    assert result.linearizable is False
    assert {f for f, _, _ in actions(result)} == {"poll", "send"}


def test_counterexample_entries_and_minimality():
    ph = history(sends=[send(0, "a", 0, 9, outcome="info"), send(1, "b", 10, 19, outcome="info")],
                 polls=[poll(2, 3, 4, (0, "a"), (1, "zz"))],  # a second record, projected away
                 final=[(0, "b")])
    result = check_partition(ph, NOT_IDEMPOTENT)
    by_f = {e["f"]: e for e in result.counterexample if e["type"] == "ok"}
    assert by_f["poll"]["invoke_index"] == 3 and by_f["poll"]["complete_index"] == 4
    assert by_f["poll"]["records_total"] == 2
    assert "invoke_index" not in by_f["final-read"]
    assert all(e["description"] for e in result.counterexample)
    ops = partition_ops(ph, NOT_IDEMPOTENT)
    found = check(LogModel(), ops)
    cx = minimize(LogModel(), ops, deepest=found.deepest)
    assert_one_minimal(cx.ops)


def test_html_page():
    ph = history(sends=[send(0, "a", 0, 1, offset=5), send(1, "b", 2, 3, offset=4)],
                 final=[(4, "b"), (5, "a")])
    html = check_partition(ph, NOT_IDEMPOTENT).html
    assert html.startswith("<!DOCTYPE html>") and "</html>" in html
    assert "<svg" in html and "process 0" in html and "process 1" in html
    assert "append 5=&#x27;a&#x27;" in html and "append 4=&#x27;b&#x27;" in html
    assert "Longest order found" in html and "began after" in html
    for external in ("<script", "src=", "@import", "url("):
        assert external not in html
    # Links only within the run directory: back to the report, each op to its lines.
    links = set(re.findall(r'href="([^"]+)"', html))
    assert links == {"../report.html", "../history.html", "../history.html#i0", "../history.html#i1",
                     "../history.html#i2", "../history.html#i3"}


def test_budget_exhaustion_is_unknown():
    ph = history(sends=[send(0, "a", 0, 1, offset=0), send(0, "b", 2, 3, offset=1)],
                 final=[(0, "a"), (1, "b")])
    result = check_partition(ph, CheckOptions(search_budget=1, linear_method="search"))
    assert result.linearizable is None and result.explored == 2
    assert result.counterexample == []


# --- properties over generated histories -------------------------------------------------


PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(st.randoms(use_true_random=False), st.integers(1, 60))
def test_valid_histories_are_linearizable(rng, n_ops):
    ph = simulate(rng, n_ops)
    assert check_partition(ph, IDEMPOTENT).linearizable is True


@PROPERTY
@given(st.randoms(use_true_random=False), st.integers(1, 60))
def test_retried_sends_are_linearizable_without_idempotence(rng, n_ops):
    ph = simulate(rng, n_ops, retry_rate=0.2)
    assert check_partition(ph, NOT_IDEMPOTENT).linearizable is True


@PROPERTY
@given(st.randoms(use_true_random=False), st.integers(1, 60), st.data())
def test_changing_an_acked_offsets_final_value_is_caught(rng, n_ops, data):
    ph = simulate(rng, n_ops)
    acked = sorted(s.offset for s in ph.sends if s.outcome == "ok")
    if not acked:
        return
    target = data.draw(st.sampled_from(acked))
    ph.final = [(o, "mutant" if o == target else v) for o, v in ph.final]
    result = check_partition(ph, IDEMPOTENT)
    assert result.linearizable is False
    touched = {e.get("offset") for e in result.counterexample}
    assert target in touched


@pytest.mark.parametrize("seed", range(3))
def test_minimal_counterexample_in_a_bigger_history(seed):
    rng = random.Random(seed)
    ph = simulate(rng, 1500, producers=6, consumers=3, info_rate=0.02, gap_rate=0.01)
    victim = [s for s in ph.sends if s.outcome == "ok"][len(ph.sends) // 2]
    ph.final = [r for r in ph.final if r[0] != victim.offset]
    result = check_partition(ph, IDEMPOTENT)
    assert result.linearizable is False
    assert actions(result) == {("send", "ok", (victim.offset, victim.value)),
                               ("final-read", "ok", (victim.offset, None))}
