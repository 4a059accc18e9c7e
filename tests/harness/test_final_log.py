"""The final.jsonl reader: kinds, grouping per partition, and its problems."""
from __future__ import annotations

import orjson
import pytest

from fencepost.harness.errors import Problems
from fencepost.harness.rundir.final_reader import iter_final, read_final


def read_(kind, partition=0, **more):
    return {"kind": kind, "topic": "fp", "partition": partition, **more}


def write(path, lines, tail=b""):
    path.write_bytes(b"".join(orjson.dumps(d) + b"\n" if isinstance(d, dict) else d
                              for d in lines) + tail)
    return path


def test_every_kind_is_grouped_per_partition_in_file_order(tmp_path):
    path = write(tmp_path / "final.jsonl", [
        read_("read", 1, offset=5, value="a", leader_epoch=2),
        read_("read", 0, offset=0, value="b"),
        read_("read", 1, offset=7, value="c", leader_epoch=None),
        read_("read-state", 1, complete=False),
        read_("read-state", 0, complete=True),
        read_("replica", 1, node="n2", offset=5, value="a", leader_epoch=2),
        read_("replica", 1, node="n1", offset=5, value="x"),
        read_("replica-state", 1, node="n2", log_end_offset=8, high_watermark=6, leader_epoch=3,
              epochs=[[0, 0], [3, 5]]),
    ])
    problems = Problems()
    log = read_final(path, problems)
    assert problems.errors == [] and problems.warnings == []
    assert log.reads == {("fp", 1): [(5, "a"), (7, "c")], ("fp", 0): [(0, "b")]}
    assert log.read_complete == {("fp", 1): False, ("fp", 0): True}
    assert log.replicas == {("fp", 1): {"n2": [(5, "a")], "n1": [(5, "x")]}}
    state = log.replica_states[("fp", 1)]["n2"]
    assert (state.node, state.log_end_offset, state.high_watermark, state.leader_epoch,
            state.epochs) == ("n2", 8, 6, 3, [(0, 0), (3, 5)])
    assert log.lines == 8 and log.partitions() == {("fp", 0), ("fp", 1)}


def test_one_incomplete_read_state_makes_the_partition_incomplete(tmp_path):
    path = write(tmp_path / "final.jsonl", [read_("read-state", complete=False),
                                            read_("read-state", complete=True)])
    assert read_final(path).read_complete == {("fp", 0): False}


@pytest.mark.parametrize("bad, message", [
    (read_("read", offset="1", value="a"), 'field "offset": expected an integer, got "1"'),
    (read_("read", offset=1), 'field "value": missing (expected a string)'),
    ({"kind": "read", "partition": 0, "offset": 1, "value": "a"}, 'field "topic": missing'),
    (read_("replica", offset=1, value="a"), 'field "node": missing'),
    (read_("read-state", complete="yes"), 'field "complete": expected true or false'),
    (read_("replica-state", node="n1", log_end_offset=3), 'field "high_watermark": missing'),
    (read_("replica-state", node="n1", log_end_offset=3, high_watermark=2, epochs=[[1]]),
     'field "epochs[0]": expected an [epoch, start offset] pair'),
    ({"topic": "fp"}, 'field "kind": missing'),
    (b"{oops\n", "not valid JSON"),
])
def test_a_bad_line_is_an_error_naming_file_line_and_field(tmp_path, bad, message):
    path = write(tmp_path / "final.jsonl", [read_("read", offset=0, value="a"), bad,
                                            read_("read", offset=1, value="b")])
    problems = Problems()
    log = read_final(path, problems)
    assert len(problems.errors) == 1
    assert problems.errors[0].startswith(f"{path}:2: ")
    assert message in problems.errors[0]
    assert log.reads[("fp", 0)] == [(0, "a"), (1, "b")]


def test_a_torn_last_line_is_a_warning(tmp_path):
    path = write(tmp_path / "final.jsonl", [read_("read", offset=0, value="a")],
                 tail=b'{"kind": "read", "topic": "fp", "par')
    problems = Problems()
    log = read_final(path, problems)
    assert problems.errors == []
    assert len(problems.warnings) == 1
    assert problems.warnings[0].startswith(f"{path}:2: the last line is ignored: it has no terminating newline")
    assert log.reads[("fp", 0)] == [(0, "a")]
    # The torn line took the rest of fp/0's read with it: incomplete, never complete.
    assert log.torn and log.final_state(("fp", 0)).complete is False


def test_a_torn_line_naming_no_partition_makes_every_read_without_a_read_state_incomplete(tmp_path):
    path = write(tmp_path / "final.jsonl", [read_("read", offset=0, value="a"),
                                            read_("read-state", complete=True),
                                            read_("read", partition=1, offset=0, value="b")], tail=b'{"ki')
    log = read_final(path, Problems())
    assert log.final_state(("fp", 0)).complete is True
    assert log.final_state(("fp", 1)).complete is False


def test_a_torn_replica_line_leaves_the_final_reads_as_they_are(tmp_path):
    path = write(tmp_path / "final.jsonl", [read_("read", offset=0, value="a")],
                 tail=b'{"kind": "replica", "node": "n1", "topic": "fp", "partition": 0, "off')
    log = read_final(path, Problems())
    assert log.torn and log.final_state(("fp", 0)).complete is True


def test_a_complete_bad_last_line_is_an_error(tmp_path):
    path = write(tmp_path / "final.jsonl", [read_("read", offset=0, value="a")],
                 tail=b'{"kind": "read", "topic": "fp", "partition": 0, "offset": "x", "value": "b"}\n')
    problems = Problems()
    log = read_final(path, problems)
    assert len(problems.errors) == 1 and problems.errors[0].startswith(f"{path}:2: field \"offset\"")
    assert problems.warnings == [] and not log.torn


def test_unknown_kinds_warn_once_and_unknown_fields_are_ignored(tmp_path):
    path = write(tmp_path / "final.jsonl", [
        {"kind": "checksum", "value": 1}, {"kind": "checksum", "value": 2},
        read_("read", offset=0, value="a", crc=123),
    ])
    problems = Problems()
    entries = list(iter_final(path, problems))
    assert entries == [("read", ("fp", 0), None, (0, "a"))]
    assert len(problems.warnings) == 1 and "'checksum'" in problems.warnings[0]
    assert problems.errors == []
