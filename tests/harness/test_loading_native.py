"""The C reader (harness._native, harness/check/native_load.py) held to the exact
Python readers (harness/rundir/history.py `HistoryReader` grouped by
`loading.group_operations`, harness/rundir/final_reader.py `read_final`), the reference,
by a conformance corpus: every run directory under examples/, generated runs
(tests/support/synth) and mutated files (tests/support/mutation_support.py). On each, load_run
gives the same LoadedRun with and without the C reader (partitions, resets,
final reads and what the verdict reads of them, counts, errors and warnings);
on any mutated file the C reader either gives up on that file (the exact
reader then reads it and reports what is wrong) or gives exactly what the
exact reader gives while that reports no problem at all. So what reaches the
checkers, and every message about bad input, stays the exact reader's.

Fast: the examples, a few synthetic runs, crafted lines, 40 mutated files per
reader and per run and 60 histories with offsets far apart. Slow (`-m slow`):
600 mutated files per reader.
"""
from __future__ import annotations

import itertools
import os
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fencepost.harness.check import native_load
from fencepost.harness.check.loading import load_run
from fencepost.harness.rundir.final_reader import FinalLog, FinalState
from tests.support.loading_support import (
    assert_same_load,
    exact_final,
    exact_history,
    final_gives_up_or_agrees,
    history_gives_up_or_agrees,
    loaded_both_ways,
    python_only,
    silent,
)
from tests.support.mutation_support import LINES, mutation
from tests.support.paths import EXAMPLES
from tests.support.synth.generate import GenConfig, generate_to_dir

pytestmark = pytest.mark.skipif(not native_load.available() and not os.environ.get("CI"),
                                reason="the C reader was not compiled (no C compiler at install)")

SETTINGS = settings(max_examples=40, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))
COUNTER = itertools.count()


def test_the_c_reader_is_compiled():
    """Under CI (where this module is never skipped) the install must have built it."""
    assert native_load.available()


def native_history(path: Path):
    """What the C reader makes of a history.jsonl alone: (partitions, resets,
    counts) as the exact reader groups them, or None where it gives up."""
    tables = native_load.NativeTables(*native_load._native.read_history(str(path)), None, None)
    if tables.history is None:
        return None
    resets = tables.resets()
    builder = native_load.PartitionBuilder(tables, resets)
    partitions = {key: builder.build(key) for key in builder.keys()}  # without resets, as group_operations
    return partitions, resets, tables.history_counts()


def native_final(path: Path) -> FinalLog | None:
    """What the C reader makes of a final.jsonl alone, as a FinalLog, or None."""
    table, _ = native_load._native.read_final(str(path))
    if table is None:
        return None
    tables = native_load.NativeTables(None, None, table, None)
    builder = native_load.PartitionBuilder(tables, [])
    log = FinalLog(lines=table.lines)
    for key, (has_reads, complete, _) in zip(table.keys(), table.reads()):
        ph = builder.build(key)
        if has_reads:
            log.reads[key] = ph.final
        if complete is not None:
            log.read_complete[key] = complete
        if ph.replicas:
            log.replicas[key] = ph.replicas
        if ph.replica_states:
            log.replica_states[key] = ph.replica_states
    return log


EXAMPLE_DIRS = sorted(p for p in EXAMPLES.iterdir() if p.is_dir())


@pytest.mark.parametrize("run_dir", EXAMPLE_DIRS, ids=[p.name for p in EXAMPLE_DIRS])
def test_every_example_loads_the_same_with_and_without_the_c_reader(run_dir, monkeypatch):
    native, exact = loaded_both_ways(run_dir, monkeypatch)
    assert native.fresh and not exact.fresh  # the C reader read it
    assert_same_load(native, exact)
    assert native.partitions and native.final_present


