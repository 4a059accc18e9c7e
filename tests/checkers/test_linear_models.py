"""The models of checkers/linear: their step semantics one op at a time, and
small hand-made histories (valid and invalid) checked through the search."""
from __future__ import annotations

import random

import pytest

from fencepost.checkers.linear.logmodel import UNSETTLED, Append, LogModel, Read, ReadExact
from fencepost.checkers.linear.minimize import minimize
from fencepost.checkers.linear.model import Explains, MinimiseHints, Model, Op, SearchHints, search_hints
from fencepost.checkers.linear.models import RegisterModel, SetModel
from fencepost.checkers.linear.search import check


def op(i, call, ret, inp, output=None, process=None):
    return Op(i, i if process is None else process, call, ret, inp, output)


# --- register -----------------------------------------------------------------


def test_register_steps():
    reg = RegisterModel(initial=0)
    s = reg.init()
    assert s == 0
    assert reg.step(s, op(0, 0, 1, ("write", 5))) == 5
    assert reg.step(5, op(1, 0, 1, ("read",), 5)) == 5
    assert reg.step(5, op(1, 0, 1, ("read",), 4)) is None
    assert reg.step(5, op(2, 0, 1, ("cas", 5, 6), True)) == 6
    assert reg.step(4, op(2, 0, 1, ("cas", 5, 6), True)) is None
    assert reg.step(4, op(3, 0, 1, ("cas", 5, 6), False)) == 4
    assert reg.step(5, op(3, 0, 1, ("cas", 5, 6), False)) is None
    assert reg.step(5, op(4, 0, None, ("cas", 5, 6), None)) == 6  # unknown: if at all, it swapped
    assert reg.is_read_only(op(3, 0, 1, ("cas", 5, 6), False))
    assert not reg.is_read_only(op(2, 0, 1, ("cas", 5, 6), True))
    with pytest.raises(TypeError, match="no operation 'incr'"):
        reg.step(0, op(9, 0, 1, ("incr",)))


# Porcupine's TestRegisterModel (6.824 2017 quiz 2): (id, input, call, output, return).
def test_register_porcupine_linearizable():
    ops = [op(0, 0, 100, ("write", 100)), op(1, 25, 75, ("read",), 100), op(2, 30, 60, ("read",), 0)]
    result = check(RegisterModel(0), ops)
    assert result.linearizable is True
    assert result.linearization == [2, 0, 1]


def test_register_porcupine_not_linearizable():
    ops = [op(0, 0, 100, ("write", 200)), op(1, 10, 30, ("read",), 200), op(2, 40, 90, ("read",), 0)]
    assert check(RegisterModel(0), ops).linearizable is False


# Porcupine's TestZeroDuration: calls and returns at one instant overlap.
def test_register_zero_duration():
    ok = [op(0, 0, 100, ("write", 100)), op(1, 25, 75, ("read",), 100),
          op(2, 30, 30, ("read",), 0), op(3, 30, 30, ("read",), 0)]
    assert check(RegisterModel(0), ok).linearizable is True
    bad = [op(0, 0, 100, ("write", 200)), op(1, 10, 10, ("read",), 200),
           op(2, 10, 10, ("read",), 200), op(3, 40, 90, ("read",), 0)]
    assert check(RegisterModel(0), bad).linearizable is False


def test_register_cas_history():
    # write 1; then two concurrent cas(1 -> 2): only one can succeed.
    both_ok = [op(0, 0, 1, ("write", 1)), op(1, 2, 5, ("cas", 1, 2), True), op(2, 3, 6, ("cas", 1, 2), True)]
    assert check(RegisterModel(0), both_ok).linearizable is False
    one_fails = [op(0, 0, 1, ("write", 1)), op(1, 2, 5, ("cas", 1, 2), True), op(2, 3, 6, ("cas", 1, 2), False)]
    assert check(RegisterModel(0), one_fails).linearizable is True


def test_register_unknown_write_may_or_may_not_happen():
    # An unknown write of 7, then reads of 0 and later 7: fine (it happened late).
    ops = [op(0, 0, None, ("write", 7)), op(1, 1, 2, ("read",), 0), op(2, 3, 4, ("read",), 7)]
    assert check(RegisterModel(0), ops).linearizable is True
    # ... and reads of 0 only: fine too (it never happened).
    assert check(RegisterModel(0), ops[:2]).linearizable is True
    # But a read of 7 before the write was invoked is not.
    early = [op(0, 5, None, ("write", 7)), op(1, 1, 2, ("read",), 7)]
    assert check(RegisterModel(0), early).linearizable is False


# --- set ------------------------------------------------------------------------


