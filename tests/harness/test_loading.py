"""Loading a run directory: grouping per partition, final-read completeness,
options from test.json, and what is not a run directory. Each test runs with
both readers: the C reader (where it was compiled) and the exact reader alone
(as without a C compiler)."""
from __future__ import annotations

import pytest

from fencepost.checkers.anomaly import DUPLICATE, LOST_WRITE, UNSEEN
from fencepost.harness.check import native_load
from fencepost.harness.check.loading import load_run
from fencepost.harness.errors import BadInput
from fencepost.harness.rundir.final_reader import FinalState
from fencepost.harness.rundir.recorded_test import checker_section
from tests.support.loading_support import python_only
from tests.support.run_builder import History, final_read, write_run


@pytest.fixture(autouse=True, params=["c-reader", "exact-reader"])
def reader(request, monkeypatch) -> str:
    if request.param == "exact-reader":
        python_only(monkeypatch)
    elif not native_load.available():
        pytest.skip("the C reader was not compiled (no C compiler at install)")
    return request.param


def test_sends_are_grouped_by_partition_in_invoke_order_with_their_outcomes(tmp_path):
    h = History()
    h.invoke_send(0, 0, "0-1")
    h.invoke_send(1, 1, "1-1")
    h.invoke_send(2, 0, "2-1")
    h.complete_send(2, 0, "2-1", offset=0)
    h.complete_send(0, 0, "0-1", "fail")
    h.complete_send(1, 1, "1-1", "info")
    h.invoke_send(0, 0, "0-2")  # never completed
    run = load_run(write_run(tmp_path / "run", h, final_read(0, [(0, "2-1")]) +
                             final_read(1, [])))
    assert run.errors == []
    sends = run.partitions[("fp", 0)].sends
    assert [(s.value, s.outcome, s.invoke_index, s.complete_index, s.offset) for s in sends] == [
        ("0-1", "fail", 0, 4, None), ("2-1", "ok", 2, 3, 0), ("0-2", "info", 6, None, None)]
    assert sends[1].leader_epoch == 1 and sends[1].complete_time == 300
    [info] = run.partitions[("fp", 1)].sends
    assert (info.value, info.outcome, info.complete_index) == ("1-1", "info", 5)


def test_polls_are_projected_on_their_partitions_and_the_assigned_ones(tmp_path):
    h = History()
    h.assign(5, [0, 1, 2])
    h.poll(5, [(0, 0, "a"), (1, 3, "b"), (0, 1, "c")])
    h.poll(6, [(1, 4, "d")])  # process 6 never assigned: only its partition
    run = load_run(write_run(tmp_path / "run", h))
    polls = {key: [(p.process, p.records) for p in ph.polls] for key, ph in run.partitions.items()}
    assert polls == {
        ("fp", 0): [(5, [(0, "a"), (1, "c")])],
        ("fp", 1): [(5, [(3, "b")]), (6, [(4, "d")])],
        ("fp", 2): [(5, [])],
    }
    poll = run.partitions[("fp", 2)].polls[0]
    assert (poll.outcome, poll.invoke_index, poll.complete_index) == ("ok", 2, 3)


def test_resets_of_every_process_are_in_every_partition(tmp_path):
    h = History()
    h.assign(5, [0])
    h.add(6, "invoke", "crash")
    h.add(6, "info", "crash", error="killed")
    h.add(7, "invoke", "subscribe", {"topics": ["fp"]})
    h.add(7, "ok", "subscribe", {"topics": ["fp"]})
    h.invoke_send(0, 1, "0-1")
    h.complete_send(0, 1, "0-1", offset=0)
    final = final_read(0, [], complete=True) + final_read(1, [(0, "0-1")]) + final_read(2, [], True)
    run = load_run(write_run(tmp_path / "run", h, final))
    assert set(run.partitions) == {("fp", 0), ("fp", 1), ("fp", 2)}
    for ph in run.partitions.values():
        assert [(r.process, r.index, r.f) for r in ph.resets] == [
            (5, 0, "assign"), (6, 2, "crash"), (7, 4, "subscribe")]


