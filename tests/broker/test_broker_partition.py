"""Unit tests of Partition and ReplicaManager on real partition logs: epochs, fencing, HW, acks=all waits,
long polls."""
from __future__ import annotations

import asyncio

import pytest

from fencepost.broker.server.errors import ErrorCode
from fencepost.broker.server.partition import TopicPartition
from fencepost.broker.server.replica_manager import FetchParams, FetchPartitionRequest, ReplicaManager
from fencepost.broker.storage import LogManager
from tests.support.broker_support import make_batch, read_records

TP = TopicPartition("t", 0)


@pytest.fixture
def replicas(tmp_path):
    manager = LogManager(tmp_path / "data")
    yield ReplicaManager(1, manager)
    manager.close()


def test_epoch_starts_at_the_log_end_and_fences_requests(replicas):
    p = replicas.make_leader(TP, 0, [1], [1])
    assert p.append_records_as_leader(make_batch([b"a", b"b"]), 1, 1).last_offset == 1
    p = replicas.make_leader(TP, 3, [1], [1])
    p.append_records_as_leader(make_batch([b"c"]), 1, 1)
    assert p.log.epoch_cache.epoch_entries() == [(0, 0), (3, 2)]
    assert [p.check_leader_epoch(e) for e in (-1, 2, 3, 4)] == [
        ErrorCode.NONE, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.NONE, ErrorCode.UNKNOWN_LEADER_EPOCH]
    assert p.read_records(0, 1 << 20, 2, -1, True).error is ErrorCode.FENCED_LEADER_EPOCH
    assert [(o, e) for o, _, e in read_records(p.read_records(0, 1 << 20, 3, -1, True).records)] == [
        (0, 0), (1, 0), (2, 3)]
    end = p.last_offset_for_leader_epoch(-1, 0)
    assert (end.error, end.leader_epoch, end.end_offset) == (ErrorCode.NONE, 0, 2)
    assert p.last_offset_for_leader_epoch(1, 0).error is ErrorCode.FENCED_LEADER_EPOCH


def test_high_watermark_is_the_min_log_end_over_the_isr(replicas):
    p = replicas.make_leader(TP, 0, [1, 2], [1, 2])
    assert p.append_records_as_leader(make_batch([b"a", b"b", b"c"]), -1, 2).error is ErrorCode.NONE
    assert p.high_watermark == 0
    consumer = p.read_records(0, 1 << 20, -1, -1, fetch_only_committed=True)
    follower = p.read_records(0, 1 << 20, -1, -1, fetch_only_committed=False)
    assert consumer.records == b"" and len(read_records(follower.records)) == 3
    p.update_follower_fetch_state(2, 2)
    assert p.high_watermark == 2
    p.update_follower_fetch_state(2, 3)
    assert p.high_watermark == 3
    p.update_follower_fetch_state(9, 0)  # not a replica: ignored
    assert p.high_watermark == 3


def test_acks_all_refused_below_min_insync_replicas(replicas):
    p = replicas.make_leader(TP, 0, [1, 2], [1])
    refused = p.append_records_as_leader(make_batch([b"a"]), -1, 2)
    assert refused.error is ErrorCode.NOT_ENOUGH_REPLICAS and "min.insync.replicas=2" in refused.message
    assert p.log.log_end_offset == 0
    assert p.append_records_as_leader(make_batch([b"a"]), 1, 2).error is ErrorCode.NONE


def test_diverging_epoch_for_a_fetcher_ahead_of_the_leader(replicas):
    p = replicas.make_leader(TP, 1, [1], [1])
    p.append_records_as_leader(make_batch([b"a", b"b"]), 1, 1)
    p = replicas.make_leader(TP, 2, [1], [1])
    p.append_records_as_leader(make_batch([b"c"]), 1, 1)
    # a fetcher that wrote 5 records in epoch 1 learns that epoch 1 ended at offset 2 here
    r = p.read_records(5, 1 << 20, -1, 1, fetch_only_committed=False)
    assert r.error is ErrorCode.NONE and r.diverging_epoch == (1, 2) and r.records == b""
    assert p.read_records(2, 1 << 20, -1, 1, fetch_only_committed=False).diverging_epoch is None


