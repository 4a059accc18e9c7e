"""LocalCluster with real processes: a controller and three brokers start and
register, a topic with RF 3 gets a leader and a full ISR, a broker is killed and
restarted on its port and data dir, paused and resumed, cut off from the
controller (it is fenced, yet still serves clients) and healed, the controller
is killed and restarted; a broker that dies on start is named with its log;
close() stops every process cleanly, paused ones too. And a ScenarioRun
recorded on the cluster through a leader kill and a paused follower checks valid."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.support.local_cluster import ClusterError, LocalCluster, broker_partition_view
from tests.support.scenario_support import ScenarioRun, anomaly_names

pytestmark = pytest.mark.integration

# A short session so that fencing (a session expiring) takes about a second.
SESSION_MS = 1500


def process_state(pid: int) -> str:
    """The state letter of /proc/<pid>/stat: R, S, T (stopped), Z..."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def test_a_cluster_starts_and_a_replicated_topic_gets_a_leader_and_a_full_isr(tmp_path):
    with LocalCluster(tmp_path, brokers=3) as cluster:
        snap = cluster.describe()
        assert sorted(snap.brokers) == [1, 2, 3]
        assert all(not b.fenced for b in snap.brokers.values())
        assert [f"127.0.0.1:{snap.brokers[n].port}" for n in (1, 2, 3)] == cluster.bootstrap.split(",")
        assert len({cluster.pid(n) for n in cluster.node_ids}) == 3

        topic = cluster.create_topic("fp", partitions=3, replication_factor=3,
                                     configs={"min.insync.replicas": "2"})
        assert topic.configs["min.insync.replicas"] == "2"
        for p, state in topic.partitions.items():
            assert sorted(state.replicas) == [1, 2, 3]
            assert sorted(state.isr) == [1, 2, 3]
            assert state.leader in (1, 2, 3) and cluster.leader("fp", p) == state.leader
        # create_topic waited until every broker answers Metadata with the controller's leaders
        for node in cluster.node_ids:
            view = broker_partition_view(cluster.port(node), "fp")
            assert view == {p: (s.leader, s.leader_epoch) for p, s in topic.partitions.items()}
        assert cluster.data_dir(2) == tmp_path / "n2" and (tmp_path / "n2" / "fp-0").is_dir()
        assert "broker 2 listening on" in cluster.log_text(2)
        assert "controller listening on" in cluster.controller_log_text()
    assert [cluster.exit_status(n) for n in cluster.node_ids] == [0, 0, 0]
    assert cluster.controller.proc.returncode == 0


def test_a_duplicate_topic_is_refused_with_the_controllers_reason(tmp_path):
    with LocalCluster(tmp_path, brokers=1) as cluster:
        cluster.create_topic("t", replication_factor=1)
        with pytest.raises(ClusterError, match="TOPIC_ALREADY_EXISTS"):
            cluster.create_topic("t", replication_factor=1)


@pytest.mark.slow
def test_a_killed_leader_is_replaced_and_comes_back_on_its_port_into_the_isr(tmp_path):
    with LocalCluster(tmp_path, session_timeout_ms=SESSION_MS) as cluster:
        cluster.create_topic("fp", replication_factor=3)
        old = cluster.wait_for_leader("fp", 0)
        old_pid, old_port = cluster.pid(old), cluster.port(old)
        cluster.kill(old)
        assert cluster.exit_status(old) == -9
        new = cluster.wait_for_leader("fp", 0, not_in=(old,))
        assert new != old
        cluster.wait_for_fenced(old, True)
        assert old not in cluster.wait_for_isr("fp", 0, isr_size=2).isr

        cluster.start(old)
        assert cluster.pid(old) != old_pid and cluster.alive(old)
        cluster.wait_for_fenced(old, False)
        assert cluster.describe().brokers[old].port == old_port
        assert sorted(cluster.wait_for_isr("fp", 0).isr) == [1, 2, 3]


@pytest.mark.slow
def test_a_paused_broker_is_fenced_and_returns_when_resumed(tmp_path):
    with LocalCluster(tmp_path, session_timeout_ms=SESSION_MS) as cluster:
        cluster.create_topic("fp", replication_factor=3)
        follower = next(n for n in cluster.node_ids if n != cluster.leader("fp", 0))
        cluster.pause(follower)
        assert process_state(cluster.pid(follower)) == "T"
        cluster.wait_for_fenced(follower, True)
        assert follower not in cluster.wait_for_isr("fp", 0, isr_size=2).isr
        cluster.resume(follower)
        assert process_state(cluster.pid(follower)) != "T"
        cluster.wait_for_fenced(follower, False)
        assert sorted(cluster.wait_for_isr("fp", 0).isr) == [1, 2, 3]


