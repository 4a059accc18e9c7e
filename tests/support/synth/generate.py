"""Valid synthetic Kafka histories with real concurrency (tests and benchmarks).

Owns a seeded discrete-event simulation of one topic: producer processes with one
send in flight each, a leader per partition that appends, commits (advances its
high watermark) and acks only committed records, leader changes that truncate
the uncommitted tail, consumers that assign, poll committed records from their
position, crash and re-assign (with `group`: as members of one consumer group that commit
their positions and resume from the group's committed offsets), and a nemesis whose kills
move leadership. It
emits history.jsonl lines (docs/FORMATS.md, history.jsonl) and the final logs (final.jsonl) that such a
cluster would leave, plus the ground truth (`Truth`) planters build on.

Valid by construction: an acked record is committed and never truncated; polls
read only committed records, contiguously from the consumer's position; every
record a poll or the final read shows was appended while its send was in
flight; replicas agree below their high watermarks. What stays messy on purpose:
fail and info sends (info: never appended, appended and committed with the ack
lost, or appended and truncated), non-idempotent retries that leave a value
twice, offset gaps (as control batches leave), lagging consumers and followers,
an old leader still holding its truncated tail above its high watermark, and
ops never completed.
"""
from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson

from tests.support.synth.run import (
    PartitionFinal,
    ReplicaFinal,
    SendTruth,
    SynthRun,
    Truth,
    final_lines,
    write_jsonl,
)


@dataclass(frozen=True, slots=True)
class GenConfig:
    seed: int = 0
    lines: int = 2_000  # history lines of the main phase (the end phase adds a few)
    topic: str = "fp"
    partitions: int = 3
    producers: int = 10
    consumers: int = 2
    nodes: int = 3
    idempotent: bool = True
    p_fail: float = 0.03  # a send fails outright: never appended
    p_info_unappended: float = 0.02  # a send ends info without being appended
    p_info_acklost: float = 0.02  # committed, but the ack was lost: info
    p_timeout_appended: float = 0.01  # ends info while appended, not yet committed
    p_retry_dup: float = 0.05  # non-idempotent only: a committed send is appended again
    p_offset_gap: float = 0.0  # the leader skips an offset (as a control batch does)
    nemesis_rate: float = 0.01  # share of steps that are nemesis ops
    p_kill: float = 0.5  # share of nemesis ops that kill a partition leader
    consumer_share: float = 0.35  # share of steps that are consumer ops
    poll_batch: int = 12  # most records per partition in one poll
    p_crash: float = 0.01
    p_reassign: float = 0.02
    dangling: bool = False  # leave a few ops without a completion
    uncommitted_tail: bool = False  # leaders end with appended, uncommitted records
    lagging_follower: bool = False  # one follower per partition ends far behind
    stale_follower: bool = False  # an old leader still holds its truncated tail
    group: bool = False  # consumers are members of one group: commits, and resumes from committed offsets
    p_commit: float = 0.3  # with group: a consumer's op after an ok poll is a commit of its positions
    p_resume: float = 0.6  # with group: an assign resumes from the group's committed offsets

    def test_json(self, name: str | None = None) -> dict[str, Any]:
        return {"name": name or f"synth-{self.seed}",
                "topic": self.topic, "partitions": self.partitions,
                "producer": {"idempotent": self.idempotent},
                "synth": asdict(self)}


def generate(config: GenConfig = GenConfig()) -> SynthRun:
    """Simulate a run and keep every history line in memory (small and medium runs)."""
    history: list[dict[str, Any]] = []
    sim = _Sim(config, history.append)
    sim.run()
    return SynthRun(config.topic, history, sim.finals(), config.test_json(), sim.truth())


