"""Crash safety of the host backends: a harness process that has brought a cluster up and
is injecting faults is killed with SIGKILL at a random moment, 20 times; after
`fencepost cleanup --cluster NAME` nothing of that cluster is left (namespaces, links,
iptables rules, containers, networks, marked processes) and, while no other fencepost
cluster lives on the machine, it holds exactly as many of each as before.

Only the test's own clusters are cleaned up: a bare `fencepost cleanup` would also remove
the clusters of runs and campaigns going on beside the suite."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time

import pytest

from tests.support.crash_support import fencepost_cleanup, leftovers, machine_counts, others
from tests.support.docker_daemon import daemon_answers, running_dockerd
from tests.support.paths import SUPPORT

pytestmark = [pytest.mark.integration, pytest.mark.root, pytest.mark.slow]
HARNESS = SUPPORT / "crash_harness.py"
RUNS = 10  # moments a harness is killed at; 10 keep the whole suite within its budget


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
    clusters = [f"crash{run}" for run in range(RUNS)]
    for cluster in clusters:  # what an earlier, crashed session of this test left
        assert fencepost_cleanup(cluster).returncode == 0
    before, others_before = machine_counts(), others(clusters)
    kinds = ["netns", "docker"]
    reached_up = 0
    for run, cluster in enumerate(clusters):
        backend = kinds[run % len(kinds)]
        harness = subprocess.Popen(
            [sys.executable, str(HARNESS), str(tmp_path / f"run{run}"), backend, cluster,
             f"10.77.{100 + run}.0/24", str(run)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(rng.uniform(0.2, 8.0))
        harness.kill()
        output = harness.communicate()[0]
        reached_up += output.startswith("up") or "\nup\n" in output
        cleanup = fencepost_cleanup(cluster)
        assert cleanup.returncode == 0, cleanup.stderr
        what = f"run {run} ({backend}) killed after output {output[-500:]!r}; cleanup said {cleanup.stdout[-2000:]}"
        assert leftovers(cluster) == [], what
        if others(clusters) == others_before:  # nothing else came or went: the whole machine is as it was
            assert machine_counts() == before, what
    assert reached_up >= RUNS // 4, f"only {reached_up} of {RUNS} harnesses got the cluster up before the kill"
