"""The docker backend (clusters/hosts/docker/) through the host contract, and what is its own:
pause/kill act on the whole container, a killed node keeps its address, partition rules and
data, the offline image is built once, cleanup removes exactly what is labelled ours.

Needs root and a Docker daemon: the session fixture uses the one that answers or starts
dockerd (tests/support/docker_daemon.py) and stops it again if it started it.
"""
from __future__ import annotations

import os
import posixpath
import shutil
import signal
import socket
import sys
import uuid
from pathlib import Path

import docker
import docker.errors
import pytest

from fencepost.clusters.errors import ClusterConfigError, HostError
from fencepost.clusters.hosts import docker as docker_backend
from fencepost.clusters.hosts import iptables
from fencepost.clusters.hosts.base import CLUSTER_ENV
from fencepost.clusters.hosts.docker.image import (
    IMAGE_LABEL,
    PROJECT_ROOT,
    base_root_tar,
    ensure_base_image,
    host_mounts,
)
from fencepost.clusters.hosts.docker.node import CLUSTER_LABEL
from fencepost.clusters.hosts.local_process import marked_processes
from tests.support import host_contract
from tests.support.docker_daemon import daemon_answers, ensure_dockerd, stop_dockerd

pytestmark = [pytest.mark.integration, pytest.mark.docker, pytest.mark.root]

NODES = ("n1", "n2", "n3")


def cluster_name(stem: str) -> str:
    return f"{stem}{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="session")
def docker_client():
    if os.geteuid() != 0:
        pytest.skip("the docker backend tests need root")
    if not daemon_answers() and shutil.which("dockerd") is None:
        pytest.skip("no Docker daemon answers and dockerd is not installed (scripts/provision installs docker.io)")
    started = ensure_dockerd()
    client = docker.from_env()
    try:
        yield client
    finally:
        client.close()
        if started is not None:
            stop_dockerd(started)


@pytest.fixture
def make_cluster(docker_client, tmp_path: Path):
    """provision(...) that destroys what it made at the end of the test, also on failure."""
    made = []

    def make(stem: str, nodes=NODES, options=None):
        hosts = docker_backend.provision(cluster_name(stem), nodes, tmp_path / f"cluster-{len(made)}", options or {})
        made.append(hosts)
        return hosts

    try:
        yield make
    finally:
        for hosts in made:
            hosts.destroy()


def leftovers(client, cluster: str) -> list[str]:
    label = {"label": f"{CLUSTER_LABEL}={cluster}"}
    return ([c.name for c in client.containers.list(all=True, filters=label)]
            + [n.name for n in client.networks.list(filters=label)])


def fencepost_rules(host) -> list[str]:
    return [line for line in host.run(iptables.list_rules()).stdout.splitlines() if line.startswith("-A")]


@pytest.fixture(scope="class")
def hosts(docker_client, tmp_path_factory):
    """One three-node cluster for the tests of a class."""
    hosts = docker_backend.provision(cluster_name("fpdk"), NODES, tmp_path_factory.mktemp("docker"), {})
    try:
        yield hosts
    finally:
        hosts.destroy()


class TestContract(host_contract.HostContractTests):
    """The backend-neutral checks, on one three-node cluster."""
    attach = staticmethod(docker_backend.attach)


@pytest.mark.slow
def test_nodes_are_labelled_containers_with_their_hostname_address_and_mounted_workdir(make_cluster, docker_client):
    hosts = make_cluster("fpdn")
    network = docker_client.networks.get(f"fp-{hosts.cluster}")
    assert network.attrs["Labels"][CLUSTER_LABEL] == hosts.cluster
    addresses = set()
    for node in NODES:
        host = hosts[node]
        container = docker_client.containers.get(f"fp-{hosts.cluster}-{node}")
        assert container.labels[CLUSTER_LABEL] == hosts.cluster
        assert "NET_ADMIN" in container.attrs["HostConfig"]["CapAdd"]
        assert host.run(["hostname"]).stdout.strip() == node
        assert host.address in host.run(["ip", "-4", "-o", "addr", "show"]).stdout
        addresses.add(host.address)
        marker = f"written inside {node}"
        host.run(["sh", "-c", 'echo "$1" > "$2"', "sh", marker, posixpath.join(host.workdir, "inside.txt")])
        assert (Path(host.workdir) / "inside.txt").read_text() == marker + "\n"
        assert host.python == sys.executable
    assert len(addresses) == len(NODES)
    # the harness reaches a node directly: a listener inside, a connect from here
    listeners = host_contract.start_listeners(hosts)
    try:
        for host in hosts:
            address, port = host_contract.listener_target(host).rsplit(":", 1)
            with socket.create_connection((address, int(port)), timeout=5):
                pass
    finally:
        host_contract.stop_listeners(listeners)