def generate_to_dir(run_dir: Path, config: GenConfig) -> Truth:
    """Simulate a run, streaming history.jsonl to `run_dir` (for 10^6-line
    benchmarks: the lines are never all held in memory); writes final.jsonl and
    test.json too. Returns the ground truth."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(run_dir / "history.jsonl", "wb") as f:
        chunk: list[bytes] = []

        def sink(line: dict[str, Any]) -> None:
            chunk.append(orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE))
            if len(chunk) >= 8192:
                f.write(b"".join(chunk))
                chunk.clear()

        sim = _Sim(config, sink)
        sim.run()
        f.write(b"".join(chunk))
    write_jsonl(run_dir / "final.jsonl", final_lines(config.topic, sim.finals()))
    (run_dir / "test.json").write_bytes(orjson.dumps(config.test_json(), option=orjson.OPT_INDENT_2))
    return sim.truth()


# Send states.
_INVOKED, _APPENDED, _COMMITTED, _RETRYING, _DONE = range(5)


class _Send:
    __slots__ = ("truth", "process", "partition", "value", "state", "copies", "doom", "retried")

    def __init__(self, truth: SendTruth) -> None:
        self.truth = truth
        self.process = truth.process
        self.partition = truth.partition
        self.value = truth.value
        self.state = _INVOKED
        self.copies: list[int] = []  # entry indices of its records in the leader's log
        self.doom: str | None = None  # "fail" / "info": will end so without an append
        self.retried = False


class _Part:
    """The current leader's log of one partition (entry i at offsets[i])."""

    __slots__ = ("offsets", "values", "epochs", "senders", "hw_n", "next_offset",
                 "epoch", "leader", "epoch_starts", "last_truncation")

    def __init__(self, leader: str) -> None:
        self.offsets: list[int] = []
        self.values: list[str] = []
        self.epochs: list[int] = []
        self.senders: list[_Send] = []
        self.hw_n = 0  # entries below this index are committed
        self.next_offset = 0
        self.epoch = 0
        self.leader = leader
        self.epoch_starts: list[list[int]] = [[0, 0]]
        # (old leader, its committed entry count, its truncated tail records)
        self.last_truncation: tuple[str, int, list[tuple[int, str, int]]] | None = None

    def hw_offset(self) -> int:
        return self.offsets[self.hw_n - 1] + 1 if self.hw_n else 0


class _Consumer:
    __slots__ = ("process", "positions", "pending", "speed", "batch", "polled")

    def __init__(self, process: int, speed: float, batch: int) -> None:
        self.process = process
        self.positions: dict[int, int] | None = None  # partition -> entry index
        self.pending: tuple[str, Any] | None = None  # the op in flight
        self.speed = speed
        self.batch = batch
        self.polled = False  # its last op was an ok poll (a commit may follow)


GROUP = "synth"  # the consumer group of `GenConfig.group`


def _pick(rng: random.Random, items: list, valid: Callable[[Any], bool]) -> Any:
    """Remove and return a random item that is still valid; stale items (whose
    state moved on) are dropped on the way. None if none is left."""
    while items:
        i = int(rng.random() * len(items))
        items[i], items[-1] = items[-1], items[i]
        item = items.pop()
        if valid(item):
            return item
    return None


