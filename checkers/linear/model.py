"""The model interface of the linearizability search, and the `Op` it checks.

A model is a sequential specification, Porcupine-small (`Model`): `init()` gives the first
state, `step(state, op)` the state after `op` or None when `op` is not allowed in that state,
and `describe_op` / `describe_state` say them in words. Equality is the states' own: states
must be hashable and compared by `==` (the search memoises them), and a model must not mutate
them.

Everything else is optional, in three protocols a model may also implement (as mixins):
`SearchHints` make the search faster, `MinimiseHints` the minimiser smarter, `Explains` the
reports clearer. None of them changes which histories are linearizable, provided each hook
keeps the promise in its docstring. The search and the minimiser ask for them through
`search_hints`, `minimise_hints` and `why_not`, which give the harmless defaults to a model
that has none.
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

State = TypeVar("State", bound=Hashable)
# A footprint key: hashable and orderable (the search and the minimiser keep them sorted).
FootKey = TypeVar("FootKey")
# A key ops write and read (`provides`, `depends_on`): hashable.
DataKey = TypeVar("DataKey", bound=Hashable)


@dataclass(slots=True)
class Op:
    """One operation of a history, as the search sees it. Treat it as
    immutable (it is not frozen only because frozen dataclasses are five times
    slower to create, and a partition history has 10^5 ops).

    `call` and `ret` are positions in real time (history line numbers): `a`
    precedes `b` iff `a.ret < b.call`; equal values overlap, as in Porcupine.
    `ret=None` marks an op whose outcome is unknown: it may take effect at any
    point after `call`, or never. `ref` is the caller's back-reference (history
    indices, the original send or poll) carried into reports untouched.
    """

    id: int
    process: Hashable
    call: int
    ret: int | None
    input: Any
    output: Any = None
    ref: Any = None

    @property
    def optional(self) -> bool:
        return self.ret is None


class Model(Generic[State]):
    """A sequential specification: override the four methods."""

    name = "model"

    def init(self) -> State:
        raise NotImplementedError

    def step(self, state: State, op: Op) -> State | None:
        """The state after `op`, or None if `op` is not allowed in `state`."""
        raise NotImplementedError

    def describe_op(self, op: Op) -> str:
        return f"{op.input!r} -> {op.output!r}"

    def describe_state(self, state: State) -> str:
        return repr(state)


class SearchHints(Generic[FootKey]):
    """Optional: what lets the search prune and order its steps."""

    # True promises more: once an op that is not read-only has taken effect, no
    # such op of lower or equal priority ever can (the log: appends go up in
    # offset). The search then never tries an op while a required one of lower
    # or equal priority is still pending.
    strict_priority = False

    def is_read_only(self, op: Op) -> bool:
        """True if `op` never changes the state. The search linearizes such an
        op as soon as it is allowed, without a backtrack point."""
        return False

    def is_dead(self, state: Any, op: Op) -> bool:
        """True only if `op` is allowed in no state reachable from `state`.
        The search backtracks as soon as a pending required op is dead.
        Models with a `footprint` get this check exactly and incrementally
        through it, so the search then skips the per-state scan with is_dead."""
        return False

    def footprint(self, op: Op) -> Iterable[tuple[FootKey, Any]]:
        """(key, demand) pairs: what `op` needs of each key it touches. Keys
        must be orderable (the search keeps them sorted). With `settled` and
        `contradicts` this lets the search find every op that a step made
        impossible, wherever it lies in the history."""
        return ()

    def settled(self, before: Any, after: Any) -> tuple[FootKey, FootKey] | None:
        """The inclusive key range (lo, hi) whose contents became final in the
        step from `before` to `after` (no later step may change them), or None."""
        return None

    def contradicts(self, state: Any, key: FootKey, demand: Any) -> bool:
        """For a settled `key`: True if `demand` (from `footprint`) can never be
        met in `state` or any state after it."""
        return False

    def priority(self, op: Op) -> Any:
        """Order in which the search tries the ops that could take effect next
        (lowest first). A heuristic only; the default keeps call order."""
        return 0


class MinimiseHints(Generic[DataKey, FootKey]):
    """Optional: what lets the minimiser keep a counterexample's subsets meaningful and
    localise a violation."""

    def provides(self, op: Op) -> Iterable[DataKey]:
        """Keys `op` writes (e.g. a value, or an (offset, value) pair)."""
        return ()

    def initial_keys(self) -> Iterable[DataKey]:
        """Keys the initial state already provides (a register's initial value)."""
        return ()

    def describe_key(self, key: DataKey) -> str:
        """A key of `provides`/`depends_on`, in words."""
        return repr(key)

    def depends_on(self, op: Op) -> Iterable[DataKey]:
        """Keys `op` reads. The minimiser drops a reader whenever it drops a
        writer of something it reads, so that a subset of a linearizable
        history stays linearizable."""
        return ()

    def restrict(self, op: Op, keys: frozenset[FootKey]) -> Op | None:
        """`op` projected onto the footprint `keys` (None if nothing is left).
        Overriding it promises: a projection of a linearizable history is
        linearizable. The minimiser then localises a violation by keys."""
        return op

    def frontier(self, state: Any) -> FootKey | None:
        """The footprint key where the search is likely stuck from `state`
        (for the log: its last offset); a starting point for localisation."""
        return None


class Explains:
    """Optional: why an op is not allowed, for reports."""

    def why_not(self, state: Any, op: Op) -> str:
        """Why `op` is not allowed in `state`, in a short clause."""
        raise NotImplementedError


_NO_SEARCH_HINTS: SearchHints[Any] = SearchHints()
_NO_MINIMISE_HINTS: MinimiseHints[Any, Any] = MinimiseHints()


def search_hints(model: Model[Any]) -> SearchHints[Any]:
    """`model`'s search hints, or the harmless defaults."""
    return model if isinstance(model, SearchHints) else _NO_SEARCH_HINTS


def minimise_hints(model: Model[Any]) -> MinimiseHints[Any, Any]:
    """`model`'s minimisation hints, or the harmless defaults."""
    return model if isinstance(model, MinimiseHints) else _NO_MINIMISE_HINTS


def why_not(model: Model[Any], state: Any, op: Op) -> str:
    """Why `op` is not allowed in `state`: the model's words if it `Explains`, else generic ones."""
    if isinstance(model, Explains):
        return model.why_not(state, op)
    return f"the model does not allow it in state {model.describe_state(state)}"


def overrides(hints: object, name: str) -> bool:
    """Does `hints` implement hook `name` (rather than inherit the default)?"""
    for base in (SearchHints, MinimiseHints):
        if hasattr(base, name):
            return isinstance(hints, base) and getattr(type(hints), name) is not getattr(base, name)
    raise ValueError(f"no hook named {name!r}")
