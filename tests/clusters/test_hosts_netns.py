"""The netns backend (clusters/hosts/netns/): the host contract on real namespaces, and what is
particular to it — names and addresses, the bridge, the subnet option and its refusals,
destroy and cleanup leaving nothing behind, and a running dockerd's FORWARD trap."""
from __future__ import annotations

import ipaddress
import json
import os
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from fencepost.clusters.errors import ClusterConfigError
from fencepost.clusters.hosts import netns
from fencepost.clusters.hosts.base import NAME_PREFIX
from fencepost.clusters.hosts.netns import network
from tests.support import host_contract
from tests.support.docker_daemon import daemon_answers, running_dockerd
from tests.support.paths import ROOT as REPO

pytestmark = [pytest.mark.integration, pytest.mark.root]

NODES = ("n1", "n2", "n3")


@pytest.fixture(autouse=True)
def needs_root():
    if os.geteuid() != 0:
        pytest.skip("the netns backend needs root")


def cluster_name() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


def free_subnet() -> str:
    return host_contract.free_subnet(128, 254)


class Clusters:
    """Provisions clusters for one test and destroys each of them afterwards, also on failure."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.made: list[netns.NetnsHostSet] = []

    def make(self, name: str | None = None, nodes=NODES, **options) -> netns.NetnsHostSet:
        name = name or cluster_name()
        hosts = netns.provision(name, nodes, self.root / name, options)
        self.made.append(hosts)
        return hosts

    def destroy_all(self) -> None:
        for hosts in self.made:
            hosts.destroy()


@pytest.fixture
def clusters(tmp_path: Path):
    made = Clusters(tmp_path)
    try:
        yield made
    finally:
        made.destroy_all()


@pytest.fixture
def hosts(clusters: Clusters) -> netns.NetnsHostSet:
    return clusters.make(subnet=free_subnet())


def snapshot() -> dict[str, set[str]]:
    return {"namespaces": set(network.namespaces()),
            "links": set(network.link_names()),
            "rules": set(network.run_root(["iptables", "-w", "-S"]).stdout.splitlines())}


def belonging_to(hosts: netns.NetnsHostSet, snap: dict[str, set[str]]) -> dict[str, set[str]]:
    """The part of a snapshot that names this cluster's namespaces, links or bridge."""
    names = {hosts.bridge, *(h.veth for h in hosts), *(h.namespace for h in hosts)}
    return {kind: {item for item in items if any(name in item for name in names)} for kind, items in snap.items()}


def netns_inode(namespace: str) -> int:
    return os.stat(f"/run/netns/{namespace}").st_ino


def ip_json_in(namespace: str, *args: str) -> list[dict]:
    return json.loads(network.run_root(["ip", "-n", namespace, "-j", *args]).stdout)


# -- the contract -----------------------------------------------------------------------------


class TestContract(host_contract.HostContractTests):
    attach = staticmethod(netns.attach)


# -- names, addresses, the bridge -------------------------------------------------------------


def test_default_subnet_names_and_addresses(clusters):
    name = cluster_name()
    hosts = clusters.make(name)
    digest = network.short_hash(name)
    assert hosts.bridge == f"fpb{digest}"
    assert [h.veth for h in hosts] == [f"fpv{digest}{i}" for i in range(3)]
    assert [h.namespace for h in hosts] == [f"fp-{name}-{n}" for n in NODES]
    assert [h.address for h in hosts] == ["10.77.0.2", "10.77.0.3", "10.77.0.4"]
    assert all(len(link) <= 15 for link in [hosts.bridge, *(h.veth for h in hosts)])

    state = hosts.state()
    assert state["subnet"] == "10.77.0.0/24" and state["bridge"] == hosts.bridge
    assert state["bridge_address"] == "10.77.0.1"
    assert state["forward_rule_comment"] == f"fencepost:{hosts.bridge}"
    assert {n: (e["namespace"], e["veth"], e["address"]) for n, e in state["nodes"].items()} == \
        {h.name: (h.namespace, h.veth, h.address) for h in hosts}

    [bridge] = [link for link in network.ip_json("-4", "addr", "show", "dev", hosts.bridge)]
    assert [(a["local"], a["prefixlen"]) for a in bridge["addr_info"]] == [("10.77.0.1", 24)]
    assert "UP" in bridge["flags"]
    assert network.link_alias(hosts.bridge) == f"fencepost cluster {name}"
    for host in hosts:
        assert host.namespace in network.namespaces()
        [veth] = network.ip_json("link", "show", host.veth)
        assert veth["master"] == hosts.bridge and "UP" in veth["flags"]
        inside = {link["ifname"]: link for link in ip_json_in(host.namespace, "addr")}
        assert set(inside) == {"lo", "eth0"}, "a node has loopback and eth0, nothing else"
        assert "UP" in inside["lo"]["flags"] and "UP" in inside["eth0"]["flags"]
        assert [(a["local"], a["prefixlen"]) for a in inside["eth0"]["addr_info"] if a["family"] == "inet"] == \
            [(host.address, 24)]
        assert ip_json_in(host.namespace, "-4", "route", "show", "default") == [], "nodes get no default route"
        assert host.workdir == str(clusters.root / name / host.name) and Path(host.workdir).is_dir()
        assert host.python == sys.executable


