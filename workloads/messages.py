"""Consumed confluent-kafka messages as the history and final.jsonl write them
(docs/FORMATS.md): one record dict per message, the value a string."""
from __future__ import annotations

from typing import Any


def value_text(raw: bytes | None) -> str:
    """A record's value as text: the workloads write UTF-8 strings; anything else is
    shown with replacement characters, a null value as the empty string."""
    return "" if raw is None else raw.decode("utf-8", "replace")


def poll_record(message: Any) -> dict[str, Any]:
    """One record of a poll's `records`: topic, partition, offset, value, leader_epoch."""
    return {"topic": message.topic(), "partition": message.partition(), "offset": message.offset(),
            "value": value_text(message.value()), "leader_epoch": message.leader_epoch()}
