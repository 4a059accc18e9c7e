"""How often can the random kill,pause,partition nemesis reach kip101's weakness at
all? A Monte Carlo over the project's own random schedule and target pickers
(nemesis/schedule.py, targets.py, grudges.py), without a cluster: prints, per
nemesis interval, the share of 60 s runs whose fault timeline holds the pattern
that kip101's divergence with clean leader elections needs (KAFKA-6361,
docs/RELIABILITY.md section 3). Asserts nothing.

The pattern, for some ordered triple of brokers (L, B, C), with the own system's
session timeout S (3 s) and replica lag time T (5 s):
  1. L cannot heartbeat (killed, paused, or cut from the controller) for at
     least S from some s: the controller fences it at f = s + S and elects B;
  2. neither B nor C has been unable to heartbeat over all of [f - S, f] (both
     unfenced at f), and B runs over [f, f + APPEND_S] (it leads and appends);
  3. B then cannot heartbeat for at least S from some b in (f + APPEND_S, f + T):
     it is fenced before it could drop C from the ISR;
  4. C cannot reach B over all of [f, b] (cut from B, or stopped), else it
     would fetch from B and truncate correctly;
  5. C is never unable to heartbeat for S or more within [f - S, b + S]: it
     stays in the ISR and is elected when B is fenced.
Everything else the divergence needs is granted: every broker in every ISR, B
behind C, B's first batch no longer than L's last unacknowledged one, C (not
L) elected. So the share printed is an upper bound on the share of runs that
can diverge; runs measure far less (docs/RELIABILITY.md section 3).

Usage: python bench/kip101_reach.py [--runs 1000] [--intervals 1 2 3 4 5 6] [--duration 60]
"""
from __future__ import annotations

import argparse
import itertools
import random
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fencepost.clusters.systems.own import OwnOptions  # noqa: E402
from fencepost.nemesis.grudges import grudge_for  # noqa: E402
from fencepost.nemesis.schedule import RandomSchedule  # noqa: E402
from fencepost.nemesis.spec import parse_faults  # noqa: E402
from fencepost.nemesis.targets import pick_nodes  # noqa: E402

BROKERS = ("n1", "n2", "n3")
CONTROLLER = "controller"
RESTART_S = 1.0  # a killed broker's restart, until it heartbeats again
APPEND_S = 0.3  # from B's election to its first append (producers learn the new leader)


@dataclass(frozen=True)
class Fault:
    kind: str  # kill, pause or partition
    nodes: frozenset[str]  # kill, pause: the nodes stopped
    grudge: dict[str, frozenset[str]]  # partition: node -> the nodes it cannot reach
    start: float
    end: float


def timeline(seed: int, interval: float, duration: float) -> list[Fault]:
    """The faults one run of the random schedule starts, with the targets the
    nemesis would draw (a `leader` target: a random broker)."""
    schedule = RandomSchedule(parse_faults("kill,pause,partition"), interval)
    rng = random.Random(f"{seed}/targets")
    active: dict[str, tuple[str, frozenset[str], dict[str, frozenset[str]], float]] = {}
    faults = []
    for step in schedule.steps(random.Random(f"{seed}/schedule")):
        if step.at >= duration:
            break
        name = step.fault.name
        if step.action == "start":
            target = step.fault.target
            leader = rng.choice(BROKERS) if target == "leader" else None
            if name == "partition":
                grudge = {n: frozenset(g) for n, g in grudge_for(target, BROKERS, (CONTROLLER,), rng,
                                                                 leader).items()}
                active[name] = (name, frozenset(), grudge, step.at)
            else:
                nodes = frozenset(pick_nodes(target, BROKERS, (CONTROLLER,), rng, leader))
                active[name] = (name, nodes, {}, step.at)
        elif name in active:
            kind, nodes, grudge, start = active.pop(name)
            faults.append(Fault(kind, nodes, grudge, start,
                                step.at + (RESTART_S if kind == "kill" else 0.0)))
    faults += [Fault(kind, nodes, grudge, start, duration + RESTART_S)
               for kind, nodes, grudge, start in active.values()]
    return faults


def _stopped(faults: list[Fault], node: str) -> list[tuple[float, float]]:
    return [(f.start, f.end) for f in faults if f.kind != "partition" and node in f.nodes]


def _silent(faults: list[Fault], node: str) -> list[tuple[float, float]]:
    """When `node` cannot heartbeat: stopped, or cut from the controller."""
    return _stopped(faults, node) + [(f.start, f.end) for f in faults if f.kind == "partition"
                                     and CONTROLLER in f.grudge.get(node, ())]


def _cut(faults: list[Fault], a: str, b: str) -> list[tuple[float, float]]:
    return [(f.start, f.end) for f in faults if f.kind == "partition" and b in f.grudge.get(a, ())]


def _covers(spans: list[tuple[float, float]], a: float, b: float) -> bool:
    """Does the union of `spans` cover [a, b]?"""
    reached = a
    for start, end in sorted(spans):
        if start <= reached < end:
            reached = end
        if reached >= b:
            return True
    return reached >= b


def _overlaps(spans: list[tuple[float, float]], a: float, b: float) -> bool:
    return any(start < b and end > a for start, end in spans)


def reaches(faults: list[Fault], session: float, lag: float) -> list[tuple[str, str, str, float]]:
    """Every (L, B, C, f) for which `faults` hold the pattern of the module docstring."""
    found = []
    for leader, elected, successor in itertools.permutations(BROKERS):
        for start, end in _silent(faults, leader):
            if end - start < session:
                continue
            fenced = start + session
            if (_covers(_silent(faults, elected), fenced - session, fenced)
                    or _covers(_silent(faults, successor), fenced - session, fenced)
                    or _overlaps(_silent(faults, elected), fenced, fenced + APPEND_S)):
                continue
            for b_start, b_end in _silent(faults, elected):
                if not fenced + APPEND_S < b_start < fenced + lag or b_end - b_start < session:
                    continue
                if not _covers(_cut(faults, elected, successor) + _stopped(faults, successor),
                               fenced, b_start):
                    continue
                if any(c_end - max(c_start, fenced - session) >= session and c_start < b_start + session
                       for c_start, c_end in _silent(faults, successor)):
                    continue
                found.append((leader, elected, successor, fenced))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="seeds per interval")
    parser.add_argument("--intervals", type=float, nargs="+", default=[1, 2, 3, 4, 5, 6])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds per run")
    parser.add_argument("--smoke", action="store_true",
                        help="a second: 50 seeds of 30 s runs at intervals 2 and 4, the same schedule and pattern "
                             "search; covers every line printed, not the shares' worth")
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.intervals, args.duration = 50, [2.0, 4.0], 30.0
    own = OwnOptions()
    session, lag = own.session_timeout_ms / 1000, own.replica_lag_time_max_ms / 1000
    print(f"random kill,pause,partition, {args.duration:g} s runs, {len(BROKERS)} brokers, "
          f"session {session:g} s, replica lag {lag:g} s; {args.runs} seeds per interval")
    print(f"{'interval s':>10} {'faults/run':>10} {'runs with the pattern':>22} {'share':>7}")
    for interval in args.intervals:
        hits = faults = 0
        for seed in range(args.runs):
            run = timeline(seed, interval, args.duration)
            faults += len(run)
            hits += bool(reaches(run, session, lag))
        print(f"{interval:>10g} {faults / args.runs:>10.1f} {hits:>22} {hits / args.runs:>7.1%}")


if __name__ == "__main__":
    main()
