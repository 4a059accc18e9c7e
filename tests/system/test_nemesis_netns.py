"""The nemesis's partitions on a real own-system cluster of the netns backend: every target's
grudge becomes exactly those DROP rules in the nodes' FENCEPOST chains (and nothing after a
heal), an isolated leader really is unreachable and loses its leadership, and the zombie
scenario fences a follower that can still reach the leader, moves leadership twice and
heals. One cluster serves the module; each test leaves it healed."""
from __future__ import annotations

import pytest

from fencepost.clusters.cluster import Cluster
from fencepost.clusters.hosts import iptables
from fencepost.clusters.systems.own import broker_id
from fencepost.nemesis import MemoryRecorder, Nemesis, ScriptedSchedule, heal_cluster, start_fault
from fencepost.nemesis.grudges import grudge_json
from fencepost.nemesis.spec import PARTITION_TARGETS
from tests.support.netns_cluster_support import healthy_cluster, module_cluster, reaches

pytestmark = [pytest.mark.integration, pytest.mark.root]

TOPIC = "fp"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from module_cluster(tmp_path_factory.mktemp("nemesis-netns"), "fp-nemesis", (96, 127), TOPIC)


@pytest.fixture
def healthy(cluster: Cluster):
    yield from healthy_cluster(cluster, TOPIC)


def dropped(cluster: Cluster, node: str) -> set[str]:
    """The addresses the node's FENCEPOST chain drops, checking each has its -s and -d rule."""
    result = cluster.hosts[node].run(iptables.list_rules(), check=False)
    rules = result.stdout.splitlines() if result.ok else []
    sources = {r.split()[3].removesuffix("/32") for r in rules if r.startswith("-A FENCEPOST -s ")}
    targets = {r.split()[3].removesuffix("/32") for r in rules if r.startswith("-A FENCEPOST -d ")}
    assert sources == targets, rules
    return sources


def fenced(cluster: Cluster, node: str) -> bool:
    brokers = cluster.system.describe(cluster.hosts)["brokers"]
    return any(int(b["node_id"]) == broker_id(node) and b.get("fenced") for b in brokers)


OWN_TARGETS = list(PARTITION_TARGETS)


@pytest.mark.parametrize("target", OWN_TARGETS)
def test_each_target_cuts_exactly_its_grudge_and_heal_removes_every_cut(healthy, target):
    recorder = MemoryRecorder()
    fault = start_fault(healthy, f"partition:{target}", recorder, seed=OWN_TARGETS.index(target),
                        partition=0)
    grudge = fault.grudge
    assert grudge and recorder.ops[1]["value"]["grudge"] == grudge_json(grudge)
    for node in healthy.nodes:
        assert dropped(healthy, node) == {healthy.address(p) for p in grudge.get(node, ())}, node
    assert healthy.cuts == grudge_json(grudge)
    if target == "controller":
        assert set(grudge["controller"]) == set(healthy.broker_nodes)
    if target == "leader":
        assert set(grudge[fault.done["leader"]]) == set(healthy.nodes) - {fault.done["leader"]}
    if target == "follower":  # an ISR member of partition 0 other than its leader, alone
        follower = fault.done["follower"]
        assert follower != fault.done["leader"] and follower in healthy.broker_nodes
        assert set(grudge[follower]) == set(healthy.nodes) - {follower}
    if target == "active-controller":  # the own system's controller node
        assert fault.done["controller"] == "controller"
        assert set(grudge["controller"]) == set(healthy.broker_nodes)
    heal_cluster(healthy, recorder)
    assert all(dropped(healthy, node) == set() for node in healthy.nodes)
    assert healthy.cuts == {}
    assert [op["f"] for op in recorder.ops] == ["start-partition"] * 2 + ["heal"] * 2


def test_the_runner_starts_and_stops_a_partition_recording_the_grudge_it_lifted(healthy):
    recorder = MemoryRecorder()
    schedule = ScriptedSchedule.from_data([[0, "start partition:majorities-ring"], [0, "stop partition"]])
    summary = Nemesis(healthy, schedule, recorder, seed=3).run()
    assert summary.errors == [] and summary.steps == 2
    start, stop = recorder.ops[1], recorder.ops[3]
    assert (start["f"], stop["f"]) == ("start-partition", "stop-partition")
    line = start["value"]["grudge"]  # 3 brokers: the ring opened into a line, its two ends cut
    assert len(line) == 2 and all(len(drops) == 1 for drops in line.values())
    assert stop["value"] == {"grudge": line}
    assert all(dropped(healthy, node) == set() for node in healthy.nodes)


