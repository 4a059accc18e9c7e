"""Tests of workloads/ that need no cluster (the workloads against a real cluster: tests/system/)."""
