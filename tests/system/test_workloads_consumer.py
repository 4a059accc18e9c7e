"""The consumer workload against a real own cluster (3 brokers, RF 3, process backend,
flush `lazy`: the brokers' data on lazy disks, so that every broker can be power-cut): subscribe mode records
the subscribe and the group's assignments and checks valid; a position lost under a
consumer (the log it read was cut shorter by a power cut) is reported by librdkafka,
recorded as an assign from the beginning, and reading goes on — the lost writes are
found, and no poll-order anomaly is made up for the consumer's jump back."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from fencepost.clusters.cluster import Cluster, ClusterSpec
from fencepost.clusters.systems.base import TopicSpec
from fencepost.harness.check.checking import check_run
from fencepost.harness.run.scheduler import Lane, Scheduler, plan_processes
from fencepost.harness.rundir.final_writer import add_final_lines
from fencepost.harness.rundir.history import HistoryWriter, Recorder
from fencepost.workloads.consumer import ConsumerOptions, ConsumerWorkload
from fencepost.workloads.final_read import final_read_lines
from fencepost.workloads.producer import ProducerOptions, ProducerWorkload
from tests.support.lazyfs_support import needs_fuse

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.root]  # lazy disks: FUSE mounts

QUIET = {"log_level": 0}
LAZY = {"flush": "lazy", "flush_interval_ms": 600_000}  # no fsync of the logs within a test


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    needs_fuse()
    made = Cluster.up(ClusterSpec("fp-consumer-" + os.urandom(2).hex(), backend="process", system_options=LAZY),
                      tmp_path_factory.mktemp("workloads-consumer"))
    try:
        yield made
    finally:
        made.down()


def history(run_dir: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (run_dir / "history.jsonl").read_bytes().splitlines()]


def polled_since(lines: list[dict[str, Any]], nemesis_f: str) -> set[str]:
    """The values ok polls returned after the nemesis op `nemesis_f` ended."""
    start = max(line["index"] for line in lines if line["f"] == nemesis_f)
    return {r["value"] for line in lines[start:] if line["f"] == "poll" and line["type"] == "ok"
            for r in line["value"]["records"]}


def finish(cluster: Cluster, run_dir: Path, topic: str):
    reads = final_read_lines(cluster.bootstrap, topic, cluster.partitions(topic), 30, QUIET)
    add_final_lines(run_dir / "final.jsonl", [orjson.dumps(line) for line in reads])
    lines, problems = cluster.replica_log_lines(60)
    assert problems == []
    with open(run_dir / "final.jsonl", "ab") as out:
        out.writelines(line + b"\n" for line in lines if orjson.loads(line)["topic"] == topic)
    return check_run(run_dir, out=None, jobs=1)


def test_subscribe_mode_records_the_group_assignments_and_checks_valid(cluster, tmp_path):
    topic = "grouped"
    cluster.create_topic(TopicSpec(topic))
    cluster.recovery.wait_for_full_isr(topic, 30)
    partitions = cluster.partitions(topic)
    plan = plan_processes(10, 2)
    with HistoryWriter(tmp_path / "history.jsonl") as writer:
        recorder = Recorder(writer)
        sends = ProducerWorkload(cluster.bootstrap, recorder, partitions, plan.producers,
                                 ProducerOptions(topic=topic, librdkafka=QUIET))
        polls = ConsumerWorkload(cluster.bootstrap, recorder, partitions, plan.consumers,
                                 ConsumerOptions(topic=topic, mode="subscribe", group="g1", librdkafka=QUIET))
        scheduler = Scheduler([Lane(sends, 100), Lane(polls, polls.poll_rate)])
        scheduler.run(5)
        scheduler.close(10)
    lines = history(tmp_path)
    mine = [line for line in lines if line["process"] in (1000, 1001)]
    subscribes = [line for line in mine if line["f"] == "subscribe"]
    assert [(s["process"], s["type"]) for s in subscribes] == [(1000, "invoke"), (1000, "ok"),
                                                              (1001, "invoke"), (1001, "ok")]
    assert subscribes[0]["value"] == {"topics": [topic]}
    given = [line["value"] for line in mine if line["f"] == "assign" and line["type"] == "ok"]
    assert given and all(set(v["from"]) == {f"{t}-{p}" for t, p in v["partitions"]} for v in given if "from" in v)
    assert {p for v in given for _, p in v["partitions"]} == set(partitions)
    records = [r for line in mine if line["f"] == "poll" and line["type"] == "ok" for r in line["value"]["records"]]
    assert records
    outcome = finish(cluster, tmp_path, topic)
    assert outcome.valid is True, outcome.results["anomaly_counts"]


def test_a_position_lost_in_a_power_cut_is_recorded_and_the_consumer_starts_over(cluster, tmp_path):
    topic = "cut"
    cluster.create_topic(TopicSpec(topic))
    cluster.recovery.wait_for_full_isr(topic, 30)
    partitions = cluster.partitions(topic)
    done: list[tuple[int, str]] = []
    with HistoryWriter(tmp_path / "history.jsonl") as writer:
        recorder = Recorder(writer)
        polls = ConsumerWorkload(cluster.bootstrap, recorder, partitions, [1000],
                                 ConsumerOptions(topic=topic, librdkafka=QUIET))
        sends = ProducerWorkload(cluster.bootstrap, recorder, partitions, range(10),
                                 ProducerOptions(topic=topic, librdkafka=QUIET))
        before = Scheduler([Lane(sends, None)])
        before.run(1)
        before.close(10)
        acked = sum(1 for line in history(tmp_path) if line["f"] == "send" and line["type"] == "ok")
        read = 0
        for _ in range(200):  # until the consumer has read every acked write
            polls.begin(1000, lambda p, t: done.append((p, t)))
            read = sum(len(line["value"]["records"]) for line in history(tmp_path)
                       if line["f"] == "poll" and line["type"] == "ok")
            if read >= acked:
                break
            time.sleep(0.05)
        assert read >= acked > 0
        recorder.nemesis("power-cut", {"nodes": list(cluster.broker_nodes)}, type="invoke")
        for node in cluster.broker_nodes:
            cluster.power_cut(node)
        for node in cluster.broker_nodes:
            cluster.start(node)
        recorder.nemesis("power-cut", {"nodes": list(cluster.broker_nodes)}, type="info")
        cluster.recovery.wait_for_full_isr(topic, 60)

        def started_over() -> bool:
            polls.begin(1000, lambda p, t: done.append((p, t)))
            return any(line["f"] == "assign" and line.get("error") for line in history(tmp_path))

        cluster.wait_for(started_over, 60, "the consumer to report its lost position")
        after = ProducerWorkload(cluster.bootstrap, recorder, partitions, range(10, 20),
                                 ProducerOptions(topic=topic, librdkafka=QUIET))
        for process in range(10, 20):
            after.begin(process, lambda p, t: done.append((p, t)))
        after.close(10)
        new_values = {f"{p}-0" for p in range(10, 20)}
        for _ in range(200):  # until the consumer has read the new writes
            polls.begin(1000, lambda p, t: done.append((p, t)))
            if new_values <= polled_since(history(tmp_path), "power-cut"):
                break
            time.sleep(0.05)
        polls.close(5)
    lines = history(tmp_path)
    restart = next(line for line in lines if line["f"] == "assign" and line.get("error"))
    assert restart["type"] == "ok" and restart["process"] == 1000
    assert restart["value"] == {"partitions": [[topic, p] for p in partitions], "from": "beginning"}
    assert restart["error"].startswith("position lost, starting over: _AUTO_OFFSET_RESET on cut-")
    # the poll that met the lost position ended there, ok; the later polls read the new log
    previous = lines[restart["index"] - 2]
    assert (previous["f"], previous["type"]) == ("poll", "ok")
    assert new_values <= polled_since(lines, "power-cut")
    outcome = finish(cluster, tmp_path, topic)
    counts = {name for name, n in outcome.results["anomaly_counts"].items() if n}
    assert outcome.valid is False and "lost-write" in counts
    assert not counts & {"nonmonotonic-poll", "poll-skip", "int-nonmonotonic-poll", "int-poll-skip"}
