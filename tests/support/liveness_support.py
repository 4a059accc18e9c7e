"""Planted histories and run directories for the liveness tests (no tests here).

- `History` writes the lines of a history.jsonl in time order; `steady` adds acked sends to
  partitions at a steady rate (with a gap where a partition stops acknowledging), `poll` a
  consumer's poll and the records it returned.
- `stuck_run` makes a checked run in which consumers STUCK and UNLOGGED are left behind after
  the heal (two stuck-consumer findings) and CRASHED caught up; `logged` plants client logs
  and gdb stacks under its clients/ as workloads/client_log.py and client_stacks.py write
  them, `plant_log` one such file.

Shared by the tests of the liveness verdict, of the report's client logs and of what a
browser shows of them."""
from __future__ import annotations

import io
from pathlib import Path

import orjson

from fencepost.harness.check.checking import check_run

S = 1_000_000_000


class History:
    """Lines of a history.jsonl, written in time order."""

    def __init__(self) -> None:
        self.lines: list[dict] = []

    def add(self, t: float, process, type_: str, f: str, value=None) -> None:
        self.lines.append({"index": len(self.lines), "time": int(t * S), "process": process, "type": type_,
                           "f": f, "value": value})

    def send(self, t: float, process: int, partition: int, value: str, offset: int | None, took: float = 0.01) -> None:
        v = {"topic": "fp", "partition": partition, "value": value}
        self.add(t, process, "invoke", "send", v)
        if offset is None:
            self.add(t + took, process, "info", "send", v)
        else:
            self.add(t + took, process, "ok", "send", {**v, "offset": offset, "leader_epoch": None})

    def nemesis(self, t: float, f: str, value, took: float = 0.1) -> None:
        self.add(t, "nemesis", "invoke", f, value)
        self.add(t + took, "nemesis", "info", f, value)

    def write(self, run_dir: Path) -> Path:
        run_dir.mkdir(parents=True, exist_ok=True)
        self.lines.sort(key=lambda line: line["time"])
        for i, line in enumerate(self.lines):
            line["index"] = i
        (run_dir / "history.jsonl").write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in self.lines))
        return run_dir


def steady(h: History, start: float, end: float, partitions=(0,), every: float = 0.5, gap=None) -> None:
    """Acked sends to each partition every `every` s from start to end, none inside `gap`
    (partition, from, to): the sends there end `info` (a process of its own each)."""
    offsets = dict.fromkeys(partitions, 0)
    t, n = start, 0
    while t < end:
        for p in partitions:
            if gap is not None and p == gap[0] and gap[1] <= t < gap[2]:
                h.send(t, n, p, f"{n}-0", None, took=min(9.0, gap[2] - t))
            else:
                h.send(t, n, p, f"{n}-0", offsets[p])
                offsets[p] += 1
            n += 1
        t += every


def poll(h: History, t: float, process: int, records: list[tuple[int, int, str]]) -> None:
    h.add(t, process, "invoke", "poll", None)
    h.add(t + 0.001, process, "ok", "poll", {"records": [
        {"topic": "fp", "partition": p, "offset": o, "value": v, "leader_epoch": 0} for p, o, v in records]})


STUCK, UNLOGGED, CRASHED = 100000, 100001, 100002
STUCK_WHY = "stuck: fp-0 (read to 0, acknowledged to 97, no record for 45 s)"
HEADER = ("=== 2026-11-27T10:00:50.123Z client {p} flushed: {why}; 3 lines held, "
          "0 earlier lines dropped by the ring ===\n")


def stuck_run(run_dir: Path, debug: str | None = "broker,fetch") -> Path:
    """A checked run in which consumers STUCK and UNLOGGED are left behind after the heal (two
    stuck-consumer findings) and CRASHED caught up; test.json records `clients.debug = debug`."""
    h = History()
    steady(h, 1, 50, partitions=(0,))
    for process in (STUCK, UNLOGGED, CRASHED):
        h.add(0.5, process, "invoke", "assign", {"partitions": [["fp", 0]], "from": "beginning"})
        h.add(0.6, process, "ok", "assign", {"partitions": [["fp", 0]], "from": "beginning"})
        poll(h, 5, process, [(0, 0, "0-0")])
    h.nemesis(45, "heal", None, took=0.2)
    poll(h, 50, STUCK, [])
    poll(h, 50, UNLOGGED, [])
    poll(h, 50, CRASHED, [(0, o, f"{o}-0") for o in range(1, 98)])
    h.write(run_dir)
    if debug is not None:
        (run_dir / "test.json").write_bytes(orjson.dumps({"name": "stuck", "clients": {"debug": debug}}))
    check_run(run_dir, write=True, out=io.StringIO())
    stuck = orjson.loads((run_dir / "results.json").read_bytes())["liveness"]["stuck_consumers"]
    assert [c["process"] for c in stuck] == [STUCK, UNLOGGED]
    return run_dir


def plant_log(run_dir: Path, name: str, text: str | bytes) -> Path:
    path = run_dir / "clients" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def logged(run_dir: Path) -> Path:
    """STUCK's log (first flushed when stuck, then the notes of its two stacks dumps) and stacks
    1 and 2; CRASHED's log (a failed poll) without stacks."""
    plant_log(run_dir, f"{STUCK}.log", HEADER.format(p=STUCK, why=STUCK_WHY)
              + "2026-11-27T10:00:49.001Z DEBUG FETCH [thrd:n1]: fetch backoff\n"
              + f"=== 2026-11-27T10:00:52.000Z client {STUCK}: native stacks of every thread written to "
                f"{STUCK}.stacks.1.txt ===\n")
    for n in (1, 2):
        plant_log(run_dir, f"{STUCK}.stacks.{n}.txt", f'Thread 1 (Thread 0x7f "rdk:main") dump {n}\n')
    plant_log(run_dir, f"{CRASHED}.log", HEADER.format(p=CRASHED, why="the consumer failed: KafkaError FATAL"))
    return run_dir
