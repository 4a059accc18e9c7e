"""The tc commands of the netem fault, the same on every backend that has them (netns, docker):
a `netem` qdisc at the root of the node's own interface, which delays, drops, duplicates and
reorders the packets the node sends (its peers' and the clients' packets to it are not touched).
`replace` puts it on or changes it in place; healing deletes it (only when it is a netem: a
root qdisc of anyone else stays)."""
from __future__ import annotations

from typing import Sequence

INTERFACE = "eth0"  # a netns node's and a docker container's interface on the cluster network


def shape(netem: Sequence[str], interface: str = INTERFACE) -> list[str]:
    return ["tc", "qdisc", "replace", "dev", interface, "root", "netem", *netem]


def show(interface: str = INTERFACE) -> list[str]:
    return ["tc", "qdisc", "show", "dev", interface]


def unshape(interface: str = INTERFACE) -> list[str]:
    return ["tc", "qdisc", "del", "dev", interface, "root"]


PROBE_INTERFACE = "lo"  # probed on the node's own loopback: nothing of the cluster's traffic


def probe() -> list[list[str]]:
    """Commands that put a netem qdisc on the node's loopback and take it off again: the first
    fails where the kernel has no netem (CONFIG_NET_SCH_NETEM, module sch_netem)."""
    return [shape(["delay", "0ms"], PROBE_INTERFACE), unshape(PROBE_INTERFACE)]


def missing_netem(stderr: str) -> str:
    """Why netem cannot run, from the probe's error."""
    detail = stderr.strip().splitlines()[-1] if stderr.strip() else "tc failed"
    return (f"this machine's kernel has no netem qdisc ({detail}: CONFIG_NET_SCH_NETEM is not set, or the "
            "sch_netem module cannot be loaded), so the netem fault cannot shape packets here; run it on a "
            "kernel with netem (most distributions load sch_netem on demand)")


def has_netem(shown: str) -> bool:
    """Whether `tc qdisc show` output lists a netem qdisc."""
    return any(line.split()[:2] == ["qdisc", "netem"] for line in shown.splitlines())
