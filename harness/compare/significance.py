"""Fisher's exact test between the rows of `fencepost compare`, within each fault group
(harness/compare/stats.py: `two_rates_p` of invalid runs over runs with a verdict; unknown and
crashed runs are left out, as they are of the rate). The liveness-failure rate (runs that
failed liveness over runs with a liveness verdict) is tested against the same row; where
either row has no run with a liveness verdict it gets no liveness p-value.

Without a baseline each row is tested against the row before it in its group (the
table's order, harness/compare/order.py), the first row of a group against none. With
`--baseline SYSTEM[:TRUNCATION]` every row of a group is tested against that group's
baseline row; the baseline row itself, and every row of a group without one, gets no
p-value. SYSTEM alone (`own`, `kafka:2.0.1`) must match one row per group; where it
matches several, name the truncation too (`own:hw`, `kafka:2.0.1:kip320`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import groupby

from fencepost.clusters import TRUNCATIONS
from fencepost.harness.compare.order import label
from fencepost.harness.compare.stats import two_rates_p
from fencepost.harness.compare.table import Row
from fencepost.harness.errors import BadInput


@dataclass(frozen=True)
class Baseline:
    system: str
    truncation: str | None = None  # None: whichever truncation the system has in each group

    @staticmethod
    def parse(text: str) -> Baseline:
        """SYSTEM or SYSTEM:TRUNCATION; TRUNCATION is the last `:` part when it is one of
        hw, kip101, kip279, kip320, release (a system may hold a `:` itself: kafka:2.0.1)."""
        text = text.strip()
        head, _, tail = text.rpartition(":")
        if head and tail in TRUNCATIONS:
            return Baseline(head, tail)
        if not text or text.endswith(":"):
            raise BadInput(f"--baseline {text!r}: give SYSTEM or SYSTEM:TRUNCATION, e.g. own:hw, kafka:2.0.1, "
                           f"kafka:2.0.1:kip320")
        return Baseline(text)

    def matches(self, row: Row) -> bool:
        return row.system == self.system and self.truncation in (None, row.truncation)

    def __str__(self) -> str:
        return self.system if self.truncation is None else label(self.system, self.truncation)


def with_p_values(table: list[Row], baseline: Baseline | None = None) -> list[Row]:
    """`table` (in the order of `rows`) with `p_value` and `versus` filled in. Raises
    BadInput when `baseline` matches no row at all, or several rows of one group."""
    if baseline is not None and not any(baseline.matches(row) for row in table):
        named = ", ".join(dict.fromkeys(label(r.system, r.truncation) for r in table))
        raise BadInput(f"--baseline {baseline}: no row is {baseline}; the rows: {named}")
    tested: list[Row] = []
    for faults, grouped in groupby(table, key=lambda row: row.faults):
        group = list(grouped)
        if baseline is None:
            tested.append(group[0])
            tested += [_against(row, previous) for previous, row in zip(group, group[1:])]
            continue
        base = [row for row in group if baseline.matches(row)]
        if len(base) > 1:
            raise BadInput(f"--baseline {baseline} matches {len(base)} rows under faults {faults} "
                           f"({', '.join(label(r.system, r.truncation) for r in base)}): name one, "
                           f"e.g. --baseline {label(base[0].system, base[0].truncation)}")
        tested += [row if not base or row is base[0] else _against(row, base[0]) for row in group]
    return tested


def groups_without(table: list[Row], baseline: Baseline) -> list[str]:
    """The fault groups that have no baseline row (their rows get no p-value)."""
    faults = dict.fromkeys(row.faults for row in table)
    return [f for f in faults if not any(baseline.matches(r) for r in table if r.faults == f)]


def _against(row: Row, other: Row) -> Row:
    liveness_p = (two_rates_p(row.liveness_failed, row.liveness_judged, other.liveness_failed, other.liveness_judged)
                  if row.liveness_judged and other.liveness_judged else None)
    return replace(row, p_value=two_rates_p(row.invalid, row.judged, other.invalid, other.judged),
                   versus=label(other.system, other.truncation), liveness_p_value=liveness_p)
