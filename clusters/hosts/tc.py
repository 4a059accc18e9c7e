"""The tc commands of the netem fault, the same on every backend that has them (netns, docker):
a `netem` qdisc at the root of the node's own interface, which delays, drops, duplicates and
reorders the packets the node sends (its peers' and the clients' packets to it are not touched).
`replace` puts it on or changes it in place; healing deletes it (only when it is a netem: a
root qdisc of anyone else stays)."""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from typing import Any, Callable, Sequence

INTERFACE = "eth0"  # a netns node's and a docker container's interface on the cluster network


def shape(netem: Sequence[str], interface: str = INTERFACE) -> list[str]:
    return ["tc", "qdisc", "replace", "dev", interface, "root", "netem", *netem]


def show(interface: str = INTERFACE) -> list[str]:
    return ["tc", "qdisc", "show", "dev", interface]


def unshape(interface: str = INTERFACE) -> list[str]:
    return ["tc", "qdisc", "del", "dev", interface, "root"]


PROBE_TIMEOUT_S = 10.0
PROBE_INTERFACE = "lo"  # probed on the node's own loopback: nothing of the cluster's traffic


def probe() -> list[list[str]]:
    """Commands that put a netem qdisc on the node's loopback and take it off again: the first
    fails where the kernel has no netem (CONFIG_NET_SCH_NETEM, module sch_netem)."""
    return [shape(["delay", "0ms"], PROBE_INTERFACE), unshape(PROBE_INTERFACE)]


def probe_on(run: Callable[[list[str]], Any]) -> str:
    """Run the probe with `run` (a node's command runner, not raising on failure): "" where netem
    works, else why not (`missing_netem`)."""
    add, remove = probe()
    done = run(add)
    if done.ok:
        run(remove)
        return ""
    return missing_netem(done.stderr or done.stdout)


def missing_netem(stderr: str) -> str:
    """Why netem cannot run, from the probe's error."""
    detail = stderr.strip().splitlines()[-1] if stderr.strip() else "tc failed"
    return (f"this machine's kernel has no netem qdisc ({detail}: CONFIG_NET_SCH_NETEM is not set, or the "
            "sch_netem module cannot be loaded), so the netem fault cannot shape packets here; run it on a "
            "kernel with netem (most distributions load sch_netem on demand)")


def kernel_netem_unavailable() -> str | None:
    """Why this machine's kernel cannot make netem qdiscs, probed once in a network namespace of
    the probe's own (`unshare --net`: it vanishes with the probe, nothing of this machine's
    traffic is touched); None when it can, and None when the probe cannot run here (not root,
    no unshare or tc): a node's own probe then finds out when the fault starts."""
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("tc"):
        return None
    script = " && ".join(["ip link set lo up", *(shlex.join(command) for command in probe())])
    try:
        done = subprocess.run(["unshare", "--net", "sh", "-c", script], capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return None if done.returncode == 0 else missing_netem(done.stderr or done.stdout)


def has_netem(shown: str) -> bool:
    """Whether `tc qdisc show` output lists a netem qdisc."""
    return any(line.split()[:2] == ["qdisc", "netem"] for line in shown.splitlines())
