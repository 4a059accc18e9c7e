"""Checking a proposed linearization (a witness) instead of searching for one.

A witness is a total order of some of a history's ops. It proves the history
linearizable iff it holds every required op (those with a known return) at
most once, respects real time (an op that returned before another was called
comes first), and the model allows every op in that order from `init()`.
That check is O(n) model steps, so a model that can propose a good witness
cheaply (`Model.witness`) spares the exponential search on histories that are
linearizable; when the witness fails, the caller runs the complete search,
which alone may answer "not linearizable".
"""
from __future__ import annotations

from collections.abc import Sequence

from checkers.linear.model import Model, Op


def verify(model: Model, ops: Sequence[Op], order: Sequence[Op]) -> bool:
    """True iff `order` is a linearization of `ops` under `model`."""
    seen: set[int] = set()
    latest_call = None  # the latest call among ops already placed
    state = model.init()
    for op in order:
        if op.id in seen:
            return False
        seen.add(op.id)
        # `op` may follow an op placed earlier only if it did not return
        # before that op was called.
        if op.ret is not None and latest_call is not None and op.ret < latest_call:
            return False
        if latest_call is None or op.call > latest_call:
            latest_call = op.call
        state = model.step(state, op)
        if state is None:
            return False
    return all(op.id in seen for op in ops if op.ret is not None)
