"""The consumer workload: one confluent-kafka consumer per logical process, every
poll and every change of position recorded (DESIGN.md §3.2).

Each process's first operation opens its consumer: in `assign` mode an `assign`
op (`{"partitions": [[topic, p], ...], "from": "beginning"}`), in `subscribe`
mode a `subscribe` op (`{"topics": [topic]}`, one consumer group for all the
processes). Every later operation is a `poll`: invoke `null`, then `ok`
`{"records": [...]}` with topic, partition, offset, value and leader_epoch of
each record (at most `max_records`, what the consumer holds now: the poll does
not wait), or `info` when the consumer failed under it.

Positions never move silently: the consumers run with `auto.offset.reset =
error`, so librdkafka reports every position it cannot continue from as an
`_AUTO_OFFSET_RESET` error event instead of jumping: a log truncation it
detected (KIP-320: the leader's log diverged below the consumer's position),
an offset out of range, no committed offset. The poll that meets one ends at it
(`ok` with the records before it); the process then assigns its partitions
again from the beginning, recorded as an `assign` op whose `error` says what
was detected. Other error events (a broker down...) are noted in the poll's
`error` and the poll goes on.

In `subscribe` mode the group's rebalances are recorded as `assign` ops too:
the partitions given (`from`: the committed offset of each, or 0 where none),
or `{"partitions": []}` when they are revoked or lost. A rebalance callback
runs inside a librdkafka poll; the records before it stay in the current poll
op, the assign op follows, and a record that came with that librdkafka poll
opens the process's next poll op.

A consumer that raises (a fatal client error) is closed, recorded as a `crash`
(`info`), and opened again by the process's next operation.

`begin(process, done)` runs one operation in the caller's thread and calls
`done(process, type)` once, with the type of that operation (the assign ops
recorded after a poll are not reported).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from workloads.closing import close_within
from workloads.messages import poll_record
from workloads.recording import ClientRecorder, Done, WorkloadConfigError

CONSUMER_MODES = ("assign", "subscribe")
# Error events after which librdkafka does not continue the partition by itself.
POSITION_LOST = frozenset((KafkaError._AUTO_OFFSET_RESET, KafkaError._LOG_TRUNCATION,
                           KafkaError.OFFSET_OUT_OF_RANGE))
COMMITTED_TIMEOUT_S = 5.0
NOTES_KEPT = 3  # transient errors named in one poll's `error`


@dataclass(frozen=True)
class ConsumerOptions:
    """The consumers' settings (docs/WORKLOADS.md). `librdkafka`: further librdkafka
    settings, applied last."""

    topic: str = "fp"
    mode: str = "assign"
    poll_interval_s: float = 0.1  # each process polls this often: the scheduler's rate for this workload
    max_records: int = 500  # per poll
    group: str = "fencepost"  # the consumer group (subscribe mode)
    librdkafka: Mapping[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        if self.mode not in CONSUMER_MODES:
            raise WorkloadConfigError(f"consumer mode {self.mode!r}: choose one of {', '.join(CONSUMER_MODES)}")
        if isinstance(self.max_records, bool) or not isinstance(self.max_records, int) or self.max_records < 1:
            raise WorkloadConfigError(f"consumer max_records = {self.max_records!r}: give a whole number >= 1")
        if not isinstance(self.poll_interval_s, (int, float)) or not self.poll_interval_s > 0:
            raise WorkloadConfigError(f"consumer poll_interval_s = {self.poll_interval_s!r}: give seconds > 0")
        if not self.topic:
            raise WorkloadConfigError("consumer topic is empty: name the topic to read")

    def config(self, bootstrap: str, process: int) -> dict[str, Any]:
        subscribing = self.mode == "subscribe"
        return {"bootstrap.servers": bootstrap, "client.id": f"fencepost-{process}",
                # assign mode uses no group; librdkafka still wants an id
                "group.id": self.group if subscribing else f"{self.group}-{process}",
                "enable.auto.commit": subscribing, "auto.offset.reset": "error",
                "enable.partition.eof": False, **self.librdkafka}


class _Client:
    """One process's consumer and what its librdkafka callbacks left for the workload."""

    __slots__ = ("process", "consumer", "rebalances", "carried")

    def __init__(self, process: int) -> None:
        self.process = process
        self.consumer: Consumer | None = None
        self.rebalances: list[dict[str, Any]] = []  # assign values, in callback order
        self.carried: Any = None  # a message that came after a rebalance: the next poll's first


