"""Crash safety of `fencepost run` itself (bench/crash_runs.py): runs kill -9'd at random
moments leave a history `fencepost check` answers for (0/1/2) and nothing after
`fencepost cleanup --cluster`; and the two fixes the measuring led to — cleanup scoped to
one cluster (so a crashed run is cleaned while other clusters run), and final reads
published whole or not at all (a read cut short by a kill looked complete: false lost writes).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import orjson
import pytest

from bench.crash_runs import measure, summary, table
from fencepost.clusters.hosts import netns
from fencepost.clusters.hosts.local_process import marked_processes
from fencepost.clusters.hosts.netns import network
from tests.support.paths import ROOT

RUNS = 10  # the bench does 20 for the published figure; a CI run keeps the suite within its budget


def free_subnet() -> str:
    """A /24 of this module's own range (10.79.200-254; bench/crash_runs.py uses 10.79.1 up)."""
    for third in range(200, 255):
        if not network.subnet_users(f"10.79.{third}.0/24"):
            return f"10.79.{third}.0/24"
    raise AssertionError("no free /24 in 10.79.200.0-10.79.254.255 for a test cluster")


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.root
def test_runs_killed_at_random_moments_stay_checkable_and_clean_up(tmp_path):
    need_root()
    results = measure(runs=RUNS, seed=20261121, workdir=tmp_path)
    report = table(results) + "\n" + summary(results)
    assert len(results) == RUNS, report
    assert not [r for r in results if r.failures], report
    for r in results:
        if r.history_lines is not None:
            assert r.check_exit in (0, 1, 2), report
        assert r.cleanup_exit in (0, None) and not r.leftovers, report
    assert sum(r.killed for r in results) >= RUNS // 2, report
    assert sum(bool(r.history_lines) for r in results) >= RUNS // 4, f"few runs reached traffic:\n{report}"


def test_a_named_cluster_owns_its_own_names_only():
    assert network.owned_namespace("fp-a-n1", ["a"]) and not network.owned_namespace("fp-a-b-n1", ["a"])
    assert network.owned_namespace("fp-a-b-n1", ["a-b"]) and network.owned_namespace("fp-x-n1")
    bridge, veth = network.BRIDGE_PREFIX + network.short_hash("a"), network.VETH_PREFIX + network.short_hash("a")
    assert network.owned_link(bridge, ["a"]) and network.owned_link(veth + "2", ["a"])
    assert not network.owned_link(network.BRIDGE_PREFIX + network.short_hash("a-b"), ["a"])
    assert not network.owned_link("eth0", ["a"]) and not network.owned_link("eth0")
    rule = ["-A", "FORWARD", "-m", "comment", "--comment", f"fencepost:{bridge}", "-j", "ACCEPT"]
    assert network.owned_rule(rule, ["a"]) and not network.owned_rule(rule, ["a-b"]) and network.owned_rule(rule)


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.root
def test_cleanup_of_one_cluster_leaves_the_others_running(tmp_path):
    """Regression: `fencepost cleanup` removed every cluster; `--cluster NAME` removes only NAME's."""
    need_root()
    made = {}
    for name in ("crashed-one", "crashed-one-b"):  # a name that prefixes another must not claim it
        made[name] = netns.provision(name, ["n1", "n2"], tmp_path / name, {"subnet": free_subnet()})
    sleepers = {name: [host.spawn("sleeper", [host.python, "-c", "import time; time.sleep(300)"],
                                  str(tmp_path / f"{name}-{host.name}.log")) for host in hosts]
                for name, hosts in made.items()}
    try:
        done = subprocess.run([sys.executable, "-m", "fencepost.harness.cli", "cleanup", "--cluster", "crashed-one"],
                              capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert done.returncode == 0, done.stderr
        mine, other = made["crashed-one"], made["crashed-one-b"]
        namespaces = set(network.namespaces())
        links = set(network.link_names())
        assert not {h.namespace for h in mine} & namespaces, done.stdout
        assert mine.bridge not in links
        assert {h.namespace for h in other} <= namespaces, done.stdout
        assert other.bridge in links and {h.veth for h in other} <= links
        assert any(f"fencepost:{other.bridge}" in " ".join(r) for r in network.our_rules())
        assert not marked_processes("crashed-one")
        assert all(other[h.host].process_state(h) == "running" for h in sleepers["crashed-one-b"])
    finally:
        for hosts in made.values():
            hosts.destroy()


WRITER = """
import sys
from pathlib import Path
from fencepost.harness.rundir.final_writer import add_final_lines
lines = [b'{"kind":"read","topic":"fp","partition":0,"offset":%d,"value":"0-%d"}' % (i, i) for i in range(200_000)]
print("ready", flush=True)
for k in range(10_000):
    add_final_lines(Path(sys.argv[1]) / f"final{k}.jsonl", lines)
"""


@pytest.mark.integration
@pytest.mark.slow
def test_final_reads_killed_while_written_leave_all_or_nothing(tmp_path):
    """Regression: final reads appended in place, cut by a kill -9, left a partition's read
    short; the checkers took it for complete and reported the writes after the cut lost."""
    for attempt in range(3):
        folder = tmp_path / str(attempt)
        folder.mkdir()
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(folder)], cwd=ROOT, stdout=subprocess.PIPE,
                                  env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert writer.stdout.readline() == b"ready\n"
        time.sleep(0.3 + 0.4 * attempt)
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
        published = sorted(folder.glob("final*.jsonl"))
        for path in published:
            data = path.read_bytes()
            assert data.count(b"\n") == 200_000 and data.endswith(b"\n"), path
            assert orjson.loads(data[data.rindex(b"\n", 0, len(data) - 1) + 1:])["offset"] == 199_999
