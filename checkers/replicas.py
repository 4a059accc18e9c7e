"""Replica agreement of one partition: `replica-divergence` (docs/CHECKERS.md).

Below its high watermark a replica's log is committed, so every replica whose
HW covers an offset must hold the same record there (the StrongIsr invariant of
the TLA+ spec). Only replicas with a `ReplicaState` are judged: without a HW
nothing says which of their records are committed.
"""
from __future__ import annotations

from bisect import bisect_left
from operator import itemgetter
from typing import Any

from fencepost.checkers.anomaly import REPLICA_DIVERGENCE, Anomaly
from fencepost.checkers.offsets import op_refs
from fencepost.checkers.partition import PartitionHistory, Send

_offset = itemgetter(0)


def replica_divergence(ph: PartitionHistory) -> list[Anomaly]:
    """One anomaly per offset where the replicas whose HW covers it disagree:
    `how: different` when two of them hold different values, `how: missing`
    when they agree but some of them hold nothing there."""
    hw = {node: st.high_watermark for node, st in sorted(ph.replica_states.items())}
    if len(hw) < 2:
        return []
    logs = {node: ph.replicas.get(node, []) for node in hw}
    low = min(hw.values())
    # Fast path: below the lowest HW every replica is judged at every offset;
    # if those prefixes are equal lists, only the offsets above need a look.
    cuts = {n: _cut(log, low) for n, log in logs.items()}
    prefixes = [logs[n][:cuts[n]] for n in hw]
    same_prefix = all(p == prefixes[0] for p in prefixes)
    start = {n: cuts[n] if same_prefix else 0 for n in hw}
    # Each replica's committed records still to compare: offset -> value.
    held = {n: dict(reversed(logs[n][start[n]:_cut(logs[n], hw[n])])) for n in hw}

    out: list[Anomaly] = []
    flagged: list[tuple[int, dict[str, str | None]]] = []
    for o in sorted(set().union(*held.values())):
        covering = [n for n in hw if o < hw[n]]
        if len(covering) < 2:
            continue
        values = {n: held[n].get(o) for n in covering}
        if len(set(values.values())) > 1:
            flagged.append((o, values))
    if not flagged:
        return out
    writers = _writers(ph, {v for _, vs in flagged for v in vs.values() if v is not None})
    for o, values in flagged:
        out.append(_divergence(ph, o, values, hw, writers))
    return out


def _cut(log: list[tuple[int, str]], offset: int) -> int:
    """Index of the first record at or above `offset` (logs are in offset order)."""
    return bisect_left(log, offset, key=_offset)


def _writers(ph: PartitionHistory, values: set[str]) -> dict[str, list[Send]]:
    found: dict[str, list[Send]] = {}
    for s in ph.sends:
        if s.value in values:
            found.setdefault(s.value, []).append(s)
    return found


def _divergence(ph: PartitionHistory, offset: int, values: dict[str, str | None],
                hw: dict[str, int], writers: dict[str, list[Send]]) -> Anomaly:
    present = {v for v in values.values() if v is not None}
    how = "different" if len(present) > 1 else "missing"
    lacking = [n for n, v in values.items() if v is None]
    held = ", ".join(f"{n} holds {v!r}" for n, v in values.items() if v is not None)
    lack = f"; {', '.join(lacking)} hold(s) nothing" if lacking else ""
    details: dict[str, Any] = {
        "offset": offset, "how": how, "nodes": list(values), "values": values,
        "high_watermarks": {n: hw[n] for n in values},
        **op_refs([s for v in sorted(present) for s in writers.get(v, ())]),
        "explanation": f"offset {offset} is below the high watermark of {', '.join(values)}, "
                       f"but {held}{lack}",
    }
    return Anomaly(REPLICA_DIVERGENCE, ph.topic, ph.partition, details)
