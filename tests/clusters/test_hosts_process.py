"""The process backend (clusters/hosts/process/) through the host contract, except partitions,
which it refuses with a ClusterConfigError."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fencepost.clusters.errors import ClusterConfigError
from fencepost.clusters.hosts import local_process, process
from tests.support import host_contract

pytestmark = pytest.mark.integration

CLUSTER = "fpproctest"
NODES = ("n1", "n2", "n3")


@pytest.fixture
def hosts(tmp_path: Path):
    hosts = process.provision(CLUSTER, NODES, tmp_path / "cluster", {})
    try:
        yield hosts
    finally:
        hosts.destroy()


def test_nodes_are_loopback_with_their_own_workdirs(hosts, tmp_path: Path):
    assert list(hosts.hosts) == list(NODES)
    for node in NODES:
        host = hosts[node]
        assert host.name == node
        assert host.address == "127.0.0.1"
        assert host.workdir == str(tmp_path / "cluster" / node)
        assert Path(host.workdir).is_dir()


def test_each_node_and_service_gets_its_own_port_kept_across_attach(hosts):
    ports = {(h.name, service): h.port(service, 9092) for h in hosts for service in ("broker", "controller")}
    assert len(set(ports.values())) == len(ports)
    again = process.attach(hosts.state())
    assert {(h.name, s): h.port(s, 9092) for h in again for s in ("broker", "controller")} == ports


def test_run(hosts):
    host_contract.check_run(hosts["n1"])


def test_put_get(hosts, tmp_path: Path):
    host_contract.check_put_get(hosts["n2"], tmp_path)


def test_spawn_markers(hosts):
    host_contract.check_spawn_markers(hosts["n3"], CLUSTER)


def test_pause(hosts):
    host_contract.check_pause(hosts["n1"])


def test_kill_restart(hosts):
    host_contract.check_kill_restart(hosts["n2"])


def test_reattach(hosts):
    host_contract.check_reattach(hosts, process.attach)


def test_partitions_are_a_configuration_error(hosts):
    host_contract.check_no_partitions(hosts["n1"])
    with pytest.raises(ClusterConfigError, match="netns"):
        hosts["n2"].cut_off([hosts["n3"].address])


def test_options_are_refused(tmp_path: Path):
    with pytest.raises(ClusterConfigError, match="subnet"):
        process.provision(CLUSTER, NODES, tmp_path, {"subnet": "10.77.0.0/24"})


def test_a_process_that_ends_while_its_tasks_are_listed_is_gone(monkeypatch):
    # The kernel removes /proc/<pid>/task between the listing's check and its read: seen
    # once in CI, where `fencepost cleanup` crashed on it.
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert local_process.local_state(child.pid) == "running"

        def vanished(self, pattern):
            raise FileNotFoundError(2, "No such file or directory", str(self))
        monkeypatch.setattr(Path, "glob", vanished)
        assert local_process.local_state(child.pid) == "gone"
    finally:
        child.kill()
        child.wait()
