"""One own-system cluster of the netns backend for a test module (three brokers, the topic
made), kept healthy between tests, and a probe of which node reaches which."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

from fencepost.clusters.cluster import Cluster, ClusterSpec
from fencepost.clusters.systems.base import TopicSpec
from fencepost.clusters.systems.own import BROKER_PORT, CONTROLLER_PORT
from tests.support import host_contract


def module_cluster(workdir: Path, name: str, subnets: tuple[int, int], topic: str) -> Iterator[Cluster]:
    """A fixture's body: the cluster up on a free subnet of 10.77.`subnets`.0/24, `topic` made;
    down after the module, also on failure."""
    if os.geteuid() != 0:
        pytest.skip("the netns backend needs root")
    spec = ClusterSpec(f"{name}-{os.urandom(2).hex()}", backend="netns",
                       backend_options={"subnet": host_contract.free_subnet(*subnets)})
    made = Cluster.up(spec, workdir)
    try:
        made.create_topic(TopicSpec(topic))
        yield made
    finally:
        made.down()


def healthy_cluster(cluster: Cluster, topic: str) -> Iterator[Cluster]:
    """A fixture's body: every partition led with a full ISR before the test; healed after it,
    also on failure."""
    cluster.recovery.wait_for_full_isr(topic, 60)
    try:
        yield cluster
    finally:
        cluster.heal()
        cluster.recovery.wait_for_full_isr(topic, 60)


def reaches(cluster: Cluster, source: str, destination: str) -> bool:
    """Whether a TCP connection from inside `source` to `destination`'s service port gets through."""
    port = CONTROLLER_PORT if destination in cluster.control_nodes else BROKER_PORT
    probe = (f"import socket\nsocket.create_connection(({cluster.address(destination)!r}, {port}), "
             f"timeout=1.0).close()")
    host = cluster.hosts[source]
    return host.run([host.python, "-c", probe], check=False, timeout=20).ok
