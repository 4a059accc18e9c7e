"""Errors a person can act on, and the collector of problems found in input files.

`BadInput` is for input the harness cannot work with at all (not a run
directory, a malformed test.json, a bad command-line value): the CLI prints its
message and exits 254. `Problems` collects what was wrong in files that could
still be read: errors (they make a verdict `unknown`) and warnings (they do not).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import orjson

EXIT_VALID = 0
EXIT_INVALID = 1
EXIT_UNKNOWN = 2
EXIT_BAD_INPUT = 254
EXIT_CRASH = 255


class BadInput(Exception):
    """Input the harness cannot use; the message says what was wrong and what to do."""

    exit_code = EXIT_BAD_INPUT


@dataclass(slots=True)
class Problems:
    """Errors and warnings found while reading input files.

    Only the first `max_kept` of each are kept (a file with a million bad lines
    must not cost a million strings); the counts are exact. With `log`, each
    kept problem is also logged there.
    """

    max_kept: int = 1000
    log: logging.Logger | None = None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error_count: int = 0
    warning_count: int = 0
    _warned_keys: set[str] = field(default_factory=set)

    def error(self, message: str) -> None:
        self.error_count += 1
        if len(self.errors) < self.max_kept:
            self.errors.append(message)
            if self.log is not None:
                self.log.error("%s", message)

    def warning(self, message: str) -> None:
        self.warning_count += 1
        if len(self.warnings) < self.max_kept:
            self.warnings.append(message)
            if self.log is not None:
                self.log.warning("%s", message)

    def warn_once(self, key: str, message: str) -> None:
        """A warning given only the first time `key` is seen."""
        if key not in self._warned_keys:
            self._warned_keys.add(key)
            self.warning(message)

    def listed_errors(self) -> list[str]:
        """The kept errors, plus a line saying how many were left out."""
        return _with_overflow(self.errors, self.error_count, "errors")

    def listed_warnings(self) -> list[str]:
        return _with_overflow(self.warnings, self.warning_count, "warnings")


def _with_overflow(kept: list[str], count: int, what: str) -> list[str]:
    if count > len(kept):
        return [*kept, f"... and {count - len(kept)} more {what} not listed"]
    return list(kept)


def show(value: Any, limit: int = 80) -> str:
    """A value as JSON, cut to `limit` characters, for an error message."""
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def clip(line: bytes, limit: int = 80) -> str:
    """A raw input line, cut to `limit` characters, for an error message."""
    text = line.rstrip(b"\n").decode("utf-8", "replace")
    return text if len(text) <= limit else text[: limit - 3] + "..."
