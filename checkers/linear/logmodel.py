"""The log model: one Kafka partition's log as a sequential object
(docs/LINEARIZABILITY.md gives its exact semantics).

State: the log, offset -> value, offsets strictly increasing, gaps allowed. It
is an interned persistent list (`LogNode`: parent, offset, value) with skew
jump pointers, so a step is O(1), a lookup by offset O(log n), and equal logs
are the same object (the search compares and hashes states by identity).

Ops (`Op.input`): `Append(offset, value)`, `Read(records)` (a poll: read-only,
no recency promised), `ReadExact(offset, value | None)` (the final read, one
offset at a time; None = nothing there). Like `Op`, they are immutable by
convention, not frozen, for speed.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from fencepost.checkers.linear.model import Explains, MinimiseHints, Model, Op, SearchHints


class _Unsettled:
    """The footprint demand of an append: its offset must not be final before it."""

    def __repr__(self) -> str:
        return "UNSETTLED"


UNSETTLED = _Unsettled()
_ROOT_VALUE = object()
_MAX_SHOWN = 4  # records of a log or a poll written out in descriptions


@dataclass(slots=True)
class Append:
    offset: int
    value: str


@dataclass(slots=True)
class Read:
    records: tuple[tuple[int, str], ...]  # (offset, value), in the order returned


@dataclass(slots=True)
class ReadExact:
    offset: int
    value: str | None  # None: the log holds nothing at `offset`


class LogNode:
    """The log up to and including (offset, value); `parent` is the log before
    it. Create nodes only through `LogModel` (interning makes `is` equality)."""

    __slots__ = ("parent", "offset", "value", "jump", "size", "children")

    def __init__(self, parent: LogNode | None, offset: int, value: Any) -> None:
        self.parent = parent
        self.offset = offset
        self.value = value  # a str; the root's is a sentinel (the empty log)
        self.size: int = 0 if parent is None else parent.size + 1
        self.children: dict[tuple[int, str], LogNode] | None = None
        # Skew-binary jump pointers: following them reaches any ancestor in
        # O(log n) hops (Myers' random-access lists).
        self.jump: LogNode | None
        if parent is None:
            self.jump = None
        else:
            j = parent.jump
            if j is not None and j.jump is not None and parent.size - j.size == j.size - j.jump.size:
                self.jump = j.jump
            else:
                self.jump = parent

    def find(self, offset: int) -> LogNode:
        """The newest node (this one or an ancestor) with offset <= `offset`."""
        node = self
        while node.offset > offset:
            j = node.jump
            # Above the root (its offset is below any asked for) jump and parent are set; mypy
            # cannot know it, and an assert per hop costs about 8% of get().
            node = j if j.offset >= offset else node.parent  # type: ignore[union-attr, assignment]
        return node

    def get(self, offset: int) -> str | None:
        node = self.find(offset)
        return node.value if node.offset == offset and node.parent is not None else None

    def records(self) -> list[tuple[int, str]]:
        out = []
        node: LogNode = self
        while node.parent is not None:
            out.append((node.offset, node.value))
            node = node.parent
        out.reverse()
        return out

    def __repr__(self) -> str:
        return f"LogNode(last={self.offset}, size={self.size})"


class LogModel(Model[LogNode], SearchHints[int], MinimiseHints[tuple[int, str], int], Explains):
    """A partition's log: appends at increasing offsets; polls that may return
    old records but never records the log does not hold at that moment."""

    name = "log"
    strict_priority = True  # appends take effect in increasing offset order

    def __init__(self) -> None:
        self._root = LogNode(None, -1, _ROOT_VALUE)

    def init(self) -> LogNode:
        return self._root

    def _child(self, parent: LogNode, offset: int, value: str) -> LogNode:
        children = parent.children
        if children is None:
            children = parent.children = {}
        node = children.get((offset, value))
        if node is None:
            node = children[(offset, value)] = LogNode(parent, offset, value)
        return node

    def step(self, state: LogNode, op: Op) -> LogNode | None:
        inp = op.input
        kind = inp.__class__
        if kind is Append:
            return self._child(state, inp.offset, inp.value) if inp.offset > state.offset else None
        if kind is Read:
            # Highest offset first, each lookup walking on down from the last.
            node = state
            for offset, value in reversed(inp.records):
                node = (node if offset <= node.offset else state).find(offset)
                if node.offset != offset or node.value != value or node.parent is None:
                    return None
            return state
        if kind is ReadExact:
            return state if state.get(inp.offset) == inp.value else None
        raise TypeError(f"op {op.id}: the log model has no operation {inp!r}; "
                        f"use Append, Read or ReadExact")

    def is_read_only(self, op: Op) -> bool:
        return op.input.__class__ is not Append

    # --- descriptions ---------------------------------------------------------------

    def describe_op(self, op: Op) -> str:
        inp = op.input
        if isinstance(inp, Append):
            return f"append {inp.offset}={inp.value!r}"
        if isinstance(inp, Read):
            shown = ", ".join(f"{o}={v!r}" for o, v in inp.records[:_MAX_SHOWN])
            more = f", ... ({len(inp.records)} records)" if len(inp.records) > _MAX_SHOWN else ""
            return f"read [{shown}{more}]"
        if isinstance(inp, ReadExact):
            return f"final {inp.offset}={'nothing' if inp.value is None else repr(inp.value)}"
        return repr(inp)

    def describe_state(self, state: LogNode) -> str:
        if state.parent is None:
            return "log []"
        tail: list[str] = []
        node = state
        while node.parent is not None and len(tail) < _MAX_SHOWN:
            tail.append(f"{node.offset}={node.value!r}")
            node = node.parent
        more = "..., " if node.parent is not None else ""
        return f"log [{more}{', '.join(reversed(tail))}] ({state.size} records, last offset {state.offset})"

    def why_not(self, state: LogNode, op: Op) -> str:
        inp = op.input
        if isinstance(inp, Append):
            held = state.get(inp.offset)
            if held is not None:
                return f"the log already holds {held!r} at offset {inp.offset}"
            return f"offset {inp.offset} is not past the log's last offset {state.offset}"
        if isinstance(inp, Read):
            for offset, value in inp.records:
                reason = self._missing(state, offset, value)
                if reason:
                    return reason
            return "it is allowed here"
        if isinstance(inp, ReadExact):
            held = state.get(inp.offset)
            if inp.value is None:
                return f"the log holds {held!r} at offset {inp.offset}" if held is not None else "it is allowed here"
            return self._missing(state, inp.offset, inp.value) or "it is allowed here"
        return super().why_not(state, op)

    @staticmethod
    def _missing(state: LogNode, offset: int, value: str) -> str:
        held = state.get(offset)
        if held == value:
            return ""
        if held is not None:
            return f"the log holds {held!r}, not {value!r}, at offset {offset}"
        if offset <= state.offset:
            return f"the log has nothing at offset {offset}, and offsets up to {state.offset} are final"
        return f"{value!r} is not yet in the log at offset {offset} (the log ends at {state.offset})"

    # --- pruning -------------------------------------------------------------------

    def is_dead(self, state: LogNode, op: Op) -> bool:
        inp = op.input
        if isinstance(inp, Append):
            return inp.offset <= state.offset
        for key, demand in self.footprint(op):
            if key <= state.offset and self.contradicts(state, key, demand):
                return True
        return False

    def footprint(self, op: Op) -> Iterable[tuple[int, Any]]:
        inp = op.input
        if isinstance(inp, Append):
            return ((inp.offset, UNSETTLED),)
        if isinstance(inp, Read):
            return inp.records
        return ((inp.offset, inp.value),)

    def settled(self, before: LogNode, after: LogNode) -> tuple[int, int] | None:
        # Everything up to the last offset is final: later appends go above it.
        return None if after is before else (before.offset + 1, after.offset)

    def contradicts(self, state: LogNode, key: int, demand: Any) -> bool:
        if demand is UNSETTLED:
            return True
        if key == state.offset and state.parent is not None:  # the common case: just appended
            differs: bool = state.value != demand
            return differs
        other: bool = state.get(key) != demand
        return other

    def priority(self, op: Op) -> Any:
        inp = op.input
        return inp.offset if inp.__class__ is Append else 0  # only appends are ever tried

    # --- minimisation ------------------------------------------------------------------

    def provides(self, op: Op) -> Iterable[tuple[int, str]]:
        inp = op.input
        return ((inp.offset, inp.value),) if isinstance(inp, Append) else ()

    def depends_on(self, op: Op) -> Iterable[tuple[int, str]]:
        inp = op.input
        if isinstance(inp, Read):
            return inp.records
        if isinstance(inp, ReadExact) and inp.value is not None:
            return ((inp.offset, inp.value),)
        return ()

    def describe_key(self, key: tuple[int, str]) -> str:
        offset, value = key
        return f"{value!r} at offset {offset}"

    def restrict(self, op: Op, keys: frozenset[int]) -> Op | None:
        inp = op.input
        if isinstance(inp, Read):
            kept = tuple(r for r in inp.records if r[0] in keys)
            if not kept:
                return None
            return op if len(kept) == len(inp.records) else replace(op, input=Read(kept))
        return op if inp.offset in keys else None

    def frontier(self, state: LogNode) -> int:
        return state.offset