def test_subnet_option(clusters):
    subnet = free_subnet().replace(".0/24", ".16/28")
    hosts = clusters.make(subnet=subnet)
    base = ipaddress.ip_network(subnet).network_address
    assert hosts.state()["bridge_address"] == str(base + 1)
    assert [h.address for h in hosts] == [str(base + 2), str(base + 3), str(base + 4)]
    inside = ip_json_in(hosts["n3"].namespace, "-4", "addr", "show", "dev", "eth0")
    assert [(a["local"], a["prefixlen"]) for a in inside[0]["addr_info"]] == [(str(base + 4), 28)]


def test_harness_reaches_nodes_through_the_bridge(hosts):
    listeners = host_contract.start_listeners(hosts)
    try:
        for host in hosts:
            route = network.run_root(["ip", "-j", "route", "get", host.address]).stdout
            assert json.loads(route)[0]["dev"] == hosts.bridge
            port = host.port("contract-listener", host_contract.LISTENER_PORT)
            with socket.create_connection((host.address, port), timeout=5):
                pass
        assert all(host_contract.connectivity(hosts).values()), "nodes reach each other"
    finally:
        host_contract.stop_listeners(listeners)


def test_run_and_spawn_happen_inside_the_namespace(hosts):
    host = hosts["n2"]
    assert host.run(["ip", "-4", "-o", "addr", "show", "dev", "eth0"]).stdout.split()[3] == f"{host.address}/24"
    handle = host.spawn("sleeper", [host.python, "-c", "import time; time.sleep(600)"],
                        str(Path(host.workdir) / "sleeper.log"))
    try:
        # `ip netns exec` execs: the pid is the command's own, and it lives in the node's namespace
        cmdline = Path(f"/proc/{handle.pid}/cmdline").read_bytes().split(b"\0")
        assert cmdline[0].decode() == host.python and b"import time; time.sleep(600)" in cmdline
        assert os.stat(f"/proc/{handle.pid}/ns/net").st_ino == netns_inode(host.namespace)
        assert handle.pid in network.namespace_pids(host.namespace)
    finally:
        host.kill([handle])


# -- refusals ---------------------------------------------------------------------------------


def test_refuses_a_subnet_another_cluster_uses(clusters):
    subnet = free_subnet()
    first = clusters.make(subnet=subnet)
    with pytest.raises(ClusterConfigError) as refused:
        clusters.make(subnet=subnet)
    message = str(refused.value)
    assert subnet in message and first.bridge in message and first.cluster in message
    assert "subnet" in message and "--backend-option" in message
    wider = str(ipaddress.ip_network(subnet).supernet(new_prefix=16))
    with pytest.raises(ClusterConfigError, match=first.bridge):
        clusters.make(subnet=wider)


