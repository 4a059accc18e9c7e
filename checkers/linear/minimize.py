"""Minimal counterexamples: a small set of ops that is itself not linearizable,
with the longest order found for it and why each remaining op is stuck.

Delta debugging (Zeller & Hildebrandt's ddmin) over ops, closed under the
model's read-from dependencies: dropping a writer drops every reader of what it
wrote. A subset closed that way of a linearizable history is linearizable, so a
failing subset is itself a proof, never the artefact "a read of a value nobody
wrote" made by dropping the writer.

For models with a projection (`Model.restrict`; the log), localise first, so a
10^5-op history costs a few small searches: find a failing contiguous key range
around the search's deepest point (doubling it), shrink it from both ends by
bisection, then try its two end keys alone (every log violation involves at most
two offsets). A projection that fails proves the whole history fails.
"""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fencepost.checkers.linear.model import Model, Op, minimise_hints, overrides, search_hints, why_not
from fencepost.checkers.linear.search import DEFAULT_BUDGET, Deepest, check


@dataclass(slots=True)
class Counterexample:
    ops: list[Op]  # the minimal set, in call order
    longest: list[Op]  # the longest order found in which some of them take effect
    states: list[str]  # the state before longest[0], then after each op of longest
    stuck: list[tuple[Op, str]]  # the other ops, each with why it cannot go next
    explanation: str
    descriptions: dict[int, str]  # op id -> full description (with its history source)
    labels: dict[int, str]  # op id -> the model's short description, for bars
    keys: list[Hashable] = field(default_factory=list)  # the footprint keys localised to
    checks: int = 0  # searches the minimiser ran


def minimize(model: Model[Any], ops: Sequence[Op], budget: int = DEFAULT_BUDGET,
             deepest: Deepest | None = None,
             describe: Callable[[Op], str] | None = None) -> Counterexample | None:
    """A 1-minimal non-linearizable subset of `ops`, explained. Passing
    `deepest` (from a failed search of `ops`) says they are known not to be
    linearizable and where the search got stuck; without it, they are searched
    first, and None is returned if they are linearizable or the budget ran out.
    `describe` names ops in reports (default: the model's describe_op)."""
    return _Minimizer(model, budget, describe or model.describe_op).run(list(ops), deepest)


