"""The history reader: validation (file, line, field), the torn last line,
unknown fields, and pairing of invokes with completions."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from fencepost.harness.errors import Problems
from fencepost.harness.rundir.history import HistoryReader, iter_history


def line(index, process, type_, f, value=None, **more):
    d = {"index": index, "time": 1000 * index, "process": process, "type": type_, "f": f}
    if value is not None:
        d["value"] = value
    d.update(more)
    return d


def send_value(value="0-1", partition=0, **more):
    return {"topic": "fp", "partition": partition, "value": value, **more}


def write(path: Path, lines, tail: bytes = b"") -> Path:
    data = b"".join(orjson.dumps(d) + b"\n" if isinstance(d, dict) else d for d in lines)
    path.write_bytes(data + tail)
    return path


def read(path: Path):
    problems = Problems()
    ops = list(iter_history(path, problems))
    return ops, problems


VALID_PAIR = [
    line(0, 0, "invoke", "send", send_value()),
    line(1, 0, "ok", "send", send_value(offset=0, leader_epoch=1)),
]


def test_a_valid_history_reads_without_problems(tmp_path):
    lines = [
        *VALID_PAIR,
        line(2, 1, "invoke", "assign", {"partitions": [["fp", 0]], "from": "beginning"}),
        line(3, 1, "ok", "assign", {"partitions": [["fp", 0]], "from": "beginning"}),
        line(4, 1, "invoke", "poll"),
        line(5, "nemesis", "info", "start-partition", {"grudge": {"n1": ["n2"]}}),
        line(6, 1, "ok", "poll", {"records": [{"topic": "fp", "partition": 0, "offset": 0,
                                               "value": "0-1", "leader_epoch": 1}]}),
        line(7, 0, "invoke", "send", send_value("0-2")),
        line(8, 0, "info", "send", send_value("0-2"), error="timed out"),
    ]
    ops, problems = read(write(tmp_path / "history.jsonl", lines))
    assert problems.errors == [] and problems.warnings == []
    assert [op.to_json() for op in ops] == lines


# (the bad line, the field the message must name, a phrase of the message)
BAD_MIDDLE_LINES = [
    (line(2, 0, "okk", "send", send_value()), '"type"', '"okk" is not one of invoke, ok, fail, info'),
    ({"index": 2, "process": 0, "type": "invoke", "f": "poll"}, '"time"', "missing"),
    (line(7, 0, "invoke", "poll"), '"index"', "must be 2"),
    (line(2, "client-0", "invoke", "poll"), '"process"', 'integer or "nemesis"'),
    (line(2, 0, "invoke", 3), '"f"', "must be a string"),
    (line(2, 0, "invoke", "poll", error=5), '"error"', "must be a string"),
    (line(2, 0, "invoke", "send", {"topic": "fp", "value": "0-2"}), '"value.partition"', "an integer"),
    (line(2, 0, "invoke", "send", ["fp", 0, "0-2"]), '"value"', "an object"),
    (line(2, 0, "invoke", "poll", {"records": []}), '"value"', "null for a poll invoke"),
    (line(2, 0, "invoke", "assign", {"partitions": [["fp", "0"]]}), '"value.partitions[0]"',
     "[topic, partition] pair"),
    (line(2, 0, "invoke", "assign", {"partitions": [], "from": "middle"}), '"value.from"',
     '"beginning" or an object'),
    (line(2, 0, "ok", "send", send_value(offset=1)), '"type"', "without a pending invoke"),
    (b"{\"index\": 2, \"time\": 1\n", None, "not valid JSON"),
    (b"[1, 2]\n", None, "expected a JSON object"),
]


@pytest.mark.parametrize("bad, field, phrase", BAD_MIDDLE_LINES)
def test_a_bad_middle_line_is_an_error_naming_file_line_and_field(tmp_path, bad, field, phrase):
    path = write(tmp_path / "history.jsonl",
                 [*VALID_PAIR, bad, line(3, 5, "invoke", "poll"), line(4, 5, "ok", "poll", {"records": []})])
    ops, problems = read(path)
    assert len(problems.errors) == 1, problems.errors
    message = problems.errors[0]
    assert message.startswith(f"{path}:3: ")  # 1-based line number
    if field is not None:
        assert f"field {field}" in message
    assert phrase in message
    assert problems.warnings == []
    # Reading goes on: the ops after the bad line are there.
    assert [op.index for op in ops] == [0, 1, 3, 4]


def test_the_error_message_of_the_brief(tmp_path):
    path = write(tmp_path / "history.jsonl", [*VALID_PAIR, line(2, 0, "okk", "send"),
                                             line(3, 1, "invoke", "poll")])
    _, problems = read(path)
    assert problems.errors == [f'{path}:3: field "type": "okk" is not one of invoke, ok, fail, info']


def test_a_send_ok_with_a_bad_offset_names_the_field(tmp_path):
    path = write(tmp_path / "history.jsonl", [
        line(0, 0, "invoke", "send", send_value()),
        line(1, 0, "ok", "send", send_value(offset="7")),
        line(2, 1, "invoke", "poll"),
    ])
    ops, problems = read(path)
    assert len(problems.errors) == 1 and 'field "value.offset"' in problems.errors[0]
    assert f"{path}:2:" in problems.errors[0]


def test_a_poll_record_of_the_wrong_shape_names_the_record(tmp_path):
    records = [{"topic": "fp", "partition": 0, "offset": 0, "value": "a"},
               {"topic": "fp", "partition": 0, "value": "b"}]
    path = write(tmp_path / "history.jsonl", [
        line(0, 1, "invoke", "poll"), line(1, 1, "ok", "poll", {"records": records}),
        line(2, 1, "invoke", "poll"),
    ])
    _, problems = read(path)
    assert len(problems.errors) == 1
    assert 'field "value.records[1].offset": expected an integer, got null' in problems.errors[0]
    # The poll's outcome is unknown; the process's next invoke is no second error.
    ops = list(HistoryReader(path).operations())
    assert [(o.invoke_index, o.type, o.complete_index) for o in ops] == [(0, "info", None),
                                                                          (2, "info", None)]


@pytest.mark.parametrize("tail", [
    b'{"index": 2, "time": 5, "process": 0, "ty',  # torn: no newline
    b'{"index": 2, "time": 5, "process": 0, "type": "invoke", "f": "poll"}',  # whole, no newline
])
def test_a_torn_last_line_is_a_warning_and_ignored(tmp_path, tail):
    path = write(tmp_path / "history.jsonl", VALID_PAIR, tail)
    reader = HistoryReader(path, Problems())
    ops = list(reader)
    assert reader.problems.errors == []
    assert len(reader.problems.warnings) == 1
    assert reader.problems.warnings[0].startswith(f"{path}:3: the last line is ignored")
    assert "torn" in reader.problems.warnings[0]
    assert [op.index for op in ops] == [0, 1]
    assert reader.counts.torn


@pytest.mark.parametrize("tail", [
    b'{"index": 2, "time": 5, "process": 0, "ty\n',  # bad JSON, newline
    orjson.dumps(line(2, 0, "okk", "poll")) + b"\n",  # fails validation
])
def test_a_complete_bad_last_line_is_an_error(tmp_path, tail):
    """Only a line without its newline is torn: a complete one is corruption wherever it stands."""
    path = write(tmp_path / "history.jsonl", VALID_PAIR, tail)
    reader = HistoryReader(path, Problems())
    ops = list(reader)
    assert len(reader.problems.errors) == 1 and reader.problems.warnings == []
    assert reader.problems.errors[0].startswith(f"{path}:3: ")
    assert [op.index for op in ops] == [0, 1]
    assert not reader.counts.torn


def test_unknown_fields_are_kept_and_ignored(tmp_path):
    lines = [line(0, 0, "invoke", "send", send_value(), trace="abc"),
             line(1, 0, "ok", "send", send_value(offset=3, extra_inner=1), node="n1", error=None)]
    ops, problems = read(write(tmp_path / "history.jsonl", lines))
    assert problems.errors == [] and problems.warnings == []
    assert ops[0].extra == {"trace": "abc"}
    assert ops[1].extra == {"node": "n1"} and ops[1].value["offset"] == 3


def test_an_unknown_client_f_is_a_warning_once(tmp_path):
    lines = [line(0, 0, "invoke", "txn", [1]), line(1, 0, "ok", "txn", [2]),
             line(2, 0, "invoke", "txn", [3]), line(3, 0, "ok", "txn", [4])]
    ops, problems = read(write(tmp_path / "history.jsonl", lines))
    assert len(ops) == 4 and problems.errors == []
    assert len(problems.warnings) == 1 and "'txn'" in problems.warnings[0]


def test_nemesis_ops_take_any_f_and_value_and_are_not_paired(tmp_path):
    lines = [line(0, "nemesis", "invoke", "kill", {"nodes": ["n2"]}),
             line(1, "nemesis", "info", "kill", ["whatever", 1]),
             line(2, "nemesis", "info", "heal")]
    path = write(tmp_path / "history.jsonl", lines)
    ops, problems = read(path)
    assert problems.errors == [] and len(ops) == 3
    reader = HistoryReader(path)
    assert list(reader.operations()) == []
    assert reader.counts.nemesis == 3 and reader.counts.lines == 3


def test_pairing_each_invoke_with_the_next_completion_of_its_process(tmp_path):
    lines = [
        line(0, 0, "invoke", "send", send_value("0-1")),
        line(1, 1, "invoke", "poll"),
        line(2, 2, "invoke", "send", send_value("2-1", partition=1)),  # never completed
        line(3, 1, "fail", "poll", error="broker down"),
        line(4, 0, "ok", "send", send_value("0-1", offset=4, leader_epoch=None)),
        line(5, 3, "invoke", "poll"),  # never completed
    ]
    reader = HistoryReader(write(tmp_path / "history.jsonl", lines))
    ops = list(reader.operations())
    assert [(o.process, o.f, o.type, o.invoke_index, o.complete_index) for o in ops] == [
        (1, "poll", "fail", 1, 3),
        (0, "send", "ok", 0, 4),
        (2, "send", "info", 2, None),
        (3, "poll", "info", 5, None),
    ]
    assert ops[0].error == "broker down"
    assert ops[1].value["offset"] == 4 and ops[1].invoke_value == send_value("0-1")
    assert ops[2].complete_time is None and ops[2].invoke_time == 2000
    assert reader.problems.errors == []
    assert reader.counts.by_f() == {"poll": {"fail": 1, "invoke": 2}, "send": {"invoke": 2, "ok": 1}}


def test_a_second_invoke_while_one_is_pending_is_an_error_and_the_first_never_completed(tmp_path):
    lines = [
        line(0, 0, "invoke", "send", send_value("0-1")),
        line(1, 0, "invoke", "send", send_value("0-2")),
        line(2, 0, "ok", "send", send_value("0-2", offset=0)),
    ]
    path = write(tmp_path / "history.jsonl", lines)
    reader = HistoryReader(path)
    ops = list(reader.operations())
    assert [(o.invoke_value["value"], o.type, o.complete_index) for o in ops] == [
        ("0-1", "info", None), ("0-2", "ok", 2)]
    [error] = reader.problems.errors
    assert error.startswith(f"{path}:2: field \"type\": process 0 invokes 'send'")
    assert "line 1 has no completion" in error


def test_a_completion_of_another_f_or_value_is_an_error_and_the_invoke_stays_unknown(tmp_path):
    lines = [
        line(0, 0, "invoke", "send", send_value("0-1")),
        line(1, 0, "ok", "poll", {"records": []}),
        line(2, 1, "invoke", "send", send_value("1-1")),
        line(3, 1, "ok", "send", send_value("1-9", offset=0)),
        line(4, 2, "invoke", "poll"),
    ]
    path = write(tmp_path / "history.jsonl", lines)
    reader = HistoryReader(path)
    ops = list(reader.operations())
    assert sorted((o.process, o.type, o.complete_index) for o in ops) == [
        (0, "info", None), (1, "info", None), (2, "info", None)]
    first, second = reader.problems.errors
    assert first.startswith(f"{path}:2: field \"f\": 'poll' completes the 'send' invoked at line 1")
    assert second.startswith(f"{path}:4: field \"value.value\": \"1-9\" differs from the invoke")


def test_only_the_first_errors_are_kept_but_all_are_counted(tmp_path):
    bad = [b"nonsense\n"] * 30
    problems = Problems(max_kept=5)
    list(iter_history(write(tmp_path / "history.jsonl", [*bad, line(30, 0, "invoke", "poll")]),
                      problems))
    assert problems.error_count == 30 and len(problems.errors) == 5
    assert problems.listed_errors()[-1] == "... and 25 more errors not listed"


def test_an_empty_file_has_no_ops_and_no_problems(tmp_path):
    ops, problems = read(write(tmp_path / "history.jsonl", []))
    assert ops == [] and problems.errors == [] and problems.warnings == []
