"""The generator makes well-formed, valid, varied runs (checked without the
project's checkers: see wellformed.py)."""
from __future__ import annotations

from collections import Counter

import orjson
from hypothesis import given, settings

from tests.support.synth.generate import GenConfig, generate, generate_to_dir
from tests.support.synth.strategies import gen_configs
from tests.support.synth.wellformed import history_problems, validity_problems


@settings(max_examples=60, deadline=None)
@given(gen_configs())
def test_every_shape_is_well_formed_and_valid(config):
    run = generate(config)
    assert history_problems(run.history) == []
    assert validity_problems(run) == []
    assert all(pf.complete for pf in run.final.values())


def test_same_seed_same_run_and_other_seed_other_run():
    a, b = generate(GenConfig(seed=7, lines=400)), generate(GenConfig(seed=7, lines=400))
    c = generate(GenConfig(seed=8, lines=400))
    assert a.history == b.history and a.final_lines() == b.final_lines()
    assert a.history != c.history


def test_size_is_the_requested_number_of_lines_plus_the_end_phase():
    run = generate(GenConfig(seed=1, lines=5_000))
    assert 5_000 <= len(run.history) <= 5_000 + 2 * (10 + 2) + 4


def test_a_default_run_has_the_messiness_of_real_runs():
    run = generate(GenConfig(seed=11, lines=20_000, idempotent=False, p_offset_gap=0.02,
                             dangling=True, nemesis_rate=0.02))
    kinds = Counter((line["f"], line["type"]) for line in run.history)
    for f, t in [("send", "ok"), ("send", "fail"), ("send", "info"), ("poll", "ok"),
                 ("poll", "info"), ("assign", "ok"), ("crash", "info"), ("kill", "invoke"),
                 ("start-partition", "invoke"), ("stop-partition", "info")]:
        assert kinds[(f, t)] > 0, (f, t)
    sends = run.truth.sends.values()
    info = [s for s in sends if s.outcome == "info"]
    assert any(s.final_offsets for s in info), "an info send whose record was committed"
    assert any(not s.final_offsets for s in info), "an info send that never landed"
    assert any(s.truncated and not s.final_offsets for s in sends), "a truncated, never committed send"
    assert any(s.truncated and s.outcome == "ok" for s in sends), "retried after truncation, then acked"
    assert run.truth.leader_changes > 5 and run.truth.truncated_records > 0
    assert run.truth.duplicate_copies > 0 and run.truth.offset_gaps > 0
    assert any(s.outcome is None for s in sends), "a send never completed"
    # Duplicates exist exactly as the truth counts them.
    copies = Counter((p, v) for p, pf in run.final.items() for _, v, _ in pf.read)
    assert sum(n - 1 for n in copies.values()) == run.truth.duplicate_copies
    # Consumers of different speeds: the slow one is behind the fast one.
    polled = Counter(line["process"] for line in run.history if line["f"] == "poll" and line["type"] == "ok")
    assert len(polled) == 2


def test_retries_never_duplicate_when_idempotent():
    run = generate(GenConfig(seed=3, lines=5_000, idempotent=True, p_retry_dup=0.5))
    assert run.truth.duplicate_copies == 0
    assert validity_problems(run) == []


def test_acks_carry_the_epoch_of_the_leader_that_appended():
    run = generate(GenConfig(seed=5, lines=8_000, nemesis_rate=0.03, p_kill=1.0))
    epochs = {(p, o): e for p, pf in run.final.items() for o, _, e in pf.read}
    acks = [line["value"] for line in run.history if line["f"] == "send" and line["type"] == "ok"]
    assert acks and all(epochs[(a["partition"], a["offset"])] == a["leader_epoch"] for a in acks)
    assert len({a["leader_epoch"] for a in acks}) > 3


def test_replica_shapes_lagging_stale_and_uncommitted_tail():
    run = generate(GenConfig(seed=2, lines=6_000, nemesis_rate=0.05, p_kill=1.0, lagging_follower=True,
                             stale_follower=True, uncommitted_tail=True))
    assert validity_problems(run) == []
    shorter = tail_above_hw = stale = 0
    for pf in run.final.values():
        final = {o: v for o, v, _ in pf.read}
        leader = pf.replicas[pf.leader]
        assert leader.high_watermark == pf.end_offset() or not pf.read
        tail_above_hw += leader.log_end_offset > leader.high_watermark
        for node, rf in pf.replicas.items():
            shorter += len(rf.records) < len(pf.read)
            stale += any(final.get(o) != v for o, v, _ in rf.records if o >= rf.high_watermark)
    assert shorter and tail_above_hw and stale


def test_streaming_writes_the_same_run(tmp_path):
    config = GenConfig(seed=9, lines=3_000, idempotent=False)
    run = generate(config)
    generate_to_dir(tmp_path / "streamed", config)
    run.write(tmp_path / "kept")
    for name in ("history.jsonl", "final.jsonl", "test.json"):
        assert (tmp_path / "streamed" / name).read_bytes() == (tmp_path / "kept" / name).read_bytes()
    lines = (tmp_path / "kept" / "history.jsonl").read_bytes().splitlines()
    assert [orjson.loads(x) for x in lines] == run.history
    test = orjson.loads((tmp_path / "kept" / "test.json").read_bytes())
    assert test["producer"] == {"idempotent": False}
