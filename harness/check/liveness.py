"""The liveness section of results.json: whether the cluster went on working, a verdict of its
own beside safety and never part of `valid`. The one owner of the section's format; the
rules are in docs/CHECKERS.md ("Liveness").

Findings, by kind:
- `fatal-marker`: a line in a node's log saying the system gave up on a partition or on
  itself (clusters/systems/markers.py), read from the run directory's `nodes/<node>/*.log`;
- `unavailable`: a partition of the topic acknowledged no write for longer than
  `unavailable_s` while no fault explains it — outside every fault band of the history
  (harness/measures/bands.py) and the `grace_s` after each band's end, in the main phase
  (up to the final heal);
- `no-recovery`: after the final heal, sends to a partition were invoked and none was
  acknowledged (the run's recovery phase, bounded by the quiesce timeout, gave up);
- `stuck-consumer`: a consumer whose realtime lag (harness/measures/lag.py, the report's own
  computation) at its last poll exceeds `stuck_lag_s`, where it polled after the final heal
  (or, in a run without faults, at all).

`verdict` is "ok" without findings, "failed" with any, "unknown" when the history could not
be read. `findings` counts them all, `kinds` by kind (every kind listed, 0 when none), so a
campaign can expect `liveness.verdict` or name a kind. A run recorded before the recovery
phase existed (no send after its final heal) has its recovery and stuck consumers unjudged,
not failed.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable

from fencepost.clusters import fatal_markers
from fencepost.harness.measures.bands import HEAL, Band, NemesisOp, nemesis_bands
from fencepost.harness.measures.lag import LagSeries, RealtimeLag
from fencepost.harness.rundir.clients import client_log
from fencepost.harness.rundir.history import NEMESIS, Op, iter_plain
from fencepost.harness.rundir.names import HISTORY_FILE, NODES_DIR

MAX_MARKERS = 50  # per run: the first ones say what happened; the count says how often
MAX_LISTED = 50  # unavailability windows and stuck consumers listed (all counted)
KINDS = ("fatal-marker", "unavailable", "no-recovery", "stuck-consumer")
NS = 1_000_000_000


@dataclass(frozen=True)
class Thresholds:
    unavailable_s: float = 10.0  # no ack on a partition for longer than this, unexplained
    grace_s: float = 15.0  # after a fault ends, the time a cluster and its clients get to recover
    stuck_lag_s: float = 10.0  # a consumer's realtime lag at its last poll above this: stuck


class _Sends:
    """History observer: per partition, the times sends were invoked and acknowledged (ns)."""

    def __init__(self) -> None:
        self.invoked: dict[str, list[int]] = {}
        self.acked: dict[str, list[int]] = {}

    def __call__(self, op: Op) -> None:
        if op.f != "send" or op.process == NEMESIS or op.type not in ("invoke", "ok"):
            return
        v = op.value
        key = f"{v['topic']}-{v['partition']}"
        (self.invoked if op.type == "invoke" else self.acked).setdefault(key, []).append(op.time)


def liveness(run_dir: Path, test: dict[str, Any], thresholds: Thresholds = Thresholds()) -> dict[str, Any]:
    """The section for the run in `run_dir` of the system test.json names (module doc)."""
    markers = _markers(run_dir, str(test.get("system") or "own"))
    section: dict[str, Any] = {"verdict": "ok", "findings": 0, "kinds": dict.fromkeys(KINDS, 0),
                               "fatal_markers": markers[:MAX_MARKERS],
                               "failed_partitions": sorted({f"{m['node']}: {m['partition']}"
                                                            for m in markers if m["partition"]}),
                               "unavailable": [], "recovery": None, "stuck_consumers": [],
                               "thresholds": asdict(thresholds)}
    section["kinds"]["fatal-marker"] = len(markers)
    if (run_dir / HISTORY_FILE).is_file():
        sends, lag = _Sends(), RealtimeLag()
        nemesis: list[NemesisOp] = []
        last = lines = 0
        for op in iter_plain(run_dir / HISTORY_FILE):  # validated by `fencepost check` anyway
            lines += 1
            last = max(last, op.time)
            if op.process == NEMESIS:
                nemesis.append(NemesisOp(op.index, op.time, op.type, op.f, op.value, op.error))
                continue
            try:
                sends(op)
                lag(op)
            except (KeyError, TypeError, AttributeError):
                continue  # a line of another shape: `fencepost check` reports it
        if not lines and (run_dir / HISTORY_FILE).stat().st_size:
            section["verdict"] = "unknown"
        try:
            bands = nemesis_bands(nemesis, last)
        except (KeyError, TypeError, AttributeError, ValueError):
            section["verdict"] = "unknown"  # a nemesis line of another shape: `fencepost check` reports it
            return section
        healed = final_heal(bands)
        main_end = healed.start if healed is not None else last
        windows = unavailable_windows(sends.acked, sends.invoked, bands, main_end, thresholds)
        section["unavailable"] = windows[:MAX_LISTED]
        section["kinds"]["unavailable"] = len(windows)
        section["recovery"] = recovery(sends.acked, sends.invoked, healed.end if healed is not None else None)
        section["kinds"]["no-recovery"] = sum(1 for s in (section["recovery"] or {}).get("partitions", {}).values()
                                              if s is None)
        stuck = stuck_consumers(lag.series, healed.end if healed is not None else None, bool(bands), thresholds)
        section["stuck_consumers"] = stuck[:MAX_LISTED]
        section["kinds"]["stuck-consumer"] = len(stuck)
    section["findings"] = sum(section["kinds"].values())
    if section["findings"]:
        section["verdict"] = "failed"
    return section


def _markers(run_dir: Path, system: str) -> list[dict[str, Any]]:
    markers: list[dict[str, Any]] = []
    nodes = run_dir / NODES_DIR
    for log in sorted(nodes.glob("*/*.log")) if nodes.is_dir() else ():
        text = log.read_text(errors="replace")
        markers += [{**m.to_json(), "log": f"{NODES_DIR}/{log.parent.name}/{log.name}"}
                    for m in fatal_markers(system, log.parent.name, text)]
    return markers


def final_heal(bands: Iterable[Band]) -> Band | None:
    """The last `heal` band: the end of the faults."""
    heals = [b for b in bands if b.kind == HEAL]
    return max(heals, key=lambda b: b.end) if heals else None


def explained(bands: Iterable[Band], grace_s: float) -> list[tuple[int, int]]:
    """The times a fault explains, merged: each band from its start to its end plus the grace."""
    spans = sorted((b.start, b.end + int(grace_s * NS)) for b in bands)
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _uncovered(low: int, high: int, covered: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of [low, high] outside every span of `covered` (sorted, disjoint)."""
    parts, at = [], low
    for start, end in covered:
        if end <= at:
            continue
        if start >= high:
            break
        if start > at:
            parts.append((at, start))
        at = max(at, end)
    if at < high:
        parts.append((at, high))
    return parts


