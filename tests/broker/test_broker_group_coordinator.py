"""Unit tests of classic consumer groups (GroupCoordinator) and committed offsets (OffsetStore)."""
from __future__ import annotations

import asyncio

import pytest

from fencepost.broker.server.errors import ErrorCode
from fencepost.broker.server.group_coordinator import GroupCoordinator, GroupState
from fencepost.broker.server.offset_store import FILE_NAME, CommittedOffset, OffsetStore

PROTOCOLS = [("range", b"meta-range"), ("roundrobin", b"meta-rr")]


def make_coordinator(tmp_path, **kw) -> GroupCoordinator:
    store = OffsetStore(tmp_path)
    store.open()
    kw.setdefault("min_session_timeout_ms", 10)
    return GroupCoordinator(store, topic_exists=lambda t, p: t != "missing", **kw)


async def join(gc, member_id="", group="g", session=10_000, rebalance=10_000, protocols=PROTOCOLS, v4=True,
               client="c", ptype="consumer"):
    return await gc.join_group(group, member_id, None, client, session, rebalance, ptype, protocols,
                               require_known_member_id=v4)


async def join_new(gc, **kw):
    """A new member's two-step join (MEMBER_ID_REQUIRED, then the join with that id), as a task."""
    first = await join(gc, **kw)
    assert first.error is ErrorCode.MEMBER_ID_REQUIRED and first.member_id
    return first.member_id, asyncio.ensure_future(join(gc, member_id=first.member_id, **kw))


def test_single_member_join_sync_heartbeat(tmp_path):
    async def scenario():
        gc = make_coordinator(tmp_path)
        member, task = await join_new(gc)
        r = await task
        assert r.error is ErrorCode.NONE and r.generation_id == 1 and r.leader_id == member
        assert r.protocol_name == "range" and r.members == ((member, None, b"meta-range"),)
        assert gc.group("g").state is GroupState.COMPLETING_REBALANCE
        s = await gc.sync_group("g", 1, member, "consumer", "range", {member: b"assign-1"})
        assert s.error is ErrorCode.NONE and s.assignment == b"assign-1"
        assert gc.group("g").state is GroupState.STABLE
        assert gc.heartbeat("g", member, 1) is ErrorCode.NONE
        assert gc.heartbeat("g", member, 0) is ErrorCode.ILLEGAL_GENERATION
        assert gc.heartbeat("g", "nobody", 1) is ErrorCode.UNKNOWN_MEMBER_ID
        assert gc.heartbeat("other", member, 1) is ErrorCode.UNKNOWN_MEMBER_ID
        gc.shutdown()
    asyncio.run(scenario())


def test_second_member_triggers_rebalance_and_both_get_assignments(tmp_path):
    async def scenario():
        gc = make_coordinator(tmp_path)
        m1, t1 = await join_new(gc, client="a")
        await t1
        await gc.sync_group("g", 1, m1, None, None, {m1: b"all"})
        m2, t2 = await join_new(gc, client="b")
        await asyncio.sleep(0)
        assert gc.group("g").state is GroupState.PREPARING_REBALANCE
        assert not t2.done()  # waits for m1 to rejoin
        assert gc.heartbeat("g", m1, 1) is ErrorCode.REBALANCE_IN_PROGRESS
        r1 = await join(gc, member_id=m1, client="a")
        r2 = await t2
        assert r1.generation_id == r2.generation_id == 2
        assert r1.leader_id == m1 and {m for m, _, _ in r1.members} == {m1, m2}
        assert r2.members == ()  # only the leader sees the member list
        follower_sync = asyncio.ensure_future(gc.sync_group("g", 2, m2, None, None, {}))
        await asyncio.sleep(0)
        assert not follower_sync.done()  # waits for the leader's assignment
        s1 = await gc.sync_group("g", 2, m1, None, None, {m1: b"p0", m2: b"p1"})
        s2 = await follower_sync
        assert (s1.assignment, s2.assignment) == (b"p0", b"p1")
        assert gc.group("g").state is GroupState.STABLE
        gc.shutdown()
    asyncio.run(scenario())


