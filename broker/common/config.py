"""What the `serve` and `controller` command lines share: the error a person must fix, and HOST:PORT parsing."""
from __future__ import annotations


class ConfigError(ValueError):
    """A configuration value a person must fix; the message says which and how."""


def parse_host_port(text: str, flag: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"{flag} must be HOST:PORT with a port in 0..65535, got {text!r}")
    return host.strip("[]"), int(port)