@pytest.mark.parametrize("config", [
    GenConfig(seed=3, lines=1500),
    GenConfig(seed=4, lines=1500, idempotent=False, p_crash=0.05, p_reassign=0.05, dangling=True),
    GenConfig(seed=5, lines=800, partitions=1, producers=3, consumers=3, stale_follower=True,
              uncommitted_tail=True, lagging_follower=True),
    GenConfig(seed=8, lines=2000, partitions=4, idempotent=False, p_crash=0.02),
], ids=["default", "crashes-dangling", "one-partition", "four-partitions"])
def test_valid_runs_load_the_same_with_and_without_the_c_reader(tmp_path, monkeypatch, config):
    generate_to_dir(tmp_path, config)
    native, exact = loaded_both_ways(tmp_path, monkeypatch)
    assert native.fresh and native.builder is None and not exact.fresh
    assert_same_load(native, exact)
    assert native.final_present and not native.errors and not native.warnings


def test_what_the_verdict_reads_of_a_partition_is_its_final_read(tmp_path, monkeypatch):
    """`finals`: present and complete as the final read is, by either reader:
    a read-state saying incomplete, reads without one (complete), a partition
    in final.jsonl with replica records only (no final read), and one absent
    from final.jsonl altogether."""
    generate_to_dir(tmp_path, GenConfig(seed=15, lines=1500, partitions=4))
    with open(tmp_path / "final.jsonl", "rb+") as f:
        kept = [text for text in f.read().splitlines(keepends=True)
                if b'"partition":3' not in text and not (b'"partition":2' in text and b'"read-state"' in text)]
        kept.append(line(kind="read-state", topic="fp", partition=1, complete=False))
        kept.append(line(kind="replica", node="n1", topic="fp", partition=7, offset=0, value="x"))
        f.seek(0)
        f.truncate()
        f.write(b"".join(kept))
    native, exact = loaded_both_ways(tmp_path, monkeypatch)
    assert_same_load(native, exact)
    assert native.finals == {("fp", 0): FinalState(True, True), ("fp", 1): FinalState(True, False),
                             ("fp", 2): FinalState(True, True), ("fp", 3): FinalState(False, False),
                             ("fp", 7): FinalState(False, False)}
    for run in (native, exact):
        assert run.finals == {key: FinalState(ph.final is not None, ph.final_complete)
                              for key, ph in run.partitions.items()}


def test_unknown_fields_are_ignored_by_both_readers(tmp_path, monkeypatch):
    """Unknown fields, even non-ASCII ones and (in nemesis values, which
    nothing reads) integers beyond 64 bits, are ignored: the same load, silent."""
    out = []
    for text in LINES["history.jsonl"]:
        d = orjson.loads(text)
        d["extra"] = {"anything": [1, "é", None]}
        text = orjson.dumps(d)
        if d["process"] == "nemesis" and isinstance(d.get("value"), dict):
            text = text.replace(b'"value":{', b'"value":{"more":' + str(2**70).encode() + b",", 1)
        out.append(text + b"\n")
    run_dir = run_of(tmp_path, out, LINES["final.jsonl"])
    native, exact = loaded_both_ways(run_dir, monkeypatch)
    assert_same_load(native, exact)
    assert not exact.errors and not exact.warnings and exact.partitions


def test_a_consumer_group_history_goes_to_the_exact_reader(tmp_path, monkeypatch):
    """Commits and resumes (a group's) are built by the exact reader alone: the C reader hands
    such a history over (and still reads final.jsonl)."""
    generate_to_dir(tmp_path, GenConfig(seed=12, lines=2000, consumers=3, group=True))
    table, reason = native_load._native.read_history(str(tmp_path / "history.jsonl"))
    assert table is None and ("consumer group" in reason or "client f" in reason), reason
    native, exact = loaded_both_ways(tmp_path, monkeypatch)
    assert not native.fresh
    assert sum(len(ph.commits) for ph in native.partitions.values()) > 20
    assert sum(len(ph.resumes) for ph in native.partitions.values()) > 5
    assert_same_load(native, exact)


