"""Recording a real confluent-kafka workload into a run directory that
`harness.check.checking.check_run` judges (docs/FORMATS.md), for scenario tests
of the own broker.

`ScenarioRun(run_dir, bootstrap, topic="fp")` is a context manager owning a
HistoryWriter and its Recorder, a producer and a consumer:
- `send(values, partition)`: one value at a time on process 0, each recorded as
  invoke, then ok (offset, leader epoch), fail (a definite error: the broker
  surely did not append it) or info (a timeout or any outcome we cannot know).
  The producer is non-idempotent, acks=all, linger 0, retries 0 by default: with
  retries, an error after an earlier timed-out attempt says nothing definite, so
  every error would be info.
- `send_unacked(values, partition)` produces without waiting, on a producer of its
  own, one process id per message in flight (invokes recorded now); `settle()`
  records their completions later (a write that hangs while a follower is paused).
- `nemesis(f, value, type)` records a fault; `poll(partition, polls)` polls with
  a consumer assigned from the beginning (the assign is recorded).
- `finish(cluster)`: the final read of every partition by a fresh consumer (0 to
  the high watermark, through the leader; `read-state` says whether it got
  there), a clean stop of every broker (checkpoints written), `python -m fencepost.broker
  dump-log` of every node appended to final.jsonl, test.json written, and
  `check_run` returned (paused brokers are resumed and cut links healed first).
The module-level helpers (`send_values`, `final_read`, `dump_replica`,
`write_final`, `write_test`) serve tests that run a single broker without a
LocalCluster. `anomaly_names(outcome)` is the set of anomalies found.
The ok/fail/info rule of a delivery report and the final read are the
production ones (workloads/outcomes.py, workloads/final_read.py).
"""
from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import orjson
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from fencepost.harness.check.checking import CheckOutcome, check_run
from fencepost.harness.rundir.history import HistoryWriter, InvokeHandle, Recorder
from fencepost.workloads.final_read import final_read_lines
from fencepost.workloads.outcomes import DEFINITE_PRODUCE_ERRORS, delivery_type

if TYPE_CHECKING:
    from tests.support.local_cluster import LocalCluster

SEND_PROCESS = 0
POLL_PROCESS = 1
UNACKED_FIRST_PROCESS = 100  # one process id per unacked message in flight, from here up
FINAL_READ_TIMEOUT_S = 100.0
QUIESCE_TIMEOUT_S = 20.0
LEADER_TIMEOUT_S = 30.0

__all__ = ["DEFINITE_PRODUCE_ERRORS", "ScenarioRun", "SendOutcome", "anomaly_names", "classify", "dump_replica",
           "final_read", "send_values", "write_final", "write_test"]


@dataclass(frozen=True, slots=True)
class SendOutcome:
    value: str
    type: str  # ok, fail or info
    offset: int | None = None
    leader_epoch: int | None = None
    error: str | None = None


def classify(err: KafkaError | None, msg: Any, invoke: dict[str, Any], definite_failures: bool
             ) -> tuple[str, dict[str, Any], str | None]:
    """(completion type, completion value, error) of a delivery report (workloads/outcomes.py)."""
    kind = delivery_type(err, definite_failures)
    if kind == "ok":
        return "ok", {**invoke, "offset": msg.offset(), "leader_epoch": msg.leader_epoch()}, None
    return kind, invoke, str(err)


def _outcome(kind: str, value: dict[str, Any], error: str | None) -> SendOutcome:
    return SendOutcome(value["value"], kind, value.get("offset"), value.get("leader_epoch"), error)