def unavailable_windows(acked: dict[str, list[int]], invoked: dict[str, list[int]], bands: list[Band],
                        end: int, thresholds: Thresholds) -> list[dict[str, Any]]:
    """Per partition, the stretches up to `end` (the main phase's) without an ack whose part
    outside every explained span (`explained`) is longer than `unavailable_s` and saw sends
    invoked: {partition, from_s, to_s, seconds (the whole gap), unexplained: [from_s, to_s]}."""
    limit = int(thresholds.unavailable_s * NS)
    covered = explained(bands, thresholds.grace_s)
    found = []
    for key in sorted(invoked):
        sends = sorted(invoked[key])
        if not sends or sends[0] >= end:
            continue
        times = [sends[0], *sorted(t for t in acked.get(key, ()) if t <= end), end]
        for low, high in zip(times, times[1:]):
            if high - low <= limit:
                continue
            for a, b in _uncovered(low, high, covered):
                if b - a > limit and _any_between(sends, a, b):
                    found.append({"partition": key, "from_s": _s(low), "to_s": _s(high), "seconds": _s(high - low),
                                  "unexplained": [_s(a), _s(b)]})
                    break
    return found


def _any_between(times: list[int], low: int, high: int) -> bool:
    from bisect import bisect_left
    i = bisect_left(times, low)
    return i < len(times) and times[i] < high