@pytest.mark.slow
def test_an_isolated_leader_is_unreachable_and_the_controller_elects_another(healthy):
    recorder = MemoryRecorder()
    fault = start_fault(healthy, "partition:leader", recorder, partition=1)
    leader = fault.done["leader"]
    others = [n for n in healthy.nodes if n != leader]
    assert not any(reaches(healthy, leader, n) for n in others)
    assert not any(reaches(healthy, n, leader) for n in others)
    assert all(reaches(healthy, n, "controller") for n in others if n != "controller")
    moved = healthy.wait_for(lambda: (v := healthy.partition_view(TOPIC, 1)).leader not in (None, leader) and v,
                             30, "a new leader of fp-1")
    assert moved.leader_epoch > 0 and leader not in moved.isr
    heal_cluster(healthy, recorder)
    assert all(reaches(healthy, leader, n) for n in others)


class ProbingRecorder(MemoryRecorder):
    """Records, and at the moment the zombie is fenced, looks at what the zombie can reach."""

    def __init__(self, cluster: Cluster) -> None:
        super().__init__()
        self.cluster = cluster
        self.seen: dict[str, bool] = {}

    def nemesis(self, f, value=None, type="info", error=None):
        op = super().nemesis(f, value, type, error)
        if f == "await-fenced" and type == "info" and error is None:
            zombie, leader = value["node"], value["leader"]
            self.seen = {"fenced": fenced(self.cluster, zombie),
                         "reaches the leader": reaches(self.cluster, zombie, leader),
                         "reaches the controller": reaches(self.cluster, zombie, "controller"),
                         "the leader reaches the controller": reaches(self.cluster, leader, "controller")}
        return op


@pytest.mark.slow
def test_zombie_fences_a_follower_that_still_reaches_the_leader_moves_leadership_twice_and_heals(healthy):
    before = healthy.partition_view(TOPIC, 2)
    recorder = ProbingRecorder(healthy)
    fault = start_fault(healthy, "zombie:2", recorder, seed=1)
    done = fault.done
    zombie, leaders = done["zombie"], done["leaders"]
    assert recorder.seen == {"fenced": True, "reaches the leader": True, "reaches the controller": False,
                             "the leader reaches the controller": True}
    assert leaders[0] == before.leader and zombie in before.isr and zombie not in leaders
    assert leaders[1] != leaders[0] and leaders[2] != leaders[1]
    assert done["leader_epoch_after"] >= before.leader_epoch + 2
    after = healthy.partition_view(TOPIC, 2)
    assert zombie in after.isr and set(after.isr) == set(after.replicas)
    assert not fenced(healthy, zombie) and healthy.cuts == {}
    assert all(dropped(healthy, node) == set() for node in healthy.nodes)
    assert all(healthy.node_state(n) == "running" for n in healthy.nodes)
    steps = [op["f"] for op in recorder.ops if op["type"] == "info"]
    # the held follower is resumed inside L's stop, once another leader is named
    assert steps == ["await-high-watermark", "start-partition", "await-fenced", "pause", "await-leader", "resume",
                     "stop", "await-leader", "start",
                     "await-isr", "stop", "await-leader", "start", "await-isr", "stop-partition", "await-isr",
                     "zombie"]
    handover = next(op for op in recorder.ops if op["f"] == "await-leader" and op["type"] == "info")
    assert "not_yet" not in handover["value"] and handover["value"]["leader"] == leaders[1], handover
    [cut] = [op for op in recorder.ops if op["f"] == "start-partition" and op["type"] == "info"]
    assert cut["value"]["grudge"] == {"controller": [zombie], zombie: ["controller"]}
    # no workload here: the wait for writes gives up after its bound and the scenario goes on
    [wait] = [op for op in recorder.ops if op["f"] == "await-high-watermark" and op["type"] == "info"]
    assert wait["value"]["passed"] is False
