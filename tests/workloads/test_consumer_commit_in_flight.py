"""A group member's commit that librdkafka does not answer must not freeze the workload.

confluent-kafka lets one call at a time into a consumer handle: a `poll` made while the
consumer's synchronous commit (on its side thread, workloads/consumer.py `_maybe_commit`) is
still inside librdkafka waits for that commit. In a campaign run the commit never returned
(librdkafka's main thread had deadlocked, docs/FINDINGS.md finding 1), and the poll, on the
harness's main thread, froze the whole run. So the workload does not poll a consumer whose
commit has not returned: the poll is recorded `fail` at once, saying why, and the online
stuck check still runs (a consumer stuck behind a hung commit gets its client log).

Real parts: librdkafka's own mock cluster (tests/support/mock_cluster.py), the real
workload, confluent-kafka and history file; the group coordinator is made to answer 3 s late,
so a commit outlives COMMIT_WAIT_S."""
from __future__ import annotations

import json
import time
from pathlib import Path

from confluent_kafka import Producer

from fencepost.harness.check.liveness import liveness
from fencepost.harness.rundir.history import HistoryWriter, Recorder
from fencepost.workloads.client_log import DEFAULT_DEBUG
from fencepost.workloads.consumer import COMMIT_WAIT_S, ConsumerOptions, ConsumerWorkload
from tests.support.liveness_support import History, poll, steady
from tests.support.mock_cluster import MockCluster

TOPIC, GROUP, PROCESS = "fp", "fencepost", 1000
COORDINATOR, LEADER = 1, 2  # the coordinator alone is slowed: fetches go on at once
LATE_MS = 3000  # the coordinator's delay: a commit outlives COMMIT_WAIT_S by 2 s


def produce(bootstrap: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for value in values:
        producer.produce(TOPIC, value.encode(), partition=0)
    assert producer.flush(10) == 0, "the mock cluster did not acknowledge the records"


def history(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def poll_until(workload: ConsumerWorkload, path: Path, wanted, seconds: float) -> list[dict]:
    """Operations of the workload until the history has an op `wanted` accepts."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        workload.begin(PROCESS, lambda process, kind: None)
        ops = history(path)
        if any(wanted(op) for op in ops):
            return ops
        time.sleep(0.02)
    raise AssertionError(f"not within {seconds} s: {history(path)[-5:]}")


def test_a_consumer_whose_commit_has_not_returned_is_not_polled(tmp_path: Path) -> None:
    path, clients = tmp_path / "history.jsonl", tmp_path / "clients"
    acked: dict[int, int] = {}
    with MockCluster(brokers=2) as cluster, HistoryWriter(path) as writer:
        cluster.topic(TOPIC, partitions=1, leader=LEADER)
        cluster.coordinator(GROUP, COORDINATOR)
        produce(cluster.bootstrap, ["a", "b"])
        workload = ConsumerWorkload(cluster.bootstrap, Recorder(writer), [0], [PROCESS],
                                    ConsumerOptions(topic=TOPIC, mode="subscribe", group=GROUP, commit_interval_s=0,
                                                    debug=DEFAULT_DEBUG, stuck_s=0.3, librdkafka={"log_level": 0}),
                                    client_logs=clients, acked=lambda: acked, stacks=None)
        try:
            # it joins, reads both records and commits them (the coordinator answers at once)
            poll_until(workload, path, lambda op: op["f"] == "commit" and op["type"] == "ok", 20)
            cluster.rtt(COORDINATOR, LATE_MS)
            produce(cluster.bootstrap, ["c"])
            # the poll that reads "c" commits it: not answered within COMMIT_WAIT_S, recorded info
            started = time.monotonic()
            ops = poll_until(workload, path, lambda op: op["f"] == "commit" and op["type"] == "info", 10)
            assert "no answer within" in ops[-1]["error"]
            acked[0] = 5  # acknowledged writes it has not read: it becomes stuck while not polled
            timed = []
            while time.monotonic() - started < COMMIT_WAIT_S + 0.8:
                at = time.monotonic()
                kinds: list[str] = []
                workload.begin(PROCESS, lambda process, kind: kinds.append(kind))
                timed.append((time.monotonic() - at, kinds))
                time.sleep(0.05)
            slowest = max(seconds for seconds, _ in timed)
            assert slowest < 0.5, f"a poll waited {slowest:.1f} s for the commit in flight"
            assert all(kinds == ["fail"] for _, kinds in timed), timed
            skipped = [op for op in history(path) if op["f"] == "poll" and op["type"] == "fail"]
            assert len(skipped) == len(timed)
            assert "value" not in skipped[0] or skipped[0]["value"] is None
            assert skipped[0]["error"].startswith("not polled: its commit of ")
            assert "s ago has not returned; confluent-kafka lets one call into a consumer at a time, " \
                   "so a poll now would wait for it" in skipped[0]["error"]
            [(log, whys)] = workload.client_logs()  # the online stuck check ran on the skipped polls
            assert whys[0].startswith("stuck: fp-0 (read to 2, acknowledged to 5, ")
            assert "NOTE fencepost poll: not polled: its commit of " in log.read_text()
            # once the late answer came, it is polled again and commits what it reads next
            cluster.rtt(COORDINATOR, 0)
            produce(cluster.bootstrap, ["d"])
            ops = poll_until(workload, path, lambda op: op["f"] == "commit" and op["type"] == "ok"
                             and op["index"] > skipped[-1]["index"], LATE_MS / 1000 + 5)
        finally:
            workload.close(5)
    polls = [op for op in ops if op["f"] == "poll" and op["type"] == "ok"]
    assert [r["value"] for r in polls[-1]["value"]["records"]] == ["d"]


def test_a_consumer_left_unpolled_behind_a_hung_commit_is_judged_stuck(tmp_path: Path) -> None:
    """The liveness checker (harness/check/liveness.py, through harness/measures/lag.py) counts
    the `fail` polls of a consumer not polled: each has the lag of a poll that read nothing, so
    one left behind a commit that never returns is a stuck consumer, as one whose polls return
    nothing is."""
    h = History()
    steady(h, 1.0, 60.0)  # fp-0 acknowledges a write every 0.5 s throughout
    h.add(0.5, PROCESS, "invoke", "subscribe", {"topics": [TOPIC]})
    h.add(0.6, PROCESS, "ok", "subscribe", {"topics": [TOPIC]})
    poll(h, 5.2, PROCESS, [(0, o, f"{o * 2}-0") for o in range(9)])  # all it will read: offsets 0-8
    h.add(5.3, PROCESS, "invoke", "commit", {"group": GROUP, "offsets": [[TOPIC, 0, 9]]})
    h.add(6.3, PROCESS, "info", "commit", {"group": GROUP, "offsets": [[TOPIC, 0, 9]]})
    t = 6.4
    while t < 60.0:
        h.add(t, PROCESS, "invoke", "poll")
        h.add(t + 0.001, PROCESS, "fail", "poll")
        h.lines[-1]["error"] = (f"not polled: its commit of {t - 5.3:.1f} s ago has not returned; confluent-kafka "
                                "lets one call into a consumer at a time, so a poll now would wait for it")
        t += 0.5
    section = liveness(h.write(tmp_path / "run"), {"system": "own"})
    assert section["kinds"]["stuck-consumer"] == 1 and section["verdict"] == "failed"
    [stuck] = section["stuck_consumers"]
    assert stuck["process"] == PROCESS and stuck["lag_s"] > 50 \
        and 5.2 < stuck["behind_since_s"] < 20  # its last poll within stuck_lag_s (10 s) of the writes
