"""Builders for the checker tests (no tests here): hand-made ops of one
partition with explicit history line indices, so a test reads like a history.

`send(7, "1-0", 3)` is a send invoked on line 7 and acked at offset 3 on line 8;
`poll(9, (3, "1-0"))` a poll invoked on line 9 that returned one record on line 10.
Times are the line index times 10 ns, so they are distinct and ordered.
"""
from __future__ import annotations

from fencepost.checkers.anomaly import Anomaly
from fencepost.checkers.partition import PartitionHistory, Poll, ReplicaState, Reset, Send


def send(i: int, value: str, offset: int | None = None, outcome: str = "ok",
         process: int = 0, done: int | None = None) -> Send:
    """A send invoked on line `i`, completed on line `done` (default i + 1)."""
    done = i + 1 if done is None else done
    return Send(process=process, value=value, outcome=outcome, invoke_index=i, invoke_time=i * 10,
                complete_index=done, complete_time=done * 10,
                offset=offset if outcome == "ok" else None)


def poll(i: int, *records: tuple[int, str], process: int = 100, outcome: str = "ok",
         done: int | None = None) -> Poll:
    """A poll invoked on line `i` that returned `records` on line `done` (default i + 1)."""
    done = i + 1 if done is None else done
    return Poll(process=process, outcome=outcome, invoke_index=i, invoke_time=i * 10,
                complete_index=done, complete_time=done * 10, records=list(records))


def reset(i: int, process: int = 100, f: str = "assign") -> Reset:
    return Reset(process=process, index=i, time=i * 10, f=f)


def history(sends=(), polls=(), final=None, complete: bool = True, resets=(),
            replicas=None, hws=None) -> PartitionHistory:
    """Partition fp/0. `final` is a list of (offset, value) or None (no final read);
    `hws` maps node -> high watermark (a ReplicaState with LEO = HW)."""
    return PartitionHistory(
        topic="fp", partition=0, sends=list(sends), polls=list(polls), resets=list(resets),
        final=None if final is None else list(final), final_complete=complete,
        replicas=dict(replicas or {}),
        replica_states={n: ReplicaState(node=n, log_end_offset=hw, high_watermark=hw)
                        for n, hw in (hws or {}).items()})


def log(*values: str, start: int = 0) -> list[tuple[int, str]]:
    """Records at consecutive offsets from `start`."""
    return [(start + k, v) for k, v in enumerate(values)]


def named(anomalies: list[Anomaly], name: str) -> list[dict]:
    """The details of the anomalies called `name`."""
    return [a.details for a in anomalies if a.name == name]


def names(anomalies: list[Anomaly]) -> list[str]:
    return sorted(a.name for a in anomalies)