def test_a_lazy_load_builds_each_partition_as_an_eager_one(tmp_path):
    generate_to_dir(tmp_path, GenConfig(seed=10, lines=1200, dangling=True))
    eager = load_run(tmp_path)
    lazy = load_run(tmp_path, lazy=True)
    assert lazy.builder is not None and lazy.partitions == {}
    assert lazy.keys() == eager.keys() == list(eager.partitions)
    assert lazy.finals == eager.finals
    for key, ph in eager.partitions.items():
        assert lazy.partition(key) == ph and lazy.partition(key) is not ph
        assert lazy.partition_size(key) == eager.partition_size(key)
    assert lazy.counts == eager.counts
    header = lazy.header()
    assert header.partitions == {} and header.builder is None and header.finals == eager.finals


def test_the_final_reads_records_are_shared_with_the_polls_and_each_value_is_one_string(tmp_path):
    generate_to_dir(tmp_path, GenConfig(seed=6, lines=1500))
    for ph in load_run(tmp_path).partitions.values():
        final = {record: record for record in ph.final}
        polled = [record for poll in ph.polls for record in poll.records]
        assert polled and all(final.get(r, r) is r for r in polled)  # the final's own object
        by_value = {v: v for _, v in ph.final}
        acked = [s for s in ph.sends if s.offset is not None and (s.offset, s.value) in final]
        assert acked and all(by_value[s.value] is s.value for s in acked)


def run_of(tmp_path: Path, history: list[bytes], final: list[bytes] | None = None) -> Path:
    (tmp_path / "history.jsonl").write_bytes(b"".join(history))
    if final is not None:
        (tmp_path / "final.jsonl").write_bytes(b"".join(final))
    return tmp_path


def line(**fields) -> bytes:
    return orjson.dumps(fields) + b"\n"


SEND = {"topic": "fp", "partition": 0, "value": "0-1"}


def test_escapes_whitespace_and_field_order_are_read_natively(tmp_path, monkeypatch):
    history = [
        b'{ "value" : {"value":"0-1", "partition":0 ,"topic":"fp"}, "f":"send", "type":"invoke",'
        b' "process":0, "time":5, "index":0 ,"extra":{"a":[1,2.5,true,false,null,"x"]} }\r\n',
        b'{"index":1,"time":9,"process":0,"type":"info","f":"send","value":{"topic":"fp",'
        b'"partition":0,"value":"0-1"},"error":"KafkaError{str=\\"Broker: \\u0041 \\\\ \\/ \\t\\"}"}\n',
        line(index=2, time=10, process="nemesis", type="info", f="kill", value={"nodes": ["n1"], "x": -0.5}),
    ]
    final = [line(kind="read", topic="fp", partition=0, offset=0, value="0-1", leader_epoch=None,
                  extra=[{"deep": [[]]}]),
             line(kind="read-state", topic="fp", partition=0, complete=True)]
    run_dir = run_of(tmp_path, history, final)
    tables = native_load.read_tables(run_dir / "history.jsonl", run_dir / "final.jsonl")
    assert tables.history is not None and tables.final is not None, (tables.history_why, tables.final_why)
    native = load_run(run_dir)
    python_only(monkeypatch)
    assert_same_load(native, load_run(run_dir))
    (send,) = native.partitions[("fp", 0)].sends
    assert send.error == 'KafkaError{str="Broker: A \\ / \t"}' and send.outcome == "info"


def test_operations_never_completed_are_info_as_the_exact_reader_makes_them(tmp_path, monkeypatch):
    """A history cut off at the end (the harness died): a poll, an assign, a
    crash and a send of four processes still pending."""
    assign = {"partitions": [["fp", 0], ["fp", 1]], "from": "beginning"}
    record = {"topic": "fp", "partition": 0, "offset": 0, "value": "0-1", "leader_epoch": 1}
    history = [
        line(index=0, time=0, process=5, type="invoke", f="assign", value=assign),
        line(index=1, time=1, process=5, type="ok", f="assign", value=assign),
        line(index=2, time=2, process=0, type="invoke", f="send", value=SEND),
        line(index=3, time=3, process=0, type="ok", f="send", value={**SEND, "offset": 0, "leader_epoch": 1}),
        line(index=4, time=4, process=5, type="invoke", f="poll", value=None),
        line(index=5, time=5, process=5, type="ok", f="poll", value={"records": [record]}),
        line(index=6, time=6, process=5, type="invoke", f="poll", value=None),
        line(index=7, time=7, process=6, type="invoke", f="assign", value=assign),
        line(index=8, time=8, process=7, type="invoke", f="crash", value=None),
        line(index=9, time=9, process=0, type="invoke", f="send", value={**SEND, "value": "0-2"}),
    ]
    run_dir = run_of(tmp_path, history)
    native = load_run(run_dir)
    assert native.fresh
    python_only(monkeypatch)
    assert_same_load(native, load_run(run_dir))
    polls = native.partitions[("fp", 1)].polls
    assert [(p.invoke_index, p.outcome, p.complete_index) for p in polls] == [(4, "ok", 5), (6, "info", None)]
    assert [(r.process, r.f) for r in native.partitions[("fp", 0)].resets] == [(5, "assign"), (6, "assign"),
                                                                               (7, "crash")]


