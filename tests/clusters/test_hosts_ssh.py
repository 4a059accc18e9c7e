"""The ssh backend (clusters/hosts/ssh/) against real sshd servers inside netns nodes.

tests/support/sshd_support.py starts an sshd in each node of a netns cluster; the ssh
backend connects to their addresses as root with a generated key, so commands
that arrive over SSH run in the node's namespace and partitions are made there.
Beyond the host contract: host-key verification (unknown, changed, hashed
entries, the opt-out), quoting of hostile arguments, the sudo path, the
messages for unreachable nodes and refused keys, reconnection, command
timeouts, pids that are not ours, destroy. Option validation is pure.
"""
from __future__ import annotations

import json
import os
import posixpath
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import paramiko
import pytest

from fencepost.clusters.cluster import Cluster, ClusterSpec
from fencepost.clusters.errors import ClusterConfigError, HostError
from fencepost.clusters.hosts import netns, ssh
from fencepost.clusters.hosts.base import CLUSTER_ENV, ProcessHandle
from fencepost.clusters.hosts.ssh import commands as ssh_commands
from fencepost.clusters.hosts.ssh.options import DEFAULT_WORKDIR, parse_options
from tests.support import host_contract
from tests.support.sshd_support import SSHD, SshdCluster, known_hosts_line, make_key

NODES = ("n1", "n2", "n3")
needs_sshd = [pytest.mark.integration, pytest.mark.root]
# arguments a shell would split, expand, glob or execute if they were not quoted
NASTY = ["two words", "it's", 'say "hi"', "$HOME", "${PATH}", "$(touch {canary})", "`touch {canary}`",
         "a; touch {canary}", "x && touch {canary}", "*", "back\\slash", "new\nline", "", "-n", "tab\there",
         "ünï¢ødé"]


def free_subnet() -> str:
    return host_contract.free_subnet(200, 254)


def cluster_name() -> str:
    return f"fpssh{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory):
    """Three netns nodes, each with its own sshd on port 22 of its address."""
    if os.geteuid() != 0:
        pytest.skip("sshd inside network namespaces needs root")
    if not Path(SSHD).exists():
        pytest.skip(f"{SSHD} is not installed (Debian package openssh-server)")
    root = tmp_path_factory.mktemp("ssh")
    nodes = netns.provision(f"s{uuid.uuid4().hex[:8]}", NODES, root / "netns", {"subnet": free_subnet()})
    cluster = None
    try:
        cluster = SshdCluster(root / "sshd", nodes)
        cluster.start()
        yield cluster
    finally:
        try:
            if cluster is not None:
                cluster.stop()
        finally:
            nodes.destroy()


class Provisioned:
    """ssh clusters made by one test, each destroyed afterwards, also on failure."""

    def __init__(self, servers: SshdCluster, root: Path) -> None:
        self.servers = servers
        self.root = root
        self.made: list[ssh.SshHostSet] = []

    def make(self, nodes=NODES, **options) -> ssh.SshHostSet:
        hosts = ssh.provision(cluster_name(), nodes, self.root, self.servers.options(**options))
        self.made.append(hosts)
        return hosts

    def destroy_all(self) -> None:
        for hosts in self.made:
            hosts.destroy()


@pytest.fixture
def provisioned(servers: SshdCluster, tmp_path: Path):
    made = Provisioned(servers, tmp_path)
    try:
        yield made
    finally:
        made.destroy_all()


@pytest.fixture(scope="module")
def hosts(servers: SshdCluster):
    """One ssh cluster on the servers, shared by the tests that only use its hosts (each
    cleans up what it spawns); tests about provisioning or destroying make their own."""
    made = ssh.provision(cluster_name(), NODES, servers.folder, servers.options())
    try:
        yield made
    finally:
        made.destroy()


