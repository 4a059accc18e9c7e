"""Mutated run files, for fuzzing the readers (tests/reliability/test_input_fuzz.py,
tests/harness/test_loading_native.py, tests/harness/test_parquet_native.py): `LINES`, the
lines of a small synthetic run (tests/support/synth) generated once into `WORK`, and
`mutation`, a hypothesis strategy of those lines mutated: lines truncated,
replaced by bad JSON, binary garbage, NUL bytes or invalid UTF-8, fields
dropped or given the wrong type, huge or negative numbers, lines duplicated
(so indices repeat), shuffled or emptied.
"""
from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import orjson
from hypothesis import strategies as st

from tests.support.synth.generate import GenConfig, generate_to_dir

WORK = Path(tempfile.mkdtemp(prefix="input-fuzz-"))
atexit.register(shutil.rmtree, WORK, True)
BASE = WORK / "base"
generate_to_dir(BASE, GenConfig(seed=9, lines=150, partitions=2, producers=4, consumers=1))
LINES = {name: (BASE / name).read_bytes().splitlines(keepends=True) for name in ("history.jsonl", "final.jsonl")}
TEST_JSON = (BASE / "test.json").read_bytes()

HUGE = [2**63 - 1, -(2**63), 2**64, 10**30, -1, 0, 1e308, -1e308, 1e-308]
GARBAGE = [b"", b"\n", b"\x00\x00\x00\n", b"\xff\xfe\xfd\n", b'{"index": 1\n', b"[1, 2, 3]\n", b"null\n", b'"s"\n',
           b"{}\n", b"{\"a\": NaN}\n", b'{"index": 1e999}\n', b'{"index": 123456789012345678901234567890}\n',
           b"\r\n", b"{\"value\": \"\xc3\x28\"}\n", b"{\"value\": \"\\ud800\"}\n", b" \t \n"]


def raw(value: object) -> bytes:
    """JSON text for any value, integers beyond 64 bits included (orjson refuses those)."""
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64:
        return str(value).encode()
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return b"null"


def with_field(d: dict, key: str, value: object) -> bytes:
    """The object `d` with `key` set to `value`, as one line (value written raw)."""
    rest = {k: v for k, v in d.items() if k != key}
    body = orjson.dumps(rest)[1:-1]
    return b"{" + body + (b"," if body else b"") + raw(key) + b":" + raw(value) + b"}\n"


wrong_values = st.one_of(st.sampled_from(HUGE), st.none(), st.booleans(), st.text(max_size=8),
                         st.lists(st.integers(-3, 3), max_size=3), st.dictionaries(st.text(max_size=3),
                                                                                     st.integers(), max_size=2),
                         st.floats(allow_nan=False, allow_infinity=False))


@st.composite
def mutation(draw, lines: list[bytes]) -> list[bytes]:
    lines = list(lines)
    at = draw(st.integers(0, max(len(lines) - 1, 0)))
    kind = draw(st.sampled_from(["truncate", "garbage", "binary", "field", "drop-field", "nested", "duplicate",
                                 "same-index", "swap", "delete", "nul", "crlf"]))
    if not lines:
        return [draw(st.sampled_from(GARBAGE))]
    line = lines[at]
    try:
        d = orjson.loads(line)
    except orjson.JSONDecodeError:
        d = None
    if kind == "truncate":
        lines[at] = line[:draw(st.integers(0, max(len(line) - 1, 0)))] + draw(st.sampled_from([b"\n", b""]))
    elif kind == "garbage":
        lines[at] = draw(st.sampled_from(GARBAGE))
    elif kind == "binary":
        lines[at] = draw(st.binary(min_size=1, max_size=40)) + b"\n"
    elif kind == "nul":
        cut = draw(st.integers(0, len(line)))
        lines[at] = line[:cut] + b"\x00" * draw(st.integers(1, 3)) + line[cut:]
    elif kind == "crlf":
        lines[at] = line.rstrip(b"\n") + b"\r\n"
    elif kind in ("field", "drop-field", "nested") and isinstance(d, dict) and d:
        key = draw(st.sampled_from(sorted(d)))
        if kind == "drop-field":
            del d[key]
            lines[at] = orjson.dumps(d) + b"\n"
        elif kind == "field":
            lines[at] = with_field(d, key, draw(wrong_values))
        else:
            value = d.get("value")
            if isinstance(value, dict) and value:
                inner = draw(st.sampled_from(sorted(value)))
                if isinstance(value[inner], list) and value[inner] and isinstance(value[inner][0], dict):
                    record = dict(value[inner][0])
                    record[draw(st.sampled_from(sorted(record)))] = draw(wrong_values)
                    value[inner] = [record, *value[inner][1:]]
                else:
                    value[inner] = draw(wrong_values)
                d["value"] = value
            lines[at] = raw(d) + b"\n" if all(not isinstance(v, int) or -(2**63) <= v < 2**64
                                               for v in _numbers(d)) else lines[at]
    elif kind == "duplicate":
        lines.insert(draw(st.integers(0, len(lines))), line)
    elif kind == "same-index" and isinstance(d, dict) and "index" in d:
        other = draw(st.integers(0, len(lines) - 1))
        d["index"] = other
        lines[at] = orjson.dumps(d) + b"\n"
    elif kind == "swap":
        other = draw(st.integers(0, len(lines) - 1))
        lines[at], lines[other] = lines[other], lines[at]
    elif kind == "delete":
        del lines[at]
    return lines


def _numbers(value: object):
    if isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, list):
        for v in value:
            yield from _numbers(v)
    elif isinstance(value, int) and not isinstance(value, bool):
        yield value
