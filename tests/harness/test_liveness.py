"""Fatal markers in node logs (clusters/systems/markers.py) and the liveness section of
results.json (harness/check/liveness.py): each marker found with its node and partition in lines
copied from real broker logs, ordinary error lines left alone, and `fencepost check` of a run
whose broker halted reporting it as a liveness finding while the verdict stays the checkers'."""
from __future__ import annotations

import shutil

import orjson

from fencepost.clusters.systems.markers import fatal_markers
from fencepost.harness.check.checking import check_run
from fencepost.harness.check.liveness import liveness
from tests.support.paths import EXAMPLES

# Real lines (0.10.2.2's halt, 3.9.1's failed partition, 1.1.1's halt), and ordinary ones.
HALT_0_10 = ("[2026-11-25 21:28:38,091] FATAL [ReplicaFetcherThread-0-1], Exiting because log truncation is not "
             "allowed for partition fp-2, Current leader 1's latest offset 354 is less than replica 3's latest "
             "offset 355 (kafka.server.ReplicaFetcherThread)")
FAILED_3_9 = ("[2026-11-21 10:11:12,345] WARN [ReplicaFetcher replicaId=3, leaderId=1, fetcherId=0] Partition fp-0 "
              "marked as failed (kafka.server.ReplicaFetcherThread)")
APPEND = ("[2026-11-21 10:11:12,340] ERROR [ReplicaFetcher replicaId=3] Unexpected error occurred while "
          "processing data for partition fp-0 at offset 57 (kafka.server.ReplicaFetcherThread)\n"
          "kafka.common.UnexpectedAppendOffsetException: Unexpected offset in append to fp-0. First offset 50 is less "
          "than the next offset 57.")
ORDINARY = ("[2026-11-25 21:28:18,215] ERROR [ReplicaFetcherThread-0-2], Error for partition [fp,0] to broker "
            "2:org.apache.kafka.common.errors.UnknownTopicOrPartitionException: This server does not host this "
            "topic-partition. (kafka.server.ReplicaFetcherThread)\n[2026-11-25 21:28:18,215] INFO starting")


def test_kafka_markers_name_the_node_the_partition_and_whether_the_broker_halts():
    found = fatal_markers("kafka:0.10.2.2", "n3", "\n".join([ORDINARY, HALT_0_10, FAILED_3_9, APPEND]))
    assert [(m.node, m.partition, m.halts) for m in found] == [("n3", "fp-2", True), ("n3", "fp-0", False),
                                                              ("n3", None, False)]
    assert found[0].line == HALT_0_10
    assert fatal_markers("kafka", "n1", ORDINARY) == []


AWAITS_3_9 = ("[2026-11-26 11:41:10,801] INFO [ReplicaFetcher replicaId=1, leaderId=3, fetcherId=0] Partition fp-1 "
              "has an older epoch (0) than the current leader. Will await the new LeaderAndIsr state before "
              "resuming fetching. (kafka.server.ReplicaFetcherThread)")
FAILED_FP_1 = FAILED_3_9.replace("fp-0", "fp-1")


def test_a_partition_failed_while_awaiting_the_controller_is_no_marker_but_a_later_failure_is():
    """3.9.1 under last-replica-standing: a fenced follower marks the partition failed until the next
    LeaderAndIsr (it was back in the ISR within the second). Another partition's failure, or the same
    partition failing again without that wait, still counts."""
    assert fatal_markers("kafka:3.9.1", "n1", "\n".join([AWAITS_3_9, FAILED_FP_1])) == []
    found = fatal_markers("kafka:3.9.1", "n1", "\n".join([AWAITS_3_9, FAILED_3_9, FAILED_FP_1, FAILED_FP_1]))
    assert [m.partition for m in found] == ["fp-0", "fp-1"]  # fp-0 never waited; fp-1's second failure


def test_old_partition_names_in_brackets_are_read_too():
    line = "FATAL [ReplicaFetcherThread-0-1], Exiting because log truncation is not allowed for partition [fp,2], x"
    assert fatal_markers("kafka", "n2", line)[0].partition == "fp-2"


def test_own_broker_markers_are_the_last_lines_of_tracebacks():
    text = ("2026 INFO serving\nTraceback (most recent call last):\n  File \"x.py\", line 1, in f\n    g()\n"
            "ValueError: bad frame\n2026 INFO on\n")
    found = fatal_markers("own", "n1", text)
    assert [(m.line, m.partition) for m in found] == [("ValueError: bad frame", None)]
    assert fatal_markers("own", "n1", HALT_0_10.replace("FATAL", "INFO")) == []