def local_pid_alive(pid: int) -> bool:
    """The nodes share this machine's processes: what /proc says here is what they see."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # gone, or going while being read
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def fingerprint(private_key: Path) -> str:
    return paramiko.PKey.from_path(private_key).fingerprint


# -- the host contract ------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.root
class TestContract(host_contract.HostContractTests):
    attach = staticmethod(ssh.attach)

    @pytest.mark.slow
    def test_partition_and_signals_through_sudo(self, provisioned):
        """sudo = true as root: iptables and kill go through `sudo -n`, and work."""
        hosts = provisioned.make(sudo=True)
        assert all(h.options.sudo for h in hosts)
        host_contract.check_partition(hosts)
        host_contract.check_pause(hosts["n3"])
        host_contract.check_kill_restart(hosts["n3"])


# -- provision, state, destroy ----------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.root
def test_provision_connects_to_the_configured_machines(hosts, servers):
    assert list(hosts.hosts) == list(NODES)
    for node, server in servers.nodes.items():
        host = hosts[node]
        assert host.address == server.host.address
        assert host.python == sys.executable
        assert host.workdir == str(servers.folder / "nodes" / hosts.cluster / node)
        assert host.run(["test", "-d", host.workdir]).ok
        # the command ran inside the node: its only non-loopback address is the node's
        shown = host.run(["ip", "-4", "-o", "addr", "show", "dev", "eth0"]).stdout
        assert f" {server.host.address}/" in shown
    state = json.loads(json.dumps(hosts.state()))
    assert state["backend"] == "ssh" and state["options"]["known_hosts"] == str(servers.known_hosts)


@pytest.mark.integration
@pytest.mark.root
def test_hosts_as_a_list_in_node_order(provisioned, servers):
    addresses = [servers.nodes[n].endpoint for n in NODES]
    hosts = provisioned.make(hosts=addresses)
    assert [hosts[n].address for n in NODES] == [servers.nodes[n].host.address for n in NODES]


@pytest.mark.integration
@pytest.mark.root
def test_destroy_kills_spawned_and_marked_processes_and_removes_the_chain(provisioned, servers):
    hosts = provisioned.make()
    n1, n2 = hosts["n1"], hosts["n2"]
    recorded = n1.spawn("sleeper", ["sleep", "600"], posixpath.join(n1.workdir, "sleeper.log"))
    # spawned by a second harness process after the state was saved: found by its marker
    later = ssh.attach(json.loads(json.dumps(hosts.state())))
    stray = later["n2"].spawn("late", ["sleep", "600"], posixpath.join(n2.workdir, "late.log"))
    later.close()
    n1.cut_off([n2.address])
    chain = ["iptables", "-w", "-S", "FENCEPOST"]
    assert servers.nodes["n1"].host.run(chain, check=False).ok
    assert local_pid_alive(recorded.pid) and local_pid_alive(stray.pid)

    hosts.destroy()
    assert not local_pid_alive(recorded.pid)
    assert not local_pid_alive(stray.pid)
    for node in NODES:
        assert not servers.nodes[node].host.run(chain, check=False).ok, f"FENCEPOST chain left on {node}"
    hosts.destroy()  # idempotent: reconnects, finds nothing


@pytest.mark.integration
@pytest.mark.root
def test_a_pid_without_our_marker_is_never_signalled(hosts):
    """On a real machine a pid from an old state may belong to someone else by now."""
    foreign = subprocess.Popen(["sleep", "600"])
    try:
        handle = ProcessHandle("n1", "broker", foreign.pid, "/dev/null")
        assert hosts["n1"].process_state(handle) == "gone"
        hosts["n1"].signal(handle, signal.SIGKILL)
        hosts["n1"].kill([handle])
        assert foreign.poll() is None, "a process without the cluster's marker was killed"
        # nor is a process of this cluster that another node spawned
        other = hosts["n2"].spawn("sleeper", ["sleep", "600"], posixpath.join(hosts["n2"].workdir, "s.log"))
        try:
            hosts["n1"].signal(ProcessHandle("n1", "sleeper", other.pid, other.log), signal.SIGKILL)
            assert hosts["n2"].process_state(other) == "running"
        finally:
            hosts["n2"].kill([other])
    finally:
        foreign.kill()
        foreign.wait()


@pytest.mark.integration
@pytest.mark.root
@pytest.mark.slow
def test_the_own_system_runs_on_ssh_hosts(servers, tmp_path: Path):
    """A Cluster (controller and two brokers) up over SSH: a broker killed and started again,
    its logs collected over SFTP, and down leaves no process of the cluster."""
    endpoints = dict(zip(["controller", "n1", "n2"], (servers.nodes[n].endpoint for n in NODES)))
    spec = ClusterSpec(cluster_name(), "own", 2, "ssh", servers.options(hosts=endpoints), {})
    cluster = Cluster.up(spec, tmp_path / "cluster")
    try:
        assert {n: cluster.node_state(n) for n in cluster.nodes} == dict.fromkeys(endpoints, "running")
        brokers = [endpoint.rsplit(":", 1)[0] for endpoint in cluster.bootstrap.split(",")]
        assert brokers == [servers.nodes[n].host.address for n in ("n2", "n3")]
        cluster.kill("n1")
        assert cluster.node_state("n1") == "down"
        cluster.start("n1")
        assert cluster.node_state("n1") == "running"
        logs = cluster.collect_logs(tmp_path / "logs")
        assert logs and all(path.stat().st_size > 0 for path in logs)
    finally:
        cluster.down()
    assert not processes_with_marker(spec.name)


def processes_with_marker(cluster: str) -> list[int]:
    marker = f"{CLUSTER_ENV}={cluster}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_cleanup_has_no_machines_to_visit():
    assert ssh.cleanup() == []


# -- host keys --------------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.root
def test_unknown_host_is_refused_with_the_fix(provisioned, servers, tmp_path: Path):
    known = tmp_path / "known_hosts"
    n1 = servers.nodes["n1"]
    known.write_text("".join(known_hosts_line(servers.nodes[n].host.address, 22, servers.nodes[n].host_key)
                             for n in ("n2", "n3")))
    with pytest.raises(ClusterConfigError) as refused:
        provisioned.make(known_hosts=str(known))
    message = str(refused.value)
    assert "n1" in message and n1.host.address in message
    assert fingerprint(n1.host_key) in message
    assert f"ssh-keyscan {n1.host.address} >> {known}" in message
    assert "accept_unknown_host_keys" in message


@pytest.mark.integration
@pytest.mark.root
@pytest.mark.parametrize("accept_unknown", [False, True])
def test_changed_host_key_is_refused_even_with_the_opt_out(provisioned, servers, tmp_path: Path,
                                                         accept_unknown: bool):
    impostor = make_key(tmp_path / "impostor", "impostor")
    n2 = servers.nodes["n2"]
    known = tmp_path / "known_hosts"
    known.write_text(servers.known_hosts.read_text().replace(
        known_hosts_line(n2.host.address, 22, n2.host_key), known_hosts_line(n2.host.address, 22, impostor)))
    with pytest.raises(ClusterConfigError) as refused:
        provisioned.make(known_hosts=str(known), accept_unknown_host_keys=accept_unknown)
    message = str(refused.value)
    assert "n2" in message and n2.host.address in message
    assert fingerprint(n2.host_key) in message and fingerprint(impostor) in message
    assert f"ssh-keygen -R '{n2.host.address}' -f {known}" in message


@pytest.mark.integration
@pytest.mark.root
def test_accept_unknown_host_keys_connects_and_writes_nothing(provisioned, tmp_path: Path):
    known = tmp_path / "known_hosts"
    known.write_text("")
    hosts = provisioned.make(known_hosts=str(known), accept_unknown_host_keys=True)
    assert hosts["n3"].run(["echo", "in"]).stdout == "in\n"
    assert known.read_text() == ""


@pytest.mark.integration
@pytest.mark.root
def test_hashed_known_hosts_entries_are_understood(provisioned, servers, tmp_path: Path):
    known = tmp_path / "known_hosts"
    shutil.copyfile(servers.known_hosts, known)
    subprocess.run(["ssh-keygen", "-H", "-f", str(known)], check=True, capture_output=True)
    assert servers.nodes["n1"].host.address not in known.read_text()
    hosts = provisioned.make(known_hosts=str(known))
    assert hosts["n1"].run(["true"]).ok


@pytest.mark.integration
@pytest.mark.root
def test_unusable_lines_are_skipped_and_revoked_keys_refused(provisioned, servers, tmp_path: Path):
    """paramiko's own loader fails a whole file on a @cert-authority line; OpenSSH skips such lines."""
    ca = make_key(tmp_path / "ca", "ca")
    known = tmp_path / "known_hosts"
    known.write_text(f"@cert-authority *.example ssh-ed25519 {(ca.parent / 'ca.pub').read_text().split()[1]}\n"
                     "a line that is not a host key\n" + servers.known_hosts.read_text())
    assert provisioned.make(known_hosts=str(known))["n2"].run(["true"]).ok

    n1 = servers.nodes["n1"]
    revoked = tmp_path / "revoked_hosts"
    revoked.write_text(f"@revoked * {known_hosts_line(n1.host.address, 22, n1.host_key).split(' ', 1)[1]}")
    with pytest.raises(ClusterConfigError) as refused:
        provisioned.make(known_hosts=str(revoked), accept_unknown_host_keys=True)
    assert "n1" in str(refused.value) and "@revoked" in str(refused.value)
    assert fingerprint(n1.host_key) in str(refused.value)


