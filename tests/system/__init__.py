"""Tests that run real clusters end to end: `fencepost run`, `fencepost cluster` and campaigns,
stock Kafka releases, the nemesis and the workloads on real clusters, the own broker's
replication scenarios (tests/support/local_cluster.py). Mostly slow; many need root, some Java,
Spark or Docker (see each module's markers)."""
