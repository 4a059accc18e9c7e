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


def has_netem(shown: str) -> bool:
    """Whether `tc qdisc show` output lists a netem qdisc."""
    return any(line.split()[:2] == ["qdisc", "netem"] for line in shown.splitlines())
