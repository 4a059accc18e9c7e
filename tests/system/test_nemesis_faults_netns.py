"""The faults of issue 27 on a real own-system cluster of the netns backend, each observed and
then healed: a broker cut off from the harness's clients answers them nothing while it still
replicates with the other brokers; netem's delay shows in the time to connect to the node; a
clean restart and a rolling restart stop and start brokers through controlled shutdown, each
back in the ISR; role targets resolve at the moment of the fault (the group coordinator is the
broker every broker names for the group); what the own system cannot do (reassign) is refused
with why. One cluster serves the module; each test
leaves it healed."""
from __future__ import annotations

import socket
import time

import pytest
from confluent_kafka import Producer

from fencepost.clusters.cluster import Cluster
from fencepost.clusters.errors import ClusterConfigError
from fencepost.clusters.hosts import iptables, tc
from fencepost.clusters.systems.kafka import wire
from fencepost.clusters.systems.own import BROKER_PORT
from fencepost.nemesis import MemoryRecorder, Nemesis, ScriptedSchedule, heal_cluster, start_fault
from tests.support.netns_cluster_support import healthy_cluster, module_cluster, reaches

pytestmark = [pytest.mark.integration, pytest.mark.root]

TOPIC = "fp"
CLIENTS_RANGE = (160, 189)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from module_cluster(tmp_path_factory.mktemp("faults-netns"), "fp-faults", CLIENTS_RANGE, TOPIC)


@pytest.fixture
def healthy(cluster: Cluster):
    yield from healthy_cluster(cluster, TOPIC)


def connect_seconds(cluster: Cluster, node: str, timeout: float = 2.0) -> float | None:
    """Seconds the harness (this namespace) takes to open a TCP connection to the node's broker
    port; None when it gets no answer within `timeout`."""
    began = time.monotonic()
    try:
        socket.create_connection((cluster.address(node), BROKER_PORT), timeout=timeout).close()
    except OSError:
        return None
    return time.monotonic() - began


def produce(cluster: Cluster, partition: int, count: int) -> int:
    """acks=all writes to one partition; how many were acknowledged within 10 s."""
    acked = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "message.timeout.ms": 10_000,
                         "log_level": 0})
    for i in range(count):
        producer.produce(TOPIC, f"probe-{i}".encode(), partition=partition,
                         on_delivery=lambda err, msg: acked.append(err is None))
    producer.flush(15)
    return sum(acked)


def test_a_broker_cut_off_from_the_clients_answers_them_nothing_while_it_still_replicates(healthy):
    recorder = MemoryRecorder()
    fault = start_fault(healthy, "client-partition:leader", recorder, partition=0, seed=1)
    leader = fault.done["leader"]
    assert fault.done["grudge"] == {leader: ["clients"]}
    assert healthy.cuts == {leader: ["clients"]}
    assert connect_seconds(healthy, leader) is None  # the harness gets no answer
    others = [n for n in healthy.broker_nodes if n != leader]
    assert all(connect_seconds(healthy, n) is not None for n in others)
    assert all(reaches(healthy, n, leader) and reaches(healthy, leader, n) for n in others)
    # The brokers replicate: a partition the cut broker follows takes writes, and after the replica
    # lag time the cut broker is still in its ISR (it fetched them), still leading partition 0.
    followed = next(p for p in healthy.partitions(TOPIC) if healthy.partition_view(TOPIC, p).leader != leader)
    assert produce(healthy, followed, 50) == 50
    time.sleep(6)  # the own system's replica.lag.time.max.ms is 5 s
    assert leader in healthy.partition_view(TOPIC, followed).isr
    assert healthy.partition_view(TOPIC, 0).leader == leader
    fault.stop(fault_context(healthy, recorder))
    assert recorder.ops[-1]["f"] == "stop-client-partition"
    assert recorder.ops[-1]["value"] == {"grudge": {leader: ["clients"]}}
    assert connect_seconds(healthy, leader) is not None
    assert healthy.cuts == {}
    result = healthy.hosts[leader].run(iptables.list_rules())
    assert "DROP" not in result.stdout


