"""Planters and editing helpers, checked without the project's checkers: the
planted run stays well formed, the original is untouched, and the planted
change is really in the files (see wellformed.py)."""
from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fencepost.checkers import anomaly as A
from tests.support.synth.edit import acked_sends, insert_record, move_after, ok_polls, pair_ops
from tests.support.synth.generate import GenConfig, generate
from tests.support.synth.plant import PLANTERS, CannotPlant, expected_invalid, plant
from tests.support.synth.run import SynthRun
from tests.support.synth.strategies import gen_configs
from tests.support.synth.wellformed import history_problems, validity_problems


def test_every_anomaly_has_a_planter():
    assert {p.anomaly for p in PLANTERS.values()} == set(A.ALL)


@pytest.mark.parametrize("name", sorted(PLANTERS))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(config=gen_configs(plantable=True, max_lines=1_200), seed=st.integers(0, 2**16))
def test_planted_runs_are_well_formed_and_really_changed(name, config, seed):
    run = generate(config)
    before = run.clone()
    try:
        planted = plant(name, run, seed)
    except CannotPlant:
        assume(False)
    assert run.history == before.history and run.final_lines() == before.final_lines()
    assert planted.anomaly == PLANTERS[name].anomaly and planted.partition in run.final
    assert history_problems(planted.run.history) == []
    problems = validity_problems(planted.run)
    if planted.anomaly == A.UNSEEN or (planted.anomaly == A.DUPLICATE and not config.idempotent):
        assert problems == []
    else:
        assert problems, f"{name}: the planted run still looks valid: {planted.details}"


def _base() -> SynthRun:
    return generate(GenConfig(seed=21, lines=3_000, idempotent=False, p_offset_gap=0.03))


def test_lost_write_missing_leaves_a_hole_below_later_records():
    planted = plant("lost-write/missing", _base(), 1)
    pf = planted.run.final[planted.partition]
    o = planted.details["offset"]
    assert all(r[0] != o for r in pf.read) and pf.read[-1][0] > o
    assert all(r[0] != o for rf in pf.replicas.values() for r in rf.records)
    assert planted.details["how"] == "missing"


def test_lost_write_overwritten_names_a_concurrent_info_send():
    planted = plant("lost-write/overwritten", _base(), 2)
    run, d = planted.run, planted.details
    assert dict((o, v) for o, v, _ in run.final[planted.partition].read)[d["offset"]] == d["by"]
    writer = [op for op in pair_ops(run.history) if op.f == "send" and op.invoke["value"]["value"] == d["by"]]
    assert len(writer) == 1 and writer[0].type == "info"
    victim = [op for op in acked_sends(run.history) if op.complete["value"]["value"] == d["value"]][0]
    assert victim.invoke["index"] < writer[0].invoke["index"] < victim.complete["index"] < writer[0].complete["index"]


def test_duplicate_insert_keeps_polls_contiguous_and_the_run_otherwise_valid():
    run = _base()
    planted = plant("duplicate", run, 3)
    d = planted.details
    values = Counter(v for _, v, _ in planted.run.final[planted.partition].read)
    assert values[d["value"]] == Counter(v for _, v, _ in run.final[planted.partition].read)[d["value"]] + 1
    # Non-idempotent: a retried value twice is allowed, so nothing else is wrong.
    assert validity_problems(planted.run) == []
    assert len(planted.run.history) == len(run.history)


@settings(max_examples=25, deadline=None)
@given(config=gen_configs(plantable=True, idempotent=False, max_lines=1_000), seed=st.integers(0, 2**16))
def test_insert_record_moves_every_later_offset(config, seed):
    run = generate(config)
    rng = random.Random(seed)
    acked = acked_sends(run.history)
    assume(acked)
    op = rng.choice(acked)
    p, o, v = (op.complete["value"][k] for k in ("partition", "offset", "value"))
    edited = run.clone()
    new = insert_record(edited, p, o, v)
    assert new == o + 1
    old_read = run.final[p].read
    new_read = edited.final[p].read
    assert [(x + (x > o), y) for x, y, _ in old_read] == [(x, y) for x, y, _ in new_read if x != new]
    assert (new, v) in [(x, y) for x, y, _ in new_read]
    assert history_problems(edited.history) == [] and validity_problems(edited) == []


def test_move_after_gives_a_fresh_process_when_the_op_would_overlap_itself():
    run = _base()
    history = run.history
    polls = ok_polls(history)
    sends = acked_sends(history)
    early = sends[0]
    late_poll = polls[-1]
    move_after(history, early, late_poll.complete)
    assert early.invoke["index"] == late_poll.complete["index"] + 1
    assert early.complete["index"] == early.invoke["index"] + 1
    assert early.process not in {op.process for op in pair_ops(history) if op.invoke is not early.invoke}
    assert history_problems(history) == []


def test_unseen_is_a_late_ack_no_poll_returned():
    planted = plant("unseen", _base(), 0)
    v = planted.details["value"]
    polled = {r["value"] for op in ok_polls(planted.run.history) for r in op.complete["value"]["records"]}
    assert v not in polled and v in {x for _, x, _ in planted.run.final[planted.partition].read}
    assert not expected_invalid(planted)


def test_cannot_plant_says_what_is_missing():
    run = generate(GenConfig(seed=1, lines=60, consumers=0))
    with pytest.raises(CannotPlant, match="poll"):
        plant("poll-skip", run, 0)
