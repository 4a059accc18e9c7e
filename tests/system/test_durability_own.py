"""last-replica-standing on the own broker, for real (netns, its data on lazy disks): the
scenario's premise — the leader's power cut takes part of the partition's log — decides what a
run can say. With the own broker's default fsync a second the ISR takes seconds to shrink and the
leader has fsynced its whole log by the cut: the run is valid and says that it tested nothing
(results.json `premise`, `fencepost run`'s summary). With a fsync a minute the cut takes part of
the log, and the own broker, which has no Eligible Leader Replicas, elects the leader again
with its shorter log: acknowledged writes are lost (10 of 10 runs in campaigns/durability.toml).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.durability_support import lazy_run, scenario_info
from tests.support.kafka_support import rechecked
from tests.support.lazyfs_support import needs_fuse

pytestmark = [pytest.mark.integration, pytest.mark.root, pytest.mark.slow]

SUBNET = "10.77.76.0/24"


def run(tmp_path: Path, name: str, system_options: dict) -> tuple[Path, str]:
    """One run of last-replica-standing at 5 s: its run directory and its stdout."""
    if os.geteuid() != 0:
        pytest.skip("the netns backend needs root")
    needs_fuse()
    done = lazy_run(tmp_path, name, "own", SUBNET, "last-replica-standing",
                    [{"at": 5, "action": "start last-replica-standing"}], time_limit=30, system_options=system_options)
    return done.run_dir, done.stdout


def scenario_premise(run_dir: Path) -> dict:
    return scenario_info(run_dir, "last-replica-standing")["premise"]


def test_a_leader_that_fsynced_its_whole_log_tests_nothing_and_the_run_says_so(tmp_path):
    run_dir, out = run(tmp_path, "own-lrs-fsync-a-second", {})
    premise = scenario_premise(run_dir)
    assert premise["met"] is False and "not below the high watermark" in premise["why"], premise
    results = rechecked(run_dir)
    assert results["valid"] is True and results["premise"]["verdict"] == "not-met"
    assert "premise: last-replica-standing (history index" in out and "premise not met" in out


def test_a_leader_that_loses_part_of_its_log_is_elected_again_and_acked_writes_are_lost(tmp_path):
    run_dir, out = run(tmp_path, "own-lrs-fsync-a-minute", {"flush_interval_ms": 60000})
    premise = scenario_premise(run_dir)
    assert premise["met"] is True and "below the high watermark" in premise["why"], premise
    results = rechecked(run_dir)
    assert results["anomaly_counts"].get("lost-write", 0) > 0 and results["premise"]["verdict"] == "met"
    assert "premise:" not in out
