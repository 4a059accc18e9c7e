"""The consumer workload: one confluent-kafka consumer per logical process, every
poll and every change of position recorded (docs/FORMATS.md, history.jsonl).

Each process's first operation opens its consumer: in `assign` mode an `assign`
op (`{"partitions": [[topic, p], ...], "from": "beginning"}`), in `subscribe`
mode a `subscribe` op (`{"topics": [topic]}`, one consumer group for all the
processes). Every later operation is a `poll`: invoke `null`, then `ok`
`{"records": [...]}` with topic, partition, offset, value and leader_epoch of
each record (at most `max_records`, what the consumer holds now: the poll does
not wait), `info` when the consumer failed under it, or `fail` when the consumer
was not polled because its commit has not returned (below).

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
the partitions given with the group's name (`group`) and `from` the committed
offset of each (0 where none), or `{"partitions": []}` when they are revoked or
lost; when the committed offsets cannot be read, the member starts from the
beginning instead (`from: "beginning"`, with why). A rebalance callback runs
inside a librdkafka poll; the records before it stay in the current poll op,
the assign op follows, and a record that came with that librdkafka poll opens
the process's next poll op. Members commit what they read, explicitly and
recorded (never librdkafka's unrecorded auto-commit): after an ok poll that
returned records, at most every `commit_interval_s`, a `commit` op
`{"group", "offsets": [[topic, partition, next offset], ...]}` of the partitions
read since its last commit — `ok` when the coordinator took every one, `fail`
when librdkafka had nothing to send, else `info` (a commit not answered within
COMMIT_WAIT_S goes on in the background; the member commits again only once it
ended). confluent-kafka lets one call at a time into a consumer, so while that
commit is inside librdkafka the workload makes no other call into the consumer:
each poll is recorded `fail` at once (`not polled: its commit of N s ago has not
returned; ...`) and still runs the stuck check below; a librdkafka that never
answers (docs/FINDINGS.md finding 1) then leaves a stuck consumer, not a frozen
run. (The rebalance callbacks run inside a poll; `_start_over` follows a poll
made, before any new commit; a close waits COMMITTED_TIMEOUT_S for the commit,
then abandons the consumer.) `mixed` mode (Jepsen's `--sub-p`): each time a
process opens its consumer it subscribes with probability `subscribe_p`, else
assigns.

A consumer that raises (a fatal client error) is closed, recorded as a `crash`
(`info`), and opened again by the process's next operation; `crash(process,
done)` does the same on purpose (Jepsen's `--crash-clients`).

`begin(process, done)` runs one operation in the caller's thread and calls
`done(process, type)` once, with the type of that operation (the assign ops
recorded after a poll are not reported).

Client logs (workloads/client_log.py): with `options.debug` (librdkafka debug contexts) and
a `client_logs` folder, each process's consumer logs into a ring of `debug_lines` lines,
beside a note of every poll's outcome, written to `<client_logs>/<process>.log` when the
consumer is stuck, crashed, or did not close in time. Stuck (the online twin of the
liveness checker's stuck-consumer, harness/check/liveness.py): for `stuck_s` seconds, a
partition the consumer holds had an acknowledged record above the highest offset it had
read (`acked()`: partition -> highest acknowledged offset, the producers'), and no poll
returned a record of it. The harness log says so once per episode, naming the file.
"""
from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Sequence

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from fencepost.workloads.client_log import DEFAULT_LINES, ClientLog
from fencepost.workloads.client_stacks import write_native_stacks
from fencepost.workloads.closing import close_within
from fencepost.workloads.messages import poll_record
from fencepost.workloads.recording import ClientRecorder, Done, WorkloadConfigError

CONSUMER_MODES = ("assign", "subscribe", "mixed")
# Error events after which librdkafka does not continue the partition by itself.
POSITION_LOST = frozenset((KafkaError._AUTO_OFFSET_RESET, KafkaError._LOG_TRUNCATION,
                           KafkaError.OFFSET_OUT_OF_RANGE))