def send_values(recorder: Recorder, producer: Producer, topic: str, values: Iterable[str], partition: int = 0,
                process: int = SEND_PROCESS, timeout_s: float = 15.0, definite_failures: bool = False
                ) -> list[SendOutcome]:
    """Send one value at a time: invoke, wait up to `timeout_s` for its delivery report,
    complete. No report in time is `info` (the message may still be delivered later).
    `definite_failures`: the producer does not retry, so DEFINITE_PRODUCE_ERRORS are `fail`."""
    outcomes = []
    for value in values:
        invoke = {"topic": topic, "partition": partition, "value": value}
        handle = recorder.invoke(process, "send", invoke)
        reports: list[tuple[KafkaError | None, Any]] = []
        try:
            producer.produce(topic, value.encode(), partition=partition,
                             on_delivery=lambda err, msg: reports.append((err, msg)))
        except BufferError as e:  # never handed to librdkafka: surely not written
            recorder.complete(handle, "fail", invoke, error=f"produce() refused it: {e}")
            outcomes.append(SendOutcome(value, "fail", error=str(e)))
            continue
        deadline = time.monotonic() + timeout_s
        while not reports and (left := deadline - time.monotonic()) > 0:
            producer.poll(min(left, 0.1))
        if not reports:
            error = f"no delivery report within {timeout_s:g}s"
            recorder.complete(handle, "info", invoke, error=error)
            outcomes.append(SendOutcome(value, "info", error=error))
            continue
        kind, completion, error = classify(*reports[0], invoke, definite_failures)
        recorder.complete(handle, kind, completion, error=error)
        outcomes.append(_outcome(kind, completion, error))
    return outcomes


def final_read(bootstrap: str, topic: str, partitions: Iterable[int] = (0,),
               timeout_s: float = FINAL_READ_TIMEOUT_S) -> list[dict[str, Any]]:
    """A fresh consumer reads each partition from 0 to its high watermark: `read`
    lines, then a `read-state` line saying whether it reached the end (the
    production final read, workloads/final_read.py)."""
    return final_read_lines(bootstrap, topic, partitions, timeout_s)


def dump_replica(data_dir: Path, node: str) -> list[bytes]:
    """`python -m fencepost.broker dump-log` of one node's data directory: final.jsonl lines
    (a partition it could not read fully is reported on its stderr and left short)."""
    done = subprocess.run([sys.executable, "-m", "fencepost.broker", "dump-log", "--data-dir", str(data_dir),
                           "--node", node], capture_output=True, timeout=120)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"dump-log of {node} ({data_dir}) exited with {done.returncode}: "
                           f"{done.stderr.decode(errors='replace').strip()}")
    return [line for line in done.stdout.splitlines() if line.strip()]


def write_final(run_dir: Path, read_lines: list[dict[str, Any]], replica_lines: Iterable[bytes] = ()) -> None:
    with open(Path(run_dir) / "final.jsonl", "wb") as out:
        for line in read_lines:
            out.write(orjson.dumps(line) + b"\n")
        for raw in replica_lines:
            out.write(raw + b"\n")


def write_test(run_dir: Path, name: str, idempotent: bool, **extra: Any) -> None:
    (Path(run_dir) / "test.json").write_bytes(orjson.dumps({"name": name, **extra,
                                                            "producer": {"idempotent": idempotent}}))


def anomaly_names(outcome: CheckOutcome) -> set[str]:
    """The anomaly kinds the check found at least once."""
    return {name for name, count in outcome.results["anomaly_counts"].items() if count > 0}


