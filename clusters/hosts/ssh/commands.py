"""The shell scripts the ssh backend sends to a host, built from argv lists.

Every argument is quoted with `shlex.quote`/`shlex.join`, and every script is
wrapped as `sh -c SCRIPT`, so it means the same under whatever login shell the
remote user has. Privileged commands (iptables, kill) get `sudo -n` when asked:
`-n` makes a missing NOPASSWD rule fail at once instead of waiting for a password.

Signals and state checks first confirm that the pid still carries this
cluster's and node's markers (`FENCEPOST_CLUSTER=<cluster>` and
`FENCEPOST_NODE=<node>` in /proc/<pid>/environ): on a real machine a pid from an
old state file may belong to someone else by now, and it is treated as gone
rather than killed.
"""
from __future__ import annotations

import re
import shlex
import signal
from typing import Iterable, Mapping, Sequence

from fencepost.clusters.hosts import iptables
from fencepost.clusters.hosts.base import CLUSTER_ENV, NODE_ENV, state_of_tasks
from fencepost.clusters.processes import ProcessState

KILL_GRACE_S = 5  # after `timeout` sends TERM, how long until it sends KILL
NOT_INSTALLED_STATUS = 127
PREPARE_PYTHON, PREPARE_RIGHTS, PREPARE_WORKDIR = 3, 4, 5  # prepare_script's exit statuses
DESTROY_WAIT_S, DESTROY_POLL_S = 10.0, 0.05
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def wrap(script: str) -> str:
    """The command line sent over SSH: the script run by a POSIX shell."""
    return shlex.join(["sh", "-c", script])


def privileged(argv: Sequence[str], sudo: bool) -> str:
    return shlex.join(["sudo", "-n", *argv] if sudo else list(argv))


def exports(env: Mapping[str, str]) -> str:
    """`export K=V ...;` for the variables (names checked: they are not quoted), or ''."""
    for name in env:
        if not ENV_NAME.fullmatch(name):
            raise ValueError(f"environment variable name {name!r} is not a shell name ([A-Za-z_][A-Za-z0-9_]*)")
    if not env:
        return ""
    return "export " + " ".join(f"{name}={shlex.quote(str(value))}" for name, value in env.items()) + "; "


def run_script(argv: Sequence[str], timeout: float, env: Mapping[str, str] | None = None) -> str:
    """Run argv under coreutils `timeout`, so a command outliving its time dies on the host too."""
    return wrap(exports(env or {}) + shlex.join(["timeout", "-k", str(KILL_GRACE_S), f"{timeout:g}", *argv]))


def spawn_script(argv: Sequence[str], log: str, cwd: str, env: Mapping[str, str]) -> str:
    """Start argv detached (own session, no terminal, output appended to `log`) and print its pid.

    The background job of a non-interactive shell is not a process-group leader, so
    `setsid` does not fork and `$!` is the pid of the program itself once each
    wrapper has exec'd."""
    program, log_dir = shlex.quote(argv[0]), shlex.quote(log.rsplit("/", 1)[0] or "/")
    return wrap(
        f"command -v {program} >/dev/null 2>&1 || {{ echo {shlex.quote(f'{argv[0]}: not found')} >&2; "
        f"exit {NOT_INSTALLED_STATUS}; }}\n"
        f"mkdir -p {log_dir} {shlex.quote(cwd)} && cd {shlex.quote(cwd)} || exit 1\n"
        + exports(env) + "\n"
        + shlex.join(["nohup", "setsid", "sh", "-c", 'exec "$@"', "fencepost-spawn", *argv])
        + f" >>{shlex.quote(log)} 2>&1 </dev/null &\n"
        "echo $!")


def _ours_function(cluster: str, node: str) -> str:
    """Defines `ours PID`, which succeeds while PID is a live process of this cluster's node."""
    cluster_marker = shlex.quote(f"{CLUSTER_ENV}={cluster}")
    node_marker = shlex.quote(f"{NODE_ENV}={node}")
    return (f'ours() {{ grep -qzxF -e {cluster_marker} "/proc/$1/environ" 2>/dev/null && '
            f'grep -qzxF -e {node_marker} "/proc/$1/environ" 2>/dev/null; }}\n')


def state_script(pid: int, cluster: str, node: str) -> str:
    """Prints the stat lines of the pid's threads while the pid is ours; nothing once it is gone."""
    return wrap(_ours_function(cluster, node) + f"if ours {pid}; then cat /proc/{pid}/task/*/stat; fi")


def signal_script(pid: int, cluster: str, node: str, sig: signal.Signals, sudo: bool) -> str:
    """Signals the pid while it is ours; a process gone meanwhile is not an error."""
    kill = privileged(["kill", "-s", sig.name.removeprefix("SIG"), str(pid)], sudo)
    return wrap(_ours_function(cluster, node)
                + f"if ours {pid} && ! err=$(LC_ALL=C {kill} 2>&1); then\n"
                '  case "$err" in *"No such process"*) ;; *) echo "$err" >&2; exit 1 ;; esac\n'
                "fi")


