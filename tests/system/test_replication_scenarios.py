"""The replication bugs of Kafka's history, reproduced on the own broker in each truncation mode.

Each scenario runs a real controller and real brokers (tests/support/local_cluster.py),
a real confluent-kafka producer and consumer whose operations are recorded
(tests/support/scenario_support.py), and faults applied to the processes: pause
(SIGSTOP), kill -9, power cut (kill -9 in `lazy` flush mode), controlled
shutdown (SIGTERM), and a cut of one broker's link to the controller. The
verdict always comes from the project's checkers on the recorded history and
the replicas' dumped logs (`check_run`), never from asserts on internals.

| scenario | broken in | fixed in |
|---|---|---|
| KIP-101 scenario 1 (KAFKA-1211): a follower truncates to a stale HW, then is elected | hw: lost-write | kip320 |
| KIP-101 scenario 2: power cut of both replicas, the one with less data returns first | hw: replica-divergence | kip320 |
| KAFKA-6361 (KIP-279): two leader changes in quick succession | kip101: replica-divergence | kip279, kip320 |
| KAFKA-6880 (KIP-320): a zombie follower, cut off from the controller, across two leader changes | kip279: replica-divergence | kip320 |

The writes that must stay uncommitted in the last two scenarios are sent by a
fresh producer (bootstrapped at the leader, not at a paused broker) with a 1 s
message timeout, and the scenario waits for that to pass and closes that
producer before leadership moves: no retry of them can reach a later leader.

Node roles follow the controller's deterministic assignment: the first topic's
partition 0 has replicas [1, 2, ...] and node 1 leads it; elections take the
first live ISR member in that order.
"""
from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest

from tests.support.local_cluster import LocalCluster
from tests.support.scenario_support import ScenarioRun, anomaly_names, dump_replica

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "fp"
SHORT_LIVED = {"message.timeout.ms": 1000, "request.timeout.ms": 800}
UNACKED_EXPIRY_S = 1.5


def replica_lines(cluster: LocalCluster, node: int) -> list[dict]:
    """A node's final.jsonl lines for fp-0 (dump-log reads a live data dir: os mode writes through)."""
    lines = [orjson.loads(raw) for raw in dump_replica(cluster.data_dir(node), f"n{node}")]
    return [line for line in lines if line.get("topic") == TOPIC and line.get("partition") == 0]


def replica_values(cluster: LocalCluster, node: int) -> list[str]:
    return [line["value"] for line in replica_lines(cluster, node) if line["kind"] == "replica"]


def wait_for_checkpointed_hw(cluster: LocalCluster, node: int, hw: int, timeout: float = 15) -> None:
    """Until the node's `replication-offset-checkpoint` (Kafka's format) says fp 0 is at `hw` or more."""
    path = cluster.data_dir(node) / "replication-offset-checkpoint"

    def reached() -> bool:
        lines = path.read_text().split("\n")[2:] if path.exists() else []
        return any(line.split()[:2] == [TOPIC, "0"] and int(line.split()[2]) >= hw for line in lines if line.strip())
    cluster.wait_until(reached, timeout, f"n{node}'s checkpointed high watermark to reach {hw}")


def wait_for_log_length(cluster: LocalCluster, node: int, length: int, timeout: float = 15) -> None:
    cluster.wait_until(lambda: len(replica_values(cluster, node)) >= length, timeout,
                       f"n{node}'s log of {TOPIC}-0 to hold {length} records")


def address(cluster: LocalCluster, node: int) -> str:
    return f"127.0.0.1:{cluster.port(node)}"


def all_ok(outcomes) -> bool:
    return all(o.type == "ok" for o in outcomes)


def kip101_scenario_1(base: Path, mode: str):
    """Acked writes; the leader is paused; the follower is killed and restarted (in `hw` it truncates
    to its stale HW checkpoint); the leader is killed; the follower is elected; the leader returns."""
    # HW checkpoints only at a clean shutdown: the follower's file is stale by construction.
    args = ("--hw-checkpoint-interval-ms", "600000")
    with LocalCluster(base / "cluster", brokers=2, truncation=mode, session_timeout_ms=2000, broker_args=args) as c:
        c.create_topic(TOPIC, partitions=1, replication_factor=2, configs={"min.insync.replicas": "1"})
        leader, follower = 1, 2
        assert c.leader(TOPIC, 0) == leader
        c.wait_for_isr(TOPIC, 0, isr_size=2)
        with ScenarioRun(base / "run", c.bootstrap, name=f"kip101-scenario-1-{mode}") as run:
            assert all_ok(run.send(run.next_values(5)))
            run.nemesis("restart", {"node": f"n{follower}"})
            c.stop(follower)  # a clean shutdown writes its HW checkpoint: 5
            c.start(follower)
            c.wait_for_isr(TOPIC, 0, isr_size=2)  # a controlled shutdown took it out; the leader takes it back
            assert all_ok(run.send(run.next_values(5)))  # acked: the follower has them; its checkpoint says 5
            run.nemesis("pause", {"node": f"n{leader}"})
            c.pause(leader)
            run.nemesis("kill", {"node": f"n{follower}"})
            c.kill(follower)
            c.start(follower)  # hw: truncates to 5 now; kip320: its question to the paused leader hangs
            time.sleep(1.0)
            run.nemesis("kill", {"node": f"n{leader}"})
            c.kill(leader)
            assert c.wait_for_leader(TOPIC, 0, not_in=(leader,), timeout=20) == follower
            run.send(run.next_values(3))
            run.nemesis("start", {"node": f"n{leader}"})
            c.start(leader)
            c.wait_for_isr(TOPIC, 0, isr_size=2, timeout=30)
            run.poll(polls=10)
            return run.finish(c)