class _Minimizer:
    def __init__(self, model: Model[Any], budget: int, describe: Callable[[Op], str]) -> None:
        self.model = model
        self.budget = budget
        self.describe = describe
        self.checks = 0

    def fails(self, ops: Sequence[Op]) -> bool:
        """Proven not linearizable (an exhausted budget proves nothing)."""
        if not ops:
            return False
        self.checks += 1
        return check(self.model, ops, self.budget).linearizable is False

    def run(self, ops: list[Op], deepest: Deepest | None) -> Counterexample | None:
        if deepest is None:  # not told it fails: find out (and where)
            self.checks += 1
            found = check(self.model, ops, self.budget)
            if found.linearizable is not False:
                return None
            deepest = found.deepest
        keys: list[Hashable] = []
        if overrides(minimise_hints(self.model), "restrict") and overrides(search_hints(self.model), "footprint"):
            ops, keys = self.localise(ops, deepest)
        minimal = self.ddmin(ops)
        return self.explain(minimal, keys)

    # --- localisation by footprint keys ----------------------------------------------

    def localise(self, ops: list[Op], deepest: Deepest | None) -> tuple[list[Op], list[Hashable]]:
        model = self.model
        hints = minimise_hints(model)
        touching: dict[Any, list[int]] = {}  # footprint keys: orderable
        keyless: list[Op] = []
        for pos, op in enumerate(ops):
            op_keys = {key for key, _ in search_hints(model).footprint(op)}
            if not op_keys:
                keyless.append(op)
            for key in op_keys:
                touching.setdefault(key, []).append(pos)
        keys = sorted(touching)
        if not keys:
            return ops, []

        def project(chosen: Sequence[Hashable]) -> list[Op]:
            kept = frozenset(chosen)
            positions = sorted({pos for key in kept for pos in touching[key]})
            out = list(keyless)
            for pos in positions:
                op = hints.restrict(ops[pos], kept)
                if op is not None:
                    out.append(op)
            return out

        memo: dict[tuple[int, int], bool] = {}

        def fails_range(a: int, b: int) -> bool:  # keys[a:b]
            if (a, b) == (0, len(keys)):
                return True  # the whole history: known to fail
            if (a, b) not in memo:
                memo[(a, b)] = self.fails(project(keys[a:b]))
            return memo[(a, b)]

        frontier = hints.frontier(deepest.state) if deepest is not None else None
        centre = 0 if frontier is None else bisect_right(keys, frontier)
        reach = 1
        while True:
            a, b = max(0, centre - reach), min(len(keys), centre + reach)
            if fails_range(a, b):
                break
            reach *= 2
        lo, hi = a + 1, b  # smallest end e with keys[a:e] failing
        while lo < hi:
            mid = (lo + hi) // 2
            if fails_range(a, mid):
                hi = mid
            else:
                lo = mid + 1
        end = lo
        lo, hi = a, end - 1  # largest start s with keys[s:end] failing
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if fails_range(mid, end):
                lo = mid
            else:
                hi = mid - 1
        start = lo
        if end - start > 2:
            ends = [keys[start], keys[end - 1]]
            projected = project(ends)
            if self.fails(projected):
                return projected, ends
        return project(keys[start:end]), keys[start:end]

    # --- delta debugging with read-from closure ----------------------------------------

    def ddmin(self, ops: list[Op]) -> list[Op]:
        hints = minimise_hints(self.model)
        by_id = {op.id: op for op in ops}
        providers: dict[Hashable, set[int]] = {}
        for op in ops:
            for key in hints.provides(op):
                providers.setdefault(key, set()).add(op.id)
        needs = {op.id: tuple(k for k in hints.depends_on(op) if k in providers) for op in ops}

        def close(ids: set[int]) -> frozenset[int]:
            changed = True
            while changed:
                changed = False
                for i in list(ids):
                    if any(not providers[k] <= ids for k in needs[i]):
                        ids.discard(i)
                        changed = True
            return frozenset(ids)

        memo: dict[frozenset[int], bool] = {}

        def fails(ids: frozenset[int]) -> bool:
            if ids not in memo:
                memo[ids] = self.fails([by_id[i] for i in ids])
            return memo[ids]

        order = {op.id: pos for pos, op in enumerate(sorted(ops, key=lambda o: (o.call, o.id)))}
        items = sorted(close(set(by_id)), key=order.__getitem__)
        n = 2
        while len(items) >= 2:
            size = -(-len(items) // n)
            chunks = [items[i:i + size] for i in range(0, len(items), size)]
            reduced = None
            for chunk in chunks:
                subset = close(set(chunk))
                if len(subset) < len(items) and fails(subset):
                    reduced, n = subset, 2
                    break
            if reduced is None:
                for chunk in chunks:
                    subset = close(set(items) - set(chunk))
                    if fails(subset):
                        reduced, n = subset, max(n - 1, 2)
                        break
            if reduced is None:
                if n >= len(items):
                    break
                n = min(len(items), 2 * n)
                continue
            items = sorted(reduced, key=order.__getitem__)
        return [by_id[i] for i in items]

    # --- explanation -----------------------------------------------------------------------

    def explain(self, ops: list[Op], keys: list[Hashable]) -> Counterexample:
        model, describe = self.model, self.describe
        self.checks += 1
        found = check(model, ops, self.budget)
        by_id = {op.id: op for op in ops}
        longest = [by_id[i] for i in found.deepest.linearized] if found.deepest else []
        state = model.init()
        states = [model.describe_state(state)]
        for op in longest:
            state = model.step(state, op)
            states.append(model.describe_state(state))
        done = {op.id for op in longest}
        remaining = [op for op in ops if op.id not in done]
        hints = minimise_hints(model)
        written = {key for op in ops for key in hints.provides(op)} | set(hints.initial_keys())
        stuck = [(op, self.why_stuck(state, op, remaining, written)) for op in remaining]

        these = "This operation admits" if len(ops) == 1 else f"These {len(ops)} operations admit"
        text = [f"{these} no linearization against the {model.name} model."]
        if longest:
            text.append("The longest order found: " + "; ".join(map(describe, longest)) + ".")
            text.append("After it, every operation left is stuck: ")
        else:
            text.append("None can take effect first: ")
        text[-1] += "; ".join(f"{describe(op)}: {why}" for op, why in stuck) + "."
        return Counterexample(ops, longest, states, stuck, " ".join(text),
                              {op.id: describe(op) for op in ops},
                              {op.id: model.describe_op(op) for op in ops}, list(keys), self.checks)

    def why_stuck(self, state: Any, op: Op, remaining: list[Op], written: set[Hashable]) -> str:
        model, describe = self.model, self.describe
        # The closure keeps a reader only with every writer of what it reads,
        # so what no op here writes, no op in the history wrote.
        hints = minimise_hints(model)
        unwritten = [key for key in hints.depends_on(op) if key not in written]
        if unwritten:
            return "no operation in the history writes " + ", ".join(map(hints.describe_key, unwritten))
        before = [q for q in remaining if q is not op and q.ret is not None and q.ret < op.call]
        if before:
            return f"it began after {describe(before[0])} returned, so that must take effect first"
        after = model.step(state, op)
        if after is None:
            return why_not(model, state, op)
        for q in remaining:
            if q is not op and q.ret is not None and search_hints(model).is_dead(after, q):
                return (f"once it takes effect, {describe(q)} never can "
                        f"({why_not(model, after, q)})")
        if op.ret is None:
            return "its outcome is unknown; taking effect or not, the rest stays stuck"
        return "it may take effect here, but no order of the rest continues from there"
