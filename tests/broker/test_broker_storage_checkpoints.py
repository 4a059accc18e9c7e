"""Kafka checkpoint files: byte-exact format, round trips, atomic replacement, actionable errors."""
from __future__ import annotations

import pytest

from fencepost.broker.storage.checkpoints import (
    CheckpointError,
    read_checkpoint,
    read_epoch_checkpoint,
    read_offset_checkpoint,
    write_epoch_checkpoint,
    write_offset_checkpoint,
)


def test_offset_checkpoint_is_byte_exact_kafka_format(tmp_path):
    path = tmp_path / "replication-offset-checkpoint"
    write_offset_checkpoint(path, {("fp", 2): 88, ("fp", 0): 12, ("a-b.c", 10): 0})
    assert path.read_bytes() == b"0\n3\na-b.c 10 0\nfp 0 12\nfp 2 88\n"
    assert read_offset_checkpoint(path) == {("fp", 2): 88, ("fp", 0): 12, ("a-b.c", 10): 0}


def test_epoch_checkpoint_is_byte_exact_kafka_format(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    write_epoch_checkpoint(path, [(0, 0), (3, 40), (5, 90)])
    assert path.read_bytes() == b"0\n3\n0 0\n3 40\n5 90\n"
    assert read_epoch_checkpoint(path) == [(0, 0), (3, 40), (5, 90)]


def test_empty_checkpoint(tmp_path):
    path = tmp_path / "replication-offset-checkpoint"
    write_offset_checkpoint(path, {})
    assert path.read_bytes() == b"0\n0\n"
    assert read_offset_checkpoint(path) == {}


def test_absent_file_reads_as_nothing(tmp_path):
    assert read_checkpoint(tmp_path / "nope", 2) is None
    assert read_offset_checkpoint(tmp_path / "nope") == {}
    assert read_epoch_checkpoint(tmp_path / "nope") == []


def test_replacement_leaves_no_temporary_file_and_overwrites(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    write_epoch_checkpoint(path, [(1, 1)])
    write_epoch_checkpoint(path, [(2, 5)])
    assert read_epoch_checkpoint(path) == [(2, 5)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["leader-epoch-checkpoint"]


def test_reads_a_file_written_by_kafka_with_extra_spaces(tmp_path):
    path = tmp_path / "replication-offset-checkpoint"
    path.write_bytes(b"0\n2\nfp  0   7\nfp 1 9")  # Kafka splits on runs of whitespace; last newline optional
    assert read_offset_checkpoint(path) == {("fp", 0): 7, ("fp", 1): 9}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"1\n0\n", "line 1: unsupported checkpoint version '1'"),
        (b"0\n", "expected a version line and a count line"),
        (b"0\nx\n", "line 2: entry count 'x' is not an integer"),
        (b"0\n2\n1 5\n", "announces 2 entries but 1 follow"),
        (b"0\n1\n1 5 7\n", "line 3: '1 5 7' has 3 fields, expected 2"),
        (b"0\n1\n1 five\n", "entry 1: start offset 'five' is not an integer"),
    ],
)
def test_malformed_files_name_file_line_and_fix(tmp_path, content, message):
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_bytes(content)
    with pytest.raises(CheckpointError) as info:
        read_epoch_checkpoint(path)
    assert message in str(info.value)
    assert str(path) in str(info.value)
    assert "delete" in str(info.value)
