"""One SSH connection to one node (paramiko): connecting, host-key checking, commands, SFTP.

The connection is opened on first use and reused for every command and file
transfer. When it has dropped (the transport is dead), it is reopened once
before a command is sent; a command whose connection drops while it runs is
reported as failed, never re-sent (it may have run). Host keys are checked
against the known_hosts file: an unknown host is refused unless
`accept_unknown_host_keys` (the key is then trusted for this connection only,
never written to the file); a key that differs from the file's is always
refused. Authentication is by key only: the given key file, or else the
ssh-agent and the default keys of ~/.ssh; never a password.

paramiko runs one reader thread per open connection; `close()` ends it.
"""
from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Callable, TypeVar

import paramiko
from paramiko.hostkeys import HostKeyEntry, InvalidHostKey

from fencepost.clusters.errors import ClusterConfigError, HostError
from fencepost.clusters.hosts.ssh.options import SshTarget

T = TypeVar("T")
READ_CHUNK = 65536
POLL_FIRST_S = 0.0005
POLL_MAX_S = 0.02
# paramiko raises these (or subclasses) when the connection underneath is gone
CONNECTION_ERRORS = (paramiko.SSHException, EOFError, OSError)


def _why(error: BaseException) -> str:
    return str(error) or type(error).__name__


def describe_key(key: paramiko.PKey) -> str:
    return f"{key.get_name()} {key.fingerprint}"


def load_known_hosts(path: str, into: paramiko.HostKeys) -> list[paramiko.PKey]:
    """Add the file's host keys to `into`; the keys marked @revoked. Lines paramiko cannot use
    (@cert-authority, unknown key types, garbage) are skipped, as OpenSSH skips what it cannot
    parse, instead of failing the whole file as paramiko's own loader does."""
    try:
        text = Path(path).read_text(errors="replace")
    except FileNotFoundError:
        return []
    except OSError as bad:
        raise ClusterConfigError(f"cannot read the known_hosts file {path}: {bad}") from None
    revoked = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#") or line.startswith("@cert-authority"):
            continue
        marker = line.startswith("@revoked")
        try:
            entry = HostKeyEntry.from_line(line.removeprefix("@revoked").strip(), number)
        except (InvalidHostKey, paramiko.SSHException, ValueError):
            continue
        if entry is None or entry.key is None:
            continue
        if marker:
            revoked.append(entry.key)
        else:
            for name in entry.hostnames:
                into.add(name, entry.key.get_name(), entry.key)
    return revoked


def keyscan(target: SshTarget) -> str:
    """The command that appends the host's keys to the known_hosts file."""
    port = f"-p {target.port} " if target.port != 22 else ""
    return f"ssh-keyscan {port}{target.address} >> {target.known_hosts}"


class _HostKeyCheck(paramiko.MissingHostKeyPolicy):
    """What to do with a host the known_hosts file has no key for."""

    def __init__(self, target: SshTarget, revoked: list[paramiko.PKey]) -> None:
        self.target = target
        self.revoked = revoked

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        if key in self.revoked:
            raise ClusterConfigError(f"refusing node {self.target.node} ({self.target.address}:{self.target.port}):"
                                     f" its host key {describe_key(key)} is marked @revoked in "
                                     f"{self.target.known_hosts}")
        if self.target.accept_unknown_host_keys:
            client.get_host_keys().add(hostname, key.get_name(), key)  # this connection only; not saved
            return
        t = self.target
        raise ClusterConfigError(
            f"refusing node {t.node} ({t.address}:{t.port}): its host key {describe_key(key)} is not in "
            f"{t.known_hosts} (no entry for {hostname}). Check the fingerprint on the machine "
            "(`ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub`), then add it: "
            f"`{keyscan(t)}`; or, on a network you trust, set the ssh "
            "option accept_unknown_host_keys = true")