def test_final_read_completeness(tmp_path):
    h = History()
    for partition in range(4):
        h.invoke_send(partition, partition, f"{partition}-1")
        h.complete_send(partition, partition, f"{partition}-1", offset=0)
    final = (final_read(0, [(0, "0-1")])  # reads, no read-state: complete
             + final_read(1, [(0, "1-1")], complete=False)  # said incomplete
             + final_read(2, [], complete=True))  # empty and complete
    # partition 3: neither reads nor a read-state: missing
    run = load_run(write_run(tmp_path / "run", h, final))
    got = {key[1]: (ph.final, ph.final_complete) for key, ph in run.partitions.items()}
    assert got == {0: ([(0, "0-1")], True), 1: ([(0, "1-1")], False), 2: ([], True),
                   3: (None, False)}
    assert {key[1]: final for key, final in run.finals.items()} == {
        0: FinalState(True, True), 1: FinalState(True, False), 2: FinalState(True, True),
        3: FinalState(False, False)}
    assert run.final_present


def test_a_partition_is_complete_only_if_every_read_state_says_so(tmp_path):
    h = History()
    h.invoke_send(0, 0, "0-1")
    final = (final_read(0, [(0, "0-1")], complete=True) + final_read(0, [], complete=False)
             + final_read(0, [], complete=True) + final_read(1, [], complete=True)
             + final_read(1, [], complete=True))
    run = load_run(write_run(tmp_path / "run", h, final))
    assert run.finals == {("fp", 0): FinalState(True, False), ("fp", 1): FinalState(True, True)}
    assert not run.partitions[("fp", 0)].final_complete


def test_without_final_jsonl_every_final_read_is_missing(tmp_path):
    h = History()
    h.invoke_send(0, 0, "0-1")
    h.complete_send(0, 0, "0-1", offset=0)
    run = load_run(write_run(tmp_path / "run", h))
    assert not run.final_present
    assert run.partitions[("fp", 0)].final is None
    assert run.finals == {("fp", 0): FinalState(False, False)}


def test_replica_logs_and_states_reach_their_partition(tmp_path):
    h = History()
    h.invoke_send(0, 0, "0-1")
    h.complete_send(0, 0, "0-1", offset=0)
    final = final_read(0, [(0, "0-1")], complete=True) + [
        {"kind": "replica", "node": "n1", "topic": "fp", "partition": 0, "offset": 0, "value": "0-1"},
        {"kind": "replica-state", "node": "n1", "topic": "fp", "partition": 0,
         "log_end_offset": 1, "high_watermark": 1, "leader_epoch": 1, "epochs": [[1, 0]]},
        {"kind": "replica", "node": "n2", "topic": "fp", "partition": 7, "offset": 0, "value": "z"},
    ]
    run = load_run(write_run(tmp_path / "run", h, final))
    ph = run.partitions[("fp", 0)]
    assert ph.replicas == {"n1": [(0, "0-1")]}
    assert ph.replica_states["n1"].epochs == [(1, 0)]
    # A partition seen only in final.jsonl is there too, with no final read.
    assert run.partitions[("fp", 7)].replicas == {"n2": [(0, "z")]}
    assert run.partitions[("fp", 7)].final is None


def test_counts_and_problems_are_reported(tmp_path):
    h = History()
    h.invoke_send(0, 0, "0-1")
    h.complete_send(0, 0, "0-1", offset=0)
    h.add("nemesis", "info", "kill", {"nodes": ["n1"]})
    run_dir = write_run(tmp_path / "run", h, final_read(0, [(0, "0-1")]))
    with open(run_dir / "history.jsonl", "ab") as f:
        f.write(b'{"index": 3, "ti')
    run = load_run(run_dir)
    assert (run.counts.lines, run.counts.ops, run.counts.nemesis, run.counts.final_lines) == (4, 3, 1, 1)
    assert run.counts.by_f_type == {"kill": {"info": 1}, "send": {"invoke": 1, "ok": 1}}
    assert run.errors == [] and len(run.warnings) == 1 and "history.jsonl:4" in run.warnings[0]


def options_from_test(test):
    section = checker_section(test)
    return section.options, section.invalid


