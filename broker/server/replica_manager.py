"""The partitions hosted on this broker: appends with acks, fetch reads with long polling, HW checkpoints.

Owns the map of local `Partition`s (as Kafka's ReplicaManager): it opens their
logs through the log manager, makes them leaders when told, appends producer
batches and answers acks (acks=all waits until the high watermark passes the
batch, which on one node is at once), reads for fetches and parks a fetch that
found fewer than min_bytes until an append wakes it or max_wait_ms runs out.
It also flushes logs and writes the high-watermark checkpoint.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .errors import ErrorCode
from .partition import AppendOutcome, Partition, ReadOutcome, TopicPartition

log = logging.getLogger("broker.replica_manager")


@dataclass(frozen=True, slots=True)
class FetchPartitionRequest:
    tp: TopicPartition
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1


@dataclass(frozen=True, slots=True)
class FetchParams:
    replica_id: int  # < 0: a consumer, which reads only up to the high watermark
    max_wait_ms: int
    min_bytes: int
    max_bytes: int

    @property
    def fetch_only_committed(self) -> bool:
        return self.replica_id < 0


class ReplicaManager:
    def __init__(self, node_id: int, log_manager: Any) -> None:
        self.node_id = node_id
        self.log_manager = log_manager
        self._partitions: dict[TopicPartition, Partition] = {}
        self._hw_checkpoint: dict[TopicPartition, int] | None = None

    # partitions

    def partition(self, tp: TopicPartition) -> Partition | None:
        return self._partitions.get(tp)

    def partitions(self) -> list[Partition]:
        return list(self._partitions.values())

    def make_leader(self, tp: TopicPartition, leader_epoch: int, replicas: Iterable[int],
                    isr: Iterable[int]) -> Partition:
        """Open (or create) the partition's log and lead it at `leader_epoch`."""
        p = self._partitions.get(tp)
        if p is None:
            p = Partition(tp, self.node_id, self.log_manager.get_or_create(tp.topic, tp.partition))
            self._partitions[tp] = p
        if self._hw_checkpoint is None:
            self._hw_checkpoint = {TopicPartition(t, n): hw
                                   for (t, n), hw in dict(self.log_manager.read_high_watermarks()).items()}
        p.make_leader(leader_epoch, tuple(replicas), tuple(isr), self._hw_checkpoint.get(tp))
        return p

    def stop_replica(self, tp: TopicPartition, delete: bool) -> None:
        p = self._partitions.pop(tp, None)
        if p is not None:
            p.leader_id = -1
            p._wake()
        if delete:
            self.log_manager.delete(tp.topic, tp.partition)

    # produce

    async def append_records(self, required_acks: int, timeout_ms: int, entries: dict[TopicPartition, bytes],
                             min_insync_replicas: Callable[[str], int]) -> dict[TopicPartition, AppendOutcome]:
        results: dict[TopicPartition, AppendOutcome] = {}
        for tp, records in entries.items():
            p = self._partitions.get(tp)
            if p is None:
                results[tp] = AppendOutcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            try:
                results[tp] = p.append_records_as_leader(records, required_acks, min_insync_replicas(tp.topic))
            except Exception:
                log.exception("append to %s failed", tp)
                results[tp] = AppendOutcome(ErrorCode.KAFKA_STORAGE_ERROR, message="storage error, see broker log")
        if required_acks == -1:
            await self._wait_for_high_watermark(results, timeout_ms)
        return results

    async def _wait_for_high_watermark(self, results: dict[TopicPartition, AppendOutcome], timeout_ms: int) -> None:
        """acks=all: wait until every appended batch is below its partition's high watermark."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout_ms, 0) / 1000
        while True:
            pending = [tp for tp, r in results.items() if r.error is ErrorCode.NONE
                       and (p := self._partitions.get(tp)) is not None and p.high_watermark <= r.last_offset]
            if not pending:
                return
            remaining = deadline - loop.time()
            if remaining <= 0:
                for tp in pending:
                    results[tp] = AppendOutcome(ErrorCode.REQUEST_TIMED_OUT, message="high watermark did not "
                                                "reach the batch before the produce timeout")
                return
            await self._wait_any([self._partitions[tp] for tp in pending], remaining)

    # fetch

    async def fetch_messages(self, params: FetchParams,
                             requests: list[FetchPartitionRequest]) -> list[tuple[FetchPartitionRequest, ReadOutcome]]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(params.max_wait_ms, 0) / 1000
        while True:
            results = self.read_from_local_log(params, requests)
            total = 0
            any_error = False
            for _, r in results:
                total += len(r.records)
                if r.error is not ErrorCode.NONE or r.diverging_epoch is not None:
                    any_error = True
            remaining = deadline - loop.time()
            if total >= params.min_bytes or any_error or not requests or remaining <= 0:
                return results
            parts = [p for req in requests if (p := self._partitions.get(req.tp)) is not None]
            if not parts:
                return results
            await self._wait_any(parts, remaining)

    def read_from_local_log(self, params: FetchParams,
                            requests: list[FetchPartitionRequest]) -> list[tuple[FetchPartitionRequest, ReadOutcome]]:
        results = []
        budget = params.max_bytes
        for req in requests:
            p = self._partitions.get(req.tp)
            if p is None:
                results.append((req, ReadOutcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)))
                continue
            if params.replica_id >= 0:
                p.update_follower_fetch_state(params.replica_id, req.fetch_offset)
            first = budget == params.max_bytes
            limit = min(req.max_bytes, budget)
            try:
                r = p.read_records(req.fetch_offset, limit, req.current_leader_epoch, req.last_fetched_epoch,
                                   params.fetch_only_committed)
            except Exception:
                log.exception("read of %s at offset %d failed", req.tp, req.fetch_offset)
                r = ReadOutcome(ErrorCode.KAFKA_STORAGE_ERROR)
            if len(r.records) > limit and not first:
                # Only the first partition with data may go over the budget, by its first batch (KIP-74);
                # this one waits for the next fetch.
                r = ReadOutcome(r.error, b"", r.high_watermark, r.last_stable_offset, r.log_start_offset,
                                r.diverging_epoch)
            budget = max(budget - len(r.records), 0)
            results.append((req, r))
        return results

    @staticmethod
    async def _wait_any(partitions: list[Partition], timeout: float) -> None:
        """Wait until any of the partitions wakes its waiters, or the timeout."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        for p in partitions:
            p.add_waiter(fut)
        timer = loop.call_later(timeout, lambda: fut.done() or fut.set_result(None))
        try:
            await fut
        finally:
            timer.cancel()
            for p in partitions:
                p.remove_waiter(fut)

    # durability

    def high_watermarks(self) -> dict[tuple[str, int], int]:
        return {(tp.topic, tp.partition): p.high_watermark for tp, p in self._partitions.items()}

    def checkpoint_high_watermarks(self) -> None:
        self.log_manager.checkpoint_high_watermarks(self.high_watermarks())

    def flush_all(self) -> None:
        self.log_manager.flush_all()
