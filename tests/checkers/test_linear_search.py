"""The search of checkers/linear: agreement with a brute-force checker on random
small histories of every model, the memo, budgets, unknown outcomes, input
errors, and depth without recursion."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fencepost.checkers.linear.logmodel import Append, LogModel, Read, ReadExact
from fencepost.checkers.linear.model import Model, Op
from fencepost.checkers.linear.models import RegisterModel, SetModel
from fencepost.checkers.linear.search import check


def brute_force(model: Model, ops: list[Op]) -> bool:
    """Every order of every subset holding all required ops, straight from the
    definition: op b may follow only when no required op left returned before
    b was invoked. No memo, no pruning, no read shortcut."""
    required = frozenset(o.id for o in ops if o.ret is not None)

    def extend(state, done: frozenset[int]) -> bool:
        if required <= done:
            return True
        bound = min(o.ret for o in ops if o.ret is not None and o.id not in done)
        for o in ops:
            if o.id in done or o.call > bound:
                continue
            after = model.step(state, o)
            if after is not None and extend(after, done | {o.id}):
                return True
        return False

    return extend(model.init(), frozenset())


def windows(draw, n: int) -> list[tuple[int, int | None]]:
    out = []
    for _ in range(n):
        call = draw(st.integers(0, 12))
        ret = None if draw(st.integers(0, 4)) == 0 else call + draw(st.integers(0, 6))
        out.append((call, ret))
    return out


@st.composite
def register_histories(draw):
    n = draw(st.integers(1, 6))
    ops = []
    for i, (call, ret) in enumerate(windows(draw, n)):
        kind = draw(st.sampled_from(["write", "read", "cas"]))
        if kind == "write":
            ops.append(Op(i, i, call, ret, ("write", draw(st.integers(0, 2)))))
        elif kind == "read":
            ops.append(Op(i, i, call, ret, ("read",), draw(st.integers(0, 2))))
        else:
            out = draw(st.sampled_from([True, False, None]))
            ops.append(Op(i, i, call, ret, ("cas", draw(st.integers(0, 2)), draw(st.integers(0, 2))), out))
    return ops


@st.composite
def set_histories(draw):
    n = draw(st.integers(1, 6))
    ops = []
    for i, (call, ret) in enumerate(windows(draw, n)):
        if draw(st.booleans()):
            ops.append(Op(i, i, call, ret, ("add", draw(st.integers(1, 3)))))
        else:
            ops.append(Op(i, i, call, ret, ("read",), draw(st.sets(st.integers(1, 3)))))
    return ops


@st.composite
def log_histories(draw):
    n = draw(st.integers(1, 7))
    values = st.sampled_from(["a", "b"])
    ops = []
    for i, (call, ret) in enumerate(windows(draw, n)):
        kind = draw(st.integers(0, 2))
        if kind == 0:
            inp = Append(draw(st.integers(0, 3)), draw(values))
        elif kind == 1:
            offsets = draw(st.lists(st.integers(0, 3), min_size=1, max_size=3, unique=True))
            inp = Read(tuple((o, draw(values)) for o in sorted(offsets)))
        else:
            inp = ReadExact(draw(st.integers(0, 3)), draw(st.sampled_from(["a", "b", None])))
        ops.append(Op(i, i, call, ret, inp))
    return ops


FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(register_histories())
def test_register_search_agrees_with_brute_force(ops):
    assert check(RegisterModel(0), ops).linearizable is brute_force(RegisterModel(0), ops)


@FAST
@given(set_histories())
def test_set_search_agrees_with_brute_force(ops):
    assert check(SetModel(), ops).linearizable is brute_force(SetModel(), ops)


@FAST
@given(log_histories())
def test_log_search_agrees_with_brute_force(ops):
    assert check(LogModel(), ops).linearizable is brute_force(LogModel(), ops)


@FAST
@given(log_histories())
def test_a_linearization_found_is_a_real_one(ops):
    """Replaying the returned order: every step allowed, real time respected,
    every required op present."""
    model = LogModel()
    result = check(model, ops)
    if not result.linearizable:
        return
    by_id = {o.id: o for o in ops}
    order = [by_id[i] for i in result.linearization]
    assert {o.id for o in ops if o.ret is not None} <= set(result.linearization)
    assert len(set(result.linearization)) == len(order)
    state = model.init()
    for k, o in enumerate(order):
        state = model.step(state, o)
        assert state is not None
        assert all(not (p.ret is not None and p.ret < o.call) for p in order[k + 1:])


def test_budget_exhaustion_is_unknown():
    # 12 concurrent writes of distinct values, then a read of a value nobody
    # wrote: not linearizable, but proving it needs every subset of writes.
    ops = [Op(i, i, 0, 100, ("write", i)) for i in range(12)]
    ops.append(Op(99, 99, 200, 201, ("read",), "never"))
    small = check(RegisterModel(0), ops, budget=50)
    assert small.linearizable is None
    assert small.explored == 51
    assert check(RegisterModel(0), ops).linearizable is False


def test_memo_keeps_the_search_polynomial():
    # Concurrent writes of 0s and 1s, then a read of 7 that nobody wrote: many
    # orders reach the same (written set, value); the memo merges them.
    ops = [Op(i, i, 0, 100, ("write", i % 2)) for i in range(12)]
    ops.append(Op(99, 99, 200, 201, ("read",), 7))
    result = check(RegisterModel(0), ops)
    assert result.linearizable is False
    # Each of the 2^12 subsets is reached with at most 2 states, each by one of
    # 12 steps; without the memo the search would walk all 12! orders.
    assert result.explored <= 2 ** 12 * 2 * 12


def test_reads_are_linearized_without_backtracking():
    # 300 writes in sequence, each followed by a read of it: one state each.
    ops = []
    for i in range(300):
        ops.append(Op(2 * i, 0, 4 * i, 4 * i + 1, ("write", i)))
        ops.append(Op(2 * i + 1, 1, 4 * i + 2, 4 * i + 3, ("read",), i))
    result = check(RegisterModel(), ops)
    assert result.linearizable is True
    assert result.explored == 300  # the writes; the reads cost no step of their own


def test_deep_histories_need_no_recursion():
    model = LogModel()
    n = 20_000
    ops = [Op(i, i % 7, i, i + 3, Append(i, f"v{i}")) for i in range(n)]
    result = check(model, ops)
    assert result.linearizable is True
    assert result.linearization == list(range(n))


def test_a_failure_deep_in_a_long_history_costs_little():
    """3000 overlapping appends, every 10th of unknown outcome, and a final
    read that lost offset 2501. Settling offsets kills dead branches at once,
    so the search neither retries both fates of every unknown append (2^300)
    nor walks more than a few states per op."""
    n = 3000
    ops = [Op(i, i % 10, i, None if i % 10 == 0 else i + 8, Append(i, f"v{i}")) for i in range(n)]
    ops += [Op(n + i, "final", 2 * n, 2 * n + 1, ReadExact(i, None if i == 2501 else f"v{i}"))
            for i in range(n)]
    result = check(LogModel(), ops, budget=3 * n)
    assert result.linearizable is False
    assert len(result.deepest.linearized) >= 2500


def test_unknown_ops_may_take_effect_late_or_never():
    model = LogModel()
    info = Op(0, 0, 0, None, Append(0, "a"))
    assert check(model, [info]).linearizable is True  # never
    late_read = Op(1, 1, 50, 51, Read(((0, "a"),)))
    assert check(model, [info, late_read]).linearizable is True  # after the read began
    early_read = Op(1, 1, 0, 1, Read(((0, "a"),)))
    shifted_info = Op(0, 0, 5, None, Append(0, "a"))
    assert check(model, [shifted_info, early_read]).linearizable is False


def test_an_unknown_op_never_taken_does_not_block_the_rest():
    # The final read says offset 0 stayed empty: the info append there must
    # never take effect; once 1 is appended it cannot, and the rest goes on.
    ops = [Op(0, 0, 0, None, Append(0, "x")), Op(1, 1, 1, 2, Append(1, "a"))]
    ops += [Op(10 + i, 1, 3 + 2 * i, 4 + 2 * i, Append(2 + i, f"v{i}")) for i in range(50)]
    ops.append(Op(99, 2, 500, 501, ReadExact(0, None)))
    result = check(LogModel(), ops)
    assert result.linearizable is True
    assert 0 not in result.linearization
    assert result.linearization[:2] == [1, 10]


def test_deepest_point_of_a_failure():
    model = LogModel()
    ops = [Op(0, 0, 0, 1, Append(0, "a")), Op(1, 0, 2, 3, Append(1, "b")),
           Op(2, 1, 10, 11, ReadExact(0, "a")), Op(3, 1, 10, 11, ReadExact(1, "c"))]
    result = check(model, ops)
    assert result.linearizable is False
    # 'a' is appended; appending 'b' would make the final read of 'c' at 1
    # impossible, and 'b' must take effect before the final read began.
    assert result.deepest.linearized == [0]
    assert result.deepest.state.records() == [(0, "a")]
    assert result.deepest.pending == [1]


def test_empty_and_read_only_histories():
    assert check(LogModel(), []).linearizable is True
    only_reads = [Op(0, 0, 0, 1, ReadExact(3, None)), Op(1, 1, 0, 1, Read(((0, "a"),)))]
    assert check(LogModel(), only_reads).linearizable is False
    assert check(LogModel(), only_reads[:1]).linearizable is True


def test_bad_input_is_reported_with_the_op():
    with pytest.raises(ValueError, match="two ops have id 1"):
        check(RegisterModel(), [Op(1, 0, 0, 1, ("write", 1)), Op(1, 0, 2, 3, ("write", 2))])
    with pytest.raises(ValueError, match="op 4 returns at 1, before it is called at 5"):
        check(RegisterModel(), [Op(4, 0, 5, 1, ("write", 1))])


def test_register_counterexample_is_minimal_and_drawn():
    from fencepost.checkers.linear.minimize import minimize
    from fencepost.checkers.linear.visual import render_html

    noise = [Op(10 + i, 5 + i, 200 + 10 * i, 205 + 10 * i, ("write", 50 + i)) for i in range(4)]
    ops = [Op(0, 0, 0, 100, ("write", 200)), Op(1, 1, 10, 30, ("read",), 200),
           Op(2, 2, 40, 90, ("read",), 0), *noise]
    cx = minimize(RegisterModel(0), ops)
    assert sorted(op.id for op in cx.ops) == [0, 1, 2]
    assert [op.id for op in cx.longest] == [0, 1]
    assert cx.states == ["0", "200", "200"]
    assert cx.stuck == [(ops[2], "the register holds 200")]
    html = render_html(cx, title="register")
    for label in ("write(200)", "read() -&gt; 200", "read() -&gt; 0", "the register holds 200"):
        assert label in html
    assert minimize(RegisterModel(0), noise) is None  # linearizable: nothing to minimise
