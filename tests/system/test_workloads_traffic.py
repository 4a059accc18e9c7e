"""The producer and consumer workloads driven by the scheduler against a real own
cluster (3 brokers, RF 3, process backend; one per module, a topic per test): a few
seconds of acks=all traffic records a history that checks valid after the final
read and the replica dumps; every invoke has exactly one completion; acks carry
offsets, polls carry offsets and leader epochs; the rate is respected; key mode
sends where librdkafka's partitioner would; sends still pending at close are
`info`; a leader killed mid-run leaves info (or fail) sends and a valid history."""
from __future__ import annotations

import os
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import orjson
import pytest
from confluent_kafka import Producer

from fencepost.clusters.cluster import Cluster, ClusterSpec
from fencepost.clusters.systems.base import TopicSpec
from fencepost.harness.check.checking import CheckOutcome, check_run
from fencepost.harness.run.scheduler import Lane, Scheduler, Snapshot, plan_processes
from fencepost.harness.rundir.final_writer import add_final_lines
from fencepost.harness.rundir.history import HistoryWriter, Recorder
from fencepost.nemesis import heal_cluster, start_fault
from fencepost.workloads.consumer import ConsumerOptions, ConsumerWorkload
from fencepost.workloads.final_read import final_read_lines
from fencepost.workloads.producer import ProducerOptions, ProducerWorkload

pytestmark = [pytest.mark.integration, pytest.mark.slow]

QUIET = {"log_level": 0}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    made = Cluster.up(ClusterSpec("fp-workloads-" + os.urandom(2).hex(), backend="process"),
                      tmp_path_factory.mktemp("workloads-traffic"))
    try:
        yield made
    finally:
        made.down()


def new_topic(cluster: Cluster, name: str) -> list[int]:
    cluster.create_topic(TopicSpec(name))
    cluster.recovery.wait_for_full_isr(name, 30)
    return cluster.partitions(name)


def drive(cluster: Cluster, run_dir: Path, topic: str, *, rate: float | None, seconds: float,
          concurrency: int = 10, consumers: int = 1, mode: str = "assign", producer: ProducerOptions | None = None,
          during: Callable[[Recorder], None] | None = None, close_timeout: float = 15.0) -> Snapshot:
    """Traffic for `seconds` into run_dir/history.jsonl; `during(recorder)` runs in a thread
    one second in (a fault), is joined before the run closes, and is healed (recorded) after."""
    run_dir.mkdir(parents=True, exist_ok=True)
    partitions = cluster.partitions(topic)
    plan = plan_processes(concurrency, consumers)
    options = producer or ProducerOptions(topic=topic, librdkafka=QUIET)
    with HistoryWriter(run_dir / "history.jsonl") as writer:
        recorder = Recorder(writer)
        sends = ProducerWorkload(cluster.bootstrap, recorder, partitions, plan.producers, options, seed=5)
        lanes = [Lane(sends, rate)]
        if consumers:
            polls = ConsumerWorkload(cluster.bootstrap, recorder, partitions, plan.consumers,
                                     ConsumerOptions(topic=topic, mode=mode, librdkafka=QUIET))
            lanes.append(Lane(polls, polls.poll_rate))
        scheduler = Scheduler(lanes, seed=5)
        fault = threading.Timer(1.0, during, (recorder,)) if during else None
        if fault:
            fault.start()
        try:
            scheduler.run(seconds)
        finally:
            if fault:
                fault.join()
            try:
                snapshot = scheduler.close(close_timeout)
            finally:
                if fault:
                    heal_cluster(cluster, recorder)
    return snapshot


def finish(cluster: Cluster, run_dir: Path, topic: str) -> CheckOutcome:
    """Final read, the replica dumps of this topic, and the check."""
    reads = final_read_lines(cluster.bootstrap, topic, cluster.partitions(topic), 30, QUIET)
    add_final_lines(run_dir / "final.jsonl", [orjson.dumps(line) for line in reads])
    lines, problems = cluster.replica_log_lines(60)
    assert problems == []
    with open(run_dir / "final.jsonl", "ab") as out:
        for line in lines:
            if orjson.loads(line)["topic"] == topic:
                out.write(line + b"\n")
    return check_run(run_dir, out=None, jobs=1)


def history(run_dir: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (run_dir / "history.jsonl").read_bytes().splitlines()]


