"""The model interface of the linearizability search, and the `Op` it checks.

A model is a sequential specification, shaped as Porcupine's: `init()` gives the
first state and `step(state, op)` the state after `op`, or None when `op` is not
allowed in that state. States must be hashable and compared by `==` (the search
memoises them), and a model must not mutate them.

Everything past the first five methods is an optional hook with a harmless
default. Hooks make the search faster (`is_dead`, `footprint`/`settled`/
`contradicts`, `priority`), the minimiser smarter (`provides`/`depends_on`,
`restrict`/`frontier`) and reports clearer (`why_not`). None of them changes
which histories are linearizable, provided each keeps the promise in its
docstring.
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

State = TypeVar("State", bound=Hashable)


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
    """Base class of the models: override the first five methods, and any hook."""

    name = "model"

    def init(self) -> State:
        raise NotImplementedError

    def step(self, state: State, op: Op) -> State | None:
        """The state after `op`, or None if `op` is not allowed in `state`."""
        raise NotImplementedError

    def is_read_only(self, op: Op) -> bool:
        """True if `op` never changes the state. The search linearizes such an
        op as soon as it is allowed, without a backtrack point."""
        return False

    def describe_op(self, op: Op) -> str:
        return f"{op.input!r} -> {op.output!r}"

    def describe_state(self, state: State) -> str:
        return repr(state)

    # --- a cheap proof (optional) ---------------------------------------------

    def witness(self, ops: Sequence[Op]) -> list[Op] | None:
        """A proposed linearization of `ops` (optional ops may be left out), or
        None. It is only a proposal: checkers/linear/witness.py verifies it,
        and the search decides whenever it fails."""
        return None

    # --- pruning (optional) ---------------------------------------------------

    def is_dead(self, state: State, op: Op) -> bool:
        """True only if `op` is allowed in no state reachable from `state`.
        The search backtracks as soon as a pending required op is dead.
        Models with a `footprint` get this check exactly and incrementally
        through it, so the search then skips the per-state scan with is_dead."""
        return False

    def footprint(self, op: Op) -> Iterable[tuple[Hashable, Any]]:
        """(key, demand) pairs: what `op` needs of each key it touches. Keys
        must be orderable (the search keeps them sorted). With `settled` and
        `contradicts` this lets the search find every op that a step made
        impossible, wherever it lies in the history."""
        return ()

    def settled(self, before: State, after: State) -> tuple[Hashable, Hashable] | None:
        """The inclusive key range (lo, hi) whose contents became final in the
        step from `before` to `after` (no later step may change them), or None."""
        return None

    def contradicts(self, state: State, key: Hashable, demand: Any) -> bool:
        """For a settled `key`: True if `demand` (from `footprint`) can never be
        met in `state` or any state after it."""
        return False

    def priority(self, op: Op) -> Any:
        """Order in which the search tries the ops that could take effect next
        (lowest first). A heuristic only; the default keeps call order."""
        return 0

    # True promises more: once an op that is not read-only has taken effect, no
    # such op of lower or equal priority ever can (the log: appends go up in
    # offset). The search then never tries an op while a required one of lower
    # or equal priority is still pending.
    strict_priority = False

    # --- minimisation (optional) ----------------------------------------------

    def provides(self, op: Op) -> Iterable[Hashable]:
        """Keys `op` writes (e.g. a value, or an (offset, value) pair)."""
        return ()

    def initial_keys(self) -> Iterable[Hashable]:
        """Keys the initial state already provides (a register's initial value)."""
        return ()

    def describe_key(self, key: Hashable) -> str:
        """A key of `provides`/`depends_on`, in words."""
        return repr(key)

    def depends_on(self, op: Op) -> Iterable[Hashable]:
        """Keys `op` reads. The minimiser drops a reader whenever it drops a
        writer of something it reads, so that a subset of a linearizable
        history stays linearizable."""
        return ()

    def restrict(self, op: Op, keys: frozenset[Hashable]) -> Op | None:
        """`op` projected onto the footprint `keys` (None if nothing is left).
        Overriding it promises: a projection of a linearizable history is
        linearizable. The minimiser then localises a violation by keys."""
        return op

    def frontier(self, state: State) -> Hashable | None:
        """The footprint key where the search is likely stuck from `state`
        (for the log: its last offset); a starting point for localisation."""
        return None

    # --- reports (optional) -----------------------------------------------------

    def why_not(self, state: State, op: Op) -> str:
        """Why `op` is not allowed in `state`, in a short clause."""
        return f"the model does not allow it in state {self.describe_state(state)}"

    # --- capabilities, derived from which hooks a subclass overrides ---------------

    def _overrides(self, name: str) -> bool:
        return getattr(type(self), name) is not getattr(Model, name)

    @property
    def has_footprint(self) -> bool:
        return self._overrides("footprint")

    @property
    def has_is_dead(self) -> bool:
        return self._overrides("is_dead")

    @property
    def has_priority(self) -> bool:
        return self._overrides("priority")

    @property
    def can_project(self) -> bool:
        return self._overrides("restrict")