def test_acks_all_waits_for_the_followers_and_times_out(replicas):
    async def scenario():
        p = replicas.make_leader(TP, 0, [1, 2], [1, 2])
        append = asyncio.ensure_future(replicas.append_records(-1, 10_000, {TP: make_batch([b"a"])}, lambda t: 1))
        await asyncio.sleep(0.01)
        assert not append.done()  # follower 2 has not fetched the batch yet
        p.update_follower_fetch_state(2, 1)
        result = (await append)[TP]
        assert result.error is ErrorCode.NONE and result.base_offset == 0
        late = await replicas.append_records(-1, 50, {TP: make_batch([b"b"])}, lambda t: 1)
        assert late[TP].error is ErrorCode.REQUEST_TIMED_OUT
    asyncio.run(scenario())


def test_long_poll_returns_when_data_arrives(replicas):
    async def scenario():
        p = replicas.make_leader(TP, 0, [1], [1])
        params = FetchParams(replica_id=-1, max_wait_ms=60_000, min_bytes=1, max_bytes=1 << 20)
        poll = asyncio.ensure_future(replicas.fetch_messages(params, [FetchPartitionRequest(TP, 0, 1 << 20)]))
        await asyncio.sleep(0.01)
        assert not poll.done()
        p.append_records_as_leader(make_batch([b"x"]), 1, 1)
        (req, result), = await asyncio.wait_for(poll, 5)
        assert read_records(result.records)[0][1] == b"x" and result.high_watermark == 1
        assert p._waiters == set()  # no waiter left behind
        empty = await replicas.fetch_messages(FetchParams(-1, 20, 1, 1 << 20), [FetchPartitionRequest(TP, 1, 100)])
        assert empty[0][1].records == b"" and empty[0][1].error is ErrorCode.NONE
    asyncio.run(scenario())


def test_fetch_max_bytes_budget_across_partitions(replicas):
    tps = [TopicPartition("t", i) for i in range(3)]
    for tp in tps:
        p = replicas.make_leader(tp, 0, [1], [1])
        for _ in range(4):
            p.append_records_as_leader(make_batch([b"v" * 1000]), 1, 1)
    one_batch = len(make_batch([b"v" * 1000]))
    params = FetchParams(-1, 0, 1, max_bytes=2 * one_batch)
    results = replicas.read_from_local_log(params, [FetchPartitionRequest(tp, 0, 1 << 20) for tp in tps])
    sizes = [len(r.records) for _, r in results]
    assert sizes[0] == 2 * one_batch and sizes[1:] == [0, 0]
    big_first = replicas.read_from_local_log(FetchParams(-1, 0, 1, max_bytes=10),
                                             [FetchPartitionRequest(tps[0], 0, 10)])
    assert len(big_first[0][1].records) == one_batch  # the first batch always comes whole (KIP-74)


# -- replication: ISR changes, follower state, the purgatory across leadership changes --------

def test_isr_expansion_one_follower_at_a_time_and_not_before_the_epoch_start(replicas):
    p = replicas.make_leader(TP, 0, [1, 2, 3], [1])
    p.append_records_as_leader(make_batch([b"a", b"b"]), 1, 1)
    p = replicas.make_leader(TP, 1, [1, 2, 3], [1], partition_epoch=1)  # epoch 1 starts at offset 2
    assert p.leader_epoch_start_offset == 2 and p.high_watermark == 2
    p.update_follower_fetch_state(2, 2)
    p.update_follower_fetch_state(3, 1)
    assert p.isr_expansion(2, require_epoch_start=True) == (1, 2)
    assert p.isr_expansion(3, require_epoch_start=False) is None  # below the HW
    p.append_records_as_leader(make_batch([b"c"]), 1, 1)  # HW 3 (ISR is {1})
    p.update_follower_fetch_state(3, 2)
    assert p.isr_expansion(3, require_epoch_start=True) is None  # LEO 2 < HW 3
    p.pending_isr = (1, 2)
    assert p.isr_expansion(2, require_epoch_start=True) is None  # one change in flight at a time


def test_isr_shrink_drops_followers_not_caught_up_within_the_lag_time(replicas):
    p = replicas.make_leader(TP, 0, [1, 2, 3], [1, 2, 3])
    p.make_leader(1, (1, 2, 3), (1, 2, 3), now_ms=1000)  # a new epoch: every ISR follower caught up "now"
    p.append_records_as_leader(make_batch([b"a"]), 1, 1)
    p.update_follower_fetch_state(2, 1, now_ms=5000)  # caught up at 5 s
    assert p.isr_shrink(now_ms=10_000, lag_time_max_ms=8000) == (1, 2)  # 3: last caught up at 1 s
    assert p.isr_shrink(now_ms=8_000, lag_time_max_ms=8000) is None


