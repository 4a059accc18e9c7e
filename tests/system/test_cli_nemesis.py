"""`fencepost nemesis start|heal` by hand on a cluster `fencepost cluster up` left running
(netns: partitions are real iptables rules in the nodes' namespaces): each fault is
visible in `cluster status` and in the cluster's nemesis.jsonl, and `heal` undoes all."""
from __future__ import annotations

import os

import orjson
import pytest

from tests.support.cli import fencepost

pytestmark = [pytest.mark.integration, pytest.mark.root, pytest.mark.slow]


@pytest.fixture
def cluster(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the netns backend needs root")
    up = fencepost(tmp_path, "cluster", "up", "--name", "by-hand", "--backend", "netns",
                   "--backend-option", "subnet=10.77.42.0/24")
    assert up.returncode == 0, up.stderr
    try:
        yield tmp_path
    finally:
        fencepost(tmp_path, "cluster", "down", "--name", "by-hand")


def nemesis(cwd, *args):
    return fencepost(cwd, "nemesis", *args, "--cluster", "by-hand")


def status_lines(cwd) -> dict[str, str]:
    out = fencepost(cwd, "cluster", "status", "--name", "by-hand").stdout
    return {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}


def test_faults_by_hand_show_in_status_and_history_and_heal_undoes_them(cluster):
    cut = nemesis(cluster, "start", "partition", "--target", "one", "--seed", "3")
    assert cut.returncode == 0, cut.stderr
    grudge = orjson.loads(cut.stdout.split(": ", 1)[1].splitlines()[0])["grudge"]
    isolated = next(node for node, peers in grudge.items() if len(peers) == 3)
    assert "cut off from" in status_lines(cluster)[isolated]
    paused = nemesis(cluster, "start", "pause", "--target", "controller")
    assert paused.returncode == 0, paused.stderr
    assert " paused " in status_lines(cluster)["controller"]
    killed = nemesis(cluster, "start", "kill", "--seed", "1")
    assert killed.returncode == 0, killed.stderr
    victim = orjson.loads(killed.stdout.split(": ", 1)[1].splitlines()[0])["nodes"][0]
    assert " down " in status_lines(cluster)[victim]

    healed = nemesis(cluster, "heal")
    assert healed.returncode == 0, healed.stderr
    assert "resumed controller" in healed.stdout and f"started {victim}" in healed.stdout
    lines = status_lines(cluster)
    assert all(" running " in line and "cut off" not in line for line in lines.values()), lines

    ops = [orjson.loads(line) for line in
           (cluster / "results" / "clusters" / "by-hand" / "nemesis.jsonl").read_text().splitlines()]
    assert [(op["f"], op["type"]) for op in ops] == [
        ("start-partition", "invoke"), ("start-partition", "info"), ("pause", "invoke"), ("pause", "info"),
        ("kill", "invoke"), ("kill", "info"), ("heal", "invoke"), ("heal", "info")]
    assert [op["index"] for op in ops] == list(range(len(ops)))


def test_faults_the_cluster_cannot_take_exit_254_naming_the_fix(cluster):
    power_cut = nemesis(cluster, "start", "power-cut")
    assert power_cut.returncode == 254 and "--flush lazy" in power_cut.stderr
    sideways = nemesis(cluster, "start", "partition", "--target", "sideways")  # refused by --target's choices
    assert sideways.returncode == 254 and "invalid choice: 'sideways'" in sideways.stderr
    sideways = nemesis(cluster, "start", "partition:sideways")  # by the fault's own spec
    assert sideways.returncode == 254 and "unknown target 'sideways'" in sideways.stderr
    unknown = nemesis(cluster, "start", "meteor")
    assert unknown.returncode == 254 and "meteor" in unknown.stderr