def kip101_scenario_2(base: Path, mode: str):
    """Both replicas power-cut; the follower, which held the last record only in memory, returns first,
    is elected and takes a new write at that offset; the old leader returns."""
    leader_args = ("--flush", "lazy", "--flush-interval-ms", "100", "--hw-checkpoint-interval-ms", "100")
    follower_args = ("--flush", "lazy", "--flush-interval-ms", "600000", "--hw-checkpoint-interval-ms", "100")
    with LocalCluster(base / "cluster", brokers=2, truncation=mode, session_timeout_ms=2000,
                      node_args={1: leader_args, 2: follower_args}) as c:
        c.create_topic(TOPIC, partitions=1, replication_factor=2, configs={"min.insync.replicas": "1"})
        leader, follower = 1, 2
        assert c.leader(TOPIC, 0) == leader
        c.wait_for_isr(TOPIC, 0, isr_size=2)
        with ScenarioRun(base / "run", c.bootstrap, name=f"kip101-scenario-2-{mode}",
                         request_timeout_ms=1000, message_timeout_ms=3000) as run:
            assert all_ok(run.send(run.next_values(3)))
            wait_for_checkpointed_hw(c, follower, 3)
            c.stop(follower)  # the follower's three records reach its disk at this clean shutdown
            c.start(follower)
            c.wait_for_isr(TOPIC, 0, isr_size=2)
            run.nemesis("pause", {"node": f"n{follower}"})
            c.pause(follower)
            run.send_unacked(run.next_values(1))  # appended by the leader; its ack times out (1 s)
            time.sleep(1.5)  # the produce request timed out; the leader flushed the record
            run.nemesis("resume", {"node": f"n{follower}"})
            c.resume(follower)  # fetches it into memory only; the leader's HW (checkpointed) covers it
            time.sleep(0.6)
            run.settle(3)
            run.nemesis("power-cut", {"node": f"n{leader}"})
            c.kill(leader)
            assert c.wait_for_leader(TOPIC, 0, not_in=(leader,), timeout=20) == follower
            run.nemesis("power-cut", {"node": f"n{follower}"})
            c.kill(follower)  # loses the record it held in memory
            c.start(follower)
            assert c.wait_for_leader(TOPIC, 0, timeout=20) == follower
            assert all_ok(run.send(run.next_values(1)))  # at the offset the lost record had
            run.nemesis("start", {"node": f"n{leader}"})
            c.start(leader)
            c.wait_for_isr(TOPIC, 0, isr_size=2, timeout=30)
            assert all_ok(run.send(run.next_values(1)))
            run.poll(polls=10)
            return run.finish(c)


def kip279_fast_leader_changes(base: Path, mode: str):
    """KAFKA-6361: B leads for a moment and writes at an offset where C, paused meanwhile, still holds an
    uncommitted record of the old epoch; C is elected right after B and never truncated it; B returns
    and asks C for an epoch C never had."""
    a, b, cc = 1, 2, 3
    with LocalCluster(base / "cluster", brokers=3, truncation=mode, session_timeout_ms=8000) as c:
        c.create_topic(TOPIC, partitions=1, replication_factor=3, configs={"min.insync.replicas": "2"})
        assert c.leader(TOPIC, 0) == a
        c.wait_for_isr(TOPIC, 0, isr_size=3)
        with ScenarioRun(base / "run", c.bootstrap, name=f"kip279-{mode}", request_timeout_ms=3000,
                         message_timeout_ms=15000,
                         unacked_overrides=SHORT_LIVED) as run:
            assert all_ok(run.send(run.next_values(3)))
            run.nemesis("pause", {"node": f"n{b}"})
            c.pause(b)
            run.send_unacked(run.next_values(1), bootstrap=address(c, a))  # A and C have it; B is paused
            wait_for_log_length(c, cc, 4)
            time.sleep(UNACKED_EXPIRY_S)
            run.settle(5)
            run.nemesis("pause", {"node": f"n{cc}"})
            c.pause(cc)
            run.nemesis("stop", {"node": f"n{a}"})
            c.stop(a)  # controlled shutdown: B (paused, in the ISR) is elected
            c.wait_until(lambda: c.leader(TOPIC, 0) == b, 15, "B elected")
            run.nemesis("resume", {"node": f"n{b}"})
            c.resume(b)
            run.send_unacked(run.next_values(1), bootstrap=address(c, b))  # B writes it at 3; C is paused
            wait_for_log_length(c, b, 4)
            time.sleep(UNACKED_EXPIRY_S)
            run.settle(5)
            run.nemesis("stop", {"node": f"n{b}"})
            c.stop(b)  # C (paused, still in the ISR) is elected
            c.wait_until(lambda: c.leader(TOPIC, 0) == cc, 15, "C elected")
            run.nemesis("resume", {"node": f"n{cc}"})
            c.resume(cc)
            assert c.wait_for_leader(TOPIC, 0, timeout=20) == cc
            run.nemesis("start", {"node": f"n{b}"})
            c.start(b)
            c.start(a)
            c.wait_for_isr(TOPIC, 0, isr_size=3, timeout=30)
            run.settle(5)
            assert all_ok(run.send(run.next_values(2)))
            run.poll(polls=10)
            return run.finish(c)