def test_maximal_isr_holds_the_hw_while_an_expansion_is_in_flight(replicas):
    p = replicas.make_leader(TP, 0, [1, 2], [1])
    p.append_records_as_leader(make_batch([b"a", b"b"]), 1, 1)
    assert p.high_watermark == 2
    p.pending_isr = (1, 2)
    p.append_records_as_leader(make_batch([b"c"]), 1, 1)
    assert p.high_watermark == 2  # follower 2 is counted: it has not reported offset 3
    p.update_follower_fetch_state(2, 3)
    assert p.high_watermark == 3


def test_hw_is_held_while_the_isr_is_below_min_insync(replicas):
    p = replicas.make_leader(TP, 0, [1, 2], [1])
    p.append_records_as_leader(make_batch([b"a"]), 1, 2)  # acks=1 is allowed, the HW is not
    assert p.high_watermark == 0
    p.update_isr((1, 2), 1)
    p.update_follower_fetch_state(2, 1)
    assert p.high_watermark == 1


def test_a_follower_takes_the_leaders_hw_within_its_own_log_and_truncation_lowers_it(replicas):
    p = replicas.make_leader(TP, 0, [1], [1])
    for value in (b"a", b"b", b"c"):
        p.append_records_as_leader(make_batch([value]), 1, 1)
    p, changed = replicas.make_follower(TP, 2, 1, [1, 2], [2], 1)
    assert changed and not p.is_leader
    p.update_follower_high_watermark(10)
    assert p.high_watermark == 3
    p.truncate_to(1)
    assert p.log.log_end_offset == 1 and p.high_watermark == 1
    assert p.append_records_as_leader(make_batch([b"x"]), 1, 1).error is ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_acks_all_waiter_learns_the_leadership_ended(replicas):
    async def scenario():
        replicas.make_leader(TP, 0, [1, 2], [1, 2])
        append = asyncio.ensure_future(replicas.append_records(-1, 10_000, {TP: make_batch([b"a"])}, lambda t: 1))
        await asyncio.sleep(0.01)
        replicas.make_follower(TP, 2, 1, [1, 2], [1, 2], 1)
        result = (await asyncio.wait_for(append, 5))[TP]
        assert result.error is ErrorCode.NOT_LEADER_OR_FOLLOWER
    asyncio.run(scenario())


def test_acks_all_after_the_isr_fell_below_min_insync(replicas):
    async def scenario():
        p = replicas.make_leader(TP, 0, [1, 2, 3], [1, 2, 3])
        append = asyncio.ensure_future(replicas.append_records(-1, 10_000, {TP: make_batch([b"a"])}, lambda t: 2))
        await asyncio.sleep(0.01)
        p.update_isr((1,), 1)  # the controller took 2 and 3 out meanwhile: below min.insync
        result = (await asyncio.wait_for(append, 5))[TP]
        assert result.error is ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    asyncio.run(scenario())


def test_isr_change_goes_through_the_controller_and_a_refusal_backs_off(tmp_path):
    from fencepost.broker.server.replica_manager import IsrChangeResult
    manager = LogManager(tmp_path / "data")
    asked = []

    async def changer(tp, leader_epoch, partition_epoch, isr):
        asked.append((leader_epoch, partition_epoch, isr))
        if 3 in isr:
            return IsrChangeResult("INELIGIBLE_REPLICA: fenced")
        return IsrChangeResult(None, isr, partition_epoch + 1)

    async def scenario():
        rm = ReplicaManager(1, manager, isr_changer=changer, require_epoch_start_to_join_isr=True)
        p = rm.make_leader(TP, 0, [1, 2, 3], [1], partition_epoch=4)
        params = FetchParams(replica_id=3, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20)
        rm.read_from_local_log(params, [FetchPartitionRequest(TP, 0, 1 << 20)])
        await asyncio.sleep(0.01)
        rm.read_from_local_log(params, [FetchPartitionRequest(TP, 0, 1 << 20)])  # refused: backs off
        rm.read_from_local_log(FetchParams(2, 0, 0, 1 << 20), [FetchPartitionRequest(TP, 0, 1 << 20)])
        await asyncio.sleep(0.01)
        assert asked == [(0, 4, (1, 3)), (0, 4, (1, 2))]
        assert p.isr == (1, 2) and p.partition_epoch == 5 and p.pending_isr is None
    try:
        asyncio.run(scenario())
    finally:
        manager.close()
