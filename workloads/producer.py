"""The acks=all producer workload: one confluent-kafka producer, one logical
process per message in flight (DESIGN.md §3.2), every send recorded.

`begin(process, done)` records the `send` invoke — topic, partition, value
`"<process>-<seq>"` — then hands the message to librdkafka and returns. The
delivery report, served by `service(timeout)` (the producer's poll), records
exactly one completion: `ok` with `offset` and `leader_epoch`, `fail` only when
the error proves the write did not happen, else `info` (workloads/outcomes.py),
and then calls `done(process, type)`. `close(timeout)` waits for the reports
still due; a send still without one is completed `info`.

The partition is chosen before the invoke, so the invoke holds it:
`round-robin` over the partitions, `random` (the seeded RNG), or `key` — the
value is sent as the message key too, and the partition is the one librdkafka's
default partitioner picks for that key (consistent_random: CRC-32 of the key
modulo the topic's partition count), computed here and passed explicitly.

A producer that reports a fatal error (an idempotent producer out of sequence,
fenced...) is unusable: it is replaced by a fresh one, and the sends still in
flight on it are completed `info`.

Every method runs in the caller's thread (the scheduler's); delivery callbacks
run inside `service` and `close`.
"""
from __future__ import annotations

import random
import time
import zlib
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Mapping, Sequence

from confluent_kafka import KafkaError, KafkaException, Producer

from workloads.outcomes import delivery_type, has_definite_failures
from workloads.recording import ClientRecorder, Done, WorkloadConfigError

PARTITION_CHOICES = ("round-robin", "random", "key")
IDEMPOTENT_MAX_IN_FLIGHT = 5  # librdkafka's limit with enable.idempotence
MIN_QUEUE_MESSAGES = 100_000
CLOSE_POLL_S = 0.1