def test_options_and_the_invalid_set_from_test_json():
    options, invalid = options_from_test({})
    assert (options.idempotent, options.linearizability) == (False, True)
    assert DUPLICATE not in invalid and UNSEEN not in invalid and LOST_WRITE in invalid

    options, invalid = options_from_test({"producer": {"idempotent": True},
                                          "checker": {"linearizability": False,
                                                      "search_budget": 1000}})
    assert (options.idempotent, options.linearizability, options.search_budget) == (True, False, 1000)
    assert DUPLICATE in invalid and UNSEEN not in invalid

    _, invalid = options_from_test({"checker": {"invalid": ["unseen", "lost-write"]}})
    assert invalid == frozenset({"unseen", "lost-write"})


@pytest.mark.parametrize("test, message", [
    ({"producer": {"idempotent": "yes"}}, 'field "producer.idempotent": expected bool, got "yes"'),
    ({"checker": {"search_budget": True}}, 'field "checker.search_budget": expected int'),
    ({"checker": {"search_budget": 0}}, "must be a positive number"),
    ({"checker": {"invalid": ["lost-writes"]}}, "['lost-writes'] are not anomaly names"),
])
def test_bad_settings_in_test_json_are_bad_input(test, message):
    with pytest.raises(BadInput, match="test.json") as caught:
        options_from_test(test)
    assert message in str(caught.value)


def test_a_corrupt_test_json_is_bad_input(tmp_path):
    h = History()
    run_dir = write_run(tmp_path / "run", h)
    (run_dir / "test.json").write_text("{not json")
    with pytest.raises(BadInput, match=r"test.json: not valid JSON .*it is optional"):
        load_run(run_dir)


@pytest.mark.parametrize("make", ["missing", "empty-dir", "file"])
def test_what_is_not_a_run_directory_says_what_one_holds(tmp_path, make):
    target = tmp_path / "somewhere"
    if make == "empty-dir":
        target.mkdir()
    elif make == "file":
        target.write_text("x")
    with pytest.raises(BadInput) as caught:
        load_run(target)
    message = str(caught.value)
    assert str(target) in message
    for name in ("history.jsonl", "final.jsonl", "test.json"):
        assert name in message


@pytest.mark.parametrize("seed, idempotent", [(1, True), (2, False)])
def test_synthetic_runs_load_without_problems_and_keep_every_send(tmp_path, seed, idempotent):
    from tests.support.synth.generate import GenConfig, generate

    run = generate(GenConfig(seed=seed, lines=1500, idempotent=idempotent, dangling=True))
    loaded = load_run(run.write(tmp_path / "run"))
    assert loaded.errors == [] and loaded.warnings == []
    assert loaded.options.idempotent is idempotent
    for partition, pf in run.final.items():
        ph = loaded.partitions[(run.topic, partition)]
        truth = sorted(s.value for s in run.truth.sends.values() if s.partition == partition)
        assert sorted(s.value for s in ph.sends) == truth
        assert ph.final == [(o, v) for o, v, _ in pf.read]
        assert ph.final_complete == pf.complete


def test_a_record_polled_again_is_one_object(tmp_path):
    from tests.support.synth.generate import GenConfig, generate

    run = generate(GenConfig(seed=6, lines=600))
    for ph in load_run(run.write(tmp_path / "run")).partitions.values():
        seen: dict[tuple[int, str], tuple[int, str]] = {}
        for poll in ph.polls:
            for record in poll.records:
                assert seen.setdefault(record, record) is record


@pytest.mark.parametrize("seed", [3, 4])
def test_a_fresh_copy_is_equal_and_shares_each_record_once(tmp_path, seed):
    from fencepost.harness.check.loading import fresh_copy
    from tests.support.synth.generate import GenConfig, generate

    run = generate(GenConfig(seed=seed, lines=2000, stale_follower=seed == 4))
    for ph in load_run(run.write(tmp_path / "run")).partitions.values():
        copy = fresh_copy(ph)
        assert copy == ph
        assert all(a is not b for a, b in zip(copy.sends, ph.sends))
        assert all(a is not b for a, b in zip(copy.polls, ph.polls))
        # The final read's records are kept and shared with the polls that returned them;
        # any other record is copied once however often it was polled.
        records = {r: r for r in copy.final or ()}
        assert all(a is b for a, b in zip(copy.final or (), ph.final or ()))
        assert copy.final is not ph.final
        for poll in copy.polls:
            for r in poll.records:
                assert records.setdefault(r, r) is r
