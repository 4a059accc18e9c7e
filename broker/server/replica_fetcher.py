"""Follower fetchers (as Kafka's ReplicaFetcherManager + AbstractFetcherThread): one task per leader broker.

Owns, for each partition this broker follows, the fetch state: the leader and
leader epoch it follows, whether it still has to truncate, whether it was
fenced, and when it may retry. A fetcher first truncates each new partition
by the rules of the truncation mode (broker/server/truncation.py) — at its HW,
or by asking the leader OffsetsForLeaderEpoch, round after round in
kip279/kip320 — then fetches (Fetch with its replica id) from its log end,
appends what comes as follower and takes the leader's high watermark.

Errors: a connection problem backs off and reconnects; NOT_LEADER_OR_FOLLOWER
and UNKNOWN_LEADER_EPOCH back off and retry (the follower keeps what it was
told until the controller says otherwise — which is how a zombie follower of
KAFKA-6880 keeps fetching); FENCED_LEADER_EPOCH (kip320 only: the leader has a
newer epoch) stops the partition until new state comes; OFFSET_OUT_OF_RANGE
truncates to the leader's log end when the follower is ahead of it.
"""
from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from dataclasses import dataclass, field

from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest, OffsetForLeaderEpochRequest

from fencepost.broker.storage.log import InvalidFollowerAppend

from .broker_client import BrokerClient, BrokerConnectionError
from .errors import ErrorCode
from .log_backend import PartitionLog
from .partition import Partition, TopicPartition
from .replica_manager import ReplicaManager
from .truncation import asks_leader, fences_by_leader_epoch, step_after_answer, truncate_to_high_watermark

log = logging.getLogger("broker.replica_fetcher")

FETCH_VERSION = 12
EPOCH_VERSION = 3  # the first OffsetsForLeaderEpoch version that names the asking replica
LIST_OFFSETS_VERSION = 4
_FetchTopic = FetchRequest.FetchTopic
_FetchPartition = _FetchTopic.FetchPartition
_EpochTopic = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
_EpochPartition = _EpochTopic.OffsetForLeaderPartition
_ListTopic = ListOffsetsRequest.ListOffsetsTopic
_ListPartition = _ListTopic.ListOffsetsPartition


@dataclass(frozen=True, slots=True)
class FetcherSettings:
    node_id: int
    truncation: str
    fetch_wait_max_ms: int = 500
    fetch_max_bytes: int = 16 << 20
    partition_max_bytes: int = 1 << 20
    backoff_ms: int = 200
    request_timeout_ms: int = 10_000


@dataclass
class FetchState:
    leader_epoch: int
    truncating: bool = True
    fenced: bool = False
    retry_at: float = 0.0