# -- authentication, reachability, connection ---------------------------------------------------


@pytest.mark.integration
@pytest.mark.root
def test_a_key_the_host_does_not_accept_is_refused(provisioned, tmp_path: Path):
    stranger = make_key(tmp_path / "stranger", "stranger")
    with pytest.raises(ClusterConfigError) as refused:
        provisioned.make(key_file=str(stranger))
    message = str(refused.value)
    assert "n1" in message and str(stranger) in message and "authorized_keys" in message


@pytest.mark.integration
@pytest.mark.root
def test_unreachable_node_names_node_address_and_cause(provisioned, servers):
    n2 = servers.nodes["n2"]
    endpoints = {n: s.endpoint for n, s in servers.nodes.items()} | {"n2": f"{n2.host.address}:2222"}
    with pytest.raises(HostError) as unreachable:
        provisioned.make(hosts=endpoints)
    message = str(unreachable.value)
    assert "node n2" in message and f"{n2.host.address}:2222" in message
    assert "Unable to connect to port 2222" in message


@pytest.mark.integration
@pytest.mark.root
def test_a_silent_node_fails_after_connect_timeout(provisioned, servers):
    """The node drops the harness's packets (its namespace cuts the bridge's address off)."""
    n3 = servers.nodes["n3"].host
    harness_side = servers.hosts.net.bridge_address
    n3.cut_off([harness_side])
    try:
        with pytest.raises(HostError) as silent:
            provisioned.make(connect_timeout=1)
    finally:
        n3.heal()
    message = str(silent.value)
    assert "node n3" in message and n3.address in message and "connect_timeout" in message


