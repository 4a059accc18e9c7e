"""A test spec written as the TOML file `fencepost run --config FILE.toml` reads (docs/RUN.md):
what `fencepost shrink` hands a user. Reading it back with `build_spec` gives the same spec
(tests hold the round trip).

Rules: every setting of the spec is written except `results` (the reader's own folder) and
`notes` (written by fencepost); top-level settings first, then one table per section, the
nemesis script as `[[nemesis.script]]` tables; strings in TOML's basic form, nested tables
inline.
"""
from __future__ import annotations

import math
import re
from typing import Any, Mapping

from fencepost.harness.errors import printable
from fencepost.harness.run.spec import TestSpec

LEFT_OUT = ("results", "notes")
TABLES = ("topic", "nemesis", "producer", "consumer", "timeouts", "backend_options", "system_options", "checker")


def spec_toml(spec: TestSpec, comment: str = "") -> str:
    data = spec.to_json()
    # A comment holds no control character (TOML forbids them there): escaped as errors.printable does.
    lines = [f"# {printable(line, newlines=False)}".rstrip() for line in comment.splitlines()] if comment else []
    for key, value in data.items():
        if key in LEFT_OUT or key in TABLES:
            continue
        lines.append(f"{key} = {value_toml(value)}")
    for table in TABLES:
        section = dict(data.get(table) or {})
        script = section.pop("script", []) if table == "nemesis" else []
        if section:
            lines += ["", f"[{table}]", *(f"{_key(k)} = {value_toml(v)}" for k, v in section.items())]
        for step in script:
            lines += ["", "[[nemesis.script]]", *(f"{_key(k)} = {value_toml(v)}" for k, v in step.items())]
    return "\n".join(lines) + "\n"


def value_toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"TOML has no {value!r} a spec could hold")
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(value_toml(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(k)} = {value_toml(v)}" for k, v in value.items()) + "}"
    raise ValueError(f"cannot write {value!r} ({type(value).__name__}) as TOML")


def _key(key: str) -> str:
    bare = key.replace("_", "").replace("-", "").isalnum() and key.isascii()
    return key if bare else toml_string(key)


_NOT_PLAIN = re.compile('[^ !#-\\[\\]-~]')  # all but printable ASCII less quote and backslash
_TOML_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def toml_string(text: str) -> str:
    """`text` as a TOML basic string, in ASCII: quote, backslash and control characters (DEL
    too) escaped, every other non-ASCII character as \\uXXXX, or \\UXXXXXXXX outside the Basic
    Multilingual Plane (JSON's surrogate pairs are no TOML). A lone surrogate is no character
    TOML can hold: ValueError."""
    return '"' + _NOT_PLAIN.sub(_toml_escape, text) + '"'


def _toml_escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if char in _TOML_ESCAPES:
        return _TOML_ESCAPES[char]
    if 0xD800 <= code <= 0xDFFF:
        raise ValueError(f"cannot write the lone surrogate U+{code:04X} as TOML")
    return f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}"