def test_refuses_a_subnet_a_machine_route_uses(clusters):
    routes = [r for r in network.ip_json("-4", "route", "show")
              if r.get("dst", "default") != "default" and not r.get("dev", "").startswith(NAME_PREFIX)]
    assert routes, "this machine has no route of its own to collide with"
    used = str(ipaddress.ip_network(routes[0]["dst"], strict=False))
    name = cluster_name()
    with pytest.raises(ClusterConfigError, match="already in use") as refused:
        clusters.make(name, subnet=used)
    assert used in str(refused.value) and routes[0]["dev"] in str(refused.value)
    digest = network.short_hash(name)
    assert not [ns for ns in network.namespaces() if ns.startswith(f"fp-{name}-")]
    assert not [link for link in network.link_names() if digest in link]


def test_refuses_a_cluster_name_already_up(clusters):
    first = clusters.make(subnet=free_subnet())
    with pytest.raises(ClusterConfigError, match=f"{first.bridge}.*fencepost cleanup"):
        clusters.make(first.cluster, subnet=free_subnet().replace(".0/24", ".128/25"))


@pytest.mark.parametrize("options, fragment", [
    ({"subnet": "10.77.0.0/33"}, "not an IPv4 network"),
    ({"subnet": "fd00::/64"}, "not an IPv4 network"),
    ({"subnet": "10.77.0.0/30"}, "choose a larger subnet"),
    ({"subnett": "10.77.0.0/24"}, "unknown netns backend option"),
    ({"subnet": "8.8.8.0/24"}, "not private address space"),
    ({"subnet": "127.0.0.0/24"}, "is loopback"),
])
def test_refuses_bad_options(clusters, options, fragment):
    with pytest.raises(ClusterConfigError, match=fragment):
        clusters.make(**options)


def test_refuses_bad_names(clusters):
    with pytest.raises(ClusterConfigError, match="cluster name"):
        clusters.make("bad/name")
    with pytest.raises(ClusterConfigError, match="repeat"):
        clusters.make(nodes=("n1", "n1"))


def test_refuses_when_tools_are_missing(clusters, tmp_path: Path, monkeypatch):
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    if shutil.which("iptables", path="/usr/sbin") and shutil.which("ip", path="/usr/sbin"):
        # where root's own PATH has them, but this PATH lacks them (a user's PATH through sudo)
        with pytest.raises(ClusterConfigError, match="`ip` and `iptables`, which are in /usr/sbin but not on PATH"):
            clusters.make(subnet="10.77.251.0/24")
    monkeypatch.setattr(netns, "SBIN_FOLDERS", ())  # nowhere at all
    with pytest.raises(ClusterConfigError, match="`ip` .*iproute2.* and `iptables`.*install"):
        clusters.make(subnet="10.77.251.0/24")


