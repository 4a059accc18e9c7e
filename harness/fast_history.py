"""The fast path of loading history.jsonl: plainly valid lines decoded in C
(msgspec, typed) straight into per-partition sends, polls and resets.

It gives the same result as `HistoryReader.operations()` grouped by
`loading.group_operations`, or gives up (returns None) at the first line it
is not sure about — anything the exact reader would report (a bad or torn
line, a missing field, a completion without its invoke, an unknown client
`f`), and anything its decoder reads differently from orjson (non-ASCII
bytes that are not valid UTF-8, integers beyond 64 bits, a value of a shape
the exact reader would accept but the typed decoder does not). The caller
then reads the file again with the exact reader, which reports what was
wrong, with file, line and field. Unknown fields are ignored, as there.
"""
from __future__ import annotations

from operator import attrgetter
from pathlib import Path
from typing import Annotated, Any, Union

import msgspec

from checkers.partition import PartitionHistory, Poll, Reset, Send
from harness.history import HistoryCounts, NEMESIS, TYPES
from harness.loading_groups import commits_of, resumes_of

# orjson reads integers beyond 64 bits as floats, which the exact reader
# rejects: the typed decoder must not accept them (from 2**63 on, msgspec's
# bounds stop at int64, the exact reader decides).
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]

PartitionKey = tuple[str, int]


class _Record(msgspec.Struct, gc=False):
    topic: str
    partition: Int64
    offset: Int64
    value: str
    leader_epoch: Union[Int64, None] = None


class _Value(msgspec.Struct, gc=False):
    """Every client value in one shape (send, ok poll, assign): what a line's
    `f` and `type` require of it is checked by the loop."""

    topic: Union[str, None] = None
    partition: Union[Int64, None] = None
    value: Union[str, None] = None
    offset: Union[Int64, None] = None
    leader_epoch: Union[Int64, None] = None
    records: Union[list[_Record], None] = None
    partitions: Union[list[tuple[str, Int64]], None] = None
    start: Any = msgspec.field(default=None, name="from")
    group: Union[str, None] = None  # a consumer group member's assign and commit
    offsets: Union[list[tuple[str, Int64, Int64]], None] = None  # a commit's


class _Line(msgspec.Struct, gc=False):
    index: Int64
    time: Int64
    process: Union[Int64, str]
    type: str
    f: str
    value: Union[_Value, None] = None
    error: Union[str, None] = None


class _RawLine(msgspec.Struct, gc=False):
    """A line whose value is not of `_Value`'s shape: fine where nothing
    reads the value (the nemesis', a subscribe's, a failed poll's)."""

    index: Int64
    time: Int64
    process: Union[Int64, str]
    type: str
    f: str
    value: msgspec.Raw = msgspec.Raw(b"null")
    error: Union[str, None] = None


_invoke_index = attrgetter("invoke_index")
_reset_index = attrgetter("index")


class GiveUp(Exception):
    """A line the fast path leaves to the exact reader."""


# What a fast reader gives up on: its own verdict, and what msgspec refuses.
GIVE_UP_ERRORS = (GiveUp, msgspec.DecodeError, UnicodeDecodeError)


def read_grouped(path: Path | str) -> tuple[dict[PartitionKey, PartitionHistory], list[Reset],
                                              HistoryCounts] | None:
    """Per-partition sends and polls (in invoke order), the resets (in invoke
    order) and the counts of the history at `path`; None when some line needs
    the exact reader (see the module docstring)."""
    try:
        return _read(Path(path))
    except GIVE_UP_ERRORS:
        return None