def kafka_6880_zombie_follower(base: Path, mode: str):
    """B is cut off from the controller (fenced, out of the ISR) but keeps fetching from A; A writes an
    uncommitted record B copies; leadership moves to C (A truncates it) and back to A; B resumes fetching
    from its old offset without truncating."""
    a, b, cc = 1, 2, 3
    with LocalCluster(base / "cluster", brokers=3, truncation=mode, session_timeout_ms=3000) as c:
        c.create_topic(TOPIC, partitions=1, replication_factor=3, configs={"min.insync.replicas": "2"})
        assert c.leader(TOPIC, 0) == a
        c.wait_for_isr(TOPIC, 0, isr_size=3)
        with ScenarioRun(base / "run", c.bootstrap, name=f"kafka-6880-{mode}", request_timeout_ms=3000,
                         message_timeout_ms=15000,
                         unacked_overrides=SHORT_LIVED) as run:
            assert all_ok(run.send(run.next_values(3)))
            run.nemesis("partition", {"cut": f"n{b}-controller"}, type="invoke")
            c.cut_controller(b)
            c.wait_for_fenced(b, True, timeout=20)
            c.wait_for_isr(TOPIC, 0, members=(a, cc), timeout=20)
            run.nemesis("pause", {"node": f"n{cc}"})
            c.pause(cc)
            run.send_unacked(run.next_values(1), bootstrap=address(c, a))  # zombie B copies it; C is paused
            wait_for_log_length(c, b, 4)
            time.sleep(UNACKED_EXPIRY_S)
            run.settle(5)
            run.nemesis("stop", {"node": f"n{a}"})
            c.stop(a)  # leadership moves to C
            c.wait_until(lambda: c.leader(TOPIC, 0) == cc, 15, "C elected")
            run.nemesis("resume", {"node": f"n{cc}"})
            c.resume(cc)
            run.nemesis("start", {"node": f"n{a}"})
            c.start(a)  # follows C: truncates the uncommitted record, catches up, rejoins the ISR
            c.wait_for_isr(TOPIC, 0, members=(a, cc), timeout=30)
            run.settle(5)
            assert all_ok(run.send(run.next_values(2)))
            run.nemesis("stop", {"node": f"n{cc}"})
            c.stop(cc)  # and back to A
            assert c.wait_for_leader(TOPIC, 0, not_in=(cc,), timeout=20) == a
            run.nemesis("start", {"node": f"n{cc}"})
            c.start(cc)
            c.wait_for_isr(TOPIC, 0, members=(a, cc), timeout=30)
            assert all_ok(run.send(run.next_values(3)))
            time.sleep(1.5)  # kip279: B fetches A's new records onto its stale one; kip320: B is fenced
            run.nemesis("partition", {"cut": f"n{b}-controller"}, type="info")
            c.heal_controller(b)
            c.wait_for_fenced(b, False, timeout=20)
            c.wait_for_isr(TOPIC, 0, isr_size=3, timeout=30)
            assert all_ok(run.send(run.next_values(1)))
            run.poll(polls=10)
            return run.finish(c)


def assert_verdict(outcome, expected: set[str]) -> None:
    """`expected` anomalies found (the bug reproduced), or, when it is empty, a valid run."""
    found = anomaly_names(outcome)
    assert expected <= found if expected else outcome.valid is True, (found, outcome.results["anomaly_counts"])


@pytest.mark.parametrize("mode, expected", [("hw", {"lost-write"}), ("kip320", set())])
def test_kip101_scenario_1(tmp_path, mode, expected):
    assert_verdict(kip101_scenario_1(tmp_path, mode), expected)


@pytest.mark.parametrize("mode, expected", [("hw", {"replica-divergence"}), ("kip320", set())])
def test_kip101_scenario_2(tmp_path, mode, expected):
    assert_verdict(kip101_scenario_2(tmp_path, mode), expected)


@pytest.mark.parametrize("mode, expected", [("kip101", {"replica-divergence"}), ("kip279", set()),
                                            ("kip320", set())])
def test_kip279_fast_leader_changes(tmp_path, mode, expected):
    assert_verdict(kip279_fast_leader_changes(tmp_path, mode), expected)


@pytest.mark.parametrize("mode, expected", [("kip279", {"replica-divergence"}), ("kip320", set())])
def test_kafka_6880_zombie_follower(tmp_path, mode, expected):
    assert_verdict(kafka_6880_zombie_follower(tmp_path, mode), expected)
