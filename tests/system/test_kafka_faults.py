"""The faults of issue 27 that ask stock Kafka itself, on real clusters of the netns backend: a
reassigned partition shows its new replicas in the control plane's view, then its old ones
again after the heal — through ZooKeeper's /admin/reassign_partitions on 0.10.2.2 (no admin
API before 2.4), through AlterPartitionReassignments on 3.9.1 (ZooKeeper mode) and 4.4.0
(KRaft) — and the role targets resolve: the group coordinator (FindCoordinator) and the
active controller (ZooKeeper's /controller; the KRaft quorum's leader by DescribeQuorum)."""
from __future__ import annotations

import os
import shutil

import pytest

from fencepost.clusters.cluster import Cluster, ClusterSpec
from fencepost.clusters.systems.base import TopicSpec
from fencepost.nemesis import MemoryRecorder, heal_cluster, start_fault
from fencepost.nemesis.context import NemesisContext
from tests.support import host_contract

pytestmark = [pytest.mark.integration, pytest.mark.root, pytest.mark.java, pytest.mark.slow]

TOPIC = "fp"


@pytest.mark.parametrize("version", ["0.10.2.2", "3.9.1", "4.4.0"])
def test_reassign_moves_the_replicas_and_back_and_roles_resolve(tmp_path, version):
    if os.geteuid() != 0 or shutil.which("java") is None:
        pytest.skip("needs root (netns) and java")
    spec = ClusterSpec(f"fp-kf-{os.urandom(2).hex()}", system=f"kafka:{version}", brokers=4, backend="netns",
                       backend_options={"subnet": host_contract.free_subnet(180, 189)})
    cluster = Cluster.up(spec, tmp_path / "cluster", timeout=240)
    try:
        cluster.create_topic(TopicSpec(TOPIC, 3, 3), 120)
        recorder = MemoryRecorder()
        fault = start_fault(cluster, "reassign:0", recorder, seed=3, timeout=60)
        before, after = fault.done["replicas"], fault.done["to"]
        assert len(after) == 3 and set(after) - set(before), fault.done  # a broker outside the set joined
        cluster.wait_for(lambda: list(cluster.partition_view(TOPIC, 0).replicas) == after, 120,
                         f"{TOPIC}-0 on {after}")
        fault.stop(NemesisContext(cluster, recorder, timeout=60))
        assert recorder.ops[-1]["f"] == "stop-reassign" and "error" not in recorder.ops[-1]
        cluster.wait_for(lambda: list(cluster.partition_view(TOPIC, 0).replicas) == before, 120,
                         f"{TOPIC}-0 back on {before}")

        coordinator = cluster.wait_for(lambda: cluster.group_coordinator("fencepost"), 60, "a coordinator")
        assert coordinator in cluster.broker_nodes
        controller = cluster.wait_for(cluster.active_controller, 30, "the active controller")
        if cluster.system.zookeeper_mode:
            assert controller == cluster.system.controller_broker(cluster.hosts)
        assert controller in cluster.nodes
        paused = start_fault(cluster, "pause:group-coordinator", recorder, timeout=60)
        assert paused.done["nodes"] == [paused.done["coordinator"]] and paused.done["group"] == "fencepost"
        assert cluster.node_state(paused.done["coordinator"]) == "paused"
        heal_cluster(cluster, recorder, timeout=120)
    finally:
        cluster.down()