def test_member_that_does_not_rejoin_is_dropped_at_the_rebalance_timeout(tmp_path):
    async def scenario():
        gc = make_coordinator(tmp_path)
        m1, t1 = await join_new(gc, rebalance=100)
        await t1
        await gc.sync_group("g", 1, m1, None, None, {})
        m2, t2 = await join_new(gc, rebalance=100)
        r2 = await asyncio.wait_for(t2, 5)  # m1 never rejoins
        assert r2.error is ErrorCode.NONE and r2.generation_id == 2 and r2.leader_id == m2
        assert list(gc.group("g").members) == [m2]
        assert gc.heartbeat("g", m1, 2) is ErrorCode.UNKNOWN_MEMBER_ID
        gc.shutdown()
    asyncio.run(scenario())


def test_session_timeout_removes_a_silent_member(tmp_path):
    async def scenario():
        gc = make_coordinator(tmp_path)
        m1, t1 = await join_new(gc, session=100)
        await t1
        await gc.sync_group("g", 1, m1, None, None, {})
        for _ in range(4):  # heartbeats keep it alive past its session timeout
            await asyncio.sleep(0.05)
            assert gc.heartbeat("g", m1, 1) is ErrorCode.NONE
        await asyncio.sleep(0.3)
        group = gc.group("g")
        assert group.members == {} and group.state is GroupState.EMPTY and group.generation_id == 2
        gc.shutdown()
    asyncio.run(scenario())


def test_leave_group(tmp_path):
    async def scenario():
        gc = make_coordinator(tmp_path)
        m1, t1 = await join_new(gc)
        await t1
        await gc.sync_group("g", 1, m1, None, None, {})
        assert gc.leave_group("g", [m1, "ghost"]) == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
        assert gc.group("g").state is GroupState.EMPTY
        assert gc.leave_group("nope", ["x"]) == [ErrorCode.UNKNOWN_MEMBER_ID]
        gc.shutdown()
    asyncio.run(scenario())


def test_join_errors(tmp_path):
    async def scenario():
        gc = make_coordinator(tmp_path, min_session_timeout_ms=1000)
        assert (await join(gc, group="")).error is ErrorCode.INVALID_GROUP_ID
        assert (await join(gc, session=10)).error is ErrorCode.INVALID_SESSION_TIMEOUT
        assert (await join(gc, member_id="unknown")).error is ErrorCode.UNKNOWN_MEMBER_ID
        m1, t1 = await join_new(gc)
        await t1
        other = await join(gc, ptype="connect")
        assert other.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        disjoint = await join(gc, protocols=[("sticky", b"")])
        assert disjoint.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        stale = await gc.sync_group("g", 5, m1, None, None, {})
        assert stale.error is ErrorCode.ILLEGAL_GENERATION
        gc.shutdown()
    asyncio.run(scenario())


def test_protocol_chosen_by_votes_among_common_protocols(tmp_path):
    async def scenario():
        gc = make_coordinator(tmp_path, initial_rebalance_delay_ms=50)
        a, ta = await join_new(gc, protocols=[("roundrobin", b"a"), ("range", b"a")])
        b, tb = await join_new(gc, protocols=[("roundrobin", b"b"), ("range", b"b")])
        c, tc = await join_new(gc, protocols=[("range", b"c"), ("roundrobin", b"c")])
        results = await asyncio.gather(ta, tb, tc)  # all three in one generation thanks to the initial delay
        assert {r.generation_id for r in results} == {1}
        assert {r.protocol_name for r in results} == {"roundrobin"}
        leader = next(r for r in results if r.members)
        assert dict((m, md) for m, _, md in leader.members) == {a: b"a", b: b"b", c: b"c"}
        gc.shutdown()
    asyncio.run(scenario())