def test_stopping_a_client_partition_leaves_a_broker_partition_in_place(healthy):
    recorder = MemoryRecorder()
    schedule = ScriptedSchedule.from_data([[0, "start partition:one"], [0, "start client-partition:one"],
                                           [0, "stop client-partition"]])
    nemesis = Nemesis(healthy, schedule, recorder, seed=4)
    assert nemesis.run().errors == []
    grudge = {n: set(p) for n, p in healthy.cuts.items()}
    assert grudge and all("clients" not in peers for peers in grudge.values())  # only the broker cut stays
    nemesis.heal()
    assert healthy.cuts == {}


def test_a_run_naming_netem_is_refused_up_front_exactly_where_the_kernel_lacks_it(healthy):
    """The kernel is probed before any cluster exists (a namespace of the probe's own), with the
    answer a node gives; a spec naming netem on this kernel then exits 254 before anything
    starts (a campaign with netem cells is refused whole), and one without netem is accepted."""
    from fencepost.clusters import kernel_shaping_unavailable
    from fencepost.harness.errors import BadInput
    from fencepost.harness.run.spec import build_spec

    before = kernel_shaping_unavailable("netns")
    assert (before is None) == (healthy.shaping_unavailable() is None)
    assert kernel_shaping_unavailable("process") is None  # no netem there at all: the fault is refused apart
    if before is None:
        assert build_spec({"nemesis": {"faults": "kill,netem"}}, {"backend": "netns"}).faults == "kill,netem"
    else:
        with pytest.raises(BadInput, match="nemesis.faults: netem on the netns backend: .*no netem qdisc"):
            build_spec({"nemesis": {"faults": "kill,netem"}}, {"backend": "netns"})
    assert build_spec({"nemesis": {"faults": "kill,client-partition"}}, {"backend": "netns"}).faults


def fault_context(cluster: Cluster, recorder: MemoryRecorder):
    from fencepost.nemesis.context import NemesisContext
    return NemesisContext(cluster, recorder)


def test_netem_delay_shows_in_the_time_to_connect_and_heal_removes_it(healthy):
    """On a kernel with netem, the delay is seen and healed; on one without (CONFIG_NET_SCH_NETEM
    unset, as this project's CI machines), the fault is refused up front saying so, nothing done."""
    recorder = MemoryRecorder()
    settings = {"delay_ms": 300, "jitter_ms": 0, "loss_pct": 0, "duplicate_pct": 0, "reorder_pct": 0}
    missing = healthy.shaping_unavailable()
    if missing:
        assert "no netem qdisc" in missing and "CONFIG_NET_SCH_NETEM" in missing
        with pytest.raises(ClusterConfigError, match="no netem qdisc"):
            start_fault(healthy, "netem:one", recorder, seed=0, netem=settings)
        assert recorder.ops == [] and healthy.shaped == {}
        return
    before = min(connect_seconds(healthy, n) for n in healthy.broker_nodes for _ in range(3))
    fault = start_fault(healthy, "netem:one", recorder, seed=0, netem=settings)
    shaped = fault.done["nodes"][0]
    assert fault.done["netem"]["delay_ms"] == 300 and healthy.shaped == {shaped: ["delay", "300ms"]}
    assert tc.has_netem(healthy.hosts[shaped].run(tc.show()).stdout)
    # The SYN-ACK leaves the shaped node: every connection waits the delay.
    delayed = [connect_seconds(healthy, shaped, timeout=5) for _ in range(3)]
    assert all(d is not None and d >= 0.28 for d in delayed), delayed
    heal_cluster(healthy, recorder)
    assert healthy.shaped == {}
    assert not tc.has_netem(healthy.hosts[shaped].run(tc.show()).stdout)
    after = min(connect_seconds(healthy, shaped) for _ in range(5))
    assert after < 0.1 and before < 0.1, (before, after)
    assert recorder.ops[-1]["value"]["done"] == [f"removed netem on {shaped}"]
    # the default settings: delay with jitter, loss, duplication, reordering, on every broker
    fault = start_fault(healthy, "netem:all", recorder, seed=0)
    assert fault.done["nodes"] == sorted(healthy.broker_nodes)
    for node in healthy.broker_nodes:
        shown = healthy.hosts[node].run(tc.show()).stdout
        for word in ("netem", "delay 50ms", "loss 5%", "duplicate 5%", "reorder 10%"):
            assert word in shown, shown
    fault.stop(fault_context(healthy, recorder))
    assert recorder.ops[-1]["f"] == "stop-netem"
    assert all(not tc.has_netem(healthy.hosts[n].run(tc.show()).stdout) for n in healthy.broker_nodes)


