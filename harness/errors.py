"""Errors a person can act on, and the collector of problems found in input files.

`BadInput` is for input the harness cannot work with at all (not a run
directory, a malformed test.json, a bad command-line value): the CLI prints its
message and exits 254. `Problems` collects what was wrong in files that could
still be read: errors (they make a verdict `unknown`) and warnings (they do not).
"""
from __future__ import annotations

import logging
import re
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


# What a terminal would act on rather than show: C0 controls, DEL and C1 controls (Cc), the
# line and paragraph separators, bidirectional embeddings, overrides, isolates and marks,
# zero-width and other invisible format characters (Cf, U+2028/2029), lone surrogates (which
# cannot even be encoded), and the tag characters outside the BMP.
_UNPRINTABLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f]")
_UNPRINTABLE_OR_LINE = re.compile(_UNPRINTABLE.pattern[:-1] + "\n\t]")


def printable(text: str, newlines: bool = True) -> str:
    """`text` as it may reach a terminal: every character a terminal would act on rather than
    show (ESC, CR, BEL, backspace, DEL, C1 controls, U+2028/2029, bidi overrides and isolates,
    zero-width characters; and, unless `newlines`, newline and tab) written as JSON's escape of
    it (\\u001b; outside the BMP a surrogate pair), so that inside a JSON string the escape
    means the character again. Everything else, other scripts and emoji too, is left as it is.
    Every message that carries bytes of a run directory or a spec to stdout or stderr goes
    through here (the CLI's error printing, `check`'s summary, `trace`, `compare`, `serve`'s log)."""
    pattern = _UNPRINTABLE if newlines else _UNPRINTABLE_OR_LINE
    return pattern.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code > 0xFFFF:
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def show(value: Any, limit: int = 80) -> str:
    """A value as JSON, cut to `limit` characters, for an error message (`printable`, on one line)."""
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = repr(value)
    text = printable(text, newlines=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def clip(line: bytes, limit: int = 80) -> str:
    """A raw input line, cut to `limit` characters, for an error message (`printable`, on one line)."""
    text = printable(line.rstrip(b"\n").decode("utf-8", "replace"), newlines=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."
