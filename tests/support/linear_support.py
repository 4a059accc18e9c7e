"""Kafka partition histories for the tests of checkers/linear: hand-made sends, polls and
histories (times are the indices times 1000), and `simulate`, a valid history with real
concurrency drawn from a seeded random generator."""
from __future__ import annotations

import random

from fencepost.checkers.partition import PartitionHistory, Poll, Send


def send(process, value, invoke, complete, offset=None, outcome="ok"):
    return Send(process, value, outcome, invoke, invoke * 1000, complete,
                None if complete is None else complete * 1000, offset)


def poll(process, invoke, complete, *records, outcome="ok"):
    return Poll(process, outcome, invoke, invoke * 1000, complete, complete * 1000, list(records))


def history(sends=(), polls=(), final=None, complete=True):
    return PartitionHistory("fp", 1, list(sends), list(polls), final=final, final_complete=complete)


def simulate(rng: random.Random, n_ops: int, producers: int = 3, consumers: int = 2,
             info_rate: float = 0.15, gap_rate: float = 0.1, retry_rate: float = 0.0) -> PartitionHistory:
    """A valid history: each op takes effect once, between its invoke and its
    completion, on a single log (retries write a value twice, ack the second)."""
    ph = history()
    log: list[tuple[int, str]] = []
    offset = index = done = 0
    inflight: dict[int, dict] = {}
    position = {c: 0 for c in range(producers, producers + consumers)}
    while done < n_ops:
        p = rng.randrange(producers + consumers)
        op = inflight.get(p)
        if op is None:
            inflight[p] = {"invoke": index, "effect": False, "value": f"{p}-{index}",
                           "info": rng.random() < info_rate}
            index += 1
        elif not op["effect"]:
            op["effect"] = True
            if p < producers:
                if op["info"] and rng.random() < 0.5:
                    continue
                for _ in range(2 if rng.random() < retry_rate else 1):
                    offset += rng.random() < gap_rate
                    log.append((offset, op["value"]))
                    op["offset"] = offset
                    offset += 1
            else:
                if rng.random() < 0.2:
                    position[p] = rng.randrange(len(log) + 1)
                start = position[p]
                op["records"] = log[start:start + rng.randint(1, 4)]
                position[p] = start + len(op["records"])
        else:
            del inflight[p]
            if p >= producers:
                ph.polls.append(poll(p, op["invoke"], index, *op["records"]))
            elif op["info"]:
                ph.sends.append(send(p, op["value"], op["invoke"], index, outcome="info"))
            else:
                ph.sends.append(send(p, op["value"], op["invoke"], index, offset=op["offset"]))
            index += 1
            done += 1
    for p, op in inflight.items():  # the run ended: writes in flight are unknown
        if p < producers and op["effect"]:
            ph.sends.append(send(p, op["value"], op["invoke"], None, outcome="info"))
    ph.final = list(log)
    return ph