@dataclass(frozen=True)
class ProducerOptions:
    """The producer's settings (docs/WORKLOADS.md). `librdkafka`: further librdkafka
    settings, applied last (they win over the ones derived from the fields)."""

    topic: str = "fp"
    idempotent: bool = False
    retries: int = 0  # with idempotence, 0 means librdkafka's default: an idempotent producer must retry
    max_in_flight: int = 1  # max.in.flight.requests.per.connection
    linger_ms: int = 0
    batch_messages: int = 0  # batch.num.messages: the most records in one batch (0: librdkafka's default)
    message_timeout_ms: int = 10_000
    request_timeout_ms: int = 5_000
    partition_choice: str = "round-robin"
    librdkafka: Mapping[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        """Raise WorkloadConfigError naming the first option that cannot work."""
        if self.partition_choice not in PARTITION_CHOICES:
            raise WorkloadConfigError(f"producer partition_choice {self.partition_choice!r}: choose one of "
                                      f"{', '.join(PARTITION_CHOICES)}")
        for name, low in (("retries", 0), ("max_in_flight", 1), ("linger_ms", 0), ("batch_messages", 0),
                          ("message_timeout_ms", 1), ("request_timeout_ms", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise WorkloadConfigError(f"producer {name} = {value!r}: give a whole number >= {low}")
        if self.idempotent and self.max_in_flight > IDEMPOTENT_MAX_IN_FLIGHT:
            raise WorkloadConfigError(f"producer max_in_flight = {self.max_in_flight} with idempotent = true: "
                                      f"an idempotent producer allows at most {IDEMPOTENT_MAX_IN_FLIGHT}")
        if not self.topic:
            raise WorkloadConfigError("producer topic is empty: name the topic to send to")

    @property
    def definite_failures(self) -> bool:
        """Whether a definite broker error proves that a send did not happen (workloads/outcomes.py)."""
        return has_definite_failures(self.idempotent, self.retries)

    def config(self, bootstrap: str, in_flight: int) -> dict[str, Any]:
        """The librdkafka configuration; `in_flight`: the most messages the workload holds at once."""
        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": self.idempotent,
            "max.in.flight.requests.per.connection": self.max_in_flight, "linger.ms": self.linger_ms,
            "message.timeout.ms": self.message_timeout_ms, "request.timeout.ms": self.request_timeout_ms,
            "queue.buffering.max.messages": max(MIN_QUEUE_MESSAGES, 2 * in_flight),
        }
        if not (self.idempotent and self.retries == 0):
            config["retries"] = self.retries
        if self.batch_messages:
            config["batch.num.messages"] = self.batch_messages
        config.update(self.librdkafka)
        return config


class _Send:
    """One send in flight."""

    __slots__ = ("process", "handle", "invoke", "done", "finished")

    def __init__(self, process: int, handle: Any, invoke: dict[str, Any], done: Done) -> None:
        self.process = process
        self.handle = handle
        self.invoke = invoke
        self.done = done
        self.finished = False


class ProducerWorkload:
    """See the module docstring. `partitions`: every partition of the topic;
    `processes`: the logical process ids, one per message in flight."""

    name = "producer"

    def __init__(self, bootstrap: str, recorder: ClientRecorder, partitions: Sequence[int],
                 processes: Sequence[int], options: ProducerOptions = ProducerOptions(), seed: int = 0) -> None:
        options.check()
        if not partitions:
            raise WorkloadConfigError(f"the producer needs the partitions of topic {options.topic!r}; got none")
        if not processes:
            raise WorkloadConfigError("the producer needs at least one process id (concurrency >= 1)")
        if len(set(processes)) != len(processes):
            raise WorkloadConfigError(f"the producer's process ids repeat: {list(processes)}")
        if options.partition_choice == "key" and sorted(partitions) != list(range(len(partitions))):
            raise WorkloadConfigError(f"partition_choice 'key' needs every partition of {options.topic!r} "
                                      f"(0..n-1, as the partitioner counts them), got {sorted(partitions)}")
        self.bootstrap = bootstrap
        self.recorder = recorder
        self.options = options
        self.processes = tuple(processes)
        self.partitions = tuple(sorted(partitions))
        self.config = options.config(bootstrap, len(self.processes))
        self._topic = options.topic
        self._definite = options.definite_failures
        self._choice = options.partition_choice
        self._keyed = options.partition_choice == "key"
        self._rng = random.Random(seed)
        self._turn = 0
        self._seq = dict.fromkeys(self.processes, 0)
        self._in_flight: dict[int, _Send] = {}
        self._fatal: str | None = None
        self._producer: Producer | None = self._new_producer()
        self.replaced = 0  # producers replaced after a fatal error

    def _new_producer(self) -> Producer:
        try:
            return Producer(self.config)
        except KafkaException as e:
            raise WorkloadConfigError(f"librdkafka refused the producer settings {self.config}: "
                                      f"{e.args[0].str() if e.args else e}") from None

    @property
    def pending(self) -> int:
        """Sends invoked and not yet completed."""
        return len(self._in_flight)

    # -- partitions ---------------------------------------------------------------------

    def _partition_for(self, value: bytes) -> int:
        if self._choice == "round-robin":
            self._turn += 1
            return self.partitions[(self._turn - 1) % len(self.partitions)]
        if self._choice == "random":
            return self._rng.choice(self.partitions)
        return zlib.crc32(value) % len(self.partitions)  # librdkafka's consistent(_random) partitioner

    # -- operations -----------------------------------------------------------------------

    def begin(self, process: int, done: Done) -> None:
        """Invoke a send on `process` (which must have none in flight) and hand it to librdkafka."""
        if self._producer is None:
            raise RuntimeError("the producer workload is closed: no more sends")
        seq = self._seq[process]
        self._seq[process] = seq + 1
        value = f"{process}-{seq}"
        payload = value.encode()
        invoke = {"topic": self._topic, "partition": self._partition_for(payload), "value": value}
        send = _Send(process, self.recorder.invoke(process, "send", invoke), invoke, done)
        try:
            self._producer.produce(self._topic, payload, key=payload if self._keyed else None,
                                   partition=invoke["partition"], on_delivery=partial(self._delivered, send))
        except (BufferError, KafkaException) as e:  # never handed to librdkafka: surely not written
            send.finished = True
            self.recorder.complete(send.handle, "fail", invoke, error=f"produce() refused it: {_describe(e)}")
            done(process, "fail")
            return
        self._in_flight[process] = send

    def _delivered(self, send: _Send, err: KafkaError | None, message: Any) -> None:
        if send.finished:  # completed already (close, or its producer was replaced)
            return
        send.finished = True
        del self._in_flight[send.process]
        kind = "ok" if err is None else delivery_type(err, self._definite)
        if kind == "ok":
            offset = message.offset()
            if offset < 0:  # librdkafka acked it without an offset: nothing to check it against
                kind, value, error = "info", send.invoke, f"acked without an offset ({offset})"
            else:
                value, error = {**send.invoke, "offset": offset, "leader_epoch": message.leader_epoch()}, None
        else:
            value, error = send.invoke, _describe_error(err)
            if err is not None and err.fatal():
                self._fatal = error
        self.recorder.complete(send.handle, kind, value, error=error)
        send.done(send.process, kind)

    def service(self, timeout: float) -> None:
        """Serve delivery reports for up to `timeout` seconds (returns early once some were served)."""
        if self._producer is None:
            return  # closed
        self._producer.poll(timeout)
        if self._fatal is not None:
            self._replace_producer()

    def _replace_producer(self) -> None:
        error, self._fatal = self._fatal, None
        old, self._producer = self._producer, self._new_producer()
        self.replaced += 1
        self._abandon(old, f"its producer had a fatal error ({error}) and was replaced; outcome unknown")

    def _abandon(self, producer: Producer, why: str) -> None:
        """Complete every send in flight `info` and drop what `producer` still holds."""
        for send in list(self._in_flight.values()):  # in invoke order (dict order)
            send.finished = True
            self.recorder.complete(send.handle, "info", send.invoke, error=why)
            send.done(send.process, "info")
        self._in_flight.clear()
        producer.purge()
        producer.flush(0)  # serves the purged messages' reports (ignored: their sends are finished)

    def close(self, timeout: float) -> None:
        """Wait up to `timeout` seconds for the delivery reports still due; complete the
        sends still without one `info`; drop the producer. Idempotent."""
        if self._producer is None:
            return
        deadline = time.monotonic() + timeout
        while self._in_flight and (left := deadline - time.monotonic()) > 0:
            self._producer.poll(min(left, CLOSE_POLL_S))
        self._abandon(self._producer, f"no delivery report within {round(timeout, 1):g}s of closing the producer")
        self._producer = None  # freed (librdkafka destroyed) with the last reference, now


def _describe_error(err: KafkaError | None) -> str:
    return "no error" if err is None else f"{err.name()}: {err.str()}"


def _describe(e: BaseException) -> str:
    if isinstance(e, KafkaException) and e.args and isinstance(e.args[0], KafkaError):
        return _describe_error(e.args[0])
    return f"{type(e).__name__}: {e}"