class ScenarioRun:
    """See the module docstring. `producer_config` entries override the defaults."""

    def __init__(self, run_dir: Path, bootstrap: str, topic: str = "fp", name: str = "scenario",
                 message_timeout_ms: int = 10_000, request_timeout_ms: int = 5_000, retries: int | None = None,
                 producer_config: dict[str, Any] | None = None,
                 unacked_overrides: dict[str, Any] | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.bootstrap = bootstrap
        self.topic = topic
        self.name = name
        config: dict[str, Any] = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False,
                                  "linger.ms": 0, "message.timeout.ms": message_timeout_ms,
                                  "request.timeout.ms": request_timeout_ms, **(producer_config or {})}
        self.idempotent = bool(config["enable.idempotence"])
        if retries is not None:
            config["retries"] = retries
        elif not self.idempotent:
            config.setdefault("retries", 0)  # (an idempotent producer needs retries >= 1: librdkafka's default)
        self.producer_config = config
        # e.g. a short message.timeout.ms, so an unacked write ends before leadership moves and no
        # retry of it can reach a new leader
        self.unacked_producer_config = {**config, **(unacked_overrides or {})}
        # An idempotent producer retries for ever: its errors are never definite.
        self.definite_failures = not self.idempotent and int(config.get("retries", 1)) == 0
        self.default_timeout_s = int(self.producer_config["message.timeout.ms"]) / 1000 + 5
        self.writer = HistoryWriter(self.run_dir / "history.jsonl")
        self.recorder = Recorder(self.writer)
        self._producer: Producer | None = None
        self._unacked_producer: Producer | None = None
        self._unacked: dict[int, tuple[InvokeHandle, list[tuple[KafkaError | None, Any]]]] = {}
        self._consumer: Consumer | None = None
        self._assigned: int | None = None
        self._seq = 0
        self._open = False

    def __enter__(self) -> ScenarioRun:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.writer.open()
        self._open = True
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close_clients()
        self._close_history()

    def _close_history(self) -> None:
        self.writer.close()
        self._open = False

    def next_values(self, n: int) -> list[str]:
        """`n` fresh unique values "0-<seq>"."""
        values = [f"{SEND_PROCESS}-{self._seq + i}" for i in range(n)]
        self._seq += n
        return values

    # -- sends ---------------------------------------------------------------------

    def send(self, values: Iterable[str], partition: int = 0, timeout_s: float | None = None) -> list[SendOutcome]:
        if self._producer is None:
            self._producer = Producer(self.producer_config)
        return send_values(self.recorder, self._producer, self.topic, values, partition, SEND_PROCESS,
                           self.default_timeout_s if timeout_s is None else timeout_s, self.definite_failures)

    def reset_producer(self, timeout_s: float = 5.0) -> None:
        """Close the producer (after a flush of up to `timeout_s`); the next send makes a new one."""
        if self._producer is not None:
            self._producer.flush(timeout_s)
            self._producer = None

    def send_unacked(self, values: Iterable[str], partition: int = 0, bootstrap: str | None = None) -> None:
        """Produce every value now without waiting; their completions are recorded by `settle`.
        `bootstrap` (for a fresh producer): the brokers it first asks for metadata and a producer
        id — name the leader when another broker is paused, or a new producer may wait on it."""
        if self._unacked_producer is None:
            config = dict(self.unacked_producer_config)
            if bootstrap:
                config["bootstrap.servers"] = bootstrap
            self._unacked_producer = Producer(config)
        for value in values:
            process = UNACKED_FIRST_PROCESS
            while process in self._unacked:
                process += 1
            invoke = {"topic": self.topic, "partition": partition, "value": value}
            reports: list[tuple[KafkaError | None, Any]] = []
            handle = self.recorder.invoke(process, "send", invoke)
            try:
                self._unacked_producer.produce(self.topic, value.encode(), partition=partition,
                                               on_delivery=lambda err, msg, r=reports: r.append((err, msg)))
            except BufferError as e:  # never handed to librdkafka: surely not written
                self.recorder.complete(handle, "fail", invoke, error=f"produce() refused it: {e}")
                continue
            self._unacked[process] = (handle, reports)
            self._unacked_producer.poll(0)

    def settle(self, timeout_s: float | None = None) -> list[SendOutcome]:
        """Wait up to `timeout_s` for every unacked send's delivery report and record the
        completions, in invoke order; those still without a report are `info`. The producer
        is then closed (what it still holds purged): the next `send_unacked` starts a fresh
        one, so no retry of a settled write can reach the broker later."""
        if not self._unacked:
            return []
        timeout_s = self.default_timeout_s if timeout_s is None else timeout_s
        assert self._unacked_producer is not None
        deadline = time.monotonic() + timeout_s
        while any(not r for _, r in self._unacked.values()) and (left := deadline - time.monotonic()) > 0:
            self._unacked_producer.poll(min(left, 0.1))
        outcomes = []
        for handle, reports in sorted(self._unacked.values(), key=lambda hr: hr[0].index):
            invoke = handle.value
            if not reports:
                kind, completion, error = "info", invoke, f"no delivery report within {timeout_s:g}s"
            else:
                kind, completion, error = classify(*reports[0], invoke, self.definite_failures)
            self.recorder.complete(handle, kind, completion, error=error)
            outcomes.append(_outcome(kind, completion, error))
        self._unacked.clear()
        self._unacked_producer.purge()
        self._unacked_producer.flush(0)
        self._unacked_producer = None
        return outcomes

    # -- polls and faults ---------------------------------------------------------------

    def nemesis(self, f: str, value: Any = None, type: str = "info") -> None:
        self.recorder.nemesis(f, value, type=type)

    def poll(self, partition: int = 0, polls: int = 20, timeout_s: float = 0.2) -> int:
        """`polls` polls of `partition` (assigned from the beginning the first time);
        the number of records they returned."""
        if self._consumer is None:
            self._consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"{self.name}-poll",
                                       "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        if self._assigned != partition:
            assign = self.recorder.invoke(POLL_PROCESS, "assign",
                                          {"partitions": [[self.topic, partition]], "from": "beginning"})
            self._consumer.assign([TopicPartition(self.topic, partition, 0)])
            self.recorder.complete(assign, "ok")
            self._assigned = partition
        got = 0
        for _ in range(polls):
            handle = self.recorder.invoke(POLL_PROCESS, "poll", None)
            messages = self._consumer.consume(num_messages=50, timeout=timeout_s)
            records = [{"topic": self.topic, "partition": m.partition(), "offset": m.offset(),
                        "value": m.value().decode(), "leader_epoch": m.leader_epoch()}
                       for m in messages if m.error() is None]
            self.recorder.complete(handle, "ok", {"records": records})
            got += len(records)
        return got

    # -- the end of a run -------------------------------------------------------------------

    def close_clients(self, settle_timeout_s: float = 5.0) -> None:
        """Record what the unacked sends became (within `settle_timeout_s`); close every client."""
        if self._unacked and self._open:
            self.settle(settle_timeout_s)
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
        for producer in (self._producer, self._unacked_producer):
            if producer is not None:
                producer.purge()  # what is left was recorded as info already
                producer.flush(0)
        self._producer = self._unacked_producer = None

    def final_read(self, partitions: Iterable[int]) -> list[dict[str, Any]]:
        return final_read(self.bootstrap, self.topic, partitions)

    def finish(self, cluster: LocalCluster, quiesce_timeout_s: float = QUIESCE_TIMEOUT_S,
               extra_test: dict[str, Any] | None = None) -> CheckOutcome:
        """Final reads, a clean stop of every broker, replica dumps, test.json; the check's outcome.
        Paused brokers are resumed and cut controller links healed first (they would stall the
        reads and the clean stops); killed brokers stay down, their data directories are dumped."""
        self.close_clients()
        self._close_history()
        for node in cluster.node_ids:
            if cluster.alive(node) and cluster.paused(node):
                cluster.resume(node)
            if cluster.proxy(node).is_cut:
                cluster.heal_controller(node)
        partitions = sorted(cluster.describe().topics[self.topic].partitions)
        for partition in partitions:
            try:
                cluster.wait_for_leader(self.topic, partition, timeout=LEADER_TIMEOUT_S)
                cluster.wait_for_isr(self.topic, partition, timeout=quiesce_timeout_s)
            except AssertionError:
                pass  # read what can be read; an incomplete read makes the verdict unknown
        reads = self.final_read(partitions)
        cluster.stop_brokers()
        replicas: list[bytes] = []
        for node in cluster.node_ids:
            replicas += dump_replica(cluster.data_dir(node), f"n{node}")
        write_final(self.run_dir, reads, replicas)
        write_test(self.run_dir, self.name, self.idempotent, system="own", truncation=cluster.truncation,
                   **(extra_test or {}))
        return check_run(self.run_dir, out=None)