COMMITTED_TIMEOUT_S = 5.0
COMMIT_WAIT_S = 1.0  # a synchronous commit is waited for this long; it may land later (`info`)
NOTES_KEPT = 3  # transient errors named in one poll's `error`
STUCK_S = 10.0  # the liveness checker's stuck_lag_s default (harness/check/liveness.py)
STACK_DUMPS = 2  # per process: when it first became stuck, and when its close was abandoned

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConsumerOptions:
    """The consumers' settings (docs/WORKLOADS.md). `librdkafka`: further librdkafka
    settings, applied last."""

    topic: str = "fp"
    mode: str = "assign"
    poll_interval_s: float = 0.1  # each process polls this often: the scheduler's rate for this workload
    max_records: int = 500  # per poll
    group: str = "fencepost"  # the consumer group (subscribe mode)
    subscribe_p: float = 0.5  # mixed mode: the chance that a process opening its consumer subscribes
    commit_interval_s: float = 1.0  # a subscribed member commits what it read at most this often (0: each poll)
    librdkafka: Mapping[str, Any] = field(default_factory=dict)
    debug: str = ""  # librdkafka debug contexts into each client's log ring ("": no client logs)
    debug_lines: int = DEFAULT_LINES  # lines each client's ring holds
    stuck_s: float = STUCK_S  # no record of a partition behind the acknowledged writes this long: stuck

    def check(self) -> None:
        if self.mode not in CONSUMER_MODES:
            raise WorkloadConfigError(f"consumer mode {self.mode!r}: choose one of {', '.join(CONSUMER_MODES)}")
        if isinstance(self.subscribe_p, bool) or not isinstance(self.subscribe_p, (int, float)) \
                or not 0 <= self.subscribe_p <= 1:
            raise WorkloadConfigError(f"consumer subscribe_p = {self.subscribe_p!r}: give a probability 0..1")
        if isinstance(self.commit_interval_s, bool) or not isinstance(self.commit_interval_s, (int, float)) \
                or not self.commit_interval_s >= 0:
            raise WorkloadConfigError(f"consumer commit_interval_s = {self.commit_interval_s!r}: give seconds >= 0")
        if isinstance(self.max_records, bool) or not isinstance(self.max_records, int) or self.max_records < 1:
            raise WorkloadConfigError(f"consumer max_records = {self.max_records!r}: give a whole number >= 1")
        if not isinstance(self.poll_interval_s, (int, float)) or not self.poll_interval_s > 0:
            raise WorkloadConfigError(f"consumer poll_interval_s = {self.poll_interval_s!r}: give seconds > 0")
        if not self.topic:
            raise WorkloadConfigError("consumer topic is empty: name the topic to read")
        if isinstance(self.debug_lines, bool) or not isinstance(self.debug_lines, int) or self.debug_lines < 1:
            raise WorkloadConfigError(f"consumer debug_lines = {self.debug_lines!r}: give a whole number >= 1")
        if not isinstance(self.stuck_s, (int, float)) or not self.stuck_s > 0:
            raise WorkloadConfigError(f"consumer stuck_s = {self.stuck_s!r}: give seconds > 0")

    def config(self, bootstrap: str, process: int, subscribing: bool | None = None,
               logger: Any = None) -> dict[str, Any]:
        """The librdkafka settings of `process`'s consumer (`subscribing`: its mode now, by
        default the options' own; commits are made and recorded by the workload); with a
        `logger` and `debug`, librdkafka's debug lines go to it (after `librdkafka`, which
        may quieten the log level)."""
        subscribing = self.mode == "subscribe" if subscribing is None else subscribing
        logging_to = {"debug": self.debug, "log_level": 7, "logger": logger} if logger is not None and self.debug \
            else {}
        return {"bootstrap.servers": bootstrap, "client.id": f"fencepost-{process}",
                # assign mode uses no group; librdkafka still wants an id
                "group.id": self.group if subscribing else f"{self.group}-{process}",
                "enable.auto.commit": False, "auto.offset.reset": "error",
                "enable.partition.eof": False, **self.librdkafka, **logging_to}