def test_the_liveness_section_reads_every_node_log_of_a_run(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(next(p for p in sorted(EXAMPLES.iterdir()) if (p / "history.jsonl").exists()), run)
    (run / "test.json").write_bytes(orjson.dumps({"name": "halted", "system": "kafka:0.10.2.2"}))
    (run / "nodes" / "n3").mkdir(parents=True)
    (run / "nodes" / "n3" / "broker.log").write_text(ORDINARY + "\n" + HALT_0_10 + "\n")
    (run / "nodes" / "n1").mkdir()
    (run / "nodes" / "n1" / "broker.log").write_text(ORDINARY + "\n")
    section = liveness(run, {"system": "kafka:0.10.2.2"})
    assert section["findings"] == 1 and section["failed_partitions"] == ["n3: fp-2"]
    assert section["verdict"] == "failed" and section["kinds"]["fatal-marker"] == 1
    assert section["fatal_markers"][0] == {"node": "n3", "partition": "fp-2", "line": HALT_0_10, "halts": True,
                                           "log": "nodes/n3/broker.log"}
    before = check_run(run, write=False, out=None)
    assert before.results["liveness"] == section
    (run / "nodes" / "n3" / "broker.log").write_text(ORDINARY + "\n")
    after = check_run(run, write=False, out=None)
    assert after.results["liveness"]["findings"] == 0
    assert after.valid == before.valid  # liveness is beside safety, never part of the verdict


def test_a_run_without_node_logs_has_no_liveness_finding(tmp_path):
    section = liveness(tmp_path, {})
    assert section["verdict"] == "ok" and section["findings"] == 0 and set(section["kinds"].values()) == {0}
    assert section["fatal_markers"] == [] and section["failed_partitions"] == []


# 0.10.2.2 after a power cut (kip101-divergence): the cluster starts the broker again while its
# previous ZooKeeper session still holds /brokers/ids/1; Kafka refuses, the cluster retries.
STARTING_0_10 = "[2026-11-26 14:41:52,672] INFO starting (kafka.server.KafkaServer)"
STILL_REGISTERED = ("[2026-11-26 14:41:53,175] FATAL [Kafka Server 1], Fatal error during KafkaServer startup. Prepare "
                    "to shutdown (kafka.server.KafkaServer)\njava.lang.RuntimeException: A broker is already "
                    "registered on the path /brokers/ids/1. This probably indicates that you either have configured "
                    "a brokerid "
                    "that is already in use, or else you have shutdown this broker and restarted it faster than the "
                    "zookeeper timeout so it appears to be re-registering.\n[2026-11-26 14:41:54,130] FATAL Fatal "
                    "error during KafkaServerStartable startup. Prepare to shutdown "
                    "(kafka.server.KafkaServerStartable)")
STARTED_0_10 = "[2026-11-26 14:41:55,573] INFO [Kafka Server 1], started (kafka.server.KafkaServer)"


def test_a_start_refused_for_a_live_zookeeper_session_is_no_marker_once_a_later_start_succeeds():
    retried = [STARTING_0_10, STARTED_0_10, STARTING_0_10, STILL_REGISTERED, STARTING_0_10, STARTED_0_10]
    assert fatal_markers("kafka:0.10.2.2", "n1", "\n".join(retried)) == []
    never_back = [STARTING_0_10, STARTED_0_10, STARTING_0_10, STILL_REGISTERED]
    assert [m.halts for m in fatal_markers("kafka:0.10.2.2", "n1", "\n".join(never_back))] == [True, True]
    other_fatal = [STARTING_0_10, HALT_0_10, STARTING_0_10, STARTED_0_10]  # a halt, then a restart: still a marker
    assert [m.partition for m in fatal_markers("kafka:0.10.2.2", "n1", "\n".join(other_fatal))] == ["fp-2"]
    both = [STARTING_0_10, STILL_REGISTERED, HALT_0_10, STARTING_0_10, STARTED_0_10]  # a partition's halt stays
    assert [m.partition for m in fatal_markers("kafka:0.10.2.2", "n1", "\n".join(both))] == ["fp-2"]