class ConsumerWorkload:
    """See the module docstring. `partitions`: those assign mode assigns (every
    partition of the topic); `processes`: the consumers' logical process ids."""

    name = "consumer"
    pending = 0  # every operation completes inside begin

    def __init__(self, bootstrap: str, recorder: ClientRecorder, partitions: Sequence[int],
                 processes: Sequence[int], options: ConsumerOptions = ConsumerOptions()) -> None:
        options.check()
        if not partitions:
            raise WorkloadConfigError(f"the consumer needs the partitions of topic {options.topic!r}; got none")
        if len(set(processes)) != len(processes):
            raise WorkloadConfigError(f"the consumers' process ids repeat: {list(processes)}")
        self.bootstrap = bootstrap
        self.recorder = recorder
        self.options = options
        self.processes = tuple(processes)
        self.partitions = tuple(sorted(partitions))
        self._topic = options.topic
        self._clients = {p: _Client(p) for p in self.processes}
        self._closed = False
        if self.processes:
            self._check_config()

    def _check_config(self) -> None:
        """A consumer built and closed now, so that settings librdkafka refuses are a
        WorkloadConfigError here rather than a `fail` of every operation later."""
        config = self.options.config(self.bootstrap, self.processes[0])
        try:
            consumer = Consumer(config)
        except KafkaException as e:
            raise WorkloadConfigError(f"librdkafka refused the consumer settings {config}: {_describe(e)}") from None
        close_within(consumer, what="the settings probe consumer")

    @property
    def poll_rate(self) -> float:
        """Operations per second of all the processes together, at `poll_interval_s` each."""
        return len(self.processes) / self.options.poll_interval_s

    def begin(self, process: int, done: Done) -> None:
        """Run one operation of `process`: open its consumer, or poll."""
        if self._closed:
            raise RuntimeError("the consumer workload is closed: no more polls")
        client = self._clients[process]
        if client.consumer is None:
            done(process, self._open(client))
        else:
            done(process, self._poll(client))

    def service(self, timeout: float) -> None:
        """Nothing is ever pending here (see `pending`)."""

    # -- opening ------------------------------------------------------------------------

    def _open(self, client: _Client) -> str:
        config = self.options.config(self.bootstrap, client.process)
        if self.options.mode == "assign":
            value = {"partitions": [[self._topic, p] for p in self.partitions], "from": "beginning"}
            handle = self.recorder.invoke(client.process, "assign", value)
        else:
            value = {"topics": [self._topic]}
            handle = self.recorder.invoke(client.process, "subscribe", value)
        consumer = None
        try:
            consumer = Consumer(config)
            if self.options.mode == "assign":
                consumer.assign([TopicPartition(self._topic, p, OFFSET_BEGINNING) for p in self.partitions])
            else:
                consumer.subscribe([self._topic], on_assign=lambda c, parts: self._assigned(client, c, parts),
                                   on_revoke=lambda c, parts: self._revoked(client),
                                   on_lost=lambda c, parts: self._revoked(client))
        except KafkaException as e:
            if consumer is not None:
                close_within(consumer, what=f"consumer {client.process}")
            self.recorder.complete(handle, "fail", value, error=_describe(e))
            return "fail"
        client.consumer = consumer
        self.recorder.complete(handle, "ok", value)
        return "ok"

    def _assigned(self, client: _Client, consumer: Consumer, parts: list[TopicPartition]) -> None:
        """on_assign: start each partition at its committed offset, or 0 (an out-of-range 0 is
        reported and handled as any lost position)."""
        try:
            committed = consumer.committed(parts, timeout=COMMITTED_TIMEOUT_S)
        except KafkaException:
            committed = parts  # no answer: every partition from 0
        chosen = [TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0) for tp in committed]
        consumer.assign(chosen)
        client.rebalances.append({"partitions": [[tp.topic, tp.partition] for tp in chosen],
                                  "from": {f"{tp.topic}-{tp.partition}": tp.offset for tp in chosen}})

    @staticmethod
    def _revoked(client: _Client) -> None:
        client.rebalances.append({"partitions": []})

    # -- polling --------------------------------------------------------------------------

    def _poll(self, client: _Client) -> str:
        consumer = client.consumer
        assert consumer is not None
        handle = self.recorder.invoke(client.process, "poll", None)
        records: list[dict[str, Any]] = []
        notes: list[str] = []
        lost: str | None = None
        message, client.carried = client.carried, None
        try:
            while len(records) < self.options.max_records:
                if message is None:
                    message = consumer.poll(0)
                    if client.rebalances:  # the callback ran before this message was handed out
                        client.carried, message = message, None
                        break
                    if message is None:
                        break
                err = message.error()
                if err is None:
                    records.append(poll_record(message))
                elif err.code() in POSITION_LOST:
                    lost = (f"{err.name()} on {message.topic()}-{message.partition()}: {err.str()}")
                    break
                elif len(notes) < NOTES_KEPT:
                    notes.append(f"{err.name()}: {err.str()}")
                message = None
        except KafkaException as e:
            # Records returned before the failure were consumed: kept in the error, but the
            # outcome of the poll is unknown.
            self.recorder.complete(handle, "info", None,
                                   error=f"the consumer failed: {_describe(e)} ({len(records)} records read)")
            self._crash(client, _describe(e))
            return "info"
        self.recorder.complete(handle, "ok", {"records": records}, error="; ".join(notes) or None)
        self._record_rebalances(client)
        if lost is not None:
            self._start_over(client, lost)
        return "ok"

    def _record_rebalances(self, client: _Client) -> None:
        while client.rebalances:
            value = client.rebalances.pop(0)
            handle = self.recorder.invoke(client.process, "assign", value)
            self.recorder.complete(handle, "ok", value)

    def _start_over(self, client: _Client, why: str) -> None:
        """Assign the process's partitions again, every one from the beginning."""
        consumer = client.consumer
        assert consumer is not None
        try:
            held = sorted((tp.topic, tp.partition) for tp in consumer.assignment())
        except KafkaException:
            held = [(self._topic, p) for p in self.partitions]
        value = {"partitions": [[t, p] for t, p in held], "from": "beginning"}
        handle = self.recorder.invoke(client.process, "assign", value)
        try:
            consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in held])
        except KafkaException as e:
            self.recorder.complete(handle, "fail", value, error=f"after {why}: assign failed: {_describe(e)}")
            self._crash(client, f"assign failed: {_describe(e)}")
            return
        self.recorder.complete(handle, "ok", value, error=f"position lost, starting over: {why}")

    def _crash(self, client: _Client, why: str) -> None:
        handle = self.recorder.invoke(client.process, "crash", None)
        self._close_consumer(client)
        self.recorder.complete(handle, "info", None, error=f"consumer closed after: {why}; reopened by its next op")

    @staticmethod
    def _close_consumer(client: _Client) -> None:
        consumer, client.consumer = client.consumer, None
        if consumer is not None:
            close_within(consumer, what=f"consumer {client.process}")
        client.rebalances.clear()  # also the revoke that close() itself reports
        client.carried = None

    def close(self, timeout: float) -> None:
        """Close every consumer (a subscribed one leaves its group). Idempotent."""
        self._closed = True
        for client in self._clients.values():
            self._close_consumer(client)


def _describe(e: BaseException) -> str:
    if isinstance(e, KafkaException) and e.args and isinstance(e.args[0], KafkaError):
        return f"{e.args[0].name()}: {e.args[0].str()}"
    return f"{type(e).__name__}: {e}"
