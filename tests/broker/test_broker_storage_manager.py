"""LogManager: partition dirs, high-watermark checkpoint, clean-shutdown marker, directory lock."""
from __future__ import annotations

import pytest

from fencepost.broker.storage.manager import DataDirInUse, LogManager, parse_partition_dir
from tests.support.broker_storage_builder import batch


def test_partition_dir_names():
    assert parse_partition_dir("fp-0") == ("fp", 0)
    assert parse_partition_dir("my-topic.v2-13") == ("my-topic.v2", 13)
    assert parse_partition_dir("fp-0.3f2a1b-delete") is None
    assert parse_partition_dir("fp") is None


def test_creates_opens_lists_and_deletes_partitions(tmp_path):
    manager = LogManager(tmp_path, segment_bytes=1000)
    log = manager.get_or_create("fp", 2)
    assert manager.get_or_create("fp", 2) is log
    log.append_as_leader(batch(["a", "b"]), 0)
    manager.get_or_create("other-topic", 0)
    assert manager.partitions() == [("fp", 2), ("other-topic", 0)]
    assert (tmp_path / "fp-2" / "00000000000000000000.log").exists()
    manager.delete("other-topic", 0)
    assert not (tmp_path / "other-topic-0").exists()
    assert manager.get("other-topic", 0) is None
    manager.close()
    reopened = LogManager(tmp_path)
    assert reopened.partitions() == [("fp", 2)]
    assert reopened.get("fp", 2).log_end_offset == 2
    reopened.close()


def test_high_watermark_checkpoint(tmp_path):
    manager = LogManager(tmp_path)
    assert manager.read_high_watermarks() == {}
    manager.checkpoint_high_watermarks({("fp", 1): 88, ("fp", 0): 7})
    assert (tmp_path / "replication-offset-checkpoint").read_bytes() == b"0\n2\nfp 0 7\nfp 1 88\n"
    assert manager.read_high_watermarks() == {("fp", 0): 7, ("fp", 1): 88}
    manager.close()


def test_clean_shutdown_marker_is_written_on_close_and_removed_on_open(tmp_path):
    manager = LogManager(tmp_path)
    manager.get_or_create("fp", 0).append_as_leader(batch(["a"]), 0)
    manager.close()
    assert (tmp_path / ".kafka_cleanshutdown").exists()
    reopened = LogManager(tmp_path)
    assert not (tmp_path / ".kafka_cleanshutdown").exists()
    reopened.close()


def test_without_the_marker_every_segment_is_checked(tmp_path):
    manager = LogManager(tmp_path, segment_bytes=200)
    log = manager.get_or_create("fp", 0)
    for i in range(10):
        log.append_as_leader(batch([f"v{i}"]), 0)
    first = log.segments[0].log_path
    manager.close()
    data = bytearray(first.read_bytes())
    data[-1] ^= 1
    first.write_bytes(bytes(data))
    clean = LogManager(tmp_path, segment_bytes=200)  # marker present: old segments trusted
    assert clean.get("fp", 0).log_end_offset == 10
    clean.close()
    (tmp_path / ".kafka_cleanshutdown").unlink()
    unclean = LogManager(tmp_path, segment_bytes=200)
    assert unclean.get("fp", 0).log_end_offset < 10
    unclean.close()


def test_lazy_mode_flush_all(tmp_path):
    manager = LogManager(tmp_path, flush="lazy")
    log = manager.get_or_create("fp", 0)
    log.append_as_leader(batch(["a"]), 0)
    assert log.unflushed_bytes > 0
    manager.flush_all()
    assert log.unflushed_bytes == 0
    manager.close()


def test_a_second_manager_on_the_same_directory_is_refused(tmp_path):
    manager = LogManager(tmp_path)
    with pytest.raises(DataDirInUse, match="in use by another broker process"):
        LogManager(tmp_path)
    manager.close()
    LogManager(tmp_path).close()


def test_bad_topic_names_and_modes_are_refused(tmp_path):
    with pytest.raises(ValueError, match="flush mode"):
        LogManager(tmp_path / "x", flush="never")
    manager = LogManager(tmp_path)
    with pytest.raises(ValueError, match="cannot name a directory"):
        manager.get_or_create("a/b", 0)
    manager.close()