def pids(cluster: Cluster) -> dict[str, int]:
    return {n: cluster.processes[n]["broker"].pid for n in cluster.broker_nodes}


def test_restart_stops_the_leader_cleanly_and_starts_it_again(healthy):
    recorder = MemoryRecorder()
    before = pids(healthy)
    fault = start_fault(healthy, "restart:leader", recorder, partition=1)
    leader = fault.done["leader"]
    assert fault.done["nodes"] == [leader] and not fault.active
    steps = [(op["f"], op["type"]) for op in recorder.ops]
    assert steps == [("restart", "invoke"), ("stop", "invoke"), ("stop", "info"), ("start", "invoke"),
                     ("start", "info"), ("restart", "info")]
    assert all(op.get("error") is None for op in recorder.ops)
    assert recorder.ops[1]["value"] == {"nodes": [leader], "scenario": "restart"}
    after = pids(healthy)
    assert after[leader] != before[leader] and healthy.node_state(leader) == "running"
    assert all(after[n] == before[n] for n in healthy.broker_nodes if n != leader)
    log = healthy.log_since_start(leader, "broker")
    assert "Traceback" not in log


@pytest.mark.slow
def test_rolling_restart_restarts_every_broker_in_turn_each_back_in_the_isr(healthy):
    recorder = MemoryRecorder()
    before = pids(healthy)
    fault = start_fault(healthy, "rolling-restart", recorder, seed=2)
    order = fault.done["nodes"]
    assert sorted(order) == sorted(healthy.broker_nodes)
    fs = [op["f"] for op in recorder.ops if op["type"] == "invoke"]
    assert fs == ["rolling-restart"] + ["stop", "start", "await-isr"] * 3
    assert [op["value"]["nodes"] for op in recorder.ops if op["f"] == "stop" and op["type"] == "invoke"] == \
        [[n] for n in order]
    assert all(op.get("error") is None for op in recorder.ops)
    after = pids(healthy)
    assert all(after[n] != before[n] for n in healthy.broker_nodes)


def test_role_targets_resolve_when_the_fault_starts(healthy):
    recorder = MemoryRecorder()
    fault = start_fault(healthy, "pause:follower", recorder, partition=2, seed=5)
    view = healthy.partition_view(TOPIC, 2)
    follower = fault.done["follower"]
    assert fault.done["nodes"] == [follower] and follower != fault.done["leader"] and follower in view.replicas
    assert healthy.node_state(follower) == "paused"
    heal_cluster(healthy, recorder)
    assert healthy.node_state(follower) == "running"
    fault = start_fault(healthy, "pause:active-controller", recorder)
    assert fault.done["controller"] == "controller" and fault.done["nodes"] == ["controller"]
    assert healthy.node_state("controller") == "paused"
    heal_cluster(healthy, recorder)
    named = {f"n{wire.find_coordinator(healthy.address(n), BROKER_PORT, 'fencepost', 5)[1]}"
             for n in healthy.broker_nodes}
    assert len(named) == 1 and named <= set(healthy.broker_nodes)  # every broker names the same one
    fault = start_fault(healthy, "pause:group-coordinator", recorder)
    assert fault.done["nodes"] == [fault.done["coordinator"]] == list(named) and fault.done["group"] == "fencepost"
    assert healthy.node_state(fault.done["coordinator"]) == "paused"
    heal_cluster(healthy, recorder)


def test_what_the_own_system_cannot_do_is_refused_with_why(healthy):
    with pytest.raises(ClusterConfigError, match="cannot move a partition's replicas"):
        start_fault(healthy, "reassign", MemoryRecorder())
    with pytest.raises(ClusterConfigError, match="reorder_pct needs delay_ms"):
        start_fault(healthy, "netem", MemoryRecorder(), netem={"delay_ms": 0, "reorder_pct": 5})
    assert healthy.shaped == {}
