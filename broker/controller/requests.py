"""Requests of the controller protocol: their fields checked and typed, then applied to the state machine."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fencepost.broker.common import controller_protocol as protocol

from .state import ControllerState, Result

_MISSING = object()


class BadRequest(ValueError):
    """A request of a known type whose fields are missing or of the wrong type (answered INVALID_REQUEST)."""


def _field(message: dict[str, Any], name: str, kind: type, default: Any = _MISSING) -> Any:
    value = message.get(name, default)
    if value is _MISSING:
        raise BadRequest(f"{message['type']} request lacks the field {name!r}")
    # bool is an int in Python, never in this protocol
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise BadRequest(f"{message['type']} field {name!r} must be {kind.__name__}, got {value!r}")
    return value


def _int_list(message: dict[str, Any], name: str) -> list[int]:
    value = _field(message, name, list)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise BadRequest(f"{message['type']} field {name!r} must be a list of integers, got {value!r}")
    return value


def _configs(message: dict[str, Any]) -> dict[str, str | None]:
    value = _field(message, "configs", dict, {})
    if not all(v is None or isinstance(v, str) for v in value.values()):
        raise BadRequest(f"create_topic configs must map names to strings or null, got {value!r}")
    return value


def _incarnation(message: dict[str, Any]) -> str:
    value = message.get("incarnation")
    if not isinstance(value, (str, int)) or isinstance(value, bool) or value == "":
        raise BadRequest(f"register field 'incarnation' must be a non-empty string or an integer, got {value!r}")
    return str(value)


def _register(s: ControllerState, m: dict[str, Any], now: float) -> Result:
    return s.register(_field(m, "node_id", int), _field(m, "host", str), _field(m, "port", int),
                      _incarnation(m), now)


def _heartbeat(s: ControllerState, m: dict[str, Any], now: float) -> Result:
    _field(m, "metadata_version", int, -1)
    return s.heartbeat(_field(m, "node_id", int), _field(m, "broker_epoch", int), now)


def _alter_partition(s: ControllerState, m: dict[str, Any], now: float) -> Result:
    return s.alter_partition(_field(m, "node_id", int), _field(m, "broker_epoch", int), _field(m, "topic", str),
                             _field(m, "partition", int), _field(m, "leader_epoch", int),
                             _field(m, "partition_epoch", int), _int_list(m, "isr"))


def _create_topic(s: ControllerState, m: dict[str, Any], now: float) -> Result:
    return s.create_topic(_field(m, "name", str), _field(m, "partitions", int),
                          _field(m, "replication_factor", int), _configs(m), _field(m, "validate_only", bool, False))


def _delete_topic(s: ControllerState, m: dict[str, Any], now: float) -> Result:
    return s.delete_topic(_field(m, "name", str))


def _shutdown(s: ControllerState, m: dict[str, Any], now: float) -> Result:
    return s.shutdown(_field(m, "node_id", int), _field(m, "broker_epoch", int))


def _describe(s: ControllerState, m: dict[str, Any], now: float) -> Result:
    return s.describe()


HANDLERS: dict[str, Callable[[ControllerState, dict[str, Any], float], Result]] = {
    protocol.REGISTER: _register,
    protocol.HEARTBEAT: _heartbeat,
    protocol.ALTER_PARTITION: _alter_partition,
    protocol.CREATE_TOPIC: _create_topic,
    protocol.DELETE_TOPIC: _delete_topic,
    protocol.SHUTDOWN: _shutdown,
    protocol.DESCRIBE: _describe,
}


def apply_request(state: ControllerState, message: dict[str, Any], now: float) -> Result:
    """The answer (without "id") to a request whose type is in HANDLERS; INVALID_REQUEST for bad fields."""
    try:
        return HANDLERS[message["type"]](state, message, now)
    except BadRequest as e:
        return {"error": "INVALID_REQUEST", "message": str(e)}, False