@pytest.mark.integration
@pytest.mark.root
def test_a_dropped_connection_is_reopened(hosts, servers, tmp_path: Path):
    host = hosts["n1"]
    listener = servers.nodes["n1"].handle.pid
    remote = posixpath.join(host.workdir, "before-drop.txt")
    host.run(["sh", "-c", f"echo sftp > {remote}"])
    for retry in ("a command", "a file transfer"):
        sessions = sshd_children(listener)
        assert sessions, "no sshd process serves the harness's connection"
        for pid in sessions:
            os.kill(pid, signal.SIGKILL)  # children of the sshd this test module started
        host_contract.wait_until(lambda: not any(local_pid_alive(p) for p in sessions), "sshd sessions gone")
        if retry == "a command":
            assert host.run(["echo", "after"]).stdout == "after\n"
        else:
            host.get(remote, tmp_path / "got")
            assert (tmp_path / "got").read_text() == "sftp\n"
        # the dropped connection was replaced by a new one (a new sshd child)
        renewed = sshd_children(listener)
        assert renewed and not set(renewed) & set(sessions)


# Waits until another process has argv[1] as one of its arguments, then SIGKILLs the pids argv[2:].
KILL_WHEN_RUNNING = """\
import os, sys, time
tag, victims = sys.argv[1].encode(), [int(p) for p in sys.argv[2:]]
def running():
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and int(entry) != os.getpid() and \\
                    tag in open(f"/proc/{entry}/cmdline", "rb").read().split(b"\\0"):
                return True
        except OSError:
            pass
while not running():
    time.sleep(0.02)
for pid in victims:
    os.kill(pid, 9)
"""


@pytest.mark.integration
@pytest.mark.root
def test_a_connection_dropping_mid_command_is_an_error_not_a_retry(hosts, servers):
    host = hosts["n2"]
    host.run(["true"])
    sessions = sshd_children(servers.nodes["n2"].handle.pid)
    tag = f"fp-drop-{uuid.uuid4().hex[:8]}"
    killer = subprocess.Popen([sys.executable, "-c", KILL_WHEN_RUNNING, tag, *map(str, sessions)])
    try:
        with pytest.raises(HostError) as dropped:
            host.run([host.python, "-c", "import time; time.sleep(60)", tag], timeout=90)
        message = str(dropped.value)
        assert "node n2" in message and "dropped while running" in message and "may or may not have run" in message
        assert killer.wait(timeout=30) == 0
        assert host.run(["echo", "again"]).stdout == "again\n"
    finally:
        killer.kill()
        killer.wait()
        for pid in processes_with_argument(tag):
            os.kill(pid, signal.SIGKILL)  # the command the dropped session left running


