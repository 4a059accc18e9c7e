"""One run's history.jsonl and final.jsonl copied to Parquet for `fencepost analyze`: one row
per line, the run's id beside it, so that a campaign's histories can be queried with Spark
SQL (`spark.read.parquet("OUT/parquet/history")`) long after the check.

History columns: index, time, process (a string: a client's number or "nemesis"), type, f,
value (its JSON text), error. Final columns: kind, node, topic, partition, offset, value,
leader_epoch, log_end_offset, high_watermark, complete, epochs (its JSON text). A field of
another type than its column's is null, other fields are left out, and so is a line that is
not a JSON object (the check reports it).

Files whose every line is plain are read into columns by the C reader (harness._native:
`history_columns`, `final_columns`), a JSON value's text then as the line has it; any other
file (and every file without the C reader) by the code below, a value's text then as
orjson writes it. The texts may differ in spacing and escapes, never in the JSON they hold.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from fencepost.harness.check import native_load

HISTORY_SCHEMA = pa.schema([("run_id", pa.string()), ("index", pa.int64()), ("time", pa.int64()),
                            ("process", pa.string()), ("type", pa.string()), ("f", pa.string()),
                            ("value", pa.string()), ("error", pa.string())])
FINAL_SCHEMA = pa.schema([("run_id", pa.string()), ("kind", pa.string()), ("node", pa.string()),
                          ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
                          ("value", pa.string()), ("leader_epoch", pa.int32()), ("log_end_offset", pa.int64()),
                          ("high_watermark", pa.int64()), ("complete", pa.bool_()), ("epochs", pa.string())])


def copy_history(source: Path, dest: Path, run_id: str) -> int:
    """history.jsonl at `source` as a Parquet file at `dest`; the rows written."""
    columns = native_load.history_columns(source)
    if columns is None:
        lines = _objects(source)
        dumps = orjson.dumps
        columns = {name: [d.get(name) for d in lines] for name in HISTORY_SCHEMA.names[1:]}
        columns["process"] = [p if p is None or type(p) is str else str(p) if type(p) is int
                              else dumps(p).decode() for p in columns["process"]]
        columns["value"] = [None if v is None else dumps(v).decode() for v in columns["value"]]
    return _write(dest, run_id, HISTORY_SCHEMA, columns)


def copy_final(source: Path, dest: Path, run_id: str) -> int:
    """final.jsonl at `source` as a Parquet file at `dest`; the rows written."""
    columns = native_load.final_columns(source)
    if columns is None:
        lines = _objects(source)
        columns = {name: [d.get(name) for d in lines] for name in FINAL_SCHEMA.names[1:]}
        columns["epochs"] = [None if e is None else orjson.dumps(e).decode()
                             for e in columns["epochs"]]
    return _write(dest, run_id, FINAL_SCHEMA, columns)


def _objects(source: Path) -> list[dict[str, Any]]:
    """The lines of `source` that are JSON objects, parsed."""
    loads = orjson.loads
    with open(source, "rb") as file:
        raw = file.read().splitlines()
    try:
        parsed = [loads(line) for line in raw]
    except orjson.JSONDecodeError:  # rare: a torn or corrupt line; parse line by line
        parsed = []
        for line in raw:
            try:
                parsed.append(loads(line))
            except orjson.JSONDecodeError:
                pass
    return [d for d in parsed if type(d) is dict]


def _write(dest: Path, run_id: str, schema: pa.Schema, columns: dict[str, list]) -> int:
    rows = len(columns[schema.names[1]])
    arrays = [pa.array([run_id] * rows, pa.string())]
    arrays += [_array(columns[field.name], field.type) for field in list(schema)[1:]]
    dest.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_arrays(arrays, schema=schema), dest)
    return rows


def _array(values: list[Any], kind: pa.DataType) -> pa.Array:
    """`values` as an Arrow array of `kind`; a value of another type (or out of range) is null."""
    try:
        return pa.array(values, kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
        return pa.array([v if _fits(v, kind) else None for v in values], kind)


def _fits(value: Any, kind: pa.DataType) -> bool:
    if pa.types.is_integer(kind):
        limit = 2 ** (kind.bit_width - 1)
        return type(value) is int and -limit <= value < limit
    if pa.types.is_boolean(kind):
        return type(value) is bool
    return type(value) is str