def test_offset_commit_rules(tmp_path):
    async def scenario():
        gc = make_coordinator(tmp_path)
        tp = ("t", 0)
        # A consumer using assign() commits with generation -1 to a group nobody joined.
        assert gc.commit_offsets("solo", "", -1, {tp: CommittedOffset(5, 2, "m")}) == {tp: ErrorCode.NONE}
        assert gc.fetch_offsets("solo", [tp, ("t", 1)]) == {tp: CommittedOffset(5, 2, "m", gc.fetch_offsets(
            "solo", None)[tp].commit_timestamp_ms), ("t", 1): None}
        assert gc.commit_offsets("", "", -1, {tp: CommittedOffset(1)}) == {tp: ErrorCode.INVALID_GROUP_ID}
        assert gc.commit_offsets("solo", "", 3, {tp: CommittedOffset(1)}) == {tp: ErrorCode.UNKNOWN_MEMBER_ID}
        assert gc.commit_offsets("new", "m", 3, {tp: CommittedOffset(1)}) == {tp: ErrorCode.ILLEGAL_GENERATION}
        m1, t1 = await join_new(gc, group="g")
        await t1
        # Between JoinGroup and the leader's SyncGroup commits are refused.
        assert gc.commit_offsets("g", m1, 1, {tp: CommittedOffset(1)}) == {tp: ErrorCode.REBALANCE_IN_PROGRESS}
        await gc.sync_group("g", 1, m1, None, None, {})
        assert gc.commit_offsets("g", m1, 0, {tp: CommittedOffset(1)}) == {tp: ErrorCode.ILLEGAL_GENERATION}
        assert gc.commit_offsets("g", "x", 1, {tp: CommittedOffset(1)}) == {tp: ErrorCode.UNKNOWN_MEMBER_ID}
        result = gc.commit_offsets("g", m1, 1, {tp: CommittedOffset(9), ("missing", 0): CommittedOffset(1),
                                                ("t", 2): CommittedOffset(1, -1, "x" * 5000)})
        assert result == {tp: ErrorCode.NONE, ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                          ("t", 2): ErrorCode.OFFSET_METADATA_TOO_LARGE}
        assert gc.fetch_offsets("g", None)[tp].offset == 9
        gc.shutdown()
    asyncio.run(scenario())


def test_offset_store_survives_reopen_and_ignores_a_torn_tail(tmp_path):
    store = OffsetStore(tmp_path)
    store.open()
    store.commit("g", {("t", 0): CommittedOffset(10, 1, "a"), ("t", 1): CommittedOffset(20)})
    store.commit("g", {("t", 0): CommittedOffset(11, 2, None)})
    store.commit("h", {("u", 3): CommittedOffset(7)})
    # a crash in the middle of the next commit leaves half a line
    with open(tmp_path / FILE_NAME, "ab") as f:
        f.write(b'{"g":"g","t":"t","p":0,"o":99')
    again = OffsetStore(tmp_path)
    again.open()
    got = again.fetch("g")
    assert (got[("t", 0)].offset, got[("t", 0)].leader_epoch, got[("t", 0)].metadata) == (11, 2, None)
    assert got[("t", 1)].offset == 20 and again.fetch("h")[("u", 3)].offset == 7
    again.delete_topic("t")
    again.close()
    third = OffsetStore(tmp_path)
    third.open()
    assert third.fetch("g") == {} and third.fetch("h")[("u", 3)].offset == 7
    third.close()


def test_offset_store_refuses_a_corrupt_line_in_the_middle(tmp_path):
    (tmp_path / FILE_NAME).write_bytes(b'{"g":"g","t":"t","p":0,"o":1}\nnot json\n{"g":"g","t":"t","p":0,"o":2}\n')
    with pytest.raises(RuntimeError, match="line 2"):
        OffsetStore(tmp_path).open()
