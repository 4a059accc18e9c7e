"""The iptables commands of a partition, the same on every backend that has one.

Cuts live in a chain of our own, `FENCEPOST`, jumped to first from INPUT and
OUTPUT: healing flushes that chain, and cleanup deletes it, without touching
any rule someone else made (this matters on ssh hosts, which are real machines).
A cut of peer P drops packets from P (INPUT) and to P (OUTPUT).
`-w` waits for the xtables lock instead of failing when another iptables runs.
"""
from __future__ import annotations

from typing import Iterable

CHAIN = "FENCEPOST"


def ensure_chain() -> list[list[str]]:
    """Commands that create the chain and its two jumps; run each, ignoring "already exists"
    failures (use `chain_ready()` first to skip them)."""
    return [["iptables", "-w", "-N", CHAIN],
            ["iptables", "-w", "-I", "INPUT", "1", "-j", CHAIN],
            ["iptables", "-w", "-I", "OUTPUT", "1", "-j", CHAIN]]


def chain_ready() -> list[str]:
    """A command that succeeds when the chain is hooked into INPUT already."""
    return ["iptables", "-w", "-C", "INPUT", "-j", CHAIN]


def cut(peers: Iterable[str]) -> list[list[str]]:
    commands = []
    for peer in sorted(set(peers)):
        commands.append(["iptables", "-w", "-A", CHAIN, "-s", peer, "-j", "DROP"])
        commands.append(["iptables", "-w", "-A", CHAIN, "-d", peer, "-j", "DROP"])
    return commands


def uncut(peers: Iterable[str]) -> list[list[str]]:
    """Commands that remove one copy of each rule `cut(peers)` added (each fails harmlessly
    when the rule is gone already, e.g. flushed by a heal)."""
    return [["iptables", "-w", "-D", *command[3:]] for command in cut(peers)]


def heal() -> list[str]:
    return ["iptables", "-w", "-F", CHAIN]


def remove_chain() -> list[list[str]]:
    """Unhook and delete the chain (cleanup); each may fail when already gone."""
    return [["iptables", "-w", "-D", "INPUT", "-j", CHAIN],
            ["iptables", "-w", "-D", "OUTPUT", "-j", CHAIN],
            ["iptables", "-w", "-F", CHAIN],
            ["iptables", "-w", "-X", CHAIN]]


def list_rules() -> list[str]:
    """A command printing the chain's rules (`-S`): what a test compares before and after."""
    return ["iptables", "-w", "-S", CHAIN]
