"""Which topic names and topic configs are legal (Kafka's rules), for the single-node stand-in and the controller.

Both refuse a topic creation with these messages: INVALID_TOPIC_EXCEPTION for a
name, INVALID_CONFIG for a config; the Metadata API also skips illegal names.
"""
from __future__ import annotations

import re

MAX_TOPIC_NAME = 249
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
# Topic configs whose values must be integers (others are stored as given).
_INT_CONFIGS = {"min.insync.replicas": 1, "segment.bytes": 14, "retention.ms": -1, "retention.bytes": -1,
                "max.message.bytes": 0, "flush.messages": 1, "flush.ms": 0}
_BOOL_CONFIGS = {"unclean.leader.election.enable"}


def topic_name_error(name: str | None) -> str | None:
    """Why `name` is not a legal topic name (Kafka's rules), or None when it is."""
    if not name:
        return "topic name is empty"
    if name in (".", ".."):
        return f"topic name {name!r} is not allowed"
    if len(name) > MAX_TOPIC_NAME:
        return f"topic name is {len(name)} characters long, the maximum is {MAX_TOPIC_NAME}"
    if not _LEGAL_TOPIC.match(name):
        return f"topic name {name!r} has characters other than ASCII letters, digits, '.', '_' and '-'"
    return None


def config_error(name: str, value: str | None) -> str | None:
    if name in _INT_CONFIGS:
        try:
            number = int(value or "")
        except ValueError:
            return f"topic config {name}={value!r} is not an integer"
        if number < _INT_CONFIGS[name]:
            return f"topic config {name}={number} is below its minimum {_INT_CONFIGS[name]}"
    if name in _BOOL_CONFIGS and (value or "").lower() not in ("true", "false"):
        return f"topic config {name}={value!r} must be true or false"
    return None