def _read(path: Path) -> tuple[dict[PartitionKey, PartitionHistory], list[Reset], HistoryCounts]:
    # One loop, written for speed: it runs once per history line. A send is
    # placed in its partition at its invoke (so sends need no sorting) and
    # filled in at its completion; a poll is placed at its completion, as
    # group_operations does (its partitions are known only then).
    decode_line = msgspec.json.Decoder(_Line).decode
    decode_raw_line = msgspec.json.Decoder(_RawLine).decode
    validation_error = msgspec.ValidationError
    outcomes = {"ok": "ok", "fail": "fail", "info": "info"}  # one shared str per outcome
    types = frozenset(TYPES)
    partitions: dict[PartitionKey, PartitionHistory] = {}
    resets: list[Reset] = []
    assigned: dict[int, tuple[PartitionKey, ...]] = {}  # process -> its latest assign's partitions
    previous: dict[int, int] = {}  # process -> the invoke index of its latest op but assigns
    shared: dict[PartitionKey, dict[int, tuple[int, str]]] = {}  # partition -> offset -> record
    # process -> (index, time, f, value, the send placed at its invoke)
    pending: dict[int, tuple[int, int, str, Any, Send | None]] = {}
    by_f_type: dict[tuple[str, str], int] = {}
    nemesis = sends_invoked = sends_ok = 0
    index = -1

    def partition(key: PartitionKey) -> PartitionHistory:
        ph = partitions.get(key)
        if ph is None:
            ph = partitions[key] = PartitionHistory(key[0], key[1])
        return ph

    def finish(p: int, invoke: tuple[int, int, str, Any, Send | None], outcome: str,
               complete_index: int | None, complete_time: int | None,
               grouped: dict[PartitionKey, list] | None, error: str | None) -> None:
        """What group_operations does with a paired poll, assign, subscribe, crash or commit."""
        f = invoke[2]
        asked = previous.get(p, invoke[0])
        if f != "assign":  # a burst of assigns after a poll was asked for during that poll
            previous[p] = invoke[0]
        if f == "commit":
            v = invoke[3]
            for key, commit in commits_of(p, v.group, v.offsets, outcome, invoke[0], invoke[1], complete_index,
                                          complete_time):
                (partitions.get(key) or partition(key)).commits.append(commit)
        elif f == "poll":
            by_key = grouped if grouped is not None else {}
            for key in assigned.get(p, ()):
                if key not in by_key:
                    by_key[key] = []
            for key, records in by_key.items():
                (partitions.get(key) or partition(key)).polls.append(
                    Poll(p, outcome, invoke[0], invoke[1], complete_index, complete_time, records,
                         error))
        else:  # assign, subscribe, crash
            resets.append(Reset(p, invoke[0], invoke[1], f))
            if f == "assign" and outcome != "fail":
                v = invoke[3]
                keys = tuple((t, n) for t, n in v.partitions)
                assigned[p] = keys
                for key in keys:
                    partition(key)
                for key, resume in resumes_of(p, v.group, v.start, keys, invoke[0], invoke[1], complete_index,
                                              complete_time, asked):
                    partition(key).resumes.append(resume)
            elif f != "assign":
                assigned.pop(p, None)

    with open(path, "rb") as file:
        for index, line in enumerate(file):
            if line[-1] != 10 or (not line.isascii() and not line.decode("utf-8")):
                raise GiveUp  # a torn line; (decode raises on bytes orjson would refuse)
            try:
                d = decode_line(line)
            except validation_error:
                d = _unread_value(decode_raw_line(line))
            p = d.process
            f = d.f
            ty = d.type
            if d.index != index or ty not in types:
                raise GiveUp
            if type(p) is not int:
                if p != NEMESIS:
                    raise GiveUp
                nemesis += 1
            elif f == "send":
                v = d.value
                if v is None or v.topic is None or v.partition is None or v.value is None:
                    raise GiveUp
                if ty == "invoke":
                    if p in pending:
                        raise GiveUp  # an invoke while another is pending: an error to report
                    key = (v.topic, v.partition)
                    send = Send(p, v.value, "info", index, d.time)
                    (partitions.get(key) or partition(key)).sends.append(send)
                    pending[p] = (index, d.time, f, v, send)
                    sends_invoked += 1
                    continue
                invoke = pending.pop(p, None)
                if invoke is None or invoke[2] != f:
                    raise GiveUp
                iv = invoke[3]
                if v.value != iv.value or v.partition != iv.partition or v.topic != iv.topic:
                    raise GiveUp
                send = invoke[4]
                send.complete_index = index
                send.complete_time = d.time
                send.error = d.error
                if ty == "ok":
                    if v.offset is None:
                        raise GiveUp
                    send.outcome = "ok"
                    send.offset = v.offset
                    send.leader_epoch = v.leader_epoch
                    sends_ok += 1
                    continue
                send.outcome = outcomes[ty]
            elif ty == "invoke":
                if p in pending:
                    raise GiveUp
                if f == "poll":
                    if d.value is not None:
                        raise GiveUp
                    pending[p] = (index, d.time, f, None, None)
                elif f == "assign":
                    pending[p] = (index, d.time, f, _assignment(d.value), None)
                elif f == "subscribe" or f == "crash":
                    pending[p] = (index, d.time, f, None, None)
                elif f == "commit":
                    pending[p] = (index, d.time, f, _commit(d.value), None)
                else:
                    raise GiveUp  # an unknown client f: the exact reader warns
            else:
                invoke = pending.pop(p, None)
                if invoke is None or invoke[2] != f:
                    raise GiveUp
                grouped = None
                if f == "poll" and ty == "ok":
                    v = d.value
                    if v is None or v.records is None:
                        raise GiveUp
                    grouped = _group(v.records, shared)
                elif f == "assign" and ty == "ok":
                    _assignment(d.value)
                elif f == "commit" and ty == "ok":
                    _commit(d.value)
                finish(p, invoke, outcomes[ty], index, d.time, grouped, d.error)
            key2 = (f, ty)
            by_f_type[key2] = by_f_type.get(key2, 0) + 1
    for p, invoke in sorted(pending.items(), key=_by_invoke_index):
        if invoke[2] != "send":  # a send placed at its invoke stays `info`
            finish(p, invoke, "info", None, None, None, None)
    for ph in partitions.values():
        ph.polls.sort(key=_invoke_index)
        ph.commits.sort(key=_invoke_index)
        ph.resumes.sort(key=_invoke_index)
    resets.sort(key=_reset_index)
    if sends_invoked:
        by_f_type[("send", "invoke")] = sends_invoked
    if sends_ok:
        by_f_type[("send", "ok")] = sends_ok
    counts = HistoryCounts(lines=index + 1, ops=sum(by_f_type.values()), nemesis=nemesis)
    counts.by_f_type.update(by_f_type)
    return partitions, resets, counts


