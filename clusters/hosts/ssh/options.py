"""The ssh backend's options: validation of what the user wrote, into one typed value.

`parse_options(cluster, nodes, options)` checks every option (a bad or unknown
one is a ClusterConfigError naming it, its value and what to write instead)
and returns `SshOptions` with defaults filled in and paths made absolute, plus
the per-node `SshTarget`s (where to connect, as whom, checking host keys how).
`SshOptions.to_state()` / `from_state()` carry them through `HostSet.state()`.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import paramiko

from fencepost.clusters.errors import ClusterConfigError

DEFAULT_USER = "root"
DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"
DEFAULT_PYTHON = "python3"
DEFAULT_WORKDIR = "/tmp/fencepost/{cluster}/{node}"
DEFAULT_CONNECT_TIMEOUT_S = 10.0
SSH_PORT = 22
OPTION_NAMES = ("hosts", "user", "key_file", "known_hosts", "accept_unknown_host_keys", "sudo",
                "python", "workdir", "connect_timeout")


@dataclass(frozen=True)
class SshTarget:
    """Everything needed to open one node's SSH connection."""
    node: str
    address: str
    port: int
    user: str
    key_file: str | None  # None: the ssh-agent and the default keys of ~/.ssh
    known_hosts: str
    accept_unknown_host_keys: bool
    connect_timeout: float

    @property
    def where(self) -> str:
        """`user@address:port`, as messages name the node's endpoint."""
        return f"{self.user}@{self.address}:{self.port}"

    @property
    def known_hosts_name(self) -> str:
        """The host's name in a known_hosts file: `address`, or `[address]:port` off port 22."""
        return self.address if self.port == SSH_PORT else f"[{self.address}]:{self.port}"


