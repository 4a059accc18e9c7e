"""A harness process to be killed: brings a cluster up and injects faults in a loop
until it is killed (the crash-safety test kill -9s it at a random moment).

    python tests/support/crash_harness.py DIR BACKEND NAME SUBNET SEED

It prints "up" once the cluster is up, and one line per fault it starts.
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from fencepost.clusters.cluster import Cluster, ClusterSpec  # noqa: E402


def main(directory: str, backend: str, name: str, subnet: str, seed: str) -> None:
    rng = random.Random(int(seed))
    options = {"subnet": subnet} if backend == "netns" else {}
    cluster = Cluster.up(ClusterSpec(name, backend=backend, brokers=3, backend_options=options), Path(directory))
    print("up", flush=True)
    while True:
        node = rng.choice(cluster.broker_nodes)
        fault = rng.choice(["partition", "pause", "kill"])
        print(fault, node, flush=True)
        if fault == "partition":
            others = [n for n in cluster.nodes if n != node]
            cluster.partition({node: others, **{o: [node] for o in others}})
        elif fault == "pause":
            cluster.pause(node)
        else:
            cluster.kill(node)
        cluster.heal()


if __name__ == "__main__":
    main(*sys.argv[1:])
