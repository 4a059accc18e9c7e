"""The fast paths of loading (harness/fast_history.py, harness/fast_final.py)
against the exact readers: on valid runs they give the same partitions,
resets, counts and final logs; on any mutated file they either give up
(None / False) or give exactly what the exact reader gives while it reports
no problem at all. So what reaches the checkers, and every message about
bad input, is the exact reader's.

Fast: a few synthetic runs and 40 mutated files per reader.
"""
from __future__ import annotations

import itertools
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import Problems
from harness.fast_final import read_final_fast
from harness.fast_history import read_grouped
from harness.final_log import FinalLog, FinalReader
from harness.history import HistoryReader
from harness.loading import group_operations, load_run
from tests.synth.generate import GenConfig, generate_to_dir
from tests.test_input_fuzz import LINES, mutation

SETTINGS = settings(max_examples=40, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))
COUNTER = itertools.count()


def exact_history(path: Path):
    problems = Problems()
    reader = HistoryReader(path, problems)
    partitions, resets = group_operations(reader.operations())
    return (partitions, resets, reader.counts), problems


def exact_final(path: Path):
    problems = Problems()
    log = FinalLog()
    reader = FinalReader(path, problems)
    for kind, key, node, item in reader:  # what read_final does, without its fast path
        if kind == "read":
            log.reads.setdefault(key, []).append(item)
        elif kind == "replica":
            log.replicas.setdefault(key, {}).setdefault(node, []).append(item)
        elif kind == "replica-state":
            log.replica_states.setdefault(key, {})[node] = item
        else:
            log.read_complete[key] = item and log.read_complete.get(key, True)
    log.lines = reader.lines
    return log, problems


def silent(problems: Problems) -> bool:
    return problems.error_count == 0 and problems.warning_count == 0


@pytest.mark.parametrize("config", [
    GenConfig(seed=3, lines=1500),
    GenConfig(seed=4, lines=1500, idempotent=False, p_crash=0.05, p_reassign=0.05, dangling=True),
    GenConfig(seed=5, lines=800, partitions=1, producers=3, consumers=3, stale_follower=True,
              uncommitted_tail=True, lagging_follower=True),
], ids=["default", "crashes-dangling", "one-partition"])
def test_valid_runs_read_the_same_by_both_paths(tmp_path, config):
    generate_to_dir(tmp_path, config)
    fast = read_grouped(tmp_path / "history.jsonl")
    exact, problems = exact_history(tmp_path / "history.jsonl")
    assert silent(problems) and fast is not None
    assert fast[0] == exact[0] and fast[1] == exact[1] and fast[2] == exact[2]
    log = FinalLog()
    assert read_final_fast(tmp_path / "final.jsonl", log)
    assert log == exact_final(tmp_path / "final.jsonl")[0]


def test_records_polled_again_are_one_object(tmp_path):
    generate_to_dir(tmp_path, GenConfig(seed=6, lines=600))
    partitions = read_grouped(tmp_path / "history.jsonl")[0]
    for ph in partitions.values():
        seen: dict[tuple[int, str], tuple[int, str]] = {}
        for poll in ph.polls:
            for record in poll.records:
                assert seen.setdefault(record, record) is record


def test_unknown_fields_stay_on_the_fast_path(tmp_path):
    """Unknown fields, even non-ASCII ones and (in nemesis values, which
    nothing reads) integers beyond 64 bits, are ignored by both paths."""
    path = tmp_path / "history.jsonl"
    out = []
    for line in LINES["history.jsonl"]:
        d = orjson.loads(line)
        d["extra"] = {"anything": [1, "é", None]}
        text = orjson.dumps(d)
        if d["process"] == "nemesis" and isinstance(d.get("value"), dict):
            text = text.replace(b'"value":{', b'"value":{"more":' + str(2**70).encode() + b",", 1)
        out.append(text + b"\n")
    path.write_bytes(b"".join(out))
    fast = read_grouped(path)
    exact, problems = exact_history(path)
    assert silent(problems) and fast is not None
    assert fast[0] == exact[0] and fast[2] == exact[2]


@pytest.mark.parametrize("line, why", [
    (b'{"index":0,"time":1,"process":0,"type":"invoke","f":"send","value":{"topic":"fp",'
     b'"partition":0,"value":"0-1"},"x":"\xff"}\n', "invalid UTF-8 in an unknown field"),
    (b'{"index":0,"time":18446744073709551616,"process":0,"type":"invoke","f":"poll"}\n',
     "an integer beyond 64 bits"),
    (b'{"index":0,"time":1,"process":0,"type":"invoke","f":"poll"}', "no trailing newline"),
    (b'{"index":0,"time":1,"process":0,"type":"invoke","f":"fetch"}\n', "an unknown client f"),
])
def test_what_the_exact_reader_would_report_leaves_the_fast_path(tmp_path, line, why):
    path = tmp_path / "history.jsonl"
    path.write_bytes(line)
    assert read_grouped(path) is None, why
    _, problems = exact_history(path)
    assert not silent(problems), why


def history_gives_up_or_agrees(read, directory: Path, lines: list[bytes]) -> None:
    """`read` (path -> (partitions, resets, counts) or None) of the history
    `lines` gives up, or gives what the exact reader gives, silent."""
    path = directory / f"history-{next(COUNTER)}.jsonl"
    path.write_bytes(b"".join(lines))
    got = read(path)
    exact, problems = exact_history(path)
    if got is not None:
        assert silent(problems)
        assert got[0] == exact[0] and got[1] == exact[1] and got[2] == exact[2]


def final_gives_up_or_agrees(read, directory: Path, lines: list[bytes]) -> None:
    """`read` (path -> FinalLog or None) of the final log `lines` gives up,
    or gives what the exact reader gives, silent."""
    path = directory / f"final-{next(COUNTER)}.jsonl"
    path.write_bytes(b"".join(lines))
    got = read(path)
    exact, problems = exact_final(path)
    if got is not None:
        assert silent(problems)
        assert got == exact


def fast_final(path: Path) -> FinalLog | None:
    log = FinalLog()
    return log if read_final_fast(path, log) else None


@SETTINGS
@given(st.data())
def test_mutated_histories_give_up_or_agree_with_the_exact_reader(tmp_path_factory, data):
    history_gives_up_or_agrees(read_grouped, tmp_path_factory.mktemp("h"),
                               data.draw(mutation(LINES["history.jsonl"])))


@SETTINGS
@given(st.data())
def test_mutated_final_logs_give_up_or_agree_with_the_exact_reader(tmp_path_factory, data):
    final_gives_up_or_agrees(fast_final, tmp_path_factory.mktemp("f"),
                             data.draw(mutation(LINES["final.jsonl"])))


def test_a_torn_last_line_is_still_reported_through_load_run(tmp_path):
    generate_to_dir(tmp_path, GenConfig(seed=7, lines=300))
    with open(tmp_path / "history.jsonl", "ab") as f:
        f.write(b'{"index":')
    run = load_run(tmp_path)
    assert any("the last line is ignored" in w for w in run.warnings)
    assert not run.errors
