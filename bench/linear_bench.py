"""Benchmark of the linearizability checker (checkers/linear) on generated
partition histories; prints figures, asserts nothing about time.

1. A valid history of 100,000 client ops (sends with offsets, a few info sends,
   polls by consumers reading behind, 20 concurrent processes) plus a final
   read: ops given to the search, states explored, seconds, ops/s.
2. A 10,000-op history with one planted lost write: the search, then the
   minimisation, timed apart, and the counterexample found.

Usage: python bench/linear_bench.py [--ops N] [--failing-ops N] [--seed S]
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fencepost.checkers.linear.kafka import partition_ops  # noqa: E402
from fencepost.checkers.linear.logmodel import LogModel  # noqa: E402
from fencepost.checkers.linear.minimize import minimize  # noqa: E402
from fencepost.checkers.linear.search import check  # noqa: E402
from fencepost.checkers.partition import CheckOptions, PartitionHistory, Poll, Send  # noqa: E402


def generate(n_ops: int, seed: int, processes: int = 20, consumers: int = 6,
             info_rate: float = 0.01, gap_rate: float = 0.002,
             rewind_rate: float = 0.02) -> PartitionHistory:
    """A valid history: each op takes effect at one moment between its invoke
    and its completion, on one log. Info sends take effect half of the time."""
    rng = random.Random(seed)
    producers = processes - consumers
    ph = PartitionHistory("fp", 0)
    log: list[tuple[int, str]] = []
    next_offset = 0
    index = 0
    inflight: dict[int, dict] = {}
    position = {c: 0 for c in range(producers, processes)}
    seq = [0] * processes
    completed = 0

    def complete(p: int, op: dict) -> None:
        nonlocal index
        if op["kind"] == "send":
            if op["info"]:
                ph.sends.append(Send(p, op["value"], "info", op["invoke"], op["invoke"], index, index,
                                     error="timed out"))
            else:
                ph.sends.append(Send(p, op["value"], "ok", op["invoke"], op["invoke"], index, index,
                                     offset=op["offset"]))
        else:
            ph.polls.append(Poll(p, "ok", op["invoke"], op["invoke"], index, index, op["records"]))
        index += 1

    while completed < n_ops:
        p = rng.randrange(processes)
        op = inflight.get(p)
        if op is None:
            if p < producers:
                op = {"kind": "send", "value": f"{p}-{seq[p]}", "info": rng.random() < info_rate}
                seq[p] += 1
            else:
                op = {"kind": "poll"}
            op.update(invoke=index, stage=0)
            inflight[p] = op
            index += 1
        elif op["stage"] == 0:
            op["stage"] = 1
            if op["kind"] == "send":
                if op["info"] and rng.random() < 0.5:
                    continue  # lost before it reached the log
                if rng.random() < gap_rate:
                    next_offset += 1  # a control batch or aborted transaction
                log.append((next_offset, op["value"]))
                op["offset"] = next_offset
                next_offset += 1
            else:
                if rng.random() < rewind_rate:  # a consumer seeking back
                    position[p] = max(0, position[p] - rng.randint(50, 2000))
                start = position[p]
                op["records"] = log[start:start + rng.randint(1, 30)]
                position[p] = start + len(op["records"])
        else:
            complete(p, inflight.pop(p))
            completed += 1
    for p, op in sorted(inflight.items()):
        if op["stage"] == 1:
            complete(p, op)
    ph.final = list(log)
    ph.final_complete = True
    return ph


def plant_lost_write(ph: PartitionHistory, rng: random.Random) -> tuple[int, str]:
    """Remove one acked record from the final read (KAFKA-1211's outcome)."""
    acked = sorted((s.offset, s.value) for s in ph.sends if s.outcome == "ok")
    offset, value = acked[len(acked) // 2 + rng.randrange(len(acked) // 4)]
    ph.final = [r for r in ph.final if r[0] != offset]
    return offset, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=100_000)
    parser.add_argument("--failing-ops", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--smoke", action="store_true",
                        help="a second: 2,000 valid and 1,000 failing client ops, the same search and "
                             "minimisation; covers every line printed, not the figures' worth")
    args = parser.parse_args()
    if args.smoke:
        args.ops, args.failing_ops = 2_000, 1_000
    options = CheckOptions()

    ph = generate(args.ops, args.seed)
    t0 = time.perf_counter()
    ops = partition_ops(ph, options)
    t1 = time.perf_counter()
    result = check(LogModel(), ops, options.search_budget)
    t2 = time.perf_counter()
    kinds = {}
    for op in ops:
        kinds[type(op.input).__name__] = kinds.get(type(op.input).__name__, 0) + 1
    print(f"valid history: {args.ops} client ops (+ final read of {len(ph.final)} records), "
          f"20 processes")
    print(f"  search ops {len(ops)} ({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))})")
    print(f"  linearizable {result.linearizable}, states explored {result.explored}")
    print(f"  translate {t1 - t0:.2f} s, search {t2 - t1:.2f} s, total {t2 - t0:.2f} s, "
          f"{len(ops) / (t2 - t0):,.0f} search ops/s ({args.ops / (t2 - t0):,.0f} client ops/s)")

    rng = random.Random(args.seed)
    ph = generate(args.failing_ops, args.seed + 1)
    offset, value = plant_lost_write(ph, rng)
    ops = partition_ops(ph, options)
    model = LogModel()
    t0 = time.perf_counter()
    result = check(model, ops, options.search_budget)
    t1 = time.perf_counter()
    cx = minimize(model, ops, options.search_budget, result.deepest)
    t2 = time.perf_counter()
    print(f"failing history: {args.failing_ops} client ops, lost write planted at offset "
          f"{offset} ({value!r}); {len(ops)} search ops")
    print(f"  search: linearizable {result.linearizable}, states explored {result.explored}, "
          f"{t1 - t0:.2f} s")
    if cx is None:
        print("  minimisation: no counterexample (budget)")
    else:
        print(f"  minimisation: {t2 - t1:.2f} s, {cx.checks} searches, {len(cx.ops)} ops, "
              f"keys {cx.keys}")
        for op in cx.ops:
            print(f"    {cx.descriptions[op.id]}")
    print(f"  search + minimisation {t2 - t0:.2f} s")


if __name__ == "__main__":
    main()