class _Sim:
    def __init__(self, config: GenConfig, sink: Callable[[dict[str, Any]], None]) -> None:
        self.c = config
        self.rng = random.Random(config.seed)
        self.sink = sink
        self.n = 0
        self.time = 0
        self.nodes = [f"n{i + 1}" for i in range(config.nodes)]
        self.parts = [_Part(self.nodes[p % len(self.nodes)]) for p in range(config.partitions)]
        self.idle = list(range(config.producers))
        self.seq = [0] * config.producers
        self.unappended: list[_Send] = []
        self.appended: list[_Send] = []
        self.completable: list[_Send] = []
        self.in_flight: dict[int, _Send] = {}
        self.sends: dict[str, SendTruth] = {}
        consumers = []
        for i in range(config.consumers):
            # The first consumer keeps up; the others read slower, in smaller batches.
            speed = 1.0 if i == 0 else self.rng.uniform(0.1, 0.6)
            batch = config.poll_batch if i == 0 else max(1, config.poll_batch // 3)
            consumers.append(_Consumer(config.producers + i, speed, batch))
        self.consumers = consumers
        self.consumer_cum = list(itertools.accumulate(cn.speed for cn in consumers))
        self.nemesis_pending: tuple[str, Any] | None = None
        self.grudge_active = False
        self.leader_changes = 0
        self.truncated_records = 0
        self.offset_gaps = 0
        self.committed: dict[int, int] = {}  # the group coordinator: partition -> committed offset
        self.commits = 0
        self.resumes = 0

    # -- history lines --------------------------------------------------------

    def emit(self, process: int | str, type_: str, f: str, value: Any, error: str | None = None) -> int:
        index = self.n
        self.time += 1_000 + int(self.rng.random() * 400_000)
        line = {"index": index, "time": self.time, "process": process, "type": type_, "f": f,
                "value": value}
        if error is not None:
            line["error"] = error
        self.sink(line)
        self.n = index + 1
        return index

    # -- main loop ------------------------------------------------------------

    def run(self) -> None:
        c = self.c
        consumer_share = c.consumer_share if self.consumers else 0.0
        nemesis_end = c.nemesis_rate
        consumer_end = nemesis_end + consumer_share
        timeout_share = min(0.2, c.p_timeout_appended)
        producer_steps = (
            (0.30, self.invoke_send), (0.55, self.append), (0.70, self.advance_hw),
            (1.0 - timeout_share, self.complete_send), (1.0, self.time_out_appended),
        )
        rng = self.rng
        while self.n < c.lines:
            r = rng.random()
            if r < nemesis_end:
                self.nemesis_step()
            elif r < consumer_end:
                self.consumer_step()
            else:
                r = rng.random()
                for bound, step in producer_steps:
                    if r < bound:
                        step()
                        break
        self.finish()

    # -- producers and the leader ---------------------------------------------

    def invoke_send(self) -> None:
        if not self.idle:
            return
        rng = self.rng
        process = _pick(rng, self.idle, _always)
        self.seq[process] += 1
        value = f"{process}-{self.seq[process]}"
        partition = rng.randrange(self.c.partitions)
        index = self.emit(process, "invoke", "send",
                          {"topic": self.c.topic, "partition": partition, "value": value})
        truth = SendTruth(process, partition, value, index)
        self.sends[value] = truth
        send = _Send(truth)
        self.in_flight[process] = send
        r = rng.random()
        if r < self.c.p_fail:
            send.doom = "fail"
            self.completable.append(send)
        elif r < self.c.p_fail + self.c.p_info_unappended:
            send.doom = "info"
            self.completable.append(send)
        else:
            self.unappended.append(send)

    def append(self) -> None:
        send = _pick(self.rng, self.unappended, _wants_append)
        if send is None:
            return
        part = self.parts[send.partition]
        offset = part.next_offset
        if self.c.p_offset_gap and self.rng.random() < self.c.p_offset_gap:
            offset += 1
            self.offset_gaps += 1
        part.next_offset = offset + 1
        send.copies.append(len(part.offsets))
        part.offsets.append(offset)
        part.values.append(send.value)
        part.epochs.append(part.epoch)
        part.senders.append(send)
        send.state = _APPENDED
        self.appended.append(send)

    def advance_hw(self, partition: int | None = None, to_end: bool = False) -> None:
        if partition is None:
            partition = self.rng.randrange(self.c.partitions)
        part = self.parts[partition]
        end = len(part.offsets)
        if end == part.hw_n:
            return
        new_hw = end if to_end else self.rng.randint(part.hw_n + 1, end)
        for i in range(part.hw_n, new_hw):
            send = part.senders[i]
            if send.state == _APPENDED and send.copies[-1] < new_hw:
                send.state = _COMMITTED
                self.completable.append(send)
        part.hw_n = new_hw

    def complete_send(self) -> None:
        send = _pick(self.rng, self.completable, _completable)
        if send is None:
            return
        if send.doom is not None:
            self.finish_send(send, send.doom, _doom_error(send.doom))
            return
        r = self.rng.random()
        if not self.c.idempotent and not send.retried and r < self.c.p_retry_dup:
            # The ack timed out inside the client; its retry appends the value again.
            send.retried = True
            send.state = _RETRYING
            self.unappended.append(send)
        elif r < self.c.p_info_acklost:
            self.finish_send(send, "info", "request timed out (the ack was lost)")
        else:
            self.finish_send(send, "ok")

    def time_out_appended(self) -> None:
        send = _pick(self.rng, self.appended, _appended_in_flight)
        if send is not None:
            self.finish_send(send, "info", "request timed out")

    def finish_send(self, send: _Send, outcome: str, error: str | None = None) -> None:
        value = {"topic": self.c.topic, "partition": send.partition, "value": send.value}
        if outcome == "ok":
            part = self.parts[send.partition]
            entry = send.copies[-1]
            value["offset"] = part.offsets[entry]
            value["leader_epoch"] = part.epochs[entry]
            send.truth.acked_offset = part.offsets[entry]
        index = self.emit(send.process, outcome, "send", value, error)
        send.truth.complete_index = index
        send.truth.outcome = outcome
        send.state = _DONE
        del self.in_flight[send.process]
        self.idle.append(send.process)

    def leader_change(self, partition: int) -> None:
        """The leader is killed: a new leader (with every committed record) takes
        over at a new epoch, and the uncommitted tail is gone."""
        part = self.parts[partition]
        hw = part.hw_n
        tail = [(part.offsets[i], part.values[i], part.epochs[i]) for i in range(hw, len(part.offsets))]
        for i in range(len(part.offsets) - 1, hw - 1, -1):
            send = part.senders[i]
            send.copies.remove(i)
            send.truth.truncated += 1
            if send.state in (_DONE, _RETRYING):
                continue
            if send.copies:  # a retry's copy is gone; the committed one stays
                send.state = _COMMITTED
                self.completable.append(send)
            elif self.rng.random() < 0.5:
                send.state = _INVOKED  # the client retries against the new leader
                self.unappended.append(send)
            else:
                send.state = _INVOKED
                send.doom = "info"
                self.completable.append(send)
        self.truncated_records += len(tail)
        del part.offsets[hw:], part.values[hw:], part.epochs[hw:], part.senders[hw:]
        old = part.leader
        part.last_truncation = (old, hw, tail)
        part.next_offset = part.hw_offset()
        part.leader = self.rng.choice([n for n in self.nodes if n != old] or [old])
        part.epoch += 1
        while part.epoch_starts and part.epoch_starts[-1][1] >= part.next_offset:
            part.epoch_starts.pop()
        part.epoch_starts.append([part.epoch, part.next_offset])
        self.leader_changes += 1

    # -- consumers --------------------------------------------------------------

    def consumer_step(self) -> None:
        cum = self.consumer_cum
        cn = self.consumers[bisect.bisect(cum, self.rng.random() * cum[-1])]
        if cn.pending is not None:
            self.complete_consumer(cn)
        else:
            self.invoke_consumer(cn)

    def invoke_consumer(self, cn: _Consumer) -> None:
        rng = self.rng
        polled, cn.polled = cn.polled, False
        if self.c.group and polled and cn.positions and rng.random() < self.c.p_commit:
            self.invoke_commit(cn)
            return
        r = rng.random()
        if cn.positions is None or r < self.c.p_reassign:
            self.invoke_assign(cn)
        elif r < self.c.p_reassign + self.c.p_crash:
            self.emit(cn.process, "invoke", "crash", None)
            cn.pending = ("crash", None)
        else:
            self.emit(cn.process, "invoke", "poll", None)
            cn.pending = ("poll", None)

    def _offset_at(self, p: int, entry: int) -> int:
        """The offset of committed entry `entry` of partition p (its high watermark at the end)."""
        part = self.parts[p]
        return part.offsets[entry] if entry < part.hw_n else part.hw_offset()

    def invoke_commit(self, cn: _Consumer) -> None:
        """A group member commits its positions (the next offset to read). The coordinator takes a
        commit at its invoke: an ok one always, an info one half of the time, a failed one never."""
        rng = self.rng
        offsets = [[self.c.topic, p, self._offset_at(p, e)] for p, e in sorted(cn.positions.items())]
        r = rng.random()
        outcome = "ok" if r < 0.85 else "info" if r < 0.95 else "fail"
        if outcome == "ok" or (outcome == "info" and rng.random() < 0.5):
            for _, p, o in offsets:
                self.committed[p] = o
        value = {"group": GROUP, "offsets": offsets}
        self.emit(cn.process, "invoke", "commit", value)
        cn.pending = ("commit", (value, outcome))
        self.commits += 1

    def invoke_assign(self, cn: _Consumer) -> None:
        rng = self.rng
        partitions = list(range(self.c.partitions))
        if len(partitions) > 1 and rng.random() < 0.3:
            partitions = sorted(rng.sample(partitions, rng.randint(1, len(partitions) - 1)))
        if self.c.group and rng.random() < self.c.p_resume:
            # A rebalance gave them: each from the group's committed offset (0 without one).
            start, positions = {}, {}
            for p in partitions:
                part = self.parts[p]
                offset = self.committed.get(p, 0)
                positions[p] = bisect.bisect_left(part.offsets, offset, 0, part.hw_n)
                start[f"{self.c.topic}-{p}"] = offset
            value = {"partitions": [[self.c.topic, p] for p in partitions], "from": start, "group": GROUP}
            self.resumes += 1
        else:
            if rng.random() < 0.7:
                start: Any = "beginning"
                positions = {p: 0 for p in partitions}
            else:
                start, positions = {}, {}
                for p in partitions:
                    part = self.parts[p]
                    entry = rng.randint(0, part.hw_n)
                    positions[p] = entry
                    start[f"{self.c.topic}-{p}"] = part.offsets[entry] if entry < part.hw_n else part.hw_offset()
            value = {"partitions": [[self.c.topic, p] for p in partitions], "from": start}
        self.emit(cn.process, "invoke", "assign", value)
        cn.pending = ("assign", (value, positions))

    def complete_consumer(self, cn: _Consumer) -> None:
        kind, data = cn.pending
        cn.pending = None
        if kind == "crash":
            self.emit(cn.process, "info", "crash", None, "the consumer process crashed")
            cn.positions = None
        elif kind == "assign":
            value, positions = data
            self.emit(cn.process, "ok", "assign", _copied(value))  # a line's value of its own
            cn.positions = positions
        elif kind == "commit":
            value, outcome = data
            error = None if outcome == "ok" else ("REBALANCE_IN_PROGRESS" if outcome == "fail"
                                                  else "request timed out")
            self.emit(cn.process, outcome, "commit", _copied(value), error)
        elif self.rng.random() < 0.03:
            self.emit(cn.process, "info", "poll", None, "poll timed out")
        else:
            self.emit(cn.process, "ok", "poll", {"records": self.poll_records(cn)})
            cn.polled = True

    def poll_records(self, cn: _Consumer) -> list[dict[str, Any]]:
        rng = self.rng
        topic = self.c.topic
        records = []
        for p in sorted(cn.positions):
            part = self.parts[p]
            start = cn.positions[p]
            if rng.random() < 0.15:
                continue  # nothing for this partition in this poll
            end = min(part.hw_n, start + int(rng.random() * (cn.batch + 1)))
            offsets, values, epochs = part.offsets, part.values, part.epochs
            for i in range(start, end):
                records.append({"topic": topic, "partition": p, "offset": offsets[i],
                                "value": values[i], "leader_epoch": epochs[i]})
            cn.positions[p] = max(start, end)
        return records

    # -- nemesis ---------------------------------------------------------------

    def nemesis_step(self) -> None:
        rng = self.rng
        if self.nemesis_pending is not None:
            f, value = self.nemesis_pending
            self.nemesis_pending = None
            if f == "kill":
                for p in value["partitions"]:
                    self.leader_change(p)
                self.emit("nemesis", "info", f, {"nodes": value["nodes"]})
            else:
                self.emit("nemesis", "info", f, value)
            return
        if rng.random() < self.c.p_kill:
            partition = rng.randrange(self.c.partitions)
            node = self.parts[partition].leader
            led = [p for p, part in enumerate(self.parts) if part.leader == node]
            self.emit("nemesis", "invoke", "kill", {"nodes": [node]})
            self.nemesis_pending = ("kill", {"nodes": [node], "partitions": led})
        elif self.grudge_active:
            self.emit("nemesis", "invoke", "stop-partition", None)
            self.nemesis_pending = ("stop-partition", None)
            self.grudge_active = False
        else:
            loner = rng.choice(self.nodes)
            grudge = {loner: [n for n in self.nodes if n != loner]}
            self.emit("nemesis", "invoke", "start-partition", {"grudge": grudge})
            self.nemesis_pending = ("start-partition", {"grudge": grudge})
            self.grudge_active = True

    # -- the end: heal, quiesce, complete what is in flight ----------------------

    def finish(self) -> None:
        rng = self.rng
        if self.nemesis_pending is not None:
            self.nemesis_step()
        if self.grudge_active:
            self.emit("nemesis", "invoke", "stop-partition", None)
            self.emit("nemesis", "info", "stop-partition", None)
            self.grudge_active = False
        for cn in self.consumers:
            if cn.pending is not None and not (self.c.dangling and rng.random() < 0.5):
                self.complete_consumer(cn)
        for p, part in enumerate(self.parts):
            if self.c.uncommitted_tail and len(part.offsets) > part.hw_n:
                # Commit all but the last few appends: they stay above the high watermark.
                keep = rng.randint(1, min(3, len(part.offsets) - part.hw_n))
                self._commit_upto(p, len(part.offsets) - keep)
            else:
                self.advance_hw(p, to_end=True)
        for process in sorted(self.in_flight):
            send = self.in_flight[process]
            if self.c.dangling and rng.random() < 0.3:
                continue  # the harness never saw its completion
            if send.doom is not None:
                self.finish_send(send, send.doom, _doom_error(send.doom))
            elif send.state == _COMMITTED or (send.state == _RETRYING and send.copies):
                self.finish_send(send, "ok")
            elif send.state == _APPENDED:
                self.finish_send(send, "info", "request timed out")
            else:
                self.finish_send(send, "info", "not delivered before the end of the run")

    def _commit_upto(self, partition: int, hw_n: int) -> None:
        part = self.parts[partition]
        if hw_n <= part.hw_n:
            return
        for i in range(part.hw_n, hw_n):
            send = part.senders[i]
            if send.state == _APPENDED and send.copies[-1] < hw_n:
                send.state = _COMMITTED
        part.hw_n = hw_n

    # -- results ---------------------------------------------------------------

    def finals(self) -> dict[int, PartitionFinal]:
        rng = random.Random(self.c.seed + 1)
        out = {}
        for p, part in enumerate(self.parts):
            records = list(zip(part.offsets, part.values, part.epochs))
            committed = records[:part.hw_n]
            hw = part.hw_offset()
            replicas = {part.leader: ReplicaFinal(records, part.next_offset if records else 0, hw,
                                                  part.epoch, [list(e) for e in part.epoch_starts])}
            followers = [n for n in self.nodes if n != part.leader]
            lagging = followers[0] if self.c.lagging_follower and followers else None
            stale = None
            trunc = part.last_truncation
            if self.c.stale_follower and trunc and trunc[2] and trunc[0] != part.leader:
                stale = trunc[0]
            for node in followers:
                epoch = part.epoch
                if node == stale:
                    old_hw_n, tail = trunc[1], trunc[2]
                    held = committed[:old_hw_n] + tail
                    node_hw = committed[old_hw_n - 1][0] + 1 if old_hw_n else 0
                    leo = tail[-1][0] + 1
                    epoch = tail[-1][2]
                elif node == lagging and part.hw_n > 1:
                    n = rng.randint(0, part.hw_n // 2)
                    held = committed[:n]
                    leo = held[-1][0] + 1 if held else 0
                    node_hw = rng.randint(0, leo)
                else:
                    held = committed
                    leo = hw
                    # A follower learns the high watermark one fetch late.
                    back = rng.randint(0, min(2, len(held)))
                    node_hw = held[-1 - back][0] + 1 if back and len(held) > back else hw
                epochs = ([list(e) for e in part.epoch_starts if e[1] < leo and e[0] <= epoch]
                          or [list(part.epoch_starts[0])])
                replicas[node] = ReplicaFinal(list(held), leo, min(node_hw, leo), epoch, epochs)
            out[p] = PartitionFinal(committed, True, part.leader, replicas)
        return out

    def truth(self) -> Truth:
        truth = Truth(self.sends, self.leader_changes, self.truncated_records, 0, self.offset_gaps)
        for send in self.sends.values():
            send.final_offsets = []
        for part in self.parts:
            for i in range(part.hw_n):
                part.senders[i].truth.final_offsets.append(part.offsets[i])
        truth.duplicate_copies = sum(max(0, len(s.final_offsets) - 1) for s in self.sends.values())
        return truth


def _copied(value: Any) -> Any:
    """A copy of a line's value, so that editing one line (a planter) never edits another."""
    return orjson.loads(orjson.dumps(value))


def _always(_: Any) -> bool:
    return True


def _wants_append(send: _Send) -> bool:
    return send.state in (_INVOKED, _RETRYING) and send.doom is None


def _completable(send: _Send) -> bool:
    return send.state != _DONE and (send.doom is not None or send.state == _COMMITTED)


def _appended_in_flight(send: _Send) -> bool:
    return send.state == _APPENDED


def _doom_error(doom: str) -> str:
    return "NOT_ENOUGH_REPLICAS" if doom == "fail" else "request timed out (not appended)"