def _unread_value(d: _RawLine) -> _Line:
    """`d` with its value dropped, when nothing reads that value; else GiveUp."""
    if type(d.process) is int and d.f not in _VALUE_UNREAD and (
            d.type == "invoke" or d.type == "ok" or d.f in _VALUE_READ_ALWAYS):
        raise GiveUp
    return _Line(d.index, d.time, d.process, d.type, d.f, None, d.error)


# Client values the exact reader checks: every send's; a poll's and an
# assign's at the invoke and on ok. (A completion of an unknown f gives up later.)
_VALUE_UNREAD = frozenset(("subscribe", "crash"))
_VALUE_READ_ALWAYS = frozenset(("send",))


def _assignment(v: _Value | None) -> _Value:
    """An assign's value, checked as the exact reader checks it (a group member's `from` offsets
    too); anything else is left to it."""
    if v is None or v.partitions is None or (
            v.start is not None and v.start != "beginning" and type(v.start) is not dict):
        raise GiveUp
    if v.group is not None and type(v.start) is dict and not all(
            type(o) is int and k.rpartition("-")[0] != "" and k.rpartition("-")[2].isdigit()
            for k, o in v.start.items()):
        raise GiveUp
    return v


def _commit(v: _Value | None) -> _Value:
    """A commit's value, checked as the exact reader checks it."""
    if v is None or v.group is None or v.offsets is None:
        raise GiveUp
    return v


def _group(records: list[_Record], shared: dict[PartitionKey, dict[int, tuple[int, str]]]
           ) -> dict[PartitionKey, list[tuple[int, str]]]:
    """An ok poll's records by partition as (offset, value) pairs, a record
    seen before in the partition being the same tuple object (as
    history._group_records)."""
    grouped: dict[PartitionKey, list[tuple[int, str]]] = {}
    topic = partition = group = known = None
    for record in records:
        if record.partition != partition or record.topic != topic:  # records come in runs
            topic = record.topic
            partition = record.partition
            key = (topic, partition)
            group = grouped.get(key)
            if group is None:
                group = grouped[key] = []
            known = shared.get(key)
            if known is None:
                known = shared[key] = {}
        offset = record.offset
        pair = known.get(offset)
        if pair is None:
            pair = known[offset] = (offset, record.value)
        elif pair[1] != record.value:
            pair = (offset, record.value)  # another value at that offset: kept apart
        group.append(pair)
    return grouped


def _by_invoke_index(item: tuple[int, tuple[int, int, str, Any]]) -> int:
    return item[1][0]
