"""What a produce's delivery report says about the write: `ok`, `fail` or `info`.

`fail` means the write surely did not happen, `info` that we cannot know
(DESIGN.md §3.2); a checker trusts a `fail`, so a `fail` must be proven:

- The broker checks the DEFINITE_PRODUCE_ERRORS before it appends anything, so
  after one of them the batch is surely not in the log — provided no earlier
  attempt of the same message was sent: only a producer that does not retry
  (`retries = 0`, not idempotent; an idempotent producer always retries) has
  definite failures. With retries, an attempt that timed out may have been
  appended, and the last attempt's error says nothing about it.
- NOT_LEADER_OR_FOLLOWER is not definite: a leader that loses its leadership
  while an acks=all batch waits for replication answers it after the append
  (Kafka's DelayedProduce does the same), and the batch may survive on the new
  leader. Timeouts (_MSG_TIMED_OUT, REQUEST_TIMED_OUT), lost connections and
  anything else are `info`.
- A message produce() refused (BufferError, KafkaException) was never handed to
  librdkafka: `fail`, whatever the retries (the producer's `refused`).
"""
from __future__ import annotations

from confluent_kafka import KafkaError

DEFINITE_PRODUCE_ERRORS = frozenset((
    KafkaError.NOT_ENOUGH_REPLICAS,
    KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC,
    KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.INVALID_REQUIRED_ACKS,
))


def has_definite_failures(idempotent: bool, retries: int) -> bool:
    """Whether this producer's DEFINITE_PRODUCE_ERRORS prove that a write did not happen."""
    return not idempotent and retries == 0


def delivery_type(err: KafkaError | None, definite_failures: bool) -> str:
    """The completion type of a delivery report: ok, fail or info."""
    if err is None:
        return "ok"
    if definite_failures and err.code() in DEFINITE_PRODUCE_ERRORS:
        return "fail"
    return "info"
