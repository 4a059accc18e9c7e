"""Two textbook models for the search: a register and a grow-only set.

They are not Kafka: they keep the search honest (Porcupine's and Knossos'
classic examples are register histories) and show how small a model can be.

RegisterModel ops (`Op.input`, `Op.output`):
  ("write", v)          -> output ignored
  ("read",)             -> output: the value read (None output: unknown, anything goes)
  ("cas", old, new)     -> output: True (swapped), False (did not), None (unknown)
SetModel ops:
  ("add", x)            -> output ignored
  ("read",)             -> output: the whole set read (any iterable), None: unknown
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from fencepost.checkers.linear.model import Explains, MinimiseHints, Model, Op, SearchHints


def _kind(op: Op) -> str:
    inp = op.input
    if not isinstance(inp, tuple) or not inp:
        raise TypeError(f"op {op.id}: input {inp!r} is not a (kind, ...) tuple")
    kind: str = inp[0]
    return kind


class RegisterModel(Model[Hashable], SearchHints[Any], MinimiseHints[Hashable, Any], Explains):
    """A single register with read, write and compare-and-set."""

    name = "register"

    def __init__(self, initial: Hashable = None) -> None:
        self.initial = initial

    def init(self) -> Hashable:
        return self.initial

    def step(self, state: Hashable, op: Op) -> Hashable | None:
        kind = _kind(op)
        if kind == "write":
            written: Hashable = op.input[1]
            return written
        if kind == "read":
            return state if op.output is None or op.output == state else None
        if kind == "cas":
            _, old, new = op.input
            if op.output is False:
                return state if state != old else None
            # True, or unknown: if it took effect at all, it swapped.
            return new if state == old else None
        raise TypeError(f"op {op.id}: the register has no operation {kind!r}; use write, read or cas")

    def is_read_only(self, op: Op) -> bool:
        kind = _kind(op)
        return kind == "read" or (kind == "cas" and op.output is False)

    def describe_op(self, op: Op) -> str:
        kind = _kind(op)
        if kind == "write":
            return f"write({op.input[1]!r})"
        if kind == "read":
            return f"read() -> {'?' if op.output is None else repr(op.output)}"
        outcome = {True: "ok", False: "fail", None: "?"}.get(op.output, repr(op.output))
        return f"cas({op.input[1]!r}, {op.input[2]!r}) -> {outcome}"

    def describe_state(self, state: Hashable) -> str:
        return repr(state)

    def why_not(self, state: Hashable, op: Op) -> str:
        return f"the register holds {state!r}"

    def provides(self, op: Op) -> Iterable[Hashable]:
        kind = _kind(op)
        if kind == "write":
            return (op.input[1],)
        if kind == "cas" and op.output is not False:
            return (op.input[2],)
        return ()

    def initial_keys(self) -> Iterable[Hashable]:
        return (self.initial,)

    def depends_on(self, op: Op) -> Iterable[Hashable]:
        kind = _kind(op)
        if kind == "read" and op.output is not None:
            return (op.output,)
        if kind == "cas" and op.output is not False:
            return (op.input[1],)
        return ()


class SetModel(Model[frozenset[Hashable]], SearchHints[Any], MinimiseHints[Hashable, Any], Explains):
    """A grow-only set: add an element, read the whole set."""

    name = "set"

    def init(self) -> frozenset[Hashable]:
        return frozenset()

    def step(self, state: frozenset[Hashable], op: Op) -> frozenset[Hashable] | None:
        kind = _kind(op)
        if kind == "add":
            return state | {op.input[1]}
        if kind == "read":
            return state if op.output is None or frozenset(op.output) == state else None
        raise TypeError(f"op {op.id}: the set has no operation {kind!r}; use add or read")

    def is_read_only(self, op: Op) -> bool:
        return _kind(op) == "read"

    def is_dead(self, state: frozenset[Hashable], op: Op) -> bool:
        # The set only grows: once it holds an element the read lacks, never again.
        return _kind(op) == "read" and op.output is not None and not state <= frozenset(op.output)

    def describe_op(self, op: Op) -> str:
        if _kind(op) == "add":
            return f"add({op.input[1]!r})"
        return f"read() -> {'?' if op.output is None else self._show(op.output)}"

    def describe_state(self, state: frozenset[Hashable]) -> str:
        return self._show(state)

    @staticmethod
    def _show(items: Iterable[Any]) -> str:
        return "{" + ", ".join(sorted(map(repr, items))) + "}"

    def why_not(self, state: frozenset[Hashable], op: Op) -> str:
        return f"the set is {self._show(state)}"

    def provides(self, op: Op) -> Iterable[Hashable]:
        return (op.input[1],) if _kind(op) == "add" else ()

    def depends_on(self, op: Op) -> Iterable[Hashable]:
        return tuple(op.output) if _kind(op) == "read" and op.output is not None else ()
