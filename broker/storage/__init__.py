"""The own broker's storage layer: Kafka's on-disk log layout, read and written by the broker.

Modules (one concept each, named after Kafka's):
- `batch`: RecordBatch v2 header view, CRC-32C, in-place patches, batch splitting;
  `records` (v2 record decoding), `legacy` (v0/v1 messages), `compression` (codecs).
- `offset_index`, `segment`: a segment file and its sparse `.index`; `fileio`: whole pread/pwrite.
- `log`: `PartitionLog` (UnifiedLog + LogSegments) with recovery, flush modes.
- `epoch_cache`: `LeaderEpochFileCache`; `producer_state`: idempotent producers;
  `checkpoints`: Kafka's checkpoint files; `manager`: `LogManager` for a data dir.

Interface notes for the server (extensions of the agreed interface; nothing removed):
- `AppendResult` has a fifth field `error_message` (what was wrong, for logs and the
  produce response's error message).
- `PartitionLog.open(..., had_clean_shutdown=False)`: `LogManager` passes True when it
  found the clean-shutdown marker (then only the last segment is CRC-checked).
- `PartitionLog.append_as_follower` returns the new log end offset and raises
  `InvalidFollowerAppend` for records not contiguous from the log end or corrupt.
- `PartitionLog.offset_for_timestamp` returns `TimestampOffset(offset, timestamp)`,
  a NamedTuple: unpack as `offset, timestamp`.
- `latest_epoch` is -1 when the epoch cache is empty; `end_offset_for` answers (-1, -1)
  when undefined; `end_offset_for_v0` answers -1.
- `PartitionLog.truncate_fully_and_start_at(offset)` (as Kafka's) and
  `PartitionLog.unflushed_bytes` are available; `LogManager.get(topic, partition)`
  returns None for an unknown partition. Opening a data dir takes a `.lock` (flock);
  a second `LogManager` on it raises `DataDirInUse`.
Not thread-safe: the broker's event loop is the one caller.
"""
from fencepost.broker.storage.batch import RecordBatch, iter_batches
from fencepost.broker.storage.epoch_cache import LeaderEpochFileCache
from fencepost.broker.storage.log import (
    AppendResult,
    InvalidFollowerAppend,
    OffsetOutOfRange,
    PartitionLog,
    TimestampOffset,
)
from fencepost.broker.storage.manager import DataDirInUse, LogManager

__all__ = [
    "AppendResult",
    "DataDirInUse",
    "InvalidFollowerAppend",
    "LeaderEpochFileCache",
    "LogManager",
    "OffsetOutOfRange",
    "PartitionLog",
    "RecordBatch",
    "TimestampOffset",
    "iter_batches",
]