def recovery(acked: dict[str, list[int]], invoked: dict[str, list[int]], healed_at: int | None
             ) -> dict[str, Any] | None:
    """{healed_at_s, partitions: {partition: seconds from the final heal to its first ack after
    it, or None when sends were invoked after it and none was acked}}; None without a heal.
    A partition no send was invoked to after the heal (a run recorded before the recovery
    phase existed) is left out: not judged."""
    if healed_at is None:
        return None
    partitions: dict[str, float | None] = {}
    for key in sorted(invoked):
        if not any(t > healed_at for t in invoked[key]):
            continue
        after = [t for t in acked.get(key, ()) if t > healed_at]
        partitions[key] = _s(min(after) - healed_at) if after else None
    return {"healed_at_s": _s(healed_at), "partitions": partitions}


def stuck_consumers(series: dict[int, LagSeries], healed_at: int | None, faults: bool,
                    thresholds: Thresholds) -> list[dict[str, Any]]:
    """Consumers whose realtime lag never recovered: above `stuck_lag_s` at their last poll and
    at every poll of at least the `stuck_lag_s` before it (a consumer that just started over
    from the beginning is behind, not stuck, until it has had that long to catch up); judged
    where the consumer polled after the final heal, or in a run without faults: {process,
    lag_s, last_poll_s, worst_lag_s, behind_since_s}."""
    limit = int(thresholds.stuck_lag_s * NS)
    stuck = []
    for process in sorted(series):
        s = series[process]
        if not s.times:
            continue
        last, lag = s.times[-1], s.lags[-1]
        judged = (healed_at is not None and last > healed_at) or (healed_at is None and not faults)
        if not judged or lag <= limit:
            continue
        behind = len(s.lags) - 1
        while behind > 0 and s.lags[behind - 1] > limit:
            behind -= 1
        # behind: the first poll of the final stretch above the limit; it started at the poll
        # before (the last one within the limit), or with the consumer's first poll
        since = s.times[behind - 1] if behind > 0 else s.times[0]
        if last - since >= limit:
            stuck.append({"process": process, "lag_s": _s(lag), "last_poll_s": _s(last),
                          "worst_lag_s": _s(s.worst()[0]), "behind_since_s": _s(since)})
    return stuck


def _s(ns: int) -> float:
    return round(ns / NS, 3)


def describe(section: dict[str, Any], run_dir: Path | None = None) -> list[str]:
    """Lines a person reads: what failed, where, in the system's own words; with `run_dir`, each
    stuck consumer's client log where there is one (harness/rundir/clients.py)."""
    if not section.get("findings"):
        return []
    kinds = section.get("kinds") or {"fatal-marker": section["findings"]}
    found = ", ".join(f"{kind} {n}" for kind, n in kinds.items() if n)
    lines = [f"liveness failed: {found} (beside safety: never part of the verdict)"]
    lines += [f"{m['node']}: {m['line']}" for m in (section.get("fatal_markers") or [])[:3]]
    for w in (section.get("unavailable") or [])[:3]:
        lines.append(f"{w['partition']}: no write acknowledged from {w['from_s']:g} s to {w['to_s']:g} s, "
                     f"{w['unexplained'][1] - w['unexplained'][0]:.1f} s of it with no fault to explain it")
    for key, seconds in ((section.get("recovery") or {}).get("partitions") or {}).items():
        if seconds is None:
            lines.append(f"{key}: no write acknowledged after the final heal")
    for c in (section.get("stuck_consumers") or [])[:3]:
        log = client_log(run_dir, c["process"]) if run_dir is not None else None
        lines.append(f"consumer {c['process']}: {c['lag_s']:g} s behind at its last poll"
                     + (f"; its client log: {log}" if log is not None else ""))
    return lines