@pytest.mark.parametrize("history, why", [
    ([line(index=0, time=1, process=0, type="invoke", f="send", value={**SEND, "value": "é"})],
     "bytes beyond ASCII"),
    ([b'{"index":0,"time":1,"process":0,"type":"invoke","f":"send","value":{"topic":"fp",'
      b'"partition":0,"value":"\\u00e9"}}\n'], "an escape beyond ASCII"),
    ([b'{"index":0,"time":1,"process":"nemesis","type":"info","f":"kill","value":{"x":1e3}}\n'],
     "a number with an exponent"),
    ([b'{"index":0,"time":9223372036854775808,"process":0,"type":"invoke","f":"poll"}\n'],
     "an integer beyond 64 bits"),
    ([b'{"index":0,"time":1.0,"process":0,"type":"invoke","f":"poll"}\n'], "a float for an integer"),
    ([b'{"index":0,"index":0,"time":1,"process":0,"type":"invoke","f":"poll"}\n'], "a field twice"),
    ([b'{"ind\\u0065x":0,"time":1,"process":0,"type":"invoke","f":"poll"}\n'], "an escaped key"),
    ([line(index=0, time=1, process=0, type="invoke", f="fetch")], "an unknown client f"),
    ([line(index=1, time=1, process=0, type="invoke", f="poll")], "an index that is not the line"),
    ([line(index=0, time=1, process=0, type="invoke", f="poll")[:-1]], "a torn last line"),
    ([line(index=0, time=1, process=0, type="ok", f="poll", value={"records": []})],
     "a completion without its invoke"),
    ([line(index=0, time=1, process=0, type="invoke", f="send", value=SEND),
      line(index=1, time=2, process=0, type="ok", f="send", value={**SEND, "value": "0-2", "offset": 0})],
     "a completion unlike its invoke"),
    ([b"\n"], "an empty line"),
    ([line(index=0, time=-1, process=0, type="invoke", f="poll")], "a negative time"),
    ([b'{"index":0,"time":1,"process":0,"type":"invoke","f":"send","value":{"topic":"fp","partition":0,'
      b'"value":"0-1","x":18446744073709551615}}\n'], "an unsigned 64-bit integer in an unread field"),
    ([line(index=0, time=1, process=0, type="invoke", f="poll"),
      b'{"index":1,"time":2,"process":0,"type":"ok","f":"poll","value":{"records":[{"topic":"fp","partition":0,'
      b'"offset":9223372036854775808,"value":"0-1"}]}}\n'], "a record offset beyond int64"),
    ([line(index=0, time=1, process=0, type="invoke", f="poll"), line(index=5, time=1, process=0, type="ok",
                                                                      f="poll", value={"records": []})],
     "a complete last line that fails validation"),
    ([line(index=0, time=1, process=0, type="invoke", f="send", value=SEND),
      line(index=1, time=2, process=0, type="ok", f="send", value={**SEND, "offset": -3})], "a negative ack offset"),
    ([line(index=0, time=1, process=0, type="invoke", f="poll"),
      line(index=1, time=2, process=0, type="ok", f="poll", value={"records": [{**SEND, "offset": -3}]})],
     "a negative record offset"),
])
def test_what_the_c_reader_is_not_sure_of_goes_to_the_exact_reader(tmp_path, monkeypatch, history, why):
    run_dir = run_of(tmp_path, history)
    table, reason = native_load._native.read_history(str(run_dir / "history.jsonl"))
    assert table is None and reason.startswith("line "), why
    native = load_run(run_dir)  # the exact reader reads it, and says what it says
    assert not native.fresh
    python_only(monkeypatch)
    assert_same_load(native, load_run(run_dir))


