"""Kafka protocol error codes the broker answers with (names as in Kafka's `Errors` enum).

Owns the code numbers and the mapping from the storage layer's error names
(strings such as "OUT_OF_ORDER_SEQUENCE_NUMBER") to codes.
"""
from __future__ import annotations

from enum import IntEnum


class ErrorCode(IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    MESSAGE_TOO_LARGE = 10
    OFFSET_METADATA_TOO_LARGE = 12
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_CONFIG = 40
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_PRODUCER_ID_MAPPING = 49
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    KAFKA_STORAGE_ERROR = 56
    UNKNOWN_PRODUCER_ID = 59
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    INVALID_RECORD = 87
    UNKNOWN_TOPIC_ID = 100


def error_code_for_name(name: str | None) -> ErrorCode:
    """The code for a Kafka error name as the storage layer reports it ("CORRUPT_MESSAGE", ...).

    None means no error; a name this broker does not know maps to UNKNOWN_SERVER_ERROR.
    """
    if name is None:
        return ErrorCode.NONE
    key = name.strip().upper().replace("-", "_").replace(" ", "_")
    aliases = {"CORRUPT_RECORD": "CORRUPT_MESSAGE", "NOT_LEADER_FOR_PARTITION": "NOT_LEADER_OR_FOLLOWER",
               "RECORD_TOO_LARGE": "MESSAGE_TOO_LARGE", "MESSAGE_SIZE_TOO_LARGE": "MESSAGE_TOO_LARGE"}
    key = aliases.get(key, key)
    try:
        return ErrorCode[key]
    except KeyError:
        return ErrorCode.UNKNOWN_SERVER_ERROR
