"""The acks=all producer workload: one logical process per message in flight, every send
recorded. The clients (`ProducerOptions.client`): `shared`, one confluent-kafka producer
for every process (the processes are messages in flight on one client, with one producer
id); or `per-process`, a producer of its own for each process, opened by its first send
(as Jepsen's clients: each its own connections, producer id and sequence numbers).

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

`crash(process, done)` crashes the process's client, as Jepsen's `--crash-clients`: a
`crash` op (invoke, then `info`) around closing the producer without flushing — what it
still holds is dropped, and every send in flight on it is completed `info` (with the shared
client, every process's) — the next send opens a new producer.

Every method runs in the caller's thread (the scheduler's); delivery callbacks
run inside `service` and `close`.
"""
from __future__ import annotations

import random
import time
import zlib
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, Mapping, Sequence

from confluent_kafka import KafkaError, KafkaException, Producer

from fencepost.workloads.outcomes import delivery_type, has_definite_failures
from fencepost.workloads.recording import ClientRecorder, Done, WorkloadConfigError

PARTITION_CHOICES = ("round-robin", "random", "key")
CLIENTS = ("shared", "per-process")
SERVICE_NAP_S = 0.0005  # per-process clients: the wait between two looks at every busy producer
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
    client: str = "shared"  # shared: one producer for every process; per-process: one each
    librdkafka: Mapping[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        """Raise WorkloadConfigError naming the first option that cannot work."""
        if self.client not in CLIENTS:
            raise WorkloadConfigError(f"producer client {self.client!r}: choose one of {', '.join(CLIENTS)}")
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
    """One send in flight, on the producer `client` holds it."""

    __slots__ = ("process", "handle", "invoke", "done", "finished", "client")

    def __init__(self, process: int, handle: Any, invoke: dict[str, Any], done: Done, client: Any) -> None:
        self.process = process
        self.handle = handle
        self.invoke = invoke
        self.done = done
        self.finished = False
        self.client = client  # the key of its producer: the process (per-process) or None (shared)


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
        self._per_process = options.client == "per-process"
        # client key (the process, or None for the shared one) -> its producer; opened when first used
        self._producers: dict[int | None, Producer] = {}
        self._fatal: dict[int | None, str] = {}  # client key -> the fatal error it reported
        self._closed = False
        # settings librdkafka refuses: a WorkloadConfigError now, not a `fail` of every send later
        probe = self._new_producer()
        if not self._per_process:
            self._producers[None] = probe
        self.replaced = 0  # producers replaced after a fatal error
        self.crashed = 0  # clients crashed on purpose (`crash`)
        self.acked_at: dict[int, float] = {}  # partition -> monotonic time of its latest ack
        self.highest_acked: dict[int, int] = {}  # partition -> the highest offset acked

    def _new_producer(self) -> Producer:
        try:
            return Producer(self.config)
        except KafkaException as e:
            raise WorkloadConfigError(f"librdkafka refused the producer settings {self.config}: "
                                      f"{e.args[0].str() if e.args else e}") from None

    def _client_key(self, process: int) -> int | None:
        return process if self._per_process else None

    def _producer_for(self, key: int | None) -> Producer:
        producer = self._producers.get(key)
        if producer is None:
            producer = self._producers[key] = self._new_producer()
        return producer

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
        if self._closed:
            raise RuntimeError("the producer workload is closed: no more sends")
        seq = self._seq[process]
        self._seq[process] = seq + 1
        value = f"{process}-{seq}"
        payload = value.encode()
        invoke: dict[str, Any] = {"topic": self._topic, "partition": self._partition_for(payload), "value": value}
        key = self._client_key(process)
        send = _Send(process, self.recorder.invoke(process, "send", invoke), invoke, done, key)
        try:
            self._producer_for(key).produce(self._topic, payload, key=payload if self._keyed else None,
                                            partition=invoke["partition"],
                                            on_delivery=partial(self._delivered, send))
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
        kind: Literal["ok", "fail", "info"] = "ok" if err is None else delivery_type(err, self._definite)
        if kind == "ok":
            offset = message.offset()
            if offset < 0:  # librdkafka acked it without an offset: nothing to check it against
                kind, value, error = "info", send.invoke, f"acked without an offset ({offset})"
            else:
                value, error = {**send.invoke, "offset": offset, "leader_epoch": message.leader_epoch()}, None
                partition = send.invoke["partition"]
                self.acked_at[partition] = time.monotonic()
                if offset > self.highest_acked.get(partition, -1):
                    self.highest_acked[partition] = offset
        else:
            value, error = send.invoke, _describe_error(err)
            if err is not None and err.fatal():
                self._fatal[send.client] = error
        self.recorder.complete(send.handle, kind, value, error=error)
        send.done(send.process, kind)

    def service(self, timeout: float) -> None:
        """Serve delivery reports for up to `timeout` seconds (returns early once some were served)."""
        if self._closed:
            return
        if not self._per_process:
            producer = self._producers.get(None)
            if producer is not None:
                producer.poll(timeout)
        else:
            self._serve_each(timeout)
        if self._fatal:
            for key in list(self._fatal):
                self._replace_producer(key)

    def _serve_each(self, timeout: float) -> None:
        """Per-process clients: every producer with a send in flight looked at, again and again,
        until one delivers or `timeout` passes (librdkafka has no queue several clients share)."""
        deadline = time.monotonic() + timeout
        while True:
            busy = {send.client for send in self._in_flight.values()}
            served: int = sum(self._producers[key].poll(0) for key in busy if key in self._producers)
            if not busy or served:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(SERVICE_NAP_S, left))

    def _replace_producer(self, key: int | None) -> None:
        error = self._fatal.pop(key)
        old = self._producers.pop(key, None)
        self.replaced += 1
        if old is not None:
            self._abandon(old, key, f"its producer had a fatal error ({error}) and was replaced; outcome unknown")

    def _abandon(self, producer: Producer, key: int | None, why: str) -> None:
        """Complete every send in flight on client `key` `info` and drop what `producer` still holds."""
        for send in [s for s in self._in_flight.values() if s.client == key]:  # in invoke order
            send.finished = True
            del self._in_flight[send.process]
            self.recorder.complete(send.handle, "info", send.invoke, error=why)
            send.done(send.process, "info")
        producer.purge()
        producer.flush(0)  # serves the purged messages' reports (ignored: their sends are finished)

    def crash(self, process: int, done: Done) -> None:
        """Crash `process`'s client (it has no send in flight): a `crash` op around closing the
        producer without flushing; the sends in flight on it (with the shared client, other
        processes') are completed `info`. The next send opens a new producer."""
        key = self._client_key(process)
        handle = self.recorder.invoke(process, "crash", None)
        producer = self._producers.pop(key, None)
        if producer is not None:
            self._abandon(producer, key, "its client crashed (closed without flushing); outcome unknown")
        self.crashed += 1
        self.recorder.complete(handle, "info", None,
                               error="client closed without flushing; the next send opens a new one")
        done(process, "info")

    def close(self, timeout: float) -> None:
        """Wait up to `timeout` seconds for the delivery reports still due; complete the
        sends still without one `info`; drop the producers. Idempotent."""
        if self._closed:
            return
        deadline = time.monotonic() + timeout
        while self._in_flight and (left := deadline - time.monotonic()) > 0:
            self.service(min(left, CLOSE_POLL_S))
        for key, producer in list(self._producers.items()):
            self._abandon(producer, key, f"no delivery report within {round(timeout, 1):g}s of closing the producer")
        self._producers.clear()  # freed (librdkafka destroyed) with the last reference, now
        self._closed = True


def _describe_error(err: KafkaError | None) -> str:
    return "no error" if err is None else f"{err.name()}: {err.str()}"


def _describe(e: BaseException) -> str:
    if isinstance(e, KafkaException) and e.args and isinstance(e.args[0], KafkaError):
        return _describe_error(e.args[0])
    return f"{type(e).__name__}: {e}"
