"""`fencepost cluster up|status|down` and `fencepost cleanup`'s refusals, end to end:
a real own-system cluster started by the CLI, left running, used by a real
confluent-kafka producer (acks=all), inspected and stopped by later commands."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Producer

from fencepost.clusters.hosts.local_process import local_state
from tests.support.cli import fencepost

pytestmark = [pytest.mark.integration]


def acked_send(bootstrap: str, topic: str = "fp", n: int = 3) -> list[int]:
    """Offsets of `n` acks=all sends to partition 0 (raises on any failure)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 20000})
    offsets, errors = [], []

    def report(err, msg):
        (errors.append(err) if err else offsets.append(msg.offset()))
    for i in range(n):
        producer.produce(topic, f"v{i}".encode(), partition=0, on_delivery=report)
    producer.flush(30)
    assert not errors, errors
    return offsets


def pids_of(state_dir: Path) -> list[int]:
    state = orjson.loads((state_dir / "cluster.json").read_bytes())
    return [h["pid"] for roles in state["processes"].values() for h in roles.values()]


def check_up_use_down(tmp_path: Path, name: str, *backend_args: str) -> None:
    up = fencepost(tmp_path, "cluster", "up", "--name", name, "--partitions", "1", *backend_args)
    state_dir = tmp_path / "results" / "clusters" / name
    try:
        assert up.returncode == 0, up.stderr
        bootstrap = re.search(r"bootstrap servers: (\S+)", up.stdout).group(1)
        for node in ("controller", "n1", "n2", "n3"):
            assert re.search(rf"^\s+{node}\s+\S+\s+running", up.stdout, re.M), up.stdout
        assert sorted(acked_send(bootstrap)) == [0, 1, 2]
        again = fencepost(tmp_path, "cluster", "up", "--name", name, *backend_args)
        assert again.returncode == 254 and "is up already" in again.stderr
        status = fencepost(tmp_path, "cluster", "status", "--name", name)
        assert status.returncode == 0 and bootstrap in status.stdout
        assert status.stdout.count("running") == 4, status.stdout
        as_json = fencepost(tmp_path, "cluster", "status", "--name", name, "--format", "json")
        [document] = json.loads(as_json.stdout)
        assert (document["name"], document["bootstrap"]) == (name, bootstrap)
        assert {node: info["state"] for node, info in document["nodes"].items()} == {
            node: "running" for node in ("controller", "n1", "n2", "n3")}
        as_markdown = fencepost(tmp_path, "cluster", "status", "--name", name, "--format", "markdown")
        assert f"**cluster {name}**" in as_markdown.stdout and as_markdown.stdout.count("| running |") == 4
    finally:
        down = fencepost(tmp_path, "cluster", "down", "--name", name)
    assert down.returncode == 0, down.stderr
    assert all(local_state(pid) == "gone" for pid in pids_of(state_dir))
    status = fencepost(tmp_path, "cluster", "status", "--name", name)
    assert status.stdout.count(" down ") == 4, status.stdout


@pytest.mark.slow
def test_up_use_down_on_the_process_backend(tmp_path):
    check_up_use_down(tmp_path, "cli-process", "--backend", "process")


@pytest.mark.slow
@pytest.mark.root
def test_up_use_down_on_the_netns_backend(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the netns backend needs root")
    check_up_use_down(tmp_path, "cli-netns", "--backend", "netns", "--backend-option", "subnet=10.77.41.0/24")


@pytest.mark.parametrize("args, message", [
    (["--nodes", "0"], "--nodes 0"),
    (["--name", "Bad_Name"], "cluster name 'Bad_Name'"),
    (["--backend-option", "subnet"], "KEY=VALUE"),
    (["--system", "cassandra"], "unknown system 'cassandra'"),
    (["--backend", "process", "--backend-option", "subnet=10.0.0.0/24"], "takes no options"),
    (["--replication-factor", "4"], "--replication-factor 4"),
])
def test_bad_up_arguments_exit_254_naming_the_problem(tmp_path, args, message):
    done = fencepost(tmp_path, "cluster", "up", *args)
    assert done.returncode == 254, (done.stdout, done.stderr)
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_status_and_down_of_an_unknown_cluster_say_how_to_start_one(tmp_path):
    for action in ("status", "down"):
        done = fencepost(tmp_path, "cluster", action, "--name", "nothing-here")
        assert done.returncode == 254
        assert "fencepost cluster up --name nothing-here" in done.stderr


def test_a_corrupt_cluster_state_is_named(tmp_path):
    state_dir = tmp_path / "results" / "clusters" / "broken"
    state_dir.mkdir(parents=True)
    (state_dir / "cluster.json").write_text("{not json")
    done = fencepost(tmp_path, "cluster", "status", "--name", "broken")
    assert done.returncode == 254 and "cluster.json is not valid JSON" in done.stderr