@dataclass
class ReplicaFetcher:
    leader_id: int
    host: str
    port: int
    settings: FetcherSettings
    replicas: ReplicaManager
    states: dict[TopicPartition, FetchState] = field(default_factory=dict)
    _wakeup: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task | None = None
    _last_error: str = ""

    def start(self) -> None:
        self._client = BrokerClient(self.host, self.port, f"replica-fetcher-{self.settings.node_id}",
                                    self.settings.request_timeout_ms / 1000)
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._client.close()

    def add(self, tp: TopicPartition, leader_epoch: int) -> None:
        self.states[tp] = FetchState(leader_epoch)
        self._wakeup.set()

    def remove(self, tp: TopicPartition) -> None:
        self.states.pop(tp, None)

    # the loop

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                if not await self._truncate() and not await self._fetch():
                    await self._idle(loop)
                self._last_error = ""
            except asyncio.CancelledError:
                raise
            except BrokerConnectionError as e:
                self._log_error(f"fetching from leader {self.leader_id} at {self._client.address}: {e}")
                await asyncio.sleep(self.settings.backoff_ms / 1000)
            except Exception:
                log.exception("fetcher for leader %d failed; backing off", self.leader_id)
                await asyncio.sleep(self.settings.backoff_ms / 1000)

    async def _idle(self, loop: asyncio.AbstractEventLoop) -> None:
        """Nothing to do now: wait for a new partition or the next retry time."""
        self._wakeup.clear()
        waits = [s.retry_at for s in self.states.values() if not s.fenced and s.retry_at > loop.time()]
        timeout = max(min(waits) - loop.time(), 0.001) if waits else None
        try:
            await asyncio.wait_for(self._wakeup.wait(), timeout)
        except asyncio.TimeoutError:
            pass

    def _log_error(self, text: str) -> None:
        if text != self._last_error:  # once per distinct problem, not once per retry
            log.warning("%s", text)
            self._last_error = text

    def _ready(self, truncating: bool) -> list[tuple[TopicPartition, FetchState, Partition]]:
        now = asyncio.get_running_loop().time()
        out = []
        for tp, s in self.states.items():
            p = self.replicas.partition(tp)
            if p is not None and s.truncating == truncating and not s.fenced and now >= s.retry_at:
                out.append((tp, s, p))
        return out

    def _back_off(self, tp: TopicPartition, s: FetchState, why: str) -> None:
        s.retry_at = asyncio.get_running_loop().time() + self.settings.backoff_ms / 1000
        self._log_error(f"{tp} (leader {self.leader_id}, epoch {s.leader_epoch}): {why}; retrying")

    def _current_epoch(self, s: FetchState) -> int:
        return s.leader_epoch if fences_by_leader_epoch(self.settings.truncation) else -1

    # truncation

    async def _truncate(self) -> bool:
        ready = self._ready(truncating=True)
        if not ready:
            return False
        mode = self.settings.truncation
        asking = []
        for tp, s, p in ready:
            if asks_leader(mode, p.log.latest_epoch):
                asking.append((tp, s, p, p.log.latest_epoch))
            else:
                self._apply(tp, s, p, truncate_to_high_watermark(p.high_watermark, p.log.log_end_offset))
        if not asking:
            return True
        by_topic: dict[str, list] = defaultdict(list)
        for tp, s, _, epoch in asking:
            by_topic[tp.topic].append(_EpochPartition(partition=tp.partition,
                                                      current_leader_epoch=self._current_epoch(s),
                                                      leader_epoch=epoch))
        request = OffsetForLeaderEpochRequest(replica_id=self.settings.node_id, topics=[
            _EpochTopic(topic=t, partitions=parts) for t, parts in by_topic.items()])
        response = await self._client.call(request, EPOCH_VERSION)
        answers = {(t.topic, a.partition): a for t in response.topics for a in t.partitions}
        for tp, s, p, epoch in asking:
            if self.states.get(tp) is not s:
                continue  # the partition moved on while we asked
            a = answers.get((tp.topic, tp.partition))
            error = ErrorCode(a.error_code) if a is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if error is ErrorCode.NONE and a is not None:  # (NONE comes only with an answer)
                step = step_after_answer(mode, epoch, a.leader_epoch, a.end_offset, p.log.log_end_offset,
                                         p.high_watermark, lambda e: p.log.epoch_cache.end_offset_for(
                                             e, p.log.log_end_offset))
                self._apply(tp, s, p, step)
            elif error is ErrorCode.FENCED_LEADER_EPOCH:
                self._fence(tp, s)
            else:
                self._back_off(tp, s, f"OffsetsForLeaderEpoch answered {error.name}")
        return True

    def _apply(self, tp: TopicPartition, s: FetchState, p: Partition, step) -> None:
        before = p.log.log_end_offset
        p.truncate_to(step.offset)
        s.truncating = not step.done
        log.info("%s: follower of %d in epoch %d truncated %s: log end %d -> %d%s", tp, self.leader_id,
                 s.leader_epoch, step.reason, before, p.log.log_end_offset, "" if step.done else "; asking again")

    def _fence(self, tp: TopicPartition, s: FetchState) -> None:
        s.fenced = True
        log.warning("%s: leader %d answered FENCED_LEADER_EPOCH to epoch %d: this follower's state is stale; "
                    "not fetching until the controller's next word", tp, self.leader_id, s.leader_epoch)

    # fetching

    async def _fetch(self) -> bool:
        ready = self._ready(truncating=False)
        if not ready:
            return False
        sent = {tp: s for tp, s, _ in ready}
        by_topic: dict[str, list] = defaultdict(list)
        for tp, s, p in ready:
            by_topic[tp.topic].append(_FetchPartition(
                partition=tp.partition, current_leader_epoch=self._current_epoch(s),
                fetch_offset=p.log.log_end_offset, last_fetched_epoch=-1, log_start_offset=-1,
                partition_max_bytes=self.settings.partition_max_bytes))
        request = FetchRequest(replica_id=self.settings.node_id, max_wait_ms=self.settings.fetch_wait_max_ms,
                               min_bytes=1, max_bytes=self.settings.fetch_max_bytes, isolation_level=0,
                               session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
                               topics=[_FetchTopic(topic=t, partitions=parts) for t, parts in by_topic.items()])
        response = await self._client.call(request, FETCH_VERSION)
        if response.error_code:
            raise BrokerConnectionError(f"Fetch answered {ErrorCode(response.error_code).name}")
        for topic in response.responses:
            for part in topic.partitions:
                tp = TopicPartition(topic.topic, part.partition_index)
                state = self.states.get(tp)
                replica = self.replicas.partition(tp)
                if (state is None or state is not sent.get(tp) or replica is None or state.truncating
                        or replica.is_leader):
                    continue  # the partition's state changed while the fetch was out
                await self._handle_partition(tp, state, replica, ErrorCode(part.error_code), part.records,
                                             part.high_watermark)
        return True

    async def _handle_partition(self, tp: TopicPartition, s: FetchState, p: Partition, error: ErrorCode,
                                records: bytes | None, high_watermark: int) -> None:
        if error is ErrorCode.NONE:
            if records:
                try:
                    p.log.append_as_follower(records)
                except InvalidFollowerAppend as e:
                    self._back_off(tp, s, f"cannot append what the leader sent: {e}")
                    return
            p.update_follower_high_watermark(high_watermark)
        elif error is ErrorCode.FENCED_LEADER_EPOCH:
            self._fence(tp, s)
        elif error is ErrorCode.OFFSET_OUT_OF_RANGE:
            await self._handle_out_of_range(tp, s, p.log)
        else:
            self._back_off(tp, s, f"Fetch answered {error.name}")

    async def _handle_out_of_range(self, tp: TopicPartition, s: FetchState, plog: PartitionLog) -> None:
        request = ListOffsetsRequest(replica_id=self.settings.node_id, isolation_level=0, topics=[
            _ListTopic(name=tp.topic, partitions=[_ListPartition(
                partition_index=tp.partition, current_leader_epoch=self._current_epoch(s), timestamp=-1)])])
        answer = (await self._client.call(request, LIST_OFFSETS_VERSION)).topics[0].partitions[0]
        if answer.error_code:
            self._back_off(tp, s, f"ListOffsets answered {ErrorCode(answer.error_code).name}")
        elif answer.offset < plog.log_end_offset:
            log.warning("%s: log end %d is beyond the leader's %d: truncating to it", tp, plog.log_end_offset,
                        answer.offset)
            plog.truncate_to(answer.offset)
        else:
            self._back_off(tp, s, f"fetch offset {plog.log_end_offset} out of range at the leader")