def test_pause_is_docker_pause_of_the_whole_node(make_cluster, docker_client):
    hosts = make_cluster("fpdp", ("n1",))
    host = hosts["n1"]
    first = host.spawn("first", ["sleep", "1000"], posixpath.join(host.workdir, "first.log"))
    second = host.spawn("second", ["sleep", "1000"], posixpath.join(host.workdir, "second.log"))
    try:
        host.pause([first])
        assert docker_client.containers.get(host.container_name).status == "paused"
        assert host.process_state(second) == "stopped"  # the whole container froze
        with pytest.raises(HostError, match="paused"):
            host.spawn("third", ["sleep", "1000"], posixpath.join(host.workdir, "third.log"))
        # commands still run beside the frozen node, on the same workdir
        assert host.run(["ls", host.workdir]).stdout.split() == ["first.log", "second.log"]
        host.pause([first])  # already paused: nothing to do
        host.resume([first])
        assert docker_client.containers.get(host.container_name).status == "running"
        assert host.process_state(first) == host.process_state(second) == "running"
    finally:
        host.kill([first, second])


@pytest.mark.slow
def test_kill_is_docker_kill_and_start_keeping_address_rules_and_data(make_cluster, docker_client):
    hosts = make_cluster("fpdk", ("n1", "n2"))
    host, peer = hosts["n1"], hosts["n2"]
    log = posixpath.join(host.workdir, "sleeper.log")
    before = host.spawn("sleeper", ["sleep", "1000"], log)
    bystander = host.spawn("bystander", ["sleep", "1000"], log)
    host.run(["sh", "-c", "echo kept > data.txt"])  # in the workdir, a bind-mounted host folder
    host.cut_off([peer.address])
    rules = fencepost_rules(host)
    assert len(rules) == 2
    started_at = docker_client.containers.get(host.container_name).attrs["State"]["StartedAt"]

    host.pause([before])
    host.kill([before])  # a paused node dies too

    container = docker_client.containers.get(host.container_name)
    assert container.status == "running"
    assert container.attrs["State"]["StartedAt"] != started_at  # killed and started again
    assert host.process_state(before) == "gone"
    assert host.process_state(bystander) == "gone"  # every process of the node died
    assert host.address in host.run(["ip", "-4", "-o", "addr", "show"]).stdout
    assert fencepost_rules(host) == rules  # a crash does not heal the network
    assert host.run(["cat", "data.txt"]).stdout == "kept\n"
    after = host.spawn("sleeper", ["sleep", "1000"], log)
    try:
        assert after.pid > bystander.pid  # pids keep counting: an old handle never names a new process
        assert host.process_state(after) == "running"
    finally:
        host.kill([after])
        host.heal()
    assert fencepost_rules(host) == []


@pytest.mark.slow
def test_heal_and_signals_work_while_the_node_is_paused(make_cluster):
    hosts = make_cluster("fpdh", ("n1", "n2"))
    host = hosts["n2"]
    handle = host.spawn("sleeper", ["sleep", "1000"], posixpath.join(host.workdir, "s.log"))
    try:
        host.pause([handle])
        host.cut_off([hosts["n1"].address])
        host.heal()
        host.signal(handle, signal.SIGKILL)  # queued until the node thaws
        host.resume([])
        host.wait_for_state([handle], {"gone"})
        assert fencepost_rules(host) == []
    finally:
        host.resume([])
        host.kill([handle])


def test_terminate_unpauses_first(make_cluster, docker_client):
    hosts = make_cluster("fpdt", ("n2",))
    host = hosts["n2"]
    handle = host.spawn("sleeper", ["sleep", "1000"], posixpath.join(host.workdir, "s.log"))
    host.pause([handle])
    host.terminate([handle], timeout=10)
    assert host.process_state(handle) == "gone"
    assert docker_client.containers.get(host.container_name).status == "running"


def test_spawned_processes_carry_the_cluster_marker_seen_from_this_machine(make_cluster):
    """`fencepost cleanup` finds strays by the marker in /proc here: container processes show too."""
    hosts = make_cluster("fpdm", ("n1",))
    host = hosts["n1"]
    handle = host.spawn("sleeper", ["sleep", "1000"], posixpath.join(host.workdir, "s.log"))
    try:
        assert hosts.cluster in marked_processes(hosts.cluster).values()
        environ = host.run(["cat", f"/proc/{handle.pid}/environ"]).stdout.replace("\0", " ")
        assert f"{CLUSTER_ENV}={hosts.cluster}" in environ
    finally:
        host.kill([handle])


def test_destroy_removes_the_cluster_and_is_idempotent(docker_client, tmp_path: Path):
    hosts = docker_backend.provision(cluster_name("fpdd"), ("n1",), tmp_path, {})
    try:
        assert len(leftovers(docker_client, hosts.cluster)) == 3  # node, its holder, the network
        hosts.destroy()
        assert leftovers(docker_client, hosts.cluster) == []
        hosts.destroy()
        assert (tmp_path / "n1").is_dir()  # work directories are kept
        with pytest.raises(HostError, match="no longer exists"):
            hosts["n1"].run(["true"])
    finally:
        hosts.destroy()


def test_a_second_provision_of_one_cluster_is_refused(make_cluster, tmp_path: Path):
    hosts = make_cluster("fpd2", ("n1",))
    with pytest.raises(ClusterConfigError, match="already"):
        docker_backend.provision(hosts.cluster, ("n1",), tmp_path / "again", {})
    assert hosts["n1"].run(["true"]).ok


