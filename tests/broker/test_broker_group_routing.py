"""Unit tests of group routing: every broker names the same coordinator for a group, groups
spread over the brokers, and a broker refuses a group it does not coordinate with
NOT_COORDINATOR (the client then asks FindCoordinator again), serving the one it does."""
from __future__ import annotations

import asyncio

from kafka.protocol.consumer.group import HeartbeatRequest, OffsetFetchRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from fencepost.broker.server.apis.base import RequestContext
from fencepost.broker.server.apis.group_offsets import OffsetFetchApi
from fencepost.broker.server.apis.groups import FindCoordinatorApi, HeartbeatApi
from fencepost.broker.server.codec import RequestHeader
from fencepost.broker.server.errors import ErrorCode
from fencepost.broker.server.group_coordinator import GroupCoordinator
from fencepost.broker.server.group_routing import GroupRouting
from fencepost.broker.server.metadata_cache import BrokerEndpoint, MetadataCache
from fencepost.broker.server.network import ClientConnection
from fencepost.broker.server.offset_store import OffsetStore

GROUPS = [f"group-{i}" for i in range(60)]


def cache(*ids: int) -> MetadataCache:
    metadata = MetadataCache("fencepost", controller_id=0)
    for node in ids:
        metadata.set_broker(BrokerEndpoint(node, f"10.0.0.{node}", 9092))
    return metadata


def ctx(api_key: int, version: int) -> RequestContext:
    return RequestContext(RequestHeader(api_key, version, 1, "t"), ClientConnection(1, "127.0.0.1:1"))


def test_every_broker_names_the_same_coordinator_and_groups_spread_over_the_brokers():
    views = [GroupRouting(cache(1, 2, 3), node) for node in (1, 2, 3)]
    chosen = {g: {v.coordinator(g).node_id for v in views} for g in GROUPS}
    assert all(len(nodes) == 1 for nodes in chosen.values())
    assert {n for nodes in chosen.values() for n in nodes} == {1, 2, 3}
    for g in GROUPS:
        assert [v.coordinates(g) for v in views].count(True) == 1


def test_a_fenced_coordinator_hands_its_groups_to_the_brokers_left_and_none_known_means_none():
    three, two = GroupRouting(cache(1, 2, 3), 1), GroupRouting(cache(1, 3), 1)
    moved = [g for g in GROUPS if three.coordinator(g).node_id == 2]
    assert moved and all(two.coordinator(g).node_id in (1, 3) for g in moved)
    assert GroupRouting(cache(), 1).coordinator("g") is None
    assert GroupRouting(cache(), 1).coordinates("g") is False


def test_find_coordinator_answers_the_rule_on_every_version(tmp_path):
    routing = GroupRouting(cache(1, 2, 3), 2)
    api = FindCoordinatorApi(routing)
    for g in GROUPS[:5]:
        want = routing.coordinator(g)
        old = asyncio.run(api.handle(ctx(10, 3), FindCoordinatorRequest(version=3, key=g, key_type=0)))
        assert (old.error_code, old.node_id, old.host, old.port) == (0, want.node_id, want.host, want.port)
        new = asyncio.run(api.handle(ctx(10, 4), FindCoordinatorRequest(version=4, key_type=0, coordinator_keys=[g])))
        assert [(c.key, c.node_id) for c in new.coordinators] == [(g, want.node_id)]
    none = asyncio.run(FindCoordinatorApi(GroupRouting(cache(), 2)).handle(
        ctx(10, 3), FindCoordinatorRequest(version=3, key="g", key_type=0)))
    assert none.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_a_broker_refuses_a_group_it_does_not_coordinate_and_serves_its_own(tmp_path):
    metadata = cache(1, 2, 3)
    theirs = next(g for g in GROUPS if GroupRouting(metadata, 1).coordinator(g).node_id != 1)
    mine = next(g for g in GROUPS if GroupRouting(metadata, 1).coordinator(g).node_id == 1)
    store = OffsetStore(tmp_path)
    store.open()
    groups, routing = GroupCoordinator(store), GroupRouting(metadata, 1)
    heartbeat = HeartbeatApi(groups, routing)
    refused = asyncio.run(heartbeat.handle(ctx(12, 3), HeartbeatRequest(
        version=3, group_id=theirs, generation_id=1, member_id="m", group_instance_id=None)))
    assert refused.error_code == ErrorCode.NOT_COORDINATOR
    served = asyncio.run(heartbeat.handle(ctx(12, 3), HeartbeatRequest(
        version=3, group_id=mine, generation_id=1, member_id="m", group_instance_id=None)))
    assert served.error_code == ErrorCode.UNKNOWN_MEMBER_ID  # served: the group has no such member
    fetch = OffsetFetchApi(groups, routing)
    topics = [OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0])]
    answer = asyncio.run(fetch.handle(ctx(9, 5), OffsetFetchRequest(version=5, group_id=theirs, topics=topics)))
    assert answer.error_code == ErrorCode.NOT_COORDINATOR
    assert [p.error_code for t in answer.topics for p in t.partitions] == [ErrorCode.NOT_COORDINATOR]


def test_a_null_group_id_is_an_invalid_group_not_a_crash(tmp_path):
    # Found by the 20,000-frame fuzz (tests/reliability/test_broker_fuzz.py): FindCoordinator v4
    # with a null coordinator key made the handler raise (crc32 of None) instead of answering.
    routing = GroupRouting(cache(1, 2, 3), 2)
    api = FindCoordinatorApi(routing)
    new = asyncio.run(api.handle(ctx(10, 4), FindCoordinatorRequest(version=4, key_type=0,
                                                                     coordinator_keys=[None, "g"])))
    assert [c.error_code for c in new.coordinators] == [ErrorCode.INVALID_GROUP_ID, ErrorCode.NONE]
    old = asyncio.run(api.handle(ctx(10, 3), FindCoordinatorRequest(version=3, key=None, key_type=0)))
    assert old.error_code == ErrorCode.INVALID_GROUP_ID
    store = OffsetStore(tmp_path)
    store.open()
    heartbeat = HeartbeatApi(GroupCoordinator(store), routing)
    answer = asyncio.run(heartbeat.handle(ctx(12, 3), HeartbeatRequest(
        version=3, group_id=None, generation_id=1, member_id="m", group_instance_id=None)))
    assert answer.error_code == ErrorCode.INVALID_GROUP_ID