def sshd_children(listener: int) -> list[int]:
    """Pids of the processes the listening sshd forked (one per client connection)."""
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[1]) == listener and fields[0] not in "ZX":
                children.append(int(entry.name))
    return children


# -- commands: quoting, timeouts, missing programs ---------------------------------------------


@pytest.mark.integration
@pytest.mark.root
def test_hostile_arguments_reach_the_command_unchanged(hosts, tmp_path: Path):
    host = hosts["n1"]
    canary = posixpath.join(host.workdir, "canary")
    args = [a.replace("{canary}", canary) for a in NASTY]
    echo = "import json, os, sys; print(json.dumps([sys.argv[1:], os.environ['FP_NASTY']]))"

    result = host.run([host.python, "-c", echo, *args], env={"FP_NASTY": args[5]})
    assert json.loads(result.stdout) == [args, args[5]]

    log = posixpath.join(host.workdir, "it's a $log; `x`", "out.log")
    handle = host.spawn("echo", [host.python, "-c", echo, *args], log, env={"FP_NASTY": args[6]},
                        cwd=posixpath.join(host.workdir, "dir with 'quotes'"))
    host.wait_for_state([handle], {"gone"})
    assert json.loads(host_contract.read_text(host, log)) == [args, args[6]]

    source = tmp_path / "source"
    source.write_text("payload")
    remote = posixpath.join(host.workdir, "$(touch x) dir", "file; name")
    host.put(source, remote)
    host.get(remote, tmp_path / "back")
    assert (tmp_path / "back").read_text() == "payload"
    assert not host.run(["test", "-e", canary], check=False).ok, "an argument was executed by a shell"


@pytest.mark.integration
@pytest.mark.root
def test_a_command_past_its_timeout_is_stopped_on_the_host(hosts):
    host = hosts["n2"]
    tag = f"fp-timeout-{uuid.uuid4().hex[:8]}"
    with pytest.raises(HostError) as late:
        host.run([host.python, "-c", "import time; time.sleep(600)", tag], timeout=1)
    assert "n2" in str(late.value) and "did not finish within 1s" in str(late.value)
    host_contract.wait_until(lambda: not processes_with_argument(tag), "the timed-out command is gone")