@dataclass(frozen=True)
class SshOptions:
    user: str
    key_file: str | None
    known_hosts: str
    accept_unknown_host_keys: bool
    sudo: bool
    python: str
    workdir: str  # a template with {cluster} and {node}
    connect_timeout: float

    def to_state(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_state(data: Mapping[str, Any]) -> SshOptions:
        return SshOptions(**{name: data[name] for name in SshOptions.__dataclass_fields__})

    def target(self, node: str, address: str, port: int) -> SshTarget:
        return SshTarget(node, address, port, self.user, self.key_file, self.known_hosts,
                         self.accept_unknown_host_keys, self.connect_timeout)

    def node_workdir(self, cluster: str, node: str) -> str:
        return self.workdir.format(cluster=cluster, node=node)


def parse_options(cluster: str, nodes: Sequence[str],
                  options: Mapping[str, Any] | None) -> tuple[SshOptions, dict[str, tuple[str, int]]]:
    """The validated options, and {node: (address, ssh port)} for every node."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(OPTION_NAMES))
    if unknown:
        raise ClusterConfigError(f"unknown ssh backend option(s) {', '.join(unknown)}: "
                                 f"the options are {', '.join(OPTION_NAMES)}")
    if "hosts" not in options:
        raise ClusterConfigError("the ssh backend needs the `hosts` option: a machine for every node, "
                                 'e.g. hosts = {n1 = "10.0.0.11", n2 = "10.0.0.12:2222"}')
    endpoints = _parse_hosts(options["hosts"], nodes)
    user = _text(options, "user", DEFAULT_USER)
    sudo = options.get("sudo", user != "root")
    if not isinstance(sudo, bool):
        raise ClusterConfigError(f"ssh option sudo must be true or false, not {sudo!r}")
    accept = options.get("accept_unknown_host_keys", False)
    if not isinstance(accept, bool):
        raise ClusterConfigError(f"ssh option accept_unknown_host_keys must be true or false, not {accept!r}")
    workdir = _text(options, "workdir", DEFAULT_WORKDIR)
    _check_workdir(workdir, cluster)
    timeout = options.get("connect_timeout", DEFAULT_CONNECT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ClusterConfigError(f"ssh option connect_timeout must be a positive number of seconds, "
                                 f"not {timeout!r}")
    parsed = SshOptions(user=user, key_file=_key_file(options.get("key_file")),
                        known_hosts=_known_hosts(options.get("known_hosts")),
                        accept_unknown_host_keys=accept, sudo=sudo,
                        python=_text(options, "python", DEFAULT_PYTHON), workdir=workdir,
                        connect_timeout=float(timeout))
    return parsed, endpoints


def parse_endpoint(text: str) -> tuple[str, int]:
    """`address`, `address:port`, `[v6 address]` or `[v6 address]:port` -> (address, port)."""
    address, port = text, str(SSH_PORT)
    if text.startswith("["):
        close = text.find("]")
        rest = text[close + 1:]
        if close < 0 or (rest and not rest.startswith(":")):
            raise ValueError("a bracketed address needs its closing ] (then optionally :port)")
        address = text[1:close]
        if rest:
            port = rest[1:]
    elif text.count(":") == 1:
        address, port = text.split(":")
    if not address or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("expected address or address:port with a port from 1 to 65535")
    return address, int(port)


def _parse_hosts(hosts: Any, nodes: Sequence[str]) -> dict[str, tuple[str, int]]:
    if isinstance(hosts, str):  # from the command line: "10.0.0.11,10.0.0.12,10.0.0.13"
        hosts = [part.strip() for part in hosts.split(",")]
    if isinstance(hosts, (list, tuple)):
        if len(hosts) != len(nodes):
            raise ClusterConfigError(f"ssh option hosts lists {len(hosts)} machine(s) for {len(nodes)} node(s) "
                                     f"({', '.join(nodes)}): give one per node, in node order, or a table "
                                     "{node = address}")
        hosts = dict(zip(nodes, hosts))
    if not isinstance(hosts, Mapping):
        raise ClusterConfigError(f"ssh option hosts must be a table {{node = \"address[:port]\"}}, a list of "
                                 f"addresses in node order or a comma-separated string of them, not {hosts!r}")
    strangers = [n for n in hosts if n not in nodes]
    if strangers:
        raise ClusterConfigError(f"ssh option hosts names {', '.join(map(repr, strangers))}, not node(s) of "
                                 f"this cluster: its nodes are {', '.join(nodes)}")
    missing = [n for n in nodes if n not in hosts]
    if missing:
        raise ClusterConfigError(f"ssh option hosts has no machine for node(s) {', '.join(missing)}: "
                                 "give every node an address[:port]")
    endpoints = {}
    for node in nodes:
        value = hosts[node]
        try:
            if not isinstance(value, str):
                raise ValueError("expected a string")
            endpoints[node] = parse_endpoint(value.strip())
        except ValueError as bad:
            raise ClusterConfigError(f"ssh option hosts: node {node} has {value!r}: {bad}") from None
    return endpoints


def _text(options: Mapping[str, Any], name: str, default: str) -> str:
    value = options.get(name, default)
    if not isinstance(value, str) or not value.strip():
        raise ClusterConfigError(f"ssh option {name} must be a non-empty string, not {value!r}")
    return value


def _check_workdir(template: str, cluster: str) -> None:
    try:
        path = template.format(cluster=cluster, node="n1")
    except (KeyError, IndexError, ValueError) as bad:
        raise ClusterConfigError(f"ssh option workdir {template!r} is not a valid template ({bad!r}): "
                                 "it may use {cluster} and {node} only, e.g. /var/tmp/fencepost/{cluster}/{node}"
                                 ) from None
    if not path.startswith("/"):
        raise ClusterConfigError(f"ssh option workdir {template!r} must be an absolute path on the hosts")


def _key_file(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ClusterConfigError(f"ssh option key_file must be the path of a private key file, not {value!r}")
    path = Path(value).expanduser().absolute()
    if not path.is_file():
        raise ClusterConfigError(f"ssh option key_file {value!r}: no such file ({path})")
    try:
        paramiko.PKey.from_path(path)
    except (paramiko.PasswordRequiredException, TypeError) as bad:
        # an OpenSSH-format key with a passphrase fails as TypeError("Key is password-protected, ...")
        if isinstance(bad, TypeError) and "password" not in str(bad).lower():
            raise
        raise ClusterConfigError(f"ssh option key_file {path} is protected by a passphrase, which fencepost "
                                 "does not ask for: load it into ssh-agent and leave key_file unset, or use a "
                                 "key without passphrase") from None
    except (paramiko.SSHException, OSError, ValueError) as bad:
        raise ClusterConfigError(f"ssh option key_file {path} is not a private key paramiko can read: {bad}"
                                 ) from None
    return str(path)


def _known_hosts(value: Any) -> str:
    if value is None:
        return os.path.expanduser(DEFAULT_KNOWN_HOSTS)
    if not isinstance(value, str) or not value:
        raise ClusterConfigError(f"ssh option known_hosts must be the path of a known_hosts file, not {value!r}")
    path = Path(value).expanduser().absolute()
    if not path.is_file():
        raise ClusterConfigError(f"ssh option known_hosts {value!r}: no such file ({path}); create it with "
                                 f"`ssh-keyscan -p PORT ADDRESS >> {path}` for every host (and check the "
                                 "fingerprints), or leave the option unset for ~/.ssh/known_hosts")
    return str(path)
