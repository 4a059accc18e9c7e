"""The nemesis against a real own-system cluster on the process backend: pause, kill, power-cut
and leader-bounce have real effects (process states, pids, leadership), every action is
recorded (also through the harness's own Recorder), failures are recorded and the loop
goes on, seeds repeat, refusals come before anything runs, and heal leaves every node
running. One cluster serves the module; each test leaves it healed."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from fencepost.clusters.cluster import Cluster, ClusterSpec
from fencepost.clusters.errors import ClusterConfigError
from fencepost.clusters.hosts import process
from fencepost.clusters.lazyfs.mounts import lazy_mounts
from fencepost.clusters.systems import system_for
from fencepost.clusters.systems.base import TopicSpec
from fencepost.harness.rundir.history import HistoryWriter, Recorder, iter_history
from fencepost.nemesis import (
    HealGuard,
    MemoryRecorder,
    Nemesis,
    ScriptedSchedule,
    check_fault,
    heal_cluster,
    make_schedule,
    parse_fault,
    start_fault,
)
from fencepost.nemesis.context import LEADER_TARGET_WAIT_S
from tests.support.lazyfs_support import needs_fuse

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # a shared cluster and real faults: seconds per test

TOPIC = "fp"


def up(directory: Path, name: str, **system_options) -> Cluster:
    cluster = Cluster.up(ClusterSpec(name, backend="process", system_options=system_options), directory)
    try:
        cluster.create_topic(TopicSpec(TOPIC))
    except BaseException:
        cluster.down()
        raise
    return cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    made = up(tmp_path_factory.mktemp("nemesis-process"), "fp-nemesis-process-" + os.urandom(2).hex())
    try:
        yield made
    finally:
        made.down()


@pytest.fixture
def healthy(cluster: Cluster):
    """The shared cluster with every partition's ISR full; healed again after the test, also on failure."""
    cluster.recovery.wait_for_full_isr(TOPIC, 30)
    try:
        yield cluster
    finally:
        cluster.heal()


def pids(cluster: Cluster, node: str) -> set[int]:
    return {h.pid for h in cluster.processes[node].values()}


def scripted(*actions: str) -> ScriptedSchedule:
    return ScriptedSchedule.from_data([[0, action] for action in actions])


def fs(recorder: MemoryRecorder) -> list[tuple[str, str]]:
    return [(op["type"], op["f"]) for op in recorder.ops]


def all_running(cluster: Cluster) -> bool:
    return all(cluster.node_state(n) == "running" for n in cluster.nodes)


def test_kill_one_kills_a_broker_and_heal_starts_it_again(healthy):
    recorder = MemoryRecorder()
    nemesis = Nemesis(healthy, scripted("start kill:one"), recorder, seed=1)
    before = {n: pids(healthy, n) for n in healthy.nodes}
    assert nemesis.run().steps == 1
    (node,) = recorder.ops[1]["value"]["nodes"]
    assert node in healthy.broker_nodes
    assert healthy.node_state(node) == "down"
    assert all(healthy.node_state(n) == "running" for n in healthy.nodes if n != node)
    assert [n.spec for n in nemesis.active] and nemesis.active[0].nodes == [node]

    done = nemesis.heal()
    assert healthy.node_state(node) == "running" and pids(healthy, node).isdisjoint(before[node])
    assert done[0] == "stopped kill:one"
    assert fs(recorder) == [("invoke", "kill"), ("info", "kill"), ("invoke", "start"), ("info", "start"),
                            ("invoke", "heal"), ("info", "heal")]
    assert recorder.ops[0]["value"] == {"target": "one"}
    assert recorder.ops[1]["value"] == {"target": "one", "nodes": [node]}
    assert recorder.ops[3]["value"] == {"nodes": [node]}
    assert all("error" not in op for op in recorder.ops)


def test_pause_leader_freezes_the_partitions_leader_and_its_stop_resumes_it(healthy):
    leader = healthy.partition_view(TOPIC, 1).leader
    recorder = MemoryRecorder()
    nemesis = Nemesis(healthy, scripted("start pause:leader"), recorder, seed=2, partition=1)
    nemesis.run()
    assert recorder.ops[1]["value"] == {"target": "leader", "topic": TOPIC, "partition": 1, "leader": leader,
                                        "nodes": [leader]}
    assert healthy.node_state(leader) == "paused"
    assert all(healthy.hosts[leader].process_state(h) == "stopped" for h in healthy.processes[leader].values())
    nemesis.heal()
    assert healthy.node_state(leader) == "running"
    assert fs(recorder)[2:4] == [("invoke", "resume"), ("info", "resume")]


