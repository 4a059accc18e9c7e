"""Crash safety of the host backends: a harness process that has brought a cluster up and
is injecting faults is killed with SIGKILL at a random moment, 20 times; after
`fencepost cleanup` the machine holds exactly as many namespaces, links, iptables
rules, containers, networks and marked processes as before."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clusters.hosts.local_process import marked_processes
from tests.docker_daemon import daemon_answers, running_dockerd

pytestmark = [pytest.mark.integration, pytest.mark.root, pytest.mark.slow]
HARNESS = Path(__file__).with_name("crash_harness.py")
RUNS = 20


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


def fencepost_cleanup() -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", "cleanup"], capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def docker_daemon():
    """The daemon that answers, or one started for this test (and stopped after it)."""
    if not daemon_answers() and shutil.which("dockerd") is None:
        pytest.skip("dockerd is not installed (scripts/provision installs docker.io)")
    with running_dockerd():
        yield


def test_killing_the_harness_at_random_moments_leaves_nothing_after_cleanup(tmp_path, docker_daemon):
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    rng = random.Random(20261121)
    assert fencepost_cleanup().returncode == 0  # what earlier crashed tests left is not this test's
    before = machine_counts()
    kinds = ["netns", "docker"]
    reached_up = 0
    for run in range(RUNS):
        backend = kinds[run % len(kinds)]
        harness = subprocess.Popen(
            [sys.executable, str(HARNESS), str(tmp_path / f"run{run}"), backend, f"crash{run}",
             f"10.77.{100 + run}.0/24", str(run)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(rng.uniform(0.2, 8.0))
        harness.kill()
        output = harness.communicate()[0]
        reached_up += output.startswith("up") or "\nup\n" in output
        cleanup = fencepost_cleanup()
        assert cleanup.returncode == 0, cleanup.stderr
        after = machine_counts()
        assert after == before, (f"run {run} ({backend}) killed after output {output[-500:]!r}; "
                                 f"cleanup said {cleanup.stdout[-2000:]}")
    assert reached_up >= RUNS // 4, f"only {reached_up} of {RUNS} harnesses got the cluster up before the kill"