def test_set_steps_and_dead_reads():
    sets = SetModel()
    s = sets.step(sets.init(), op(0, 0, 1, ("add", 1)))
    assert s == frozenset({1})
    assert sets.step(s, op(1, 0, 1, ("read",), [1])) == s
    assert sets.step(s, op(1, 0, 1, ("read",), [1, 2])) is None
    assert not sets.is_dead(s, op(1, 0, 1, ("read",), [1, 2]))  # 2 may still be added
    assert sets.is_dead(s, op(1, 0, 1, ("read",), [2]))  # 1 can never leave


def test_set_histories():
    ok = [op(0, 0, 10, ("add", 1)), op(1, 0, 10, ("add", 2)),
          op(2, 1, 3, ("read",), [1]), op(3, 11, 12, ("read",), [1, 2])]
    assert check(SetModel(), ok).linearizable is True
    # A read saw 2 without 1, another 1 without 2, both after... no order explains both.
    bad = [op(0, 0, 10, ("add", 1)), op(1, 0, 10, ("add", 2)),
           op(2, 1, 9, ("read",), [1]), op(3, 1, 9, ("read",), [2])]
    assert check(SetModel(), bad).linearizable is False
    # A read that misses an element added before it was invoked.
    stale = [op(0, 0, 1, ("add", 1)), op(1, 2, 3, ("read",), [])]
    assert check(SetModel(), stale).linearizable is False


# --- log --------------------------------------------------------------------------


def test_log_append_needs_a_higher_offset_and_allows_gaps():
    log = LogModel()
    s0 = log.init()
    s1 = log.step(s0, op(0, 0, 1, Append(0, "a")))
    s2 = log.step(s1, op(1, 0, 1, Append(5, "b")))  # a gap: 1..4 never hold anything
    assert s2.records() == [(0, "a"), (5, "b")]
    assert log.step(s2, op(2, 0, 1, Append(5, "c"))) is None
    assert log.step(s2, op(2, 0, 1, Append(3, "c"))) is None
    assert log.is_dead(s2, op(2, 0, 1, Append(3, "c")))
    assert not log.is_dead(s2, op(2, 0, 1, Append(6, "c")))


def test_log_states_are_interned():
    log = LogModel()
    a = log.step(log.init(), op(0, 0, 1, Append(0, "a")))
    b = log.step(log.init(), op(1, 0, 1, Append(0, "a")))
    assert a is b
    assert log.step(a, op(2, 0, 1, Append(1, "x"))) is not log.step(a, op(3, 0, 1, Append(1, "y")))


def test_log_read_needs_every_record_present_but_no_recency():
    log = LogModel()
    s = log.init()
    for i, (o, v) in enumerate([(0, "a"), (1, "b"), (3, "c")]):
        s = log.step(s, op(i, 0, 1, Append(o, v)))
    assert log.step(s, op(9, 0, 1, Read(((0, "a"),)))) is s  # old records are fine
    assert log.step(s, op(9, 0, 1, Read(((1, "b"), (3, "c"))))) is s
    assert log.step(s, op(9, 0, 1, Read(((1, "x"),)))) is None  # another value
    assert log.step(s, op(9, 0, 1, Read(((2, "b"),)))) is None  # a gap
    assert log.step(s, op(9, 0, 1, Read(((4, "d"),)))) is None  # not yet written
    assert log.is_read_only(op(9, 0, 1, Read(((4, "d"),))))
    assert not log.is_dead(s, op(9, 0, 1, Read(((4, "d"),))))  # it may still be
    assert log.is_dead(s, op(9, 0, 1, Read(((2, "b"),))))  # offsets up to 3 are final


def test_log_read_exact():
    log = LogModel()
    s = log.step(log.init(), op(0, 0, 1, Append(2, "a")))
    assert log.step(s, op(1, 0, 1, ReadExact(2, "a"))) is s
    assert log.step(s, op(1, 0, 1, ReadExact(2, "b"))) is None
    assert log.step(s, op(1, 0, 1, ReadExact(1, None))) is s
    assert log.step(s, op(1, 0, 1, ReadExact(2, None))) is None
    assert log.step(s, op(1, 0, 1, ReadExact(9, None))) is s  # nothing there (yet)


def test_log_lookup_by_offset_matches_a_dict():
    """The jump pointers find every offset, present or in a gap, in deep logs."""
    rng = random.Random(3)
    log = LogModel()
    s = log.init()
    truth: dict[int, str] = {}
    offset = -1
    for i in range(3000):
        offset += rng.choice((1, 1, 1, 2, 5))
        s = log.step(s, op(i, 0, 1, Append(offset, f"v{i}")))
        truth[offset] = f"v{i}"
    for o in range(-1, offset + 3):
        assert s.get(o) == truth.get(o), o
    hops = 0
    node = s
    while node.offset > 10:  # O(log n) hops from the head to a deep offset
        j = node.jump
        node = j if j.offset >= 10 else node.parent
        hops += 1
    assert hops < 60