@pytest.mark.parametrize("final, why", [
    ([line(kind="read", topic="fp", partition=0, offset=0, value="0-1", epochs=None)], "epochs null"),
    ([line(kind="read", topic="fp", partition=0, value="0-1")], "a read without its offset"),
    ([line(kind="replica", topic="fp", partition=0, offset=0, value="0-1")], "a replica without its node"),
    ([line(kind="snapshot", topic="fp", partition=0)], "an unknown kind"),
    ([line(kind="read-state", topic="fp", partition=0, complete=1)], "complete not a boolean"),
    ([line(kind="read", topic="fp", partition=0, offset=2**63, value="0-1")], "an offset beyond int64"),
    ([line(kind="replica-state", node="n1", topic="fp", partition=0, log_end_offset=1, high_watermark=1,
           epochs=[[0, 2**63]])], "an epoch start beyond int64"),
    ([line(kind="read", topic="fp", partition=0, offset=0, value="0-1")[:30]], "a torn last line"),
    ([line(kind="read", topic="fp", partition=0, offset=-2, value="0-1")], "a negative offset"),
])
def test_a_final_log_the_c_reader_is_not_sure_of_goes_to_the_exact_reader(tmp_path, monkeypatch,
                                                                           final, why):
    history = [line(index=0, time=1, process=0, type="invoke", f="send", value=SEND)]
    run_dir = run_of(tmp_path, history, final)
    tables = native_load.read_tables(run_dir / "history.jsonl", run_dir / "final.jsonl")
    assert tables.history is not None and tables.final is None and tables.final_why, why
    native = load_run(run_dir)
    assert native.fresh  # the history is still the C reader's
    python_only(monkeypatch)
    assert_same_load(native, load_run(run_dir))


def test_a_history_left_to_the_exact_reader_gets_the_c_readers_final_log(tmp_path, monkeypatch):
    generate_to_dir(tmp_path, GenConfig(seed=11, lines=900, partitions=2))
    with open(tmp_path / "history.jsonl", "ab") as f:  # a torn last line: the exact reader's to report
        f.write(b'{"index":')
    tables = native_load.read_tables(tmp_path / "history.jsonl", tmp_path / "final.jsonl")
    assert tables.history is None and tables.final is not None
    native = load_run(tmp_path)
    assert not native.fresh and any("the last line is ignored" in w for w in native.warnings)
    python_only(monkeypatch)
    assert_same_load(native, load_run(tmp_path))
    assert all(ph.final for ph in native.partitions.values())


def test_a_file_it_cannot_read_is_left_to_the_exact_reader(tmp_path):
    (tmp_path / "history.jsonl").mkdir()
    table, why = native_load._native.read_history(str(tmp_path / "history.jsonl"))
    assert table is None and "cannot read it" in why
    table, why = native_load._native.read_final(str(tmp_path / "absent.jsonl"))
    assert table is None and "No such file" in why


def test_an_empty_history_is_an_empty_table(tmp_path):
    (tmp_path / "history.jsonl").write_bytes(b"")
    partitions, resets, counts = native_history(tmp_path / "history.jsonl")
    assert partitions == {} and resets == [] and counts.lines == 0 and counts.ops == 0


@SETTINGS
@given(st.data())
def test_mutated_histories_give_up_or_agree_with_the_exact_reader(tmp_path_factory, data):
    history_gives_up_or_agrees(native_history, tmp_path_factory.mktemp("h"),
                               data.draw(mutation(LINES["history.jsonl"])))


