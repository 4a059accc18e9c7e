"""The partitions hosted on this broker: leadership changes, appends with acks, fetch reads, ISR changes, HW
checkpoints.

Owns the map of local `Partition`s (as Kafka's ReplicaManager): it opens their
logs through the log manager (a partition starts from its HW checkpoint), makes
them leaders or followers when told, appends producer batches and answers acks
(acks=all waits in a purgatory until the high watermark passes the batch, while
the leadership it was written in lasts, and answers
NOT_ENOUGH_REPLICAS_AFTER_APPEND as soon as the ISR falls below
min.insync.replicas, which holds the HW), reads for fetches and parks a fetch that found fewer than
min_bytes until an append wakes it or max_wait_ms runs out. As leader it asks
the controller to shrink the ISR (followers lagging more than
replica.lag.time.max.ms) or expand it (followers caught up), one change in
flight per partition. It also flushes logs and writes the HW checkpoint.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
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


@dataclass(frozen=True, slots=True)
class IsrChangeResult:
    """The controller's answer to an ISR change: an error name, or the ISR and partition epoch now in force."""
    error: str | None
    isr: tuple[int, ...] = ()
    partition_epoch: int = -1


# (partition, leader epoch, partition epoch, proposed ISR) -> the controller's answer
IsrChanger = Callable[[TopicPartition, int, int, tuple[int, ...]], Awaitable[IsrChangeResult]]
ISR_RETRY_BACKOFF_MS = 1000


