"""Power cuts on stock Kafka, for real: one run per durability question on a release that shows
the weakness and one on a release (or setting) that does not, each judged by `fencepost check`
on what it recorded, with the nodes' data on lazy disks (flush = "lazy", netns).

- kip101-divergence (KIP-101 scenario 2): 0.10.2.2 (high-watermark truncation) diverges;
  0.11.0.3 (leader epochs) does not.
- last-replica-standing (KIP-966): 3.9.1 loses acknowledged writes; 4.4.0 with Eligible
  Leader Replicas (its default) loses none.
- power-cut:all (correlated loss): with Kafka's default flush acknowledged writes are lost;
  with log.flush.interval.messages=1 none is.

The rates behind these claims are campaigns/durability.toml's (docs/KAFKA.md, "Power cuts and
durability"); a scenario that did not run to its end fails the test rather than passing it.
"""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.support.durability_support import lazy_run, scenario_info
from tests.support.kafka_support import needs_root_and_java, rechecked
from tests.support.lazyfs_support import needs_fuse

pytestmark = [pytest.mark.integration, pytest.mark.java, pytest.mark.root, pytest.mark.slow]

SUBNET = "10.77.75.0/24"


def run(tmp_path: Path, name: str, system: str, fault: str, script: list[dict], *, time_limit: float = 40,
        partitions: int = 3, system_options: dict | None = None) -> Path:
    needs_root_and_java()
    needs_fuse()
    return lazy_run(tmp_path, name, system, SUBNET, fault, script, time_limit=time_limit, partitions=partitions,
                    system_options=system_options).run_dir


def counts(run_dir: Path) -> dict[str, int]:
    return rechecked(run_dir)["anomaly_counts"]


def test_kip101_scenario_2_diverges_replicas_on_0_10_2_and_not_with_leader_epochs_on_0_11(tmp_path):
    script = [{"at": 5, "action": "start kip101-divergence"}]
    old = run(tmp_path, "kip101-0102", "kafka:0.10.2.2", "kip101-divergence", script, partitions=1)
    done = scenario_info(old, "kip101-divergence")
    assert done["new_leader"] != done["leader"] and done["lost"][done["first_back"]]["lost_bytes"] > 0
    assert done["premise"]["met"] is True, done["premise"]
    assert counts(old).get("replica-divergence", 0) > 0
    epochs = run(tmp_path, "kip101-0110", "kafka:0.11.0.3", "kip101-divergence", script, partitions=1)
    done = scenario_info(epochs, "kip101-divergence")
    assert done["new_leader"] != done["leader"] and done["final_leader"] is not None
    assert done["premise"]["met"] is True, done["premise"]  # no divergence although there was a tail to diverge
    results = rechecked(epochs)
    assert results["anomaly_counts"].get("replica-divergence", 0) == 0
    assert results["anomaly_counts"].get("lost-write", 0) > 0  # every replica lost its unsynced tail
    assert results["premise"]["verdict"] == "met"


def test_the_last_replica_standing_loses_acked_writes_on_3_9_and_none_with_eligible_leader_replicas(tmp_path):
    script = [{"at": 5, "action": "start last-replica-standing"}]
    zk = run(tmp_path, "lrs-391", "kafka:3.9.1", "last-replica-standing", script)
    done = scenario_info(zk, "last-replica-standing")
    assert done["new_leader"] == done["leader"]  # the only replica that may lead, with its shorter log
    assert done["premise"]["met"] is True, done["premise"]
    assert counts(zk).get("lost-write", 0) > 0
    elr = run(tmp_path, "lrs-440", "kafka:4.4.0", "last-replica-standing", script,
              system_options={"controllers": 1})
    recorded = orjson.loads((elr / "test.json").read_bytes())["versions"]
    assert recorded["eligible_leader_replicas"] is True  # what was asked: the release's default
    assert recorded["finalized_features"]["eligible.leader.replicas.version"] == 1  # what Kafka says it runs
    done = scenario_info(elr, "last-replica-standing")
    assert done["isr_alone_epoch"] >= 0 and done["lost"]["lost_bytes"] > 0
    assert done["premise"]["met"] is True, done["premise"]  # the leader's cut took part of its log: ELR saved it
    results = rechecked(elr)
    assert results["anomaly_counts"].get("lost-write", 0) == 0 and results["premise"]["verdict"] == "met"


def test_a_power_cut_of_every_broker_loses_acked_writes_unless_kafka_flushes_each_message(tmp_path):
    script = [{"at": 10, "action": "start power-cut:all"}, {"at": 12, "action": "stop"}]
    lazy = run(tmp_path, "all-os", "kafka:3.9.1", "power-cut:all", script, time_limit=25)
    assert counts(lazy).get("lost-write", 0) > 0
    flushed = run(tmp_path, "all-flushed", "kafka:3.9.1", "power-cut:all", script, time_limit=25,
                  system_options={"broker_config": {"log.flush.interval.messages": "1"}})
    done = scenario_info(flushed, "power-cut")
    assert sorted(done["nodes"]) == ["n1", "n2", "n3"] and all(n in done["lost"] for n in done["nodes"])
    assert rechecked(flushed)["valid"] is True