def completions(lines: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(invoke, completion) of every client op; asserts each invoke has exactly one completion."""
    open_ops: dict[int, dict[str, Any]] = {}
    pairs = []
    for line in lines:
        if line["process"] == "nemesis":
            continue
        if line["type"] == "invoke":
            assert line["process"] not in open_ops, f"second invoke while one is open: {line}"
            open_ops[line["process"]] = line
        else:
            invoke = open_ops.pop(line["process"])
            assert invoke["f"] == line["f"]
            pairs.append((invoke, line))
    assert open_ops == {}, f"invokes never completed: {list(open_ops.values())[:3]}"
    return pairs


def test_traffic_at_a_rate_records_a_history_that_checks_valid(cluster, tmp_path):
    topic = "steady"
    new_topic(cluster, topic)
    snapshot = drive(cluster, tmp_path, topic, rate=150, seconds=4, concurrency=20, consumers=2)
    pairs = completions(history(tmp_path))
    sends = [(i, c) for i, c in pairs if i["f"] == "send"]
    polls = [(i, c) for i, c in pairs if i["f"] == "poll"]
    # the rate, in a generous band (the first sends wait for the producer's metadata)
    assert 150 * 4 * 0.7 <= len(sends) <= 150 * 4 * 1.1
    assert snapshot.lanes[0].invoked == len(sends) and snapshot.pending == 0
    assert {c["type"] for _, c in sends} == {"ok"}
    for invoke, ok in sends:
        process, seq = invoke["value"]["value"].split("-")
        assert int(process) == invoke["process"] < 20
        assert ok["value"]["offset"] >= 0 and "leader_epoch" in ok["value"]
    # one value per send, each process's values in sequence
    values = [i["value"]["value"] for i, _ in sends]
    assert len(set(values)) == len(values)
    # round-robin over the partitions
    assert set(Counter(i["value"]["partition"] for i, _ in sends).values()) <= {len(sends) // 3, len(sends) // 3 + 1}
    # consumers 1000 and 1001 assigned from the beginning, then polls with records and leader epochs
    assigns = [i for i, _ in pairs if i["f"] == "assign"]
    assert sorted(a["process"] for a in assigns) == [1000, 1001]
    assert all(a["value"]["from"] == "beginning" and len(a["value"]["partitions"]) == 3 for a in assigns)
    records = [r for _, c in polls for r in c["value"]["records"]]
    assert len(polls) > 40 and {c["type"] for _, c in polls} == {"ok"}
    assert all(type(r["leader_epoch"]) is int and r["topic"] == topic for r in records)
    assert {r["value"] for r in records} <= set(values)
    outcome = finish(cluster, tmp_path, topic)
    assert outcome.valid is True, outcome.results["anomaly_counts"]
    assert outcome.results["checked"]["ops"] >= len(pairs)


def test_key_mode_sends_where_librdkafkas_partitioner_would(cluster, tmp_path):
    topic = "keyed"
    new_topic(cluster, topic)
    drive(cluster, tmp_path, topic, rate=None, seconds=1, consumers=0,
          producer=ProducerOptions(topic=topic, partition_choice="key", librdkafka=QUIET))
    sends = [(i, c) for i, c in completions(history(tmp_path)) if i["f"] == "send"]
    assert len(sends) > 50
    # the same keys through librdkafka's own default partitioner
    chosen: dict[str, int] = {}
    bare = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", **QUIET})
    for invoke, _ in sends:
        key = invoke["value"]["value"].encode()
        bare.produce(topic, b"x", key=key, on_delivery=lambda err, m: chosen.__setitem__(m.key().decode(),
                                                                                          m.partition()))
    assert bare.flush(30) == 0
    assert {i["value"]["value"]: i["value"]["partition"] for i, _ in sends} == chosen
    assert len(set(chosen.values())) == 3
    assert {c["type"] for _, c in sends} == {"ok"}


def test_sends_still_pending_at_close_are_info(cluster, tmp_path):
    topic = "stalled"
    new_topic(cluster, topic)
    drive(cluster, tmp_path, topic, rate=100, seconds=2.5, consumers=0, close_timeout=0.5,
          during=lambda recorder: start_fault(cluster, "pause:leader", recorder, topic=topic, partition=0),
          producer=ProducerOptions(topic=topic, message_timeout_ms=60_000, request_timeout_ms=30_000,
                                   librdkafka=QUIET))
    pairs = completions(history(tmp_path))
    unknown = [(i, c) for i, c in pairs if i["f"] == "send" and c["type"] == "info"]
    assert unknown, "no send was left pending by the paused leader"
    assert all(c["error"] == "no delivery report within 0.5s of closing the producer" for _, c in unknown)
    # every partition stalls (acks=all waits for the paused follower too), each process with
    # its one send in flight
    assert sorted(i["process"] for i, _ in unknown) == list(range(10))
    cluster.recovery.wait_for_full_isr(topic, 60)
    outcome = finish(cluster, tmp_path, topic)
    assert outcome.valid is True, outcome.results["anomaly_counts"]


def test_a_leader_killed_mid_run_leaves_unknown_sends_and_a_valid_history(cluster, tmp_path):
    topic = "killed"
    new_topic(cluster, topic)
    drive(cluster, tmp_path, topic, rate=150, seconds=8, concurrency=20, consumers=1,
          during=lambda recorder: start_fault(cluster, "kill:leader", recorder, topic=topic, partition=1),
          producer=ProducerOptions(topic=topic, message_timeout_ms=3000, request_timeout_ms=2000,
                                   librdkafka=QUIET))
    lines = history(tmp_path)
    pairs = completions(lines)
    nemesis = [line["f"] for line in lines if line["process"] == "nemesis"]
    assert nemesis == ["kill", "kill", "heal", "heal"]
    killed_at = next(line["time"] for line in lines if line["f"] == "kill" and line["type"] == "info")
    sends = [(i, c) for i, c in pairs if i["f"] == "send"]
    # acks=all waits for the dead broker (a follower of the other partitions) until the ISR
    # drops it, longer than the request timeout: the sends in flight then are unknown
    assert sum(c["type"] in ("info", "fail") for _, c in sends) > 0, Counter(c["type"] for _, c in sends)
    later = Counter(i["value"]["partition"] for i, c in sends if c["type"] == "ok" and i["time"] > killed_at)
    assert set(later) == {0, 1, 2}  # and the traffic went on everywhere
    cluster.recovery.wait_for_full_isr(topic, 60)
    outcome = finish(cluster, tmp_path, topic)
    assert outcome.valid is True, outcome.results["anomaly_counts"]


def test_sends_refused_for_want_of_replicas_are_unknown(cluster, tmp_path):
    """NOT_ENOUGH_REPLICAS is given before the append, but librdkafka may be re-sending a batch an
    earlier attempt appended (it re-sends after a leader change without counting a retry): info."""
    topic = "lonely"
    new_topic(cluster, topic)
    survivor = cluster.partition_view(topic, 0).leader

    def kill_the_others(recorder: Recorder) -> None:
        others = [n for n in cluster.broker_nodes if n != survivor]
        recorder.nemesis("kill", {"nodes": others}, type="invoke")
        for node in others:
            cluster.kill(node)
        recorder.nemesis("kill", {"nodes": others}, type="info")

    # the ISR shrinks to the survivor after the lag time (5 s): min.insync.replicas=2 refuses
    drive(cluster, tmp_path, topic, rate=50, seconds=10, consumers=0, during=kill_the_others,
          producer=ProducerOptions(topic=topic, message_timeout_ms=2000, request_timeout_ms=1500,
                                   librdkafka=QUIET))
    sends = [(i, c) for i, c in completions(history(tmp_path)) if i["f"] == "send"]
    refused = [c for _, c in sends if c.get("error", "").startswith("NOT_ENOUGH_REPLICAS:")]
    assert refused, Counter(c.get("error") for _, c in sends)
    assert {c["type"] for c in refused} == {"info"}
    assert not [c for _, c in sends if c["type"] == "fail"]
    cluster.recovery.wait_for_full_isr(topic, 60)
    outcome = finish(cluster, tmp_path, topic)
    assert outcome.valid is True, outcome.results["anomaly_counts"]


def test_sends_produce_refuses_are_fail_and_never_written(cluster, tmp_path):
    topic = "crowded"
    new_topic(cluster, topic)
    # room for one message in librdkafka's queue, twenty processes: most produce() calls are refused
    drive(cluster, tmp_path, topic, rate=None, seconds=1, concurrency=20, consumers=0,
          producer=ProducerOptions(topic=topic, librdkafka={**QUIET, "queue.buffering.max.messages": 1}))
    sends = [(i, c) for i, c in completions(history(tmp_path)) if i["f"] == "send"]
    refused = [c for _, c in sends if c["type"] == "fail"]
    assert refused and all(c["error"] == "produce() refused it: BufferError: Local: Queue full" for c in refused)
    assert any(c["type"] == "ok" for _, c in sends)
    outcome = finish(cluster, tmp_path, topic)
    assert outcome.valid is True, outcome.results["anomaly_counts"]
    final = {orjson.loads(line)["value"] for line in (tmp_path / "final.jsonl").read_bytes().splitlines()
             if orjson.loads(line)["kind"] == "read"}
    assert not final & {c["value"]["value"] for c in refused}