class SshConnection:
    """The reused SSH connection to one node; `exec` runs a command line, `sftp_call` moves files."""

    def __init__(self, target: SshTarget) -> None:
        self.target = target
        self._client: paramiko.SSHClient | None = None
        self._sftp: paramiko.SFTPClient | None = None
        self._lock = threading.Lock()

    def _unreachable(self, cause: object) -> HostError:
        t = self.target
        return HostError(f"cannot reach node {t.node} over SSH at {t.where}: {cause}")

    def connect(self) -> None:
        """Open the connection if it is not open (verifying the host key and authenticating)."""
        with self._lock:
            if self._client is not None and self._alive():
                return
            self._close_locked()
            self._client = self._open()

    def _open(self) -> paramiko.SSHClient:
        t = self.target
        client = paramiko.SSHClient()
        revoked = load_known_hosts(t.known_hosts, client.get_host_keys())  # never written back
        client.set_missing_host_key_policy(_HostKeyCheck(t, revoked))
        try:
            client.connect(t.address, port=t.port, username=t.user, key_filename=t.key_file,
                           allow_agent=t.key_file is None, look_for_keys=t.key_file is None,
                           timeout=t.connect_timeout, banner_timeout=t.connect_timeout,
                           auth_timeout=t.connect_timeout, password=None)
        except paramiko.BadHostKeyException as bad:
            client.close()
            raise ClusterConfigError(
                f"refusing node {t.node} ({t.address}:{t.port}): it offered host key {describe_key(bad.key)}, "
                f"but {t.known_hosts} has {describe_key(bad.expected_key)} for {t.known_hosts_name}. Someone "
                "may be intercepting the connection, or the machine was reinstalled: if you know it was, "
                f"remove the old key (`ssh-keygen -R '{t.known_hosts_name}' -f {t.known_hosts}`), check the "
                f"new fingerprint on the machine and add it (`{keyscan(t)}`)") from None
        except ClusterConfigError:
            client.close()
            raise
        except paramiko.AuthenticationException as bad:
            client.close()
            key = t.key_file or "the ssh-agent's and ~/.ssh's keys"
            raise ClusterConfigError(
                f"node {t.node} ({t.where}) refused key authentication as {t.user} with {key} ({bad}): add the "
                f"public key to ~{t.user}/.ssh/authorized_keys there, or set the ssh options user / key_file"
            ) from None
        except (socket.timeout, TimeoutError):
            client.close()
            raise self._unreachable(f"no answer within {t.connect_timeout:g}s (connect_timeout)") from None
        except CONNECTION_ERRORS as bad:
            client.close()
            raise self._unreachable(_why(bad)) from None
        return client

    def _alive(self) -> bool:
        transport = self._client.get_transport() if self._client else None
        return transport is not None and transport.is_active()

    def _with_reconnect(self, action: Callable[[paramiko.SSHClient], T], what: str) -> T:
        """`action(client)`, reconnecting once if the connection turns out to have dropped.
        `action` must be safe to repeat after a failure on a dead connection (it sent nothing)."""
        self.connect()
        assert self._client is not None  # connect() made it
        try:
            return action(self._client)
        except CONNECTION_ERRORS as first:
            if self._alive():
                raise HostError(f"on {self.target.node} ({self.target.where}): {what} failed: {first}") from None
        self.close()
        self.connect()
        assert self._client is not None  # connect() made it
        try:
            return action(self._client)
        except CONNECTION_ERRORS as second:
            raise self._unreachable(f"the connection dropped and reconnecting did not help ({what}: "
                                    f"{_why(second)})") from None

    def exec(self, command: str, deadline_s: float, label: str) -> tuple[int, str, str]:
        """Run one command line; (exit status, stdout, stderr). Exit status -1: killed by a
        signal. HostError when it has not ended after `deadline_s` (the channel is closed) or
        the connection drops meanwhile; `label` names the command in messages."""
        def open_session(client: paramiko.SSHClient) -> paramiko.Channel:
            transport = client.get_transport()
            assert transport is not None  # a connected client has its transport
            return transport.open_session(timeout=self.target.connect_timeout)

        channel = self._with_reconnect(open_session, "opening a session")
        try:
            channel.exec_command(command)
            channel.shutdown_write()
            return self._collect(channel, label, deadline_s)
        except CONNECTION_ERRORS as bad:
            raise self._unreachable(f"the connection dropped while running `{label}` (it may or may not "
                                    f"have run): {_why(bad)}") from None
        finally:
            channel.close()

    def _collect(self, channel: paramiko.Channel, label: str, deadline_s: float) -> tuple[int, str, str]:
        out, err = bytearray(), bytearray()
        deadline = time.monotonic() + deadline_s
        pause = POLL_FIRST_S
        while True:
            progressed = False
            while channel.recv_ready():
                out += channel.recv(READ_CHUNK)
                progressed = True
            while channel.recv_stderr_ready():
                err += channel.recv_stderr(READ_CHUNK)
                progressed = True
            finished = channel.exit_status_ready() and (channel.eof_received or channel.closed)
            if finished and not channel.recv_ready() and not channel.recv_stderr_ready():
                break
            if not progressed:
                if time.monotonic() > deadline:
                    raise HostError(f"on {self.target.node}: `{label}` did not end within {deadline_s:g}s")
                if not self._alive():
                    raise EOFError("the connection closed")
                time.sleep(pause)
                pause = min(pause * 2, POLL_MAX_S)
            else:
                pause = POLL_FIRST_S
        status = channel.recv_exit_status()
        if status == -1 and not self._alive():  # paramiko closes the channels of a dead connection
            raise EOFError("the connection closed")
        return status, out.decode("utf-8", errors="replace"), err.decode("utf-8", errors="replace")

    def sftp_call(self, action: Callable[[paramiko.SFTPClient], T], what: str) -> T:
        """`action(sftp)` on the connection's SFTP session (opened once, reused); a connection
        that dropped is reopened once (file transfers are safe to repeat)."""
        def call(client: paramiko.SSHClient) -> T:
            if self._sftp is None:
                self._sftp = client.open_sftp()
            return action(self._sftp)
        return self._with_reconnect(call, what)

    def close(self) -> None:
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        if self._sftp is not None:
            self._sftp.close()
            self._sftp = None
        if self._client is not None:
            self._client.close()
            self._client = None
