"""Real sshd servers for the ssh backend's tests, one inside each node of a netns cluster.

`SshdCluster(folder, hosts)` generates the keys (a host key per node, a client
key, authorized_keys, a known_hosts file listing every node's host key) and an
sshd_config per node in `folder`, then `start()` spawns `/usr/sbin/sshd -D -e`
on every node through the node's own `Host.spawn` (so sshd listens on the node's
address, and commands that arrive over SSH run in the node's network namespace:
an ssh host's iptables are the namespace's). `options()` is the ssh backend's
configuration for those servers; `stop()` kills the sshd processes.
"""
from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fencepost.clusters.hosts.base import Host, HostSet, ProcessHandle

SSHD = "/usr/sbin/sshd"
PRIVSEP_DIR = Path("/run/sshd")  # sshd refuses to start without it
SSH_PORT = 22
READY_LINE = "Server listening on"
START_TIMEOUT_S = 20.0


def make_key(path: Path, comment: str) -> Path:
    """A new ed25519 key pair without passphrase: `path` (private) and `path.pub`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                   check=True, capture_output=True)
    return path


def public_key(private: Path) -> str:
    """`<type> <base64>` of the key pair's public half (comment dropped)."""
    return " ".join(private.with_name(private.name + ".pub").read_text().split()[:2])


def known_hosts_line(address: str, port: int, private: Path) -> str:
    name = address if port == SSH_PORT else f"[{address}]:{port}"
    return f"{name} {public_key(private)}\n"


def root_account_locked() -> bool:
    """sshd with `UsePAM no` refuses a locked account ('!' password) even for key logins."""
    for line in Path("/etc/shadow").read_text().splitlines():
        if line.startswith("root:"):
            return line.split(":")[1].startswith("!")
    return False


def sshd_config(address: str, port: int, host_key: Path, authorized_keys: Path) -> str:
    # PAM only where root's password is locked (see root_account_locked): PAM's account
    # check does not refuse key logins to such an account
    use_pam = "yes" if root_account_locked() else "no"
    return (f"ListenAddress {address}\nPort {port}\nHostKey {host_key}\n"
            "PermitRootLogin prohibit-password\nPubkeyAuthentication yes\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\n"
            f"AuthorizedKeysFile {authorized_keys}\nStrictModes no\nPidFile none\nUsePAM {use_pam}\n"
            "Subsystem sftp internal-sftp\nPrintMotd no\nLogLevel VERBOSE\n")


@dataclass
class SshdNode:
    host: Host
    host_key: Path
    config: Path
    log: str
    handle: ProcessHandle | None = None

    @property
    def endpoint(self) -> str:
        return f"{self.host.address}:{SSH_PORT}"


class SshdCluster:
    """An sshd per node of `hosts` (a netns HostSet), with the keys and files a client needs."""

    def __init__(self, folder: Path, hosts: HostSet) -> None:
        self.folder = folder
        self.hosts = hosts
        folder.mkdir(parents=True, exist_ok=True)
        self.client_key = make_key(folder / "client_key", "fencepost-test-client")
        self.authorized_keys = folder / "authorized_keys"
        self.authorized_keys.write_text(public_key(self.client_key) + "\n")
        self.nodes: dict[str, SshdNode] = {}
        for host in hosts:
            host_key = make_key(folder / f"host_key_{host.name}", f"fencepost-test-{host.name}")
            config = folder / f"sshd_config_{host.name}"
            config.write_text(sshd_config(host.address, SSH_PORT, host_key, self.authorized_keys))
            self.nodes[host.name] = SshdNode(host, host_key, config, str(folder / f"sshd_{host.name}.log"))
        self.known_hosts = folder / "known_hosts"
        self.known_hosts.write_text("".join(known_hosts_line(n.host.address, SSH_PORT, n.host_key)
                                            for n in self.nodes.values()))

    def start(self) -> None:
        PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
        for node in self.nodes.values():
            node.handle = node.host.spawn("sshd", [SSHD, "-D", "-e", "-f", str(node.config)], node.log)
        for node in self.nodes.values():
            self._wait_ready(node)

    def _wait_ready(self, node: SshdNode) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while READY_LINE not in (text := _read(node.log)):
            if node.host.process_state(node.handle) == "gone" or time.monotonic() > deadline:
                raise RuntimeError(f"sshd on {node.host.name} did not start listening on {node.endpoint}; "
                                   f"its log {node.log}:\n{text[-3000:]}")
            time.sleep(0.02)

    def stop(self) -> None:
        for node in self.nodes.values():
            if node.handle is not None:
                node.host.kill([node.handle])
                node.handle = None

    def options(self, **extra: Any) -> dict[str, Any]:
        """The ssh backend's options for these servers (root, the client key, this known_hosts,
        this interpreter as the remote Python: the nodes share this machine's files)."""
        return {"hosts": {name: node.endpoint for name, node in self.nodes.items()},
                "key_file": str(self.client_key), "known_hosts": str(self.known_hosts),
                "python": sys.executable, "workdir": str(self.folder / "nodes" / "{cluster}" / "{node}"),
                "connect_timeout": 5, **extra}

    def log_text(self, node: str) -> str:
        return _read(self.nodes[node].log)


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except FileNotFoundError:
        return ""