def test_options_are_checked(docker_client, tmp_path: Path):
    with pytest.raises(ClusterConfigError, match="unknown docker backend option"):
        docker_backend.provision(cluster_name("fpdo"), NODES, tmp_path, {"flavour": "x"})
    with pytest.raises(ClusterConfigError, match="docker build -f clusters/hosts/docker/Dockerfile"):
        docker_backend.provision(cluster_name("fpdo"), NODES, tmp_path, {"image": "fencepost-no-such-image:1"})
    with pytest.raises(ClusterConfigError, match="only goes with image="):
        docker_backend.provision(cluster_name("fpdo"), NODES, tmp_path, {"python": "python3"})
    with pytest.raises(ClusterConfigError, match="CIDR"):
        docker_backend.provision(cluster_name("fpdo"), NODES, tmp_path, {"subnet": "10.78.0.300/24"})
    with pytest.raises(ClusterConfigError, match="private"):
        docker_backend.provision(cluster_name("fpdo"), NODES, tmp_path, {"subnet": "8.8.8.0/24"})
    with pytest.raises(ClusterConfigError, match="hostname"):
        docker_backend.provision(cluster_name("fpdo"), ("n_1",), tmp_path, {})


def test_no_daemon_is_a_configuration_error(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    with pytest.raises(ClusterConfigError, match="needs a running Docker daemon"):
        docker_backend.provision(cluster_name("fpdx"), NODES, tmp_path, {})
    with pytest.raises(ClusterConfigError, match="needs a running Docker daemon"):
        docker_backend.cleanup()


def test_a_subnet_option_sets_the_addresses(make_cluster):
    hosts = make_cluster("fpds", ("n1", "n2"), {"subnet": "10.78.231.0/24"})
    assert all(h.address.startswith("10.78.231.") for h in hosts)


def test_an_image_without_the_interpreter_fails_clearly_and_leaves_nothing(docker_client, tmp_path: Path):
    """image= with an image lacking python3 (here: the bare base, nothing mounted): a HostError
    naming the node and the image, and no container or network left behind."""
    base = ensure_base_image(docker_client).tag
    cluster = cluster_name("fpdi")
    with pytest.raises(HostError, match=f"on n1: could not start its containers from image {base}"):
        docker_backend.provision(cluster, NODES, tmp_path, {"image": base})
    assert leftovers(docker_client, cluster) == []


def test_the_base_image_is_reproducible_and_built_once(docker_client):
    assert base_root_tar() == base_root_tar()
    repository = f"fencepost-node-test{uuid.uuid4().hex[:6]}"
    first = ensure_base_image(docker_client, repository)
    try:
        second = ensure_base_image(docker_client, repository)
        assert first.built and not second.built
        assert first.tag == second.tag
        assert docker_client.images.get(first.tag).labels.get(IMAGE_LABEL) == "1"
    finally:
        docker_client.images.remove(first.tag)


def test_a_second_provision_builds_no_image(make_cluster, docker_client):
    make_cluster("fpdb", ("n1",))
    images = {i.id for i in docker_client.images.list(filters={"label": f"{IMAGE_LABEL}=1"})}
    hosts = make_cluster("fpdb", ("n1",))
    assert {i.id for i in docker_client.images.list(filters={"label": f"{IMAGE_LABEL}=1"})} == images
    assert docker_client.containers.get(hosts["n1"].container_name).image.id in images


def test_host_mounts_cover_the_interpreter_and_the_project(docker_client):
    mounts = host_mounts()
    assert "/usr" in mounts
    for needed in (sys.base_prefix, str(PROJECT_ROOT)):
        assert any(needed == m or needed.startswith(m + "/") for m in mounts), (needed, mounts)
    assert len(mounts) == len(set(mounts))


def test_cleanup_removes_exactly_what_is_labelled_ours(make_cluster, docker_client):
    """Runs last in this file: cleanup removes every labelled fencepost container on the machine."""
    hosts = make_cluster("fpdc", ("n1",))
    image = docker_client.containers.get(hosts["n1"].container_name).image
    name = f"fp-unlabelled-{uuid.uuid4().hex[:6]}"
    # Same image and prefix, no label: not ours to remove. It never runs a process.
    stranger = docker_client.containers.create(image.id, ["sleep", "infinity"], name=name, network_mode="none")
    network = docker_client.networks.create(f"fp-unlabelled-{uuid.uuid4().hex[:6]}", driver="bridge")
    try:
        removed = docker_backend.cleanup()
        expected = {f"container fp-{hosts.cluster}-n1", f"container fp-{hosts.cluster}-n1_ns",
                    f"network fp-{hosts.cluster}"}
        assert expected <= set(removed)
        assert leftovers(docker_client, hosts.cluster) == []
        assert docker_client.containers.get(stranger.id).name == name
        assert docker_client.networks.get(network.id).name == network.name
        assert not any(hosts.cluster in line for line in docker_backend.cleanup())
    finally:
        stranger.remove(force=True)
        network.remove()