def destroy_script(cluster: str, node: str, recorded: Iterable[int], sudo: bool) -> str:
    """kill -9 the recorded pids that are still ours and every other process carrying the
    node's markers (of those whose environment the user can read: the ones it started),
    wait until they are gone, then remove the FENCEPOST chain. One round trip."""
    cluster_marker = shlex.quote(f"{CLUSTER_ENV}={cluster}")
    kill = "sudo -n kill" if sudo else "kill"
    tries = int(DESTROY_WAIT_S / DESTROY_POLL_S)
    return wrap(
        _ours_function(cluster, node)
        + "pids=\n"
        f"for p in {' '.join(map(str, recorded))} "
        f"$(grep -lzxF -e {cluster_marker} /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do\n"
        '  case " $pids " in *" $p "*) ;; *) ours "$p" && pids="$pids $p" ;; esac\n'
        "done\n"
        "left=$pids; tries=0\n"
        f'if [ -n "$pids" ]; then {kill} -s KILL $pids; fi\n'
        f'while [ -n "$left" ] && [ $tries -lt {tries} ]; do\n'
        f"  sleep {DESTROY_POLL_S:g}; tries=$((tries + 1)); now=\n"
        '  for p in $left; do ours "$p" && now="$now $p"; done\n'
        "  left=$now\n"
        "done\n"
        f'if [ -n "$left" ]; then echo "pid(s)$left outlived kill -9 for {DESTROY_WAIT_S:g}s" >&2; exit 1; fi\n'
        + _remove_chain(sudo))


def parse_stat(stat: str) -> ProcessState:
    """running, stopped or gone from the threads' /proc stat lines ('' = gone)."""
    return state_of_tasks(stat)


def cut_script(peers: Iterable[str], sudo: bool) -> str:
    """Hook the FENCEPOST chain in (unless it is) and append the DROP rules of the peers."""
    make, hook_input, hook_output = (privileged(c, sudo) for c in iptables.ensure_chain())
    rules = [privileged(c, sudo) for c in iptables.cut(peers)]
    return wrap("set -e\n"
                f"if ! {privileged(iptables.chain_ready(), sudo)} 2>/dev/null; then\n"
                f"  {make} 2>/dev/null || true\n  {hook_input}\n  {hook_output}\nfi\n"
                + "\n".join(rules))


def heal_script(sudo: bool) -> str:
    """Flush the chain. When there is none to flush, succeed if iptables itself works
    (so a broken sudo rule still fails loudly)."""
    return wrap(f"{privileged(iptables.heal(), sudo)} 2>/dev/null || "
                f"{privileged(['iptables', '-w', '-S', 'INPUT'], sudo)} >/dev/null")


def _remove_chain(sudo: bool) -> str:
    """Unhook the chain (every jump to it, should there be several) and delete it; fail if it
    is still there afterwards, or if iptables itself cannot be run."""
    unhook_input, unhook_output, flush, delete = (privileged(c, sudo) for c in iptables.remove_chain())
    listing = privileged(iptables.list_rules(), sudo)
    return (f"while {unhook_input} 2>/dev/null; do :; done\n"
            f"while {unhook_output} 2>/dev/null; do :; done\n"
            f"{flush} 2>/dev/null; {delete} 2>/dev/null\n"
            f"if {listing} >/dev/null 2>&1; then echo 'the FENCEPOST chain is still there' >&2; exit 1; fi\n"
            f"{privileged(['iptables', '-w', '-S', 'INPUT'], sudo)} >/dev/null")


def prepare_script(python: str, workdir: str, sudo: bool) -> str:
    """Provision's checks and setup in one round trip; the exit status says which step failed
    (PREPARE_PYTHON, PREPARE_RIGHTS, PREPARE_WORKDIR) and stderr says why."""
    if sudo:
        rights = ("out=$(sudo -n -l iptables 2>&1 >/dev/null) && out=$(sudo -n -l kill 2>&1 >/dev/null) "
                  f'|| {{ echo "$out" >&2; exit {PREPARE_RIGHTS}; }}')
    else:
        rights = f"command -v iptables >/dev/null || {{ echo 'iptables: not found' >&2; exit {PREPARE_RIGHTS}; }}"
    probe = shlex.join(["timeout", "60", python, "-c", "import fencepost.broker"])
    return wrap(f'out=$({probe} 2>&1) || {{ echo "$out" | tail -n 5 >&2; exit {PREPARE_PYTHON}; }}\n'
                f"{rights}\n"
                f"mkdir -p {shlex.quote(workdir)} || exit {PREPARE_WORKDIR}")
