"""The leader epoch cache of one partition replica: which leader epoch began at which offset.

Owns the rules of Kafka's LeaderEpochFileCache (storage/.../epoch/LeaderEpochFileCache.java)
and its `leader-epoch-checkpoint` file, rewritten atomically on every change:
- assign(epoch, start): ignored unless `epoch` differs from the latest or `start`
  is lower than the latest start; first drops trailing entries with epoch >= new
  or start >= new.
- end_offset_for(requested, leo) — the OffsetsForLeaderEpoch answer from KIP-279 on:
  undefined requested (-1) -> (-1, -1); requested == latest -> (requested, leo);
  no larger epoch -> (-1, -1); no epoch <= requested -> (requested, start of the
  first larger); else (largest epoch <= requested, start of the first larger).
- end_offset_for_v0(requested, leo) — KIP-101's answer (Kafka 0.11.0, before
  KAFKA-6361): requested == latest -> leo; no larger epoch, or requested below the
  first cached epoch -> -1; else the start of the first larger epoch.
- truncate_from_end(end): drop entries starting at or after `end`.
- truncate_from_start(start): drop entries starting at or before `start` and
  re-add the last of them at `start`.
"""
from __future__ import annotations

import bisect
from pathlib import Path

from fencepost.broker.storage.checkpoints import read_epoch_checkpoint, write_epoch_checkpoint

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochFileCache:
    """Epoch -> start offset entries, ascending in both; persisted to `path` unless it is None."""

    def __init__(self, path: Path | None, entries: list[tuple[int, int]] | None = None) -> None:
        self.path = path
        self._epochs: list[int] = []
        self._starts: list[int] = []
        for epoch, start in entries or ():
            self._assign(epoch, start)

    @classmethod
    def load(cls, path: Path) -> LeaderEpochFileCache:
        """The cache as checkpointed at `path` (empty if the file is absent)."""
        return cls(path, read_epoch_checkpoint(path))

    # -- queries ------------------------------------------------------------
    @property
    def latest_epoch(self) -> int:
        """The latest epoch, or -1 when the cache is empty."""
        return self._epochs[-1] if self._epochs else UNDEFINED_EPOCH

    def epoch_entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts))

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch the record at `offset` was written in (-1 if before the first entry)."""
        index = bisect.bisect_right(self._starts, offset) - 1
        return self._epochs[index] if index >= 0 else UNDEFINED_EPOCH

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetsForLeaderEpoch v1+ (KIP-279): see the module docstring."""
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self._epochs and requested_epoch == self._epochs[-1]:
            return requested_epoch, log_end_offset
        higher = bisect.bisect_right(self._epochs, requested_epoch)
        if higher == len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return requested_epoch, self._starts[0]
        return self._epochs[higher - 1], self._starts[higher]

    def end_offset_for_v0(self, requested_epoch: int, log_end_offset: int) -> int:
        """End offset for OffsetsForLeaderEpoch v0 (KIP-101): see the module docstring."""
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH_OFFSET
        if self._epochs and requested_epoch == self._epochs[-1]:
            return log_end_offset
        higher = bisect.bisect_right(self._epochs, requested_epoch)
        if higher == len(self._epochs) or requested_epoch < self._epochs[0]:
            return UNDEFINED_EPOCH_OFFSET
        return self._starts[higher]

    # -- updates ------------------------------------------------------------
    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that `epoch` starts at `start_offset`; True (and the file rewritten) if anything changed."""
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"leader epoch entry ({epoch}, {start_offset}) has a negative epoch or offset")
        changed = self._assign(epoch, start_offset)
        if changed:
            self._write()
        return changed

    def _assign(self, epoch: int, start: int) -> bool:
        if self._epochs and epoch == self._epochs[-1] and start >= self._starts[-1]:
            return False
        while self._epochs and (self._epochs[-1] >= epoch or self._starts[-1] >= start):
            self._epochs.pop()
            self._starts.pop()
        self._epochs.append(epoch)
        self._starts.append(start)
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop the entries starting at or after `end_offset` (the log was truncated there)."""
        if end_offset < 0 or not self._starts or self._starts[-1] < end_offset:
            return
        keep = bisect.bisect_left(self._starts, end_offset)
        del self._epochs[keep:], self._starts[keep:]
        self._write()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop the entries starting at or before `start_offset`, keeping the last of them at `start_offset`."""
        removed = bisect.bisect_right(self._starts, start_offset)
        if removed == 0:
            return
        last_epoch = self._epochs[removed - 1]
        del self._epochs[:removed], self._starts[:removed]
        self._epochs.insert(0, last_epoch)
        self._starts.insert(0, start_offset)
        self._write()

    def reconcile(self, batch_epochs: list[tuple[int, int]], log_end_offset: int) -> bool:
        """After loading a log: assign the (epoch, first offset) of each epoch's batches in log
        order, then drop entries from `log_end_offset` on (what Kafka's recovery does), writing
        the file once if anything changed. True if it did."""
        before = self.epoch_entries()
        for epoch, start in batch_epochs:
            self._assign(epoch, start)
        keep = bisect.bisect_left(self._starts, log_end_offset)
        del self._epochs[keep:], self._starts[keep:]
        changed = self.epoch_entries() != before
        if changed:
            self._write()
        return changed

    def clear(self) -> None:
        if self._epochs:
            self._epochs.clear()
            self._starts.clear()
            self._write()

    def _write(self) -> None:
        if self.path is not None:
            write_epoch_checkpoint(self.path, self.epoch_entries())

    def __repr__(self) -> str:
        return f"LeaderEpochFileCache({self.epoch_entries()})"
