"""The fast path of reading final.jsonl: plainly valid lines decoded in C
(msgspec, typed) straight into a `FinalLog`.

It gives the same `FinalLog` as the exact reader (`final_log.FinalReader`),
or gives up (returns None) at the first line it is not sure about: anything
the exact reader would report or warn about (a bad or torn line, a missing
field, an unknown kind), and anything its decoder reads differently from
orjson (bytes that are not valid UTF-8, integers beyond 64 bits, a field the
exact reader ignores but of a shape the typed decoder refuses). The caller
then reads the file with the exact reader, which says what was wrong.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Union

import msgspec

from checkers.partition import ReplicaState
from harness.fast_history import GIVE_UP_ERRORS, GiveUp, Int64, PartitionKey

if TYPE_CHECKING:  # final_log imports this module
    from harness.final_log import FinalLog



class _Entry(msgspec.Struct, gc=False):
    kind: str
    topic: str
    partition: Int64
    offset: Union[Int64, None] = None
    value: Union[str, None] = None
    leader_epoch: Union[Int64, None] = None
    node: Union[str, None] = None
    complete: Union[bool, None] = None
    log_end_offset: Union[Int64, None] = None
    high_watermark: Union[Int64, None] = None
    # Absent means none; null is an error the exact reader reports.
    epochs: Union[list[tuple[Int64, Int64]], msgspec.UnsetType] = msgspec.UNSET


def read_final_fast(path: Path | str, log: "FinalLog") -> bool:
    """Fill the empty `log` from the final.jsonl at `path`; False (and `log`
    left in any state) when some line needs the exact reader."""
    try:
        _read(Path(path), log)
        return True
    except GIVE_UP_ERRORS:
        return False


def _read(path: Path, log: "FinalLog") -> None:
    # One loop, written for speed, doing what final_log.read_final does.
    decode = msgspec.json.Decoder(_Entry).decode
    reads = log.reads
    replicas = log.replicas
    keys: dict[PartitionKey, PartitionKey] = {}  # one shared key tuple per partition
    nodes: dict[str, str] = {}
    known: dict[PartitionKey, dict[int, tuple[int, str]]] = {}  # partition -> offset -> record
    number = 0
    with open(path, "rb") as file:
        for line in file:
            number += 1
            if line[-1] != 10 or (not line.isascii() and not line.decode("utf-8")):
                raise GiveUp  # a torn line; (decode raises on bytes orjson would refuse)
            d = decode(line)
            kind = d.kind
            key = keys.get((d.topic, d.partition))
            if key is None:
                key = keys[(d.topic, d.partition)] = (d.topic, d.partition)
            if kind == "read" or kind == "replica":
                offset = d.offset
                value = d.value
                if offset is None or value is None:
                    raise GiveUp
                records = known.get(key)
                if records is None:
                    records = known[key] = {}
                record = records.get(offset)
                if record is None or record[1] != value:
                    record = records[offset] = (offset, value)
                if kind == "read":
                    into = reads.get(key)
                    if into is None:
                        into = reads[key] = []
                else:
                    node = d.node
                    if node is None:
                        raise GiveUp
                    node = nodes.setdefault(node, node)
                    by_node = replicas.get(key)
                    if by_node is None:
                        by_node = replicas[key] = {}
                    into = by_node.get(node)
                    if into is None:
                        into = by_node[node] = []
                into.append(record)
            elif kind == "read-state":
                if d.complete is None:
                    raise GiveUp
                log.read_complete[key] = d.complete and log.read_complete.get(key, True)
            elif kind == "replica-state":
                node = d.node
                if node is None or d.log_end_offset is None or d.high_watermark is None:
                    raise GiveUp
                node = nodes.setdefault(node, node)
                epochs = [] if d.epochs is msgspec.UNSET else d.epochs
                log.replica_states.setdefault(key, {})[node] = ReplicaState(
                    node, d.log_end_offset, d.high_watermark, d.leader_epoch, epochs)
            else:
                raise GiveUp  # an unknown kind: the exact reader warns
    log.lines = number