@SETTINGS
@given(st.data())
def test_mutated_final_logs_give_up_or_agree_with_the_exact_reader(tmp_path_factory, data):
    final_gives_up_or_agrees(native_final, tmp_path_factory.mktemp("f"),
                             data.draw(mutation(LINES["final.jsonl"])))


@SETTINGS
@given(st.data())
def test_mutated_runs_load_the_same_with_and_without_the_c_reader(tmp_path_factory, data):
    """Whatever file the C reader gives up on, load_run gives what the exact
    reader gives: the same partitions, finals, counts, errors and warnings."""
    run_dir = tmp_path_factory.mktemp("run")
    name = data.draw(st.sampled_from(sorted(LINES)))
    for file, lines in {**LINES, name: data.draw(mutation(LINES[name]))}.items():
        (run_dir / file).write_bytes(b"".join(lines))
    with pytest.MonkeyPatch.context() as m:
        assert_same_load(*loaded_both_ways(run_dir, m))


@pytest.mark.slow
@settings(SETTINGS, max_examples=600)
@given(st.data())
def test_many_mutated_histories_give_up_or_agree_with_the_exact_reader(tmp_path_factory, data):
    history_gives_up_or_agrees(native_history, tmp_path_factory.mktemp("h"),
                               data.draw(mutation(LINES["history.jsonl"])))


@pytest.mark.slow
@settings(SETTINGS, max_examples=600)
@given(st.data())
def test_many_mutated_final_logs_give_up_or_agree_with_the_exact_reader(tmp_path_factory, data):
    final_gives_up_or_agrees(native_final, tmp_path_factory.mktemp("f"),
                             data.draw(mutation(LINES["final.jsonl"])))


# (A negative offset is an error of both readers: test_what_the_c_reader_is_not_sure_of_....)
offsets = st.one_of(st.integers(0, 40), st.integers(60_000, 70_000),
                    st.integers(2**40, 2**40 + 3), st.integers(2**62, 2**63 - 1))


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(offsets, st.sampled_from(["a", "b", "c"])), min_size=1, max_size=60),
       st.integers(1, 8))
def test_records_at_any_offsets_are_grouped_as_the_exact_reader_groups_them(tmp_path_factory, records,
                                                                            per_poll):
    """Offsets near and far, repeated, in any order (a log read by
    index, else by hash) and several values at one offset."""
    history = [line(index=0, time=0, process=1, type="invoke", f="assign",
                    value={"partitions": [["fp", 0]], "from": "beginning"}),
               line(index=1, time=1, process=1, type="ok", f="assign",
                    value={"partitions": [["fp", 0]], "from": "beginning"})]
    final = []
    for start in range(0, len(records), per_poll):
        chunk = [{"topic": "fp", "partition": 0, "offset": o, "value": v, "leader_epoch": 1}
                 for o, v in records[start:start + per_poll]]
        i = len(history)
        history.append(line(index=i, time=i, process=1, type="invoke", f="poll", value=None))
        history.append(line(index=i + 1, time=i + 1, process=1, type="ok", f="poll", value={"records": chunk}))
    for o, v in reversed(records):
        final.append(line(kind="read", topic="fp", partition=0, offset=o, value=v))
        final.append(line(kind="replica", node="n1", topic="fp", partition=0, offset=o, value=v))
    run_dir = tmp_path_factory.mktemp("far")
    run_of(run_dir, history, final)
    native = native_history(run_dir / "history.jsonl")
    exact, problems = exact_history(run_dir / "history.jsonl")
    assert silent(problems) and native is not None
    assert native[0] == exact[0] and native[2] == exact[2]
    assert native_final(run_dir / "final.jsonl") == exact_final(run_dir / "final.jsonl")[0]
    # Each distinct record is one object, the final read's, wherever it was found.
    ph = load_run(run_dir).partitions[("fp", 0)]
    final = {}
    for record in ph.final:
        assert final.setdefault(record, record) is record
    assert all(final[r] is r for poll in ph.polls for r in poll.records)
    assert all(final[r] is r for r in ph.replicas["n1"])