def processes_with_argument(argument: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if argument.encode() in (entry / "cmdline").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.integration
@pytest.mark.root
def test_a_missing_program_is_named(hosts):
    host = hosts["n3"]
    with pytest.raises(HostError, match=r"on n3: `fp-no-such-program` is not installed"):
        host.run(["fp-no-such-program", "x"])
    with pytest.raises(HostError, match=r"on n3: `fp-no-such-program` is not installed \(spawning"):
        host.spawn("missing", ["fp-no-such-program"], posixpath.join(host.workdir, "missing.log"))


@pytest.mark.integration
@pytest.mark.root
def test_spawn_returns_the_pid_of_the_program_itself(hosts):
    host = hosts["n1"]
    handle = host.spawn("sleeper", ["sleep", "600"], posixpath.join(host.workdir, "sleeper.log"))
    try:
        # the pid is the program's from the start; its command line is once the wrappers have exec'd
        deadline, cmdline = time.monotonic() + 10, b""
        while time.monotonic() < deadline:
            cmdline = Path(f"/proc/{handle.pid}/cmdline").read_bytes()
            if not cmdline.startswith((b"nohup", b"setsid", b"sh\0")):
                break
            time.sleep(0.05)
        assert cmdline.split(b"\0")[:2] == [b"sleep", b"600"]
        assert os.getsid(handle.pid) == handle.pid, "not in a session of its own"
    finally:
        host.kill([handle])


@pytest.mark.integration
@pytest.mark.root
def test_provision_refuses_a_python_without_the_project(provisioned):
    with pytest.raises(ClusterConfigError) as refused:
        provisioned.make(python="/bin/false")
    assert "n1" in str(refused.value) and "set the ssh option python" in str(refused.value)


# -- options (pure) -----------------------------------------------------------------------------


@pytest.mark.parametrize("options, fragment", [
    ({}, "needs the `hosts` option"),
    ({"hosts": ["a", "b"]}, "lists 2 machine(s) for 3 node(s)"),
    ({"hosts": {"n1": "a", "n2": "b"}}, "no machine for node(s) n3"),
    ({"hosts": {"n1": "a", "n2": "b", "n3": "c", "n9": "d"}}, "names 'n9'"),
    ({"hosts": ["a", "b:99999", "c"]}, "node n2 has 'b:99999'"),
    ({"hosts": 3}, "must be a table"),
    ({"hosts": "a,b"}, "lists 2 machine(s) for 3 node(s)"),
    ({"hosts": ["a", "b", "c"], "sudo": "yes"}, "sudo must be true or false"),
    ({"hosts": ["a", "b", "c"], "accept_unknown_host_keys": 1}, "accept_unknown_host_keys must be true or false"),
    ({"hosts": ["a", "b", "c"], "key_file": "/fp/no/such/key"}, "key_file '/fp/no/such/key': no such file"),
    ({"hosts": ["a", "b", "c"], "known_hosts": "/fp/no/such/known"}, "ssh-keyscan"),
    ({"hosts": ["a", "b", "c"], "workdir": "relative/{node}"}, "must be an absolute path"),
    ({"hosts": ["a", "b", "c"], "workdir": "/x/{host}"}, "may use {cluster} and {node} only"),
    ({"hosts": ["a", "b", "c"], "connect_timeout": 0}, "connect_timeout must be a positive number"),
    ({"hosts": ["a", "b", "c"], "password": "hunter2"}, "unknown ssh backend option(s) password"),
])
def test_bad_options_are_refused_by_name(options, fragment):
    with pytest.raises(ClusterConfigError) as refused:
        parse_options("c1", NODES, options)
    assert fragment in str(refused.value)


def test_option_defaults():
    options, endpoints = parse_options("c1", NODES, {"hosts": ["10.0.0.1", "10.0.0.2:2222", "[fd00::3]:22"]})
    assert endpoints == {"n1": ("10.0.0.1", 22), "n2": ("10.0.0.2", 2222), "n3": ("fd00::3", 22)}
    assert options.user == "root" and options.sudo is False and options.python == "python3"
    assert options.accept_unknown_host_keys is False and options.key_file is None
    assert options.known_hosts == os.path.expanduser("~/.ssh/known_hosts")
    assert options.workdir == DEFAULT_WORKDIR and options.node_workdir("c1", "n2") == "/tmp/fencepost/c1/n2"
    assert parse_options("c1", NODES, {"hosts": ["a", "b", "c"], "user": "kafka"})[0].sudo is True
    assert parse_options("c1", NODES, {"hosts": "a, b:2200,c"})[1] == {"n1": ("a", 22), "n2": ("b", 2200),
                                                                       "n3": ("c", 22)}


def test_a_key_file_that_is_not_a_key_is_refused(tmp_path: Path):
    junk = tmp_path / "junk"
    junk.write_text("not a key\n")
    with pytest.raises(ClusterConfigError, match="is not a private key paramiko can read"):
        parse_options("c1", NODES, {"hosts": ["a", "b", "c"], "key_file": str(junk)})


@pytest.mark.integration
def test_a_key_file_with_a_passphrase_is_refused(tmp_path: Path):
    key = tmp_path / "locked"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "secret", "-f", str(key)], check=True)
    with pytest.raises(ClusterConfigError, match="protected by a passphrase.*ssh-agent"):
        parse_options("c1", NODES, {"hosts": ["a", "b", "c"], "key_file": str(key)})


def test_privileged_commands_go_through_sudo_when_asked():
    for script in (ssh_commands.cut_script(["10.0.0.2"], True), ssh_commands.heal_script(True),
                   ssh_commands.destroy_script("c", "n1", [42], True)):
        before_each_iptables = script.split("iptables")[:-1]
        assert before_each_iptables and all(part.endswith("sudo -n ") for part in before_each_iptables), script
    assert "sudo -n kill -s KILL $pids" in ssh_commands.destroy_script("c", "n1", [42], True)
    assert "sudo -n kill -s STOP 42" in ssh_commands.signal_script(42, "c", "n1", signal.SIGSTOP, True)
    assert "sudo" not in ssh_commands.signal_script(42, "c", "n1", signal.SIGSTOP, False)
