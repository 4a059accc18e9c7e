"""The network of a netns cluster in the root namespace: names, addresses and the commands that
make and remove them.

One Linux bridge per cluster carries the subnet's first address; per node a network
namespace `fp-<cluster>-<node>` and a veth pair, `eth0` inside, the other end on the
bridge. Interface names are at most 15 characters, so they come from a hash of the
cluster name (bridge `fpb<6 hex>`, host-side veths `fpv<6 hex><i>`); the bridge's
alias says which cluster it belongs to. A FORWARD rule accepting bridge-to-bridge
traffic, with the comment `fencepost:<bridge>`, keeps a running dockerd (FORWARD
policy DROP, bridged frames through iptables) from dropping traffic between nodes.
Nothing here talks to an address outside the subnet: the nodes get no default route.
"""
from __future__ import annotations

import hashlib
import ipaddress
import json
import re
import shlex
import subprocess
from dataclasses import dataclass
from typing import Collection, Sequence

from fencepost.clusters.errors import ClusterConfigError, HostError
from fencepost.clusters.hosts.base import NAME_PREFIX

DEFAULT_SUBNET = "10.77.0.0/24"
# Where a cluster's subnet may lie: RFC 1918's private blocks, and RFC 2544's block for testing
# networks. Not loopback (a namespace needs routed addresses), not 100.64.0.0/10 (carrier-grade
# NAT, and overlay VPNs give real peers addresses there), nothing public.
PRIVATE_BLOCKS = tuple((ipaddress.IPv4Network(block), source) for block, source in (
    ("10.0.0.0/8", "RFC 1918"), ("172.16.0.0/12", "RFC 1918"), ("192.168.0.0/16", "RFC 1918"),
    ("198.18.0.0/15", "RFC 2544, for testing")))
BRIDGE_PREFIX = f"{NAME_PREFIX}b"
VETH_PREFIX = f"{NAME_PREFIX}v"
NAMESPACE_PREFIX = f"{NAME_PREFIX}-"
RULE_COMMENT_PREFIX = "fencepost:"
ALIAS_PREFIX = "fencepost cluster "
MAX_IFNAME = 15
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
ROOT = "the root namespace"


@dataclass(frozen=True)
class NodeLink:
    """One node's place on the network."""
    node: str
    namespace: str
    veth: str  # the host-side end, on the bridge; the other end is `eth0` in the namespace
    address: str


@dataclass(frozen=True)
class ClusterNetwork:
    cluster: str
    subnet: str
    bridge: str
    bridge_address: str
    nodes: tuple[NodeLink, ...]

    @property
    def prefix_length(self) -> int:
        return ipaddress.ip_network(self.subnet).prefixlen

    @property
    def rule_comment(self) -> str:
        return RULE_COMMENT_PREFIX + self.bridge


def short_hash(cluster: str) -> str:
    return hashlib.sha256(cluster.encode()).hexdigest()[:6]


def check_name(kind: str, name: str) -> None:
    if not NAME_PATTERN.fullmatch(name):
        raise ClusterConfigError(f"{kind} name {name!r} cannot name a network namespace: use letters, "
                                 "digits, '_', '.' and '-', starting with a letter or digit")


def plan(cluster: str, nodes: Sequence[str], subnet: str = DEFAULT_SUBNET) -> ClusterNetwork:
    """The names and addresses of a cluster's network (nothing is made): nodes take the subnet's
    second, third, ... addresses in order, the bridge its first."""
    check_name("cluster", cluster)
    if not nodes:
        raise ClusterConfigError(f"cluster {cluster!r} has no nodes: name at least one")
    for node in nodes:
        check_name("node", node)
    if len(set(nodes)) != len(nodes):
        raise ClusterConfigError(f"node names repeat in {list(nodes)}: give each node its own name")
    network = checked_subnet(subnet)
    usable = network.num_addresses - 2 if network.prefixlen < 31 else network.num_addresses
    if usable < len(nodes) + 1:
        raise ClusterConfigError(f"subnet {subnet} has {usable} host addresses; {len(nodes)} nodes and the "
                                 f"bridge need {len(nodes) + 1}: choose a larger subnet")
    first = int(network.network_address) + (1 if network.prefixlen < 31 else 0)  # the hosts(), not listed
    digest = short_hash(cluster)
    links = tuple(NodeLink(node, f"{NAMESPACE_PREFIX}{cluster}-{node}", f"{VETH_PREFIX}{digest}{i}",
                           str(ipaddress.IPv4Address(first + i + 1)))
                  for i, node in enumerate(nodes))
    assert all(len(link.veth) <= MAX_IFNAME for link in links), "more nodes than veth names"
    return ClusterNetwork(cluster, str(network), f"{BRIDGE_PREFIX}{digest}", str(ipaddress.IPv4Address(first)), links)


