"""The final read (docs/RUN.md, the final read; docs/FORMATS.md, final.jsonl): after the heal, a fresh consumer
reads every partition from offset 0 to its end, in bounded time.

`final_read_lines` returns final.jsonl lines: per partition, in the order
given, its `read` lines (offset order) and then one `read-state` line —
`complete` is true only when the read reached the end, the high watermark
asked of the partition's leader before reading and asked again after it (a second
later) until it no longer grows; it also says `end_offset`, and
`error` when it did not get there (no leader answered, the position was lost,
time ran out). The harness publishes them into final.jsonl (harness/run/traffic.py). The
replicas' own logs are the cluster's part (`Cluster.replica_log_lines`).

The consumer reads with `auto.offset.reset = error`: a log that does not start
at 0, or one truncated under the reader, ends that partition's read incomplete
rather than silently elsewhere. Half the time is at most spent finding the
high watermarks (a partition without a leader is retried until then); the
rest is for reading.
"""
from __future__ import annotations

import time
from typing import Any, Iterable

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from fencepost.workloads.closing import close_within
from fencepost.workloads.consumer import POSITION_LOST
from fencepost.workloads.messages import value_text

GROUP = "fencepost-final-read"
BATCH = 1000
WATERMARK_TRY_S = 2.0  # one high-watermark question; retried until half the time is spent
RETRY_PAUSE_S = 0.2
CONSUME_WAIT_S = 0.5
# Before asking the ends again: a leader elected during the read may answer a high watermark
# below what its partition has committed until its followers fetch from it (Kafka before 2.2,
# KAFKA-2334, fixed by KIP-207), and a read that stopped there would miss acknowledged records.
SETTLE_CHECK_S = 1.0


def final_read_lines(bootstrap: str, topic: str, partitions: Iterable[int], timeout_s: float = 60.0,
                     librdkafka: dict[str, Any] | None = None,
                     unreadable: dict[int, str] | None = None) -> list[dict[str, Any]]:
    """`read` and `read-state` lines of every partition (see the module docstring);
    `unreadable` partitions (known to have no leader that could ever serve them) are not asked
    for: their read-state is incomplete, with the reason as its error."""
    started = time.monotonic()
    deadline = started + timeout_s
    partitions = list(partitions)
    unreadable = unreadable or {}
    asked = [p for p in partitions if p not in unreadable]
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                         "auto.offset.reset": "error", "enable.partition.eof": False, **(librdkafka or {})})
    try:
        ends, errors = _high_watermarks(consumer, topic, asked, started + timeout_s / 2) if asked else ({}, {})
        reads: dict[int, list[dict[str, Any]]] = {p: [] for p in ends}
        while True:
            _read(consumer, topic, ends, errors, deadline, reads)
            if not ends or time.monotonic() + SETTLE_CHECK_S + WATERMARK_TRY_S > deadline:
                break
            time.sleep(SETTLE_CHECK_S)
            again, _ = _high_watermarks(consumer, topic, [p for p in ends if p not in errors],
                                        time.monotonic() + WATERMARK_TRY_S)
            grown = {p: end for p, end in again.items() if end > ends[p]}
            if not grown:
                break
            ends.update(grown)  # read on to the end asked last
    finally:
        close_within(consumer, what="the final-read consumer")
    errors.update(unreadable)
    lines: list[dict[str, Any]] = []
    for p in partitions:
        records = reads.get(p, [])
        lines += records
        end = ends.get(p)
        next_offset = records[-1]["offset"] + 1 if records else 0
        state: dict[str, Any] = {"kind": "read-state", "topic": topic, "partition": p,
                                 "complete": end is not None and p not in errors and next_offset >= end,
                                 "end_offset": end}
        if not state["complete"]:
            state["error"] = errors.get(p) or (f"read up to offset {next_offset} of {end} in {timeout_s:g}s")
        lines.append(state)
    return lines


def _high_watermarks(consumer: Consumer, topic: str, partitions: list[int], until: float
                     ) -> tuple[dict[int, int], dict[int, str]]:
    """Each partition's high watermark, asking again until `until`; the partitions
    without one, with the last answer."""
    ends: dict[int, int] = {}
    errors: dict[int, str] = {}
    while True:
        for p in partitions:
            if p in ends:
                continue
            try:
                _, ends[p] = consumer.get_watermark_offsets(
                    TopicPartition(topic, p), timeout=max(0.1, min(WATERMARK_TRY_S, until - time.monotonic())))
                errors.pop(p, None)
            except KafkaException as e:
                errors[p] = f"no high watermark from the leader: {_describe(e)}"
        if len(ends) == len(partitions) or time.monotonic() + RETRY_PAUSE_S >= until:
            return ends, errors
        time.sleep(RETRY_PAUSE_S)


def _read(consumer: Consumer, topic: str, ends: dict[int, int], errors: dict[int, str], deadline: float,
          reads: dict[int, list[dict[str, Any]]]) -> None:
    """Adds to `reads` every record below its partition's end, from where that partition's
    reads stopped (offset 0 at first); a partition whose position is lost stops there (its
    error in `errors`) and is not read again."""
    next_offset = {p: reads[p][-1]["offset"] + 1 if reads[p] else 0 for p in ends}
    todo = {p for p, end in ends.items() if next_offset[p] < end and p not in errors}
    if todo:
        consumer.assign([TopicPartition(topic, p, next_offset[p]) for p in sorted(todo)])
    while todo and (left := deadline - time.monotonic()) > 0:
        for m in consumer.consume(BATCH, timeout=min(left, CONSUME_WAIT_S)):
            p = m.partition()
            if p not in todo:
                continue
            err = m.error()
            if err is not None:
                if err.code() in POSITION_LOST:
                    errors[p] = f"the read lost its position at offset {next_offset[p]}: {err.name()}: {err.str()}"
                    todo.discard(p)
                continue  # a transient error: librdkafka goes on by itself
            offset = m.offset()
            assert offset is not None  # a message without an error has its offset
            if offset < next_offset[p] or offset >= ends[p]:
                continue
            reads[p].append({"kind": "read", "topic": topic, "partition": p, "offset": offset,
                             "value": value_text(m.value()), "leader_epoch": m.leader_epoch()})
            next_offset[p] = offset + 1
            if offset + 1 >= ends[p]:
                todo.discard(p)


def _describe(e: KafkaException) -> str:
    err = e.args[0] if e.args else None
    return f"{err.name()}: {err.str()}" if isinstance(err, KafkaError) else str(e)
