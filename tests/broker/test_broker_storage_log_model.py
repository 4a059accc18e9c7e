"""PartitionLog against a list model under random appends, truncations, flushes, restarts and
crashes (hypothesis state machine), in every flush mode, with tiny segments and index intervals."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from fencepost.broker.storage.batch import iter_batches
from fencepost.broker.storage.log import PartitionLog
from tests.support.broker_storage_builder import batch

SEGMENT_BYTES = 500
INDEX_INTERVAL = 90


class LogMachine(RuleBasedStateMachine):
    """Model: batches as (base offset, values, epoch); `flushed` is the offset the files hold up to (lazy)."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="logmodel-"))
        self.batches: list[tuple[int, list[bytes], int]] = []
        self.epoch = 0
        self.counter = 0
        self.flushed = 0

    mode = "os"

    @initialize()
    def open_log(self) -> None:
        self.log = self._open()

    def _open(self) -> PartitionLog:
        return PartitionLog.open(
            self.tmp / "fp-0", "fp", 0, flush=self.mode, segment_bytes=SEGMENT_BYTES,
            index_interval_bytes=INDEX_INTERVAL,
        )

    @property
    def end(self) -> int:
        return self.batches[-1][0] + len(self.batches[-1][1]) if self.batches else 0

    @rule(count=st.integers(1, 6), new_epoch=st.booleans(), codec=st.sampled_from(["none", "gzip"]))
    def append(self, count: int, new_epoch: bool, codec: str) -> None:
        if new_epoch or not self.batches:
            self.epoch += 1
            self.log.epoch_cache.assign(self.epoch, self.log.log_end_offset)
        values = [f"v{self.counter + i}".encode() for i in range(count)]
        self.counter += count
        result = self.log.append_as_leader(batch(values, codec=codec), self.epoch)
        assert (result.error, result.base_offset, result.last_offset) == (None, self.end, self.end + count - 1)
        self.batches.append((self.end, values, self.epoch))
        if self.mode != "lazy":
            self.flushed = self.end

    @precondition(lambda self: self.batches)
    @rule(data=st.data())
    def truncate(self, data) -> None:
        offset = data.draw(st.integers(0, self.end))
        self.log.truncate_to(offset)
        self.batches = [b for b in self.batches if b[0] + len(b[1]) - 1 < offset]
        self.flushed = min(self.flushed, self.end)

    @rule()
    def flush(self) -> None:
        self.log.flush()
        self.flushed = self.end

    @rule()
    def restart_cleanly(self) -> None:
        self.log.close()
        self.flushed = self.end
        self.log = self._open()

    @rule()
    def crash(self) -> None:
        for segment in self.log.segments:  # kill -9: the files stay as they are, held data is gone
            segment.close()
        self.batches = [b for b in self.batches if b[0] + len(b[1]) <= self.flushed]
        self.log = self._open()

    @invariant()
    def log_matches_the_model(self) -> None:
        if not hasattr(self, "log"):
            return
        assert self.log.log_end_offset == self.end
        stored = []
        offset = 0
        while offset < self.log.log_end_offset:
            got = list(iter_batches(self.log.read(offset, 300)))
            assert got and got[0].base_offset <= offset <= got[0].last_offset
            stored += [(b.base_offset, [r.value for r in b.records()], b.partition_leader_epoch) for b in got]
            assert all(b.is_valid() for b in got)
            offset = got[-1].next_offset
        assert stored == self.batches
        epochs = []
        for base, _, epoch in self.batches:
            if not epochs or epochs[-1][0] != epoch:
                epochs.append((epoch, base))
        assert self.log.epoch_cache.epoch_entries() == epochs

    def teardown(self) -> None:
        if hasattr(self, "log"):
            self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def machine_for(mode: str, examples: int):
    machine = type(f"LogMachine_{mode}", (LogMachine,), {"mode": mode})
    machine.TestCase.settings = settings(max_examples=examples, stateful_step_count=20, deadline=None)
    return machine.TestCase


TestOsMode = machine_for("os", 15)
TestLazyMode = machine_for("lazy", 20)
TestFsyncMode = machine_for("fsync", 5)