class ReplicaFetcherManager:
    """The fetchers of this broker, by leader: partitions are added when this broker becomes their follower."""

    def __init__(self, settings: FetcherSettings, replicas: ReplicaManager) -> None:
        self.settings = settings
        self.replicas = replicas
        self._fetchers: dict[int, ReplicaFetcher] = {}
        self._leader_of: dict[TopicPartition, int] = {}

    def add_partition(self, tp: TopicPartition, leader_id: int, host: str, port: int, leader_epoch: int) -> None:
        self.remove_partition(tp)
        fetcher = self._fetchers.get(leader_id)
        if fetcher is not None and (fetcher.host, fetcher.port) != (host, port):
            # The leader restarted on another address: its partitions move to a fetcher for the new one.
            old = self._fetchers.pop(leader_id)
            fetcher = self._fetchers[leader_id] = ReplicaFetcher(leader_id, host, port, self.settings, self.replicas,
                                                                 dict(old.states))
            fetcher.start()
            asyncio.get_running_loop().create_task(old.stop())
        if fetcher is None:
            fetcher = self._fetchers[leader_id] = ReplicaFetcher(leader_id, host, port, self.settings, self.replicas)
            fetcher.start()
        fetcher.add(tp, leader_epoch)
        self._leader_of[tp] = leader_id

    def remove_partition(self, tp: TopicPartition) -> None:
        leader_id = self._leader_of.pop(tp, None)
        if leader_id is not None and (fetcher := self._fetchers.get(leader_id)) is not None:
            fetcher.remove(tp)
            if not fetcher.states:
                self._retire(leader_id)

    def _retire(self, leader_id: int) -> None:
        fetcher = self._fetchers.pop(leader_id)
        asyncio.get_running_loop().create_task(fetcher.stop())
        for tp in [tp for tp, lid in self._leader_of.items() if lid == leader_id]:
            del self._leader_of[tp]

    async def shutdown(self) -> None:
        fetchers, self._fetchers = list(self._fetchers.values()), {}
        self._leader_of.clear()
        await asyncio.gather(*(f.stop() for f in fetchers), return_exceptions=True)
