"""PartitionLog: offsets and epochs of leader appends, follower appends, segment roll and index,
read rules, truncation, timestamps, idempotent producers, recovery of torn and corrupt tails,
and the lazy flush mode in one process."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from fencepost.broker.storage.batch import RecordBatch, iter_batches
from fencepost.broker.storage.log import InvalidFollowerAppend, OffsetOutOfRange, PartitionLog
from fencepost.broker.storage.offset_index import OffsetIndex
from fencepost.broker.storage.segment import segment_file_name
from tests.support.broker_storage_builder import Rec, batch, control_batch, legacy_messages


def open_log(directory: Path, **kwargs) -> PartitionLog:
    kwargs.setdefault("segment_bytes", 1 << 20)
    return PartitionLog.open(directory / "fp-0", "fp", 0, **kwargs)


def batches_of(data: bytes) -> list[RecordBatch]:
    return list(iter_batches(data))


def values_in(log: PartitionLog, start: int = 0) -> list[tuple[int, bytes]]:
    """(offset, value) of every record from `start`, reading the log batch by batch."""
    out = []
    offset = start
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        for b in batches_of(data):
            out += [(r.offset, r.value) for r in b.records() if r.offset >= offset]
        offset = batches_of(data)[-1].next_offset
    return out


def fill(log: PartitionLog, count: int, epoch: int = 0, per_batch: int = 2, **kwargs) -> None:
    for i in range(count):
        result = log.append_as_leader(batch([f"{epoch}-{i}-{j}" for j in range(per_batch)], **kwargs), epoch)
        assert result.error is None, result


# -- leader appends ---------------------------------------------------------------------
def test_leader_append_assigns_offsets_and_stamps_the_epoch(tmp_path):
    log = open_log(tmp_path)
    log.epoch_cache.assign(3, 0)
    first = log.append_as_leader(batch(["a", "b", "c"], base_offset=999, partition_leader_epoch=-1), 3)
    second = log.append_as_leader(batch(["d"], codec="zstd"), 3)
    assert (first.base_offset, first.last_offset, first.duplicate, first.error) == (0, 2, False, None)
    assert (second.base_offset, second.last_offset) == (3, 3)
    assert log.log_end_offset == 4
    stored = batches_of(log.read(0, 1 << 20))
    assert [(b.base_offset, b.partition_leader_epoch) for b in stored] == [(0, 3), (3, 3)]
    assert all(b.is_valid() for b in stored)
    assert values_in(log) == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d")]


def test_leader_append_of_several_batches_at_once(tmp_path):
    log = open_log(tmp_path)
    result = log.append_as_leader(batch(["a", "b"]) + batch(["c"]) + batch(["d", "e", "f"], codec="lz4"), 1)
    assert (result.base_offset, result.last_offset) == (0, 5)
    assert [b.base_offset for b in batches_of(log.read(0, 1 << 20))] == [0, 2, 3]
    assert log.epoch_cache.epoch_entries() == [(1, 0)]


def test_a_new_leader_epoch_gets_a_cache_entry_at_its_first_offset(tmp_path):
    log = open_log(tmp_path)
    fill(log, 2, epoch=1)
    fill(log, 1, epoch=4)
    assert log.epoch_cache.epoch_entries() == [(1, 0), (4, 4)]
    assert log.latest_epoch == 4


def test_a_stale_leader_epoch_is_refused_loudly(tmp_path):
    log = open_log(tmp_path)
    log.epoch_cache.assign(5, 0)
    with pytest.raises(ValueError, match="below the cached epoch 5"):
        log.append_as_leader(batch(["a"]), 4)


@pytest.mark.parametrize(
    ("records", "error", "message"),
    [
        (b"", "INVALID_RECORD", "no record batch"),
        (batch(["a"])[:-3], "CORRUPT_MESSAGE", "truncated batch"),
        (batch(["a"]) + b"\x00" * 5, "CORRUPT_MESSAGE", "5 bytes after the last whole batch"),
        (legacy_messages(1, 0, [b"old"]), "INVALID_RECORD", "message format v1"),
        (control_batch(), "INVALID_RECORD", "control batches"),
        (batch(["a"], producer_id=5, producer_epoch=0, base_sequence=-1), "INVALID_RECORD", "sequence -1"),
    ],
)
def test_invalid_produce_requests_are_refused_whole(tmp_path, records, error, message):
    log = open_log(tmp_path)
    fill(log, 1)
    result = log.append_as_leader(batch(["fine"]) + records if records else records, 0)
    assert (result.error, result.base_offset, result.duplicate) == (error, -1, False)
    assert message in result.error_message
    assert log.log_end_offset == 2


def test_a_crc_mismatch_is_corrupt_message(tmp_path):
    log = open_log(tmp_path)
    data = bytearray(batch(["abc"]))
    data[-1] ^= 0x40
    result = log.append_as_leader(bytes(data), 0)
    assert result.error == "CORRUPT_MESSAGE" and "CRC mismatch" in result.error_message
    assert log.log_end_offset == 0


def test_record_count_must_match_the_offset_delta(tmp_path):
    import google_crc32c

    data = bytearray(batch(["a", "b"]))
    data[57:61] = (3).to_bytes(4, "big")  # claims 3 records, last offset delta 1
    data[17:21] = google_crc32c.value(bytes(data[21:])).to_bytes(4, "big")
    result = open_log(tmp_path).append_as_leader(bytes(data), 0)
    assert result.error == "INVALID_RECORD" and "disagrees" in result.error_message


# -- idempotent producers ------------------------------------------------------------------
def idempotent(values, seq, epoch=0, pid=4242):
    return batch(values, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def test_a_retried_batch_is_not_appended_twice(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(idempotent(["a", "b"], 0), 0)
    log.append_as_leader(idempotent(["c"], 2), 0)
    retry = log.append_as_leader(idempotent(["a", "b"], 0), 0)
    assert (retry.base_offset, retry.last_offset, retry.duplicate, retry.error) == (0, 1, True, None)
    assert log.log_end_offset == 3


def test_out_of_order_sequence_and_fenced_epoch_are_refused(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(idempotent(["a"], 0, epoch=1), 0)
    gap = log.append_as_leader(idempotent(["b"], 2, epoch=1), 0)
    assert gap.error == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    old = log.append_as_leader(idempotent(["b"], 1, epoch=0), 0)
    assert old.error == "INVALID_PRODUCER_EPOCH"
    unknown = log.append_as_leader(idempotent(["z"], 9, pid=1), 0)
    assert unknown.error == "UNKNOWN_PRODUCER_ID"
    assert log.log_end_offset == 1


def test_a_refused_batch_in_a_request_leaves_the_producer_state_unchanged(tmp_path):
    log = open_log(tmp_path)
    result = log.append_as_leader(idempotent(["a"], 0) + idempotent(["b"], 5), 0)
    assert result.error == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert log.append_as_leader(idempotent(["a"], 0), 0).duplicate is False


def test_duplicates_are_still_detected_after_a_restart(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(idempotent(["a"], 0), 0)
    log.append_as_leader(idempotent(["b"], 1), 0)
    log.close()
    log = open_log(tmp_path)
    assert log.append_as_leader(idempotent(["b"], 1), 0).duplicate
    assert log.append_as_leader(idempotent(["c"], 2), 0).base_offset == 2


# -- segments and the index ------------------------------------------------------------------
def test_segments_roll_by_size_with_kafka_file_names(tmp_path):
    log = open_log(tmp_path, segment_bytes=400, index_interval_bytes=100)
    fill(log, 40)
    names = sorted(p.name for p in log.dir.iterdir())
    logs = [n for n in names if n.endswith(".log")]
    assert len(logs) == len(log.segments) > 3
    assert logs[0] == "00000000000000000000.log" and all(len(n) == 24 for n in logs)
    assert all(n.replace(".log", ".index") in names for n in logs)
    assert all(s.size <= 400 for s in log.segments)
    bases = [s.base_offset for s in log.segments]
    assert bases == [int(n[:20]) for n in logs]
    assert [s.next_offset for s in log.segments[:-1]] == bases[1:]


def test_index_entries_follow_kafkas_interval_rule_and_match_a_rebuild(tmp_path):
    log = open_log(tmp_path, segment_bytes=5000, index_interval_bytes=150)
    fill(log, 60, per_batch=3)
    on_disk = [s.index.read_file_entries() for s in log.segments]
    assert all(entries for entries in on_disk)
    for segment, entries in zip(log.segments, on_disk):
        # Each entry: (last offset of a batch, its position); consecutive entries more than 150 bytes apart.
        positions = [p for _, p in entries]
        assert all(b - a > 150 for a, b in zip([0] + positions, positions))
        for offset, position in entries:
            (header,) = batches_of(segment.read(position, RecordBatch(segment.read(position, 61)).size_in_bytes))
            assert header.last_offset == offset
    log.close()
    for segment in sorted(log.dir.glob("*.index")):
        segment.write_bytes(b"")  # force a rebuild on open
    reopened = open_log(tmp_path, segment_bytes=5000, index_interval_bytes=150)
    assert [s.index.read_file_entries() for s in reopened.segments] == on_disk


def test_index_file_uses_relative_offsets_in_big_endian(tmp_path):
    index = OffsetIndex(tmp_path / segment_file_name(1000, ".index"), 1000, buffered=False)
    index.append(1005, 4100)
    index.append(1017, 8300)
    assert (tmp_path / "00000000000000001000.index").read_bytes() == (
        (5).to_bytes(4, "big") + (4100).to_bytes(4, "big") + (17).to_bytes(4, "big") + (8300).to_bytes(4, "big")
    )
    assert index.lookup(1004) == (1000, 0)
    assert index.lookup(1005) == (1005, 4100)
    assert index.lookup(1016) == (1005, 4100)
    assert index.lookup(5000) == (1017, 8300)


def test_every_offset_is_found_through_the_index(tmp_path):
    log = open_log(tmp_path, segment_bytes=700, index_interval_bytes=64)
    fill(log, 50, per_batch=3)
    for offset in range(log.log_end_offset):
        first = batches_of(log.read(offset, 1))[0]
        assert first.base_offset <= offset <= first.last_offset


# -- read rules -------------------------------------------------------------------------------
def test_read_returns_the_whole_batch_holding_the_fetch_offset(tmp_path):
    log = open_log(tmp_path)
    fill(log, 3, per_batch=4)
    got = batches_of(log.read(5, 1 << 20))
    assert [b.base_offset for b in got] == [4, 8]


def test_the_first_batch_is_whole_even_beyond_max_bytes(tmp_path):
    log = open_log(tmp_path)
    fill(log, 3, per_batch=4)
    data = log.read(0, 10)
    assert [b.base_offset for b in batches_of(data)] == [0]
    assert len(data) == batches_of(data)[0].size_in_bytes


def test_max_bytes_limits_the_following_batches(tmp_path):
    log = open_log(tmp_path)
    fill(log, 5, per_batch=1)
    size = batches_of(log.read(0, 1))[0].size_in_bytes
    assert len(batches_of(log.read(0, size * 3))) == 3
    assert len(batches_of(log.read(0, size * 3 - 1))) == 2


def test_max_offset_excludes_batches_starting_at_or_beyond_it(tmp_path):
    log = open_log(tmp_path)
    fill(log, 4, per_batch=2)  # batches at 0, 2, 4, 6
    assert [b.base_offset for b in batches_of(log.read(0, 1 << 20, max_offset=4))] == [0, 2]
    assert [b.base_offset for b in batches_of(log.read(0, 1 << 20, max_offset=5))] == [0, 2, 4]
    assert log.read(4, 1 << 20, max_offset=4) == b""
    assert log.read(6, 1 << 20, max_offset=5) == b""


def test_read_bounds(tmp_path):
    log = open_log(tmp_path)
    fill(log, 2)
    assert log.read(4, 100) == b""
    with pytest.raises(OffsetOutOfRange) as info:
        log.read(5, 100)
    assert (info.value.offset, info.value.log_start_offset, info.value.log_end_offset) == (5, 0, 4)
    with pytest.raises(OffsetOutOfRange):
        log.read(-1, 100)


def test_a_read_stays_within_one_segment(tmp_path):
    log = open_log(tmp_path, segment_bytes=300)
    fill(log, 10)
    first_segment_end = log.segments[0].next_offset
    got = batches_of(log.read(0, 1 << 20))
    assert got[-1].next_offset == first_segment_end
    assert batches_of(log.read(first_segment_end, 1 << 20))[0].base_offset == first_segment_end


# -- follower appends --------------------------------------------------------------------------
def test_follower_append_takes_offsets_and_epochs_as_given(tmp_path):
    leader = open_log(tmp_path / "leader")
    fill(leader, 2, epoch=1)
    fill(leader, 2, epoch=3)
    follower = open_log(tmp_path / "follower")
    data = leader.read(0, 1 << 20)
    assert follower.append_as_follower(data) == 8
    assert follower.read(0, 1 << 20) == data
    assert follower.epoch_cache.epoch_entries() == [(1, 0), (3, 4)]


def test_follower_append_ignores_a_partial_trailing_batch(tmp_path):
    leader = open_log(tmp_path / "leader")
    fill(leader, 3)
    data = leader.read(0, 1 << 20)
    follower = open_log(tmp_path / "follower")
    assert follower.append_as_follower(data[:-10]) == 4
    assert follower.append_as_follower(b"") == 4


def test_follower_append_must_be_contiguous_and_valid(tmp_path):
    follower = open_log(tmp_path)
    with pytest.raises(InvalidFollowerAppend, match="batch at offset 3 where 0"):
        follower.append_as_follower(batch(["a"], base_offset=3, partition_leader_epoch=0))
    with pytest.raises(InvalidFollowerAppend, match="where 1"):
        follower.append_as_follower(batch(["a"], base_offset=0) + batch(["b"], base_offset=2))
    damaged = bytearray(batch(["a"], base_offset=0))
    damaged[-1] ^= 1
    with pytest.raises(InvalidFollowerAppend, match="corrupt"):
        follower.append_as_follower(bytes(damaged))
    assert follower.log_end_offset == 0


def test_follower_append_replays_producer_state(tmp_path):
    follower = open_log(tmp_path)
    follower.append_as_follower(batch(["a"], producer_id=9, producer_epoch=0, base_sequence=0,
                                      partition_leader_epoch=2))
    # the follower becomes leader: a retry of that batch is recognised
    follower.epoch_cache.assign(3, follower.log_end_offset)
    assert follower.append_as_leader(batch(["a"], producer_id=9, producer_epoch=0, base_sequence=0), 3).duplicate


# -- truncation ----------------------------------------------------------------------------
def test_truncate_drops_the_batch_holding_the_offset_and_everything_after(tmp_path):
    log = open_log(tmp_path, segment_bytes=300)
    fill(log, 3, epoch=1, per_batch=3)
    fill(log, 6, epoch=2, per_batch=3)
    assert len(log.segments) > 2
    log.truncate_to(10)  # inside the batch 9..11
    assert log.log_end_offset == 9
    assert values_in(log)[-1] == (8, b"1-2-2")
    assert log.epoch_cache.epoch_entries() == [(1, 0)]
    assert all(s.base_offset < 9 or s.is_empty for s in log.segments)
    fill(log, 1, epoch=3)
    assert [b.base_offset for b in batches_of(log.read(9, 1 << 20))] == [9]
    log.close()
    reopened = open_log(tmp_path, segment_bytes=300)
    assert reopened.log_end_offset == 11
    assert reopened.epoch_cache.epoch_entries() == [(1, 0), (3, 9)]


def test_truncate_at_a_segment_boundary_keeps_an_empty_active_segment(tmp_path):
    log = open_log(tmp_path, segment_bytes=300)
    fill(log, 10)
    boundary = log.segments[1].base_offset
    log.truncate_to(boundary)
    assert log.log_end_offset == boundary
    assert log.segments[-1].base_offset == boundary and log.segments[-1].is_empty
    assert sorted(p.name for p in log.dir.glob("*.log"))[-1] == segment_file_name(boundary)


def test_truncate_beyond_the_end_does_nothing_and_below_the_start_restarts(tmp_path):
    log = open_log(tmp_path)
    fill(log, 2)
    log.truncate_to(100)
    assert log.log_end_offset == 4
    log.truncate_fully_and_start_at(50)
    assert (log.log_start_offset, log.log_end_offset) == (50, 50)
    assert log.epoch_cache.epoch_entries() == []
    assert [p.name for p in log.dir.glob("*.log")] == [segment_file_name(50)]
    fill(log, 1)
    assert values_in(log, 50) == [(50, b"0-0-0"), (51, b"0-0-1")]


def test_truncate_at_the_end_drops_an_epoch_that_holds_no_record(tmp_path):
    # A leader of epoch 10 that appended nothing, now a follower: its leader never had epoch 10 and
    # answers epoch 9; the follower cuts to its own end of epoch 8 (= its log end) and must then ask
    # about epoch 8, not 10 again (found as a follower asking forever after an unclean election).
    log = open_log(tmp_path)
    fill(log, 2, epoch=8)
    log.epoch_cache.assign(10, log.log_end_offset)
    assert log.latest_epoch == 10
    log.truncate_to(log.log_end_offset)
    assert (log.latest_epoch, log.log_end_offset) == (8, 4)
    assert log.epoch_cache.epoch_entries() == [(8, 0)]


def test_truncation_forgets_the_producer_batches_it_removed(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(idempotent(["a"], 0), 0)
    log.append_as_leader(idempotent(["b"], 1), 0)
    log.truncate_to(1)
    again = log.append_as_leader(idempotent(["b"], 1), 0)
    assert (again.duplicate, again.base_offset) == (False, 1)


# -- timestamps -------------------------------------------------------------------------------
def test_offset_for_timestamp_finds_the_first_record_at_or_after(tmp_path):
    log = open_log(tmp_path, segment_bytes=300)
    for i in range(10):
        log.append_as_leader(batch([Rec(b"x", timestamp_delta=0), Rec(b"y", timestamp_delta=5)],
                                   base_timestamp=1000 * i), 0)
    assert log.offset_for_timestamp(0) == (0, 0)
    assert log.offset_for_timestamp(3001) == (7, 3005)
    assert log.offset_for_timestamp(3006) == (8, 4000)
    assert log.offset_for_timestamp(9005) == (19, 9005)
    assert log.offset_for_timestamp(9006) is None
    found = log.offset_for_timestamp(3001)
    assert (found.offset, found.timestamp) == (7, 3005)


# -- recovery ---------------------------------------------------------------------------------
def last_segment_file(log: PartitionLog) -> Path:
    return log.segments[-1].log_path


def test_recovery_cuts_a_segment_torn_mid_batch_at_the_last_whole_batch(tmp_path):
    log = open_log(tmp_path)
    fill(log, 5)
    sizes = [b.size_in_bytes for b in batches_of(log.read(0, 1 << 20))]
    log.close()
    path = last_segment_file(log)
    for cut in (1, 12, 30, sizes[-1] - 1):
        with open(path, "r+b") as f:
            f.truncate(sum(sizes) - cut)
        reopened = open_log(tmp_path)
        assert reopened.log_end_offset == 8
        assert path.stat().st_size == sum(sizes[:-1])
        reopened.close()
        with open(path, "ab") as f:  # restore the last batch for the next cut
            f.write(batch(["0-4-0", "0-4-1"], base_offset=8, partition_leader_epoch=0))
        sizes[-1] = path.stat().st_size - sum(sizes[:-1])


def test_recovery_cuts_a_last_batch_with_a_flipped_byte(tmp_path, caplog):
    log = open_log(tmp_path)
    fill(log, 4, epoch=1)
    fill(log, 1, epoch=2)
    log.close()
    path = last_segment_file(log)
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x10
    path.write_bytes(bytes(data))
    reopened = open_log(tmp_path)
    assert reopened.log_end_offset == 8
    assert values_in(reopened)[-1] == (7, b"1-3-1")
    assert reopened.epoch_cache.epoch_entries() == [(1, 0)]  # epoch 2 began in the cut batch
    assert "CRC mismatch" in caplog.text and "offset 8" in caplog.text


def test_recovery_cuts_a_zero_filled_tail(tmp_path):
    log = open_log(tmp_path)
    fill(log, 2)
    log.close()
    path = last_segment_file(log)
    size = path.stat().st_size
    with open(path, "ab") as f:
        f.write(bytes(4096))
    assert open_log(tmp_path).log_end_offset == 4
    assert path.stat().st_size == size


def test_unclean_recovery_checks_every_segment_and_drops_those_after_a_cut(tmp_path):
    log = open_log(tmp_path, segment_bytes=300)
    fill(log, 12)
    assert len(log.segments) >= 4
    second = log.segments[1]
    second_base, second_end = second.base_offset, second.next_offset
    later = [s.log_path for s in log.segments[2:]]
    log.close()
    data = bytearray(second.log_path.read_bytes())
    data[-2] ^= 0x01  # last batch of the second segment
    second.log_path.write_bytes(bytes(data))
    reopened = open_log(tmp_path, segment_bytes=300)
    last_kept = batches_of(reopened.read(second_base, 1 << 20))[-1]
    assert reopened.log_end_offset == last_kept.next_offset < second_end
    assert len(reopened.segments) == 2
    assert not any(p.exists() for p in later)


def test_after_a_clean_shutdown_only_the_last_segment_is_crc_checked(tmp_path):
    log = open_log(tmp_path, segment_bytes=300)
    fill(log, 12)
    end = log.log_end_offset
    first = log.segments[0].log_path
    log.close()
    data = bytearray(first.read_bytes())
    data[-2] ^= 0x01
    first.write_bytes(bytes(data))
    assert open_log(tmp_path, segment_bytes=300, had_clean_shutdown=True).log_end_offset == end
    assert open_log(tmp_path, segment_bytes=300, had_clean_shutdown=False).log_end_offset < end


def test_recovery_removes_orphan_indexes_and_segments_after_a_gap(tmp_path):
    log = open_log(tmp_path)
    fill(log, 2)
    log.close()
    (log.dir / segment_file_name(77, ".index")).write_bytes(b"\x00" * 8)
    (log.dir / segment_file_name(100)).write_bytes(batch(["far"], base_offset=100))
    reopened = open_log(tmp_path)
    assert reopened.log_end_offset == 4
    assert sorted(p.name for p in reopened.dir.iterdir() if p.suffix in (".log", ".index")) == [
        segment_file_name(0, ".index"), segment_file_name(0),
    ]


# -- flush modes in one process ------------------------------------------------------------
def test_lazy_mode_holds_appends_in_memory_until_flush(tmp_path):
    log = open_log(tmp_path, flush="lazy", segment_bytes=400)
    fill(log, 3)
    assert values_in(log)[-1] == (5, b"0-2-1")  # readable before any flush
    assert log.unflushed_bytes > 0
    assert all(p.stat().st_size == 0 for p in log.dir.glob("*.log"))
    log.flush()
    assert log.unflushed_bytes == 0
    fill(log, 10)  # rolls segments while unflushed
    assert len(log.segments) > 1
    # what a process killed now would leave on disk: only the flushed prefix
    on_disk = shutil.copytree(log.dir, tmp_path / "at-kill" / "fp-0")
    crashed = PartitionLog.open(on_disk, "fp", 0, flush="lazy", segment_bytes=400)
    assert crashed.log_end_offset == 6
    assert values_in(crashed) == values_in(log)[:6]
    log.close()  # a clean close flushes
    assert PartitionLog.open(log.dir, "fp", 0, segment_bytes=400).log_end_offset == 26


def test_lazy_mode_truncation_of_unflushed_data(tmp_path):
    log = open_log(tmp_path, flush="lazy")
    fill(log, 2)
    log.flush()
    fill(log, 2)
    log.truncate_to(5)
    assert log.log_end_offset == 4
    fill(log, 1)
    log.flush()
    assert values_in(PartitionLog.open(log.dir, "fp", 0)) == values_in(log)


@pytest.mark.parametrize("mode", ["os", "fsync"])
def test_os_and_fsync_modes_write_through(tmp_path, mode):
    log = open_log(tmp_path, flush=mode)
    fill(log, 3)
    assert log.unflushed_bytes == 0
    other = PartitionLog.open(log.dir, "fp", 0)
    assert values_in(other) == values_in(log)


def test_delete_removes_the_directory(tmp_path):
    log = open_log(tmp_path)
    fill(log, 1)
    log.delete()
    assert not (tmp_path / "fp-0").exists()


def test_a_closed_log_refuses_use(tmp_path):
    log = open_log(tmp_path)
    log.close()
    with pytest.raises(ValueError, match="closed"):
        log.read(0, 1)


def test_bad_configuration_is_named(tmp_path):
    with pytest.raises(ValueError, match="flush mode 'sometimes'"):
        open_log(tmp_path, flush="sometimes")
    with pytest.raises(ValueError, match="segment_bytes"):
        open_log(tmp_path, segment_bytes=2**31)


def test_data_written_by_the_log_is_plain_kafka_segments(tmp_path):
    log = open_log(tmp_path)
    fill(log, 2, epoch=7)
    raw = (log.dir / segment_file_name(0)).read_bytes()
    assert [(b.base_offset, b.partition_leader_epoch, b.is_valid()) for b in batches_of(raw)] == \
        [(0, 7, True), (2, 7, True)]
    assert os.path.getsize(log.dir / segment_file_name(0)) == len(raw)
