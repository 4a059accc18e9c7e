"""What a produce's delivery report says about the write: `ok`, `fail` or `info`.

`fail` means the write surely did not happen, `info` that we cannot know
(docs/FORMATS.md, history.jsonl); a checker trusts a `fail`, so a `fail` must be proven:

- A broker error proves nothing about a message that may have been sent before.
  librdkafka re-sends a batch after a leader-change error (NOT_LEADER_OR_FOLLOWER,
  which a leader answers after the append when it loses leadership while an
  acks=all batch waits, as Kafka's DelayedProduce does) without counting it as a
  retry, so even with `retries = 0` the error reported may be the second attempt's
  while the first is in the log (a kill/pause/partition run
  read two values at offsets of leader epoch 2 whose sends had failed with
  NOT_ENOUGH_REPLICAS, an error the broker gives only before it appends, from epoch 4).
  So NOT_ENOUGH_REPLICAS, UNKNOWN_TOPIC_OR_PART and the like are `info`.
- The errors in DEFINITE_PRODUCE_ERRORS are the same for every attempt of a
  message, so no earlier attempt was appended either; they are `fail` for a
  producer that does not retry on its own (`retries = 0`, not idempotent).
- Timeouts (_MSG_TIMED_OUT, REQUEST_TIMED_OUT), lost connections and anything
  else are `info`.
- A message produce() refused (BufferError, KafkaException) was never handed to
  librdkafka: `fail`, whatever the retries (the producer's `refused`).
"""
from __future__ import annotations

from typing import Literal

from confluent_kafka import KafkaError

DEFINITE_PRODUCE_ERRORS = frozenset((KafkaError.INVALID_REQUIRED_ACKS,))


def has_definite_failures(idempotent: bool, retries: int) -> bool:
    """Whether this producer's DEFINITE_PRODUCE_ERRORS prove that a write did not happen."""
    return not idempotent and retries == 0


def delivery_type(err: KafkaError | None, definite_failures: bool) -> Literal["ok", "fail", "info"]:
    """The completion type of a delivery report: ok, fail or info."""
    if err is None:
        return "ok"
    if definite_failures and err.code() in DEFINITE_PRODUCE_ERRORS:
        return "fail"
    return "info"