def test_kill_controller_and_a_fixed_schedule_composing_kill_and_pause(healthy):
    recorder = MemoryRecorder()
    nemesis = Nemesis(healthy, make_schedule("fixed", "kill:controller,pause:majority", 0.2), recorder, seed=3)
    controller_pids = pids(healthy, "controller")
    summary = nemesis.run(duration=1.5)
    assert summary.errors == [] and summary.steps >= 4
    starts = [op for op in recorder.ops if op["type"] == "info" and op["f"] in ("kill", "pause")]
    assert [op["f"] for op in starts][:2] == ["kill", "pause"]
    assert starts[0]["value"]["nodes"] == ["controller"] and len(starts[1]["value"]["nodes"]) == 2
    assert pids(healthy, "controller").isdisjoint(controller_pids)
    nemesis.heal()
    assert all_running(healthy)
    # every action is an invoke followed by its info; kill pairs with start, pause with resume
    pairs = list(zip(recorder.ops[0::2], recorder.ops[1::2]))
    assert all(a["type"] == "invoke" and b["type"] == "info" and a["f"] == b["f"] for a, b in pairs)
    order = [a["f"] for a, _ in pairs]
    assert order[:4] == ["kill", "start", "pause", "resume"] and order[-1] == "heal"


def test_the_same_seed_makes_the_same_decisions(healthy):
    actions = ("start pause:one", "stop", "start pause:majority", "stop", "start pause:one", "stop")

    def decisions(seed: int) -> list[list[str]]:
        recorder = MemoryRecorder()
        Nemesis(healthy, scripted(*actions), recorder, seed=seed).run()
        return [op["value"]["nodes"] for op in recorder.ops if op["type"] == "info" and op["f"] == "pause"]
    first = decisions(5)
    assert first == decisions(5)
    assert first != decisions(6)
    assert all_running(healthy)


def test_a_failed_action_is_recorded_with_its_error_and_the_loop_goes_on(healthy):
    recorder = MemoryRecorder()
    nemesis = Nemesis(healthy, scripted("start pause:leader", "start kill:one"), recorder, seed=4,
                      topic="no-such-topic", timeout=0.5)
    summary = nemesis.run()
    assert summary.steps == 2 and len(summary.errors) == 1
    assert "pause:leader" in summary.errors[0] and "no-such-topic" in summary.errors[0]
    failed = recorder.ops[1]
    assert failed["f"] == "pause" and failed["type"] == "info" and "no-such-topic" in failed["error"]
    killed = recorder.ops[3]
    assert killed["f"] == "kill" and "error" not in killed
    assert healthy.node_state(killed["value"]["nodes"][0]) == "down"
    assert [f.spec.name for f in nemesis.active] == ["kill"]  # the failed pause left nothing to undo
    nemesis.heal()
    assert all_running(healthy)


def test_a_leader_target_without_a_leader_hits_nothing_and_holds_up_nothing(healthy):
    # Every broker down, and the controller knows it: no partition has a leader. Waiting for
    # one (the timeout, 120 s here) would hold up every later step, as it once held a run's
    # whole nemesis with a majority killed.
    killer = Nemesis(healthy, scripted("start kill:all"), MemoryRecorder(), seed=7)
    killer.run()
    healthy.wait_for(lambda: healthy.partition_view(TOPIC, 0).leader is None, 30, "fp-0 without a leader")
    recorder = MemoryRecorder()
    nemesis = Nemesis(healthy, scripted("start pause:leader", "start kill:leader"), recorder,
                      seed=7, partition=0, timeout=120)
    started = time.monotonic()
    summary = nemesis.run()
    waited = time.monotonic() - started
    assert summary.errors == [] and summary.steps == 2
    skipped = {"target": "leader", "topic": TOPIC, "partition": 0, "leader": None,
               "skipped": f"{TOPIC}-0 had no leader within {LEADER_TARGET_WAIT_S:g}s"}
    infos = [op for op in recorder.ops if op["type"] == "info"]
    assert [op["f"] for op in infos] == ["pause", "kill"]
    assert all(op["value"] == {**skipped, "nodes": []} for op in infos)
    assert not any("error" in op for op in infos)
    assert nemesis.active == []  # they hit nothing: nothing to undo
    assert 2 * LEADER_TARGET_WAIT_S <= waited < 120
    killer.heal()
    assert all_running(healthy)


@pytest.mark.parametrize("faults", ["kill,partition", "partition:bridge", "zombie"])
def test_partitions_are_refused_up_front_on_the_process_backend(cluster, faults):
    recorder = MemoryRecorder()
    with pytest.raises(ClusterConfigError) as caught:
        Nemesis(cluster, make_schedule("random", faults), recorder)
    message = str(caught.value)
    assert "process backend cannot make partitions" in message and "--backend netns" in message
    assert recorder.ops == []


def test_power_cut_is_refused_on_a_cluster_off_the_lazy_filesystem(cluster):
    with pytest.raises(ClusterConfigError) as caught:
        start_fault(cluster, "power-cut", MemoryRecorder())
    assert "not started on the lazy filesystem" in str(caught.value) and "--flush lazy" in str(caught.value)
    assert all_running(cluster)