def checked_subnet(subnet: str) -> ipaddress.IPv4Network:
    """`subnet` as a network inside one of PRIVATE_BLOCKS (docs/hosts/netns.md says why those):
    ClusterConfigError naming the value and what to give otherwise."""
    try:
        network = ipaddress.IPv4Network(subnet)
    except ValueError as e:
        raise ClusterConfigError(f"subnet {subnet!r} is not an IPv4 network such as {DEFAULT_SUBNET}: {e}") from None
    if private_block(network) is not None:
        return network
    blocks = ", ".join(f"{block} ({source})" for block, source in PRIVATE_BLOCKS)
    if network.overlaps(ipaddress.IPv4Network("127.0.0.0/8")):
        why = ("is loopback: every node is a network namespace with its own loopback, and needs an address "
               "routed over the cluster's bridge")
    else:
        why = ("is not private address space: its addresses may belong to real machines, and test traffic must "
               "reach only the cluster's own nodes")
    raise ClusterConfigError(f"subnet {subnet} {why}; give a subnet inside {blocks}, e.g. {DEFAULT_SUBNET}")


def private_block(network: ipaddress.IPv4Network) -> ipaddress.IPv4Network | None:
    """The block of PRIVATE_BLOCKS holding all of `network`, or None."""
    return next((block for block, _ in PRIVATE_BLOCKS if network.subnet_of(block)), None)


def owned_namespace(name: str, clusters: Collection[str] = ()) -> bool:
    """Whether a namespace is ours to clean up: any `fp-*` when no cluster is named, else
    `fp-<cluster>-<node>` of a named cluster (node names carry no dash, so cluster `a`
    does not claim `fp-a-b-n1` of cluster `a-b`)."""
    if not clusters:
        return name.startswith(NAMESPACE_PREFIX)
    for cluster in clusters:
        head = f"{NAMESPACE_PREFIX}{cluster}-"
        if name.startswith(head) and "-" not in name[len(head):]:
            return True
    return False


def owned_link(name: str, clusters: Collection[str] = ()) -> bool:
    """Whether a link is ours: any `fpb*`/`fpv*` when no cluster is named, else a named
    cluster's bridge or veths (by the hash of its name)."""
    if not clusters:
        return name.startswith((VETH_PREFIX, BRIDGE_PREFIX))
    for digest in map(short_hash, clusters):
        if name == BRIDGE_PREFIX + digest:
            return True
        if name.startswith(VETH_PREFIX + digest) and name[len(VETH_PREFIX + digest):].isdigit():
            return True
    return False


def owned_rule(rule: Sequence[str], clusters: Collection[str] = ()) -> bool:
    """Whether a rule of `our_rules()` belongs to a named cluster (every one when none is named)."""
    if not clusters:
        return True
    comments = {RULE_COMMENT_PREFIX + BRIDGE_PREFIX + short_hash(c) for c in clusters}
    return any(word in comments for word in rule)


# -- commands in the root namespace -----------------------------------------------------------


def run_root(argv: Sequence[str], check: bool = True, timeout: float = 30.0) -> subprocess.CompletedProcess:
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise HostError(f"on {ROOT}: `{argv[0]}` is not installed (running `{shlex.join(argv)}`)") from None
    except subprocess.TimeoutExpired:
        raise HostError(f"on {ROOT}: `{shlex.join(argv)}` did not finish within {timeout:g}s") from None
    if check and done.returncode != 0:
        raise HostError(f"on {ROOT}: `{shlex.join(argv)}` exited {done.returncode}: "
                        f"{(done.stderr or done.stdout).strip()[-2000:]}")
    return done


def ip_json(*args: str) -> list[dict]:
    return json.loads(run_root(["ip", "-j", *args]).stdout or "[]")