class _Client:
    """One process's consumer and what its librdkafka callbacks left for the workload."""

    __slots__ = ("process", "consumer", "rebalances", "carried", "subscribed", "read", "last_commit",
                 "committing", "held", "reached", "log", "progress", "stuck", "stacks")

    def __init__(self, process: int, log: ClientLog | None = None) -> None:
        self.process = process
        self.log = log  # its client log (one per process, across the consumers it opens), or None
        self.progress: dict[tuple[str, int], float] = {}  # partition -> when it last read it or was not behind
        self.stuck: str | None = None  # why it is stuck now (a flushed episode), or None
        self.stacks = 0  # native stack dumps taken for it (at most STACK_DUMPS)
        self.consumer: Consumer | None = None
        self.rebalances: list[dict[str, Any]] = []  # assign values, in callback order
        self.carried: Any = None  # a message that came after a rebalance: the next poll's first
        self.subscribed = False  # its consumer is a group member (subscribe)
        self.read: dict[tuple[str, int], int] = {}  # partition -> next offset, read since its last commit
        self.last_commit = 0.0  # monotonic time of its last commit
        self.committing: threading.Event | None = None  # set when its commit in the background ended
        self.held: tuple[tuple[str, int], ...] = ()  # the partitions it reads now
        self.reached: dict[tuple[str, int], int] = {}  # partition -> highest offset read since it was given it