@pytest.mark.parametrize("fault, least", [("kill:minority", 3), ("pause:minority", 3), ("leader-bounce", 2)])
def test_targets_a_cluster_is_too_small_for_are_refused_naming_the_need(tmp_path, fault, least):
    spec = ClusterSpec("fp-nemesis-small", brokers=1, backend="process")
    system = system_for("own")
    hosts = process.provision(spec.name, system.node_names(1), tmp_path)  # hosts only: nothing runs
    small = Cluster(spec, tmp_path, hosts, system)
    with pytest.raises(ClusterConfigError) as caught:
        check_fault(parse_fault(fault), small)
    assert f"needs at least {least} brokers" in str(caught.value) and "has 1" in str(caught.value)
    check_fault(parse_fault("kill:controller"), small)


def test_ops_go_through_the_harness_recorder_into_the_history(healthy, tmp_path):
    path = tmp_path / "history.jsonl"
    with HistoryWriter(path) as writer:
        recorder = Recorder(writer)
        fault = start_fault(healthy, "pause", recorder, target="minority", seed=9)
        assert healthy.node_state(fault.nodes[0]) == "paused"
        heal_cluster(healthy, recorder)
    ops = list(iter_history(path))
    assert [(op.process, op.type, op.f) for op in ops] == [
        ("nemesis", "invoke", "pause"), ("nemesis", "info", "pause"),
        ("nemesis", "invoke", "heal"), ("nemesis", "info", "heal")]
    assert ops[1].value == {"target": "minority", "nodes": fault.nodes}
    assert ops[3].value == {"done": [f"resumed {fault.nodes[0]}"]}
    assert all_running(healthy)


def test_the_heal_guard_heals_on_sigint_and_then_raises_keyboard_interrupt(healthy):
    recorder = MemoryRecorder()
    nemesis = Nemesis(healthy, scripted("start kill:one", "start pause:one"), recorder, seed=10)
    previous = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        with HealGuard(nemesis.heal) as guard:
            nemesis.run()
            assert not all_running(healthy)
            os.kill(os.getpid(), signal.SIGINT)
            pytest.fail("the signal did not interrupt the block")
    assert guard.healed and all_running(healthy)
    assert [op["f"] for op in recorder.ops[-2:]] == ["heal", "heal"]
    assert signal.getsignal(signal.SIGINT) is previous


@pytest.mark.slow
def test_leader_bounce_moves_leadership_to_the_bounced_follower_and_restarts_everyone(healthy):
    before = healthy.partition_view(TOPIC, 2)
    recorder = MemoryRecorder()
    fault = start_fault(healthy, "leader-bounce:2", recorder)
    leader, follower = fault.done["leader"], fault.done["follower"]
    assert leader == before.leader and follower in before.isr and follower != leader
    after = healthy.partition_view(TOPIC, 2)
    assert after.leader == follower == fault.done["new_leader"]
    assert after.leader_epoch > before.leader_epoch and leader in after.isr
    assert all_running(healthy)
    steps = [(op["f"], op["value"].get("nodes")) for op in recorder.ops[1:-1] if op["type"] == "info"]
    assert steps == [("pause", [leader]), ("kill", [follower]), ("start", [follower]), ("kill", [leader]),
                     ("await-leader", None), ("start", [leader]), ("await-isr", None)]
    assert all(op["value"]["scenario"] == "leader-bounce" for op in recorder.ops[1:-1])
    assert recorder.ops[0] == {"process": "nemesis", "type": "invoke", "f": "leader-bounce",
                               "value": {"topic": TOPIC, "partition": 2}}
    assert recorder.ops[-1]["type"] == "info" and recorder.ops[-1]["value"] == fault.done


@pytest.mark.root
def test_power_cut_loses_what_the_lazy_disk_held_unsynced_and_heal_starts_the_broker(tmp_path):
    """The own broker on the lazy disks stock Kafka uses (flush = "lazy": --flush os, an fsync every
    flush_interval_ms, here never within the test)."""
    needs_fuse()
    lazy = up(tmp_path / "lazy", "fp-nemesis-lazy-" + os.urandom(2).hex(), flush="lazy", flush_interval_ms=600000)
    try:
        assert lazy.disks.nodes == ["n1", "n2", "n3"]
        producer = Producer({"bootstrap.servers": lazy.bootstrap, "acks": "all"})
        for i in range(100):
            producer.produce(TOPIC, f"v{i}".encode(), partition=0)
        assert producer.flush(30) == 0
        recorder = MemoryRecorder()
        fault = start_fault(lazy, "power-cut:leader", recorder, partition=0, seed=1)
        (node,) = fault.nodes
        assert node == fault.done["leader"] and lazy.node_state(node) == "down"
        assert fault.done["lost"][node]["lost_bytes"] > 0  # the 100 records, appended and never fsynced
        assert fs(recorder) == [("invoke", "power-cut"), ("info", "power-cut")]
        heal_cluster(lazy, recorder)
        assert all_running(lazy)
        assert {m.mountpoint for m in lazy_mounts([lazy.name])} == {str(f) for n in lazy.disks.nodes
                                                                    for f in lazy.disks.disk(n).folders}
    finally:
        lazy.down()
    assert lazy_mounts([lazy.name]) == []