@pytest.mark.slow
def test_a_cut_controller_link_fences_the_broker_which_still_serves_clients_until_healed(tmp_path):
    with LocalCluster(tmp_path, session_timeout_ms=SESSION_MS) as cluster:
        cluster.create_topic("fp", replication_factor=3)
        node = 2
        cluster.cut_controller(node)
        assert cluster.proxy(node).is_cut and not cluster.proxy(1).is_cut
        cluster.wait_for_fenced(node, True)
        assert all(not cluster.describe().brokers[n].fenced for n in (1, 3))
        assert cluster.alive(node)
        assert broker_partition_view(cluster.port(node), "fp") is not None  # clients still reach it
        cluster.heal_controller(node)
        cluster.wait_for_fenced(node, False)
        assert sorted(cluster.wait_for_isr("fp", 0).isr) == [1, 2, 3]


@pytest.mark.slow
def test_the_controller_restarts_on_its_port_with_its_state_and_the_brokers_rejoin(tmp_path):
    with LocalCluster(tmp_path, session_timeout_ms=SESSION_MS) as cluster:
        topic = cluster.create_topic("fp", replication_factor=3)
        cluster.kill_controller()
        assert cluster.try_describe() is None
        cluster.restart_controller()
        for node in cluster.node_ids:
            cluster.wait_for_fenced(node, False)
        after = cluster.describe().topics["fp"]
        assert after.topic_id == topic.topic_id
        assert sorted(after.partitions[0].replicas) == [1, 2, 3]
        cluster.wait_for_leader("fp", 0)


def test_a_broker_that_dies_on_start_is_named_with_its_log_and_nothing_is_left_running(tmp_path):
    cluster = LocalCluster(tmp_path, brokers=2, node_args={2: ("--no-such-flag",)})
    with pytest.raises(ClusterError) as caught:
        cluster.__enter__()
    message = str(caught.value)
    assert "n2 exited with status 2 on start" in message
    assert "--no-such-flag" in message  # the tail of n2.log: the broker's own complaint
    assert not cluster.alive(1) and not cluster.controller.alive()


def test_close_resumes_a_paused_broker_and_stops_everything_cleanly(tmp_path):
    with LocalCluster(tmp_path, brokers=2) as cluster:
        cluster.pause(2)
        assert cluster.paused(2)
    assert [cluster.exit_status(n) for n in cluster.node_ids] == [0, 0]
    assert cluster.controller.proc.returncode == 0
    assert all(not cluster.proxy(n)._thread.is_alive() for n in cluster.node_ids)


def test_bad_arguments_are_refused_before_anything_starts(tmp_path):
    with pytest.raises(ValueError, match=r"node_args names nodes \[4\]"):
        LocalCluster(tmp_path, brokers=3, node_args={4: ()})
    with pytest.raises(ValueError, match="node 7 is not in this cluster"):
        LocalCluster(tmp_path, brokers=3).data_dir(7)


@pytest.mark.slow
def test_a_run_recorded_through_a_leader_kill_and_a_paused_follower_checks_valid(tmp_path):
    with LocalCluster(tmp_path / "cluster", session_timeout_ms=SESSION_MS) as cluster:
        cluster.create_topic("fp", partitions=2, replication_factor=3, configs={"min.insync.replicas": "2"})
        with ScenarioRun(tmp_path / "run", cluster.bootstrap, name="leader-kill") as run:
            first = run.send(run.next_values(20), partition=0)
            assert [(o.type, o.offset) for o in first] == [("ok", i) for i in range(20)]
            leader = cluster.leader("fp", 0)
            run.nemesis("kill", {"nodes": [f"n{leader}"]}, type="invoke")
            cluster.kill(leader)
            run.nemesis("kill", {"nodes": [f"n{leader}"]}, type="info")
            cluster.wait_for_leader("fp", 0, not_in=(leader,))
            second = run.send(run.next_values(20), partition=0)
            cluster.start(leader)
            cluster.wait_for_isr("fp", 0)
            follower = next(n for n in cluster.node_ids if n != cluster.leader("fp", 1))
            cluster.pause(follower)
            run.send_unacked(run.next_values(3), partition=1)
            cluster.resume(follower)
            settled = run.settle()
            assert [o.type for o in settled] == ["ok"] * 3
            assert [o.offset for o in settled] == [0, 1, 2]
            run.poll(partition=0, polls=5)
            outcome = run.finish(cluster)
    assert outcome.valid is True, outcome.results["anomaly_counts"]
    assert not anomaly_names(outcome) & {"lost-write", "inconsistent-offsets", "replica-divergence"}
    final = [orjson.loads(line) for line in (tmp_path / "run" / "final.jsonl").read_bytes().splitlines()]
    read_p0 = [line["value"] for line in final if line["kind"] == "read" and line["partition"] == 0]
    acked = [o.value for o in first + second if o.type == "ok"]
    assert set(acked) <= set(read_p0) and read_p0[:20] == [o.value for o in first]
    assert {line["node"] for line in final if line["kind"] == "replica-state"} == {"n1", "n2", "n3"}
    assert [line["complete"] for line in final if line["kind"] == "read-state"] == [True, True]
    test = orjson.loads((tmp_path / "run" / "test.json").read_bytes())
    assert test["truncation"] == "kip320" and test["producer"] == {"idempotent": False}
    assert [cluster.exit_status(n) for n in cluster.node_ids] == [0, 0, 0]  # finish stopped them cleanly
