"""What a crash-safety test compares before and after it kills a harness: the machine's global
counts (namespaces, links, iptables rules, marked processes and, where Docker answers,
containers and networks), what of one cluster is still there, the other fencepost clusters
living beside the test, and `fencepost cleanup --cluster NAME`. Shared by the crash-safety
tests (tests/reliability/) and bench/crash_runs.py."""
from __future__ import annotations

import subprocess
import sys

from fencepost.clusters.hosts.docker.node import CLUSTER_LABEL
from fencepost.clusters.hosts.local_process import marked_processes
from fencepost.clusters.hosts.netns import network
from tests.support.docker_daemon import daemon_answers


def machine_counts() -> dict[str, int]:
    def lines(argv: list[str]) -> int:
        done = subprocess.run(argv, capture_output=True, text=True)
        return len([line for line in done.stdout.splitlines() if line.strip()]) if done.returncode == 0 else -1
    counts = {"namespaces": lines(["ip", "netns", "list"]), "links": lines(["ip", "-o", "link"]),
              "iptables rules": lines(["iptables", "-w", "-S"]),
              "marked processes": len(marked_processes())}
    if daemon_answers():
        counts["containers"] = lines(["docker", "ps", "-aq"])
        counts["networks"] = lines(["docker", "network", "ls", "-q"])
    return counts


def leftovers(cluster: str) -> list[str]:
    """What of `cluster` is still on the machine."""
    found = [f"namespace {ns}" for ns in network.namespaces() if network.owned_namespace(ns, [cluster])]
    found += [f"link {name}" for name in network.link_names() if network.owned_link(name, [cluster])]
    found += [f"iptables rule {' '.join(r)}" for r in network.our_rules() if network.owned_rule(r, [cluster])]
    found += [f"marked process {pid}" for pid in marked_processes(cluster)]
    if daemon_answers():
        for kind, argv in (("container", ["docker", "ps", "-aq"]), ("network", ["docker", "network", "ls", "-q"])):
            done = subprocess.run([*argv, "--filter", f"label={CLUSTER_LABEL}={cluster}"],
                                  capture_output=True, text=True)
            found += [f"docker {kind} {line}" for line in done.stdout.split()]
    return found


def others(ours: list[str]) -> tuple[list[str], list[int]]:
    """The namespaces and marked processes of other fencepost clusters (runs beside the suite,
    other tests' fixtures): while they stay the same, the machine's counts may be compared."""
    return ([ns for ns in network.namespaces()
             if network.owned_namespace(ns) and not network.owned_namespace(ns, ours)],
            sorted(pid for pid, cluster in marked_processes().items() if cluster not in ours))


def fencepost_cleanup(cluster: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fencepost.harness.cli", "cleanup", "--cluster", cluster],
                          capture_output=True, text=True, timeout=120)