def test_log_footprint_settling_and_contradiction():
    log = LogModel()
    s0 = log.init()
    s1 = log.step(s0, op(0, 0, 1, Append(3, "a")))
    assert log.settled(s0, s1) == (0, 3)
    assert log.settled(s1, s1) is None
    assert log.contradicts(s1, 3, UNSETTLED)  # an append whose offset is final
    assert log.contradicts(s1, 3, "b")
    assert not log.contradicts(s1, 3, "a")
    assert log.contradicts(s1, 1, "x")  # a gap
    assert not log.contradicts(s1, 1, None)
    assert list(log.footprint(op(1, 0, 1, Read(((3, "a"), (4, "b")))))) == [(3, "a"), (4, "b")]


def test_log_restrict_projects_onto_offsets():
    log = LogModel()
    poll = op(1, 0, 1, Read(((3, "a"), (4, "b"), (5, "c"))))
    assert log.restrict(poll, frozenset({4})).input.records == ((4, "b"),)
    assert log.restrict(poll, frozenset({9})) is None
    assert log.restrict(op(2, 0, 1, Append(3, "a")), frozenset({3})) is not None
    assert log.restrict(op(2, 0, 1, Append(3, "a")), frozenset({4})) is None


def test_log_describe():
    log = LogModel()
    s = log.init()
    assert log.describe_state(s) == "log []"
    for i in range(6):
        s = log.step(s, op(i, 0, 1, Append(i, f"v{i}")))
    assert log.describe_state(s) == "log [..., 2='v2', 3='v3', 4='v4', 5='v5'] (6 records, last offset 5)"
    assert log.describe_op(op(0, 0, 1, Append(7, "x"))) == "append 7='x'"
    assert log.describe_op(op(0, 0, 1, ReadExact(7, None))) == "final 7=nothing"
    assert log.why_not(s, op(0, 0, 1, Append(3, "x"))) == "the log already holds 'v3' at offset 3"
    assert "not yet in the log" in log.why_not(s, op(0, 0, 1, Read(((8, "x"),))))


def _log_ops(*specs):
    """(call, ret, input) triples, one process each."""
    return [op(i, c, r, inp) for i, (c, r, inp) in enumerate(specs)]


def test_log_histories():
    model = LogModel()
    # Concurrent appends acked out of offset order; a poll of the first.
    ok = _log_ops((0, 10, Append(1, "b")), (1, 5, Append(0, "a")), (6, 8, Read(((0, "a"),))),
                  (20, 21, ReadExact(0, "a")), (20, 21, ReadExact(1, "b")))
    assert check(model, ok).linearizable is True
    # A lost write: acked at 0, the final read has nothing there.
    lost = _log_ops((0, 1, Append(0, "a")), (20, 21, ReadExact(0, None)))
    assert check(model, lost).linearizable is False
    # A poll saw 'b' at 1 before the append of 'b' was invoked.
    future = _log_ops((0, 1, Read(((1, "b"),))), (2, 3, Append(1, "b")))
    assert check(model, future).linearizable is False
    # Offsets going backwards across real time.
    backwards = _log_ops((0, 1, Append(5, "a")), (2, 3, Append(4, "b")))
    assert check(model, backwards).linearizable is False


# --- a model with no hints: Porcupine-small ----------------------------------


class BareRegister(Model):
    """A register as Porcupine's examples have it: init, step, the two descriptions; no hint."""

    name = "bare register"

    def init(self):
        return 0

    def step(self, state, o):
        kind = o.input[0]
        if kind == "write":
            return o.input[1]
        return state if o.output is None or o.output == state else None


def test_a_model_with_no_hints_gets_the_same_answers_and_a_counterexample():
    bare, full = BareRegister(), RegisterModel(initial=0)
    assert not isinstance(bare, (SearchHints, MinimiseHints, Explains))
    assert search_hints(bare).is_read_only(op(0, 0, 1, ("read",), 0)) is False  # the defaults
    rng = random.Random(7)
    for _ in range(200):
        ops = []
        for i in range(rng.randint(1, 6)):
            call = rng.randint(0, 10)
            ret = call + rng.randint(0, 4)
            if rng.random() < 0.5:
                ops.append(op(i, call, ret, ("write", rng.randint(1, 2))))
            else:
                ops.append(op(i, call, ret, ("read",), rng.choice([0, 1, 2])))
        assert check(bare, ops).linearizable == check(full, ops).linearizable
    invalid = [op(0, 0, 1, ("write", 1)), op(1, 2, 3, ("read",), 2)]
    found = check(bare, invalid)
    assert found.linearizable is False
    counterexample = minimize(bare, invalid, deepest=found.deepest)
    assert "does not allow it" in counterexample.explanation  # the generic why_not
