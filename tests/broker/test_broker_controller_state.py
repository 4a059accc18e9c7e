"""The controller's state machine (broker/controller/state.py) and its rules, without processes or sockets."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fencepost.broker.common.controller_protocol import PartitionState, Snapshot
from fencepost.broker.controller.changes import describe_changes
from fencepost.broker.controller.election import assign_replicas
from fencepost.broker.controller.state import ControllerState

TIMEOUT_MS = 6000
TIMEOUT_S = TIMEOUT_MS / 1000


def cluster(nodes: int = 3, now: float = 0.0) -> ControllerState:
    s = ControllerState(TIMEOUT_MS)
    for n in range(1, nodes + 1):
        response, changed = s.register(n, "127.0.0.1", 9000 + n, "inc-a", now)
        assert changed and response["error"] is None
    return s


def create(s: ControllerState, name: str = "fp", partitions: int = 3, rf: int = 3, configs=None) -> None:
    response, changed = s.create_topic(name, partitions, rf, configs or {})
    assert changed and response["error"] is None, response


def part(s: ControllerState, p: int = 0, topic: str = "fp") -> PartitionState:
    return s.topics[topic].partitions[p]


def epoch(s: ControllerState, node: int) -> int:
    return s.brokers[node].broker_epoch


def alter(s: ControllerState, node: int, isr: list[int], p: int = 0, topic: str = "fp", **override):
    cur = s.topics[topic].partitions[p] if topic in s.topics and p in s.topics[topic].partitions else None
    args = dict(node_id=node, broker_epoch=epoch(s, node) if node in s.brokers else 0, topic=topic, partition=p,
                leader_epoch=cur.leader_epoch if cur else 0, partition_epoch=cur.partition_epoch if cur else 0,
                isr=isr)
    args.update(override)
    return s.alter_partition(**args)


def fence_by_expiry(s: ControllerState, *nodes: int, now: float) -> None:
    """Every other unfenced broker heartbeats at `now`; `nodes` are silent and expire just after `now`."""
    for n, b in s.brokers.items():
        if n not in nodes and not b.fenced:
            assert s.heartbeat(n, b.broker_epoch, now)[0]["error"] is None
    response, changed = s.expire(now + 0.001)
    assert changed and sorted(response["fenced"]) == sorted(nodes)


# -- registration --------------------------------------------------------------

def test_register_gives_growing_broker_epochs_and_the_session_timeout():
    s = ControllerState(TIMEOUT_MS)
    epochs = []
    for n in (5, 2, 9):
        response, changed = s.register(n, "h", 1000 + n, "x", 0.0)
        assert changed and response == {"error": None, "message": None, "broker_epoch": response["broker_epoch"],
                                        "session_timeout_ms": TIMEOUT_MS}
        epochs.append(response["broker_epoch"])
    assert epochs == sorted(epochs) and len(set(epochs)) == 3
    assert s.version == 3
    assert all(not b.fenced for b in s.brokers.values())
    assert s.snapshot().brokers[2].port == 1002


@pytest.mark.parametrize("node, host, port", [(-1, "h", 1), (1, "", 1), (1, "h", 0), (1, "h", 70000)])
def test_register_refuses_impossible_endpoints(node, host, port):
    s = ControllerState(TIMEOUT_MS)
    response, changed = s.register(node, host, port, "x", 0.0)
    assert response["error"] == "INVALID_REQUEST" and not changed and s.version == 0 and not s.brokers


def test_restart_of_a_leader_bumps_its_leader_epoch_and_keeps_isr_places():
    s = cluster()
    create(s)
    before = {p: part(s, p) for p in range(3)}
    old_epoch = epoch(s, 1)
    response, changed = s.register(1, "127.0.0.1", 9101, "inc-b", 1.0)
    assert changed and response["broker_epoch"] > old_epoch
    p0 = part(s, 0)  # led by 1
    assert (p0.leader, p0.leader_epoch, p0.partition_epoch, p0.isr) == (1, 1, 1, (1, 2, 3))
    for p in (1, 2):  # 1 follows there: nothing changes
        assert part(s, p) == before[p]
    assert s.snapshot().brokers[1].port == 9101


def test_reconnect_with_the_same_incarnation_keeps_the_leader_epoch():
    s = cluster()
    create(s)
    response, _ = s.register(1, "127.0.0.1", 9001, "inc-a", 1.0)
    assert response["broker_epoch"] > 3 and part(s, 0).leader_epoch == 0


def test_same_incarnation_after_expiry_is_unfenced_but_not_put_back_into_isrs():
    s = cluster()
    create(s)
    fence_by_expiry(s, 2, now=TIMEOUT_S)
    assert all(2 not in part(s, p).isr for p in range(3))
    response, changed = s.register(2, "127.0.0.1", 9002, "inc-a", 10.0)
    assert changed and not s.brokers[2].fenced
    assert all(2 not in part(s, p).isr and part(s, p).leader != 2 for p in range(3))
    assert alter(s, part(s, 1).leader, [3, 1, 2], p=1)[0]["error"] is None  # the leader adds it back
    assert part(s, 1).isr == (3, 1, 2)


def test_register_elects_offline_partitions_from_the_isr_only():
    s = cluster()
    create(s, partitions=1)
    fence_by_expiry(s, 2, 3, now=TIMEOUT_S)
    fence_by_expiry(s, 1, now=2 * TIMEOUT_S)
    p = part(s)
    assert (p.leader, p.isr) == (-1, (1,))
    s.register(3, "127.0.0.1", 9003, "inc-a", 20.0)
    assert part(s).leader == -1  # 3 is not in the ISR, and unclean election is off
    s.register(1, "127.0.0.1", 9001, "inc-b", 20.0)
    p = part(s)
    assert (p.leader, p.isr, p.leader_epoch) == (1, (1,), 2)  # epoch 0 leader 1, 1 offline, 2 leader 1 again


# -- heartbeats and expiry -----------------------------------------------------

def test_heartbeat_refreshes_the_session_and_refuses_stale_epochs():
    s = cluster()
    assert s.heartbeat(1, epoch(s, 1), TIMEOUT_S) == ({"error": None, "message": None}, False)
    for node, broker_epoch in [(7, 1), (1, epoch(s, 1) + 1), (1, epoch(s, 1) - 1)]:
        response, changed = s.heartbeat(node, broker_epoch, 1.0)
        assert response["error"] == "STALE_BROKER_EPOCH" and not changed
    assert s.expire(TIMEOUT_S + 0.5)[0]["fenced"] == [2, 3]  # 1 heartbeated at TIMEOUT_S
    response, _ = s.heartbeat(2, epoch(s, 2), TIMEOUT_S + 1)
    assert response["error"] == "STALE_BROKER_EPOCH" and "fenced" in response["message"]


def test_expiry_waits_for_the_whole_timeout():
    s = cluster()
    assert s.expire(TIMEOUT_S) == ({"error": None, "message": None, "fenced": []}, False)
    assert s.version == 3
    assert s.expire(TIMEOUT_S + 0.01)[1] and s.version == 4
    assert all(b.fenced for b in s.brokers.values())


def test_expiry_shrinks_isrs_and_moves_leadership_in_replica_order():
    s = cluster()
    create(s)  # p0 (1,2,3), p1 (2,3,1), p2 (3,1,2)
    fence_by_expiry(s, 2, now=TIMEOUT_S)
    p0, p1, p2 = part(s, 0), part(s, 1), part(s, 2)
    assert (p0.leader, p0.leader_epoch, p0.partition_epoch, p0.isr) == (1, 0, 1, (1, 3))
    assert (p1.leader, p1.leader_epoch, p1.partition_epoch, p1.isr) == (3, 1, 1, (3, 1))
    assert (p2.leader, p2.leader_epoch, p2.partition_epoch, p2.isr) == (3, 0, 1, (3, 1))
    assert s.snapshot().brokers[2].fenced


def test_brokers_expiring_together_do_not_pass_leadership_between_them():
    s = cluster()
    create(s, partitions=1)  # (1,2,3)
    fence_by_expiry(s, 1, 2, now=TIMEOUT_S)
    p = part(s)
    assert (p.leader, p.leader_epoch, p.partition_epoch, p.isr) == (3, 1, 1, (3,))


def test_the_isr_is_never_emptied():
    s = cluster()
    create(s, partitions=1)
    for i, node in enumerate((1, 2, 3)):
        fence_by_expiry(s, node, now=(i + 1) * TIMEOUT_S)
    p = part(s)
    assert p.isr == (3,) and p.leader == -1 and p.leader_epoch == 3


@pytest.mark.parametrize("unclean, leader, isr", [("true", 1, (1,)), ("false", -1, (2,)), (None, -1, (2,))])
def test_unclean_election_only_when_the_topic_allows_it(unclean, leader, isr):
    s = cluster()
    create(s, partitions=2, configs={} if unclean is None else {"unclean.leader.election.enable": unclean})
    assert alter(s, 2, [2], p=1)[0]["error"] is None  # p1 = (2,3,1), ISR shrunk to its leader
    fence_by_expiry(s, 2, now=TIMEOUT_S)
    p1 = part(s, 1)
    assert (p1.leader, p1.isr) == ((3, (3,)) if unclean == "true" else (leader, isr))
    assert p1.leader_epoch == 1


def test_shutdown_fences_at_once_and_moves_leaderships():
    s = cluster()
    create(s)
    assert s.shutdown(1, epoch(s, 1) + 5)[0]["error"] == "STALE_BROKER_EPOCH"
    response, changed = s.shutdown(1, epoch(s, 1))
    assert changed and response["error"] is None and s.brokers[1].fenced
    assert part(s, 0).leader == 2 and all(1 not in part(s, p).isr for p in range(3))
    version = s.version
    assert s.shutdown(1, epoch(s, 1)) == ({"error": None, "message": None}, False) and s.version == version


# -- alter_partition -------------------------------------------------------------

def test_alter_partition_sets_the_isr_and_bumps_the_partition_epoch():
    s = cluster()
    create(s)
    response, changed = alter(s, 1, [1, 3])
    assert changed and response["partition"] == {"partition": 0, "leader": 1, "leader_epoch": 0,
                                                 "partition_epoch": 1, "replicas": [1, 2, 3], "isr": [1, 3]}
    assert part(s).isr == (1, 3)


def test_stale_partition_epoch_is_rejected():
    s = cluster()
    create(s)
    assert alter(s, 1, [1, 3])[0]["error"] is None
    response, changed = alter(s, 1, [1, 2, 3], partition_epoch=0)
    assert response["error"] == "INVALID_UPDATE_VERSION" and not changed and part(s).isr == (1, 3)


@pytest.mark.parametrize("node, override, expected", [
    (1, {"broker_epoch": 99, "topic": "nope"}, "STALE_BROKER_EPOCH"),
    (1, {"topic": "nope", "leader_epoch": 5}, "UNKNOWN_TOPIC_OR_PARTITION"),
    (1, {"partition": 3}, "UNKNOWN_TOPIC_OR_PARTITION"),
    (2, {"leader_epoch": 5, "isr": [7]}, "NOT_LEADER_OR_FOLLOWER"),
    (1, {"leader_epoch": 1, "partition_epoch": 5}, "FENCED_LEADER_EPOCH"),
    (1, {"partition_epoch": 1, "isr": [1, 1]}, "INVALID_UPDATE_VERSION"),
    (1, {"isr": [1, 1]}, "INVALID_REQUEST"),
    (1, {"isr": [1, 4]}, "INVALID_REQUEST"),
    (1, {"isr": [2, 3]}, "INVALID_REQUEST"),
])
def test_alter_partition_checks_in_order(node, override, expected):
    s = cluster()
    s.register(4, "127.0.0.1", 9004, "inc-a", 0.0)
    create(s, rf=3, partitions=1)  # replicas (1,2,3), 4 is not a replica
    isr = override.pop("isr", [1, 2])
    response, changed = alter(s, node, isr, **override)
    assert response["error"] == expected and not changed, response
    assert part(s).partition_epoch == 0


def test_fenced_broker_cannot_be_added_to_the_isr():
    s = cluster()
    create(s, partitions=1)
    fence_by_expiry(s, 3, now=TIMEOUT_S)
    assert part(s).isr == (1, 2)
    response, changed = alter(s, 1, [1, 2, 3])
    assert response["error"] == "INELIGIBLE_REPLICA" and not changed
    s.register(3, "127.0.0.1", 9003, "inc-a", 10.0)
    assert alter(s, 1, [1, 2, 3])[0]["error"] is None and part(s).isr == (1, 2, 3)


def test_a_fenced_leader_cannot_alter():
    s = cluster()
    create(s, partitions=1)
    old = epoch(s, 1)
    fence_by_expiry(s, 1, now=TIMEOUT_S)
    assert alter(s, 1, [1, 2], broker_epoch=old, leader_epoch=0)[0]["error"] == "STALE_BROKER_EPOCH"


# -- topics ------------------------------------------------------------------------

def test_assignment_is_round_robin_and_spreads_leaders():
    s = cluster()
    create(s, "a", partitions=3, rf=3)
    assert [part(s, p, "a").replicas for p in range(3)] == [(1, 2, 3), (2, 3, 1), (3, 1, 2)]
    create(s, "b", partitions=6, rf=2)  # second topic: starts one broker further
    b = [part(s, p, "b") for p in range(6)]
    assert [p.replicas for p in b] == [(2, 3), (3, 1), (1, 2), (2, 3), (3, 1), (1, 2)]
    assert [p.leader for p in b] == [2, 3, 1, 2, 3, 1]
    assert all(p.isr == p.replicas and p.leader_epoch == 0 and p.partition_epoch == 0 for p in b)


def test_assignment_uses_unfenced_brokers_only():
    s = cluster(4)
    fence_by_expiry(s, 2, now=TIMEOUT_S)
    create(s, partitions=3, rf=3)
    assert [part(s, p).replicas for p in range(3)] == [(1, 3, 4), (3, 4, 1), (4, 1, 3)]


def test_assign_replicas_refuses_too_few_brokers():
    with pytest.raises(ValueError, match="not within 1..2"):
        assign_replicas([1, 2], 1, 3, 0)


@pytest.mark.parametrize("name, partitions, rf, configs, error", [
    ("", 1, 1, {}, "INVALID_TOPIC_EXCEPTION"),
    ("a/b", 1, 1, {}, "INVALID_TOPIC_EXCEPTION"),
    ("taken", 1, 1, {}, "TOPIC_ALREADY_EXISTS"),
    ("t", 0, 1, {}, "INVALID_PARTITIONS"),
    ("t", 1, 0, {}, "INVALID_REPLICATION_FACTOR"),
    ("t", 1, 3, {}, "INVALID_REPLICATION_FACTOR"),  # 3 brokers, but one is fenced
    ("t", 1, 1, {"min.insync.replicas": "two"}, "INVALID_CONFIG"),
    ("t", 1, 1, {"unclean.leader.election.enable": "maybe"}, "INVALID_CONFIG"),
])
def test_create_topic_refusals_change_nothing(name, partitions, rf, configs, error):
    s = cluster()
    create(s, "taken", partitions=1, rf=1)
    fence_by_expiry(s, 3, now=TIMEOUT_S)
    version, topics = s.version, dict(s.topics)
    response, changed = s.create_topic(name, partitions, rf, configs)
    assert response["error"] == error and response["message"] and not changed
    assert s.version == version and s.topics == topics


def test_validate_only_answers_the_topic_but_creates_nothing():
    s = cluster()
    response, changed = s.create_topic("fp", 2, 2, {"retention.ms": "5", "cleanup.policy": None}, validate_only=True)
    assert not changed and "fp" not in s.topics and s.topics_created == 0
    assert response["topic"]["configs"] == {"retention.ms": "5"}
    assert [p["replicas"] for p in response["topic"]["partitions"]] == [[1, 2], [2, 3]]


def test_delete_topic():
    s = cluster()
    create(s)
    assert s.delete_topic("nope")[0]["error"] == "UNKNOWN_TOPIC_OR_PARTITION"
    response, changed = s.delete_topic("fp")
    assert changed and response["error"] is None and "fp" not in s.topics and "fp" not in s.snapshot().topics


# -- versions, snapshots, the durable form ------------------------------------------

def test_version_grows_with_every_change_and_only_then():
    s = cluster()
    assert s.version == 3
    create(s)
    assert s.version == 4
    s.heartbeat(1, epoch(s, 1), 1.0)
    s.describe()
    s.expire(1.0)
    alter(s, 2, [1])  # refused
    assert s.version == 4
    alter(s, 1, [1, 2])
    fence_by_expiry(s, 3, now=TIMEOUT_S)
    s.delete_topic("fp")
    assert s.version == 7


def test_snapshots_are_not_changed_by_later_changes():
    s = cluster()
    create(s)
    snap = s.snapshot()
    as_dict = snap.to_dict()
    fence_by_expiry(s, 1, now=TIMEOUT_S)
    s.delete_topic("fp")
    assert snap.to_dict() == as_dict and not snap.brokers[1].fenced
    assert Snapshot.from_dict(s.describe()[0]["snapshot"]) == s.snapshot()


def test_loaded_state_resumes_and_restarts_every_session_at_load_time():
    s = cluster()
    create(s)
    fence_by_expiry(s, 3, now=TIMEOUT_S)
    loaded = ControllerState.from_dict(s.to_dict(), TIMEOUT_MS, now=100.0)
    assert loaded.to_dict() == s.to_dict() and loaded.snapshot() == s.snapshot()
    assert loaded.heartbeat(3, epoch(s, 3), 100.0)[0]["error"] == "STALE_BROKER_EPOCH"
    assert not loaded.expire(100.0 + TIMEOUT_S)[1]  # a fresh session, though the last heartbeat was long ago
    assert loaded.expire(100.01 + TIMEOUT_S)[0]["fenced"] == [1, 2]
    response, _ = loaded.register(3, "127.0.0.1", 9003, "inc-b", 200.0)
    assert response["broker_epoch"] > max(b.broker_epoch for b in s.brokers.values())


def test_loading_refuses_another_format():
    with pytest.raises(ValueError, match="format"):
        ControllerState.from_dict({**cluster().to_dict(), "format": 99}, TIMEOUT_MS, 0.0)


def test_changes_name_the_partition_and_old_and_new_leader_epoch_and_isr():
    s = cluster()
    create(s, partitions=2)
    before = s.snapshot()
    fence_by_expiry(s, 2, now=TIMEOUT_S)
    lines = describe_changes(before, s.snapshot())
    assert "broker 2 fenced" in lines
    assert ("fp-1: leader 2 -> 3, leader epoch 0 -> 1, ISR [2, 3, 1] -> [3, 1], partition epoch 0 -> 1"
            in lines)
    assert "fp-0: ISR [1, 2, 3] -> [1, 3], partition epoch 0 -> 1, (leader 1)" in lines


# -- invariants over random operation sequences --------------------------------------

NODES = (1, 2, 3, 4)
operation = st.one_of(
    st.tuples(st.just("register"), st.sampled_from(NODES), st.sampled_from(["a", "b"])),
    st.tuples(st.just("heartbeat"), st.sampled_from(NODES)),
    st.tuples(st.just("tick"), st.floats(0, 2 * TIMEOUT_S)),
    st.tuples(st.just("shutdown"), st.sampled_from(NODES)),
    st.tuples(st.just("alter"), st.integers(0, 1), st.integers(0, 1), st.sets(st.sampled_from(NODES))),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(operation, max_size=40), st.booleans())
def test_invariants_hold_over_any_sequence(ops, unclean):
    s = cluster(4)
    create(s, "t", partitions=2, rf=3, configs={"unclean.leader.election.enable": str(unclean).lower()})
    now = 0.0
    for op in ops:
        before, version = s.snapshot(), s.version
        if op[0] == "register":
            _, changed = s.register(op[1], "h", 1, op[2], now)
        elif op[0] == "heartbeat":
            _, changed = s.heartbeat(op[1], epoch(s, op[1]), now)
        elif op[0] == "tick":
            now += op[1]
            _, changed = s.expire(now)
        elif op[0] == "shutdown":
            _, changed = s.shutdown(op[1], epoch(s, op[1]))
        else:
            p = part(s, op[1], "t")
            leader = p.leader if p.leader != -1 else 1
            isr = sorted(op[3] | {leader}) if op[2] else sorted(op[3])
            _, changed = alter(s, leader, isr, p=op[1], topic="t")
        assert s.version == version + changed
        unfenced = {n for n, b in s.brokers.items() if not b.fenced}
        for i, p in s.topics["t"].partitions.items():
            old = before.topics["t"].partitions[i]
            assert p.isr and set(p.isr) <= set(p.replicas) and len(set(p.isr)) == len(p.isr)
            if p.leader != -1:
                assert p.leader in p.isr and p.leader in unfenced
            else:
                assert not (set(p.isr if not unclean else p.replicas) & unfenced)
            assert p.leader_epoch >= old.leader_epoch and p.partition_epoch >= old.partition_epoch
            assert (p.partition_epoch > old.partition_epoch) == (p != old)
            assert (p.leader_epoch > old.leader_epoch) or p.leader == old.leader
    assert ControllerState.from_dict(s.to_dict(), TIMEOUT_MS, now).to_dict() == s.to_dict()
