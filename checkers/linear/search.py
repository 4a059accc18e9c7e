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
- Candidates are tried by `Model.priority`; a model whose priority is a
  strict order of its state-changing ops (the log's offsets) lets the search
  skip every op that would overtake a pending required one.
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

from fencepost.checkers.linear.model import Model, Op, overrides, search_hints

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


class _Done:
    """Which ops are done (linearized, or optional and dead): two bitsets over
    the ordinals of required and of optional ops, each shifted past its
    frontier (all ordinals below m, resp. mo, are done)."""

    __slots__ = ("m", "rel", "mo", "relo")

    def __init__(self, m: int = 0, rel: int = 0, mo: int = 0, relo: int = 0) -> None:
        self.m, self.rel, self.mo, self.relo = m, rel, mo, relo

    def copy(self) -> _Done:
        return _Done(self.m, self.rel, self.mo, self.relo)

    def has(self, required: bool, k: int) -> bool:
        if required:
            return k < self.m or bool((self.rel >> (k - self.m)) & 1)
        return k < self.mo or bool((self.relo >> (k - self.mo)) & 1)

    def add(self, required: bool, k: int) -> None:
        if required:
            rel = self.rel | 1 << (k - self.m)
            if k == self.m:  # the frontier moves past the run of done ops
                run = (rel ^ (rel + 1)).bit_length() - 1
                rel >>= run
                self.m += run
            self.rel = rel
        else:
            relo = self.relo | 1 << (k - self.mo)
            if k == self.mo:
                run = (relo ^ (relo + 1)).bit_length() - 1
                relo >>= run
                self.mo += run
            self.relo = relo

    def key(self, state: Any) -> tuple[Any, ...]:
        return (self.m, self.rel, self.mo, self.relo, state)


class _Frame:
    """A configuration on the search stack, with the ops left to try from it."""

    __slots__ = ("done", "state", "next_pos", "window", "cands", "tried", "lin", "depth")

    def __init__(self, done: _Done, state: Any, next_pos: int, window: list[int],
                 lin: tuple[Any, ...] | None, depth: int) -> None:
        self.done = done
        self.state = state
        self.next_pos = next_pos  # ops at positions < next_pos have been invoked
        self.window = window  # positions invoked, not done
        self.cands: list[int] = []  # the window's ops to try, best first
        self.tried = 0
        self.lin = lin  # persistent list: (parent lin, positions linearized here)
        self.depth = depth  # ops linearized


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


def _plan(model: Model[Any], ops: Sequence[Op]) -> _Plan:
    seen: set[int] = set()
    for op in ops:
        if op.id in seen:
            raise ValueError(f"two ops have id {op.id}; give every op its own id")
        seen.add(op.id)
        if op.ret is not None and op.ret < op.call:
            raise ValueError(f"op {op.id} returns at {op.ret}, before it is called at {op.call}; "
                             f"call and ret must be real-time positions with call <= ret")
    hints = search_hints(model)
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
        read_only=[hints.is_read_only(o) for o in ordered],
        priority=[hints.priority(o) for o in ordered] if overrides(hints, "priority") else [],
        n_required=counts[True],
    )
    if overrides(hints, "footprint"):
        touching: defaultdict[Any, list[tuple[int, Any]]] = defaultdict(list)
        footprint = hints.footprint
        for pos, op in enumerate(ordered):
            for key, demand in footprint(op):
                touching[key].append((pos, demand))
        plan.touching = dict(touching)
        plan.keys = sorted(touching)
    return plan


def check(model: Model[Any], ops: Iterable[Op], budget: int = DEFAULT_BUDGET) -> SearchResult:
    """Is there an order of `ops`, consistent with their real-time order, in
    which `model` allows each (required ops all, optional ones any subset)?"""
    ops = list(ops)
    return _Search(model, _plan(model, ops)).run(budget)


