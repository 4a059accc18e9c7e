"""The smallest nemesis script that still makes a run fail the same way (`fencepost shrink`).

A candidate (some of the recorded script's units, a time limit) *reproduces* when at least
one of `tries` runs of it finds the target anomaly kind; the tries of a candidate use the
seeds s, s+1, ... (s: the recorded run's seed) and stop at the first that reproduces, so a
shrink is repeatable up to the cluster's own timing. Every run counts against `max_runs`;
when they are spent, the smallest candidate found so far is the answer.

Steps, each keeping a change only when the changed candidate reproduces:
1. the whole recorded script must reproduce (else there is nothing to shrink: `Unreproduced`);
2. delta debugging over the units (Zeller's ddmin: try each of n chunks, then each
   complement; on success continue from it, else split finer) down to a set from which no
   single unit can be removed;
3. timing: the script moved earlier so that its first action is at LEAD_S; each fault's hold
   (start to stop) halved, at most twice, not below MIN_HOLD_S; the time limit cut to the last
   action plus TAIL_S.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from fencepost.harness.replay.script import Entry, Unit, flatten

LEAD_S = 2.0  # traffic runs this long before the first fault
MIN_HOLD_S = 0.5
HOLD_HALVINGS = 2
TAIL_S = 5.0  # traffic after the last action starts, for what it broke to show


class Unreproduced(Exception):
    """The recorded script itself did not reproduce the anomaly in its tries."""


class BudgetSpent(Exception):
    pass


@dataclass(frozen=True)
class Candidate:
    units: tuple[Unit, ...]
    time_limit: float

    @property
    def actions(self) -> int:
        return sum(len(u.entries) for u in self.units)

    def script(self) -> list[Entry]:
        return flatten(self.units)

    def describe(self) -> str:
        return (f"{len(self.units)} unit(s), {self.actions} action(s), time limit {self.time_limit:g} s: "
                + "; ".join(u.describe() for u in self.units))


@dataclass(frozen=True)
class Try:
    candidate: Candidate
    seed: int
    reproduced: bool
    found: dict[str, int]
    run_dir: str


# (candidate, seed) -> (anomaly counts that made the run invalid, its run directory)
RunScript = Callable[[Candidate, int], tuple[dict[str, int], str]]


@dataclass
class Shrinker:
    run_script: RunScript
    kind: str
    seed: int
    tries: int = 3
    max_runs: int = 40
    say: Callable[[str], None] = print
    history: list[Try] = field(default_factory=list)
    _known: dict[tuple, tuple[bool, int]] = field(default_factory=dict)

    @property
    def runs(self) -> int:
        return len(self.history)

    def reproduces(self, candidate: Candidate) -> bool:
        key = (tuple(candidate.script()), candidate.time_limit)
        if key in self._known:
            return self._known[key][0]
        for k in range(self.tries):
            if self.runs >= self.max_runs:
                raise BudgetSpent
            found, run_dir = self.run_script(candidate, self.seed + k)
            hit = found.get(self.kind, 0) > 0
            self.history.append(Try(candidate, self.seed + k, hit, found, run_dir))
            self.say(f"shrink: run {self.runs}/{self.max_runs}: {candidate.describe()}; seed {self.seed + k}: "
                     + (f"{self.kind} {found[self.kind]}: reproduced" if hit else
                        f"{', '.join(f'{n} {c}' for n, c in found.items()) or 'valid'}: not reproduced"))
            if hit:
                self._known[key] = (True, self.seed + k)
                return True
        self._known[key] = (False, self.seed)
        return False

    def seed_of(self, candidate: Candidate) -> int:
        """The seed of the try that reproduced `candidate`."""
        return self._known.get((tuple(candidate.script()), candidate.time_limit), (False, self.seed))[1]

    def shrink(self, start: Candidate) -> Candidate:
        """Steps 1-3 of the module doc; the smallest candidate that reproduced."""
        try:
            if not self.reproduces(start):
                raise Unreproduced(f"the recorded script did not yield {self.kind} in {self.tries} tries")
        except BudgetSpent:
            raise Unreproduced(f"--max-runs {self.max_runs} spent before the recorded script reproduced") from None
        best = start
        try:
            best = self._ddmin(best)
            best = self._timing(best)
        except BudgetSpent:
            self.say(f"shrink: all {self.max_runs} runs spent; the smallest script so far is the answer")
        return best

    def _ddmin(self, best: Candidate) -> Candidate:
        units = list(best.units)
        n = 2
        while len(units) >= 2:
            chunks = _split(units, n)
            reduced = False
            for subset in chunks:
                trial = replace(best, units=tuple(subset))
                if self.reproduces(trial):
                    best, units, n, reduced = trial, subset, 2, True
                    break
            if not reduced:
                for i in range(len(chunks)):
                    complement = [u for j, chunk in enumerate(chunks) if j != i for u in chunk]
                    trial = replace(best, units=tuple(complement))
                    if len(chunks) > 2 and self.reproduces(trial):
                        best, units, n, reduced = trial, complement, max(n - 1, 2), True
                        break
            if not reduced:
                if n >= len(units):
                    break
                n = min(2 * n, len(units))
        return best

    def _timing(self, best: Candidate) -> Candidate:
        first = min((u.start for u in best.units), default=0.0)
        if first > LEAD_S + 0.5:
            trial = replace(best, units=tuple(_shifted(u, LEAD_S - first) for u in best.units),
                            time_limit=max(1.0, best.time_limit - (first - LEAD_S)))
            if self.reproduces(trial):
                best = trial
        for i, unit in enumerate(best.units):
            for _ in range(HOLD_HALVINGS):
                unit = best.units[i]
                if len(unit.entries) < 2:
                    break
                hold = unit.entries[-1].at - unit.entries[0].at
                if hold / 2 < MIN_HOLD_S:
                    break
                ended = replace(unit.entries[-1], at=round(unit.entries[0].at + hold / 2, 3))
                shorter = Unit((*unit.entries[:-1], ended))
                trial = replace(best, units=(*best.units[:i], shorter, *best.units[i + 1:]))
                if not self.reproduces(trial):
                    break
                best = trial
        last = max((e.at for e in best.script()), default=0.0)
        limit = round(max(last + TAIL_S, 1.0), 3)
        if limit < best.time_limit:
            trial = replace(best, time_limit=limit)
            if self.reproduces(trial):
                best = trial
        return best


def _split(units: Sequence[Unit], n: int) -> list[list[Unit]]:
    size, extra = divmod(len(units), n)
    chunks, at = [], 0
    for i in range(n):
        end = at + size + (1 if i < extra else 0)
        if end > at:
            chunks.append(list(units[at:end]))
        at = end
    return chunks


def _shifted(unit: Unit, by: float) -> Unit:
    return Unit(tuple(replace(e, at=round(max(0.0, e.at + by), 3)) for e in unit.entries))
