"""The linearizability search: Wing & Gong's depth-first search over orders in
which operations take effect, with Lowe's memoisation of configurations
(linearized set, model state), iterative, over one model and one history.

A configuration may extend by any op that is not yet linearized and was invoked
no later than the earliest return among required ops not yet linearized (the
ops before the first return entry in Wing & Gong's list). On top of that:

- Read-only ops allowed in the current state are linearized at once, without a
  backtrack point: moving a read to the earliest point where it is allowed
  never loses a linearization (it changes no state, and nothing that must
  precede it is left out).
- Ops with `ret=None` (unknown outcome) are optional: linearized or never. The
  search succeeds when every required op is linearized.
- Dead ops: a required op the model says can never become valid again ends the
  branch; an optional one is marked done (it can never take effect either way).
  With a model `footprint`, every op touching keys a step settled is checked,
  wherever it lies in the history; otherwise `is_dead` is asked of the ops
  that could take effect next.
- Memo key: (m, required >> m, mo, optional >> mo, state), where m is the
  number of leading required ops (in call order) all done and the bitsets hold
  the rest; optional ops have their own bitset and frontier `mo`, so one that
  never takes effect does not pin the required frontier. Keys stay a few words.

`check` returns linearizable True/False, or None when more than `budget`
configurations were explored (an honest "unknown").
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from math import inf
from typing import Any

from checkers.linear.model import Model, Op

DEFAULT_BUDGET = 5_000_000


@dataclass(slots=True)
class Deepest:
    """The configuration with the most ops linearized that the search reached."""

    linearized: list[int]  # op ids, in the order they took effect
    state: Any
    pending: list[int]  # ids of the ops that could have taken effect next, but did not


@dataclass(slots=True)
class SearchResult:
    linearizable: bool | None  # None: budget exhausted
    explored: int  # configurations reached by a model step
    linearization: list[int] | None = None  # op ids, when linearizable
    deepest: Deepest | None = None  # when not linearizable (or unknown)
    ops: int = 0


class _Frame:
    """A configuration on the search stack, with the ops left to try from it."""

    __slots__ = ("m", "rel", "mo", "relo", "state", "next_pos", "window", "cands", "tried",
                 "lin", "depth")

    def __init__(self, m: int, rel: int, mo: int, relo: int, state: Any, next_pos: int,
                 window: list[int], lin: tuple | None, depth: int) -> None:
        self.m, self.rel, self.mo, self.relo = m, rel, mo, relo
        self.state = state
        self.next_pos = next_pos  # ops at positions < next_pos have been invoked
        self.window = window  # positions invoked, not done
        self.cands: list[int] = []
        self.tried = 0
        self.lin = lin  # persistent list: (parent lin, positions linearized here)
        self.depth = depth


_DEAD = object()
_CACHED = object()


@dataclass(slots=True)
class _Plan:
    """The history laid out for the search: positions are call order."""

    ops: list[Op]
    call: list[int]
    ret: list[float]  # inf for optional ops
    required: list[bool]
    ordinal: list[int]  # rank among the required ops, or among the optional ones
    read_only: list[bool]
    priority: list[Any]
    n_required: int
    keys: list[Any] = field(default_factory=list)  # footprint keys, sorted
    touching: dict[Any, list[tuple[int, Any]]] = field(default_factory=dict)


def _plan(model: Model, ops: Sequence[Op]) -> _Plan:
    seen: set[int] = set()
    for op in ops:
        if op.id in seen:
            raise ValueError(f"two ops have id {op.id}; give every op its own id")
        seen.add(op.id)
        if op.ret is not None and op.ret < op.call:
            raise ValueError(f"op {op.id} returns at {op.ret}, before it is called at {op.call}; "
                             f"call and ret must be real-time positions with call <= ret")
    ordered = sorted(ops, key=lambda o: (o.call, o.id))
    required = [o.ret is not None for o in ordered]
    ordinal, counts = [], [0, 0]
    for r in required:
        ordinal.append(counts[r])
        counts[r] += 1
    plan = _Plan(
        ops=ordered,
        call=[o.call for o in ordered],
        ret=[inf if o.ret is None else o.ret for o in ordered],
        required=required,
        ordinal=ordinal,
        read_only=[model.is_read_only(o) for o in ordered],
        priority=[model.priority(o) for o in ordered] if model.has_priority else [],
        n_required=counts[True],
    )
    if model.has_footprint:
        touching: defaultdict[Any, list[tuple[int, Any]]] = defaultdict(list)
        footprint = model.footprint
        for pos, op in enumerate(ordered):
            for key, demand in footprint(op):
                touching[key].append((pos, demand))
        plan.touching = dict(touching)
        plan.keys = sorted(touching)
    return plan


def check(model: Model, ops: Iterable[Op], budget: int = DEFAULT_BUDGET) -> SearchResult:
    """Is there an order of `ops`, consistent with their real-time order, in
    which `model` allows each (required ops all, optional ones any subset)?"""
    ops = list(ops)
    return _Search(model, _plan(model, ops)).run(budget)


class _Search:
    def __init__(self, model: Model, plan: _Plan) -> None:
        self.model = model
        self.plan = plan
        self.step = model.step
        self.use_footprint = model.has_footprint
        self.use_is_dead = model.has_is_dead and not model.has_footprint
        self.cache: set[tuple] = set()
        self.best: _Frame | None = None

    # --- the loop --------------------------------------------------------------------

    def run(self, budget: int) -> SearchResult:
        step, ops = self.step, self.plan.ops
        explored = 0
        root = self._child(None, -1, self.model.init())
        n = len(ops)
        if isinstance(root, _Frame):
            self.best = root
            stack = [root]
        elif root is _DEAD or root is _CACHED:
            return SearchResult(False, 0, deepest=self._deepest(), ops=n)
        else:
            return SearchResult(True, 0, linearization=root, ops=n)
        while stack:
            frame = stack[-1]
            cands = frame.cands
            if frame.tried >= len(cands):
                stack.pop()
                continue
            pos = cands[frame.tried]
            frame.tried += 1
            after = step(frame.state, ops[pos])
            if after is None:
                continue
            explored += 1
            if explored > budget:
                return SearchResult(None, explored, deepest=self._deepest(), ops=n)
            child = self._child(frame, pos, after)
            if child.__class__ is _Frame:
                stack.append(child)
                if child.depth > self.best.depth:
                    self.best = child
            elif child is not _DEAD and child is not _CACHED:
                return SearchResult(True, explored, linearization=child, ops=n)
        return SearchResult(False, explored, deepest=self._deepest(), ops=n)

    # --- one configuration --------------------------------------------------------------

    def _child(self, parent: _Frame | None, pos: int, state: Any) -> Any:
        """The configuration after `parent` linearizes the op at `pos` (reaching
        `state`): a new _Frame, _DEAD, _CACHED, or the linearization (a list
        of op ids) if every required op is done."""
        plan = self.plan
        required, ordinal, ret, call = plan.required, plan.ordinal, plan.ret, plan.call
        n = len(call)
        if parent is None:
            m = rel = mo = relo = 0
            next_pos, window, here = 0, [], []
        else:
            m, rel, mo, relo = parent.m, parent.rel, parent.mo, parent.relo
            next_pos = parent.next_pos
            k = ordinal[pos]
            if required[pos]:
                rel |= 1 << (k - m)
                if k == m:
                    t = (rel ^ (rel + 1)).bit_length() - 1
                    rel >>= t
                    m += t
            else:
                relo |= 1 << (k - mo)
                if k == mo:
                    t = (relo ^ (relo + 1)).bit_length() - 1
                    relo >>= t
                    mo += t
            here = [pos]
            window = parent.window.copy()
            window.remove(pos)

        # Ops made impossible by what this step settled.
        if self.use_footprint and parent is not None:
            span = self.model.settled(parent.state, state)
            if span is not None:
                keys, touching, contradicts = plan.keys, plan.touching, self.model.contradicts
                lo = bisect_left(keys, span[0])
                hi = bisect_right(keys, span[1], lo)
                marked = False
                for key in keys[lo:hi]:
                    for j, demand in touching[key]:
                        k = ordinal[j]
                        if required[j]:
                            if k < m or (rel >> (k - m)) & 1:
                                continue
                            if contradicts(state, key, demand):
                                return _DEAD
                        elif k >= mo and not (relo >> (k - mo)) & 1 and contradicts(state, key, demand):
                            relo |= 1 << (k - mo)
                            if k == mo:
                                t = (relo ^ (relo + 1)).bit_length() - 1
                                relo >>= t
                                mo += t
                            marked = True
                if marked:
                    window = [j for j in window if required[j] or not self._done_opt(j, mo, relo)]

        # Invoke every op called no later than the earliest pending return, then
        # take every read-only op allowed now; repeat while that moves the bound.
        read_only, ops, step = plan.read_only, plan.ops, self.step
        fresh = window
        while True:
            bound = min(map(ret.__getitem__, window), default=inf)
            start = len(window)
            while next_pos < n and call[next_pos] <= bound:
                j = next_pos
                next_pos += 1
                k = ordinal[j]
                if required[j]:
                    window.append(j)  # later required ops are never done yet
                    if ret[j] < bound:
                        bound = ret[j]
                elif not self._done_opt(j, mo, relo):
                    window.append(j)
            if fresh is not window:
                fresh = window[start:]
            moved = False
            taken = None
            for j in fresh:
                if read_only[j] and step(state, ops[j]) is not None:
                    taken = [] if taken is None else taken
                    taken.append(j)
            if taken is None:
                break
            for j in taken:
                window.remove(j)
                here.append(j)
                k = ordinal[j]
                if required[j]:
                    rel |= 1 << (k - m)
                    if k == m:
                        t = (rel ^ (rel + 1)).bit_length() - 1
                        rel >>= t
                        m += t
                    moved = True
                else:
                    relo |= 1 << (k - mo)
                    if k == mo:
                        t = (relo ^ (relo + 1)).bit_length() - 1
                        relo >>= t
                        mo += t
            if not moved:
                break
            fresh = None  # only newly invoked ops need a look next round

        if self.use_is_dead:
            is_dead = self.model.is_dead
            for j in [j for j in window if is_dead(state, ops[j])]:
                if required[j]:
                    return _DEAD
                window.remove(j)
                k = ordinal[j]
                relo |= 1 << (k - mo)
                if k == mo:
                    t = (relo ^ (relo + 1)).bit_length() - 1
                    relo >>= t
                    mo += t

        lin = (None if parent is None else parent.lin, tuple(here))
        if m == plan.n_required:
            return self._ids(lin)
        key = (m, rel, mo, relo, state)
        if key in self.cache:
            return _CACHED
        self.cache.add(key)
        frame = _Frame(m, rel, mo, relo, state, next_pos, window, lin,
                       (0 if parent is None else parent.depth) + len(here))
        cands = [j for j in window if not read_only[j]]
        if plan.priority and len(cands) > 1:
            cands.sort(key=plan.priority.__getitem__)
        frame.cands = cands
        return frame

    def _done_opt(self, j: int, mo: int, relo: int) -> bool:
        k = self.plan.ordinal[j]
        return k < mo or bool((relo >> (k - mo)) & 1)

    # --- results -------------------------------------------------------------------------

    def _ids(self, lin: tuple | None) -> list[int]:
        chunks = []
        while lin is not None:
            chunks.append(lin[1])
            lin = lin[0]
        ops = self.plan.ops
        return [ops[pos].id for chunk in reversed(chunks) for pos in chunk]

    def _deepest(self) -> Deepest | None:
        best = self.best
        if best is None:
            return Deepest([], self.model.init(), [])
        return Deepest(self._ids(best.lin), best.state, [self.plan.ops[j].id for j in best.window])