class _Search:
    def __init__(self, model: Model[Any], plan: _Plan) -> None:
        self.model = model
        self.plan = plan
        self.step = model.step
        self.hints = hints = search_hints(model)
        self.use_footprint = overrides(hints, "footprint")
        self.use_is_dead = overrides(hints, "is_dead") and not self.use_footprint
        self.strict = hints.strict_priority
        self.cache: set[tuple[Any, ...]] = set()
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
        if parent is None:
            done, next_pos, window, here = _Done(), 0, [], []
        else:
            done = parent.done.copy()
            done.add(plan.required[pos], plan.ordinal[pos])
            next_pos, window, here = parent.next_pos, parent.window.copy(), [pos]
            window.remove(pos)
            if self.use_footprint:
                verdict = self._settle(parent.state, state, done)
                if verdict is _DEAD:
                    return _DEAD
                if verdict:  # optional ops died: drop them from the window
                    window = [j for j in window if not done.has(plan.required[j], plan.ordinal[j])]
        next_pos = self._advance(state, done, window, next_pos, here)
        if self.use_is_dead and self._prune(state, done, window) is _DEAD:
            return _DEAD

        lin = (None if parent is None else parent.lin, tuple(here))
        if done.m == plan.n_required:
            return self._ids(lin)
        key = done.key(state)
        if key in self.cache:
            return _CACHED
        self.cache.add(key)
        frame = _Frame(done, state, next_pos, window, lin,
                       (0 if parent is None else parent.depth) + len(here))
        read_only = plan.read_only
        cands = [j for j in window if not read_only[j]]
        if plan.priority and len(cands) > 1:
            cands.sort(key=plan.priority.__getitem__)
            if self.strict:
                cands = self._viable(cands)
        frame.cands = cands
        return frame

    def _viable(self, cands: list[int]) -> list[int]:
        """Under a strict priority: the ops that can go before the first
        required one, and that one (unless another required op ties with it,
        when nothing can go)."""
        priority, required = self.plan.priority, self.plan.required
        first = next((j for j in cands if required[j]), None)
        if first is None:
            return cands
        p = priority[first]
        viable = [j for j in cands if priority[j] < p]
        tied = [j for j in cands if priority[j] == p and required[j]]
        if len(tied) == 1:
            viable.append(first)
        return viable

    def _settle(self, before: Any, after: Any, done: _Done) -> Any:
        """Check every op touching the keys the step settled: _DEAD if a
        required one can no longer take effect; optional ones that cannot are
        marked done (then True)."""
        span = self.hints.settled(before, after)
        if span is None:
            return False
        plan, contradicts = self.plan, self.hints.contradicts
        required, ordinal, keys = plan.required, plan.ordinal, plan.keys
        lo = bisect_left(keys, span[0])
        hi = bisect_right(keys, span[1], lo)
        marked = False
        for key in keys[lo:hi]:
            for j, demand in plan.touching[key]:
                req, k = required[j], ordinal[j]
                if done.has(req, k) or not contradicts(after, key, demand):
                    continue
                if req:
                    return _DEAD
                done.add(False, k)
                marked = True
        return marked

    def _advance(self, state: Any, done: _Done, window: list[int], next_pos: int,
                 here: list[int]) -> int:
        """Invoke every op called no later than the earliest pending return,
        then take every read-only op allowed in `state` (appending them to
        `here`); repeat while that moves the bound. Returns the new next_pos."""
        plan, step = self.plan, self.step
        call, ret, required, ordinal = plan.call, plan.ret, plan.required, plan.ordinal
        read_only, ops, n = plan.read_only, plan.ops, len(plan.call)
        to_check = window  # the state changed: every read in the window may now pass
        while True:
            bound = min(map(ret.__getitem__, window), default=inf)
            invoked = len(window)
            while next_pos < n and call[next_pos] <= bound:
                j = next_pos
                next_pos += 1
                if required[j]:  # a required op not yet invoked is never done
                    window.append(j)
                    if ret[j] < bound:
                        bound = ret[j]
                elif not done.has(False, ordinal[j]):
                    window.append(j)
            if to_check is not window:
                to_check = window[invoked:]
            taken = [j for j in to_check if read_only[j] and step(state, ops[j]) is not None]
            moved = False
            for j in taken:
                window.remove(j)
                here.append(j)
                done.add(required[j], ordinal[j])
                moved = moved or required[j]
            if not moved:
                return next_pos
            to_check = []  # not the window: only ops invoked from here on need a look

    def _prune(self, state: Any, done: _Done, window: list[int]) -> Any:
        """Without a footprint: ask is_dead of the window's ops."""
        plan, is_dead = self.plan, self.hints.is_dead
        for j in [j for j in window if is_dead(state, plan.ops[j])]:
            if plan.required[j]:
                return _DEAD
            window.remove(j)
            done.add(False, plan.ordinal[j])
        return None

    # --- results -------------------------------------------------------------------------

    def _ids(self, lin: tuple[Any, ...] | None) -> list[int]:
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