def test_refuses_when_not_root(tmp_path: Path):
    # The child drops to nobody after its imports (the interpreter may live where nobody cannot read).
    script = ("import os, sys; from pathlib import Path; from fencepost.clusters.hosts import netns\n"
              "from fencepost.clusters.errors import ClusterConfigError\n"
              "os.setgroups([]); os.setresgid(65534, 65534, 65534); os.setresuid(65534, 65534, 65534)\n"
              "try:\n    netns.provision('tnotroot', ['n1'], Path(sys.argv[1]), {})\n"
              "except ClusterConfigError as e:\n    print(e)\n    sys.exit(7)\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "nobody")], capture_output=True,
                          text=True, cwd=REPO, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 7, done.stderr
    assert "needs root" in done.stdout and "--backend process" in done.stdout
    assert not (tmp_path / "nobody").exists()


# -- nothing left behind ----------------------------------------------------------------------


def spawn_sleepers(hosts: netns.NetnsHostSet) -> list:
    """A process on every node, the first one paused and the second with a cut in place: destroy
    and cleanup must get past both."""
    nodes = list(hosts)
    handles = [host.spawn("sleeper", [host.python, "-c", "import time; time.sleep(600)"],
                          str(Path(host.workdir) / "sleeper.log")) for host in nodes]
    nodes[0].pause(handles[:1])
    nodes[1].cut_off([nodes[0].address])
    return handles


def test_destroy_leaves_nothing_and_is_idempotent(clusters):
    before = snapshot()
    hosts = clusters.make(subnet=free_subnet())
    during = belonging_to(hosts, snapshot())
    assert during["namespaces"] == {h.namespace for h in hosts}
    assert during["links"] == {hosts.bridge, *(h.veth for h in hosts)}
    assert len(during["rules"]) == 1 and f"fencepost:{hosts.bridge}" in next(iter(during["rules"]))
    assert belonging_to(hosts, before) == {"namespaces": set(), "links": set(), "rules": set()}
    handles = spawn_sleepers(hosts)

    hosts.destroy()
    assert all(hosts[h.host].process_state(h) == "gone" for h in handles)
    assert belonging_to(hosts, snapshot()) == {"namespaces": set(), "links": set(), "rules": set()}
    hosts.destroy()
    netns.attach(hosts.state()).destroy()
    assert belonging_to(hosts, snapshot()) == {"namespaces": set(), "links": set(), "rules": set()}


def foreign_fencepost_things(ours: list[netns.NetnsHostSet]) -> list[str]:
    """fp-named things on this machine that are not these clusters' (another engineer's live cluster)."""
    snap = snapshot()
    mine = {kind: set().union(*(belonging_to(h, snap)[kind] for h in ours)) for kind in snap}
    foreign = [ns for ns in snap["namespaces"] - mine["namespaces"] if ns.startswith("fp-")]
    foreign += [link for link in snap["links"] - mine["links"] if link.startswith(("fpb", "fpv"))]
    foreign += [r for r in snap["rules"] - mine["rules"] if "fencepost:" in r]
    return foreign


def test_cleanup_removes_what_a_crashed_cluster_left_and_nothing_else(clusters):
    crashed = [clusters.make(subnet=free_subnet()), clusters.make(nodes=("a", "b"), subnet=free_subnet())]
    handles = [(hosts, handle) for hosts in crashed for handle in spawn_sleepers(hosts)]
    foreign = foreign_fencepost_things(crashed)
    if foreign:
        pytest.skip(f"other fencepost clusters are live on this machine and cleanup() would remove them: {foreign}")
    before = snapshot()
    ours = [belonging_to(hosts, before) for hosts in crashed]
    others_before = {kind: items - set().union(*(mine[kind] for mine in ours)) for kind, items in before.items()}

    removed = netns.cleanup()

    after = snapshot()
    for hosts in crashed:
        assert belonging_to(hosts, after) == {"namespaces": set(), "links": set(), "rules": set()}
        for host in hosts:
            assert any(r.startswith(f"namespace {host.namespace}") for r in removed), removed
            assert f"link {host.veth}" in removed
        assert f"link {hosts.bridge}" in removed
        assert any(r.startswith("iptables rule") and f"fencepost:{hosts.bridge}" in r for r in removed)
    assert len(removed) == sum(2 * len(hosts.hosts) + 2 for hosts in crashed), removed
    assert all(hosts[handle.host].process_state(handle) == "gone" for hosts, handle in handles)
    assert after == others_before, "cleanup removed something not ours"
    assert netns.cleanup() == []


# -- a running dockerd ------------------------------------------------------------------------


@pytest.fixture
def dockerd():
    if not daemon_answers() and shutil.which("dockerd") is None:
        pytest.fail("dockerd is not installed: install docker.io (scripts/provision does)")
    with running_dockerd():
        yield


@pytest.mark.docker
@pytest.mark.slow
def test_nodes_reach_each_other_while_dockerd_runs(dockerd, hosts):
    """dockerd sets the FORWARD policy to DROP and sends bridged frames through iptables; our
    FORWARD rule is what lets nodes talk, as shown by taking it away for a moment."""
    assert "-P FORWARD DROP" in network.run_root(["iptables", "-w", "-S", "FORWARD"]).stdout
    assert Path("/proc/sys/net/bridge/bridge-nf-call-iptables").read_text().strip() == "1"
    listeners = host_contract.start_listeners(hosts)
    try:
        assert all(host_contract.connectivity(hosts).values()), "nodes reach each other with the rule"
        assert network.delete_forward_rules(hosts.bridge)
        without = host_contract.connectivity(hosts)
        assert not any(without.values()), f"without the rule: {host_contract.format_matrix(without)}"
        network.run_root(network.forward_rule(hosts.bridge, "-I"))
        assert all(host_contract.connectivity(hosts).values()), "nodes reach each other with the rule again"
    finally:
        host_contract.stop_listeners(listeners)