class ConsumerWorkload:
    """See the module docstring. `partitions`: those assign mode assigns (every
    partition of the topic); `processes`: the consumers' logical process ids."""

    name = "consumer"
    pending = 0  # every operation completes inside begin

    def __init__(self, bootstrap: str, recorder: ClientRecorder, partitions: Sequence[int],
                 processes: Sequence[int], options: ConsumerOptions = ConsumerOptions(), seed: int = 0,
                 clock: Callable[[], float] | None = None, client_logs: Path | None = None,
                 acked: Callable[[], Mapping[int, int]] | None = None,
                 stacks: Callable[[Path], str] | None = write_native_stacks) -> None:
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
        self._clients = {p: _Client(p, ClientLog(p, client_logs / f"{p}.log", options.debug_lines)
                                    if client_logs is not None and options.debug else None)
                         for p in self.processes}
        self._acked = acked
        self._stacks = stacks  # takes the native stacks into a file, saying what it did; None: never
        self._closed = False
        self._rng = random.Random(f"{seed}/consumers")  # mixed mode's draws
        self._clock = clock or time.monotonic
        self.crashed = 0  # consumers crashed on purpose (`crash`)
        if self.processes:
            self._check_config()

    def _check_config(self) -> None:
        """A consumer built and closed now, so that settings librdkafka refuses are a
        WorkloadConfigError here rather than a `fail` of every operation later."""
        config = self.options.config(self.bootstrap, self.processes[0], logger=_DISCARD)
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
        mode = self.options.mode
        subscribing = mode == "subscribe" or (mode == "mixed" and self._rng.random() < self.options.subscribe_p)
        config = self.options.config(self.bootstrap, client.process, subscribing, logger=client.log)
        if client.log is not None:
            client.log.note(f"opening a consumer ({'subscribe' if subscribing else 'assign'})")
        if not subscribing:
            value = {"partitions": [[self._topic, p] for p in self.partitions], "from": "beginning"}
            handle = self.recorder.invoke(client.process, "assign", value)
        else:
            value = {"topics": [self._topic]}
            handle = self.recorder.invoke(client.process, "subscribe", value)
        consumer = None
        try:
            consumer = Consumer(config)
            if not subscribing:
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
        client.subscribed = subscribing
        client.read = {}
        client.reached = {}
        client.held = () if subscribing else tuple((self._topic, p) for p in self.partitions)
        client.progress = {}
        self.recorder.complete(handle, "ok", value)
        return "ok"

    def _assigned(self, client: _Client, consumer: Consumer, parts: list[TopicPartition]) -> None:
        """on_assign: start each partition at the group's committed offset, or 0 where there is none
        (an out-of-range 0 is reported and handled as any lost position); where the committed
        offsets cannot be read, every partition from the beginning, saying why."""
        partitions = [[tp.topic, tp.partition] for tp in parts]
        client.read = {}
        client.held = tuple((tp.topic, tp.partition) for tp in parts)
        client.reached = {}
        client.progress = {}
        try:
            committed = consumer.committed(parts, timeout=COMMITTED_TIMEOUT_S)
        except KafkaException as e:
            consumer.assign([TopicPartition(tp.topic, tp.partition, OFFSET_BEGINNING) for tp in parts])
            client.rebalances.append({"partitions": partitions, "from": "beginning",
                                      "note": f"committed offsets unknown ({_describe(e)})"})
            return
        chosen = [TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0) for tp in committed]
        consumer.assign(chosen)
        client.reached = {(tp.topic, tp.partition): tp.offset - 1 for tp in chosen}
        client.rebalances.append({"partitions": [[tp.topic, tp.partition] for tp in chosen],
                                  "from": {f"{tp.topic}-{tp.partition}": tp.offset for tp in chosen},
                                  "group": self.options.group})

    @staticmethod
    def _revoked(client: _Client) -> None:
        client.read = {}
        client.held = ()
        client.rebalances.append({"partitions": []})

    # -- polling --------------------------------------------------------------------------

    def _poll(self, client: _Client) -> str:
        consumer = client.consumer
        assert consumer is not None
        handle = self.recorder.invoke(client.process, "poll", None)
        waiting = self._commit_in_flight(client)
        if waiting is not None:
            self.recorder.complete(handle, "fail", None, error=f"not polled: {waiting}")
            self._watch(client, [], [], None, not_polled=waiting)
            return "fail"
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
                    key = (message.topic(), message.partition())
                    client.read[key] = message.offset() + 1
                    if message.offset() > client.reached.get(key, -1):
                        client.reached[key] = message.offset()
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
            self._flush(client, f"the consumer failed: {_describe(e)}")
            self._crash(client, _describe(e))
            return "info"
        self.recorder.complete(handle, "ok", {"records": records}, error="; ".join(notes) or None)
        self._watch(client, records, notes, lost)
        self._record_rebalances(client)
        if lost is not None:
            self._start_over(client, lost)
        elif records and client.subscribed and client.consumer is not None:
            self._maybe_commit(client)
        return "ok"

    # -- commits (group members) -----------------------------------------------------------

    def _commit_in_flight(self, client: _Client) -> str | None:
        """Why `client`'s consumer must not be called into now, or None. confluent-kafka lets one
        call at a time into a consumer handle: while its commit (on the commit thread) is still
        inside librdkafka, any other call (a poll, and the rebalance callbacks a poll runs) waits
        for it, on the harness's main thread, for ever if librdkafka never answers."""
        if client.committing is None or client.committing.is_set():
            return None
        return (f"its commit of {self._clock() - client.last_commit:.1f} s ago has not returned; confluent-kafka "
                "lets one call into a consumer at a time, so a poll now would wait for it")

    def _maybe_commit(self, client: _Client) -> None:
        now = self._clock()
        if not client.read or now - client.last_commit < self.options.commit_interval_s:
            return
        if self._commit_in_flight(client) is not None:
            return  # the last commit still runs in the background
        client.last_commit = now
        offsets = sorted(client.read.items())
        value = {"group": self.options.group, "offsets": [[t, p, o] for (t, p), o in offsets]}
        handle = self.recorder.invoke(client.process, "commit", value)
        outcome: dict[str, Any] = {}
        ended = threading.Event()
        consumer = client.consumer

        def commit() -> None:
            try:
                outcome["result"] = consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets],
                                                    asynchronous=False)
            except KafkaException as e:
                outcome["error"] = e
            except RuntimeError as e:  # the consumer was closed meanwhile
                outcome["error"] = e
            finally:
                ended.set()

        threading.Thread(target=commit, name=f"commit of consumer {client.process}", daemon=True).start()
        if not ended.wait(COMMIT_WAIT_S):
            client.committing = ended
            self.recorder.complete(handle, "info", value, error=f"no answer within {COMMIT_WAIT_S:g}s; "
                                                               "it may still be taken")
            return
        client.committing = None
        error = outcome.get("error")
        if error is not None:
            code = error.args[0].code() if isinstance(error, KafkaException) and error.args \
                and isinstance(error.args[0], KafkaError) else None
            kind: Literal["fail", "info"] = "fail" if code == KafkaError._NO_OFFSET else "info"
            self.recorder.complete(handle, kind, value, error=_describe(error))
            return
        refused = [f"{tp.topic}-{tp.partition}: {tp.error.name() if tp.error else ''}"
                   for tp in outcome.get("result") or () if tp.error is not None]
        if refused:
            self.recorder.complete(handle, "info", value, error="; ".join(refused))
            return
        self.recorder.complete(handle, "ok", value)
        for key, offset in offsets:
            if client.read.get(key) == offset:
                del client.read[key]

    def _record_rebalances(self, client: _Client) -> None:
        while client.rebalances:
            value = client.rebalances.pop(0)
            handle = self.recorder.invoke(client.process, "assign", value)
            self.recorder.complete(handle, "ok", value)

    def _start_over(self, client: _Client, why: str) -> None:
        """Assign the process's partitions again, every one from the beginning (only after a poll
        made, so with no commit in flight: `_commit_in_flight`)."""
        consumer = client.consumer
        client.read = {}
        client.reached = {}
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

    # -- client logs -----------------------------------------------------------------------

    def _watch(self, client: _Client, records: list[dict[str, Any]], notes: list[str], lost: str | None,
               not_polled: str | None = None) -> None:
        """Note the poll in the client's log (`not_polled`: why the consumer was not polled);
        flush the log when the client became stuck."""
        if client.log is not None:
            if not_polled is not None:
                client.log.note(f"poll: not polled: {not_polled}")
            elif records:
                top: dict[int, int] = {}
                for r in records:
                    top[r["partition"]] = max(top.get(r["partition"], -1), r["offset"])
                summary = ", ".join(f"{self._topic}-{p} to {o}" for p, o in sorted(top.items()))
                client.log.note(f"poll: {len(records)} records ({summary})")
            else:
                client.log.note("poll: 0 records")
            for note in notes:
                client.log.note(f"poll error event: {note}")
            if lost:
                client.log.note(f"poll: position lost: {lost}")
        if self._acked is None:
            return
        now = self._clock()
        acked = self._acked()
        read = {(r["topic"], r["partition"]) for r in records}
        behind = []
        for key in client.held:
            acked_to = acked.get(key[1], -1)
            if key in read or acked_to <= client.reached.get(key, -1):
                client.progress[key] = now
            elif now - client.progress.setdefault(key, now) >= self.options.stuck_s:
                behind.append(f"{key[0]}-{key[1]} (read to {client.reached.get(key, -1)}, "
                              f"acknowledged to {acked_to}, no record for {now - client.progress[key]:.0f} s)")
        if behind and client.stuck is None:
            client.stuck = "stuck: " + "; ".join(behind)
            where = self._flush(client, client.stuck, stacks=True)
            log.warning("consumer %s %s%s", client.process, client.stuck,
                        f"; its client log: {where}" if where else "")
        elif not behind and client.stuck is not None:
            client.stuck = None
            if client.log is not None:
                client.log.note("no longer stuck: every partition it holds read or caught up")

    def _flush(self, client: _Client, why: str, stacks: bool = False) -> Path | None:
        """Write the client's log, saying `why`; with `stacks`, also the process's native thread
        stacks beside it (clients/<process>.stacks.<n>.txt, workloads/client_stacks.py)."""
        if client.log is None:
            return None
        client.log.note(why)
        where = client.log.flush(why)
        if stacks and self._stacks is not None and client.stacks < STACK_DUMPS:
            client.stacks += 1
            said = self._stacks(where.with_name(f"{client.process}.stacks.{client.stacks}.txt"))
            client.log.note(said)
            client.log.flush(said)
        return where

    def _crash(self, client: _Client, why: str) -> None:
        handle = self.recorder.invoke(client.process, "crash", None)
        self._close_consumer(client)
        self.recorder.complete(handle, "info", None, error=f"consumer closed after: {why}; reopened by its next op")

    def crash(self, process: int, done: Done) -> None:
        """Crash `process`'s client on purpose: a `crash` op around closing its consumer (without
        a commit); its next op opens a new one."""
        self._crash(self._clients[process], "a scheduled client crash")
        self.crashed += 1
        done(process, "info")

    def _close_consumer(self, client: _Client) -> None:
        consumer, client.consumer = client.consumer, None
        committing, client.committing = client.committing, None
        if committing is not None and not committing.wait(COMMITTED_TIMEOUT_S):
            # a commit still inside librdkafka: closing under it could free what it uses; the
            # consumer is abandoned instead (its thread holds it), as a close that hangs is
            log.warning("consumer %s: a commit did not end within %.0f s; the consumer is abandoned, "
                        "not closed", client.process, COMMITTED_TIMEOUT_S)
            consumer = None
        if consumer is not None and not close_within(consumer, what=f"consumer {client.process}"):
            self._flush(client, "the consumer did not close in time; abandoned", stacks=True)
        if client.log is not None:
            client.log.close()
        client.rebalances.clear()  # also the revoke that close() itself reports
        client.carried = None
        client.read = {}
        client.subscribed = False
        client.held = ()
        client.reached = {}
        client.progress = {}
        client.stuck = None

    def caught_up(self, targets: Mapping[int, int]) -> bool:
        """Whether the consumers have read, of each partition, up to the offset `targets` gives
        (partition -> offset): every process has its consumer open, and every partition of the
        topic is held by some process, each holder having read it that far."""
        held: set[int] = set()
        for client in self._clients.values():
            if client.consumer is None:
                return False
            for topic, partition in client.held:
                held.add(partition)
                if client.reached.get((topic, partition), -1) < targets.get(partition, -1):
                    return False
        return held >= set(self.partitions)

    def client_log_lines(self) -> dict[int, int]:
        """Lines each process's client log was given (kept or not), by process."""
        return {c.process: c.log.total for c in self._clients.values() if c.log is not None}

    def client_logs(self) -> list[tuple[Path, list[str]]]:
        """The client logs written so far: (file, why each flush was made), by process."""
        return [(c.log.path, list(c.log.flushes)) for c in self._clients.values()
                if c.log is not None and c.log.flushed]

    def close(self, timeout: float) -> None:
        """Close every consumer (a subscribed one leaves its group). Idempotent."""
        self._closed = True
        for client in self._clients.values():
            self._close_consumer(client)


class _Discard:
    """A logger that keeps nothing (the settings probe's)."""

    def log(self, level: int, fmt: str, *args: Any) -> None:
        pass


_DISCARD = _Discard()


def _describe(e: BaseException) -> str:
    if isinstance(e, KafkaException) and e.args and isinstance(e.args[0], KafkaError):
        return f"{e.args[0].name()}: {e.args[0].str()}"
    return f"{type(e).__name__}: {e}"
