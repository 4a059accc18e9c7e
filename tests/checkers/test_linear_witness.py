"""The witness shortcut: a verified linearization proves a history
linearizable; anything else goes to the search, which alone says "no"."""
from __future__ import annotations

import random

import pytest

from fencepost.checkers.linear.kafka import check_partition, partition_ops
from fencepost.checkers.linear.logmodel import LogModel
from fencepost.checkers.linear.model import Op
from fencepost.checkers.linear.models import RegisterModel
from fencepost.checkers.linear.reference_witness import log_witness, verify
from fencepost.checkers.partition import CheckOptions
from tests.support.linear_support import simulate

WITNESS = CheckOptions(linear_method="witness")
SEARCH = CheckOptions(linear_method="search")


def register_ops():
    # w(1) [0,3]  r->1 [1,4]  w(2) [5,6]  r->2 [7,8]
    return [
        Op(0, 0, 0, 3, ("write", 1)),
        Op(1, 1, 1, 4, ("read", None), 1),
        Op(2, 0, 5, 6, ("write", 2)),
        Op(3, 1, 7, 8, ("read", None), 2),
    ]


def test_verify_accepts_a_real_linearization():
    ops = register_ops()
    assert verify(RegisterModel(), ops, ops)


def test_verify_rejects_a_real_time_violation():
    ops = register_ops()
    # w(2) returned (6) before the read of 2 was called (7): swapping the two
    # writes' order against the reads is refused by the model, and putting
    # the last read before w(2) by real time.
    assert not verify(RegisterModel(), ops, [ops[0], ops[1], ops[3], ops[2]])


def test_verify_rejects_a_model_violation():
    ops = register_ops()
    bad = ops[:3] + [Op(3, 1, 7, 8, ("read", None), 1)]
    assert not verify(RegisterModel(), bad, bad)


def test_verify_rejects_a_missing_or_repeated_required_op():
    ops = register_ops()
    assert not verify(RegisterModel(), ops, ops[:3])
    assert not verify(RegisterModel(), ops, [ops[0], ops[0], ops[1], ops[2], ops[3]])


def test_verify_may_leave_out_an_unknown_outcome_op():
    ops = register_ops() + [Op(4, 2, 2, None, ("write", 9))]
    assert verify(RegisterModel(), ops, register_ops())


@pytest.mark.parametrize("seed", range(25))
def test_witness_proves_valid_histories_the_search_also_accepts(seed):
    rng = random.Random(seed)
    ph = simulate(rng, 300, retry_rate=0.1 if seed % 2 else 0.0)
    assert log_witness(partition_ops(ph, WITNESS)) is not None
    by_witness = check_partition(ph, WITNESS)
    by_search = check_partition(ph, SEARCH)
    assert by_witness.linearizable is True and by_witness.method == "witness"
    assert by_search.linearizable is True and by_search.method == "search"


@pytest.mark.parametrize("seed", range(15))
def test_a_failed_witness_falls_back_to_the_search(seed):
    rng = random.Random(seed)
    ph = simulate(rng, 300)
    acked = [s for s in ph.sends if s.outcome == "ok"]
    lost = rng.choice(acked)
    ph.final = [(o, v) for o, v in ph.final if o != lost.offset]  # plant a lost write
    result = check_partition(ph, WITNESS)
    assert result.method == "search"
    assert result.linearizable is False
    assert any(step.get("value") == lost.value for step in result.counterexample)


# --- the partition-level witness check equals the generic one ------------------------

def _mutate(rng: random.Random, ph):
    """One random change of the kinds that break (or may not break) the witness."""
    kind = rng.randrange(5)
    acked = [s for s in ph.sends if s.outcome == "ok"]
    if kind == 0 and ph.final:  # drop a record of the final read
        del ph.final[rng.randrange(len(ph.final))]
    elif kind == 1 and len(acked) >= 2:  # two acks at one offset
        a, b = rng.sample(acked, 2)
        b.offset = a.offset
    elif kind == 2:  # a poll returns a value nobody wrote there
        polls = [p for p in ph.polls if p.outcome == "ok" and p.records]
        if polls:
            p = rng.choice(polls)
            i = rng.randrange(len(p.records))
            p.records[i] = (p.records[i][0], "nobody")
    elif kind == 3 and acked:  # an ack completes before it was invoked... of a later op
        s = rng.choice(acked)
        s.complete_index = s.invoke_index  # returns at once: before later appends' points
    elif kind == 4:  # the final read marked incomplete
        ph.final_complete = False
    return ph


@pytest.mark.parametrize("seed", range(60))
def test_greedy_witness_on_the_partition_agrees_with_witness_plus_verify(seed):
    from fencepost.checkers.linear.kafka import greedy_witness
    from fencepost.checkers.offsets import observe

    rng = random.Random(seed)
    ph = simulate(rng, 150, retry_rate=0.1 if seed % 3 == 0 else 0.0)
    if seed % 2:
        ph = _mutate(rng, ph)
    options = CheckOptions(idempotent=bool(seed % 4 == 1))
    ops = partition_ops(ph, options)
    model = LogModel()
    order = log_witness(ops)
    generic = order is not None and verify(model, ops, order)
    direct = greedy_witness(ph, options, observe(ph))
    assert (direct is not None) is generic
    if generic:
        assert direct == len(ops)
        # and a verified witness is never contradicted by the complete search
        assert check_partition(ph, CheckOptions(idempotent=options.idempotent,
                                                linear_method="search")).linearizable is True