def namespaces() -> list[str]:
    return [entry["name"] for entry in ip_json("netns", "list")]


def link_names() -> list[str]:
    return [entry["ifname"] for entry in ip_json("link", "show")]


def link_alias(name: str) -> str:
    found = [entry for entry in ip_json("link", "show") if entry["ifname"] == name]
    return found[0].get("ifalias", "") if found else ""


def forward_rule(bridge: str, action: str) -> list[str]:
    """The FORWARD rule accepting traffic between the bridge's ports; action -I, -C or -D."""
    position = ["1"] if action == "-I" else []
    return ["iptables", "-w", action, "FORWARD", *position, "-i", bridge, "-o", bridge, "-j", "ACCEPT",
            "-m", "comment", "--comment", RULE_COMMENT_PREFIX + bridge]


def build_commands(net: ClusterNetwork) -> list[list[str]]:
    """In order: bridge, then each node's namespace and veth pair, then the FORWARD rule."""
    commands = [
        ["ip", "link", "add", net.bridge, "type", "bridge"],
        ["ip", "link", "set", net.bridge, "alias", ALIAS_PREFIX + net.cluster],
        ["ip", "addr", "add", f"{net.bridge_address}/{net.prefix_length}", "dev", net.bridge],
        ["ip", "link", "set", net.bridge, "up"],
    ]
    for link in net.nodes:
        inside = ["ip", "-n", link.namespace]
        commands += [
            ["ip", "netns", "add", link.namespace],
            ["ip", "link", "add", link.veth, "type", "veth", "peer", "name", "eth0", "netns", link.namespace],
            ["ip", "link", "set", link.veth, "master", net.bridge],
            ["ip", "link", "set", link.veth, "up"],
            [*inside, "link", "set", "lo", "up"],
            [*inside, "addr", "add", f"{link.address}/{net.prefix_length}", "dev", "eth0"],
            [*inside, "link", "set", "eth0", "up"],
        ]
    commands.append(forward_rule(net.bridge, "-I"))
    return commands


def delete_forward_rules(bridge: str) -> bool:
    """Delete every copy of the bridge's FORWARD rule; whether there was one."""
    removed = False
    while run_root(forward_rule(bridge, "-D"), check=False).returncode == 0:
        removed = True
    return removed


def delete_link(name: str) -> bool:
    return run_root(["ip", "link", "del", name], check=False).returncode == 0


def delete_namespace(name: str) -> bool:
    return run_root(["ip", "netns", "del", name], check=False).returncode == 0


def namespace_pids(name: str) -> list[int]:
    done = run_root(["ip", "netns", "pids", name], check=False)
    return [int(pid) for pid in done.stdout.split()] if done.returncode == 0 else []


def our_rules() -> list[list[str]]:
    """Every rule of the root namespace's filter table carrying our comment, as `-A CHAIN ...` argv."""
    rules = []
    for line in run_root(["iptables", "-w", "-S"]).stdout.splitlines():
        words = shlex.split(line)
        if words[:1] == ["-A"] and any(w.startswith(RULE_COMMENT_PREFIX) for w in words):
            rules.append(words)
    return rules


def delete_rule(rule: list[str]) -> bool:
    return run_root(["iptables", "-w", "-D", *rule[1:]], check=False).returncode == 0


# -- is the subnet free? ----------------------------------------------------------------------


def subnet_users(subnet: str) -> list[str]:
    """What on this machine already routes addresses of `subnet` (routes of every table except
    the default route, which overlaps everything), as readable descriptions."""
    wanted = ipaddress.IPv4Network(subnet)
    users = []
    for route in ip_json("-4", "route", "show", "table", "all"):
        dst = route.get("dst", "")
        if dst in ("", "default"):
            continue
        try:
            overlaps = ipaddress.IPv4Network(dst, strict=False).overlaps(wanted)
        except ValueError:
            continue
        if overlaps:
            dev = route.get("dev", "?")
            owner = ""
            if dev.startswith(BRIDGE_PREFIX):
                alias = link_alias(dev)
                owner = f" (our bridge, of {alias[len(ALIAS_PREFIX):] or 'an unknown cluster'})"
            users.append(f"{route.get('type', 'route')} {dst} dev {dev}{owner}")
    return sorted(set(users))
