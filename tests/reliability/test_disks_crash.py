"""Crash safety of the lazy disks: a harness that brings a cluster up on lazy disks (flush =
"lazy", netns) and power-cuts its brokers in a loop is killed with SIGKILL at a random moment
while its lazy mounts exist, 10 times (seeded); `fencepost cleanup --cluster NAME` then leaves no
lazy mount, no lazy filesystem daemon, no marked process and no namespace of that cluster."""
from __future__ import annotations

import random
import subprocess
import sys
import time

import pytest

from fencepost.clusters.lazyfs.cleanup import daemons
from fencepost.clusters.lazyfs.mounts import lazy_mounts
from tests.support.crash_support import fencepost_cleanup, leftovers
from tests.support.lazyfs_support import needs_fuse
from tests.support.paths import SUPPORT

pytestmark = [pytest.mark.integration, pytest.mark.root, pytest.mark.slow]
HARNESS = SUPPORT / "disks_crash_harness.py"
RUNS = 10
MOUNTING = "mounting lazy disks"


def test_killing_the_harness_while_lazy_disks_exist_leaves_nothing_after_cleanup(tmp_path):
    needs_fuse()
    rng = random.Random(20261125)
    clusters = [f"diskcrash{run}" for run in range(RUNS)]
    for cluster in clusters:  # what an earlier, crashed session of this test left
        assert fencepost_cleanup(cluster).returncode == 0
    reached_up = 0
    for run, cluster in enumerate(clusters):
        harness = subprocess.Popen(
            [sys.executable, str(HARNESS), str(tmp_path / f"run{run}"), cluster, f"10.77.{120 + run}.0/24", str(run)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = []
        while MOUNTING not in (line := harness.stdout.readline()):  # the first mount is being made
            assert line, f"run {run}: the harness ended before mounting: {''.join(lines)}"
            lines.append(line)
        time.sleep(rng.uniform(0.0, 6.0))
        harness.kill()
        output = "".join(lines) + line + harness.communicate()[0]
        reached_up += "\nup\n" in output
        cleanup = fencepost_cleanup(cluster)
        assert cleanup.returncode == 0, cleanup.stderr
        what = f"run {run} killed after output {output[-500:]!r}; cleanup said {cleanup.stdout[-2000:]}"
        assert lazy_mounts([cluster]) == [], what
        assert daemons([cluster]) == {}, what
        assert leftovers(cluster) == [], what
    assert reached_up >= RUNS // 4, f"only {reached_up} of {RUNS} harnesses got the cluster up before the kill"