class ReplicaManager:
    def __init__(self, node_id: int, log_manager: Any, *, replica_lag_time_max_ms: int = 30_000,
                 isr_changer: IsrChanger | None = None, require_epoch_start_to_join_isr: bool = True) -> None:
        self.node_id = node_id
        self.log_manager = log_manager
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.isr_changer = isr_changer
        self.require_epoch_start_to_join_isr = require_epoch_start_to_join_isr
        self._partitions: dict[TopicPartition, Partition] = {}
        self._hw_checkpoint: dict[TopicPartition, int] | None = None
        self._isr_retry_at: dict[tuple[TopicPartition, int | None], float] = {}
        self._isr_tasks: set[asyncio.Task] = set()

    # partitions

    def partition(self, tp: TopicPartition) -> Partition | None:
        return self._partitions.get(tp)

    def partitions(self) -> list[Partition]:
        return list(self._partitions.values())

    def _get_or_create(self, tp: TopicPartition) -> Partition:
        p = self._partitions.get(tp)
        if p is None:
            if self._hw_checkpoint is None:
                self._hw_checkpoint = {TopicPartition(t, n): hw
                                       for (t, n), hw in dict(self.log_manager.read_high_watermarks()).items()}
            p = Partition(tp, self.node_id, self.log_manager.get_or_create(tp.topic, tp.partition))
            p.initialize_high_watermark(self._hw_checkpoint.get(tp))
            self._partitions[tp] = p
        return p

    def make_leader(self, tp: TopicPartition, leader_epoch: int, replicas: Iterable[int],
                    isr: Iterable[int], partition_epoch: int = 0) -> Partition:
        """Open (or create) the partition's log and lead it at `leader_epoch`."""
        p = self._get_or_create(tp)
        p.make_leader(leader_epoch, tuple(replicas), tuple(isr), partition_epoch)
        self._forget_isr_retries(tp)
        return p

    def make_follower(self, tp: TopicPartition, leader_id: int, leader_epoch: int, replicas: Iterable[int],
                      isr: Iterable[int], partition_epoch: int) -> tuple[Partition, bool]:
        """Open (or create) the partition's log and follow `leader_id`; True when leader or epoch changed."""
        p = self._get_or_create(tp)
        return p, p.make_follower(leader_id, leader_epoch, tuple(replicas), tuple(isr), partition_epoch)

    def stop_replica(self, tp: TopicPartition, delete: bool) -> None:
        p = self._partitions.pop(tp, None)
        self._forget_isr_retries(tp)
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
            if p is None:  # the topic exists (the caller checked) but this broker holds no replica of it
                results[tp] = AppendOutcome(ErrorCode.NOT_LEADER_OR_FOLLOWER)
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
        done: set[TopicPartition] = set()
        while True:
            pending = []
            for tp, r in results.items():
                if r.error is not ErrorCode.NONE or tp in done:
                    continue
                p = self._partitions.get(tp)
                if p is None or not p.is_leader or p.leader_epoch != r.leader_epoch:
                    results[tp] = AppendOutcome(ErrorCode.NOT_LEADER_OR_FOLLOWER, message=(
                        f"leadership of {tp} in epoch {r.leader_epoch} ended before the batch was replicated"))
                elif len(p.isr) < p.min_insync_replicas:
                    # The HW is held below min.insync: say so now rather than at the timeout. The batch
                    # stays in the log and may still commit: the error is not a definite failure.
                    results[tp] = AppendOutcome(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, message=(
                        f"ISR {list(p.isr)} of {tp} fell below min.insync.replicas={p.min_insync_replicas} "
                        "after the append"))
                elif p.high_watermark > r.last_offset:
                    done.add(tp)
                else:
                    pending.append(tp)
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
                self._maybe_expand_isr(p, params.replica_id)
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

        def expire() -> None:
            if not fut.done():
                fut.set_result(None)

        timer = loop.call_later(timeout, expire)
        try:
            await fut
        finally:
            timer.cancel()
            for p in partitions:
                p.remove_waiter(fut)

    # ISR changes (leader)

    def _forget_isr_retries(self, tp: TopicPartition) -> None:
        for key in [k for k in self._isr_retry_at if k[0] == tp]:
            del self._isr_retry_at[key]

    def _maybe_expand_isr(self, p: Partition, replica_id: int) -> None:
        if self.isr_changer is None:
            return
        isr = p.isr_expansion(replica_id, self.require_epoch_start_to_join_isr)
        if isr is not None:
            self._change_isr(p, isr, retry_key=(p.tp, replica_id))

    def maybe_shrink_isrs(self, now_ms: float) -> None:
        """Drop from the ISR of every led partition the followers that lagged too long (a periodic duty)."""
        if self.isr_changer is None:
            return
        for p in self._partitions.values():
            isr = p.isr_shrink(now_ms, self.replica_lag_time_max_ms)
            if isr is not None:
                self._change_isr(p, isr, retry_key=(p.tp, None))

    def _change_isr(self, p: Partition, isr: tuple[int, ...], retry_key: tuple[TopicPartition, int | None]) -> None:
        """Ask the controller for `isr`; after a refusal the same change (this partition's shrink, or
        this follower joining) waits ISR_RETRY_BACKOFF_MS before it is asked again."""
        loop = asyncio.get_running_loop()
        if loop.time() < self._isr_retry_at.get(retry_key, 0.0):
            return
        p.pending_isr = isr
        task = loop.create_task(self._send_isr_change(p, p.leader_epoch, p.partition_epoch, isr, retry_key))
        self._isr_tasks.add(task)
        task.add_done_callback(self._isr_tasks.discard)

    async def _send_isr_change(self, p: Partition, leader_epoch: int, partition_epoch: int,
                               isr: tuple[int, ...], retry_key: tuple[TopicPartition, int | None]) -> None:
        log.info("%s: asking the controller to change the ISR %s -> %s (leader epoch %d, partition epoch %d)",
                 p.tp, list(p.isr), list(isr), leader_epoch, partition_epoch)
        assert self.isr_changer is not None  # _change_isr sends only where there is one
        try:
            result = await self.isr_changer(p.tp, leader_epoch, partition_epoch, isr)
        except Exception as e:  # the controller is unreachable: try again later
            result = IsrChangeResult(f"{type(e).__name__}: {e}")
        if p.leader_epoch != leader_epoch or not p.is_leader:
            return
        if result.error is None:
            p.update_isr(result.isr, result.partition_epoch)
            log.info("%s: ISR now %s (partition epoch %d)", p.tp, list(p.isr), p.partition_epoch)
            return
        if p.pending_isr == isr:
            p.pending_isr = None
        self._isr_retry_at[retry_key] = asyncio.get_running_loop().time() + ISR_RETRY_BACKOFF_MS / 1000
        log.info("%s: ISR change to %s refused: %s", p.tp, list(isr), result.error)

    # durability

    def high_watermarks(self) -> dict[tuple[str, int], int]:
        return {(tp.topic, tp.partition): p.high_watermark for tp, p in self._partitions.items()}

    def checkpoint_high_watermarks(self) -> None:
        self.log_manager.checkpoint_high_watermarks(self.high_watermarks())

    def flush_all(self) -> None:
        self.log_manager.flush_all()
