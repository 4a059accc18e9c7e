"""History export in Jepsen's EDN form, for its kafka workload's checker
(jepsen-io/jepsen, jepsen/src/jepsen/tests/kafka.clj).

One op map per line, as Jepsen's history.edn:
  {:index 0, :time 123, :type :invoke, :process 0, :f :send, :value [[:send k "v"]]}
- send: invoke and fail/info `[[:send k v]]`, ok `[[:send k [offset v]]]`
- poll: invoke and fail/info `[[:poll]]`, ok `[[:poll {k [[offset v] ...]}]]`
- assign: `[k ...]`, plus `:seek-to-beginning? true` when it read from the beginning
- subscribe, crash, unknown client fs and nemesis ops (`:process :nemesis`):
  their value converted as is (objects -> maps with keyword keys)
- `:error "..."` when the op has one.
A key k is the partition number when the history has one topic, else the
string "topic-partition" (Jepsen's keys map one-to-one to topic-partitions).
Lines the reader rejects are skipped (and reported).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from fencepost.harness.errors import Problems
from fencepost.harness.rundir.atomic import atomic_file
from fencepost.harness.rundir.history import NEMESIS, Op, iter_history
from fencepost.harness.rundir.names import HISTORY_FILE

EDN_FILE = "history.edn"

Key = int | str
KeyOf = Callable[[str, int], Key]

_KEYWORD = re.compile(r"[A-Za-z*!_?$%&=<>][A-Za-z0-9*!_?$%&=<>.+\-]*")
_ESCAPES = {ord('"'): '\\"', ord("\\"): "\\\\", ord("\n"): "\\n", ord("\t"): "\\t",
            ord("\r"): "\\r", **{c: f"\\u{c:04x}" for c in (*range(0x20), 0x7F)
                                 if c not in (0x0A, 0x09, 0x0D)}}


@dataclass(slots=True)
class ExportResult:
    path: Path
    ops: int
    problems: Problems


def export_edn(run_dir: Path, out: Path | None = None) -> ExportResult:
    """Write `run_dir`/history.jsonl as EDN to `out` (default `run_dir`/history.edn), streamed
    through the one atomic writer (harness/rundir/atomic.py): `out` holds the whole export or
    what it held before; one that exists as anything but a regular file is refused
    (NotRegularFile, a BadInput) before the history is read."""
    history = Path(run_dir) / HISTORY_FILE
    out = Path(run_dir) / EDN_FILE if out is None else Path(out)
    problems = Problems()
    ops = 0
    with atomic_file(out, "w") as file:
        key_of = key_mapping(_topics(history))
        for op in iter_history(history, problems):
            file.write(op_edn(op, key_of))
            file.write("\n")
            ops += 1
    return ExportResult(out, ops, problems)


def key_mapping(topics: Iterable[str]) -> KeyOf:
    """Partition number when there is one topic, else "topic-partition"."""
    if len(set(topics)) <= 1:
        return lambda topic, partition: partition
    return lambda topic, partition: f"{topic}-{partition}"


def op_edn(op: Op, key_of: KeyOf) -> str:
    """One op as an EDN map."""
    process = ":nemesis" if op.process == NEMESIS else str(op.process)
    fields = [f"{{:index {op.index}", f":time {op.time}", f":type {keyword(op.type)}",
              f":process {process}", f":f {keyword(op.f)}"]
    if op.process == NEMESIS:
        fields.append(f":value {edn(op.value)}")
    else:
        fields.extend(_client_value(op, key_of))
    if op.error is not None:
        fields.append(f":error {edn(op.error)}")
    return ", ".join(fields) + "}"


def _client_value(op: Op, key_of: KeyOf) -> list[str]:
    f, v = op.f, op.value
    if f == "send":
        key = edn(key_of(v["topic"], v["partition"]))
        if op.type == "ok":
            return [f":value [[:send {key} [{v['offset']} {edn(v['value'])}]]]"]
        return [f":value [[:send {key} {edn(v['value'])}]]"]
    if f == "poll":
        if op.type != "ok":
            return [":value [[:poll]]"]
        by_key: dict[Key, list[str]] = {}
        for r in v["records"]:
            by_key.setdefault(key_of(r["topic"], r["partition"]), []).append(
                f"[{r['offset']} {edn(r['value'])}]")
        polled = ", ".join(f"{edn(k)} [{' '.join(pairs)}]" for k, pairs in by_key.items())
        return [f":value [[:poll {{{polled}}}]]"]
    if f in ("assign", "subscribe") and _partition_list(v):
        keys = " ".join(edn(key_of(t, p)) for t, p in v["partitions"])
        fields = [f":value [{keys}]"]
        if v.get("from") == "beginning":
            fields.append(":seek-to-beginning? true")
        return fields
    return [f":value {edn(v)}"]


def _partition_list(value: Any) -> bool:
    """Whether `value` has "partitions": [[topic, partition], ...] (assign is
    checked by the reader; subscribe is not)."""
    partitions = value.get("partitions") if isinstance(value, dict) else None
    return isinstance(partitions, list) and all(
        isinstance(tp, list) and len(tp) == 2 and isinstance(tp[0], str) and type(tp[1]) is int
        for tp in partitions)


def keyword(name: str) -> str:
    """`name` as an EDN keyword if it can be one, else as a string."""
    return f":{name}" if _KEYWORD.fullmatch(name) else edn(name)


def edn(value: Any) -> str:
    """A JSON-like value (None, bool, int, float, str, list, tuple, dict) as EDN."""
    if value is None:
        return "nil"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "##NaN"
        if math.isinf(value):
            return "##Inf" if value > 0 else "##-Inf"
        return repr(value)
    if isinstance(value, str):
        return '"' + value.translate(_ESCAPES) + '"'
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(edn(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_map_key(k)} {edn(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no EDN form for {type(value).__name__}: {value!r}")


def _map_key(key: Any) -> str:
    return keyword(key) if isinstance(key, str) else edn(key)


def _topics(history: Path) -> set[str]:
    """The topics the history names (a first pass; its problems are reported by the second)."""
    topics: set[str] = set()
    for op in iter_history(history, Problems()):
        v = op.value
        if op.process == NEMESIS or not isinstance(v, dict):
            continue
        if op.f == "send":
            topics.add(v["topic"])
        elif op.f == "poll" and op.type == "ok":
            topics.update(r["topic"] for r in v["records"])
        elif op.f in ("assign", "subscribe") and _partition_list(v):
            topics.update(topic for topic, _ in v["partitions"])
    return topics
